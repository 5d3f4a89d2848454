"""Live fault injection: every fault ends within the deadline plus a small margin, with the right exit code, and
with a partial verdict whenever the target itself could be read.

The API server is tests/live/apiserver.py (faults injected per path); Prometheus faults come from
tests/live/fakeprom.py. Deadlines are short (`--timeout 4`) so that an overrun shows as a failure, not a hang.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kueuediag.cli import build_app
from kueuediag.errors import ExitCode
from kueuediag.live import LiveOptions, collect_for_why, live_snapshot_for_why
from kueuediag.live.kube import KubeClient
from kueuediag.live.write import write_snapshot
from kueuediag.snapshot.reader import read_snapshot
from tests.live.apiserver import Fault
from tests.live.conftest import ServerFactory
from tests.live.fakeprom import FakePrometheus

TIMEOUT = 4.0
MARGIN = 2.5
"""wall-time bound of every faulted run: the deadline plus this (process-internal: no interpreter start-up)"""
TARGET, NS = "job/llm-finetune", "team-a"
JOBS = r"^/apis/batch/v1/namespaces/team-a/jobs$"
WORKLOADS = r"^/apis/kueue\.x-k8s\.io/v1beta2/(namespaces/team-a/)?workloads$"
"""the namespace's Workloads and the cluster-wide LIST that also holds them"""


class Run:
    def __init__(self, code: int, out: str, err: str, seconds: float) -> None:
        self.code, self.out, self.err, self.seconds = code, out, err, seconds

    @property
    def doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads(self.out)
        return doc

    def errors(self) -> dict[str, str]:
        return dict(e.split(": ", 1) for e in self.doc["snapshotErrors"])


def why(srv: Any, tmp_path: Path, *extra: str, target: str = TARGET, timeout: float = TIMEOUT) -> Run:
    args = ["why", target, "-n", NS, "--kubeconfig", str(srv.kubeconfig(tmp_path)), "--timeout", str(timeout),
            "-o", "json", *extra]
    start = time.monotonic()
    result = CliRunner().invoke(build_app(), args, env={"NO_COLOR": "1"})
    seconds = time.monotonic() - start
    run = Run(result.exit_code, result.stdout, result.stderr, seconds)
    assert seconds <= timeout + MARGIN, f"{seconds:.1f}s > {timeout}+{MARGIN}s: {result.stderr}"
    return run


