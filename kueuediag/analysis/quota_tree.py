"""The quota tree: ClusterQueues and their (hierarchical) Cohorts, per (flavor, resource) — the one owner.

Quota, guarantees, fair sharing, fragmentation and the fleet view all read this tree; nobody recomputes nominal,
borrowing, lending or usage on their own. Pure functions of a Snapshot, memoised with ``snap.memo``. The
arithmetic mirrors Kueue's resource nodes (``pkg/cache/scheduler/resource_node.go``, kueue-facts §3.1, §3.2,
§4), in exact Decimals:

* a node is a ClusterQueue or a Cohort; ``SubtreeQuota`` of a ClusterQueue is its ``nominalQuota``; of a
  Cohort its own ``resourceGroups`` nominal plus, per child, ``child SubtreeQuota − guaranteed(child)``;
* ``guaranteed(node) = max(0, SubtreeQuota − lendingLimit)`` when a lendingLimit is set, else 0 — the part a
  node keeps for itself and never lends;
* usage of a ClusterQueue is the quota held by its workloads (QuotaReserved=True, not Finished, minus
  ``reclaimablePods``); usage of a Cohort is the sum of its children's usage above their guaranteed quota;
* ``available(node)`` — what a new workload could take *right now* (Kueue's ``available``): for a root
  ``SubtreeQuota − usage``; otherwise ``max(0, guaranteed − usage)`` plus what the parent has available,
  capped by the node's borrowingLimit (``SubtreeQuota − guaranteed − usage-in-parent + borrowingLimit``);
* ``potential_available(node)`` — the *maximum capacity* (Kueue's ``potentialAvailable``, the number in
  ``... > maximum capacity (N)``): the same recursion with all usage taken as zero.

Usage is recomputed from ``Workload.status.admission``; ``status.flavorsReservation`` is kept for comparison
and used instead when the snapshot does not hold every Workload (namespace-limited collection, or no Workloads
collected). Summaries per (ClusterQueue, flavor, resource) are in :mod:`kueuediag.analysis.quota_summary`,
the fit of a workload in :mod:`kueuediag.analysis.quota_fit`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import field
from decimal import Decimal

from kueuediag.analysis.well_formed import require_well_formed, workloads_in_quota_tree
from kueuediag.quantity import ZERO
from kueuediag.records import dataclass
from kueuediag.snapshot.kueue import (
    FlavorResource,
    Quota,
    ResourceGroup,
    WorkloadView,
    active_workloads,
    kueue_index,
)
from kueuediag.snapshot.model import Part, Snapshot

# --- the tree -----------------------------------------------------------------------------------------------


@dataclass
class QuotaNode:
    """One ClusterQueue or Cohort in the quota tree."""

    kind: str
    """'ClusterQueue' or 'Cohort'"""
    name: str
    parent: str | None
    """the parent Cohort's name (None for a root cohort or a cohort-less ClusterQueue)"""
    quotas: dict[FlavorResource, Quota]
    subtree_quota: dict[FlavorResource, Decimal] = field(default_factory=dict)
    usage: dict[FlavorResource, Decimal] = field(default_factory=dict)
    child_cohorts: list[str] = field(default_factory=list)
    child_cqs: list[str] = field(default_factory=list)

    def guaranteed(self, fr: FlavorResource) -> Decimal:
        """Quota this node never lends: max(0, SubtreeQuota − lendingLimit) when a lendingLimit is set."""
        q = self.quotas.get(fr)
        if q is None or q.lending_limit is None:
            return ZERO
        return max(ZERO, self.subtree_quota.get(fr, ZERO) - q.lending_limit)

    def borrowing_limit(self, fr: FlavorResource) -> Decimal | None:
        q = self.quotas.get(fr)
        return None if q is None else q.borrowing_limit


