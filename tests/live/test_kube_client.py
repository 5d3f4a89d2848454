"""KubeClient behaviour against the local API server: auth, discovery, pagination, selectors, faults."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kueuediag.errors import ClusterUnavailable
from kueuediag.live.kube import (
    DeadlineExceeded,
    Forbidden,
    KubeClient,
    KubeError,
    KueueNotInstalled,
    Response,
)
from tests.live.apiserver import Fault
from tests.live.conftest import ServerFactory


class Sleeps:
    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def client(srv: Any, tmp_path: Path, **kw: Any) -> KubeClient:
    kw.setdefault("sleep", Sleeps())
    return KubeClient.from_kubeconfig(str(srv.kubeconfig(tmp_path)), None, **kw)


def test_kubeconfig_auth_discovery_and_context(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server() as srv:
        c = KubeClient.from_kubeconfig(str(srv.kubeconfig(tmp_path, namespace="team-a")), "test")
        assert c.cluster == "prod-gpu-1"
        assert c.default_namespace == "team-a"
        assert c.kueue_version() == "v1beta2"
        kinds = c.resources("kueue.x-k8s.io", "v1beta2")
        assert kinds["ClusterQueue"]["name"] == "clusterqueues"
        assert kinds["Workload"]["namespaced"] is True
    # the token from the kubeconfig was sent (the server answers 401 otherwise)
    assert all(r.status != 401 for r in srv.cluster.requests)


def test_kubeconfig_from_env(api_server: ServerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with api_server() as srv:
        monkeypatch.setenv("KUBECONFIG", str(srv.kubeconfig(tmp_path)))
        c = KubeClient.from_kubeconfig()
        assert c.get("/api/v1/namespaces/team-a")["metadata"]["name"] == "team-a"


def test_missing_kubeconfig_is_cluster_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ClusterUnavailable, match="cannot load Kubernetes credentials"):
        KubeClient.from_kubeconfig(str(tmp_path / "nope.yaml"))


def test_v1beta1_fallback_and_kueue_not_installed(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server(kueue_versions=("v1beta1",)) as srv:
        assert client(srv, tmp_path).kueue_version() == "v1beta1"
    with api_server(kueue_installed=False) as srv:
        with pytest.raises(KueueNotInstalled, match="Kueue is not installed on this cluster"):
            client(srv, tmp_path).kueue_version()


def test_pagination_fills_kind_and_counts_requests(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server() as srv:
        c = client(srv, tmp_path, page_size=2)
        pods = c.list_items("/api/v1/pods")
        lists = [r for r in srv.cluster.requests if r.path == "/api/v1/pods"]
    names = sorted(p["metadata"]["name"] for p in pods)
    assert "nvidia-device-plugin-7xq9z" in names and "eval-sweep-x7k2p" in names
    assert len(names) == len(set(names)) == 5
    assert len(lists) == 3  # 2 + 2 + 1
    assert lists[1].query.get("continue") and lists[0].query.get("limit") == "2"
    assert {p["kind"] for p in pods} == {"Pod"} and {p["apiVersion"] for p in pods} == {"v1"}


def test_selectors(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server() as srv:
        c = client(srv, tmp_path)
        gpu = c.list_items("/api/v1/nodes", label_selector="cloud.google.com/gke-accelerator=nvidia-tesla-a100")
        on_node = c.list_items("/api/v1/pods", field_selector="spec.nodeName=gke-a100-pool-3")
        not_cpu = c.list_items("/api/v1/nodes", label_selector="acme.io/pool notin (cpu)")
    assert sorted(n["metadata"]["name"] for n in gpu) == ["gke-a100-pool-1", "gke-a100-pool-2", "gke-a100-pool-3"]
    assert [p["metadata"]["name"] for p in on_node] == ["nvidia-device-plugin-7xq9z"]
    assert "cpu-node-1" not in {n["metadata"]["name"] for n in not_cpu}


def test_410_expired_continue_restarts_the_list(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server() as srv:
        srv.cluster.faults.append(Fault(path=r"^/api/v1/pods$", status=410, times=1, query="continue="))
        c = client(srv, tmp_path, page_size=2)
        pods = c.list_items("/api/v1/pods")
        statuses = [(r.status, bool(r.query.get("continue"))) for r in srv.cluster.requests
                    if r.path == "/api/v1/pods"]
    assert len(pods) == 5
    # page 1, expired page 2, then a fresh start: 3 more pages
    assert statuses == [(200, False), (410, True), (200, False), (200, True), (200, True)]


def test_429_retry_after_is_honoured(api_server: ServerFactory, tmp_path: Path) -> None:
    sleeps = Sleeps()
    with api_server() as srv:
        srv.cluster.faults.append(Fault(path="/namespaces/team-a$", status=429, times=2,
                                        headers={"Retry-After": "3"}))
        c = client(srv, tmp_path, sleep=sleeps, backoff=0.1)
        assert c.get("/api/v1/namespaces/team-a")["metadata"]["name"] == "team-a"
    assert sleeps.calls == [3.0, 3.0]
    assert c.stats.retries == 2 and c.stats.by_status == {429: 2, 200: 1}


def test_500_retries_are_bounded(api_server: ServerFactory, tmp_path: Path) -> None:
    sleeps = Sleeps()
    with api_server() as srv:
        srv.cluster.faults.append(Fault(path="/nodes$", status=500))
        c = client(srv, tmp_path, sleep=sleeps, max_retries=3, backoff=0.5)
        with pytest.raises(KubeError) as err:
            c.list_items("/api/v1/nodes")
    assert err.value.status == 500
    assert sleeps.calls == [0.5, 1.0, 2.0]  # exponential backoff, then give up
    assert len([r for r in srv.cluster.requests if r.path == "/api/v1/nodes"]) == 4


def test_403_is_forbidden_not_retried(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server() as srv:
        srv.cluster.faults.append(Fault(path="/nodes$", status=403))
        c = client(srv, tmp_path)
        with pytest.raises(Forbidden):
            c.list_items("/api/v1/nodes")
    assert len(srv.cluster.requests) == 1


def test_connection_refused_is_cluster_unavailable() -> None:
    def refuse(method: str, path: str, query: list[tuple[str, str]], timeout: float) -> Response:
        raise ConnectionRefusedError("[Errno 111] Connection refused")

    c = KubeClient(refuse, sleep=Sleeps(), max_retries=2)
    with pytest.raises(ClusterUnavailable, match="cannot reach the Kubernetes API .*Connection refused"):
        c.get("/api")
    assert [r.status for r in c.log] == [0, 0, 0]


def test_overall_deadline() -> None:
    now = [0.0]

    def clock() -> float:
        return now[0]

    def slow(method: str, path: str, query: list[tuple[str, str]], timeout: float) -> Response:
        now[0] += 4.0
        assert timeout <= 10.0  # the per-request timeout never exceeds what is left
        return Response(200, {}, b'{"kind":"Namespace"}')

    c = KubeClient(slow, timeout=10, clock=clock, sleep=Sleeps())
    c.get("/api/v1/namespaces/a")
    c.get("/api/v1/namespaces/b")
    c.get("/api/v1/namespaces/c")  # starts at t=8 < 10
    with pytest.raises(DeadlineExceeded):
        c.get("/api/v1/namespaces/d")


def test_read_only_in_code() -> None:
    sent: list[str] = []

    def record(method: str, path: str, query: list[tuple[str, str]], timeout: float) -> Response:
        sent.append(method)
        return Response(200, {}, b"{}")

    c = KubeClient(record)
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        with pytest.raises((AssertionError, RuntimeError), match="read-only"):
            c._send(method, "/api/v1/namespaces/x/pods")
    with pytest.raises(RuntimeError, match="never reads Secrets"):
        c.get("/api/v1/namespaces/x/secrets")
    with pytest.raises(RuntimeError, match="never reads Secrets"):
        c.list_items("/api/v1/secrets")
    assert sent == []
    # a namespace called "secrets" (or "secrets-team") is not a Secret
    c.get("/api/v1/namespaces/secrets")
    c.list_items("/api/v1/namespaces/secrets-team/pods")
    assert sent == ["GET", "GET"]


def test_on_page_overlaps_with_fetching_the_next_page() -> None:
    """`on_page` gets each page in order while the next page is already being fetched (the collector sanitizes
    one page while the next one travels), and the LIST still returns every item once."""
    import json
    import threading

    pages = {None: ({"items": [{"metadata": {"name": "a"}}], "metadata": {"continue": "t1"}}),
             "t1": ({"items": [{"metadata": {"name": "b"}}], "metadata": {"continue": "t2"}}),
             "t2": ({"items": [{"metadata": {"name": "c"}}], "metadata": {}})}
    asked: dict[str, threading.Event] = {t: threading.Event() for t in ("t1", "t2")}

    def transport(method: str, path: str, query: list[tuple[str, str]], timeout: float) -> Response:
        token = dict(query).get("continue")
        if token:
            asked[token].set()
        return Response(200, {}, json.dumps({"kind": "PodList", "apiVersion": "v1", **pages[token]}).encode())

    seen: list[tuple[list[str], bool]] = []

    def on_page(page: list[dict[str, Any]]) -> None:
        names = [p["metadata"]["name"] for p in page]
        following = {"a": "t1", "b": "t2"}.get(names[0])
        # the request for the following page is made while this page is being processed
        seen.append((names, asked[following].wait(5) if following else True))

    items = KubeClient(transport, sleep=Sleeps()).list_items("/api/v1/pods", on_page=on_page)
    assert [i["metadata"]["name"] for i in items] == ["a", "b", "c"]
    assert all(i["kind"] == "Pod" and i["apiVersion"] == "v1" for i in items)
    assert seen == [(["a"], True), (["b"], True), (["c"], True)]



def test_a_pipelined_list_hands_the_interpreter_to_its_reader_quickly_and_restores_the_interval() -> None:
    """While `on_page` works on one page, the thread reading the next one gets the interpreter back within
    READER_SWITCH_INTERVAL of its data arriving (not CPython's 5 ms per chunk); the process's own interval comes
    back when the LIST ends, also when `on_page` raises, and only after the last of two overlapping LISTs."""
    import json
    import sys

    from kueuediag.live.kube import READER_SWITCH_INTERVAL

    def transport(method: str, path: str, query: list[tuple[str, str]], timeout: float) -> Response:
        token = dict(query).get("continue")
        doc = {"kind": "PodList", "apiVersion": "v1", "items": [{"metadata": {"name": token or "first"}}],
               "metadata": {"continue": "next"} if token is None else {}}
        return Response(200, {}, json.dumps(doc).encode())

    own = sys.getswitchinterval()
    assert own > READER_SWITCH_INTERVAL  # CPython's default: the test needs a difference to see
    c = KubeClient(transport, sleep=Sleeps())
    during: list[float] = []
    inner: list[float] = []

    def on_page(page: list[dict[str, Any]]) -> None:
        during.append(sys.getswitchinterval())
        if page[0]["metadata"]["name"] == "first" and not inner:  # a second LIST inside the first one
            c.list_items("/api/v1/events", on_page=lambda p: inner.append(sys.getswitchinterval()))
            during.append(sys.getswitchinterval())

    c.list_items("/api/v1/pods", on_page=on_page)
    assert during == [READER_SWITCH_INTERVAL] * 3 and inner == [READER_SWITCH_INTERVAL] * 2
    assert sys.getswitchinterval() == own

    def boom(page: list[dict[str, Any]]) -> None:
        raise ValueError("on_page failed")

    with pytest.raises(ValueError, match="on_page failed"):
        c.list_items("/api/v1/pods", on_page=boom)
    assert sys.getswitchinterval() == own
