"""Admission and preemption rates per ClusterQueue and cluster-wide (the admission-rate step of the recipe).

Two sources, best first:

* **metrics** (kueue-facts §5): ``kueue_admitted_workloads_total`` (else ``kueue_quota_reserved_workloads_total``)
  per ``cluster_queue``; ``kueue_preempted_workloads_total{preempting_cluster_queue, reason}`` (else
  ``kueue_evicted_workloads_total{reason="Preempted"}``); ``kueue_admission_attempts_total{result}``;
  ``kueue_pending_workloads{cluster_queue, status}``.
* **objects**: ``QuotaReserved``/``Admitted`` True transition times and ``Evicted`` (reason ``Preempted``)
  transition times of Workloads, plus the ``QuotaReserved``/``Admitted``/``Preempted``/``EvictedDueToPreempted``
  events Kueue writes. Only the latest transition of each Workload survives, so this is a lower bound.

On top: a *trickle* detector (regularly spaced admissions, low coefficient of variation of the gaps, while
work stays pending — "one admission every 15 minutes") and a unicode sparkline renderer.
"""

from __future__ import annotations

import math
import re
import statistics
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import field
from datetime import timedelta
from functools import cached_property

from kueuediag.analysis.preemption_victims import preemption_victims
from kueuediag.records import dataclass
from kueuediag.snapshot.kueue import (
    WorkloadState,
    cluster_queue_of,
    events,
    kueue_index,
    workloads_by_cluster_queue,
    workloads_since,
)
from kueuediag.snapshot.metrics import (
    MetricStore,
    Series,
    increase_events,
    metric_store,
    sum_at,
    sums_at,
    time_range,
)
from kueuediag.snapshot.model import Snapshot

SPARK = "▁▂▃▄▅▆▇█"
NICE_STEPS = (60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)

ADMITTED = "kueue_admitted_workloads_total"
QUOTA_RESERVED = "kueue_quota_reserved_workloads_total"
PREEMPTED = "kueue_preempted_workloads_total"
EVICTED = "kueue_evicted_workloads_total"
ATTEMPTS = "kueue_admission_attempts_total"
PENDING = "kueue_pending_workloads"

_QR_EVENT = re.compile(r"^Quota reserved in ClusterQueue (?P<cq>[^,\s]+)")
_ADMITTED_EVENT = re.compile(r"^Admitted by ClusterQueue (?P<cq>[^,\s]+)")


@dataclass(frozen=True)
class Trickle:
    """Regularly spaced events: the gaps between distinct event times."""

    count: int
    gaps: tuple[float, ...]
    mean_gap: float
    median_gap: float
    cv: float
    """coefficient of variation (stdev / mean) of the gaps"""


@dataclass
class Rates:
    """Admission/preemption activity for one ClusterQueue and the whole cluster over a window."""

    source: str
    """'metrics' or 'objects'"""
    cluster_queue: str | None
    start: float
    end: float
    step: float
    admission_times: list[float]
    """target ClusterQueue, one entry per admission (repeated for several at one sample); this and every other
    time list of a Rates is sorted ascending"""
    preemption_times: list[float]
    """preemptions issued on behalf of the target ClusterQueue"""
    all_admission_times: list[float]
    all_preemption_times: list[float]
    admissions_by_cq: dict[str, list[float]]
    pending_by_cq: dict[str, float]
    """latest pending depth per ClusterQueue"""
    pending_points: list[tuple[float, float]] = field(default_factory=list)
    """pending depth of the target ClusterQueue over the window, all statuses summed (metrics only)"""
    attempts: dict[str, float] = field(default_factory=dict)
    """admission attempts in the window by result (metrics only)"""
    queries: list[str] = field(default_factory=list)
    """the metric selectors (or object fields) the numbers come from"""

    _trickles: dict[tuple[int, float, float], Trickle | None] = field(default_factory=dict, repr=False,
                                                                       compare=False)

    @cached_property
    def sparklines(self) -> dict[str, str]:
        """The target ClusterQueue's admission and preemption sparklines over the window. A Rates is memoised
        per ClusterQueue and window, so every pending workload of the queue shares them."""
        return {"admissions": sparkline(self.buckets(self.admission_times)),
                "preemptions": sparkline(self.buckets(self.preemption_times))}

    def trickle(self, *, min_events: int, min_gap: float, max_cv: float) -> Trickle | None:
        """`detect_trickle` over the target ClusterQueue's admissions, once per Rates and thresholds."""
        key = (min_events, min_gap, max_cv)
        if key not in self._trickles:
            self._trickles[key] = detect_trickle(self.admission_times, min_events=min_events, min_gap=min_gap,
                                                 max_cv=max_cv)
        return self._trickles[key]

    def buckets(self, times: Sequence[float]) -> list[int]:
        n = max(1, math.ceil((self.end - self.start) / self.step - 1e-9))
        out = [0] * n
        for t in times:
            if self.start < t <= self.end:
                out[min(n - 1, max(0, math.ceil((t - self.start) / self.step - 1e-9) - 1))] += 1
            elif t == self.start:
                out[0] += 1
        return out

    def pending_min(self, since: float | None = None) -> float | None:
        """Lowest pending depth of the target ClusterQueue from `since` to the end (None without metrics)."""
        values = [v for t, v in self.pending_points if since is None or t >= since]
        return min(values) if values else None

    def pending_since(self) -> float | None:
        """Start of the current unbroken run of pending work in the target ClusterQueue (metrics only)."""
        since: float | None = None
        for t, v in self.pending_points:
            if v > 0:
                since = t if since is None else since
            else:
                since = None
        return since

    def count_since(self, times: Sequence[float], since: float) -> int:
        """Events of `times` (one of this Rates' time lists: sorted ascending) in (`since`, end]: two binary
        searches, so counting the cluster's admissions costs nothing per target."""
        return max(0, bisect_right(times, self.end) - bisect_right(times, since))

    @property
    def window(self) -> float:
        return self.end - self.start


