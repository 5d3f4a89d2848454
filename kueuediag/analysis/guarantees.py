"""Guarantee violations: pending workloads that fit in their ClusterQueue's unused nominal quota.

The first signal that something is wrong: a tenant's
queued workloads fit within its unallocated guarantees (nominal quota), yet they stay pending. This module
finds every such workload cluster-wide and estimates *how long* it has been so.

"Fits in unused nominal quota" is judged against the ClusterQueue's own reservation only: nominal quota that
other ClusterQueues of the cohort borrowed still belongs to the guarantee (Kueue must reclaim it by
preemption), so lent-out quota counts as unused here. Flavor eligibility (nodeLabels against the pod's
nodeSelector/affinity, nodeTaints against its tolerations) and per-(flavor, resource) usage come from
:mod:`kueuediag.analysis.quota_tree` and :mod:`kueuediag.analysis.quota_fit` — this module adds no second quota model.

How long: the workload has been pending since its ``QuotaReserved=False`` transition (else its queue-order
time). The violation itself may be younger: if workloads of the same ClusterQueue finished after that moment
and the pending workload would *not* have fitted while they held their quota, the violation began when the
last needed release happened. When the snapshot carries Prometheus history of
``kueue_cluster_queue_nominal_quota`` and ``kueue_cluster_queue_resource_reservation`` (Kueue config
``metrics.enableClusterQueueResources: true``), the start is narrowed further to the beginning of the latest
unbroken run of samples in which the unused nominal quota of the chosen flavor covered the request.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import field
from datetime import UTC, datetime
from decimal import Decimal
from functools import cache
from typing import Any, overload

from kueuediag.analysis.health import last_spec_change
from kueuediag.analysis.messages import ReasonKind, parse_pending_message
from kueuediag.analysis.quota_fit import WorkloadFit, fit_shape, workload_fit
from kueuediag.analysis.quota_summary import FlavorResourceQuota, cq_quotas
from kueuediag.analysis.quota_tree import quota_tree
from kueuediag.errors import MalformedObject
from kueuediag.quantity import ZERO, QuantityError, format_quantity, parse_quantity
from kueuediag.records import dataclass
from kueuediag.snapshot.held import Held
from kueuediag.snapshot.kueue import (
    FlavorResource,
    WorkloadState,
    WorkloadView,
    cluster_queue_of,
    finished_newest_first,
    kueue_index,
    workloads_by_cluster_queue,
)
from kueuediag.snapshot.metrics import MetricStore, Series, metric_store, sums_at, value_at
from kueuediag.snapshot.model import Snapshot
from kueuediag.timeutil import format_rfc3339

# --- fitting in unused nominal quota ------------------------------------------------------------------------


@dataclass(frozen=True)
class NominalChoice:
    pod_set: str
    flavor: str
    requests: dict[str, Decimal]


@dataclass(frozen=True)
class NominalFit:
    """Whether every pod set of a workload fits in unused nominal quota of some flavor it may use."""

    fits: bool
    choices: tuple[NominalChoice, ...] = ()
    """one per pod set and resource group, in order, when it fits"""
    shortfall: str = ""
    """when it does not fit: the closest miss, e.g. `needs 8 nvidia.com/gpu in flavor a100, 3 unused`"""

    @property
    def flavors(self) -> list[str]:
        return sorted({c.flavor for c in self.choices})

    def requests(self) -> dict[FlavorResource, Decimal]:
        out: dict[FlavorResource, Decimal] = defaultdict(lambda: ZERO)
        for c in self.choices:
            for r, q in c.requests.items():
                out[(c.flavor, r)] += q
        return dict(out)


def _shape(snap: Snapshot, w: WorkloadView) -> tuple[tuple[object, ...], ...]:
    """What the fit of a pending workload depends on: pod sets' counts, requests and placement constraints
    (worked out once per view: every fit, probe and violation of the workload asks)."""
    shapes: dict[int, tuple[tuple[object, ...], ...]] = snap.memo("guarantees:shapes", dict)
    shape = shapes.get(id(w))
    if shape is None:
        shape = shapes[id(w)] = fit_shape(w)  # quota_fit owns what a fit depends on (minCount included)
    return shape


def pending_fit(snap: Snapshot, w: WorkloadView,
                shape: tuple[tuple[object, ...], ...] | None = None) -> WorkloadFit | None:
    """workload_fit for a workload that holds no quota, shared by every pending workload of the same shape in
    the same ClusterQueue (50,000-workload snapshots have few distinct shapes)."""
    if w.holds_quota:
        return workload_fit(snap, w)
    cq = cluster_queue_of(kueue_index(snap), w)
    key = shape if shape is not None else _shape(snap, w)
    return snap.memo(("guarantees:fit", cq, key), lambda: workload_fit(snap, w))


def nominal_fit(snap: Snapshot, w: WorkloadView,
                extra_usage: dict[FlavorResource, Decimal] | None = None) -> NominalFit | None:
    """Greedy like Kueue's flavor assigner: per pod set and resource group, the first eligible flavor (in
    ClusterQueue order) where reserved + earlier pod sets + this request <= nominal for every requested
    resource. `extra_usage` is added to the reservation (to ask "would it have fitted before X finished?").
    None when the workload has no known ClusterQueue."""
    if extra_usage is None and not w.holds_quota:
        cq = cluster_queue_of(kueue_index(snap), w)
        shape = _shape(snap, w)
        return snap.memo(("guarantees:nominal-fit", cq, shape), lambda: _nominal_fit(snap, w, {}, shape))
    return _nominal_fit(snap, w, extra_usage or {})


def _nominal_fit(snap: Snapshot, w: WorkloadView, extra: dict[FlavorResource, Decimal],
                 shape: tuple[tuple[object, ...], ...] | None = None) -> NominalFit | None:
    fit = pending_fit(snap, w, shape)
    if fit is None:
        return None
    assigned: dict[FlavorResource, Decimal] = defaultdict(lambda: ZERO)
    choices: list[NominalChoice] = []
    for ps in fit.pod_sets:
        if ps.uncovered:
            return NominalFit(False, shortfall=f"pod set {ps.pod_set}: {', '.join(ps.uncovered)} not covered "
                                               f"by ClusterQueue {fit.cluster_queue}")
        for group in ps.groups:
            picked = None
            best_miss: tuple[Decimal, str, Decimal, str, Decimal] | None = None
            for ff in group.flavors:
                if not ff.eligible:
                    continue
                ok = True
                for rf in ff.resources:
                    fr = (ff.flavor, rf.resource)
                    unused = rf.quota.nominal - rf.quota.usage - extra.get(fr, ZERO) - assigned[fr]
                    if rf.request > unused:
                        ok = False
                        miss = rf.request - unused
                        if best_miss is None or miss < best_miss[0]:
                            best_miss = (miss, rf.resource, rf.request, ff.flavor, unused)
                if ok:
                    picked = ff
                    break
            if picked is None:
                if best_miss is None:
                    why = "no flavor it may use (nodeLabels/nodeTaints)"
                else:
                    _, resource, request, flavor, unused = best_miss
                    why = (f"needs {format_quantity(request, resource)} {resource} in flavor {flavor}, "
                           f"{format_quantity(max(ZERO, unused), resource)} unused in nominal quota")
                return NominalFit(False, shortfall=f"pod set {ps.pod_set}: {why}")
            for rf in picked.resources:
                assigned[(picked.flavor, rf.resource)] += rf.request
            choices.append(NominalChoice(ps.pod_set, picked.flavor,
                                         {rf.resource: rf.request for rf in picked.resources}))
    return NominalFit(True, tuple(choices))


# --- how long ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Violation:
    workload: WorkloadView
    cluster_queue: str
    fit: NominalFit
    pending_since: datetime | None
    pending_source: str
    since: datetime | None
    """best estimate of when the violation began (never before pending_since)"""
    since_source: str
    seconds: float | None
    notes: tuple[str, ...] = field(default_factory=tuple)
    metric_selectors: tuple[str, ...] = ()
    released_by: Held | None = None
    """the Finished Workload whose quota release made the fit possible (when that dated the start): its record,
    decoded (`finished_view`) only by a caller that shows its conditions"""

    @property
    def minutes(self) -> float | None:
        return None if self.seconds is None else self.seconds / 60


def pending_since(w: WorkloadView) -> tuple[datetime | None, str]:
    qr = w.cond("QuotaReserved")
    if qr is not None and qr.false and qr.last_transition is not None:
        return qr.last_transition, f"QuotaReserved=False ({qr.reason}) since"
    t = w.queue_order_time
    if t is not None and t != w.created:
        return t, "requeued at"
    return w.created, "created at"


def is_pending(w: WorkloadView) -> bool:
    """Waiting for quota: no reservation, active, not finished."""
    return w.state == WorkloadState.PENDING and w.active


Release = tuple[datetime, Held, dict[FlavorResource, Decimal]]
"""(finishing time, the Finished Workload, quota released by it and every newer release)"""
_CHECKPOINT = 8
"""a cumulative sum is kept every this many releases; the others are added up from the nearest one"""


@dataclass
class _Releases:
    """The releases of one ClusterQueue read so far (newest first), with a cumulative sum every `_CHECKPOINT`."""

    entries: list[tuple[datetime, Held, tuple[tuple[FlavorResource, Decimal], ...]]] = field(default_factory=list)
    checkpoints: list[dict[FlavorResource, Decimal]] = field(default_factory=list)
    next: int = 0
    held: dict[FlavorResource, Decimal] = field(default_factory=lambda: defaultdict(lambda: ZERO))

    def cumulative(self, i: int) -> dict[FlavorResource, Decimal]:
        base = i - i % _CHECKPOINT
        out = dict(self.checkpoints[base // _CHECKPOINT])
        for _, _, usage in self.entries[base + 1:i + 1]:
            for fr, q in usage:
                out[fr] = out.get(fr, ZERO) + q
        return out


class _ReleaseList(Sequence[Release]):
    """The first `n` releases of a ClusterQueue (newest first); each cumulative sum is built when asked for (a
    binary search asks for a handful)."""

    def __init__(self, state: _Releases, n: int) -> None:
        self._state, self._n = state, n

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> Release: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[Release]: ...

    def __getitem__(self, i: int | slice) -> Release | Sequence[Release]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(self._n))]
        if not -self._n <= i < self._n:
            raise IndexError(i)
        i %= self._n
        when, held, _ = self._state.entries[i]
        return when, held, self._state.cumulative(i)


@cache
def _parsed_usage(usage: tuple[tuple[str, str, Any], ...]) -> tuple[tuple[FlavorResource, Decimal], ...]:
    """(flavor, resource) → quantity of one admission usage shape (shapes are shared: see `Held.settled_usage`)."""
    return tuple(((flavor, resource), parse_quantity(q)) for flavor, resource, q in usage)


def _releases(snap: Snapshot, cq: str, after: datetime) -> Sequence[Release]:
    """Finished workloads of `cq` that finished after `after`, newest first, each with the cumulative quota
    released from the newest down to it (their status.admission still says what they held).

    Only releases after a pending workload's start can explain when it began to fit, and the cumulative sums of
    the newest ones do not depend on older ones: so the list is extended (and memoised per ClusterQueue) only as
    far back as a caller asks. The quota comes from each Workload's index keys (`Held.settled_usage`): finished
    Workloads are not decoded; a quantity that does not parse leaves its Workload out, as a malformed one is."""
    state: _Releases = snap.memo(("guarantees:releases", cq), _Releases)
    entries = finished_newest_first(snap, cq)
    while state.next < len(entries) and entries[state.next][0] > after:
        when, held = entries[state.next]
        state.next += 1
        try:
            usage = _parsed_usage(held.settled_usage) if _hashable(held.settled_usage) else tuple(
                ((flavor, resource), parse_quantity(q)) for flavor, resource, q in held.settled_usage)
        except QuantityError:
            continue
        if not usage:
            continue
        for fr, q in usage:
            state.held[fr] += q
        if len(state.entries) % _CHECKPOINT == 0:
            state.checkpoints.append(dict(state.held))
        state.entries.append((when, held, usage))
    # newest first: the releases after `after` are a prefix
    n = bisect_left(state.entries, -after.timestamp(), key=lambda e: -e[0].timestamp())
    while n < len(state.entries) and state.entries[n][0] > after:  # equal instants (rounding): not after
        n += 1
    while n > 0 and not state.entries[n - 1][0] > after:
        n -= 1
    return _ReleaseList(state, n)


def _hashable(usage: tuple[tuple[str, str, Any], ...]) -> bool:
    return all(isinstance(q, str) for _, _, q in usage)


def _metric_run(store: MetricStore, cq: str, requests: tuple[tuple[FlavorResource, Decimal], ...],
                now: datetime) -> tuple[float | None, list[str]]:
    """Start (epoch seconds) of the latest unbroken run (ending at the newest sample) where nominal − reservation
    covered the request in every chosen (flavor, resource) that has both series, and the series read; None when
    no such series exist or one never covered it. The same for every workload of a ClusterQueue requesting the
    same amounts, so `violation_for` memoises it; the violation starts at the later of it and the pending time."""
    runs: list[float] = []
    selectors: list[str] = []
    for (flavor, resource), need in requests:
        nominal = store.select("kueue_cluster_queue_nominal_quota", cluster_queue=cq, flavor=flavor,
                               resource=resource)
        reserved = store.select("kueue_cluster_queue_resource_reservation", cluster_queue=cq, flavor=flavor,
                                resource=resource)
        if not nominal or not reserved:
            continue  # e.g. only the GPU quota is exported: date the violation by what is there
        selectors += [nominal[0].selector(), reserved[0].selector()]
        start = _run_start(nominal[0], reserved[0], need, now.timestamp())
        if start is None:
            return None, selectors
        runs.append(start)
    if not runs:
        return None, []
    return max(runs), selectors


def _run_start(nominal: Series, reserved: Series, need: Decimal, now: float) -> float | None:
    times = sorted(t for t in {p[0] for p in nominal.points} | {p[0] for p in reserved.points} if t <= now)
    start: float | None = None
    for t in reversed(times):
        n, r = value_at(nominal, t), value_at(reserved, t)
        if n is None or r is None:
            break
        if Decimal(repr(n)) - Decimal(repr(r)) >= need:
            start = t
        else:
            break
    return start


def violation_for(snap: Snapshot, w: WorkloadView) -> Violation | None:
    """The guarantee violation of one pending workload; None when it does not fit in unused nominal quota."""
    if not is_pending(w):
        return None
    fit = nominal_fit(snap, w)
    if fit is None or not fit.fits:
        return None
    cq = fit_cq(snap, w)
    since0, source0 = pending_since(w)
    since, source = since0, f"{source0} {_iso(since0)}" if since0 else "unknown"
    notes: list[str] = []
    released_by: Held | None = None
    if since0 is not None:
        releases = _releases(snap, cq, since0)  # newest first
        lo = _first_failure(snap, w, cq, _shape(snap, w), releases)
        if lo < len(releases):
            when, held, _ = releases[lo]
            since, source = when, f"Workload {held.namespace}/{held.name} finished at {_iso(when)} and freed the quota"
            notes.append(source)
            released_by = held
    selectors: list[str] = []
    store = metric_store(snap)
    if store and since is not None:
        requests = tuple(sorted(fit.requests().items()))
        run, selectors = snap.memo(("guarantees:metric-run", cq, requests),
                                   lambda: _metric_run(store, cq, requests, snap.now))
        msince = max(datetime.fromtimestamp(run, UTC), since) if run is not None else None
        if msince is not None and msince > since:
            since, source = msince, f"metrics: unused nominal quota covered the request since {_iso(msince)}"
            notes.append(source)
    seconds = snap.age_seconds(since) if since is not None else None
    return Violation(w, cq, fit, since0, source0, since, source, seconds, tuple(notes), tuple(selectors),
                     released_by)


@dataclass
class _Boundary:
    """What is known of the first release (newest first) without which workloads of one shape in one
    ClusterQueue would not have fitted: none among the first `searched` releases, or it is `first`."""

    searched: int = 0
    first: int | None = None


def _first_failure(snap: Snapshot, w: WorkloadView, cq: str, shape: tuple[tuple[object, ...], ...],
                   releases: Sequence[Release]) -> int:
    """The first index of `releases` (newest first) without which `w` would not have fitted; `len(releases)`
    when it fits with all of them still held.

    Adding back more released quota can only make the fit worse, so the answer is a boundary, the same for every
    pending workload of the shape in `cq` (their release lists are prefixes of one list, see `_releases`): it is
    binary-searched once per shape, only over the releases no earlier workload's search covered."""
    n = len(releases)
    known: _Boundary = snap.memo(("guarantees:boundary", cq, shape), _Boundary)
    if known.first is not None:
        return min(known.first, n)
    if n <= known.searched:
        return n
    lo, hi = known.searched, n
    while lo < hi:
        mid = (lo + hi) // 2
        if _fails_without(snap, w, cq, shape, releases, mid):
            hi = mid
        else:
            lo = mid + 1
    known.searched = n
    if lo < n:
        known.first = lo
    return lo


