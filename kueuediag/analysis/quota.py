"""The quota model of ClusterQueues and their (hierarchical) cohort tree, per (flavor, resource).

Pure functions of a Snapshot, memoised with ``snap.memo``. The arithmetic mirrors Kueue's resource nodes
(``pkg/cache/scheduler/resource_node.go``, kueue-facts §3.1, §3.2, §4), in exact Decimals:

* a node is a ClusterQueue or a Cohort; ``SubtreeQuota`` of a ClusterQueue is its ``nominalQuota``; of a
  Cohort its own ``resourceGroups`` nominal plus, per child, ``child SubtreeQuota − guaranteed(child)``;
* ``guaranteed(node) = max(0, SubtreeQuota − lendingLimit)`` when a lendingLimit is set, else 0 — the part a
  node keeps for itself and never lends;
* usage of a ClusterQueue is the quota held by its workloads (QuotaReserved=True, not Finished); usage of a
  Cohort is the sum of its children's usage above their guaranteed quota;
* ``available(node)`` — what a new workload could take *right now* (Kueue's ``available``): for a root
  ``SubtreeQuota − usage``; otherwise ``max(0, guaranteed − usage)`` plus what the parent has available,
  capped by the node's borrowingLimit (``SubtreeQuota − guaranteed − usage-in-parent + borrowingLimit``);
* ``potential_available(node)`` — the *maximum capacity* (Kueue's ``potentialAvailable``, the number in
  ``... > maximum capacity (N)``): the same recursion with all usage taken as zero.

Public API (other helpers rely on it):

* :func:`quota_tree` → :class:`QuotaTree` (nodes, ``available``, ``potential_available``, paths).
* :func:`cq_quota` / :func:`cq_quotas` → :class:`FlavorResourceQuota` — nominal, limits, usage, free nominal
  quota, borrowable now, maximum capacity, borrowed, lent-out.
* :func:`quota_holders` → :class:`QuotaHolders` — the workloads of the ClusterQueue holding the quota (own)
  and the ClusterQueues of the cohort tree borrowing above their nominal quota (borrowers).
* :func:`workload_fit` → :class:`WorkloadFit` (per pod set → resource group → flavor → resource) with a
  :class:`FitVerdict` (fits-nominal / fits-borrowing / needs-preemption / never-fits / no-matching-flavor),
  flavors tried in ClusterQueue order honouring ``flavorFungibility``, earlier pod sets' requests
  accumulated, and partial admission (``minCount``, see ``WorkloadFit.partial``).
  ``WorkloadFit.fits_in_nominal`` = fits *available* quota without borrowing; ``never_fits`` = proven larger
  than the maximum capacity in every eligible flavor; ``blocking()`` = what does not fit, worst first.
* :func:`flavor_eligibility` — why a flavor is (not) usable by a pod set (nodeLabels, nodeTaints).
* :func:`workload_usage_by_cq` — the recomputed quota each QuotaReserved workload holds (minus reclaimablePods).

Usage is recomputed from ``Workload.status.admission``; ``status.flavorsReservation`` is kept for comparison
(``FlavorResourceQuota.status_usage`` / ``usage_mismatch``) and used instead when the snapshot does not hold
every Workload (namespace-limited collection, or no Workloads collected).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from itertools import product

from kueuediag.quantity import ZERO, format_quantity
from kueuediag.snapshot.k8s import pod_fits_node_labels, taint_str, untolerated_taints
from kueuediag.snapshot.kueue import (
    ClusterQueueView,
    FlavorResource,
    PodSet,
    Quota,
    ResourceGroup,
    WorkloadView,
    kueue_index,
    workloads,
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
        for w in workloads(snap):
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


@dataclass(frozen=True)
class QuotaHolders:
    flavor: str
    resource: str
    own: tuple[Holder, ...]
    """workloads of this ClusterQueue holding quota in the flavor, largest first"""
    borrowers: tuple[Holder, ...]
    """other ClusterQueues of the cohort tree using more than their nominal quota, largest first"""

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
    own = [
        Holder("Workload", w.name, w.namespace, usage[fr], cq, w.priority)
        for w, usage in workload_usage_by_cq(snap).get(cq, [])
        if usage.get(fr, ZERO) > ZERO
    ]
    own.sort(key=lambda h: (-h.amount, h.namespace or "", h.name))
    borrowers: list[Holder] = []
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
    borrowers.sort(key=lambda h: (-h.amount, h.name))
    return QuotaHolders(fr[0], fr[1], tuple(own), tuple(borrowers))


# --- fitting a workload -------------------------------------------------------------------------------------


class FitVerdict(StrEnum):
    """How a request fits, best first (``rank`` orders them)."""

    FITS_NOMINAL = "fits-nominal"
    FITS_BORROWING = "fits-borrowing"
    NEEDS_PREEMPTION = "needs-preemption"
    """more than available now, within maximum capacity: needs others to finish or be preempted"""
    NEVER_FITS = "never-fits"
    """more than maximum capacity (nominal + everything borrowable)"""
    NO_MATCHING_FLAVOR = "no-matching-flavor"
    """no flavor of the resource group is usable (nodeLabels/nodeTaints/missing) or resource uncovered"""

    @property
    def rank(self) -> int:
        return _RANK[self]

    @property
    def fits(self) -> bool:
        return self in (FitVerdict.FITS_NOMINAL, FitVerdict.FITS_BORROWING)


_RANK = {
    FitVerdict.FITS_NOMINAL: 0,
    FitVerdict.FITS_BORROWING: 1,
    FitVerdict.NEEDS_PREEMPTION: 2,
    FitVerdict.NEVER_FITS: 3,
    FitVerdict.NO_MATCHING_FLAVOR: 4,
}


def worst(verdicts: list[FitVerdict]) -> FitVerdict:
    return max(verdicts, key=lambda v: v.rank) if verdicts else FitVerdict.FITS_NOMINAL


@dataclass(frozen=True)
class ResourceFit:
    resource: str
    request: Decimal
    """this pod set's request (per-pod × count)"""
    needed: Decimal
    """request plus what earlier pod sets of the workload already take in this flavor (Kueue's 'val')"""
    quota: FlavorResourceQuota
    verdict: FitVerdict

    @property
    def free_nominal(self) -> Decimal:
        return self.quota.free_nominal

    @property
    def borrowable(self) -> Decimal:
        return self.quota.borrowable

    @property
    def shortfall(self) -> Decimal:
        """'N more needed' in Kueue's message: needed − available (0 when it fits)."""
        return max(ZERO, self.needed - self.quota.available)

    def describe(self) -> str:
        """'needs 6 nvidia.com/gpu in flavor a100: 4 free in nominal quota, 0 borrowable, maximum capacity 20'."""
        r = self.resource
        lent_out = self.quota.lent_out
        lent = f" ({format_quantity(lent_out, r)} of it lent to the cohort)" if lent_out > ZERO else ""
        return (
            f"needs {format_quantity(self.needed, r)} {r} in flavor {self.quota.flavor}: "
            f"{format_quantity(self.free_nominal, r)} free in nominal quota"
            f"{lent}, {format_quantity(self.borrowable, r)} borrowable, "
            f"maximum capacity {format_quantity(self.quota.max_capacity, r)}"
        )


