"""KD102's reading of every QuotaReserved variant (v0.9–v0.19, default and granular reasons) and KD601 corner
cases that the fixture cases do not cover (namespace-mismatch head under StrictFIFO, requeue backoff)."""

from __future__ import annotations

from typing import Any

import pytest
from kueuediag_checks.queue_position import QueuePosition
from kueuediag_checks.quota import QuotaCheck

from kueuediag.analysis.messages import parse_pending_message
from kueuediag.analysis.queue_order import effective_priority, pending_queue
from kueuediag.snapshot.kueue import workload, workload_view
from kueuediag.target import Target
from kueuediag.testing import findings_of

from .test_quota_analysis import GPU, _cq, _flavor, _lq, _res, _snap, _wl

_SET = "couldn't assign flavors to pod set main: "
_EXCEEDS_V15 = (
    _SET + "insufficient quota for cpu in flavor default, previously considered podsets requests (0) + current "
    "podset request (10) > maximum capacity (8)"
)

CASES: list[tuple[str, str, str | None]] = [
    (
        "Pending",
        _SET + "insufficient unused quota for cpu in flavor default, 2 more needed. Pending the preemption "
        "of 1 workload(s)",
        "preemption-in-progress",
    ),
    (
        "WaitingForPreemptedWorkloads",
        "Workload has overlapping preemption targets with another workload, but will "
        "fit after these preemptions complete",
        "preemption-in-progress",
    ),
    (
        "WaitingForPreemptedWorkloads",
        _SET + "insufficient unused quota for cpu in flavor default, 2 more needed",
        "preemption-in-progress",
    ),
    (
        "Pending",
        _SET + "insufficient unused quota for cpu in flavor default, 2 more needed. Preempting 1 "
        "workload(s) failed, will retry.",
        "preemption-in-progress",
    ),
    ("Pending", "Workload has overlapping preemption targets with another workload", "waiting-for-quota"),
    ("ExceedsMaxQuota", _EXCEEDS_V15, "exceeds-max-quota"),
    ("Pending", _EXCEEDS_V15, "exceeds-max-quota"),
    ("Pending", _SET + "insufficient quota for cpu in flavor default in ClusterQueue", "exceeds-max-quota"),
    (
        "Pending",
        _SET + "insufficient quota for cpu in flavor a, request > maximum capacity (96 > 64), "
        "insufficient unused quota for cpu in flavor b, 3 more needed",
        "waiting-for-quota",
    ),
    (
        "Pending",
        _SET + "flavor spot doesn't match node affinity, insufficient quota for cpu in flavor "
        "on-demand, request > maximum capacity (96 > 64)",
        "exceeds-max-quota",
    ),
    ("Pending", "Workload no longer fits after processing another workload", "waiting-for-quota"),
    ("WaitingForQuota", "Workload no longer fits after processing another workload", "waiting-for-quota"),
    (
        "Pending",
        _SET + "insufficient unused quota in cohort for cpu in flavor default, 1 more needed",
        "waiting-for-quota",
    ),
    ("PendingEvaluation", "Workload is pending evaluation in the scheduling queue", "not-yet-evaluated"),
    ("Pending", "AdmissionGatedBy cleared, waiting for quota reservation", "not-yet-evaluated"),
    (
        "PendingEvaluation",
        "Bypassed scheduling evaluation because an equivalent workload recently failed",
        "not-yet-evaluated",
    ),
    ("Inadmissible", "LocalQueue training doesn't exist", None),
    ("Misconfigured", "ClusterQueue big is terminating or missing", None),
    ("Pending", "workload namespace doesn't match ClusterQueue selector", None),
    ("Pending", "Workload namespace doesn't match ClusterQueue selector", None),
    (
        "Pending",
        _SET + "flavor a doesn't match node affinity, untolerated taint {key val NoSchedule <nil>} in flavor b",
        None,
    ),
    ("Pending", _SET + "resource example.com/gpu unavailable in ClusterQueue", None),
    ("Waiting", "waiting for all admitted workloads to be in PodsReady condition", None),
    ("AdmissionGated", "Admission is gated by: example.com/budget", None),
]


def _view(reason: str, message: str, evicted: bool = False) -> Any:
    conds = [
        {
            "type": "QuotaReserved",
            "status": "False",
            "reason": reason,
            "message": message,
            "lastTransitionTime": "2026-11-20T09:00:00Z",
        }
    ]
    if evicted:
        conds.append(
            {
                "type": "Evicted",
                "status": "True",
                "reason": "Preempted",
                "message": message,
                "lastTransitionTime": "2026-11-20T09:00:00Z",
            }
        )
    obj = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "ns", "uid": "u1"},
        "spec": {
            "queueName": "lq",
            "podSets": [
                {"name": "main", "count": 1, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}
            ],
        },
        "status": {"conditions": conds},
    }
    return workload_view(obj)


@pytest.mark.parametrize(("reason", "message", "expected"), CASES, ids=[f"{c[0]}:{c[1][:60]}" for c in CASES])
def test_condition_classification(reason: str, message: str, expected: str | None) -> None:
    w = _view(reason, message)
    qr = w.cond("QuotaReserved")
    assert qr is not None
    assert QuotaCheck._cause_from_condition(w, qr, parse_pending_message(message)) == expected


