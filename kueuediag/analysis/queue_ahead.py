"""What the pending workloads ahead of a workload take from its ClusterQueue's quota (the queue-position step).

Kueue's scheduler pops heads in queue order (:mod:`kueuediag.analysis.queue_order`); the workloads ahead that
fit take quota first, a preemptor waiting for its victims keeps its place and the quota they release, and under
StrictFIFO a head that does not fit blocks everything behind it (unless it is parked for a namespace mismatch,
kueue-facts §14). What is ahead of position *p* is the same walk for every workload behind *p*, so the walk is
done once per ClusterQueue and snapshot and each position reads its prefix: `health --all-pending` pays for a
queue once, not once per workload in it (which was quadratic in the queue's depth).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from types import MappingProxyType

from kueuediag.analysis.messages import ReasonKind, parse_pending_message
from kueuediag.analysis.queue_order import QueueEntry, pending_queue
from kueuediag.analysis.quota_fit import WorkloadFit, workload_fit
from kueuediag.quantity import ZERO
from kueuediag.records import dataclass
from kueuediag.snapshot.kueue import FlavorResource, kueue_index
from kueuediag.snapshot.model import Snapshot


@dataclass(frozen=True)
class Ahead:
    """The walk over the workloads ahead of one queue position."""

    walked: Sequence[QueueEntry]
    """every workload the walk of the whole queue found fitting, in order (shared by all positions)"""
    fitting_count: int
    consumed: Mapping[FlavorResource, Decimal]
    """the quota the fitting workloads ahead take, per (flavor, resource)"""
    head_blocker: QueueEntry | None
    """under StrictFIFO: the first workload ahead that does not fit and blocks the rest (the walk stops there)"""

    @property
    def fitting(self) -> list[QueueEntry]:
        """Workloads ahead that fit (together, in order) or are preemptors keeping their place."""
        return list(self.walked[: self.fitting_count])


def fits_after(fit: WorkloadFit, consumed: Mapping[FlavorResource, Decimal]) -> bool:
    """Does the workload still fit in its chosen flavors once `consumed` more quota is taken?"""
    if not fit.fits:
        return False
    for _, ff in fit.chosen():
        for r in ff.resources:
            if r.needed > r.quota.available - consumed.get((ff.flavor, r.resource), ZERO):
                return False
    return True


def namespace_mismatch(e: QueueEntry) -> bool:
    """StrictFIFO does not keep a head blocked by a namespace mismatch at the head (kueue-facts §14)."""
    qr = e.workload.cond("QuotaReserved")
    return bool(qr and qr.false and parse_pending_message(qr.message).has(ReasonKind.NAMESPACE_MISMATCH))


def ahead_of(snap: Snapshot, cluster_queue: str, position: int) -> Ahead:
    """The walk over the first `position - 1` pending workloads of the ClusterQueue (1-based `position`).

    The ClusterQueue must exist; the walk is memoised per ClusterQueue, so this is a lookup.
    """
    walk = snap.memo(("queue-ahead", cluster_queue), lambda: _walk(snap, cluster_queue))
    return walk[min(max(position - 1, 0), len(walk) - 1)]


def _walk(snap: Snapshot, cluster_queue: str) -> list[Ahead]:
    """`out[k]` is the walk after the first k entries of the queue (k = 0 … len(queue))."""
    strict = kueue_index(snap).cluster_queues[cluster_queue].queueing_strategy == "StrictFIFO"
    walked: list[QueueEntry] = []
    consumed: dict[FlavorResource, Decimal] = {}
    state = Ahead(walked, 0, MappingProxyType({}), None)
    out = [state]
    for e in pending_queue(snap, cluster_queue):
        if state.head_blocker is None:
            state = _step(snap, cluster_queue, strict, e, walked, consumed, state)
        out.append(state)
    return out


def _step(snap: Snapshot, cluster_queue: str, strict: bool, e: QueueEntry, walked: list[QueueEntry],
          consumed: dict[FlavorResource, Decimal], state: Ahead) -> Ahead:
    """One more workload ahead: it fits (or keeps its place as a preemptor), blocks a StrictFIFO queue, or is
    passed over (in requeue backoff, no fit computed, or BestEffortFIFO skipping it)."""
    w = e.workload
    if w.requeue_at is not None and w.requeue_at > snap.now:
        return state  # in requeue backoff: not in the active heap yet
    fit = workload_fit(snap, w, cluster_queue)
    if fit is None:
        return state
    # a preemptor waiting for its victims stays at the head and gets the quota they release
    if e.sticky or fits_after(fit, consumed):
        walked.append(e)
        for _, ff in fit.chosen():
            for r in ff.resources:
                key = (ff.flavor, r.resource)
                consumed[key] = consumed.get(key, ZERO) + r.request
        return Ahead(walked, len(walked), MappingProxyType(dict(consumed)), None)
    if strict and not namespace_mismatch(e):
        return Ahead(walked, state.fitting_count, state.consumed, e)
    return state


__all__ = ["Ahead", "ahead_of", "fits_after", "namespace_mismatch"]