def sparkline(values: Sequence[float]) -> str:
    """`▁▁█▁▁█` — zero is the lowest bar, the maximum the highest."""
    if not values:
        return ""
    top = max(values)
    if top <= 0:
        return SPARK[0] * len(values)
    return "".join(SPARK[0] if v <= 0 else SPARK[max(1, min(7, math.ceil(v / top * 7)))] for v in values)


def nice_step(window: float, max_buckets: int = 48) -> float:
    for s in NICE_STEPS:
        if window / s <= max_buckets:
            return float(s)
    return float(NICE_STEPS[-1])


def detect_trickle(times: Sequence[float], *, min_events: int = 4, min_gap: float = 120.0,
                   max_cv: float = 0.35, merge_within: float = 60.0) -> Trickle | None:
    """Regular spacing: at least `min_events` distinct event times (events closer than `merge_within` are
    one), a mean gap of at least `min_gap` seconds, and a coefficient of variation of at most `max_cv`."""
    distinct: list[float] = []
    for t in sorted(times):
        if distinct and t - distinct[-1] < merge_within:
            continue
        distinct.append(t)
    if len(distinct) < min_events:
        return None
    gaps = [b - a for a, b in zip(distinct, distinct[1:], strict=False)]
    mean = statistics.fmean(gaps)
    if mean < min_gap:
        return None
    cv = statistics.pstdev(gaps) / mean if mean else math.inf
    if cv > max_cv:
        return None
    return Trickle(count=len(distinct), gaps=tuple(gaps), mean_gap=mean, median_gap=statistics.median(gaps), cv=cv)


# --- from metrics ------------------------------------------------------------------------------------------


def _times(series: Sequence[Series], start: float, end: float) -> list[float]:
    out: list[float] = []
    for s in series:
        for t, d in increase_events(s, start, end):
            out.extend([t] * max(1, round(d)))
    return sorted(out)


def _leader(series: Sequence[Series]) -> list[Series]:
    """Drop series exported by follower replicas (`replica_role="follower"`, v0.16+): only the leader
    schedules, and a follower's gauges would double-count pending work."""
    return [s for s in series if s.label("replica_role") != "follower"]


def _by_label(series: Sequence[Series], label: str) -> dict[str, list[Series]]:
    out: dict[str, list[Series]] = defaultdict(list)
    for s in series:
        out[s.label(label)].append(s)
    return dict(out)


@dataclass(frozen=True)
class MetricWindow:
    """What the metric-sourced Rates of every ClusterQueue share for one window: read once per snapshot, so a
    ClusterQueue's rates cost its own series, not the cluster's."""

    admitted_name: str
    start: float
    end: float
    admissions_by_cq: dict[str, list[float]]
    all_admission_times: list[float]
    preempted_by_cq: dict[str, list[Series]] | None
    """leader series of kueue_preempted_workloads_total per preempting ClusterQueue (None without the metric)"""
    all_preemption_times: list[float]
    pending_by_cq: dict[str, list[Series]]
    pending_latest: dict[str, float]
    attempts: dict[str, float]


