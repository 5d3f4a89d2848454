"""`health --all-pending` is `why` for every pending workload: each line equals `why` on that workload alone.

The fleet scan diagnoses thousands of workloads on one shared Snapshot and memoises whatever is the same for many
of them (per snapshot, ClusterQueue, flavor or shape). A memo keyed too coarsely would hand one workload's answer
to another of the same ClusterQueue; these tests catch it by comparing every line of the scan with the document
`why workload/NAME -n NS -o json` prints for that workload on its own (a fresh process state, a fresh snapshot):
cause, headline, findings with their evidence, data and fixes, every check's outcome and evidence. Only each
check's `durationMs` (a timing) is left out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kueuediag.analysis.queue_order import is_pending
from kueuediag.cli import build_app
from kueuediag.snapshot.kueue import workloads
from kueuediag.snapshot.loader import load_snapshot

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "snapshots"

SHARED_QUEUE_FIXTURES = ["guarantee-churn", "kueue-record", "slow-pod-preemption", "queue-strictfifo",
                         "gated-deactivated", "selector-resources", "frag-h100-tas", "admission-checks"]
"""fixtures whose ClusterQueues hold several pending workloads with different verdicts or positions"""


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(build_app(), list(args))
    return result.exit_code, result.stdout, result.stderr


def comparable(doc: dict[str, Any]) -> dict[str, Any]:
    for c in doc["checks"]:
        c.pop("durationMs")
    return doc


def scan_equals_why_alone(snapshot: Path, *extra: str) -> list[dict[str, Any]]:
    """Every line of `health --all-pending -o jsonl` against `why` alone; returns the scan's documents."""
    code, out, err = run("health", "--from", str(snapshot), "-A", "--all-pending", "-o", "jsonl", "--exit-zero",
                         *extra)
    assert code == 0, err
    docs = [comparable(json.loads(line)) for line in out.splitlines()]
    snap = load_snapshot(str(snapshot))
    pending = {(w.namespace, w.name) for w in workloads(snap) if is_pending(w)}
    assert {(d["workload"]["namespace"], d["workload"]["name"]) for d in docs} == pending
    assert len(docs) == len(pending)
    for doc in docs:
        w = doc["workload"]
        code, alone, err = run("why", f"workload/{w['name']}", "-n", w["namespace"], "--from", str(snapshot),
                               "-o", "json", "--exit-zero")
        assert code == 0, err
        assert doc == comparable(json.loads(alone)), f"{w['namespace']}/{w['name']} differs from `why` alone"
    return docs


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_every_benchmark_line_equals_why_alone(bench_dir: Path, jobs: str) -> None:
    """Serially and with the heads shared between two processes (kueuediag.health.workers)."""
    docs = scan_equals_why_alone(bench_dir, "--jobs", jobs)
    # the benchmark's queues hold workloads with different verdicts: a memo shared too widely would show
    by_queue: dict[str, set[tuple[str, ...]]] = {}
    for d in docs:
        by_queue.setdefault(d["workload"]["clusterQueue"], set()).add(
            (d["verdict"]["cause"], *(f["code"] for f in d["findings"])))
    assert any(len(kinds) > 1 for kinds in by_queue.values()), by_queue


@pytest.mark.parametrize("fixture", SHARED_QUEUE_FIXTURES)
def test_every_fixture_line_equals_why_alone(fixture: str) -> None:
    scan_equals_why_alone(FIXTURES / fixture)


@pytest.mark.parametrize("jobs", [1, 2])
def test_streamed_heads_are_handed_out_and_not_kept(bench_dir: Path, jobs: int) -> None:
    """`-o jsonl` hands each head's text to the writer, in order; the report keeps its summary, no verdict."""
    from kueuediag.config import Settings
    from kueuediag.health.build import build_report
    from kueuediag.health.workers import HeadSink
    from kueuediag.registry import discover

    written: list[bytes] = []
    sink = HeadSink(render=lambda v: f"{v.workload.name} {v.cause}\n".encode(), write=written.append)
    lean = build_report(load_snapshot(str(bench_dir)), discover(), Settings(), all_pending=True,
                        keep_verdicts=False, sink=sink, jobs=jobs)
    full = build_report(load_snapshot(str(bench_dir)), discover(), Settings(), all_pending=True)
    assert all(h.verdict is None for h in lean.heads)
    assert all(h.verdict is not None for h in full.heads)
    assert b"".join(written).decode() == "".join(f"{h.name} {h.cause}\n" for h in full.heads)
    assert [(h.name, h.cause, h.layer, h.headline) for h in lean.heads] == \
        [(h.name, h.verdict.cause, h.verdict.layer, h.verdict.headline) for h in full.heads if h.verdict]
    assert [(i.check, i.ref, i.finding, i.note) for i in lean.items] == \
        [(i.check, i.ref, i.finding, i.note) for i in full.items]


