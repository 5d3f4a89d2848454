"""Events of pods that no longer exist: which belong to the workload's job, which explain its history, and that
they are cited as evidence about a deleted pod, never acted upon."""

from __future__ import annotations

import copy
from pathlib import Path

from kueuediag.analysis.pod_history import departed_pod_events, history_evidence
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.snapshot.model import Snapshot

SNAP = Path(__file__).resolve().parent.parent / "fixtures" / "snapshots" / "deleted-pods"


def _job(snap: Snapshot, name: str) -> dict[str, object]:
    job = snap.get("Job", name, "vision-d")
    assert job is not None
    return job


def test_the_deleted_pods_events_are_the_jobs_history_oldest_first() -> None:
    snap = load_snapshot(str(SNAP))
    got = [(d.pod, d.what, d.event.reason) for d in departed_pod_events(snap, _job(snap, "seg-train"))]
    assert got == [("seg-train-7fk2q", "start failure", "Failed"), ("seg-train-7fk2q", "back-off", "BackOff")]
    (evicted,) = departed_pod_events(snap, _job(snap, "seg-eval"))
    assert (evicted.pod, evicted.what) == ("seg-eval-m4n7c", "eviction")
    assert "low on resource: memory" in evicted.event.message


def test_events_of_pods_that_still_exist_are_not_history() -> None:
    snap = load_snapshot(str(SNAP))
    # seg-eval-q8x2z (image pull failing) and seg-ok-p2w9d (old FailedScheduling) exist: their events are current
    pods = {d.pod for job in ("seg-eval", "seg-ok") for d in departed_pod_events(snap, _job(snap, job))}
    assert pods == {"seg-eval-m4n7c"}


def test_a_longer_job_name_does_not_claim_another_jobs_pods() -> None:
    snap = load_snapshot(str(SNAP))
    other = copy.deepcopy(_job(snap, "seg-train"))
    other["metadata"] = {**other["metadata"], "name": "seg"}  # type: ignore[dict-item]
    # "seg-train-7fk2q" is not "seg-<5 chars>": no pod of job "seg" left events
    assert departed_pod_events(snap, other) == []


def test_history_evidence_says_the_pod_no_longer_exists() -> None:
    snap = load_snapshot(str(SNAP))
    lines = history_evidence(snap, _job(snap, "seg-train"))
    assert [e.observed.split(":", 1)[0] for e in lines] == [
        "pod seg-train-7fk2q (no longer exists) start failure", "pod seg-train-7fk2q (no longer exists) back-off"]
    assert all(e.source == "event" and e.ref is not None and e.ref.kind == "Pod" for e in lines)
    assert history_evidence(snap, None) == []
