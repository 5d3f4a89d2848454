"""Does a workload fit its ClusterQueue's quota? — the one fit function every check uses (KD102, KD101, KD201,
KD601, guarantees).

:func:`workload_fit` → :class:`WorkloadFit` (per pod set → resource group → flavor → resource) with a
:class:`FitVerdict` (fits-nominal / fits-borrowing / needs-preemption / never-fits / no-matching-flavor),
flavors tried in ClusterQueue order honouring ``flavorFungibility``, earlier pod sets' requests accumulated,
cohort borrowing through :meth:`QuotaTree.available <kueuediag.analysis.quota_tree.QuotaTree.available>`, and
partial admission (``minCount``, see ``WorkloadFit.partial``). ``WorkloadFit.fits_in_nominal`` = fits
*available* quota without borrowing; ``never_fits`` = proven larger than the maximum capacity in every eligible
flavor; ``blocking()`` = what does not fit, worst first. :func:`flavor_eligibility` gives Kueue's wording of
why a flavor is not usable (the rule is :mod:`kueuediag.analysis.flavor_match`).
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal
from enum import StrEnum
from itertools import product

from kueuediag.analysis.flavor_match import flavor_exclusion, flavor_tolerations_count
from kueuediag.analysis.quota_summary import FlavorResourceQuota, cq_quota
from kueuediag.analysis.quota_tree import require_quota_tree
from kueuediag.quantity import ZERO, format_quantity
from kueuediag.records import dataclass
from kueuediag.snapshot.kueue import (
    ClusterQueueView,
    FlavorResource,
    PodSet,
    WorkloadView,
    kueue_index,
)
from kueuediag.snapshot.model import Snapshot

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
    """Why `flavor` cannot be used by `pod_set`, in Kueue's wording; [] when usable. The rule is
    :func:`kueuediag.analysis.flavor_match.flavor_exclusion` (the one owner of flavor eligibility)."""
    why = flavor_exclusion(pod_set, flavor, kueue_index(snap).flavors.get(flavor),
                           flavor_tolerations=flavor_tolerations_count(snap))
    return [] if why is None else [why.kueue_message]


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
    require_quota_tree(snap, name)

    def compute() -> WorkloadFit | None:
        if w.holds_quota:  # its own usage is part of the ClusterQueue's: the fit is its own
            return _fit_with_partial(snap, w, name)
        # A workload holding no quota fits exactly as every other of its shape in this ClusterQueue: the pending
        # workloads of a queue (thousands in a 50,000-workload snapshot) share a few fits.
        return snap.memo(("quota:fit-shape", name, fit_shape(w)), lambda: _fit_with_partial(snap, w, name))

    return snap.memo(("quota:fit", w.namespace, w.name, w.uid, name), compute)


def fit_shape(w: WorkloadView) -> tuple[tuple[object, ...], ...]:
    """What the quota fit of a workload that holds no quota depends on: per pod set its name, count, minimum
    count (partial admission), requests and placement constraints (what flavor eligibility reads)."""
    spec_keys = ("nodeSelector", "affinity", "tolerations")
    return tuple(
        (ps.name, ps.count, ps.min_count, tuple(sorted(ps.requests.items())), repr([ps.spec.get(k) for k in spec_keys]))
        for ps in w.pod_sets)


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


def flavor_fits(fit: WorkloadFit | None, pod_set: str, flavor: str) -> FlavorFit | None:
    """The fit of one pod set in one flavor (None when that flavor was not evaluated for it)."""
    if fit is None:
        return None
    ps = next((p for p in fit.pod_sets if p.pod_set == pod_set), None)
    return None if ps is None else next((f for f in ps.flavors if f.flavor == flavor), None)


def fit_facts(w: WorkloadView, fit: WorkloadFit | None,
              only: set[tuple[str, str]] | None = None) -> dict[str, dict[str, bool | None]]:
    """Structured conclusions for Finding.data["facts"]: per pod set and flavor, whether the flavor is eligible
    and whether the request fits the quota available now (cohort borrowing included). `only`: restrict to
    these (pod set, flavor) pairs."""
    eligible: dict[str, bool | None] = {}
    fits: dict[str, bool | None] = {}
    for ps in fit.pod_sets if fit is not None else ():
        for f in ps.flavors:
            if only is not None and (ps.pod_set, f.flavor) not in only:
                continue
            key = f"Workload/{w.namespace}/{w.name}/{ps.pod_set}@{f.flavor}"
            eligible[key] = f.eligible
            if f.eligible:
                fits[key] = f.verdict.fits
    return {"flavor-eligible": eligible, "quota-fits": fits}