def test_slow_drip_body_is_cut_at_the_deadline(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server() as srv:
        srv.cluster.faults.append(Fault(path=JOBS, drip=0.5))
        run = why(srv, tmp_path)
    assert run.code == ExitCode.OK, run.err
    # the Job list never completed, but the target's Workload was read: a partial verdict about it
    assert run.doc["workload"]["name"] == "job-llm-finetune-a306b"
    assert "response body" in run.errors()["jobs (list)"]
    assert "partial snapshot" in run.err


def test_retry_after_3600_from_the_api_server_ends_that_request_at_once(api_server: ServerFactory,
                                                                          tmp_path: Path) -> None:
    with api_server() as srv:
        srv.cluster.faults.append(Fault(path=r"^/api/v1/namespaces/team-a/events$", status=429,
                                        headers={"Retry-After": "3600"}))
        run = why(srv, tmp_path)
    assert run.seconds < 2.0  # no sleeping into the deadline: the rest of the collection went on at once
    assert run.code == ExitCode.OK and run.doc["verdict"]["cause"] == "waiting-for-quota"
    assert run.errors()["events (list)"] == ("not collected: HTTP 429, gave up after 1 attempt(s); the server asked "
                                             "to retry after 3600s: waiting would cross the --timeout")


def test_retry_after_3600_from_prometheus(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server() as srv, FakePrometheus("retry-after") as prom:
        run = why(srv, tmp_path, "--prometheus-url", prom.url)
    assert run.seconds < 2.0 and prom.requests == 1
    assert run.code == ExitCode.OK and run.doc["verdict"]["cause"] == "waiting-for-quota"
    assert "asked to retry after 3600s" in run.errors()["Prometheus metrics"]


def test_huge_prometheus_answer_is_bounded(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server() as srv, FakePrometheus("huge", series=20_000, samples=120) as prom:
        body = len(prom.body())
        run = why(srv, tmp_path, "--prometheus-url", prom.url)
    assert body > 40 * 1024 * 1024  # the answer really is big
    assert run.code == ExitCode.OK and run.doc["verdict"]["cause"] == "waiting-for-quota"
    assert run.errors()["Prometheus metrics"] == "an answer exceeded 16 MiB (the bound for one response)"


def test_many_prometheus_series_are_bounded(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server() as srv, FakePrometheus("huge", series=20_000, samples=2) as prom:
        raw = collect_for_why(TARGET, NS, LiveOptions(kubeconfig=str(srv.kubeconfig(tmp_path)), timeout=TIMEOUT,
                                                      prometheus_url=prom.url))
    errors = {e["what"]: e["error"] for e in raw.manifest["errors"]}
    assert errors["Prometheus metrics"].startswith("partly collected: more than 10,000 series")
    kept = {line.split("}")[0] for line in raw.metrics["metrics/prometheus.om"].splitlines()
            if line.startswith("kueue_pending_workloads{")}
    assert len(kept) == 10_000


def test_slow_prometheus_is_cut_at_the_deadline(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server() as srv, FakePrometheus("drip", drip=0.5) as prom:
        run = why(srv, tmp_path, "--prometheus-url", prom.url)
    assert run.code == ExitCode.OK and run.doc["verdict"]["cause"] == "waiting-for-quota"
    assert "Prometheus metrics" in run.errors()


def test_403_on_jobs_diagnoses_through_the_workload(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server() as srv:
        srv.cluster.faults.append(Fault(path=JOBS, status=403))
        run = why(srv, tmp_path)
        typo = why(srv, tmp_path, target="job/llm-finetun")
    assert run.code == ExitCode.OK and run.doc["verdict"]["cause"] == "waiting-for-quota"
    denied = "cannot list jobs.batch in namespace team-a (403): need get/list on jobs.batch"
    assert run.errors()["jobs (list)"] == denied
    # a name no collected Workload owns cannot be declared absent: exit 4, the permission named, no "did you mean"
    assert typo.code == ExitCode.UNAVAILABLE
    assert typo.err.strip().splitlines()[-1] == \
        f"kueuediag: error: job/llm-finetun: not allowed to read it in namespace team-a: jobs (list): {denied}"


def test_403_on_workloads_is_unknown_never_not_managed(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server() as srv:
        srv.cluster.faults.append(Fault(path=WORKLOADS, status=403))
        run = why(srv, tmp_path)
    assert run.code == ExitCode.OK
    doc = run.doc
    assert doc["workload"]["state"] == "unknown"
    assert doc["verdict"]["cause"] != "not-managed"
    assert all(f["cause"] != "not-managed" for f in doc["findings"])
    assert "need get/list on workloads.kueue.x-k8s.io" in run.errors()["workloads (list)"]
    skipped = {c["code"]: c.get("reason") or "" for c in doc["checks"] if c["outcome"] == "skipped"}
    assert "need get/list on workloads.kueue.x-k8s.io" in skipped["KD101"]
    assert skipped["KD001"] == f"workloads (list): {run.errors()['workloads (list)']}"  # not-managed's owner


def test_403_on_nodes_keeps_the_verdict(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server() as srv:
        srv.cluster.faults.append(Fault(path=r"^/api/v1/nodes$", status=403))
        run = why(srv, tmp_path)
    assert run.code == ExitCode.OK and run.doc["verdict"]["cause"] == "waiting-for-quota"
    assert run.errors()["nodes (list)"] == "cannot list nodes (403): need get/list on nodes"


def test_repeated_503_retries_until_the_deadline(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server() as srv:
        srv.cluster.faults.append(Fault(path=JOBS, status=503))
        run = why(srv, tmp_path)
        attempts = sum(1 for r in srv.cluster.requests if r.path.endswith("/team-a/jobs"))
    assert run.seconds >= TIMEOUT - 1.5  # it kept trying instead of giving up early
    assert attempts >= 4
    assert run.code == ExitCode.OK and run.doc["workload"]["name"] == "job-llm-finetune-a306b"
    assert run.errors()["jobs (list)"].startswith("not collected: HTTP 503, gave up after")


def test_truncated_json_is_refetched_then_reported(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server() as srv:
        srv.cluster.faults.append(Fault(path=WORKLOADS, truncate=100, times=1))
        healed = why(srv, tmp_path)
        srv.cluster.faults.append(Fault(path=WORKLOADS, truncate=100))
        broken = why(srv, tmp_path)
    assert healed.code == ExitCode.OK and healed.doc["verdict"]["cause"] == "waiting-for-quota"
    assert "workloads (list)" not in healed.errors()
    assert broken.code == ExitCode.OK and broken.doc["workload"]["state"] == "unknown"
    assert broken.errors()["workloads (list)"] == "HTTP 200: response is not JSON"


def test_410_on_continue_restarts_the_list(api_server: ServerFactory, tmp_path: Path) -> None:
    def client(srv: Any) -> KubeClient:
        return KubeClient.from_kubeconfig(str(srv.kubeconfig(tmp_path)), None, timeout=TIMEOUT, page_size=2)

    with api_server() as srv:
        srv.cluster.faults.append(Fault(path=r"/pods$", status=410, query="continue=", times=2))
        start = time.monotonic()
        snap = live_snapshot_for_why(TARGET, NS, LiveOptions(timeout=TIMEOUT), client=client(srv))
        restarted = [r for r in srv.cluster.requests if r.status == 410]
        served = {o["metadata"]["name"] for o in srv.cluster.objects if o["kind"] == "Pod"
                  and o["metadata"].get("namespace") == NS}
        srv.cluster.faults.append(Fault(path=r"^/api/v1/pods$", status=410, query="continue="))
        broken = live_snapshot_for_why(TARGET, NS, LiveOptions(timeout=TIMEOUT), client=client(srv))
    assert time.monotonic() - start <= 2 * TIMEOUT + MARGIN
    assert len(restarted) == 2 and snap.manifest.errors == ()
    assert {p["metadata"]["name"] for p in snap.in_namespace("Pod", NS)} == served
    bound = "pods bound to the flavors' machines (list, all namespaces)"
    assert dict(broken.manifest.errors)[bound].startswith("HTTP 410")
    assert broken.manifest.partial


def test_429_on_the_first_request(api_server: ServerFactory, tmp_path: Path) -> None:
    discovery = r"^/apis/kueue\.x-k8s\.io$"
    with api_server() as srv:
        srv.cluster.faults.append(Fault(path=discovery, status=429, times=2, headers={"Retry-After": "1"}))
        run = why(srv, tmp_path)
        always = Fault(path=discovery, status=429)
        srv.cluster.faults.append(always)
        never = why(srv, tmp_path)
    assert run.code == ExitCode.OK and run.doc["verdict"]["cause"] == "waiting-for-quota"
    assert 2.0 <= run.seconds
    # always 429: it retries until the deadline (not a fixed number of times), then says why, exit 4. The
    # backoff doubles from 0.25 s and stops when the next wait would cross the deadline, so the run ends
    # within one wait of it: at 3.75 s after the first request, or at 1.75 s when that request came later
    # than 0.25 s after the start (a loaded machine) — at least four tries and half the budget either way.
    assert never.code == ExitCode.UNAVAILABLE
    assert always.hits >= 4
    assert never.seconds >= TIMEOUT / 2
    assert "HTTP 429" in never.err and "Traceback" not in never.err


def test_why_from_a_partial_snapshot(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server() as srv:
        srv.cluster.faults.append(Fault(path=JOBS, status=403))
        raw = collect_for_why(TARGET, NS, LiveOptions(kubeconfig=str(srv.kubeconfig(tmp_path)), timeout=TIMEOUT))
    assert raw.manifest["partial"] is True
    saved = write_snapshot(raw, tmp_path / "partial.tar.gz")
    runner = CliRunner()
    ok = runner.invoke(build_app(), ["why", TARGET, "-n", NS, "--from", str(saved), "-o", "json"])
    assert ok.exit_code == ExitCode.OK and json.loads(ok.stdout)["verdict"]["cause"] == "waiting-for-quota"
    assert "warning: partial snapshot" in ok.stderr
    typo = runner.invoke(build_app(), ["why", "job/llm-finetun", "-n", NS, "--from", str(saved)])
    assert typo.exit_code == ExitCode.UNAVAILABLE
    assert "did you mean" not in typo.stderr and "need get/list on jobs.batch" in typo.stderr


@pytest.mark.parametrize("where", ["file-parent", "non-empty-dir"])
def test_failed_save_keeps_the_verdict(api_server: ServerFactory, tmp_path: Path, where: str) -> None:
    if where == "file-parent":
        (tmp_path / "a-file").write_text("x")
        dest = tmp_path / "a-file" / "out.tar.gz"
    else:
        dest = tmp_path / "full"
        dest.mkdir()
        (dest / "keep.txt").write_text("mine")
    with api_server() as srv:
        run = why(srv, tmp_path, "--save", str(dest))
    assert run.code == ExitCode.SAVE_FAILED
    assert run.doc["verdict"]["cause"] == "waiting-for-quota"  # the verdict was printed in full
    assert run.err.strip().splitlines()[-1].startswith(f"kueuediag: error: --save: {dest}")
    assert "(the verdict above is complete)" in run.err
    if where == "non-empty-dir":
        assert sorted(p.name for p in dest.iterdir()) == ["keep.txt"]


def test_parallel_saves_to_one_path(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server() as srv:
        raw = collect_for_why(TARGET, NS, LiveOptions(kubeconfig=str(srv.kubeconfig(tmp_path))))
    dest = tmp_path / "same.tar.gz"
    failures: list[str] = []

    def save() -> None:
        try:
            write_snapshot(raw, dest)
        except Exception as exc:  # noqa: BLE001 - any failure is what this test counts
            failures.append(repr(exc))

    for _ in range(5):
        threads = [threading.Thread(target=save) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert failures == []
    assert len(read_snapshot(dest).objects) == len(raw.objects)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary files left