def test_eviction_message_is_recognised() -> None:
    msg = (
        "Preempted to accommodate a workload (UID: u9, JobUID: j9) due to reclamation within the cohort; "
        "preemptor path: /r/q2; preemptee path: /r/q1"
    )
    w = _view("Preempted", msg, evicted=True)
    qr = w.cond("QuotaReserved")
    assert qr is not None
    assert QuotaCheck._cause_from_condition(w, qr, parse_pending_message(msg)) == "evicted"


def _pending(obj: dict[str, Any], reason: str, message: str) -> dict[str, Any]:
    obj["status"] = {
        "conditions": [
            {
                "type": "QuotaReserved",
                "status": "False",
                "reason": reason,
                "message": message,
                "lastTransitionTime": "2026-11-20T09:30:00Z",
            }
        ]
    }
    return obj


def test_granular_exceeds_with_recomputed_numbers() -> None:
    objs = [
        _flavor("a100"),
        _cq("q", None, [_res(GPU, "8")]),
        _lq("ns", "lq", "q"),
        _wl("ns", "running", "lq", {GPU: "2"}, admitted_in="q"),
        _pending(
            _wl("ns", "big", "lq", {GPU: "4"}, count=3),
            "ExceedsMaxQuota",
            _SET + "insufficient quota for nvidia.com/gpu in flavor a100, previously considered podsets "
            "requests (0) + current podset request (12) > maximum capacity (8)",
        ),
    ]
    snap = _snap(objs)
    w = workload(snap, "ns", "big")
    assert w is not None
    (f,) = findings_of(QuotaCheck().run(snap, Target("workload/big", "ns", w)))
    assert f.cause == "exceeds-max-quota"
    assert f.title == "needs 12 nvidia.com/gpu, more than the maximum capacity 8 in flavor a100"
    assert "at most 2 pod(s) of 4 nvidia.com/gpu" in f.remediation[0]
    assert f.data["free_nominal"] == "6"


def test_queue_position_skips_namespace_mismatch_head_and_backoff() -> None:
    objs = [
        _flavor("default"),
        _cq("q", None, [_res("cpu", "8")], flavor="default", covered=("cpu",), queueingStrategy="StrictFIFO"),
        _lq("ns", "lq", "q"),
        _wl("ns", "running", "lq", {"cpu": "4"}, admitted_in="q", flavor="default"),
        _pending(
            _wl("ns", "wrong-ns", "lq", {"cpu": "6"}),
            "Pending",
            "workload namespace doesn't match ClusterQueue selector",
        ),
        _wl("ns", "backoff", "lq", {"cpu": "6"}),
        _wl("ns", "small", "lq", {"cpu": "2"}),
    ]
    for o in objs:
        if o["kind"] == "Workload":
            o["metadata"]["creationTimestamp"] = {
                "wrong-ns": "2026-11-20T08:00:00Z",
                "backoff": "2026-11-20T08:01:00Z",
                "small": "2026-11-20T08:02:00Z",
            }.get(o["metadata"]["name"], "2026-11-20T07:00:00Z")
            if o["metadata"]["name"] == "backoff":
                o["status"] = {"requeueState": {"count": 2, "requeueAt": "2026-11-20T10:05:00Z"}}
    snap = _snap(objs)
    assert [e.workload.name for e in pending_queue(snap, "q")] == ["wrong-ns", "backoff", "small"]
    small = workload(snap, "ns", "small")
    assert small is not None
    assert findings_of(QueuePosition().run(snap, Target("workload/small", "ns", small))) == []
    # without the backoff the 6-cpu head would block the StrictFIFO queue
    for o in objs:
        if o["metadata"]["name"] == "backoff":
            o["status"] = {}
    snap2 = _snap(objs)
    small2 = workload(snap2, "ns", "small")
    assert small2 is not None
    (f,) = findings_of(QueuePosition().run(snap2, Target("workload/small", "ns", small2)))
    assert f.cause == "queued-behind" and f.data["head_blocker"] == "ns/backoff" and f.data["position"] == 3


def test_effective_priority_from_priority_class_when_spec_priority_absent() -> None:
    objs = [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": "urgent", "uid": "wpc1"},
            "value": 5000,
        },
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "node-crit", "uid": "pc1"},
            "value": 700,
        },
        _flavor("a100"),
        _cq("q", None, [_res(GPU, "8")]),
        _lq("ns", "lq", "q"),
        _wl("ns", "a", "lq", {GPU: "1"}),
        _wl("ns", "b", "lq", {GPU: "1"}),
        _wl("ns", "c", "lq", {GPU: "1"}),
    ]
    objs[5]["spec"]["priorityClassRef"] = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "urgent"}
    objs[6]["spec"]["priorityClassRef"] = {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "node-crit"}
    objs[7]["spec"]["priority"] = 9000
    snap = _snap(objs)
    got = {n: effective_priority(snap, workload(snap, "ns", n)) for n in "abc"}  # type: ignore[arg-type]
    assert got == {"a": 5000, "b": 700, "c": 9000}
    assert [e.workload.name for e in pending_queue(snap, "q")] == ["c", "a", "b"]