@dataclass
class QuotaTree:
    """ClusterQueues and Cohorts with SubtreeQuota and usage per (flavor, resource)."""

    cluster_queues: dict[str, QuotaNode]
    cohorts: dict[str, QuotaNode]
    usage_source: dict[str, str]
    """ClusterQueue → 'workloads' (recomputed from status.admission) or 'status' (flavorsReservation)"""
    status_usage: dict[str, dict[FlavorResource, Decimal]]
    """ClusterQueue → status.flavorsReservation totals, for comparison"""
    cycles: set[str]
    """Cohorts that are part of a parentName cycle (Kueue disables admission in such a tree)"""

    def node(self, kind: str, name: str) -> QuotaNode | None:
        return (self.cluster_queues if kind == "ClusterQueue" else self.cohorts).get(name)

    def _parent(self, n: QuotaNode) -> QuotaNode | None:
        if n.parent is None or n.parent in self.cycles:
            return None
        return self.cohorts.get(n.parent)

    def available(self, n: QuotaNode, fr: FlavorResource) -> Decimal:
        """Kueue's ``available()``: capacity a new workload of `n` could take now (may be negative)."""
        parent = self._parent(n)
        usage = n.usage.get(fr, ZERO)
        if parent is None:
            return n.subtree_quota.get(fr, ZERO) - usage
        guaranteed = n.guaranteed(fr)
        local = max(ZERO, guaranteed - usage)
        parent_available = self.available(parent, fr)
        limit = n.borrowing_limit(fr)
        if limit is not None:
            stored_in_parent = n.subtree_quota.get(fr, ZERO) - guaranteed
            used_in_parent = max(ZERO, usage - guaranteed)
            parent_available = min(stored_in_parent - used_in_parent + limit, parent_available)
        return local + parent_available

    def potential_available(self, n: QuotaNode, fr: FlavorResource) -> Decimal:
        """Kueue's ``potentialAvailable()``: maximum capacity, ignoring usage, honouring borrowingLimits."""
        parent = self._parent(n)
        if parent is None:
            return n.subtree_quota.get(fr, ZERO)
        avail = n.guaranteed(fr) + self.potential_available(parent, fr)
        limit = n.borrowing_limit(fr)
        if limit is not None:
            avail = min(n.subtree_quota.get(fr, ZERO) + limit, avail)
        return avail

    def path(self, cq: str) -> list[str]:
        """Cohort names from the ClusterQueue's parent up to the root."""
        out: list[str] = []
        node = self.cluster_queues.get(cq)
        cur = node.parent if node else None
        while cur is not None and cur not in out and cur not in self.cycles:
            out.append(cur)
            parent = self.cohorts.get(cur)
            cur = parent.parent if parent else None
        return out

    def cycle_above(self, cq: str) -> list[str]:
        """The Cohorts from the ClusterQueue's parent up the parentName chain until it repeats, when that chain
        runs into a cycle (Kueue's ``HasCycle(cq.Parent())``: such a ClusterQueue admits nothing); else []."""
        node = self.cluster_queues.get(cq)
        chain: list[str] = []
        cur = node.parent if node else None
        while cur is not None and cur not in chain:
            chain.append(cur)
            parent = self.cohorts.get(cur)
            cur = parent.parent if parent else None
        return [*chain, cur] if cur is not None else []

    def root(self, cq: str) -> str | None:
        p = self.path(cq)
        return p[-1] if p else None

    def cluster_queues_under(self, cohort: str) -> list[str]:
        out: list[str] = []
        stack, seen = [cohort], set()
        while stack:
            c = stack.pop()
            if c in seen or c not in self.cohorts:
                continue
            seen.add(c)
            out.extend(self.cohorts[c].child_cqs)
            stack.extend(self.cohorts[c].child_cohorts)
        return sorted(out)


def _group_quotas(groups: list[ResourceGroup]) -> dict[FlavorResource, Quota]:
    out: dict[FlavorResource, Quota] = {}
    for rg in groups:
        for flavor, quotas in rg.flavors:
            for res, q in quotas.items():
                out[(flavor, res)] = q
    return out


def _workload_usage(w: WorkloadView) -> dict[FlavorResource, Decimal]:
    """w.usage() minus status.reclaimablePods (pods whose quota Kueue already released)."""
    reclaim: dict[str, int] = {}
    for rp in (w.obj.get("status") or {}).get("reclaimablePods") or ():
        if isinstance(rp, dict) and rp.get("name"):
            reclaim[str(rp["name"])] = int(rp.get("count") or 0)
    if not reclaim:
        return w.usage()
    out: dict[FlavorResource, Decimal] = defaultdict(lambda: ZERO)
    for a in w.assignments:
        count = a.count
        if count is None:
            count = next((ps.count for ps in w.pod_sets if ps.name == a.name), 1)
        gone = min(reclaim.get(a.name, 0), count)
        factor = Decimal(count - gone) / Decimal(count) if count else Decimal(1)
        for res, qty in a.usage.items():
            flavor = a.flavors.get(res)
            if flavor:
                out[(flavor, res)] += qty * factor
    return dict(out)


HeldQuota = list[tuple[WorkloadView, dict[FlavorResource, Decimal]]]


