"""The per-snapshot indexes behind `health --all-pending` answer exactly what the direct computation answers.

`health --all-pending` diagnoses every pending workload on one shared Snapshot, so whatever a check reads more
than once is indexed or memoised once per snapshot. Each test here computes an answer both ways — through the
index and by the plain scan it replaces — and requires them equal; the last one diagnoses workloads of several
ClusterQueues on one shared snapshot after many others and compares each verdict with one from a fresh snapshot.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kueuediag.analysis.admission_rates import admission_rates, detect_trickle, sparkline
from kueuediag.analysis.queue_order import pending_queue
from kueuediag.analysis.queue_route import local_queue_names
from kueuediag.config import Settings
from kueuediag.engine import diagnose
from kueuediag.registry import discover
from kueuediag.render.json_out import render_json
from kueuediag.snapshot.kueue import kueue_index, workloads_by_cluster_queue
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.snapshot.model import Snapshot
from kueuediag.target import resolve

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "snapshots"


@pytest.fixture(scope="module")
def bench_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bench") / "snap"
    subprocess.run([sys.executable, str(ROOT / "bench" / "generate_large.py"), str(out), "--scale", "small"],
                   check=True, capture_output=True)
    return out


def _rate_snapshots(bench_dir: Path) -> list[Snapshot]:
    # metrics-sourced (the benchmark, slow-pod-preemption) and object-sourced (slow-preemption-no-metrics)
    return [load_snapshot(str(bench_dir)), load_snapshot(str(FIXTURES / "slow-pod-preemption")),
            load_snapshot(str(FIXTURES / "slow-preemption-no-metrics"))]


def test_count_since_equals_a_linear_count(bench_dir: Path) -> None:
    checked = 0
    for snap in _rate_snapshots(bench_dir):
        for cq in sorted(workloads_by_cluster_queue(snap))[:8]:
            rates = admission_rates(snap, cq, 6 * 3600)
            lists = [rates.admission_times, rates.preemption_times, rates.all_admission_times,
                     rates.all_preemption_times, *rates.admissions_by_cq.values()]
            for times in lists:
                assert times == sorted(times)  # what the binary search relies on
                probes = {rates.start, rates.end, rates.end - 1800, *times[:3], *times[-3:],
                          *(t - 0.5 for t in times[:3])}
                for since in probes:
                    assert rates.count_since(times, since) == sum(1 for t in times if since < t <= rates.end)
                    checked += 1
    assert checked > 50


def test_rates_sparklines_and_trickle_equal_the_direct_reading(bench_dir: Path) -> None:
    trickles = 0
    for snap in _rate_snapshots(bench_dir):
        for cq in sorted(workloads_by_cluster_queue(snap))[:8]:
            rates = admission_rates(snap, cq, 6 * 3600)
            assert rates.sparklines == {"admissions": sparkline(rates.buckets(rates.admission_times)),
                                        "preemptions": sparkline(rates.buckets(rates.preemption_times))}
            for min_events, min_gap, max_cv in ((4, 120.0, 0.35), (3, 60.0, 0.5), (6, 300.0, 0.2)):
                got = rates.trickle(min_events=min_events, min_gap=min_gap, max_cv=max_cv)
                assert got == detect_trickle(rates.admission_times, min_events=min_events, min_gap=min_gap,
                                             max_cv=max_cv)
                trickles += got is not None
    assert trickles > 0  # the slow-preemption fixtures trickle: the comparison covered a found trickle


def test_local_queue_names_equal_a_scan_of_every_local_queue(bench_dir: Path) -> None:
    for snap in (load_snapshot(str(bench_dir)), load_snapshot(str(FIXTURES / "queue-problems"))):
        idx = kueue_index(snap)
        namespaces = {ns for ns, _ in idx.local_queues} | {"no-such-namespace"}
        for ns in sorted(namespaces):
            direct = sorted(lq.name for (lns, _), lq in idx.local_queues.items() if lns == ns)
            assert local_queue_names(snap, ns) == direct
        assert local_queue_names(snap, "no-such-namespace") == []


def _doc(snap: Snapshot, namespace: str, name: str) -> dict[str, object]:
    verdict = diagnose(snap, resolve(snap, f"workload/{name}", namespace), discover(), Settings())
    doc = json.loads(render_json(verdict))
    for run in doc["checks"]:
        run.pop("durationMs", None)
    return doc


def test_shared_snapshot_verdicts_equal_fresh_ones(bench_dir: Path) -> None:
    """Every pending workload of the first ClusterQueues diagnosed on one snapshot (the memos warm), and a
    sample of them each on a fresh snapshot: the documents are identical."""
    shared = load_snapshot(str(bench_dir))
    queues = sorted(workloads_by_cluster_queue(shared))
    order = [(e.workload.namespace, e.workload.name) for cq in queues for e in pending_queue(shared, cq)]
    assert len(order) >= 10
    docs = {key: _doc(shared, *key) for key in order}
    sample = order[:3] + order[len(order) // 2:len(order) // 2 + 3] + order[-3:]
    for key in sample:
        assert docs[key] == _doc(load_snapshot(str(bench_dir)), *key), key
