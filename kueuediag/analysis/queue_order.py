"""Kueue's order of pending workloads inside a ClusterQueue (kueue-facts §14, §6).

``pkg/cache/queue/cluster_queue.go`` ``baseCompareFunc``: a sticky preemptor (a workload waiting for its
victims, message `... Pending the preemption of N workload(s)`) first, then higher effective priority, then the
earlier queue-order timestamp (creation time, or the eviction time after a PodsReady timeout / admission-check
eviction), then UID. Pending means: no quota reserved, `spec.active`, not finished — the same set the visibility
API lists (active heap, inadmissible set and in-flight head).
"""

from __future__ import annotations

from datetime import UTC, datetime

from kueuediag.analysis.well_formed import require_well_formed, workloads_in_cluster_queue
from kueuediag.records import dataclass
from kueuediag.snapshot.kueue import WorkloadView, kueue_index, workloads_by_cluster_queue
from kueuediag.snapshot.model import Snapshot

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_PREEMPTING = "Pending the preemption of"


@dataclass(frozen=True)
class QueueEntry:
    workload: WorkloadView
    position: int
    """1-based position in the ClusterQueue"""
    priority: int
    """effective priority"""
    order_time: datetime | None
    sticky: bool
    """a preemptor waiting for its victims (kept at the head)"""


def effective_priority(snap: Snapshot, w: WorkloadView) -> int:
    """spec.priority when set; else the value of the referenced WorkloadPriorityClass / PriorityClass; else 0."""
    raw = (w.obj.get("spec") or {}).get("priority")
    if raw is not None:
        try:
            return int(raw)
        except (TypeError, ValueError):
            pass
    name = w.priority_class
    if not name:
        return 0
    idx = kueue_index(snap)
    if w.priority_class_kind in (None, "WorkloadPriorityClass") and name in idx.priority_classes:
        return idx.priority_classes[name]
    pc = snap.get("PriorityClass", name)
    if pc is not None:
        try:
            return int(pc.get("value") or 0)
        except (TypeError, ValueError):
            return 0
    return 0


def is_pending(w: WorkloadView) -> bool:
    """Waiting in a queue: no quota reserved, active, not finished."""
    return not w.is_true("QuotaReserved") and not w.is_true("Finished") and w.active


def is_sticky_preemptor(w: WorkloadView) -> bool:
    qr = w.cond("QuotaReserved")
    return bool(qr and qr.false and (_PREEMPTING in qr.message or qr.reason == "WaitingForPreemptedWorkloads"))


def pending_queue(snap: Snapshot, cluster_queue: str) -> list[QueueEntry]:
    """The ClusterQueue's pending workloads in Kueue's queue order (memoised); MalformedObject (could not
    check) when a malformed Workload may be queued there (its place in the order is unknown)."""
    require_well_formed(snap, workloads_in_cluster_queue(snap, cluster_queue),
                        f"the queue order of ClusterQueue {cluster_queue}")
    return snap.memo(("queue-order", cluster_queue), lambda: _build(snap, cluster_queue))


def _build(snap: Snapshot, cluster_queue: str) -> list[QueueEntry]:
    pending = [w for w in workloads_by_cluster_queue(snap).get(cluster_queue, []) if is_pending(w)]
    keyed = []
    for w in pending:
        prio = effective_priority(snap, w)
        t = w.queue_order_time
        sticky = is_sticky_preemptor(w)
        keyed.append(((0 if sticky else 1, -prio, t or _EPOCH, w.uid), w, prio, t, sticky))
    keyed.sort(key=lambda k: k[0])
    return [QueueEntry(w, i + 1, prio, t, sticky) for i, (_, w, prio, t, sticky) in enumerate(keyed)]


def queue_entry(snap: Snapshot, cluster_queue: str, w: WorkloadView) -> QueueEntry | None:
    """The workload's place in the ClusterQueue's queue (None when it is not pending there): a lookup in an
    index built once per ClusterQueue, not a pass over the queue per workload."""
    queue = pending_queue(snap, cluster_queue)

    def build() -> dict[tuple[str, str], QueueEntry]:
        by_key: dict[tuple[str, str], QueueEntry] = {}
        for e in queue:
            by_key.setdefault((e.workload.uid, e.workload.name), e)
        return by_key

    return snap.memo(("queue-order:entries", cluster_queue), build).get((w.uid, w.name))