@dataclass(frozen=True)
class FlavorFit:
    flavor: str
    eligible: bool
    reasons: tuple[str, ...]
    """why not eligible, in Kueue's words (untolerated taint, doesn't match node affinity, not found)"""
    resources: tuple[ResourceFit, ...]
    verdict: FitVerdict

    def resource(self, name: str) -> ResourceFit | None:
        return next((r for r in self.resources if r.resource == name), None)

    def limiting(self) -> ResourceFit | None:
        """The resource that decides the verdict (largest shortfall relative to the request)."""
        bad = [r for r in self.resources if r.verdict == self.verdict]
        if not bad:
            return None
        return max(bad, key=lambda r: (r.shortfall, r.needed - r.quota.max_capacity))


@dataclass(frozen=True)
class GroupFit:
    """One resource group of the ClusterQueue for one pod set: flavors tried in CQ order."""

    covered: tuple[str, ...]
    requested: tuple[str, ...]
    flavors: tuple[FlavorFit, ...]
    chosen: FlavorFit | None
    """the flavor Kueue's flavor assigner would settle on (flavorFungibility), None if none is eligible"""

    @property
    def verdict(self) -> FitVerdict:
        return self.chosen.verdict if self.chosen else FitVerdict.NO_MATCHING_FLAVOR

    @property
    def eligible(self) -> list[FlavorFit]:
        return [f for f in self.flavors if f.eligible]


@dataclass(frozen=True)
class PodSetFit:
    pod_set: str
    count: int
    groups: tuple[GroupFit, ...]
    uncovered: tuple[str, ...]
    """requested resources no resourceGroup covers ('resource X unavailable in ClusterQueue')"""

    @property
    def verdict(self) -> FitVerdict:
        vs = [g.verdict for g in self.groups]
        if self.uncovered:
            vs.append(FitVerdict.NO_MATCHING_FLAVOR)
        return worst(vs)

    @property
    def flavors(self) -> list[FlavorFit]:
        return [f for g in self.groups for f in g.flavors]


