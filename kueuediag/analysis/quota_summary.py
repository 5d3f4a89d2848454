"""Per (ClusterQueue, flavor, resource) quota summaries read off the quota tree, and who holds the quota.

* :func:`cq_quota` / :func:`cq_quotas` → :class:`FlavorResourceQuota` — nominal, limits, usage, free nominal
  quota, borrowable now, maximum capacity, borrowed, lent-out (all from
  :func:`kueuediag.analysis.quota_tree.quota_tree`).
* :func:`quota_holders` → :class:`QuotaHolders` — the workloads of the ClusterQueue holding the quota (own)
  and the ClusterQueues of the cohort tree borrowing above their nominal quota (borrowers).
"""

from __future__ import annotations

from decimal import Decimal

from kueuediag.analysis.quota_tree import quota_tree, workload_usage_by_cq
from kueuediag.quantity import ZERO
from kueuediag.records import dataclass
from kueuediag.snapshot.kueue import (
    FlavorResource,
    WorkloadView,
    kueue_index,
    workload_pods,
)
from kueuediag.snapshot.model import Part, Snapshot
from kueuediag.timeutil import format_rfc3339

# --- per (ClusterQueue, flavor, resource) summary -----------------------------------------------------------


@dataclass(frozen=True)
class FlavorResourceQuota:
    """Everything about one (ClusterQueue, flavor, resource) that the scheduler compares."""

    cluster_queue: str
    flavor: str
    resource: str
    nominal: Decimal
    borrowing_limit: Decimal | None
    """None = unlimited (within the cohort)"""
    lending_limit: Decimal | None
    """None = everything lendable"""
    usage: Decimal
    """quota held by the ClusterQueue's QuotaReserved workloads"""
    usage_source: str
    """'workloads' (recomputed) or 'status' (status.flavorsReservation)"""
    status_usage: Decimal | None
    """status.flavorsReservation total, when the ClusterQueue reports one"""
    available: Decimal
    """Kueue's available(): what a new workload can take now, nominal plus borrowable (may be negative)"""
    max_capacity: Decimal
    """Kueue's potentialAvailable(): nominal + everything borrowable with zero usage ('maximum capacity')"""
    in_cohort: bool

    @property
    def free_nominal(self) -> Decimal:
        """Unused nominal quota: max(0, nominal − usage)."""
        return max(ZERO, self.nominal - self.usage)

    @property
    def borrowable(self) -> Decimal:
        """What could be borrowed from the cohort tree right now on top of the free nominal quota."""
        return max(ZERO, self.available - self.free_nominal)

    @property
    def lent_out(self) -> Decimal:
        """Free nominal quota that is not available because other ClusterQueues borrowed it (reclaimable)."""
        return max(ZERO, self.free_nominal - max(ZERO, self.available))

    @property
    def borrowed(self) -> Decimal:
        """Usage above nominal quota."""
        return max(ZERO, self.usage - self.nominal)

    @property
    def max_borrowable(self) -> Decimal:
        return max(ZERO, self.max_capacity - self.nominal)

    @property
    def usage_mismatch(self) -> bool:
        return self.status_usage is not None and self.status_usage != self.usage


def cq_quota(snap: Snapshot, cq: str, flavor: str, resource: str) -> FlavorResourceQuota | None:
    """The quota summary of one (flavor, resource) of a ClusterQueue; None when the CQ does not exist."""
    return snap.memo(("quota:fr", cq, flavor, resource), lambda: _cq_quota(snap, cq, (flavor, resource)))


def _cq_quota(snap: Snapshot, cq: str, fr: FlavorResource) -> FlavorResourceQuota | None:
    tree = quota_tree(snap)
    node = tree.cluster_queues.get(cq)
    if node is None:
        return None
    q = node.quotas.get(fr)
    status = tree.status_usage.get(cq, {})
    return FlavorResourceQuota(
        cluster_queue=cq,
        flavor=fr[0],
        resource=fr[1],
        nominal=q.nominal if q else ZERO,
        borrowing_limit=q.borrowing_limit if q else None,
        lending_limit=q.lending_limit if q else None,
        usage=node.usage.get(fr, ZERO),
        usage_source=tree.usage_source.get(cq, "workloads"),
        status_usage=status.get(fr) if status else None,
        available=tree.available(node, fr),
        max_capacity=tree.potential_available(node, fr),
        in_cohort=tree._parent(node) is not None,
    )