def scan(snapshot: Path, *extra: str) -> tuple[int, str, str]:
    return run("health", "--from", str(snapshot), "-A", "--all-pending", "-o", "jsonl", *extra)


@pytest.mark.parametrize("fixture", ["slow-pod-preemption", "stuck-preemption-target"])
def test_workers_print_exactly_the_serial_output(fixture: str) -> None:
    """Same bytes (but for timings), same exit code, with 1, 2 and 3 processes; the exit code counts the heads
    diagnosed in the workers."""
    path = FIXTURES / fixture if (FIXTURES / fixture).exists() else ROOT / "fixtures" / "scenarios" / fixture
    code, serial, _ = scan(path, "--jobs", "1")
    assert code == 1 and serial
    for jobs in ("2", "3"):
        got = scan(path, "--jobs", jobs)
        assert got[0] == code
        assert [comparable(json.loads(x)) for x in got[1].splitlines()] == \
            [comparable(json.loads(x)) for x in serial.splitlines()]


def test_a_failing_head_in_a_worker_fails_as_in_the_serial_scan(bench_dir: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The lines before the failing head are printed, then its one-line error and exit code, as serially."""
    import kueuediag.health.heads as heads
    from kueuediag.errors import InputError

    real = heads.diagnose
    victim = sorted(w.name for w in workloads(load_snapshot(str(bench_dir))) if is_pending(w)
                    and w.obj["status"].get("admission") is None)[-1]

    def failing(snap: Any, target: Any, *args: Any, **kwargs: Any) -> Any:
        if target.workload is not None and target.workload.name == victim:
            raise InputError(f"Workload {victim}: spec.podSets[0].count: not an int")
        return real(snap, target, *args, **kwargs)

    monkeypatch.setattr(heads, "diagnose", failing)
    serial = scan(bench_dir, "--jobs", "1")
    forked = scan(bench_dir, "--jobs", "2")
    assert serial[0] == forked[0] == 2
    assert f"Workload {victim}: spec.podSets[0].count: not an int" in serial[2] == forked[2]
    assert [comparable(json.loads(x))["workload"]["name"] for x in forked[1].splitlines()] == \
        [comparable(json.loads(x))["workload"]["name"] for x in serial[1].splitlines()]
    assert victim not in serial[1]


def test_a_queue_whose_worker_died_is_diagnosed_by_the_main_process(bench_dir: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    import kueuediag.health.heads as heads

    real = heads.diagnose
    main = os.getpid()

    def dying(snap: Any, target: Any, *args: Any, **kwargs: Any) -> Any:
        if os.getpid() != main:
            os._exit(9)  # a worker killed mid-queue (OOM killer, a signal)
        return real(snap, target, *args, **kwargs)

    serial = scan(bench_dir, "--jobs", "1", "--exit-zero")
    monkeypatch.setattr(heads, "diagnose", dying)
    forked = scan(bench_dir, "--jobs", "2", "--exit-zero")
    assert forked[0] == serial[0] == 0
    assert [comparable(json.loads(x)) for x in forked[1].splitlines()] == \
        [comparable(json.loads(x)) for x in serial[1].splitlines()]


@pytest.mark.parametrize(("load", "cpus", "jobs"), [(0.4, 2, 2), (1.9, 2, 2), (2.0, 2, 1), (5.5, 2, 1), (3.0, 8, 8),
                                                    (0.0, 1, 1)])
def test_workers_are_forked_only_onto_cpus_with_room(monkeypatch: pytest.MonkeyPatch, load: float, cpus: int,
                                                     jobs: int) -> None:
    """On a machine whose CPUs are already busy a second process only slows the scan (docs/performance.md)."""
    import os

    from kueuediag.cores import auto_jobs

    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(cpus)))
    assert auto_jobs() == jobs


@pytest.mark.parametrize("fmt", ["markdown", "openmetrics", "terminal"])
def test_summary_formats_are_the_same_with_workers(bench_dir: Path, fmt: str) -> None:
    """Formats that print each head's summary (not its verdict) get the same report from two processes."""
    serial = scan_as(bench_dir, fmt, "1")
    assert "team-000" in serial[1]
    assert scan_as(bench_dir, fmt, "2") == serial


def scan_as(snapshot: Path, fmt: str, jobs: str) -> tuple[int, str, str]:
    return run("health", "--from", str(snapshot), "-A", "--all-pending", "-o", fmt, "--no-color", "--width", "120",
               "--jobs", jobs)
