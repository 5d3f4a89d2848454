"""KD102 quota: does the workload wait for quota, for a preemption, or can it never fit?"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from kueuediag.analysis.messages import PendingMessage, Reason, ReasonKind, parse_pending_message
from kueuediag.analysis.pod_termination import describe_termination
from kueuediag.analysis.preemption_victims import evented_victims, preemption_cause, victim_facts, victims_of
from kueuediag.analysis.queue_order import queue_entry
from kueuediag.analysis.quota_fit import FitVerdict, ResourceFit, WorkloadFit, fit_facts, workload_fit
from kueuediag.analysis.quota_summary import QuotaHolders, quota_holders
from kueuediag.analysis.quota_tree import quota_tree
from kueuediag.analysis.spec_patches import quantity, set_nominal_quota
from kueuediag.causes import CauseSlug
from kueuediag.check import Check
from kueuediag.models import CheckResult, Confidence, Evidence, Finding, Fix, Outcome, Severity, ev
from kueuediag.quantity import ZERO, format_quantity
from kueuediag.snapshot.k8s import Condition
from kueuediag.snapshot.kueue import WorkloadState, WorkloadView, kueue_index
from kueuediag.snapshot.model import Part, Snapshot
from kueuediag.target import Target
from kueuediag.timeutil import human_duration

_EVICTION_REASONS = (
    "Preempted",
    "PodsReadyTimeout",
    "AdmissionCheck",
    "ClusterQueueStopped",
    "LocalQueueStopped",
    "NodeFailures",
    "FlavorMigration",
    "InactiveWorkload",
)


def _fmt(q: Decimal, resource: str) -> str:
    return format_quantity(q, resource)


class QuotaCheck(Check):
    """Explains quota waits: what the workload needs, what is free, what could be borrowed, who holds it.

    What it detects:
        A pending Workload (no quota reserved) whose `QuotaReserved` condition — reason `Pending`, or the
        granular `WaitingForQuota`, `ExceedsMaxQuota`, `WaitingForPreemptedWorkloads`, `PendingEvaluation`
        (UnadmittedWorkloadsObservability) — says the scheduler could not reserve quota, or that has no
        `QuotaReserved` condition at all yet. Every message variant from v0.10 to v0.19 is understood
        (`insufficient unused quota for R in flavor F, N more needed`, `insufficient quota for R in flavor F,
        request > maximum capacity (A > B)` before v0.15, `... previously considered podsets requests (P) +
        current podset request (A) > maximum capacity (B)` since v0.15, `. Pending the preemption of N
        workload(s)`). The quota is then recomputed from the ClusterQueue, its cohort tree and every Workload
        holding quota, per pod set, flavor (in ClusterQueue order, honouring flavor nodeLabels and nodeTaints)
        and resource, so the finding says how much is needed, free in nominal quota, borrowable from the
        cohort right now, the maximum capacity, and who holds the quota: the ClusterQueue's own workloads, or
        other ClusterQueues of the cohort borrowing above their nominal quota. When the recomputation shows the
        workload fits now, Kueue's verdict is stale and quota is ruled out (the check stays clear); the queue
        order (KD601) or a guarantee violation (KD101) then explains the wait. Submission-layer messages
        (LocalQueue/ClusterQueue missing, namespace selector, taints/affinity) belong to KD001/KD003-KD005.

    Why the workload stays pending:
        Kueue admits a workload only when, for every requested resource, the chosen flavor has enough
        unused nominal quota plus quota the ClusterQueue may borrow from its cohort (within borrowingLimit,
        the lenders' lendingLimit and the borrowingLimit of intermediate cohorts). `exceeds-max-quota`: the
        request is larger than nominal quota plus everything borrowable in every flavor the pods may use —
        it can never be admitted as submitted. `waiting-for-quota`: it would fit once other workloads finish
        or are preempted. `preemption-in-progress`: Kueue already evicted victims and waits for them to
        release their quota. `not-yet-evaluated`: the scheduler has not looked at the workload yet.

    Evidence:
        The Workload's `status.conditions[type=QuotaReserved]` reason and message; the ClusterQueue's
        `spec.resourceGroups` (nominalQuota, borrowingLimit, lendingLimit) and `status.flavorsReservation`;
        the Workloads holding quota (`status.admission.podSetAssignments`); borrowing ClusterQueues of the
        cohort; preemption victims (Workloads with `Evicted` reason `Preempted` whose `Preempted` message
        names this workload's UID).

    How to fix:
        Never fits: reduce the request (fewer or smaller pods), or raise `nominalQuota`/`borrowingLimit` of
        the ClusterQueue (or the lenders' `lendingLimit`). Waiting: wait for running workloads to finish,
        raise the workload's priority (WorkloadPriorityClass label `kueue.x-k8s.io/priority-class`) with
        `preemption.withinClusterQueue: LowerPriority`, or let the ClusterQueue reclaim lent quota with
        `preemption.reclaimWithinCohort: Any`. Preemption in progress: look at the victims' pods (long
        termination grace periods, stuck finalizers).

    Example:
        `needs 16 nvidia.com/gpu in flavor a100: 4 free in nominal quota, 2 borrowable [waiting-for-quota]` —
        quota held by 3 workloads of ClusterQueue team-a (12) and borrowed by ClusterQueue team-b (+6).
    """

    code = "KD102"
    name = "quota"
    requires = (Part.WORKLOADS,)
    default_severity = Severity.MEDIUM
    options = {
        "evaluation_grace_seconds": 60,
        "evaluation_slow_seconds": 600,
        "max_listed": 5,
        "long_queue": 50,
    }

    # --- entry point ----------------------------------------------------------------------------------------
    def run(self, snapshot: Snapshot, target: Target) -> CheckResult:
        """:meth:`_run`, with what the one fit function concluded recorded in every finding's data["facts"]."""
        result = self._run(snapshot, target)
        w = target.workload
        cq_name = target.cluster_queue(snapshot)
        if result.outcome is not Outcome.FIRED or w is None or not cq_name \
                or cq_name not in kueue_index(snapshot).cluster_queues:
            return result
        facts = fit_facts(w, workload_fit(snapshot, w, cq_name))
        return result.model_copy(update={
            "findings": tuple(f.model_copy(update={"data": {**f.data, "facts": {**facts, **f.data.get("facts", {})}}})
                              for f in result.findings),
            "contributions": tuple(
                c.model_copy(update={"data": {**c.data, "facts": {**facts, **c.data.get("facts", {})}}})
                for c in result.contributions),
        })

    def _run(self, snapshot: Snapshot, target: Target) -> CheckResult:
        w = target.workload
        assert w is not None
        done = (WorkloadState.ADMITTED, WorkloadState.FINISHED, WorkloadState.QUOTA_RESERVED)
        if w.holds_quota or w.state in done or not w.active:
            why = "holds quota" if w.holds_quota else f"is {w.state}" if w.active else "is deactivated"
            return CheckResult.not_applicable(f"the workload {why}: quota does not hold it back")
        found = self._diagnose(snapshot, target, w)
        if isinstance(found, CheckResult):
            return found
        cq_name = target.cluster_queue(snapshot)
        fit = workload_fit(snapshot, w, cq_name) if cq_name in kueue_index(snapshot).cluster_queues else None
        evidence = [self._cond_ev(w, w.cond("QuotaReserved"))]
        if fit is not None:
            evidence.append(ev("derived", f"recomputed against ClusterQueue {cq_name}: {fit.verdict.value}",
                               kind="ClusterQueue", name=cq_name, field="spec.resourceGroups"))
        if _in_backoff(snapshot, w):
            evidence.append(ev("object", "in requeue backoff (status.requeueState.requeueAt): KD701 reports it",
                               kind="Workload", name=w.name, namespace=w.namespace, field="status.requeueState"))
        return self.result(found, *evidence)

    def _diagnose(self, snapshot: Snapshot, target: Target, w: WorkloadView) -> list[Finding] | CheckResult:
        cq_name = target.cluster_queue(snapshot)
        idx = kueue_index(snapshot)
        hidden = snapshot.part_unavailable(Part.QUEUES)
        if (not cq_name or cq_name not in idx.cluster_queues) and hidden is not None:
            # Namespace-only permissions: the queues are not visible, Kueue's own message still is.
            return self._message_only(snapshot, w, hidden)
        if not cq_name or cq_name not in idx.cluster_queues:
            return CheckResult.not_applicable("its LocalQueue or ClusterQueue does not exist (KD001 reports it)")
        cq_view = idx.cluster_queues[cq_name]
        lq = idx.local_queues.get((w.namespace, w.queue_name or ""))
        lq_active = lq is None or (
            lq.stop_policy == "None" and ("Active" not in lq.conditions or lq.conditions["Active"].true)
        )
        if not cq_view.active or cq_view.stop_policy != "None" or not lq_active:
            return CheckResult.not_applicable("its queue is stopped or inactive (KD003 reports it)")
        fit = workload_fit(snapshot, w, cq_name)
        qr = w.cond("QuotaReserved")
        if qr is None:
            return self._never_evaluated(snapshot, w, cq_name, fit)
        pm = parse_pending_message(qr.message)
        cause = self._cause_from_condition(w, qr, pm)
        if cause is None:
            return []
        if cause == "evicted":
            return self._after_eviction(snapshot, w, cq_name, fit, qr)
        if cause == "not-yet-evaluated":
            return [self._not_evaluated(snapshot, w, cq_name, qr)]
        if cause == "preemption-in-progress":
            return [self._preemption(snapshot, w, cq_name, fit, qr, pm)]
        if fit is not None and fit.fits and cause in ("exceeds-max-quota", "waiting-for-quota"):
            # Kueue's verdict predates a quota release: quota is ruled out, the reason lies elsewhere
            # (queue order KD601, guarantee violation KD101, controller health)
            return CheckResult.ruled_out(
                ev("derived", f"recomputed: the request fits in ClusterQueue {cq_name} now ({fit.verdict.value})",
                   kind="ClusterQueue", name=cq_name, field="status.flavorsUsage", expected="does not fit"),
                self._cond_ev(w, qr), reason="Kueue's message predates a quota release")
        if cause == "exceeds-max-quota":
            if fit is None or fit.never_fits or fit.verdict == FitVerdict.NO_MATCHING_FLAVOR:
                return [self._exceeds(snapshot, w, cq_name, fit, qr, pm)]
            # the quota changed since Kueue wrote the condition: the recomputation decides
            return [self._waiting(snapshot, w, cq_name, fit, qr, pm)]
        # waiting-for-quota, unless the recomputation proves it can never fit any more
        if fit is not None and fit.never_fits:
            return [self._exceeds(snapshot, w, cq_name, fit, qr, pm)]
        return [self._waiting(snapshot, w, cq_name, fit, qr, pm)]

    # --- queues not visible -------------------------------------------------------------------------------------
    def _message_only(self, snap: Snapshot, w: WorkloadView, hidden: str) -> list[Finding]:
        """Classify from the QuotaReserved condition alone when ClusterQueues cannot be read (medium confidence)."""
        qr = w.cond("QuotaReserved")
        if qr is None:
            age = snap.age_seconds(w.created) or 0.0
            if age < self.opts["evaluation_grace_seconds"]:
                return []
            return [self.finding(
                CauseSlug.NOT_YET_EVALUATED, f"no QuotaReserved condition after {human_duration(age)}",
                "Kueue has not written a QuotaReserved condition yet. The ClusterQueue could not be read "
                f"({hidden}), so the quota could not be recomputed.",
                confidence=Confidence.MEDIUM, evidence=[self._cond_ev(w, None)],
            )]
        pm = parse_pending_message(qr.message)
        cause = self._cause_from_condition(w, qr, pm)
        if cause not in ("waiting-for-quota", "exceeds-max-quota", "preemption-in-progress", "not-yet-evaluated"):
            return []
        short = _first(pm, ReasonKind.INSUFFICIENT_UNUSED_QUOTA) or _first(pm, ReasonKind.EXCEEDS_MAX_QUOTA)
        if short is not None and short.resource and short.amount is not None:
            what = (f"{format_quantity(short.amount, short.resource)} more {short.resource} needed in flavor "
                    f"{short.flavor}" if short.kind == ReasonKind.INSUFFICIENT_UNUSED_QUOTA else
                    f"requests {format_quantity(short.amount, short.resource)} {short.resource} in flavor "
                    f"{short.flavor}, maximum capacity {short.capacity}")
        else:
            what = qr.message[:160]
        if pm.preempting:
            what += f"; pending the preemption of {pm.preempting} workload(s)"
        position = _visible_position(snap, w)
        since = snap.age_seconds(qr.last_transition)
        title = f"{what} (from Kueue's message; ClusterQueue not visible)"
        message = (
            f"Kueue reports: {qr.message}. kueuediag could not read the ClusterQueue ({hidden}), so it cannot "
            "recompute quota or say who holds it; this comes from the Workload's own condition"
            + (f", unchanged for {human_duration(since)}" if since is not None else "") + "."
            + (f" Position {position}." if position else "")
        )
        evidence = [self._cond_ev(w, qr)]
        if position:
            evidence.append(ev("object", position, kind="PendingWorkloadsSummary", name=w.queue_name or "?",
                               namespace=w.namespace, field="items[].positionInLocalQueue"))
        severity = Severity.HIGH if cause == "exceeds-max-quota" else self.default_severity
        return [self.finding(
            cause, title, message, severity=severity, confidence=Confidence.MEDIUM, evidence=evidence,
            remediation=[
                "Ask a cluster admin to run `kueuediag why` with cluster-wide read access for the full picture "
                "(quota, borrowers, queue order).",
                *self.finding(cause, "", "").remediation,
            ],
        )]

    # --- classification -------------------------------------------------------------------------------------
    @staticmethod
    def _cause_from_condition(w: WorkloadView, qr: Condition, pm: PendingMessage) -> str | None:
        """Map the QuotaReserved=False condition to one of our causes (None: not about quota)."""
        reason = qr.reason
        if reason == "WaitingForPreemptedWorkloads" or pm.preempting or pm.preemption_failed:
            return "preemption-in-progress"
        if pm.has(ReasonKind.OVERLAPPING_DEFERRED):
            return "preemption-in-progress"
        if reason == "ExceedsMaxQuota":
            return "exceeds-max-quota"
        if reason == "WaitingForQuota":
            return "waiting-for-quota"
        if reason == "PendingEvaluation" or pm.has(ReasonKind.PENDING_EVALUATION, ReasonKind.BYPASSED):
            return "not-yet-evaluated"
        evicted = w.cond("Evicted")
        if reason in _EVICTION_REASONS or (evicted is not None and evicted.true and qr.message == evicted.message):
            return "evicted"
        if pm.has(ReasonKind.EXCEEDS_MAX_QUOTA) and not pm.has(
            ReasonKind.INSUFFICIENT_UNUSED_QUOTA, ReasonKind.NO_LONGER_FITS, ReasonKind.OVERLAPPING_TARGETS
        ):
            return "exceeds-max-quota"
        if pm.has(ReasonKind.INSUFFICIENT_UNUSED_QUOTA, ReasonKind.NO_LONGER_FITS, ReasonKind.OVERLAPPING_TARGETS):
            return "waiting-for-quota"
        # submission layer (KD001, KD003-KD006), admission gates, PodsReady blocking, TAS placement: not quota
        return None

    # --- no condition at all --------------------------------------------------------------------------------
    def _never_evaluated(self, snap: Snapshot, w: WorkloadView, cq: str, fit: WorkloadFit | None) -> list[Finding]:
        out: list[Finding] = []
        if fit is not None and fit.never_fits:
            out.append(self._exceeds(snap, w, cq, fit, None, None))
        if not _in_backoff(snap, w):
            out.append(self._not_evaluated(snap, w, cq, None))
        return out

    def _not_evaluated(
        self, snap: Snapshot, w: WorkloadView, cq: str, qr: Condition | None, evicted: bool = False
    ) -> Finding:
        since = (qr.last_transition if evicted and qr is not None else None) or w.queue_order_time or w.created
        age = snap.age_seconds(since)
        grace = float(self.opts["evaluation_grace_seconds"])
        slow = float(self.opts["evaluation_slow_seconds"])
        if age is None or age < grace:
            severity, verdict = Severity.LOW, "which is normal: a scheduling cycle takes seconds"
        elif age < slow:
            severity, verdict = Severity.MEDIUM, "longer than usual: the scheduler may be busy with a long queue"
        else:
            severity, verdict = (
                Severity.HIGH,
                (
                    "far longer than a scheduling cycle: check that the kueue-controller-manager is running and "
                    "holds the leader lease (kubectl -n kueue-system get pods,leases)"
                ),
            )
        entry = queue_entry(snap, cq, w)
        ahead = entry.position - 1 if entry is not None else 0
        strategy = kueue_index(snap).cluster_queues[cq].queueing_strategy
        long_queue = ahead >= int(self.opts["long_queue"])
        if age is not None and age >= grace and ((strategy == "StrictFIFO" and ahead) or long_queue):
            severity = min(severity, Severity.MEDIUM)
            verdict = (
                f"and {ahead} pending workload(s) are ahead of it in the {strategy} queue"
                + (
                    ": a StrictFIFO head that does not fit blocks everything behind it"
                    if strategy == "StrictFIFO"
                    else ""
                )
                + " (see the queue-position check, KD601)"
            )
        age_txt = human_duration(age) if age is not None else "an unknown time"
        if evicted and qr is not None:
            title = f"requeued after eviction ({qr.reason}) {age_txt} ago, not evaluated since"
            observed = f"QuotaReserved=False ({qr.reason}): {qr.message}"
            field = "status.conditions[type=QuotaReserved]"
            how = (
                f"The workload lost its quota reservation {age_txt} ago ({qr.reason}: {qr.message}) and is back in "
                f"ClusterQueue {cq}; the scheduler has not written a new verdict since, and the recomputed quota "
                "says it would fit now"
            )
        elif qr is None:
            title = f"not yet evaluated by the Kueue scheduler after {age_txt}"
            observed = "no QuotaReserved condition"
            field = "status.conditions"
            how = (
                "The Workload has no QuotaReserved or Admitted condition, so the Kueue scheduler has not tried to "
                f"reserve quota for it yet; it was queued {age_txt} ago in ClusterQueue {cq}"
            )
        else:
            title = f"pending evaluation in the scheduling queue for {age_txt}"
            observed = f"QuotaReserved=False ({qr.reason}): {qr.message}"
            field = "status.conditions[type=QuotaReserved]"
            how = (
                f"The QuotaReserved condition says the workload waits for evaluation ({qr.message}); it was queued "
                f"{age_txt} ago in ClusterQueue {cq}"
            )
        return self.finding(
            CauseSlug.NOT_YET_EVALUATED,
            title,
            f"{how}, {verdict}.",
            severity=severity,
            confidence=Confidence.MEDIUM if qr is None or evicted else Confidence.HIGH,
            evidence=[
                ev(
                    "condition",
                    observed,
                    kind="Workload",
                    name=w.name,
                    namespace=w.namespace,
                    field=field,
                    expected="QuotaReserved condition written by the scheduler",
                )
            ],
            data={
                "age_seconds": round(age, 1) if age is not None else None,
                "cluster_queue": cq,
                "ahead": ahead,
            },
        )

    # --- requeued after an eviction, not re-evaluated -------------------------------------------------------
    def _after_eviction(
        self, snap: Snapshot, w: WorkloadView, cq: str, fit: WorkloadFit | None, qr: Condition
    ) -> list[Finding]:
        if fit is None:
            return []
        if fit.never_fits:
            return [self._exceeds(snap, w, cq, fit, qr, None)]
        if fit.verdict == FitVerdict.NEEDS_PREEMPTION:
            return [self._waiting(snap, w, cq, fit, qr, None)]
        if fit.fits and not _in_backoff(snap, w):
            return [self._not_evaluated(snap, w, cq, qr, evicted=True)]
        return []  # in requeue backoff (status.requeueState.requeueAt): KD701's podsready-backoff

    # --- findings -------------------------------------------------------------------------------------------
    def _exceeds(
        self,
        snap: Snapshot,
        w: WorkloadView,
        cq: str,
        fit: WorkloadFit | None,
        qr: Condition | None,
        pm: PendingMessage | None,
    ) -> Finding:
        msg_reasons = pm.of(ReasonKind.EXCEEDS_MAX_QUOTA) if pm else []
        rf = _never_fitting(fit)
        evidence = [self._cond_ev(w, qr)] if qr is not None else []
        if rf is not None:
            res, flavor = rf.resource, rf.quota.flavor
            title = (
                f"needs {_fmt(rf.needed, res)} {res}, more than the maximum capacity "
                f"{_fmt(rf.quota.max_capacity, res)} in flavor {flavor}"
            )
            explain = rf.describe()
        elif msg_reasons:
            r = msg_reasons[0]
            res, flavor = r.resource or "?", r.flavor or "?"
            amount = _fmt(r.amount, res) if r.amount is not None else "?"
            cap = _fmt(r.capacity, res) if r.capacity is not None else "?"
            title = f"needs {amount} {res}, more than the maximum capacity {cap} in flavor {flavor}"
            explain = r.text
        else:  # pragma: no cover - callers guarantee one of both
            res, flavor, title, explain = "?", "?", "request exceeds the maximum capacity", ""
        sources = []
        if msg_reasons or (qr is not None and qr.reason == "ExceedsMaxQuota"):
            sources.append("Kueue's QuotaReserved condition")
        if rf is not None:
            sources.append("the recomputed quota of ClusterQueue " + cq)
            evidence.extend(self._quota_ev(snap, cq, rf))
        for r in msg_reasons:
            if r.flavor != flavor or r.resource != res:
                evidence.append(
                    ev(
                        "condition",
                        r.text,
                        kind="Workload",
                        name=w.name,
                        namespace=w.namespace,
                        field="status.conditions[type=QuotaReserved].message",
                    )
                )
        other = _other_flavors(fit, flavor)
        no_cohort = (
            " (it has no cohort, so only its nominal quota)" if rf is not None and not rf.quota.in_cohort else ""
        )
        message = (
            f"The workload can never be admitted as submitted: {explain}. Maximum capacity is nominal quota "
            f"plus "
            f"everything ClusterQueue {cq} may borrow from its cohort with no other usage at all"
            f"{no_cohort}"
            f". {other}Source: {' and '.join(sources) or 'the QuotaReserved condition'}."
        )
        if qr is None:
            message += " The scheduler has not written a condition yet; the recomputation alone proves it."
        min_counts = [p for p in w.pod_sets if p.min_count is not None]
        if min_counts:
            message += (
                f" Pod set {min_counts[0].name} allows partial admission down to {min_counts[0].min_count}"
                " pods; Kueue tries smaller counts before giving up."
            )
        cq_view = kueue_index(snap).cluster_queues.get(cq)
        raise_quota = (set_nominal_quota(cq_view, flavor, res, rf.quota.nominal + rf.needed - rf.quota.max_capacity)
                       if rf is not None and cq_view is not None and rf.needed > rf.quota.max_capacity else None)
        remediation = [
            f"Reduce the request of the job (fewer pods or fewer {res} per pod) so it is at most "
            f"{_fmt(rf.quota.max_capacity, res) if rf else 'the maximum capacity'} {res}"
            f"{_pods_hint(w, rf)}.",
            *([] if raise_quota is not None else [
                f"Or raise spec.resourceGroups[].flavors[name={flavor}].resources[name={res}].nominalQuota (or "
                f"borrowingLimit) of ClusterQueue {cq}."]),
            "Or submit to a LocalQueue whose ClusterQueue is large enough (label kueue.x-k8s.io/queue-name).",
        ]
        fixes = [] if raise_quota is None or rf is None else [Fix(
            text=f"Raise the nominalQuota of {res} in flavor {flavor} of ClusterQueue {cq} to "
                 f"{quantity(rf.quota.nominal + rf.needed - rf.quota.max_capacity)} (by "
                 f"{_fmt(rf.needed - rf.quota.max_capacity, res)}, what the request exceeds the maximum by); the "
                 f"flavor's nodes must hold it.",
            patch=raise_quota)]
        data = _fit_data(rf) if rf is not None else {"resource": res, "flavor": flavor}
        data["cluster_queue"] = cq
        # both sources agree, or the recomputation alone with no scheduler verdict to contradict it
        confidence = Confidence.HIGH if rf is not None and (len(sources) == 2 or qr is None) else Confidence.MEDIUM
        return self.finding(
            CauseSlug.EXCEEDS_MAX_QUOTA,
            title,
            message,
            severity=Severity.HIGH,
            confidence=confidence,
            evidence=evidence,
            remediation=remediation,
            data=data,
            fixes=fixes,
        )

    def _waiting(
        self,
        snap: Snapshot,
        w: WorkloadView,
        cq: str,
        fit: WorkloadFit | None,
        qr: Condition,
        pm: PendingMessage | None,
    ) -> Finding:
        blocking = fit.blocking() if fit is not None else []
        rf = blocking[0][1] if blocking else None
        named = _first(pm, ReasonKind.INSUFFICIENT_UNUSED_QUOTA) if pm else None
        if named is not None:  # the resource Kueue's own message names, when it still blocks
            rf = next((b for _, b in blocking if (b.resource, b.quota.flavor) == (named.resource, named.flavor)), rf)
        msg_reason = (_first(pm, ReasonKind.INSUFFICIENT_UNUSED_QUOTA)
                      or _first(pm, ReasonKind.EXCEEDS_MAX_QUOTA)) if pm else None
        evidence = [self._cond_ev(w, qr)]
        if rf is not None:
            title = rf.describe().split(", maximum capacity")[0]
            holders = quota_holders(snap, cq, rf.quota.flavor, rf.resource)
            evidence.extend(self._quota_ev(snap, cq, rf))
            evidence.extend(self._holder_ev(holders))
            who = self._who(holders, cq, rf.resource)
            detail = (
                f"Kueue needs {_fmt(rf.needed, rf.resource)} {rf.resource} in flavor {rf.quota.flavor} but "
                f"only {_fmt(max(ZERO, rf.quota.available), rf.resource)} is available now "
                f"({_fmt(rf.free_nominal, rf.resource)} unused nominal quota{_lent_part(rf)} + "
                f"{_fmt(rf.borrowable, rf.resource)} borrowable from the cohort); "
                f"{_fmt(rf.shortfall, rf.resource)} more needed.{_borrow_note(rf)}{_lent_note(rf)} {who}"
            )
            data = _fit_data(rf)
            data["holders"] = _holders_data(holders, int(self.opts["max_listed"]))
            remediation = self._wait_remediation(snap, w, cq, rf, holders)
        elif msg_reason is not None:
            res = msg_reason.resource or "?"
            title = f"{msg_reason.text} (stale: the recomputed quota fits now)"
            detail = (
                f"Kueue's last verdict was: {msg_reason.text}. The quota recomputed from the snapshot fits now, so "
                "that verdict is stale (quota was released since). A BestEffortFIFO ClusterQueue retries a "
                "workload it parked as inadmissible only after a relevant event; if it stays pending, the reason "
                "is elsewhere: the queue order (KD601), a guarantee violation (KD101) or the Kueue controller."
            )
            data = {"resource": res, "flavor": msg_reason.flavor}
            remediation = [
                "Wait for the next scheduling cycle; if it stays pending, look at the queue position "
                "(KD601) and the Kueue controller health."
            ]
        else:
            title = "waiting for quota"
            detail = f"Kueue reported: {qr.message}."
            data = {}
            remediation = None
        data["cluster_queue"] = cq
        if pm is not None and pm.has(ReasonKind.NO_LONGER_FITS):
            detail += (
                " Another workload of the cohort was admitted in the same scheduling cycle and took the "
                "quota first ('Workload no longer fits after processing another workload')."
            )
        if fit is not None and fit.partial:
            parts = ", ".join(f"{n} pod(s) of pod set {ps}" for ps, n in fit.partial)
            detail += f" With partial admission (minCount) Kueue may admit it with {parts}."
        detail += self._eviction_note(w)
        fits_later = fit is not None and fit.verdict == FitVerdict.NEEDS_PREEMPTION
        stale = rf is None and fit is not None and fit.fits
        return self.finding(
            CauseSlug.WAITING_FOR_QUOTA,
            title,
            f"The workload waits for quota in ClusterQueue {cq}. {detail}",
            # stale (the recomputation fits): an observation, not the cause
            severity=Severity.INFO if stale else Severity.MEDIUM,
            # the recomputation agrees (needs others to finish/preempt) or only the message speaks
            confidence=Confidence.HIGH if fits_later or (rf is None and msg_reason is None) else Confidence.MEDIUM,
            evidence=evidence,
            remediation=remediation,
            data=data,
        )

    def _preemption(
        self,
        snap: Snapshot,
        w: WorkloadView,
        cq: str,
        fit: WorkloadFit | None,
        qr: Condition,
        pm: PendingMessage,
    ) -> Finding:
        # the preemptor's own victims (its UID in their Preempted message, or a PreemptedWorkload event)
        found = sorted(victims_of(snap, w), key=lambda v: (v.workload.namespace, v.workload.name))
        victims = [v.workload for v in found]
        holding = [v.workload for v in found if v.holds_quota]
        known = {v.uid for v in victims}
        gone = [(name, uid, text) for name, uid, text in evented_victims(snap, w) if uid not in known]
        n = pm.preempting or pm.preemption_failed or len(victims) or None
        if pm.preemption_failed and not pm.preempting:
            title = f"preempting {n} workload(s) failed, Kueue will retry"
        elif n:
            title = f"pending the preemption of {n} workload(s)"
        else:
            title = "waiting for preempted workloads"
        if victims:
            names = ", ".join(v.ref() for v in victims[: int(self.opts["max_listed"])])
            title += f": {names}"
        evidence = [self._cond_ev(w, qr)]
        for v in victims:
            ev_cond = v.cond("Evicted")
            when = snap.age_seconds(ev_cond.last_transition) if ev_cond else None
            evidence.append(
                ev(
                    "condition",
                    f"Evicted=True (Preempted) {human_duration(when)} ago; "
                    f"{'still holds quota (QuotaReserved=True)' if v.holds_quota else 'quota released'}",
                    kind="Workload",
                    name=v.name,
                    namespace=v.namespace,
                    field="status.conditions[type=Evicted]",
                )
            )
        blocking = fit.blocking() if fit is not None else []
        extra = ""
        if blocking:
            extra = f" Without the victims' quota it {blocking[0][1].describe()}."
        if holding:
            oldest = max(
                ((snap.age_seconds(c.last_transition) or 0.0) for v in holding if (c := v.cond("Evicted"))),
                default=0.0,
            )
            extra += (
                f" {len(holding)} victim(s) still hold their quota (the oldest eviction was {human_duration(oldest)} "
                "ago)."
            )
            states = [f"{v.workload.ref()} pod {p.pod.name}: {describe_termination(snap, p.pod)}"
                      for v in found if v.holds_quota for p in v.active_pods[:1]]
            if states:
                extra += " " + "; ".join(states[: int(self.opts["max_listed"])]) + "."
        elif victims:
            extra += " The victims already released their quota: it should be admitted at the next cycle."
        if gone:
            extra += (
                f" {len(gone)} more victim(s) named by PreemptedWorkload events are no longer in the snapshot "
                f"(deleted or finished): {', '.join(name for name, _, _ in gone[: int(self.opts['max_listed'])])}."
            )
            for name, _, text in gone[: int(self.opts["max_listed"])]:
                evidence.append(
                    ev(
                        "event",
                        f"PreemptedWorkload: {text}",
                        kind="Workload",
                        name=w.name,
                        namespace=w.namespace,
                        field=f"events[reason=PreemptedWorkload] ({name})",
                    )
                )
        if pm.preemption_failed:
            extra += (
                f" The last attempt to preempt {pm.preemption_failed} workload(s) failed (API error or conflict); "
                "Kueue retries in the next cycle - check the kueue-controller-manager logs if it repeats."
            )
        message = (
            f"Kueue chose to preempt workloads to make room for this one in ClusterQueue {cq} and waits for "
            f"them to release their quota (QuotaReserved: {qr.message}).{extra}"
        )
        remediation = [
            "Usually nothing: the workload is admitted once the victims' pods terminate.",
            "If it takes long, inspect the victims' pods: kubectl get pods -n <ns> -l "
            "kueue.x-k8s.io/job-uid=<victim job uid> (long terminationGracePeriodSeconds, stuck finalizers, "
            "unreachable nodes).",
        ]
        # the victims' state decides the cause, by the one classification KD302 (its owner) uses too
        return self.finding(
            preemption_cause(found),
            title,
            message,
            severity=Severity.MEDIUM if holding or not victims else Severity.LOW,
            evidence=evidence,
            remediation=remediation,
            data={
                "cluster_queue": cq,
                "preempting": n,
                "victims": [v.ref() for v in victims],
                "victims_holding_quota": [v.ref() for v in holding],
                "facts": victim_facts(snap, found),
            },
        )

    # --- pieces ---------------------------------------------------------------------------------------------
    @staticmethod
    def _cond_ev(w: WorkloadView, qr: Condition | None) -> Evidence:
        observed = f"QuotaReserved={qr.status} ({qr.reason}): {qr.message}" if qr else "no QuotaReserved condition"
        return ev(
            "condition",
            observed,
            kind="Workload",
            name=w.name,
            namespace=w.namespace,
            field="status.conditions[type=QuotaReserved]",
            expected="True",
        )

    @staticmethod
    def _quota_ev(snap: Snapshot, cq: str, rf: ResourceFit) -> list[Evidence]:
        q = rf.quota
        r = rf.resource
        source = "recomputed from Workloads" if q.usage_source == "workloads" else "status.flavorsReservation"
        limits = []
        if q.borrowing_limit is not None:
            limits.append(f"borrowingLimit {_fmt(q.borrowing_limit, r)}")
        if q.lending_limit is not None:
            limits.append(f"lendingLimit {_fmt(q.lending_limit, r)}")
        out = [
            ev(
                "object",
                f"flavor {q.flavor} {r}: nominalQuota {_fmt(q.nominal, r)}"
                f"{', ' + ', '.join(limits) if limits else ''}; in use {_fmt(q.usage, r)} "
                f"({source}); "
                f"{_fmt(q.free_nominal, r)} free in nominal quota, {_fmt(q.borrowable, r)} borrowable now, "
                f"maximum capacity {_fmt(q.max_capacity, r)}",
                kind="ClusterQueue",
                name=cq,
                field=f"spec.resourceGroups[].flavors[name={q.flavor}]",
                expected=f"at least {_fmt(rf.needed, r)} available",
            )
        ]
        tree = quota_tree(snap)
        path = tree.path(cq)
        if path:
            out.append(ev("derived", f"cohort path {' → '.join([cq, *path])}", kind="Cohort", name=path[0]))
        if q.usage_mismatch and q.status_usage is not None:
            out.append(
                ev(
                    "object",
                    f"status.flavorsReservation says {_fmt(q.status_usage, r)} {r} in use, "
                    f"the Workloads hold {_fmt(q.usage, r)}",
                    kind="ClusterQueue",
                    name=cq,
                    field="status.flavorsReservation",
                )
            )
        return out

    def _holder_ev(self, holders: QuotaHolders) -> list[Evidence]:
        out = []
        r = holders.resource
        for h in holders.own[: int(self.opts["max_listed"])]:
            out.append(
                ev(
                    "object",
                    f"holds {_fmt(h.amount, r)} {r} in flavor {holders.flavor}",
                    kind="Workload",
                    name=h.name,
                    namespace=h.namespace,
                    field="status.admission.podSetAssignments",
                )
            )
        for h in holders.borrowers[: int(self.opts["max_listed"])]:
            out.append(
                ev(
                    "object",
                    f"borrows {_fmt(h.amount, r)} {r} above its nominal quota in flavor {holders.flavor}",
                    kind="ClusterQueue",
                    name=h.name,
                    field="status.flavorsReservation",
                )
            )
        if not holders.own:
            for h in holders.cohort[: int(self.opts["max_listed"])]:
                out.append(
                    ev(
                        "object",
                        f"holds {_fmt(h.amount, r)} {r} in flavor {holders.flavor} of ClusterQueue "
                        f"{h.cluster_queue}" + (f"; {h.note}" if h.note else ""),
                        kind="Workload",
                        name=h.name,
                        namespace=h.namespace,
                        field="status.admission.podSetAssignments",
                    )
                )
        return out

    def _who(self, holders: QuotaHolders, cq: str, r: str) -> str:
        parts = []
        limit = int(self.opts["max_listed"])
        if holders.own:
            listed = ", ".join(f"{h.namespace}/{h.name} ({_fmt(h.amount, r)})" for h in holders.own[:limit])
            more = f" and {len(holders.own) - limit} more" if len(holders.own) > limit else ""
            parts.append(
                f"{len(holders.own)} workload(s) of ClusterQueue {cq} hold "
                f"{_fmt(holders.own_total, r)} {r} in flavor {holders.flavor}: {listed}{more}"
            )
        if holders.borrowers:
            listed = ", ".join(f"{h.name} (+{_fmt(h.amount, r)})" for h in holders.borrowers[:limit])
            parts.append(
                f"other ClusterQueues of the cohort borrow {_fmt(holders.borrowed_total, r)} {r} above "
                f"their nominal quota: {listed}"
            )
        if not holders.own and holders.cohort:
            listed = ", ".join(f"{h.namespace}/{h.name} of {h.cluster_queue} ({_fmt(h.amount, r)}"
                               + (f"; {h.note}" if h.note else "") + ")" for h in holders.cohort[:limit])
            more = f" and {len(holders.cohort) - limit} more" if len(holders.cohort) > limit else ""
            total = sum((h.amount for h in holders.cohort), ZERO)
            parts.append(
                f"no workload of ClusterQueue {cq} holds quota in flavor {holders.flavor}; in the cohort "
                f"{len(holders.cohort)} workload(s) of other ClusterQueues hold {_fmt(total, r)} {r} there: "
                f"{listed}{more}"
            )
        if not parts:
            return "No workload of this ClusterQueue holds quota in that flavor."
        return "Who holds the quota: " + "; ".join(parts) + "."

    @staticmethod
    def _wait_remediation(
        snap: Snapshot, w: WorkloadView, cq: str, rf: ResourceFit, holders: QuotaHolders
    ) -> list[str]:
        view = kueue_index(snap).cluster_queues[cq]
        # Workloads are custom resources: the API server field-selects them only by metadata.name and
        # metadata.namespace, so the ClusterQueue filter happens client-side, on the "Reserved in" column.
        waited = [cq] if holders.own or not holders.cohort else sorted({h.cluster_queue for h in holders.cohort})
        out: list[str] = []
        stale = [h for h in (*holders.own, *holders.cohort) if h.note]
        for h in stale[:3]:  # quota held by a stopped job comes first: waiting for it may never end
            out.append(
                f"Workload {h.namespace}/{h.name} ({h.note}) reserves {_fmt(h.amount, rf.resource)} {rf.resource} "
                "while its job is stopped: if it is not requeued, deactivate it (kubectl patch workload -n "
                f"{h.namespace} {h.name} --type=merge -p '{{\"spec\":{{\"active\":false}}}}') or delete its job "
                "to release the quota."
            )
        out.append(f"Wait for running workloads of ClusterQueue {', '.join(waited)} to finish "
                   f"(kubectl get workloads -A | awk 'NR==1 || $4==\"{waited[0]}\"').")
        within = view.preemption.get("withinClusterQueue") or "Never"
        reclaim = view.preemption.get("reclaimWithinCohort") or "Never"
        if holders.own:
            if within == "Never":
                out.append(
                    f"To let higher-priority work preempt lower-priority work in {cq}, set "
                    "spec.preemption.withinClusterQueue: LowerPriority and give the job a higher "
                    "WorkloadPriorityClass (label kueue.x-k8s.io/priority-class)."
                )
            else:
                out.append(
                    "Raise the job's priority (label kueue.x-k8s.io/priority-class=<WorkloadPriorityClass>) "
                    f"so withinClusterQueue: {within} can preempt lower-priority workloads."
                )
        if holders.borrowers and rf.quota.lent_out > ZERO:
            if reclaim == "Never":
                out.append(
                    f"Other ClusterQueues borrow this ClusterQueue's nominal quota; set "
                    f"spec.preemption.reclaimWithinCohort: Any on ClusterQueue {cq} to reclaim it."
                )
            else:
                out.append(f"reclaimWithinCohort is {reclaim}: Kueue can reclaim the lent quota by preemption.")
        if holders.borrowers and rf.quota.usage + rf.needed > rf.quota.nominal:
            names = ", ".join(h.name for h in holders.borrowers[:3])
            borrow_policy = (view.preemption.get("borrowWithinCohort") or {}).get("policy") or "Never"
            out.append(
                f"The cohort's lendable quota is taken by {names}; this workload must borrow, which reclaim "
                "cannot provide. Wait for their workloads to finish"
                + (
                    f", or set spec.preemption.borrowWithinCohort.policy: LowerPriority on ClusterQueue {cq} so "
                    "it may preempt lower-priority workloads of the cohort while borrowing (classical preemption)."
                    if borrow_policy == "Never"
                    else "."
                )
            )
        out.append(f"Or raise nominalQuota of flavor {rf.quota.flavor} for {rf.resource} in ClusterQueue {cq}.")
        return out

    @staticmethod
    def _eviction_note(w: WorkloadView) -> str:
        evicted = w.cond("Evicted")
        if evicted is None or not evicted.true:
            return ""
        preempted = w.cond("Preempted")
        how = f" ({preempted.reason})" if preempted is not None and preempted.true else ""
        return f" It was evicted earlier: {evicted.reason}{how}: {evicted.message}"


def _visible_position(snap: Snapshot, w: WorkloadView) -> str:
    """Queue position from a stored visibility-API answer (PendingWorkloadsSummary), if the collector got one."""
    for summary in snap.of_kind("PendingWorkloadsSummary"):
        for item in summary.get("items") or ():
            meta = item.get("metadata") or {}
            if meta.get("name") == w.name and meta.get("namespace", w.namespace) == w.namespace:
                lq, cq = item.get("positionInLocalQueue"), item.get("positionInClusterQueue")
                parts = []
                if lq is not None:
                    parts.append(f"{int(lq) + 1} in LocalQueue {item.get('localQueueName') or w.queue_name}")
                if cq is not None:
                    parts.append(f"{int(cq) + 1} in its ClusterQueue")
                return ", ".join(parts)
    return ""


def _never_fitting(fit: WorkloadFit | None) -> ResourceFit | None:
    """The resource fit proving 'never fits' (the eligible flavor with the largest maximum capacity)."""
    if fit is None:
        return None
    best: ResourceFit | None = None
    for p in fit.pod_sets:
        for g in p.groups:
            el = g.eligible
            if not el or not all(f.verdict == FitVerdict.NEVER_FITS for f in el):
                continue
            for f in el:
                rf = f.limiting()
                if rf is not None and (best is None or rf.quota.max_capacity > best.quota.max_capacity):
                    best = rf
    return best


def _in_backoff(snap: Snapshot, w: WorkloadView) -> bool:
    return w.requeue_at is not None and w.requeue_at > snap.now


def _pods_hint(w: WorkloadView, rf: ResourceFit | None) -> str:
    """' (at most 2 pods of 8)' for single-pod-set workloads."""
    if rf is None or len(w.pod_sets) != 1:
        return ""
    per_pod = w.pod_sets[0].requests.get(rf.resource)
    if not per_pod:
        return ""
    pods = int(rf.quota.max_capacity // per_pod)
    return f" (at most {pods} pod(s) of {_fmt(per_pod, rf.resource)} {rf.resource})"


def _borrow_note(rf: ResourceFit) -> str:
    q = rf.quota
    over = q.usage + rf.needed - q.nominal
    if over <= ZERO or not q.in_cohort:
        return ""
    return (
        f" Admitting it would take the ClusterQueue {_fmt(over, rf.resource)} above its nominal quota, so that part "
        f"must be borrowed from the cohort, which has only {_fmt(max(ZERO, q.available - q.free_nominal), rf.resource)}"
        " left to lend."
    )


def _lent_part(rf: ResourceFit) -> str:
    lent = rf.quota.lent_out
    return f", of which {_fmt(lent, rf.resource)} is lent out," if lent > ZERO else ""


def _lent_note(rf: ResourceFit) -> str:
    lent = rf.quota.lent_out
    if lent <= ZERO:
        return ""
    return (
        f" {_fmt(lent, rf.resource)} {rf.resource} of the ClusterQueue's unused nominal quota is lent: other "
        "ClusterQueues of the cohort borrowed it, and only preemption (reclaimWithinCohort) or their workloads "
        "finishing gives it back."
    )


def _other_flavors(fit: WorkloadFit | None, flavor: str) -> str:
    if fit is None:
        return ""
    names = sorted({f.flavor for p in fit.pod_sets for g in p.groups for f in g.eligible if f.flavor != flavor})
    if not names:
        return ""
    return f"The other eligible flavor(s) {', '.join(names)} are not large enough either. "


def _first(pm: PendingMessage | None, kind: ReasonKind) -> Reason | None:
    if pm is None:
        return None
    found = pm.of(kind)
    return found[0] if found else None


def _fit_data(rf: ResourceFit) -> dict[str, Any]:
    r = rf.resource
    return {
        "resource": r,
        "flavor": rf.quota.flavor,
        "verdict": rf.verdict.value,
        "needed": _fmt(rf.needed, r),
        "free_nominal": _fmt(rf.free_nominal, r),
        "borrowable": _fmt(rf.borrowable, r),
        "available": _fmt(rf.quota.available, r),
        "max_capacity": _fmt(rf.quota.max_capacity, r),
        "shortfall": _fmt(rf.shortfall, r),
        "usage_source": rf.quota.usage_source,
    }


def _holders_data(h: QuotaHolders, limit: int) -> dict[str, Any]:
    r = h.resource
    return {
        "own": [{"workload": f"{x.namespace}/{x.name}", "amount": _fmt(x.amount, r)} for x in h.own[:limit]],
        "own_total": _fmt(h.own_total, r),
        "borrowers": [{"cluster_queue": x.name, "borrowed": _fmt(x.amount, r)} for x in h.borrowers[:limit]],
        "borrowed_total": _fmt(h.borrowed_total, r),
        "cohort": [{"workload": f"{x.namespace}/{x.name}", "cluster_queue": x.cluster_queue,
                    "amount": _fmt(x.amount, r), **({"note": x.note} if x.note else {})} for x in h.cohort[:limit]],
    }