def _fails_without(snap: Snapshot, w: WorkloadView, cq: str, shape: tuple[tuple[object, ...], ...],
                   releases: Sequence[Release], i: int) -> bool:
    """Would `w` not fit with releases 0..i (newest first) still held? The same for every pending workload of
    the same shape in `cq` (release i is the same Workload for all of them): memoised on that."""

    def probe() -> bool:
        again = nominal_fit(snap, w, releases[i][2])
        return again is not None and not again.fits

    return snap.memo(("guarantees:fails-without", cq, shape, i), probe)


def fit_cq(snap: Snapshot, w: WorkloadView) -> str:
    return cluster_queue_of(kueue_index(snap), w) or ""


def guarantee_violations(snap: Snapshot) -> list[Violation]:
    """Every pending workload in the snapshot that fits in its ClusterQueue's unused nominal quota, longest
    first (memoised). Workloads whose cohort tree holds a malformed Workload are left out (nothing is claimed
    about them); a caller asking about one workload calls `require_quota_tree` for it."""

    def build() -> list[Violation]:
        out: list[Violation] = []
        idx = kueue_index(snap)
        for cq, wls in sorted(workloads_by_cluster_queue(snap).items()):
            if cq not in idx.cluster_queues:
                continue
            for w in wls:
                try:
                    v = violation_for(snap, w)
                except MalformedObject:  # a malformed Workload in its cohort tree: no claim about this one
                    continue
                if v is not None:
                    out.append(v)
        out.sort(key=lambda v: (-(v.seconds or 0), v.workload.namespace, v.workload.name))
        return out

    return snap.memo("guarantee-violations", build)


