"""Admission and preemption rates per ClusterQueue, with trickle and stall flags and sparklines.

The series are :func:`kueuediag.analysis.admission_rates.admission_rates` (metrics when the snapshot has them,
else object transitions); the trickle test is its :func:`detect_trickle` with KD301's options. Whether a queue
is *in trouble* is decided by KD301 (admission trickle / stall) and KD302 (slow preemption) for the queue's
pending head, so a flagged queue and `why` on its head tell the same story.
"""

from __future__ import annotations

from kueuediag.analysis.admission_rates import admission_rates, detect_trickle, sparkline
from kueuediag.analysis.queue_order import pending_queue
from kueuediag.config import Settings
from kueuediag.health.catalog import Selection
from kueuediag.health.model import Item, RateRow
from kueuediag.health.owners import ask_owner, target_for
from kueuediag.health.queues import cq_ref
from kueuediag.health.scope import Scope
from kueuediag.snapshot.model import Snapshot
from kueuediag.timeutil import parse_duration


def _opt(sel: Selection, name: str) -> str:
    """KD301's option (configured when KD301 is selected, else its class default)."""
    owner = sel.owners.get("KD301")
    return str(owner.opts[name] if owner is not None else sel.classes["KD301"].options[name])


def rate_rows(snap: Snapshot, scope: Scope, sel: Selection) -> list[RateRow]:
    window = parse_duration(_opt(sel, "window")).total_seconds()
    stall = parse_duration(_opt(sel, "stall_window")).total_seconds()
    min_events, min_gap, max_cv = int(_opt(sel, "min_admissions")), float(_opt(sel, "min_gap_seconds")), \
        float(_opt(sel, "max_cv"))
    rows = []
    for cq in sorted(scope.cluster_queues):
        r = admission_rates(snap, cq, window)
        adm = detect_trickle(r.admission_times, min_events=min_events, min_gap=min_gap, max_cv=max_cv)
        pre = detect_trickle(r.preemption_times, min_events=min_events, min_gap=min_gap, max_cv=max_cv)
        pending = r.pending_by_cq.get(cq, float(len(pending_queue(snap, cq))))
        last = max(r.admission_times, default=None)
        quiet = r.end - (last if last is not None else r.start)
        stalled = quiet if pending > 0 and quiet >= stall and r.window >= stall else None
        rows.append(RateRow(
            cluster_queue=cq, source=r.source, window_seconds=round(r.window), admissions=len(r.admission_times),
            preemptions=len(r.preemption_times), pending=pending,
            admission_sparkline=sparkline(r.buckets(r.admission_times)),
            preemption_sparkline=sparkline(r.buckets(r.preemption_times)),
            trickle_gap_seconds=round(adm.median_gap) if adm is not None and pending > 0 else None,
            preemption_gap_seconds=round(pre.median_gap) if pre is not None and pending > 0 else None,
            stalled_seconds=round(stalled) if stalled is not None else None,
        ))
    return rows


def rate_items(snap: Snapshot, scope: Scope, sel: Selection, settings: Settings) -> list[Item]:
    """Per ClusterQueue: KD301's trickle or stall finding and KD302's slow-preemption finding for its head."""
    items = []
    for cq in sorted(scope.cluster_queues):
        queue = pending_queue(snap, cq)
        found: dict[str, Item] = {}
        if queue:
            target = target_for(snap, queue[0].workload)
            for f in ask_owner(sel, settings, "KD301", snap, target).findings:
                check = "admission-trickle" if f.cause == "slow-preemption" else "admission-stall"
                found.setdefault(check, Item(check, cq_ref(cq), f))
            for f in ask_owner(sel, settings, "KD302", snap, target, ("slow-preemption",)).findings:
                found.setdefault("preemption-trickle", Item("preemption-trickle", cq_ref(cq), f))
        for check in ("admission-trickle", "admission-stall", "preemption-trickle"):
            if not sel.enabled(check):
                continue
            note = "nothing pending" if not queue else "the pending head shows no such pattern"
            items.append(found.get(check) or Item(check, cq_ref(cq), None, note))
    return items
