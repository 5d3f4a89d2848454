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
import subprocess
import sys
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


@pytest.fixture(scope="module")
def bench_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bench") / "snap"
    subprocess.run([sys.executable, str(ROOT / "bench" / "generate_large.py"), str(out), "--scale", "small"],
                   check=True, capture_output=True)
    return out


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


def test_every_benchmark_line_equals_why_alone(bench_dir: Path) -> None:
    docs = scan_equals_why_alone(bench_dir)
    # the benchmark's queues hold workloads with different verdicts: a memo shared too widely would show
    by_queue: dict[str, set[tuple[str, ...]]] = {}
    for d in docs:
        by_queue.setdefault(d["workload"]["clusterQueue"], set()).add(
            (d["verdict"]["cause"], *(f["code"] for f in d["findings"])))
    assert any(len(kinds) > 1 for kinds in by_queue.values()), by_queue


@pytest.mark.parametrize("fixture", SHARED_QUEUE_FIXTURES)
def test_every_fixture_line_equals_why_alone(fixture: str) -> None:
    scan_equals_why_alone(FIXTURES / fixture)


def test_streamed_heads_are_handed_out_and_not_kept(bench_dir: Path) -> None:
    """`-o jsonl` hands each head to the writer as it is diagnosed; the report keeps its summary, no verdict."""
    from kueuediag.config import Settings
    from kueuediag.health.build import build_report
    from kueuediag.health.model import Head
    from kueuediag.registry import discover

    seen: list[Head] = []
    lean = build_report(load_snapshot(str(bench_dir)), discover(), Settings(), all_pending=True,
                        keep_verdicts=False, on_head=seen.append)
    full = build_report(load_snapshot(str(bench_dir)), discover(), Settings(), all_pending=True)
    assert all(h.verdict is None for h in lean.heads)
    assert all(h.verdict is not None for h in seen + full.heads)
    assert [(h.name, h.cause, h.layer, h.headline) for h in lean.heads] == \
        [(h.name, h.cause, h.layer, h.headline) for h in seen] == \
        [(h.name, h.verdict.cause, h.verdict.layer, h.verdict.headline) for h in full.heads if h.verdict]
    assert [(i.check, i.ref, i.finding, i.note) for i in lean.items] == \
        [(i.check, i.ref, i.finding, i.note) for i in full.items]