def violation_of(snap: Snapshot, w: WorkloadView) -> Violation | None:
    """The entry of `guarantee_violations` for `w` (None when it does not violate), by a memoised index so a
    per-workload caller does not scan the cluster's list."""
    index = snap.memo("guarantee-violations:by-workload",
                      lambda: {(v.workload.namespace, v.workload.name, v.workload.uid): v
                               for v in guarantee_violations(snap)})
    return index.get((w.namespace, w.name, w.uid))


@dataclass(frozen=True)
class ViolationSet:
    """Violations longest first with their count per ClusterQueue, so one workload's view of "the others" costs
    what the listing shows, not a pass over the cluster."""

    items: tuple[Violation, ...]
    by_cluster_queue: dict[str, int]
    """in order of each ClusterQueue's first (longest) violation"""
    position: dict[int, int]
    """id() of each item → its index (Violations hold views, which are not hashed)"""
    first: dict[str, int]
    """index of each ClusterQueue's first violation"""
    second: dict[str, int]
    """index of each ClusterQueue's second violation, where it has one"""

    @classmethod
    def of(cls, items: list[Violation]) -> ViolationSet:
        by_cq: dict[str, int] = {}
        first: dict[str, int] = {}
        second: dict[str, int] = {}
        for i, v in enumerate(items):
            by_cq[v.cluster_queue] = by_cq.get(v.cluster_queue, 0) + 1
            (first if by_cq[v.cluster_queue] == 1 else second).setdefault(v.cluster_queue, i)
        return cls(tuple(items), by_cq, {id(v): i for i, v in enumerate(items)}, first, second)

    def without(self, mine: Violation | None) -> OtherViolations:
        """Every violation but `mine`."""
        return OtherViolations(self, self.position.get(id(mine)) if mine is not None else None)


