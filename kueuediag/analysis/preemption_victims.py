"""Preemption victims, the workloads waiting for them, and the state of the victims' pods — the one owner.

Kueue's preemptor only issues evictions: a victim keeps its quota until its job reconciler sees the job
inactive (kueue-facts §8). Whether it still holds quota is what Kueue *recorded* (``QuotaReserved=True``);
why, is the state of its pods, each answered by :mod:`kueuediag.analysis.pod_termination`: whether a pod is
*past its grace* (Kubernetes' view; a zombie when it lasts) and whether Kueue *still counts it active* (per
integration, release and feature gate). KD302, KD901, KD902 and KD102 all read victims from here.

Victims are Workloads with ``Evicted=True`` reason ``Preempted``; the ``Preempted`` condition message
``Preempted to accommodate a workload (UID: <uid>, JobUID: <uid>) due to <why>; preemptor path: <path>;
preemptee path: <path>`` names the preemptor (kueue-facts §11). Everything here is pure and memoised.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from kueuediag.analysis.messages import PendingMessage, ReasonKind, parse_pending_message
from kueuediag.analysis.pod_termination import (
    KueueActivity,
    counted_active_by_kueue,
    grace_remaining_seconds,
    is_pod_integration,
    is_zombie,
    seconds_past_grace,
)
from kueuediag.causes import CauseSlug
from kueuediag.records import dataclass
from kueuediag.snapshot.k8s import PodView
from kueuediag.snapshot.kueue import (
    WorkloadView,
    active_workloads,
    cluster_queue_of,
    events_for,
    kueue_index,
    nodes,
    workload_by_uid,
    workload_pods,
)
from kueuediag.snapshot.model import Snapshot

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
    """until deletionTimestamp (the end of the grace period); negative once past it; None: not terminating
    (or already terminal)"""
    node_ready: bool | None
    past_grace_seconds: float | None
    """:func:`~kueuediag.analysis.pod_termination.seconds_past_grace`"""
    zombie: bool
    """:func:`~kueuediag.analysis.pod_termination.is_zombie`: past its grace for longer than a minute"""
    activity: KueueActivity
    """:func:`~kueuediag.analysis.pod_termination.counted_active_by_kueue`"""

    @property
    def terminating(self) -> bool:
        return self.pod.terminating and not self.pod.terminal


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

    held_seconds: float | None = None
    """since the eviction (None when the snapshot does not say when)"""

    @property
    def preempted_reason(self) -> str:
        """The Preempted condition's reason (InClusterQueue, InCohortReclamation, ...), '' when unknown."""
        return "" if self.reason in ("", "Preempted") else self.reason

    @property
    def holds_quota(self) -> bool:
        """What Kueue recorded: QuotaReserved=True (and not Finished)."""
        return self.workload.holds_quota

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
        return owner_kind == "Pod" or any(is_pod_integration(p.pod) for p in self.pods) or bool(
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
    left, past = grace_remaining_seconds(pod, snap.now), seconds_past_grace(pod, snap.now)
    remaining = left if left is not None else (-past if past is not None else None)
    return VictimPod(pod=pod, grace_seconds=pod.grace_seconds, pre_stop=_pre_stop(spec),
                     remaining_seconds=remaining, node_ready=node_ready,
                     past_grace_seconds=seconds_past_grace(pod, snap.now), zombie=is_zombie(pod, snap.now),
                     activity=counted_active_by_kueue(snap, pod))


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
    out: list[Victim] = []
    for w in active_workloads(snap):
        evicted = w.cond("Evicted")
        preempted = w.cond("Preempted")
        if not ((evicted and evicted.true and evicted.reason == "Preempted") or (preempted and preempted.true)):
            continue
        message = (preempted.message if preempted and preempted.true else "") or (evicted.message if evicted else "")
        parts = parse_preempted_message(message) or {}
        uid = parts.get("uid")
        path = parts.get("preemptor_path")
        preemptor_cq = path.rstrip("/").rsplit("/", 1)[-1] if path else None
        preemptor = workload_by_uid(snap, uid) if uid else None
        if not preemptor_cq and preemptor is not None:
            preemptor_cq = cluster_queue_of(idx, preemptor)
        pods = tuple(victim_pod(snap, p) for p in workload_pods(snap, w))
        evicted_at = (evicted.last_transition if evicted and evicted.true else None) \
            or (preempted.last_transition if preempted else None)
        out.append(Victim(
            workload=w, cluster_queue=cluster_queue_of(idx, w), evicted_at=evicted_at,
            reason=preempted.reason if preempted and preempted.true else (evicted.reason if evicted else ""),
            message=message, preemptor_uid=uid, preemptor_cq=preemptor_cq, pods=pods,
            held_seconds=snap.age_seconds(evicted_at),
        ))
    return out


def quota_holding_victims(snap: Snapshot) -> list[Victim]:
    """Preemption victims that still hold quota (QuotaReserved=True), longest-held first."""
    return sorted((v for v in preemption_victims(snap) if v.holds_quota), key=lambda v: -(v.held_seconds or 0))


def evented_victims(snap: Snapshot, w: WorkloadView) -> list[tuple[str, str, str]]:
    """(workload, UID, event message) named by `w`'s `PreemptedWorkload` events (kueue-facts §2.6), in order."""
    out: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for e in events_for(snap, "Workload", w.namespace, w.name):
        if e.reason != "PreemptedWorkload":
            continue
        m = _PREEMPTED_WORKLOAD_EVENT.search(e.message)
        if m and m.group("uid") not in seen:
            seen.add(m.group("uid"))
            out.append((m.group("name"), m.group("uid"), e.message))
    return out


def victims_of(snap: Snapshot, w: WorkloadView) -> list[Victim]:
    """Victims preempted to make room for `w`: named by UID in their Preempted message, or in a
    `PreemptedWorkload` event on `w`."""
    named = {uid for _, uid, _ in evented_victims(snap, w)}
    return [v for v in preemption_victims(snap) if (w.uid and v.preemptor_uid == w.uid) or v.workload.uid in named]


def blocked_heads(snap: Snapshot) -> list[BlockedHead]:
    """Pending Workloads waiting on preemption (`Pending the preemption of N workload(s)`,
    reason `WaitingForPreemptedWorkloads`, or `overlapping preemption targets`)."""

    def build() -> list[BlockedHead]:
        idx = kueue_index(snap)
        out = []
        for w in active_workloads(snap):
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


def waits_on_preemption(snap: Snapshot, w: WorkloadView | None) -> bool:
    """Whether a pending Workload is itself one of the :func:`blocked_heads` (waiting for victims)."""
    return w is not None and any(h.workload.uid == w.uid and h.workload.name == w.name for h in blocked_heads(snap))


def victim_blocks(snap: Snapshot, w: WorkloadView | None, target_cq: str | None, v: Victim) -> bool:
    """Whether victim `v` plausibly keeps `w` pending: `w` preempted it (its UID is in the eviction message), or
    `w` waits on preemptions and shares quota (ClusterQueue or cohort tree) with the victim. A bystander that
    merely waits for quota in the same queue is not blocked by the victim's slow release, but by quota."""
    from kueuediag.analysis.health import shares_quota_with

    if w is None:
        return False
    if (w.uid and f"UID: {w.uid}" in v.message) or (w.uid and v.preemptor_uid == w.uid):
        return True
    return waits_on_preemption(snap, w) and shares_quota_with(kueue_index(snap), target_cq, v.cluster_queue)


LONG_GRACE_SECONDS = 300
"""A victim whose pods take at least this long to terminate (or run a preStop hook) makes a preemption slow."""


def preemption_cause(victims: list[Victim], long_grace_seconds: int = LONG_GRACE_SECONDS) -> CauseSlug:
    """Which preemption cause the victims' state shows — the one classification KD302 and KD102 share:

    ``stuck-preemption-target`` when a victim still holding quota has a zombie pod (past its grace for more
    than a minute); ``slow-preemption`` when a victim holding quota has active pods with a grace period of at
    least `long_grace_seconds` or a preStop hook; else ``preemption-in-progress``."""
    holding = [v for v in victims if v.holds_quota]
    if any(v.zombie_pods for v in holding):
        return CauseSlug.STUCK_PREEMPTION_TARGET
    if any(v.active_pods and (v.max_grace >= long_grace_seconds or v.pre_stop) for v in holding):
        return CauseSlug.SLOW_PREEMPTION
    return CauseSlug.PREEMPTION_IN_PROGRESS


def victim_facts(snap: Snapshot, victims: list[Victim]) -> dict[str, dict[str, bool | None]]:
    """Structured conclusions about victims and their pods for Finding.data["facts"]: the contradiction test
    compares them across every check that talks about the same objects."""
    from kueuediag.analysis.pod_termination import pod_facts

    facts = pod_facts(snap, [p.pod for v in victims for p in v.pods])
    facts["victim-holds-quota"] = {f"Workload/{v.workload.namespace}/{v.workload.name}": v.holds_quota
                                   for v in victims}
    return facts


__all__ = [
    "BlockedHead",
    "Victim",
    "VictimPod",
    "blocked_heads",
    "LONG_GRACE_SECONDS",
    "evented_victims",
    "preemption_cause",
    "quota_holding_victims",
    "victim_blocks",
    "victim_facts",
    "waits_on_preemption",
    "parse_preempted_message",
    "preemption_victims",
    "victims_of",
]
