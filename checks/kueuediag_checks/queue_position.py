"""KD601 queue-position: the workload would fit, but others are ahead of it in the ClusterQueue."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from kueuediag.analysis.queue_ahead import ahead_of, fits_after
from kueuediag.analysis.queue_order import QueueEntry, pending_queue, queue_entry
from kueuediag.analysis.quota_fit import WorkloadFit, workload_fit
from kueuediag.causes import CauseSlug
from kueuediag.check import Check
from kueuediag.models import CheckResult, Confidence, Evidence, Finding, Severity, ev
from kueuediag.quantity import ZERO, format_quantity
from kueuediag.snapshot.kueue import FlavorResource, kueue_index
from kueuediag.snapshot.model import Part, Snapshot
from kueuediag.target import Target
from kueuediag.timeutil import human_duration


class QueuePosition(Check):
    """Reconstructs Kueue's queue order in the ClusterQueue and reports work ahead that blocks the workload.

    What it detects:
        A pending Workload that fits the ClusterQueue's quota right now (recomputed per flavor and resource)
        but is not first in line. Kueue orders a ClusterQueue's pending workloads by: a preemptor waiting for
        its victims first, then higher effective priority (`spec.priority`, resolved from the
        WorkloadPriorityClass or PriorityClass), then the earlier queue-order timestamp (creation time, or the
        eviction time after a PodsReady timeout or admission-check eviction), then UID. The check fires
        (`queued-behind`) when a `StrictFIFO` head that does not fit blocks the queue, or when the workloads
        ahead that fit would use up the quota the workload needs.

    Why the workload stays pending:
        The scheduler takes the head of each ClusterQueue per cycle. With `queueingStrategy: StrictFIFO` a
        head that does not fit stays at the head and nothing behind it is admitted, even small workloads that
        would fit. With `BestEffortFIFO` a head that does not fit is set aside, but workloads ahead that do fit
        — usually higher-priority ones — are admitted first and take the free quota.

    Evidence:
        The ClusterQueue's `spec.queueingStrategy`; for each workload ahead its effective priority
        (`spec.priority`, `spec.priorityClassRef` / v1beta1 `spec.priorityClassName`), creation time and
        requests; the recomputed quota. The position matches the visibility API's `positionInClusterQueue`
        (0-based there, 1-based here) and kueuectl's POSITION IN QUEUE column.

    How to fix:
        StrictFIFO head: fix or delete the head workload (it does not fit: reduce it or raise quota), or switch
        the ClusterQueue to `queueingStrategy: BestEffortFIFO`. Higher-priority work ahead: wait, or raise the
        job's priority with the label `kueue.x-k8s.io/priority-class=<WorkloadPriorityClass>`. Check the live
        order with `kubectl get --raw /apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/<cq>/pendingworkloads`.

    Example:
        `position 3 in ClusterQueue shared-gpu (2 ahead, 6 nvidia.com/gpu): higher-priority work ahead takes
        the free quota [queued-behind]`
    """

    code = "KD601"
    name = "queue-position"
    requires = (Part.WORKLOADS, Part.QUEUES)
    default_severity = Severity.MEDIUM
    options = {"max_listed": 5}

    def run(self, snapshot: Snapshot, target: Target) -> CheckResult:
        w = target.workload
        assert w is not None
        cq_name = target.cluster_queue(snapshot)
        idx = kueue_index(snapshot)
        if not cq_name or cq_name not in idx.cluster_queues:
            why = snapshot.part_unavailable(Part.QUEUES)
            if why:
                return CheckResult.could_not_check("ClusterQueues", why)
            return CheckResult.not_applicable("the workload's ClusterQueue does not exist (KD001 reports it)")
        if not idx.cluster_queues[cq_name].active or idx.cluster_queues[cq_name].stop_policy != "None":
            # nothing is admitted from a stopped or inactive ClusterQueue: KD003's
            return CheckResult.not_applicable(f"ClusterQueue {cq_name} is stopped or inactive (KD003 reports it)")
        entry = queue_entry(snapshot, cq_name, w)
        if entry is None:
            return CheckResult.not_applicable(f"the workload is not pending in ClusterQueue {cq_name}")
        cq_ev = ev("derived", f"position {entry.position} of {len(pending_queue(snapshot, cq_name))} pending "
                              f"workload(s) in ClusterQueue {cq_name}", kind="ClusterQueue", name=cq_name,
                   field="pending workloads (priority, then queue-order time)")
        if entry.position == 1:
            return CheckResult.ruled_out(cq_ev, reason="it heads its ClusterQueue")
        fit = workload_fit(snapshot, w, cq_name)
        if fit is None or not fit.fits:
            # does not fit on its own: quota (KD102) explains it, not the order
            return CheckResult.ruled_out(cq_ev, ev("derived", "the request does not fit on its own: quota, not "
                                                   "order, holds it (KD102)", kind="ClusterQueue", name=cq_name))
        cq = idx.cluster_queues[cq_name]
        ahead = pending_queue(snapshot, cq_name)[: entry.position - 1]
        walk = ahead_of(snapshot, cq_name, entry.position)
        fitting, head_blocker, consumed = walk.fitting, walk.head_blocker, walk.consumed
        starved = not fits_after(fit, consumed) if fitting else False
        if head_blocker is None and not starved:
            return CheckResult.ruled_out(cq_ev, ev(
                "derived", f"{len(fitting)} workload(s) ahead fit together with it; no StrictFIFO head blocks",
                kind="ClusterQueue", name=cq_name, field="spec.queueingStrategy"))
        return CheckResult.fired([
            self._finding(snapshot, cq_name, cq.queueing_strategy, entry, ahead, fitting, head_blocker, fit, consumed)
        ])

    def _finding(
        self,
        snap: Snapshot,
        cq: str,
        strategy: str,
        entry: QueueEntry,
        ahead: list[QueueEntry],
        fitting: list[QueueEntry],
        head: QueueEntry | None,
        fit: WorkloadFit,
        consumed: Mapping[FlavorResource, Decimal],
    ) -> Finding:
        w = entry.workload
        n = len(ahead)
        totals: dict[str, Decimal] = defaultdict(lambda: ZERO)
        for e in ahead:
            for r, q in e.workload.total_requests().items():
                totals[r] += q
        key = _key_resources(fit, totals)
        summed = ", ".join(f"{format_quantity(totals[r], r)} {r}" for r in key)
        higher = [e for e in ahead if e.priority > entry.priority]
        limit = int(self.opts["max_listed"])
        if head is not None:
            hf = workload_fit(snap, head.workload, cq)
            hv = hf.verdict.value if hf is not None else "unknown"
            why = f"the StrictFIFO head {head.workload.ref()} does not fit ({hv}) and blocks every workload behind it"
            confidence = Confidence.HIGH
        elif any(e.sticky for e in fitting):
            why = "a preemptor ahead waits for its victims and will take the quota they release"
            confidence = Confidence.MEDIUM
        elif fitting and all(e.priority > entry.priority for e in fitting):
            why = "higher-priority work ahead takes the free quota"
            confidence = Confidence.MEDIUM
        else:
            why = "workloads ahead that fit take the free quota first"
            confidence = Confidence.MEDIUM
        title = f"position {entry.position} in ClusterQueue {cq} ({n} ahead{', ' + summed if summed else ''}): {why}"
        lines = []
        for e in ahead[:limit]:
            req = (
                ", ".join(
                    f"{format_quantity(q, r)} {r}" for r, q in sorted(e.workload.total_requests().items()) if r in key
                )
                or "no quota-relevant requests"
            )
            age = snap.age_seconds(e.order_time)
            tag = " (preemptor waiting for victims)" if e.sticky else ""
            lines.append(
                f"#{e.position} {e.workload.ref()} priority {e.priority}{_class(e)}, queued {human_duration(age)} ago, "
                f"{req}{tag}"
            )
        more = f" and {n - limit} more" if n > limit else ""
        me = ", ".join(f"{format_quantity(q, r)} {r}" for r, q in sorted(w.total_requests().items()) if r in key)
        if head is not None:
            detail = (
                f"ClusterQueue {cq} uses queueingStrategy StrictFIFO: the scheduler keeps retrying the head and "
                f"admits nothing behind it until it fits, although this workload ({me}) fits the free quota now."
            )
        else:
            left = _left_after(fit, consumed)
            detail = (
                f"This workload ({me}) fits the free quota on its own, but the scheduler admits the workloads "
                f"ahead first and they would leave {left}, not enough for it."
            )
        message = (
            f"The workload is at position {entry.position} of {len(pending_queue(snap, cq))} pending in "
            f"ClusterQueue {cq} ({strategy}), priority {entry.priority}. {detail} Ahead of it: "
            f"{'; '.join(lines)}{more}."
        )
        evidence: list[Evidence] = [
            ev("object", f"queueingStrategy {strategy}", kind="ClusterQueue", name=cq, field="spec.queueingStrategy"),
            ev(
                "derived",
                f"position {entry.position} of {len(pending_queue(snap, cq))} (visibility API positionInClusterQueue "
                f"{entry.position - 1}), priority {entry.priority}, queued "
                f"{human_duration(snap.age_seconds(entry.order_time))} ago, fits the free quota on its own "
                f"({fit.verdict.value})",
                kind="Workload",
                name=w.name,
                namespace=w.namespace,
                field="spec.priority, metadata.creationTimestamp",
            ),
        ]
        for e in ([head] if head is not None else []) + [e for e in fitting if e is not head][:limit]:
            evidence.append(
                ev(
                    "derived",
                    f"position {e.position}, priority {e.priority}, queued "
                    f"{human_duration(snap.age_seconds(e.order_time))} ago, "
                    f"{'does not fit' if e is head else 'preemptor waiting for its victims' if e.sticky else 'fits'}",
                    kind="Workload",
                    name=e.workload.name,
                    namespace=e.workload.namespace,
                    field="spec.priority, metadata.creationTimestamp",
                )
            )
        remediation: list[str] = []
        if head is not None:
            remediation += [
                f"Fix or remove the head: kubectl describe workload -n {head.workload.namespace} "
                f"{head.workload.name} (reduce its request or raise the quota it needs).",
                f"Or switch ClusterQueue {cq} to spec.queueingStrategy: BestEffortFIFO so workloads that fit can "
                "pass a head that does not.",
            ]
        if higher:
            remediation.append(
                "Raise this job's priority: label it kueue.x-k8s.io/priority-class=<WorkloadPriorityClass> with a "
                f"value above {max(e.priority for e in higher)} (kubectl get workloadpriorityclasses)."
            )
        remediation.append(
            f"Live order: kubectl get --raw /apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/{cq}/pendingworkloads"
        )
        data: dict[str, Any] = {
            "cluster_queue": cq,
            "strategy": strategy,
            "position": entry.position,
            "ahead": n,
            "ahead_resources": {r: format_quantity(q, r) for r, q in sorted(totals.items())},
            "higher_priority_ahead": len(higher),
            "fitting_ahead": len(fitting),
            "head_blocker": head.workload.ref() if head is not None else None,
            "priority": entry.priority,
        }
        return self.finding(
            CauseSlug.QUEUED_BEHIND,
            title,
            message,
            severity=Severity.MEDIUM,
            confidence=confidence,
            evidence=evidence,
            remediation=remediation,
            data=data,
        )


def _class(e: QueueEntry) -> str:
    w = e.workload
    return f" ({w.priority_class_kind or 'priority class'} {w.priority_class})" if w.priority_class else ""


def _left_after(fit: WorkloadFit, consumed: Mapping[FlavorResource, Decimal]) -> str:
    parts = []
    for _, ff in fit.chosen():
        for r in ff.resources:
            left = max(ZERO, r.quota.available - consumed.get((ff.flavor, r.resource), ZERO))
            if r.needed > left:
                parts.append(
                    f"{format_quantity(left, r.resource)} {r.resource} in flavor {ff.flavor} "
                    f"(needs {format_quantity(r.needed, r.resource)})"
                )
    return ", ".join(parts) or "too little"


def _key_resources(fit: WorkloadFit, totals: dict[str, Decimal]) -> list[str]:
    """Resources worth summing: the extended resources (GPUs) if any, else everything the queue covers."""
    covered = sorted({r.resource for _, ff in fit.chosen() for r in ff.resources})
    extended = [r for r in covered if "/" in r]
    chosen = extended or covered
    return [r for r in chosen if totals.get(r, ZERO) > ZERO] or chosen