@dataclass(frozen=True)
class OtherViolations:
    """A ViolationSet minus the one at index `left_out` (a workload's own violation, when it is a member)."""

    whole: ViolationSet
    left_out: int | None

    def __len__(self) -> int:
        return len(self.whole.items) - (self.left_out is not None)

    def __bool__(self) -> bool:
        return len(self) > 0

    def top(self, n: int) -> list[Violation]:
        """The `n` longest."""
        items = self.whole.items
        picked = [v for i, v in enumerate(items[: n + 1]) if i != self.left_out]
        return picked[:n]

    def by_cluster_queue(self) -> dict[str, int]:
        """Count per ClusterQueue, in order of each one's longest remaining violation."""
        counts = dict(self.whole.by_cluster_queue)
        if self.left_out is None:
            return counts
        cq = self.whole.items[self.left_out].cluster_queue
        counts[cq] -= 1
        if not counts[cq]:
            del counts[cq]
            return counts
        if self.whole.first[cq] != self.left_out:
            return counts
        # the ClusterQueue's longest violation was the one left out: it now ranks by its second
        first = dict(self.whole.first, **{cq: self.whole.second[cq]})
        return {name: counts[name] for name in sorted(counts, key=first.__getitem__)}


def all_violations(snap: Snapshot) -> ViolationSet:
    """`guarantee_violations` as a ViolationSet (memoised)."""
    return snap.memo("guarantee-violations:set", lambda: ViolationSet.of(guarantee_violations(snap)))


