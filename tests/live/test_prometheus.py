"""Prometheus range queries against a real Prometheus backfilled from fixture OpenMetrics.

The session fixture runs `promtool tsdb create-blocks-from openmetrics` on the live fixture's metrics, starts
`prometheus` on 127.0.0.1 (free port, retention 100y), waits for /-/ready and stops it by PID. Queries use
times inside the backfilled window (the fixture's capture time), never "now". Skipped only when the
`prometheus`/`promtool` binaries are absent.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from kueuediag.live import LiveOptions, collect_for_why
from kueuediag.live.prom import collect_metrics, metric_names, prometheus_headers
from kueuediag.snapshot.metrics import metric_store, parse_metrics
from kueuediag.snapshot.model import Part, Snapshot, load_snapshot
from tests.live.conftest import LIVE_FIXTURE, ServerFactory
from tests.live.fixture_gen import NOW

pytestmark = pytest.mark.prometheus


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def prometheus_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    prom, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if not prom or not promtool:
        pytest.skip("the prometheus and promtool binaries are not installed (Debian package `prometheus`; "
                    ".ci/run installs it)")
    work = tmp_path_factory.mktemp("prometheus")
    data = work / "data"
    source = LIVE_FIXTURE / "metrics" / "prometheus.om"
    assert source.read_text().endswith("# EOF\n")
    subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
                   check=True, capture_output=True, timeout=120)
    config = work / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1h\nscrape_configs: []\n")
    port = _free_port()
    log = (work / "prometheus.log").open("wb")
    proc = subprocess.Popen([prom, f"--config.file={config}", f"--storage.tsdb.path={data}",
                             "--storage.tsdb.retention.time=100y", f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"prometheus exited: {(work / 'prometheus.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("prometheus did not become ready within 60s")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def options(url: str, **kw: Any) -> LiveOptions:
    return LiveOptions(prometheus_url=url, since=timedelta(hours=2), prometheus_step=timedelta(seconds=60), **kw)


def test_range_queries_return_the_backfilled_series(prometheus_url: str) -> None:
    result = collect_metrics(options(prometheus_url), NOW - timedelta(hours=2), NOW)
    assert result.errors == []
    assert result.queries == -(-len(metric_names()) // 8)  # batched, not one request per metric
    text = result.files["metrics/prometheus.om"]
    assert text.endswith("# EOF\n")
    store = parse_metrics(result.files)
    disk = parse_metrics({"metrics/prometheus.om": (LIVE_FIXTURE / "metrics" / "prometheus.om").read_text()})
    for name in ("kueue_pending_workloads", "kueue_cluster_queue_resource_usage", "kueue_admitted_workloads_total"):
        got = {s.labels: s.points for s in store.select(name)}
        want = {s.labels: s.points for s in disk.select(name)}
        assert got == want, name
    pending = {s.label("cluster_queue"): s.points[-1][1] for s in store.select("kueue_pending_workloads",
                                                                              status="active")}
    assert pending == {"team-a": 1.0, "team-b": 0.0, "misc": 0.0}


def test_missing_metrics_are_notes_not_errors(prometheus_url: str) -> None:
    result = collect_metrics(options(prometheus_url), NOW - timedelta(hours=2), NOW)
    assert "kueue_cluster_queue_resource_pending" in result.missing
    assert "kueue_pending_workloads" not in result.missing
    assert ("metric kueue_cluster_queue_resource_pending not found in Prometheus (needs "
            "metrics.enableClusterQueueResources: true (Kueue v0.18+))") in result.notes
    assert result.errors == []


def test_live_why_with_prometheus(api_server: ServerFactory, tmp_path: Path, prometheus_url: str) -> None:
    disk = load_snapshot(str(LIVE_FIXTURE))
    with api_server() as srv:
        o = options(prometheus_url, kubeconfig=str(srv.kubeconfig(tmp_path)), metrics_end=NOW)
        raw = collect_for_why("job/llm-finetune", "team-a", o)
    snap = Snapshot(raw, now=disk.now)
    assert snap.part_unavailable(Part.METRICS) is None
    assert raw.manifest["errors"] == []
    assert any("kueue_cluster_queue_resource_pending" in n for n in raw.manifest["notes"])
    live_store, disk_store = metric_store(snap), metric_store(disk)
    assert {s.labels: s.points for s in live_store.select("kueue_pending_workloads")} == \
        {s.labels: s.points for s in disk_store.select("kueue_pending_workloads")}


def test_unreachable_prometheus_marks_metrics_unavailable(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server() as srv:
        o = options(f"http://127.0.0.1:{_free_port()}", kubeconfig=str(srv.kubeconfig(tmp_path)), metrics_end=NOW)
        o.request_timeout = 2
        raw = collect_for_why("job/llm-finetune", "team-a", o)
    snap = Snapshot(raw)
    (what, _err), = [e for e in snap.manifest.errors if "Prometheus" in e[0]]
    assert what == "Prometheus metrics"
    assert (snap.part_unavailable(Part.METRICS) or "").startswith("not collected (Prometheus metrics: ")
    assert snap.part_unavailable(Part.WORKLOADS) is None


def test_bearer_token_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUEUEDIAG_PROMETHEUS_TOKEN", "tok-123")
    assert prometheus_headers(LiveOptions(prometheus_headers=["X-Scope-OrgID=team-a"])) == {
        "X-Scope-OrgID": "team-a", "Authorization": "Bearer tok-123"}
    explicit = LiveOptions(prometheus_headers={"Authorization": "Basic abc"})
    assert prometheus_headers(explicit) == {"Authorization": "Basic abc"}


def test_collector_queries_through_prometheus_api_client(prometheus_url: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The collector speaks to Prometheus through prometheus-api-client (with its transport bounded), and
    its answer equals what the client returns when asked directly."""
    from prometheus_api_client import PrometheusConnect

    calls: list[str] = []
    original = PrometheusConnect.custom_query_range

    def spy(self: PrometheusConnect, query: str, *args: object, **kwargs: object) -> object:
        calls.append(query)
        return original(self, query, *args, **kwargs)

    monkeypatch.setattr(PrometheusConnect, "custom_query_range", spy)
    result = collect_metrics(options(prometheus_url), NOW - timedelta(hours=2), NOW, names=["kueue_pending_workloads"])
    assert calls == ['{__name__=~"kueue_pending_workloads"}'] and result.errors == []
    direct = PrometheusConnect(url=prometheus_url).custom_query_range(
        "kueue_pending_workloads", NOW - timedelta(hours=2), NOW, "60s")
    want = {tuple(sorted((k, v) for k, v in s["metric"].items() if k != "__name__")): len(s["values"])
            for s in direct}
    got = {s.labels: len(s.points) for s in parse_metrics(result.files).select("kueue_pending_workloads")}
    assert got == want and want
