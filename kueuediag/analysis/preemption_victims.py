"""Preemption victims, the workloads waiting for them, and how long their pods take to go away.

Kueue's preemptor only issues evictions: a victim keeps its quota until its job reconciler sees the job
inactive (kueue-facts §8). For plain pods that is when no pod is ``Running`` any more — through the whole
termination grace period (preStop hooks included) — so preemptions in a ClusterQueue are serialised by the
victims' grace periods; a pod that never terminates (a "zombie" past its ``deletionTimestamp``) holds the
quota for good on Kueue < v0.14.0 (v0.13.5, v0.12.10 cherry-picks, PR #6872).

Victims are Workloads with ``Evicted=True`` reason ``Preempted``; the ``Preempted`` condition message
``Preempted to accommodate a workload (UID: <uid>, JobUID: <uid>) due to <why>; preemptor path: <path>;
preemptee path: <path>`` names the preemptor (kueue-facts §11). Everything here is pure and memoised.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kueuediag.analysis.messages import PendingMessage, ReasonKind, parse_pending_message
from kueuediag.snapshot.k8s import PodView
from kueuediag.snapshot.kueue import (
    WorkloadView,
    cluster_queue_of,
    events_for,
    kueue_index,
    nodes,
    workload_pods,
    workloads,
)
from kueuediag.snapshot.model import Snapshot

MANAGED_LABEL = "kueue.x-k8s.io/managed"

_PREEMPTED = re.compile(
    r"Preempted to accommodate a workload \(UID: (?P<uid>[^,)\s]+)(?:, JobUID: (?P<job>[^)]*))?\)"
    r"(?: due to (?P<why>.+?))?(?:; preemptor path: (?P<pp>\S+?))?(?:; preemptee path: (?P<ep>\S+?))?"
    r"(?:;|$)")
_PREEMPTED_WORKLOAD_EVENT = re.compile(r"Preempted workload (?P<name>\S+) \(UID: (?P<uid>[^)\s]+)\)")


@dataclass(frozen=True)
class VictimPod:
    pod: PodView
    grace_seconds: int
    """deletionGracePeriodSeconds once deleted, else spec.terminationGracePeriodSeconds (default 30)"""
    pre_stop: bool
    """a container has a lifecycle.preStop hook"""
    remaining_seconds: float | None
    """until deletionTimestamp (the end of the grace period); negative once past it; None: not terminating"""
    node_ready: bool | None

    @property
    def terminating(self) -> bool:
        return self.pod.terminating and not self.pod.terminal

    @property
    def zombie(self) -> bool:
        """Still not terminal although its grace period ended (kubelet gone, node NotReady, stuck)."""
        return self.terminating and self.remaining_seconds is not None and self.remaining_seconds < 0

    @property
    def managed(self) -> bool:
        return self.pod.labels.get(MANAGED_LABEL) == "true"


@dataclass(frozen=True)
class Victim:
    workload: WorkloadView
    cluster_queue: str | None
    evicted_at: datetime | None
    reason: str
    """Preempted condition reason: InClusterQueue, InCohortReclamation, InCohortFairSharing, ..."""
    message: str
    preemptor_uid: str | None
    preemptor_cq: str | None
    """last element of the preemptor path (or the preemptor Workload's ClusterQueue)"""
    pods: tuple[VictimPod, ...]

    @property
    def holds_quota(self) -> bool:
        return self.workload.is_true("QuotaReserved") and not self.workload.is_true("Finished")

    @property
    def active_pods(self) -> list[VictimPod]:
        return [p for p in self.pods if not p.pod.terminal]

    @property
    def terminating_pods(self) -> list[VictimPod]:
        return [p for p in self.pods if p.terminating]

    @property
    def zombie_pods(self) -> list[VictimPod]:
        return [p for p in self.pods if p.zombie]

    @property
    def max_grace(self) -> int:
        return max((p.grace_seconds for p in self.active_pods), default=0)

    @property
    def pre_stop(self) -> bool:
        return any(p.pre_stop for p in self.active_pods)

    @property
    def pod_integration(self) -> bool:
        owner_kind = (self.workload.owner or {}).get("kind")
        return owner_kind == "Pod" or any(p.managed for p in self.pods) or bool(
            self.workload.annotations.get("kueue.x-k8s.io/is-group-workload"))

    @property
    def grace_remaining(self) -> float | None:
        """Seconds until the last terminating (non-zombie) pod's grace period ends."""
        left = [p.remaining_seconds for p in self.terminating_pods
                if p.remaining_seconds is not None and p.remaining_seconds >= 0]
        return max(left) if left else None


@dataclass(frozen=True)
class BlockedHead:
    """A pending Workload whose QuotaReserved message says it waits on preemption."""

    workload: WorkloadView
    cluster_queue: str | None
    message: PendingMessage
    overlapping: bool
    """`Workload has overlapping preemption targets with another workload`"""
    since: datetime | None


def _pre_stop(spec: dict[str, Any]) -> bool:
    for c in list(spec.get("containers") or ()) + list(spec.get("initContainers") or ()):
        if isinstance(c, dict) and ((c.get("lifecycle") or {}).get("preStop")):
            return True
    return False


def victim_pod(snap: Snapshot, pod: PodView) -> VictimPod:
    spec = pod.obj.get("spec") or {}
    node_ready: bool | None = None
    if pod.node:
        by_name = snap.memo("nodes-by-name", lambda: {n.name: n for n in nodes(snap)})
        node = by_name.get(pod.node)
        node_ready = node.ready if node is not None else None
    remaining = None if pod.deletion is None else (pod.deletion - snap.now).total_seconds()
    return VictimPod(pod=pod, grace_seconds=pod.grace_seconds, pre_stop=_pre_stop(spec),
                     remaining_seconds=remaining, node_ready=node_ready)


def parse_preempted_message(message: str) -> dict[str, str | None] | None:
    """The parts of a `Preempted to accommodate a workload (UID: ...)` message, or None."""
    m = _PREEMPTED.search(message or "")
    if m is None:
        return None
    return {"uid": m.group("uid"), "job_uid": m.group("job"), "why": m.group("why"),
            "preemptor_path": m.group("pp"), "preemptee_path": m.group("ep")}


def preemption_victims(snap: Snapshot) -> list[Victim]:
    """Every Workload currently evicted by preemption (Evicted=True, reason Preempted)."""
    return snap.memo("preemption-victims", lambda: _victims(snap))


def _victims(snap: Snapshot) -> list[Victim]:
    idx = kueue_index(snap)
    by_uid = {w.uid: w for w in workloads(snap)}
    out: list[Victim] = []
    for w in workloads(snap):
        evicted = w.cond("Evicted")
        preempted = w.cond("Preempted")
        if not ((evicted and evicted.true and evicted.reason == "Preempted") or (preempted and preempted.true)):
            continue
        message = (preempted.message if preempted and preempted.true else "") or (evicted.message if evicted else "")
        parts = parse_preempted_message(message) or {}
        uid = parts.get("uid")
        path = parts.get("preemptor_path")
        preemptor_cq = path.rstrip("/").rsplit("/", 1)[-1] if path else None
        if not preemptor_cq and uid and uid in by_uid:
            preemptor_cq = cluster_queue_of(idx, by_uid[uid])
        pods = tuple(victim_pod(snap, p) for p in workload_pods(snap, w))
        out.append(Victim(
            workload=w, cluster_queue=cluster_queue_of(idx, w),
            evicted_at=(evicted.last_transition if evicted and evicted.true else None)
            or (preempted.last_transition if preempted else None),
            reason=preempted.reason if preempted and preempted.true else (evicted.reason if evicted else ""),
            message=message, preemptor_uid=uid, preemptor_cq=preemptor_cq, pods=pods,
        ))
    return out


def victims_of(snap: Snapshot, w: WorkloadView) -> list[Victim]:
    """Victims preempted to make room for `w`: named by UID in their Preempted message, or in a
    `PreemptedWorkload` event on `w`."""
    named: set[str] = set()
    for e in events_for(snap, "Workload", w.namespace, w.name):
        if e.reason == "PreemptedWorkload":
            m = _PREEMPTED_WORKLOAD_EVENT.search(e.message)
            if m:
                named.add(m.group("uid"))
    return [v for v in preemption_victims(snap) if (w.uid and v.preemptor_uid == w.uid) or v.workload.uid in named]


def blocked_heads(snap: Snapshot) -> list[BlockedHead]:
    """Pending Workloads waiting on preemption (`Pending the preemption of N workload(s)`,
    reason `WaitingForPreemptedWorkloads`, or `overlapping preemption targets`)."""

    def build() -> list[BlockedHead]:
        idx = kueue_index(snap)
        out = []
        for w in workloads(snap):
            qr = w.cond("QuotaReserved")
            if qr is None or not qr.false or w.is_true("Finished"):
                continue
            pm = parse_pending_message(qr.message)
            overlapping = pm.has(ReasonKind.OVERLAPPING_TARGETS, ReasonKind.OVERLAPPING_DEFERRED)
            if pm.preempting or overlapping or qr.reason == "WaitingForPreemptedWorkloads":
                out.append(BlockedHead(workload=w, cluster_queue=cluster_queue_of(idx, w), message=pm,
                                       overlapping=overlapping, since=qr.last_transition))
        return out

    return snap.memo("preemption-blocked-heads", build)


__all__ = [
    "BlockedHead",
    "Victim",
    "VictimPod",
    "blocked_heads",
    "parse_preempted_message",
    "preemption_victims",
    "victims_of",
]