def stale_violations(snap: Snapshot, requeue_seconds: float) -> ViolationSet:
    """The violations whose Kueue record is stale (`read_record` verdict ``stale``), longest first: only these
    are guarantee violations. Memoised per requeue time. This is KD101's ruling: KD101 passes its
    `churn_minutes` (`GuaranteeViolation.confirmed`), and health's queue tree and gauge read it from there."""
    return snap.memo(("guarantee-violations:stale", requeue_seconds), lambda: ViolationSet.of(
        [v for v in guarantee_violations(snap) if read_record(snap, v, requeue_seconds).verdict == "stale"]))


# --- the per-flavor/resource table --------------------------------------------------------------------------


@dataclass(frozen=True)
class QuotaRow:
    flavor: str
    resource: str
    nominal: Decimal
    reserved: Decimal
    borrowed: Decimal
    lent: Decimal
    unused: Decimal
    pending: Decimal
    """requests of pending workloads of the ClusterQueue that may use this flavor"""

    def as_dict(self) -> dict[str, str]:
        r = self.resource
        return {"flavor": self.flavor, "resource": r, "nominal": format_quantity(self.nominal, r),
                "reserved": format_quantity(self.reserved, r), "borrowed": format_quantity(self.borrowed, r),
                "lent": format_quantity(self.lent, r), "unused": format_quantity(self.unused, r),
                "pending": format_quantity(self.pending, r)}


