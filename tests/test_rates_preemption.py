"""Pure helpers behind KD301/KD302: trickle detection, sparklines, Preempted messages, feature gates, rates."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kueuediag.analysis.admission_rates import admission_rates, detect_trickle, nice_step, sparkline
from kueuediag.analysis.preemption_victims import (
    blocked_heads,
    parse_preempted_message,
    preemption_victims,
)
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.snapshot.model import Snapshot
from kueuediag.snapshot.reader import RawSnapshot

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "snapshots"


def test_regular_gaps_are_a_trickle() -> None:
    times = [1000.0 + 900 * i + (30 if i % 2 else -30) for i in range(8)]
    trickle = detect_trickle(times)
    assert trickle is not None
    assert trickle.count == 8
    assert 840 <= trickle.median_gap <= 960
    assert trickle.cv < 0.1


def test_bursts_and_short_histories_are_not_a_trickle() -> None:
    # three bursts of admissions 9 s apart: gaps alternate between seconds and hours
    bursts = [t0 + 9 * i for t0 in (0.0, 9000.0, 15000.0) for i in range(10)]
    assert detect_trickle(bursts) is None
    assert detect_trickle([0.0, 900.0, 1800.0]) is None  # fewer than 4 events
    # a fast, regular stream (every 30 s) is healthy throughput, not a trickle
    assert detect_trickle([30.0 * i for i in range(50)], merge_within=10) is None
    # several admissions at one sample count as one moment
    assert detect_trickle([0.0, 0.0, 900.0, 900.0, 1800.0, 2700.0]) is not None


def test_sparkline_scales_to_the_maximum() -> None:
    assert sparkline([0, 1, 2, 4]) == "▁▃▅█"
    assert sparkline([0, 0]) == "▁▁"
    assert sparkline([]) == ""
    assert nice_step(6 * 3600) == 600.0
    assert nice_step(3600) == 120.0


def test_parse_preempted_message_v019_and_legacy() -> None:
    full = parse_preempted_message(
        "Preempted to accommodate a workload (UID: 1f7c, JobUID: 9e2a) due to reclamation within the cohort; "
        "preemptor path: /research/demo-cq; preemptee path: /research/burst-cq")
    assert full == {"uid": "1f7c", "job_uid": "9e2a", "why": "reclamation within the cohort",
                    "preemptor_path": "/research/demo-cq", "preemptee_path": "/research/burst-cq"}
    legacy = parse_preempted_message(
        "Preempted to accommodate a workload (UID: 1f7c) due to prioritization in the ClusterQueue")
    assert legacy is not None and legacy["uid"] == "1f7c" and legacy["preemptor_path"] is None
    assert parse_preempted_message("The workload is deactivated") is None


def _snap(objects: list[dict[str, Any]]) -> Snapshot:
    raw = RawSnapshot(source="t", manifest={"capturedAt": "2026-11-20T14:00:00Z"}, objects=objects)
    return Snapshot(raw, now=datetime(2026, 11, 20, 14, tzinfo=UTC))


def test_victims_and_blocked_heads_in_the_zombie_fixture() -> None:
    snap = load_snapshot(str(FIXTURES / "zombie-preemption-target"))
    victims = {v.workload.ref(): v for v in preemption_victims(snap)}
    assert list(victims) == ["eval/llm-eval-4"]
    v = victims["eval/llm-eval-4"]
    assert v.holds_quota and v.preemptor_cq == "team-a" and v.reason == "InCohortReclamation"
    assert [p.pod.name for p in v.zombie_pods] == ["llm-eval-4-1"]
    assert v.zombie_pods[0].node_ready is False
    heads = {h.cluster_queue or "": h for h in blocked_heads(snap)}
    assert sorted(heads) == ["team-a", "team-b", "team-c"]
    assert heads["team-a"].message.preempting == 1 and not heads["team-a"].overlapping
    assert heads["team-b"].overlapping and heads["team-c"].overlapping


def test_rates_from_metrics_and_from_objects_agree_on_the_trickle() -> None:
    with_metrics = admission_rates(load_snapshot(str(FIXTURES / "slow-pod-preemption")), "demo-cq", 6 * 3600)
    assert with_metrics.source == "metrics"
    assert len(with_metrics.admission_times) == 24 and len(with_metrics.preemption_times) == 24
    assert with_metrics.pending_min() == 19.0  # work stayed pending throughout
    assert with_metrics.attempts["success"] == 44.0
    objects = admission_rates(load_snapshot(str(FIXTURES / "slow-preemption-no-metrics")), "demo-cq", 6 * 3600)
    assert objects.source == "objects"
    assert len(objects.admission_times) == 5  # conditions and events of the same admission counted once
    assert objects.pending_min() is None
    for rates in (with_metrics, objects):
        trickle = detect_trickle(rates.admission_times)
        assert trickle is not None and abs(trickle.median_gap - 900) <= 60


def test_rates_ignore_follower_replicas_and_split_series() -> None:
    from kueuediag.analysis.admission_rates import rates_from_metrics
    from kueuediag.snapshot.metrics import parse_metrics

    lines = ["# TYPE kueue_admitted_workloads counter"]
    # the leader restarted at t=600: a new series (other pod label) starts from 0 — no admission is lost
    for t, v in ((0, 5), (300, 6), (540, 7)):
        lines.append(f'kueue_admitted_workloads_total{{cluster_queue="q",pod="a",replica_role="leader"}} {v} {t}')
    for t, v in ((600, 0), (900, 1), (1200, 2)):
        lines.append(f'kueue_admitted_workloads_total{{cluster_queue="q",pod="b",replica_role="leader"}} {v} {t}')
    lines.append("# TYPE kueue_pending_workloads gauge")
    for t in (0, 600, 1200):
        lines.append(f'kueue_pending_workloads{{cluster_queue="q",status="active",replica_role="leader"}} 3 {t}')
        lines.append(f'kueue_pending_workloads{{cluster_queue="q",status="active",replica_role="follower"}} 3 {t}')
    lines.append("# EOF")
    store = parse_metrics({"m.om": "\n".join(lines) + "\n"})
    rates = rates_from_metrics(store, "q", 3600, 10_000)
    assert rates is not None
    assert rates.admission_times == [300.0, 540.0, 900.0, 1200.0]
    assert rates.pending_by_cq == {"q": 3.0}
    assert rates.pending_min() == 3.0 and rates.pending_since() == 0.0