def workload_usage_by_cq(snap: Snapshot) -> dict[str, HeldQuota]:
    """ClusterQueue → [(quota-holding workload, (flavor, resource) → quota held)] (recomputed)."""

    def build() -> dict[str, HeldQuota]:
        out: dict[str, HeldQuota] = defaultdict(list)
        for w in active_workloads(snap):
            if w.holds_quota and w.admission_cq:
                out[w.admission_cq].append((w, _workload_usage(w)))
        return dict(out)

    return snap.memo("quota:workload-usage", build)


def _use_status_usage(snap: Snapshot) -> bool:
    """Recomputing from Workloads undercounts when the snapshot does not hold every Workload."""
    return snap.manifest.namespaces is not None or snap.part_unavailable(Part.WORKLOADS) is not None


def quota_tree(snap: Snapshot) -> QuotaTree:
    """The memoised quota tree of the whole snapshot."""
    return snap.memo("quota:tree", lambda: _build_tree(snap))


def _build_tree(snap: Snapshot) -> QuotaTree:
    idx = kueue_index(snap)
    held = workload_usage_by_cq(snap)
    prefer_status = _use_status_usage(snap)
    cqs: dict[str, QuotaNode] = {}
    sources: dict[str, str] = {}
    status_usage: dict[str, dict[FlavorResource, Decimal]] = {}
    for cq in idx.cluster_queues.values():
        node = QuotaNode("ClusterQueue", cq.name, cq.cohort, _group_quotas(cq.resource_groups))
        node.subtree_quota = {fr: q.nominal for fr, q in node.quotas.items()}
        recomputed: dict[FlavorResource, Decimal] = defaultdict(lambda: ZERO)
        for _, usage in held.get(cq.name, []):
            for fr, qty in usage.items():
                recomputed[fr] += qty
        status_usage[cq.name] = {fr: total for fr, (total, _) in cq.reservation.items()}
        if prefer_status and cq.reservation:
            node.usage = dict(status_usage[cq.name])
            sources[cq.name] = "status"
        else:
            node.usage = dict(recomputed)
            sources[cq.name] = "workloads"
        cqs[cq.name] = node
    cohorts: dict[str, QuotaNode] = {}
    for co in idx.cohorts.values():
        cohorts[co.name] = QuotaNode("Cohort", co.name, co.parent, _group_quotas(co.resource_groups))
    for cq_node in cqs.values():
        if cq_node.parent and cq_node.parent in cohorts:
            cohorts[cq_node.parent].child_cqs.append(cq_node.name)
    for co_node in cohorts.values():
        if co_node.parent and co_node.parent in cohorts:
            cohorts[co_node.parent].child_cohorts.append(co_node.name)
    cycles = _find_cycles(cohorts)
    done: set[str] = set()

    def fill(name: str) -> None:
        if name in done:
            return
        done.add(name)
        n = cohorts[name]
        n.subtree_quota = {fr: q.nominal for fr, q in n.quotas.items()}
        usage: dict[FlavorResource, Decimal] = defaultdict(lambda: ZERO)
        children: list[QuotaNode] = []
        for c in sorted(n.child_cohorts):
            if c in cycles:
                continue
            fill(c)
            children.append(cohorts[c])
        children.extend(cqs[c] for c in sorted(n.child_cqs))
        for child in children:
            for fr, sq in child.subtree_quota.items():
                n.subtree_quota[fr] = n.subtree_quota.get(fr, ZERO) + sq - child.guaranteed(fr)
            for fr, u in child.usage.items():
                usage[fr] += max(ZERO, u - child.guaranteed(fr))
        n.usage = dict(usage)

    for name in sorted(cohorts):
        if name not in cycles:
            fill(name)
    return QuotaTree(cqs, cohorts, sources, status_usage, cycles)


def _find_cycles(cohorts: dict[str, QuotaNode]) -> set[str]:
    in_cycle: set[str] = set()
    for start in cohorts:
        seen: list[str] = []
        cur: str | None = start
        while cur is not None and cur in cohorts and cur not in seen:
            seen.append(cur)
            cur = cohorts[cur].parent
        if cur is not None and cur in seen:
            in_cycle.update(seen[seen.index(cur) :])
    return in_cycle


def require_quota_tree(snap: Snapshot, cq: str) -> None:
    """Raise MalformedObject (could not check) when a malformed Workload may hold or request quota in `cq`'s
    cohort tree: every answer about free, borrowable or guaranteed quota there sums over those Workloads."""
    require_well_formed(snap, workloads_in_quota_tree(snap, cq), f"the quota of ClusterQueue {cq}'s cohort tree")