def quota_table(snap: Snapshot, cq: str) -> list[QuotaRow]:
    """Per (flavor, resource): nominal, reserved, borrowed, lent, unused nominal, pending requests (memoised per
    ClusterQueue)."""
    return snap.memo(("guarantees:quota-table", cq), lambda: _quota_table(snap, cq))


def _quota_table(snap: Snapshot, cq: str) -> list[QuotaRow]:
    pending: dict[FlavorResource, Decimal] = defaultdict(lambda: ZERO)
    for w in workloads_by_cluster_queue(snap).get(cq, []):
        if not is_pending(w):
            continue
        fit = pending_fit(snap, w)
        if fit is None:
            continue
        for ps in fit.pod_sets:
            for group in ps.groups:
                for ff in group.flavors:
                    if ff.eligible:
                        for rf in ff.resources:
                            pending[(ff.flavor, rf.resource)] += rf.request
    rows = []
    for (flavor, resource), q in cq_quotas(snap, cq).items():
        rows.append(_row(q, pending.get((flavor, resource), ZERO)))
    return rows


def _row(q: FlavorResourceQuota, pending: Decimal) -> QuotaRow:
    return QuotaRow(q.flavor, q.resource, q.nominal, q.usage, q.borrowed, q.lent_out, q.free_nominal, pending)