@dataclass(frozen=True)
class FlavorCombination:
    """A flavor for every (pod set, resource group) that does better than Kueue's in-order assignment."""

    flavors: tuple[tuple[str, tuple[str, ...], str], ...]
    """(pod set, requested resources of the group, flavor)"""
    verdict: FitVerdict


@dataclass(frozen=True)
class WorkloadFit:
    cluster_queue: str
    pod_sets: tuple[PodSetFit, ...]
    partial: tuple[tuple[str, int], ...] = ()
    """(pod set, count) when the verdict is for a reduced count (partial admission via ``minCount``)"""
    better: FlavorCombination | None = None
    """when the in-order assignment does not fit: a combination of eligible flavors that does better (Kueue's
    flavor assigner takes pod sets in order and never revisits an earlier pod set's flavor)"""

    @property
    def verdict(self) -> FitVerdict:
        return worst([p.verdict for p in self.pod_sets])

    @property
    def fits(self) -> bool:
        return self.verdict.fits

    @property
    def fits_in_nominal(self) -> bool:
        """Every pod set fits in unused nominal quota of its chosen flavors (KD101's guarantee test)."""
        return self.verdict == FitVerdict.FITS_NOMINAL

    @property
    def never_fits(self) -> bool:
        """Proven: in every eligible flavor of some resource group the request exceeds maximum capacity, and no
        other combination of flavors does better."""
        if self.better is not None and self.better.verdict != FitVerdict.NEVER_FITS:
            return False
        for p in self.pod_sets:
            for g in p.groups:
                el = g.eligible
                if el and all(f.verdict == FitVerdict.NEVER_FITS for f in el):
                    return True
        return False

    def chosen(self) -> list[tuple[str, FlavorFit]]:
        """(pod set, chosen flavor fit) per pod set and resource group."""
        return [(p.pod_set, g.chosen) for p in self.pod_sets for g in p.groups if g.chosen is not None]

    def blocking(self) -> list[tuple[str, ResourceFit]]:
        """(pod set, resource fit) that do not fit in the chosen flavors, worst first."""
        out = [(ps, r) for ps, f in self.chosen() for r in f.resources if not r.verdict.fits]
        # worst verdict first; then the largest shortfall relative to the need (units differ per resource),
        # extended resources (GPUs) before cpu/memory on ties
        out.sort(key=lambda x: (-x[1].verdict.rank, -_relative(x[1]), "/" not in x[1].resource, x[1].resource))
        return out


def _relative(rf: ResourceFit) -> Decimal:
    if rf.needed <= ZERO:
        return ZERO
    if rf.verdict == FitVerdict.NEVER_FITS:
        return (rf.needed - rf.quota.max_capacity) / rf.needed
    return rf.shortfall / rf.needed


def flavor_eligibility(snap: Snapshot, pod_set: PodSet, flavor: str) -> list[str]:
    """Reasons (Kueue's wording) why `flavor` cannot be used by `pod_set`; [] when usable.

    As ``checkFlavorForPodSets`` does: flavor nodeTaints with NoSchedule/NoExecute must be tolerated by the pod
    or by the flavor's own tolerations; the pod's nodeSelector and required node affinity, restricted to the
    keys of *this flavor's* nodeLabels (kueue-facts §2.4; older releases used the union of the resource
    group's keys), must match the flavor's nodeLabels.
    """
    idx = kueue_index(snap)
    fv = idx.flavors.get(flavor)
    if fv is None:
        return [f"flavor {flavor} not found"]
    spec = pod_set.spec
    reasons = []
    tolerations = list(spec.get("tolerations") or []) + list(fv.tolerations)
    for t in untolerated_taints(tolerations, fv.node_taints):
        reasons.append(f"untolerated taint {taint_str(t)} in flavor {flavor}")
    if not pod_fits_node_labels(_restricted_spec(spec, set(fv.node_labels)), fv.node_labels):
        reasons.append(f"flavor {flavor} doesn't match node affinity")
    return reasons


