"""Look-alikes told apart by their evidence: the whole engine on pairs of snapshots that differ in one fact.

* a cluster-wide stall is `controller-unhealthy` only with controller evidence (a crash loop, restarts, or a log
  that covers the stall without a scheduling cycle); with a Ready controller visibly evaluating the heads it is not;
* "no admission for an hour" in a cohort whose every GPU is held, the scheduler evaluating the heads and writing
  fresh `insufficient unused quota` messages, is quota: the heads wait for it and the holders are named;
* `preemption-in-progress` (short grace, victims terminating now) versus `slow-preemption` (long grace / preStop)
  versus the serialised-preemption known issue, which corroborates only when its signature (plain-pod victims
  holding quota through a long termination, gate off) is present.
"""

from __future__ import annotations

from datetime import timedelta
from functools import cache
from pathlib import Path

from kueuediag.analysis.health import controller_activity
from kueuediag.config import Settings
from kueuediag.engine import diagnose
from kueuediag.models import Verdict
from kueuediag.registry import discover
from kueuediag.snapshot.kueue import workloads
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.target import resolve

SNAPSHOTS = Path(__file__).resolve().parent.parent / "fixtures" / "snapshots"


@cache
def verdict(snapshot: str, target: str, namespace: str) -> Verdict:
    snap = load_snapshot(str(SNAPSHOTS / snapshot))
    return diagnose(snap, resolve(snap, target, namespace), discover(), Settings())


def causes(v: Verdict) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for r in v.findings:
        out.setdefault(r.finding.cause, []).append(r.finding.code)
    return out


def test_stall_with_a_crash_looping_controller_is_controller_unhealthy() -> None:
    v = verdict("lookalike-stall-controller-crashloop", "job/pretrain-b-5", "team-b")
    assert v.cause == "controller-unhealthy"
    top = v.findings[0].finding
    assert "CrashLoopBackOff" in top.title
    assert any(e.ref is not None and e.ref.name == "kueue-controller-manager-7d9f-x2x4q" for e in top.evidence)


def test_same_stall_with_the_scheduler_evaluating_is_not_the_controller() -> None:
    v = verdict("lookalike-stall-scheduler-evaluating", "job/pretrain-b-5", "team-b")
    assert "controller-unhealthy" not in causes(v), causes(v)
    snap = load_snapshot(str(SNAPSHOTS / "lookalike-stall-scheduler-evaluating"))
    activity = controller_activity(snap, snap.now - timedelta(hours=2))
    assert activity.problems == () and activity.scheduling_lines == 240


def test_a_log_that_covers_the_stall_without_scheduling_cycles_is_controller_evidence() -> None:
    snap = load_snapshot(str(SNAPSHOTS / "lookalike-stall-scheduler-evaluating"))
    assert snap.logs_text is not None
    snap.logs_text = {name: text.replace('"schedulingCycle"', '"cycle"') for name, text in snap.logs_text.items()}
    activity = controller_activity(snap, snap.now - timedelta(hours=2))
    assert activity.scheduling_lines == 0
    assert any("no scheduling-cycle log line" in p for p in activity.problems)


def test_short_grace_victims_are_preemption_in_progress_without_a_known_issue() -> None:
    v = verdict("healthy-burst", "job/eval-9", "ml")
    assert v.cause == "preemption-in-progress"
    assert "known-issue" not in causes(v)
    assert "30s" in v.findings[0].finding.title


def test_long_grace_pod_victims_are_slow_preemption_and_the_known_issue_corroborates() -> None:
    v = verdict("slow-pod-preemption", "pod/infer-server-7", "inference")
    assert v.cause == "slow-preemption"
    known = [r.finding for r in v.findings if r.finding.cause == "known-issue"]
    assert [f.data["issue"] for f in known] == ["serialized-pod-preemption"]
    assert any("900s" in e.observed for e in known[0].evidence)
    assert v.findings[0].finding.cause == "slow-preemption"  # the known issue explains, it does not replace


def test_known_issue_stays_silent_when_its_signature_is_absent() -> None:
    """The same slow preemption with FastQuotaReleaseInPodIntegration on: slow-preemption, no known issue."""
    v = verdict("ki-serialized-pod-preemption-gate-on", "workload/llm-server-hi-4k2p", "inference")
    assert v.cause == "slow-preemption"
    assert "known-issue" not in causes(v)


def test_an_hour_without_admissions_in_a_full_cohort_is_quota_not_the_controller() -> None:
    snap = load_snapshot(str(SNAPSHOTS / "lookalike-quiet-cohort-full"))
    admitted = [c.last_transition for w in workloads(snap) if w.holds_quota
                for c in [w.cond("QuotaReserved")] if c is not None and c.last_transition is not None]
    assert len(admitted) == 4 and max(admitted) <= snap.now - timedelta(hours=1)  # the stall is real
    activity = controller_activity(snap, snap.now - timedelta(hours=1))
    assert activity.problems == () and activity.scheduling_lines >= 100  # the scheduler is visibly evaluating
    for team in ("a", "b"):
        v = verdict("lookalike-quiet-cohort-full", f"job/pretrain-{team}-3", f"team-{team}")
        assert v.cause == "waiting-for-quota" and v.layer.value == "kueue", causes(v)
        assert "controller-unhealthy" not in causes(v), causes(v)
        top = v.findings[0].finding
        assert any("insufficient unused quota for nvidia.com/gpu in flavor h100" in e.observed for e in top.evidence)
        holders = {e.ref.name for e in top.evidence if e.ref is not None and e.ref.kind == "Workload"}
        assert {f"job-pretrain-{team}-1-{'5f00a' if team == 'a' else '5f20a'}",
                f"job-pretrain-{team}-2-{'5f10a' if team == 'a' else '5f30a'}"} <= holders
        assert f"2 workload(s) of ClusterQueue team-{team} hold 16 nvidia.com/gpu in flavor h100" in top.message
        assert "0 borrowable" in top.title