def pending_requests(snap: Snapshot, cq: str) -> dict[str, Decimal]:
    """Σ requests of the ClusterQueue's pending workloads per resource (what
    kueue_cluster_queue_resource_pending reports since v0.18); memoised per ClusterQueue."""

    def build() -> dict[str, Decimal]:
        out: dict[str, Decimal] = defaultdict(lambda: ZERO)
        for w in workloads_by_cluster_queue(snap).get(cq, []):
            if is_pending(w):
                for r, q in w.total_requests().items():
                    out[r] += q
        return dict(out)

    return snap.memo(("guarantees:pending-requests", cq), build)


def cohort_table(snap: Snapshot, cohort: str) -> list[dict[str, str]]:
    """SubtreeQuota and usage per (flavor, resource) of a cohort (memoised per cohort)."""
    return snap.memo(("guarantees:cohort-table", cohort), lambda: _cohort_table(snap, cohort))


def _cohort_table(snap: Snapshot, cohort: str) -> list[dict[str, str]]:
    tree = quota_tree(snap)
    node = tree.cohorts.get(cohort)
    if node is None:
        return []
    rows = []
    for fr in sorted(set(node.subtree_quota) | set(node.usage)):
        sq, used = node.subtree_quota.get(fr, ZERO), node.usage.get(fr, ZERO)
        rows.append({"cohort": cohort, "flavor": fr[0], "resource": fr[1],
                     "subtree_quota": format_quantity(sq, fr[1]), "usage": format_quantity(used, fr[1]),
                     "unused": format_quantity(max(ZERO, sq - used), fr[1])})
    return rows


def pending_workloads_history(store: MetricStore, cq: str, now: datetime) -> tuple[float, str] | None:
    """Seconds that `kueue_pending_workloads{cluster_queue=cq}` (summed over status) has been > 0 without a
    break, ending at the newest sample; None without the metric."""
    series = store.select("kueue_pending_workloads", cluster_queue=cq)
    if not series:
        return None
    times = sorted({t for s in series for t, _ in s.points if t <= now.timestamp()})
    start: float | None = None
    for t, total in reversed(list(zip(times, sums_at(series, times), strict=True))):
        if (total or 0) > 0:
            start = t
        else:
            break
    if start is None:
        return 0.0, series[0].selector()
    return now.timestamp() - start, f'kueue_pending_workloads{{cluster_queue="{cq}"}}'


def resource_pending_history(store: MetricStore, cq: str, resource: str, need: Decimal,
                             now: datetime) -> tuple[float, float, str] | None:
    """(seconds, latest value, selector): how long `kueue_cluster_queue_resource_pending{cluster_queue, resource}`
    (Kueue >= v0.18, enableClusterQueueResources) has stayed >= `need` without a break up to the newest
    sample; None without the metric."""
    series = store.select("kueue_cluster_queue_resource_pending", cluster_queue=cq, resource=resource)
    if not series or series[0].latest() is None:
        return None
    s = series[0]
    latest = s.latest()
    assert latest is not None
    start: float | None = None
    for t, v in reversed([p for p in s.points if p[0] <= now.timestamp()]):
        if Decimal(repr(v)) >= need:
            start = t
        else:
            break
    return (0.0 if start is None else now.timestamp() - start), latest[1], s.selector()


def _iso(t: datetime | None) -> str:
    return format_rfc3339(t) if t else "?"


# --- the recomputation against Kueue's record ---------------------------------------------------------------