def metric_window(store: MetricStore, window: float, end_hint: float) -> MetricWindow | None:
    """The cluster-wide part of `rates_from_metrics` (None without an admission counter or its samples)."""
    admitted_name = ADMITTED if store.has(ADMITTED) else QUOTA_RESERVED if store.has(QUOTA_RESERVED) else None
    if admitted_name is None:
        return None
    admitted = _leader(store.select(admitted_name))
    span = time_range(admitted)
    if span is None:
        return None
    end = min(span[1], end_hint)
    start = max(span[0], end - window)
    by_cq = {name: _times(series, start, end) for name, series in _by_label(admitted, "cluster_queue").items()}
    if store.has(PREEMPTED):
        pre = _leader(store.select(PREEMPTED))
        pre_by_cq: dict[str, list[Series]] | None = _by_label(pre, "preempting_cluster_queue")
    else:
        pre = _leader(store.select(EVICTED, reason="Preempted"))
        pre_by_cq = None
    pending_by = _by_label(_leader(store.select(PENDING)), "cluster_queue")
    attempts: dict[str, float] = {}
    for s in _leader(store.select(ATTEMPTS)):
        attempts[s.label("result")] = attempts.get(s.label("result"), 0.0) + sum(
            d for _, d in increase_events(s, start, end))
    return MetricWindow(
        admitted_name=admitted_name, start=start, end=end, admissions_by_cq=by_cq,
        all_admission_times=sorted(t for ts in by_cq.values() for t in ts), preempted_by_cq=pre_by_cq,
        all_preemption_times=_times(pre, start, end), pending_by_cq=pending_by,
        pending_latest={name: sum_at(series, end) or 0.0 for name, series in pending_by.items()},
        attempts=attempts)


def rates_from_metrics(store: MetricStore, cq: str | None, window: float, end_hint: float,
                       shared: MetricWindow | None = None) -> Rates | None:
    """Rates of `cq` from metrics; `shared` is `metric_window(store, window, end_hint)` when the caller has it."""
    mw = shared if shared is not None else metric_window(store, window, end_hint)
    if mw is None:
        return None
    start, end = mw.start, mw.end
    queries = [f'{mw.admitted_name}{{cluster_queue="{cq}"}}' if cq else mw.admitted_name]
    if mw.preempted_by_cq is not None:
        pre_times = _times(mw.preempted_by_cq.get(cq or "", []), start, end)
        queries.append(f'{PREEMPTED}{{preempting_cluster_queue="{cq}"}}')
    else:
        pre_times = []
        queries.append(f'{EVICTED}{{reason="Preempted"}}')
    pending_points: list[tuple[float, float]] = []
    if cq and cq in mw.pending_by_cq:
        queries.append(f'{PENDING}{{cluster_queue="{cq}"}}')
        mine = mw.pending_by_cq[cq]
        stamps = sorted({t for s in mine for t, _ in s.points if start <= t <= end})
        pending_points = [(t, v) for t, v in zip(stamps, sums_at(mine, stamps), strict=True) if v is not None]
    return Rates(
        source="metrics", cluster_queue=cq, start=start, end=end, step=nice_step(end - start),
        admission_times=mw.admissions_by_cq.get(cq or "", []), preemption_times=pre_times,
        all_admission_times=mw.all_admission_times, all_preemption_times=mw.all_preemption_times,
        admissions_by_cq=mw.admissions_by_cq, pending_by_cq=mw.pending_latest, pending_points=pending_points,
        attempts=mw.attempts, queries=queries,
    )


# --- from objects -------------------------------------------------------------------------------------------


def _dedupe(entries: list[tuple[str, float]], within: float = 5.0) -> list[float]:
    """Merge (workload key, time) pairs seen twice (condition and event) into one time each."""
    by_key: dict[str, list[float]] = defaultdict(list)
    for key, t in entries:
        times = by_key[key]
        if not any(abs(t - x) <= within for x in times):
            times.append(t)
    return sorted(t for times in by_key.values() for t in times)


@dataclass(frozen=True)
class ObjectWindow:
    """What the object-sourced Rates of every ClusterQueue share: admissions and preemptions per ClusterQueue
    read from every Workload and event once per snapshot."""

    start: float
    end: float
    admissions_by_cq: dict[str, list[float]]
    preemptions_by_cq: dict[str, list[float]]
    pending_by_cq: dict[str, float]
    all_admission_times: list[float]
    all_preemption_times: list[float]