def test_requeue_backoff_is_left_to_the_admission_checks_family() -> None:
    msg = "Exceeded the PodsReady timeout ns/w"
    objs = [
        _flavor("a100"),
        _cq("q", None, [_res(GPU, "8")]),
        _lq("ns", "lq", "q"),
        _wl("ns", "w", "lq", {GPU: "2"}),
    ]
    objs[-1]["status"] = {
        "conditions": [
            {
                "type": "QuotaReserved",
                "status": "False",
                "reason": "PodsReadyTimeout",
                "message": msg,
                "lastTransitionTime": "2026-11-20T09:58:00Z",
            },
            {
                "type": "Evicted",
                "status": "True",
                "reason": "PodsReadyTimeout",
                "message": msg,
                "lastTransitionTime": "2026-11-20T09:58:00Z",
            },
        ],
        "requeueState": {"count": 1, "requeueAt": "2026-11-20T10:03:00Z"},
    }
    snap = _snap(objs)
    w = workload(snap, "ns", "w")
    assert w is not None
    assert findings_of(QuotaCheck().run(snap, Target("workload/w", "ns", w))) == []
    objs[-1]["status"]["requeueState"]["requeueAt"] = "2026-11-20T09:59:00Z"  # backoff over, not re-evaluated
    snap2 = _snap(objs)
    w2 = workload(snap2, "ns", "w")
    assert w2 is not None
    (f,) = findings_of(QuotaCheck().run(snap2, Target("workload/w", "ns", w2)))
    assert f.cause == "not-yet-evaluated" and f.title.startswith("requeued after eviction (PodsReadyTimeout) 2m ago")


def test_preemption_victims_from_conditions_and_from_events_of_deleted_victims() -> None:
    objs = [
        _flavor("a100"),
        _cq("q", None, [_res(GPU, "8")], preemption={"withinClusterQueue": "LowerPriority"}),
        _lq("ns", "lq", "q"),
        _pending(
            _wl("ns", "boss", "lq", {GPU: "8"}),
            "WaitingForPreemptedWorkloads",
            _SET + "insufficient unused quota for nvidia.com/gpu in flavor a100, 8 more needed. Pending the "
            "preemption of 2 workload(s)",
        ),
        _wl("ns", "victim", "lq", {GPU: "4"}, admitted_in="q"),
    ]
    msg = (
        "Preempted to accommodate a workload (UID: uid-boss, JobUID: job-boss) due to prioritization in the "
        "ClusterQueue; preemptor path: /q; preemptee path: /q"
    )
    objs[-1]["status"]["conditions"] += [
        {
            "type": "Evicted",
            "status": "True",
            "reason": "Preempted",
            "message": msg,
            "lastTransitionTime": "2026-11-20T09:55:00Z",
        },
        {
            "type": "Preempted",
            "status": "True",
            "reason": "InClusterQueue",
            "message": msg,
            "lastTransitionTime": "2026-11-20T09:55:00Z",
        },
    ]
    objs.append(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "boss.1", "namespace": "ns", "uid": "ev1"},
            "involvedObject": {"kind": "Workload", "namespace": "ns", "name": "boss", "uid": "uid-boss"},
            "reason": "PreemptedWorkload",
            "type": "Normal",
            "count": 1,
            "message": "Preempted workload ns/old-one (UID: uid-old) in ClusterQueue q",
            "lastTimestamp": "2026-11-20T09:55:00Z",
        }
    )
    snap = _snap(objs)
    w = workload(snap, "ns", "boss")
    assert w is not None
    (f,) = findings_of(QuotaCheck().run(snap, Target("workload/boss", "ns", w)))
    assert f.cause == "preemption-in-progress"
    assert f.title == "pending the preemption of 2 workload(s): ns/victim"
    assert "1 victim(s) still hold their quota" in f.message
    assert "no longer in the snapshot (deleted or finished): ns/old-one" in f.message
    assert f.data["victims_holding_quota"] == ["ns/victim"]


def test_stopped_cluster_queue_is_left_to_the_submission_checks() -> None:
    objs = [
        _flavor("a100"),
        _cq("q", None, [_res(GPU, "8")], stopPolicy="Hold"),
        _lq("ns", "lq", "q"),
        _wl("ns", "w", "lq", {GPU: "16"}),
    ]
    snap = _snap(objs)
    w = workload(snap, "ns", "w")
    assert w is not None
    assert findings_of(QuotaCheck().run(snap, Target("workload/w", "ns", w))) == []
    objs[1]["spec"]["stopPolicy"] = "None"
    snap2 = _snap(objs)
    w2 = workload(snap2, "ns", "w")
    assert w2 is not None
    assert [f.cause for f in findings_of(QuotaCheck().run(snap2, Target("workload/w", "ns", w2)))] == [
        "exceeds-max-quota",
        "not-yet-evaluated",
    ]