# kinds of a QuotaReserved=False message that claim the workload does not fit in quota
_QUOTA_CLAIMS = (ReasonKind.INSUFFICIENT_UNUSED_QUOTA, ReasonKind.EXCEEDS_MAX_QUOTA, ReasonKind.NO_LONGER_FITS)


@dataclass(frozen=True)
class RecordReading:
    """How a guarantee violation compares with what Kueue recorded on the Workload.

    `verdict` is one of:

    * ``stale``   – positive evidence that capacity changed after Kueue wrote its QuotaReserved=False record
                    (a workload of the ClusterQueue finished and freed the quota the fit needs, Prometheus shows
                    the unused nominal quota covering the request since then, or the ClusterQueue's spec changed),
                    and Kueue has not re-evaluated within its normal requeue time: a guarantee violation;
    * ``fresh``   – the same evidence, but too recent: Kueue re-evaluates within its requeue time;
    * ``explained`` – Kueue's record gives a reason that is not about quota, or says it is preempting: the owner of
                    that cause reports it;
    * ``disagree`` – Kueue's record says the workload does not fit and nothing shows capacity changing since:
                    kueuediag's model and Kueue disagree;
    * ``no-record`` – Kueue recorded no decision at all (no QuotaReserved=False message).
    """

    verdict: str
    record: str
    """the QuotaReserved condition quoted (empty for no-record)"""
    change: str = ""
    """what changed after Kueue wrote its record (stale / fresh)"""
    change_at: datetime | None = None
    explanation: str = ""
    """for explained: what in the record accounts for the wait (with the cause it maps to)"""

    @property
    def as_dict(self) -> dict[str, str]:
        out = {"verdict": self.verdict, "record": self.record}
        if self.change:
            out["change"] = self.change
            out["change_at"] = _iso(self.change_at)
        if self.explanation:
            out["explanation"] = self.explanation
        return out


def read_record(snap: Snapshot, v: Violation, requeue_seconds: float) -> RecordReading:
    """Compare violation `v` with the Workload's QuotaReserved record (see RecordReading)."""
    w = v.workload
    qr = w.cond("QuotaReserved")
    if qr is None or not qr.false or not qr.message:
        return RecordReading("no-record", "")
    written = qr.last_transition
    record = f"QuotaReserved=False ({qr.reason}) since {_iso(written)}: {qr.message}"
    changes: list[tuple[datetime, str]] = []
    if written is not None:
        rel = v.released_by
        if rel is not None and v.since is not None and v.since > written:
            changes.append((v.since, f"Workload {rel.namespace}/{rel.name} finished at {_iso(v.since)} and freed "
                                     "the quota the fit needs"))
        elif v.since is not None and v.since > written and v.since_source.startswith("metrics"):
            changes.append((v.since, v.since_source))
        cq = kueue_index(snap).cluster_queues.get(v.cluster_queue)
        spec = last_spec_change(cq.obj) if cq is not None else None
        if spec is not None and spec[0] > written:
            changes.append((spec[0], f"ClusterQueue {v.cluster_queue} spec changed at {_iso(spec[0])} "
                                     f"(managedFields: {spec[1]}, {spec[2]})"))
    if changes:
        at, what = max(changes)
        age = snap.age_seconds(at)
        verdict = "stale" if age is None or age >= requeue_seconds else "fresh"
        return RecordReading(verdict, record, what, at)
    pm = parse_pending_message(qr.message)
    if pm.preempting is not None or pm.preemption_failed is not None or pm.has(
            ReasonKind.OVERLAPPING_TARGETS, ReasonKind.OVERLAPPING_DEFERRED):
        return RecordReading("explained", record, explanation="Kueue is preempting to make room "
                             "(preemption-in-progress)")
    other = [r for r in pm.reasons if r.kind not in _QUOTA_CLAIMS]
    if other and not pm.has(*_QUOTA_CLAIMS):
        causes = ", ".join(dict.fromkeys(r.cause or "unrecognised-kueue-message" for r in other))
        return RecordReading("explained", record, explanation=f"Kueue records a reason that is not quota: "
                             f"`{other[0].text}` ({causes})")
    return RecordReading("disagree", record)

