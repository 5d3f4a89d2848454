"""Compressed answers, as kubectl gets them: the client accepts gzip unless the kubeconfig says
``disable-compression: true``, reads the body decompressed, bounds the decompressed size, and counts the bytes on
the wire apart from the bytes read. The test API server answers as kube-apiserver does with APIResponseCompression:
API answers of 128 KiB or more gzipped at level 1, logs never."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kueuediag.live.kube import KubeClient, KubeError, _kubernetes_transport, _load_api_client
from tests.live.apiserver import GZIP_THRESHOLD, ApiServer, Fault
from tests.live.conftest import ServerFactory


def pods(n: int) -> list[dict[str, Any]]:
    """`n` running pods of about 620 bytes of JSON each: a 500-pod page is well over the compression threshold, a
    100-pod one under it."""
    return [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"trainer-{i:04d}", "namespace": "team-a", "uid": f"uid-{i:08d}",
                          "labels": {"kueue.x-k8s.io/queue-name": "team-a-queue", "app": "trainer"}},
             "spec": {"nodeName": f"gpu-node-{i % 40}", "containers": [
                 {"name": "main", "image": "ghcr.io/acme/trainer:1.4.2",
                  "resources": {"requests": {"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": "1"}}}]},
             "status": {"phase": "Running"}} for i in range(n)]


def names(items: list[dict[str, Any]]) -> list[str]:
    return sorted(p["metadata"]["name"] for p in items)


def test_large_pages_travel_gzipped_and_are_read_whole(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server(objects=pods(600)) as srv:
        c = KubeClient.from_kubeconfig(str(srv.kubeconfig(tmp_path)))
        got = c.list_items("/api/v1/pods")
        ns = c.get("/api/v1/namespaces")  # a small answer: below the threshold, never compressed
        lists = [r for r in srv.cluster.requests if r.path == "/api/v1/pods"]
    assert names(got) == names(pods(600))
    assert [r.gzip for r in lists] == [True, False]  # the 500-pod page is compressed, the 100-pod rest is not
    assert ns["kind"] == "NamespaceList"
    assert c.stats.wire < c.stats.bytes / 3, (c.stats.wire, c.stats.bytes)
    assert f"{c.stats.bytes} bytes ({c.stats.wire} on the wire)" in c.stats.summary()
    compressed = [rec for rec in c.log if rec.wire is not None]
    assert len(compressed) == 1 and compressed[0].bytes > GZIP_THRESHOLD > compressed[0].wire


def test_disable_compression_in_the_kubeconfig_is_honoured(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server(objects=pods(600)) as srv:
        c = KubeClient.from_kubeconfig(str(srv.kubeconfig(tmp_path, disable_compression=True)))
        got = c.list_items("/api/v1/pods")
        lists = [r for r in srv.cluster.requests if r.path == "/api/v1/pods"]
    assert names(got) == names(pods(600))
    assert [r.gzip for r in lists] == [False, False]
    assert c.stats.wire == c.stats.bytes and "on the wire" not in c.stats.summary()
    assert all(rec.wire is None for rec in c.log)


def test_the_same_items_with_and_without_compression(api_server: ServerFactory, tmp_path: Path) -> None:
    read = []
    for disable in (False, True):
        with api_server(objects=pods(1200)) as srv:
            c = KubeClient.from_kubeconfig(str(srv.kubeconfig(tmp_path, disable_compression=disable)))
            read.append(c.list_items("/api/v1/pods"))
    assert read[0] == read[1] and len(read[0]) == 1200


def test_the_size_bound_holds_for_the_decompressed_body(api_server: ServerFactory, tmp_path: Path) -> None:
    """A small compressed answer that inflates past the bound is refused, as an uncompressed one would be: the
    bound is on memory, not on the wire (a gzip bomb never reaches the JSON decoder)."""
    with api_server(objects=pods(600)) as srv:
        api_client, _cluster, _ns, compression = _load_api_client(str(srv.kubeconfig(tmp_path)), None)
        assert compression is True
        c = KubeClient(_kubernetes_transport(api_client, max_body_bytes=150_000), max_retries=0)
        with pytest.raises(KubeError, match="larger than"):
            c.list_items("/api/v1/pods")
        [first] = [r for r in srv.cluster.requests if r.path == "/api/v1/pods"]
    assert first.gzip  # it travelled compressed: under the bound on the wire, over it once inflated
    assert c.log[0].bytes == 150_000
    wire = c.log[0].wire  # what was read off the wire before the refusal, not the bound
    assert wire is not None and 0 < wire < 150_000 and c.stats.wire == wire


def test_a_compressed_body_cut_off_is_fetched_again_then_reported(api_server: ServerFactory, tmp_path: Path) -> None:
    """A gzip stream cut short inflates to a prefix of the JSON: handled as any body cut off by a proxy."""
    with api_server(objects=pods(600)) as srv:
        srv.cluster.faults.append(Fault(path=r"^/api/v1/pods$", query="limit=500", truncate=2_000, times=2))
        c = KubeClient.from_kubeconfig(str(srv.kubeconfig(tmp_path)))
        got = c.list_items("/api/v1/pods")  # two cut answers, then a whole one
        firsts = [r for r in srv.cluster.requests if r.path == "/api/v1/pods" and "continue" not in r.query]
    assert names(got) == names(pods(600))
    assert len(firsts) == 3 and all(r.gzip for r in firsts)


def test_a_compressed_body_dripped_is_cut_at_the_deadline(api_server: ServerFactory, tmp_path: Path) -> None:
    """One byte every 50 ms: the gzip header and the first block inflate to nothing for their first ~80 bytes, and
    a reader that waited for decompressed output before looking at the clock would hold on for seconds (with a
    long header name, for ever). The body is cut when the request's time is up, as an uncompressed one is."""
    import time

    with api_server(objects=pods(600)) as srv:
        srv.cluster.faults.append(Fault(path=r"^/api/v1/pods$", drip=0.05))
        c = KubeClient.from_kubeconfig(str(srv.kubeconfig(tmp_path)), timeout=30, request_timeout=0.5,
                                       max_retries=0)
        start = time.monotonic()
        with pytest.raises(Exception, match="cannot reach the Kubernetes API.*body"):
            c.list_items("/api/v1/pods")
        took = time.monotonic() - start
        [asked] = [r for r in srv.cluster.requests if r.path == "/api/v1/pods"]
    assert asked.gzip
    assert took < 1.5, took