def _restricted_spec(spec: dict[str, object], keys: set[str]) -> dict[str, object]:
    selector = spec.get("nodeSelector")
    out: dict[str, object] = {}
    if isinstance(selector, dict):
        out["nodeSelector"] = {k: v for k, v in selector.items() if k in keys}
    affinity = spec.get("affinity")
    node_aff = affinity.get("nodeAffinity") if isinstance(affinity, dict) else None
    required = node_aff.get("requiredDuringSchedulingIgnoredDuringExecution") if isinstance(node_aff, dict) else None
    terms = required.get("nodeSelectorTerms") if isinstance(required, dict) else None
    if isinstance(terms, list):
        kept: list[dict[str, object]] = []
        for t in terms:
            exprs = [e for e in (t.get("matchExpressions") or []) if isinstance(e, dict) and e.get("key") in keys]
            if not exprs:
                # a term with no relevant expression matches every flavor (terms are ORed)
                kept = []
                break
            kept.append({"matchExpressions": exprs})
        if kept:
            out["affinity"] = {
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": kept}}
            }
    return out


def _verdict(needed: Decimal, frq: FlavorResourceQuota) -> FitVerdict:
    if needed > frq.max_capacity:
        return FitVerdict.NEVER_FITS
    if needed > frq.available:
        return FitVerdict.NEEDS_PREEMPTION
    if frq.usage + needed <= frq.nominal:
        return FitVerdict.FITS_NOMINAL
    return FitVerdict.FITS_BORROWING


def _stops(cq: ClusterQueueView, v: FitVerdict) -> bool:
    """flavorFungibility: may the flavor assigner stop at a flavor with this verdict?"""
    ff = cq.flavor_fungibility
    if v == FitVerdict.FITS_NOMINAL:
        return True
    if v == FitVerdict.FITS_BORROWING:
        return (ff.get("whenCanBorrow") or "MayStopSearch") in ("MayStopSearch", "Borrow")
    if v == FitVerdict.NEEDS_PREEMPTION:
        return (ff.get("whenCanPreempt") or "TryNextFlavor") in ("MayStopSearch", "Preempt")
    return False


def _preference_rank(cq: ClusterQueueView, f: FlavorFit) -> tuple[int, int]:
    """Order of flavors when no flavor let the search stop early (``flavorFungibility.preference``): by default
    borrowing beats preemption; ``PreemptionOverBorrowing`` prefers preempting within nominal quota."""
    rank = f.verdict.rank
    if (
        cq.flavor_fungibility.get("preference") == "PreemptionOverBorrowing"
        and f.verdict == FitVerdict.NEEDS_PREEMPTION
        and all(r.quota.usage + r.needed <= r.quota.nominal for r in f.resources)
    ):
        rank = FitVerdict.FITS_BORROWING.rank
        return rank, 0
    return rank, 1 if f.verdict == FitVerdict.FITS_BORROWING else 0


def workload_fit(snap: Snapshot, w: WorkloadView, cq: str | None = None) -> WorkloadFit | None:
    """Recompute how the workload's pod sets fit the ClusterQueue's quota right now.

    `cq` defaults to the workload's ClusterQueue (admission CQ, else its LocalQueue's). Returns None when
    the ClusterQueue is unknown. Pod sets are assigned in order; a later pod set's ``needed`` includes what
    earlier pod sets take in the same flavor, as in Kueue's flavor assigner. The current usage includes the
    workload's own quota when it holds some.
    """
    from kueuediag.snapshot.kueue import cluster_queue_of

    name = cq or cluster_queue_of(kueue_index(snap), w)
    if not name:
        return None
    return snap.memo(("quota:fit", w.namespace, w.name, w.uid, name), lambda: _fit_with_partial(snap, w, name))


def _fit_with_partial(snap: Snapshot, w: WorkloadView, cq_name: str) -> WorkloadFit | None:
    """Full count first; if it does not fit and a pod set allows partial admission (``minCount``), the largest
    count between minCount and count that fits — or minCount's verdict when even that does not fit but is
    better than the full count's (Kueue's PartialAdmission, Beta and on by default)."""
    full = _workload_fit(snap, w, cq_name)
    if full is None or full.fits:
        return full
    ps = next((p for p in w.pod_sets if p.min_count is not None and 0 < p.min_count < p.count), None)
    if ps is None or ps.min_count is None:
        return full
    low = _workload_fit(snap, w, cq_name, {ps.name: ps.min_count})
    if low is None or low.verdict.rank >= full.verdict.rank:
        return full
    if not low.fits:
        return low
    lo, hi = ps.min_count, ps.count - 1
    best = low
    while lo < hi:
        mid = (lo + hi + 1) // 2
        cand = _workload_fit(snap, w, cq_name, {ps.name: mid})
        if cand is not None and cand.fits:
            best, lo = cand, mid
        else:
            hi = mid - 1
    return best