def cq_quotas(snap: Snapshot, cq: str) -> dict[FlavorResource, FlavorResourceQuota]:
    """Every (flavor, resource) the ClusterQueue defines quota for, in spec order."""
    idx = kueue_index(snap)
    view = idx.cluster_queues.get(cq)
    out: dict[FlavorResource, FlavorResourceQuota] = {}
    if view is None:
        return out
    for rg in view.resource_groups:
        for flavor, quotas in rg.flavors:
            for res in quotas:
                frq = cq_quota(snap, cq, flavor, res)
                if frq is not None:
                    out[(flavor, res)] = frq
    return out


# --- who holds the quota ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Holder:
    kind: str
    """'Workload' (own) or 'ClusterQueue' (borrower)"""
    name: str
    namespace: str | None
    amount: Decimal
    """quota held (own) or borrowed above nominal (borrower)"""
    cluster_queue: str
    priority: int | None = None
    note: str = ""
    """what is odd about the holder, e.g. evicted but still holding its quota reservation"""


@dataclass(frozen=True)
class QuotaHolders:
    flavor: str
    resource: str
    own: tuple[Holder, ...]
    """workloads of this ClusterQueue holding quota in the flavor, largest first"""
    borrowers: tuple[Holder, ...]
    """other ClusterQueues of the cohort tree using more than their nominal quota, largest first"""
    cohort: tuple[Holder, ...] = ()
    """workloads of the other ClusterQueues of the cohort tree holding quota in the flavor, largest first: who
    holds what a ClusterQueue would have to borrow"""

    @property
    def own_total(self) -> Decimal:
        return sum((h.amount for h in self.own), ZERO)

    @property
    def borrowed_total(self) -> Decimal:
        return sum((h.amount for h in self.borrowers), ZERO)


def quota_holders(snap: Snapshot, cq: str, flavor: str, resource: str) -> QuotaHolders:
    """Who holds the quota of (flavor, resource) that a workload of `cq` would need."""
    return snap.memo(("quota:holders", cq, flavor, resource), lambda: _quota_holders(snap, cq, (flavor, resource)))


def _quota_holders(snap: Snapshot, cq: str, fr: FlavorResource) -> QuotaHolders:
    tree = quota_tree(snap)
    held = workload_usage_by_cq(snap)
    own = _workload_holders(snap, held.get(cq, []), cq, fr)
    borrowers: list[Holder] = []
    cohort: list[Holder] = []
    root = tree.root(cq)
    if root is not None:
        for other in tree.cluster_queues_under(root):
            if other == cq:
                continue
            node = tree.cluster_queues[other]
            q = node.quotas.get(fr)
            above = node.usage.get(fr, ZERO) - (q.nominal if q else ZERO)
            if above > ZERO:
                borrowers.append(Holder("ClusterQueue", other, None, above, other))
            cohort += _workload_holders(snap, held.get(other, []), other, fr)
    borrowers.sort(key=lambda h: (-h.amount, h.name))
    cohort.sort(key=lambda h: (-h.amount, h.namespace or "", h.name))
    return QuotaHolders(fr[0], fr[1], tuple(own), tuple(borrowers), tuple(cohort))


def _workload_holders(snap: Snapshot, held: list[tuple[WorkloadView, dict[FlavorResource, Decimal]]], cq: str,
                      fr: FlavorResource) -> list[Holder]:
    """The workloads holding quota of `fr`, largest first; one marked when it holds quota for a stopped job."""
    out = []
    for w, usage in held:
        if usage.get(fr, ZERO) > ZERO:
            out.append(Holder("Workload", w.name, w.namespace, usage[fr], cq, w.priority, _stopped_note(snap, w)))
    out.sort(key=lambda h: (-h.amount, h.namespace or "", h.name))
    return out


def _stopped_note(snap: Snapshot, w: WorkloadView) -> str:
    """Why an evicted workload that still reserves quota holds it for nothing: Kueue releases the reservation
    once the job is stopped (suspended, no active pods); a reservation still there afterwards runs nothing.
    An eviction in progress (the job not yet suspended, or pods still running) is not marked."""
    evicted = w.cond("Evicted") if w.is_true("Evicted") else None
    owner = snap.by_uid(str((w.owner or {}).get("uid") or "")) if evicted is not None else None
    if evicted is None or owner is None or (owner.get("spec") or {}).get("suspend") is not True:
        return ""
    if snap.part_unavailable(Part.PODS) is None and any(not p.terminal for p in workload_pods(snap, w)):
        return ""
    since = format_rfc3339(evicted.last_transition) if evicted.last_transition else "?"
    return (f"Evicted ({evicted.reason}) since {since}, its {owner.get('kind')} suspended with no running pods, "
            "but it still holds its quota reservation")