def test_logs_are_never_compressed(tmp_path: Path) -> None:
    """kube-apiserver compresses API objects only; a pod's log is streamed as it is."""
    from tests.live.apiserver import FakeCluster

    text = "".join(f'{{"level":"info","msg":"line {i}"}}\n' for i in range(20_000))
    cluster = FakeCluster(pods(1), logs={"logs/team-a/trainer-0000/main.log": text})
    with ApiServer(cluster) as srv:
        c = KubeClient.from_kubeconfig(str(srv.kubeconfig(tmp_path)))
        got = c.get_text("/api/v1/namespaces/team-a/pods/trainer-0000/log", [("container", "main")])
    assert got == text
    assert not any(r.gzip for r in cluster.requests) and c.stats.wire == c.stats.bytes


def test_a_snapshot_records_both_counts(api_server: ServerFactory, tmp_path: Path) -> None:
    from kueuediag.live.collect import collect_cluster
    from kueuediag.live.options import LiveOptions

    with api_server(objects=pods(600)) as srv:
        c = KubeClient.from_kubeconfig(str(srv.kubeconfig(tmp_path)))
        raw = collect_cluster(None, None, LiveOptions(), client=c)
    counts = raw.manifest["collector"]
    assert counts["bytes"] == c.stats.bytes and counts["wireBytes"] == c.stats.wire
    assert counts["wireBytes"] < counts["bytes"] - GZIP_THRESHOLD  # the 500-pod page travelled gzipped
    assert len([o for o in raw.objects if getattr(o, "get", None) and o.get("kind") == "Pod"]) == 600