def _workload_fit(
    snap: Snapshot, w: WorkloadView, cq_name: str, counts: dict[str, int] | None = None
) -> WorkloadFit | None:
    idx = kueue_index(snap)
    cq = idx.cluster_queues.get(cq_name)
    if cq is None:
        return None
    assigned: dict[FlavorResource, Decimal] = defaultdict(lambda: ZERO)
    pod_sets: list[PodSetFit] = []
    for ps in w.pod_sets:
        count = (counts or {}).get(ps.name, ps.count)
        totals = {r: q for r, q in ps.total(count).items() if q > ZERO}
        groups: list[GroupFit] = []
        covered_all: set[str] = set()
        for rg in cq.resource_groups:
            requested = [r for r in rg.covered if r in totals]
            covered_all.update(rg.covered)
            if not requested:
                continue
            fits: list[FlavorFit] = []
            chosen: FlavorFit | None = None
            for fname, _ in rg.flavors:
                reasons = flavor_eligibility(snap, ps, fname)
                rfits = []
                for res in requested:
                    frq = cq_quota(snap, cq_name, fname, res)
                    assert frq is not None
                    needed = totals[res] + assigned[(fname, res)]
                    rfits.append(ResourceFit(res, totals[res], needed, frq, _verdict(needed, frq)))
                verdict = worst([r.verdict for r in rfits]) if not reasons else FitVerdict.NO_MATCHING_FLAVOR
                ff = FlavorFit(fname, not reasons, tuple(reasons), tuple(rfits), verdict)
                fits.append(ff)
                if reasons or chosen is not None:
                    continue
                if _stops(cq, verdict):
                    chosen = ff
            if chosen is None:
                eligible = [f for f in fits if f.eligible]
                if eligible:
                    chosen = min(eligible, key=lambda f: _preference_rank(cq, f))
            if chosen is not None:
                for r in chosen.resources:
                    assigned[(chosen.flavor, r.resource)] += r.request
            groups.append(GroupFit(tuple(rg.covered), tuple(requested), tuple(fits), chosen))
        uncovered = tuple(sorted(r for r in totals if r not in covered_all))
        pod_sets.append(PodSetFit(ps.name, count, tuple(groups), uncovered))
    fit = WorkloadFit(cq_name, tuple(pod_sets), tuple(sorted((counts or {}).items())))
    if fit.fits:
        return fit
    return WorkloadFit(fit.cluster_queue, fit.pod_sets, fit.partial, _better_combination(snap, w, fit, counts))


_MAX_COMBINATIONS = 4096


def _better_combination(
    snap: Snapshot, w: WorkloadView, fit: WorkloadFit, counts: dict[str, int] | None
) -> FlavorCombination | None:
    """Search every combination of eligible flavors (pod sets × resource groups) for one that does better than
    the in-order assignment; None when there is a single choice, none is better, or the space is too large."""
    slots: list[tuple[str, dict[str, Decimal], tuple[str, ...], list[str]]] = []
    by_name = {ps.name: ps for ps in w.pod_sets}
    for ps_fit in fit.pod_sets:
        if ps_fit.uncovered:
            return None
        totals = by_name[ps_fit.pod_set].total((counts or {}).get(ps_fit.pod_set, ps_fit.count))
        for g in ps_fit.groups:
            eligible = [f.flavor for f in g.flavors if f.eligible]
            if not eligible:
                return None  # no matching flavor: not a combination problem
            slots.append((ps_fit.pod_set, totals, g.requested, eligible))
    space = 1
    for s in slots:
        space *= len(s[3])
    if len(slots) < 2 or space < 2 or space > _MAX_COMBINATIONS:
        return None
    best: FlavorCombination | None = None
    for combo in product(*(s[3] for s in slots)):
        assigned: dict[FlavorResource, Decimal] = defaultdict(lambda: ZERO)
        verdicts: list[FitVerdict] = []
        for (_, totals, requested, _), flavor in zip(slots, combo, strict=True):
            for res in requested:
                frq = cq_quota(snap, fit.cluster_queue, flavor, res)
                if frq is None:
                    return None
                verdicts.append(_verdict(totals[res] + assigned[(flavor, res)], frq))
                assigned[(flavor, res)] += totals[res]
        v = worst(verdicts)
        if best is None or v.rank < best.verdict.rank:
            best = FlavorCombination(
                tuple((ps, req, flavor) for (ps, _, req, _), flavor in zip(slots, combo, strict=True)), v)
    if best is None or best.verdict.rank >= fit.verdict.rank:
        return None
    return best