def object_window(snap: Snapshot, window: float) -> ObjectWindow:
    """The cluster-wide part of `rates_from_objects`."""
    idx = kueue_index(snap)
    end = snap.now.timestamp()
    start = end - window
    admissions: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for w in workloads_since(snap, snap.now - timedelta(seconds=window)):
        cond = w.cond("QuotaReserved") if w.is_true("QuotaReserved") else None
        if cond is None and w.is_true("Admitted"):
            cond = w.cond("Admitted")
        wcq = w.admission_cq or cluster_queue_of(idx, w)
        if cond is not None and cond.last_transition is not None and wcq:
            admissions[wcq].append((w.ref(), cond.last_transition.timestamp()))
    preemptions: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for v in preemption_victims(snap):
        if v.evicted_at is not None:
            preemptions[v.preemptor_cq or ""].append((v.workload.ref(), v.evicted_at.timestamp()))
    victims_by_ref = {v.workload.ref(): v for v in preemption_victims(snap)}
    for e in events(snap):
        if e.involved_kind != "Workload" or e.last is None:
            continue
        ref = f"{e.involved_namespace or e.namespace}/{e.involved_name}"
        t = e.last.timestamp()
        if e.reason in ("QuotaReserved", "Admitted"):
            m = (_QR_EVENT if e.reason == "QuotaReserved" else _ADMITTED_EVENT).match(e.message)
            if m:
                admissions[m.group("cq")].append((ref, t))
        elif e.reason in ("Preempted", "EvictedDueToPreempted"):
            victim = victims_by_ref.get(ref)
            preemptions[(victim.preemptor_cq if victim else None) or ""].append((ref, t))
    by_cq = {name: [t for t in _dedupe(entries) if start < t <= end] for name, entries in admissions.items()}
    pre_by_cq = {name: [t for t in _dedupe(entries) if start < t <= end] for name, entries in preemptions.items()}
    pending_by_cq = {
        name: float(sum(1 for w in wls if w.state == WorkloadState.PENDING and w.active and not w.is_true("Finished")))
        for name, wls in workloads_by_cluster_queue(snap).items()
    }
    return ObjectWindow(
        start=start, end=end, admissions_by_cq=by_cq, preemptions_by_cq=pre_by_cq, pending_by_cq=pending_by_cq,
        all_admission_times=sorted(t for ts in by_cq.values() for t in ts),
        all_preemption_times=sorted(t for ts in pre_by_cq.values() for t in ts))


def rates_from_objects(snap: Snapshot, cq: str | None, window: float) -> Rates:
    """Rates of `cq` from Workload conditions and events (the cluster-wide reading is memoised per window)."""
    ow = snap.memo(("admission-rates:objects", window), lambda: object_window(snap, window))
    start, end = ow.start, ow.end
    # Only the latest transition of each Workload survives: start the window shortly before the target
    # ClusterQueue's first observed admission or preemption (cluster-wide when it has none).
    own = ow.admissions_by_cq.get(cq or "", []) + ow.preemptions_by_cq.get(cq or "", [])
    seen = own or ow.all_admission_times + ow.all_preemption_times
    if seen:
        first = min(seen)
        start = max(start, first - max(900.0, 0.1 * (end - first)))
    return Rates(
        source="objects", cluster_queue=cq, start=start, end=end, step=nice_step(end - start),
        admission_times=ow.admissions_by_cq.get(cq or "", []), preemption_times=ow.preemptions_by_cq.get(cq or "", []),
        all_admission_times=ow.all_admission_times, all_preemption_times=ow.all_preemption_times,
        admissions_by_cq=ow.admissions_by_cq, pending_by_cq=ow.pending_by_cq,
        queries=["Workload status.conditions[type=QuotaReserved|Admitted].lastTransitionTime",
                 "Workload status.conditions[type=Evicted,reason=Preempted].lastTransitionTime",
                 "events QuotaReserved/Admitted/Preempted/EvictedDueToPreempted"],
    )


def admission_rates(snap: Snapshot, cq: str | None, window: float) -> Rates:
    """Rates from metrics when the snapshot has them, else from Workload conditions and events."""

    def build() -> Rates:
        store = metric_store(snap)
        shared = snap.memo(("admission-rates:metrics", window),
                           lambda: metric_window(store, window, snap.now.timestamp())) if store else None
        from_metrics = rates_from_metrics(store, cq, window, snap.now.timestamp(), shared) if shared else None
        return from_metrics or rates_from_objects(snap, cq, window)

    return snap.memo(("admission-rates", cq, window), build)


__all__ = [
    "Rates",
    "Trickle",
    "admission_rates",
    "detect_trickle",
    "nice_step",
    "rates_from_metrics",
    "rates_from_objects",
    "sparkline",
]
