"""One engine pass over the whole cluster: every section of the health report from one shared Snapshot."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator, Sequence

from kueuediag.analysis.guarantees import guarantee_violations
from kueuediag.analysis.installation import kueue_version
from kueuediag.check import Check
from kueuediag.config import Settings
from kueuediag.cores import auto_jobs, can_fork
from kueuediag.errors import KueuediagError
from kueuediag.health import log_side
from kueuediag.health.catalog import HEALTH_CHECKS, select_health
from kueuediag.health.flavors import flavor_rows, fragmentation_items
from kueuediag.health.heads import QueueHeads, head_item
from kueuediag.health.model import Head, HealthReport, Item
from kueuediag.health.queues import (
    cohort_rows,
    fair_sharing_items,
    guarantee_items,
    inactive_items,
    kd101_ruling,
    queue_rows,
)
from kueuediag.health.rates import rate_items, rate_rows
from kueuediag.health.scope import scope_of
from kueuediag.health.stuck import known_issue_items, system_items, workload_items
from kueuediag.health.workers import HeadPool, HeadSink
from kueuediag.snapshot.model import Part, Snapshot
from kueuediag.split_runs import split_jobs

_REQUIRES: dict[str, tuple[Part, ...]] = {
    "guarantee-violation": (Part.WORKLOADS, Part.QUEUES),
    "fair-sharing": (Part.QUEUES,),
    "queue-inactive": (Part.QUEUES,),
    "fragmentation": (Part.WORKLOADS, Part.NODES, Part.PODS),
    "admission-trickle": (Part.WORKLOADS,),
    "admission-stall": (Part.WORKLOADS,),
    "preemption-trickle": (Part.WORKLOADS,),
    "admission-checks": (Part.WORKLOADS,),
    "podsready-backoff": (Part.WORKLOADS,),
    "deactivated": (Part.WORKLOADS,),
    "gates-not-removed": (Part.WORKLOADS, Part.PODS),
    "zombie-pods": (Part.PODS,),
    "victims-holding-quota": (Part.WORKLOADS, Part.PODS),
    "node-health": (Part.NODES,),
    "controller": (Part.PODS,),
    "known-issues": (),
    "pending-heads": (Part.WORKLOADS,),
}


AUTO_JOBS_MIN_HEADS = 200
"""with `jobs=None`, heads are shared among processes only from this many on (below, forking costs more)"""


def build_report(snap: Snapshot, classes: Sequence[type[Check]], settings: Settings, *,
                 namespaces: list[str] | None = None, all_pending: bool = False, keep_verdicts: bool = True,
                 sink: HeadSink | None = None, jobs: int | None = 1) -> HealthReport:
    """The whole report; heads (all pending with `all_pending`) are diagnosed with `why`'s engine.

    `sink` gets each head's output as soon as it is diagnosed (`-o jsonl` prints it then), in head order. The
    report keeps the verdicts only with `keep_verdicts` (`-o json` prints them all), else each head's summary
    and item, so memory does not grow with the verdicts of thousands of pending workloads. Without kept
    verdicts the heads may be shared among `jobs` processes (:mod:`kueuediag.health.workers`; None: one per
    usable CPU when there are at least :data:`AUTO_JOBS_MIN_HEADS` heads and the CPUs have room,
    :func:`~kueuediag.cores.auto_jobs`); the report and the output are the same either way."""
    sel = select_health(classes, settings)
    scope = scope_of(snap, namespaces)
    report = HealthReport(
        captured_at=snap.now.strftime("%Y-%m-%dT%H:%M:%SZ"), source=str(snap.source),
        namespaces=tuple(namespaces) if namespaces else None, kueue_version=kueue_version(snap).version,
        snapshot_errors=[f"{what}: {err}" for what, err in snap.manifest.errors],
    )
    runnable = set()
    for h in HEALTH_CHECKS:
        if not sel.enabled(h.id):
            continue
        missing = next((why for part in _REQUIRES[h.id] if (why := snap.part_unavailable(part))), None)
        if missing:
            report.skipped[h.id] = missing
        else:
            runnable.add(h.id)
    report.checks_run = [h.id for h in HEALTH_CHECKS if h.id in runnable]
    # The controller log is parsed and scanned in a child forked now (:mod:`kueuediag.health.log_side`), while this
    # process works out each queue's order and the cluster's violation pass, which do not read it: the report's
    # sections and the first ClusterQueue (which works out what the workers inherit) then find both done.
    side = log_side.start(snap) if snap.logs_text and split_jobs(snap, jobs) >= 2 else None
    queue_heads = QueueHeads(snap, scope, classes, sel.why_settings, all_pending)
    pool = None

    def timed(name: str, fn: Callable[[], None]) -> None:
        t0 = time.perf_counter()
        fn()
        report.timings_ms[name] = round((time.perf_counter() - t0) * 1000, 1)

    def add(items: list[Item]) -> None:
        report.items.extend(i for i in items if i.check in runnable)

    def queues() -> None:
        ruling = kd101_ruling(snap, sel) if "guarantee-violation" in runnable else None
        report.queues = queue_rows(snap, scope, ruling)
        report.cohorts = cohort_rows(snap, scope)
        if "guarantee-violation" in runnable:
            add(guarantee_items(snap, scope, sel, settings, ruling))
        for check, fn in (("fair-sharing", fair_sharing_items), ("queue-inactive", inactive_items)):
            if check in runnable:
                add(fn(snap, scope, sel, settings))

    def flavors() -> None:
        report.flavors = flavor_rows(snap, scope, sel)
        if "fragmentation" in runnable:
            add(fragmentation_items(snap, scope, sel, settings))

    def rates() -> None:
        report.rates = rate_rows(snap, scope, sel)
        if runnable & {"admission-trickle", "admission-stall", "preemption-trickle"}:
            add(rate_items(snap, scope, sel, settings))

    def stuck() -> None:
        add(workload_items(snap, scope, sel, settings))
        add(system_items(snap, scope, sel, settings))
        if "known-issues" in runnable:
            add(known_issue_items(snap, sel, settings))

    def heads() -> None:
        if "pending-heads" not in runnable:
            return
        if pool is not None:
            for head, item in pool.run():
                add([item])
                report.heads.append(head)
            return
        for cq in sorted(scope.cluster_queues):
            for head, item, text in diagnosed(queue_heads, sink, cq, keep_verdicts):
                add([item])
                if sink is not None:
                    sink.write(text)
                report.heads.append(head)

    try:
        plan = _plan(queue_heads, sorted(scope.cluster_queues), jobs) \
            if "pending-heads" in runnable and not keep_verdicts else None
        if side is not None:
            if runnable & {"guarantee-violation", "pending-heads"}:  # the quota section and KD101 read it
                _violations_ahead(snap)
            log_side.install(snap, side.result())  # result() reaps the child
        if plan is not None:  # the first ClusterQueue is diagnosed here, then the workers are forked
            busy, workers = plan
            pool = HeadPool(busy, lambda cq: diagnosed(queue_heads, sink, cq), workers, sink)
        timed("queues", queues)
        timed("flavors", flavors)
        timed("rates", rates)
        timed("stuck", stuck)
        timed("heads", heads)
    finally:
        if side is not None:
            side.stop()
        if pool is not None:
            pool.close()
    return report


def diagnosed(queue_heads: QueueHeads, sink: HeadSink | None, cq: str,
              keep_verdicts: bool = False) -> Iterator[tuple[Head, Item, bytes]]:
    """One ClusterQueue's heads: each head (its verdict dropped unless kept), its item and its sink output."""
    for head in queue_heads.of_queue(cq):
        assert head.verdict is not None
        text = sink.render(head.verdict) if sink is not None else b""
        yield (head if keep_verdicts else dataclasses.replace(head, verdict=None)), head_item(head, head.verdict), text


def _violations_ahead(snap: Snapshot) -> None:
    """The cluster's violation pass (KD101's and the quota section's, memoised), worked out while the log child
    runs. It is pure, so working it out early changes nothing; if it fails, it fails again where it is used
    (nothing is memoised), as it would have."""
    try:
        guarantee_violations(snap)
    except Exception:  # noqa: BLE001, S110 - reported where it is used, not here
        pass


def _plan(queue_heads: QueueHeads, queues: list[str], jobs: int | None) -> tuple[list[str], int] | None:
    """The ClusterQueues with heads and how many processes share them, or None when one process will do (one
    job, no fork, fewer than two queues with heads, too few heads for `None`). Each queue's order is worked out
    here, before any fork, and inherited by every worker."""
    wanted = auto_jobs() if jobs is None else jobs
    if wanted < 2 or not can_fork():
        return None
    try:
        counts = {cq: len(queue_heads.entries(cq)) for cq in queues}
    except KueuediagError:
        return None  # the serial scan reports it where it arises, after the heads before it
    busy = [cq for cq in queues if counts[cq]]
    if len(busy) < 2 or (jobs is None and sum(counts.values()) < AUTO_JOBS_MIN_HEADS):
        return None
    return busy, min(wanted, len(busy))
