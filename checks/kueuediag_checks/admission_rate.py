"""KD301 admission-rate: admissions and preemptions over time — a trickle or a stall while work waits."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from kueuediag.analysis.admission_rates import Rates, Trickle, admission_rates, sparkline
from kueuediag.analysis.health import controller_activity
from kueuediag.analysis.preemption_victims import Victim, blocked_heads, preemption_victims, victims_of
from kueuediag.analysis.quota_summary import cq_quotas
from kueuediag.analysis.versions import behaviour
from kueuediag.causes import CauseSlug
from kueuediag.check import Check
from kueuediag.models import CheckResult, Confidence, Contribution, Evidence, Severity, ev
from kueuediag.snapshot.kueue import WorkloadState, WorkloadView
from kueuediag.snapshot.model import Part, Snapshot
from kueuediag.target import Target
from kueuediag.timeutil import human_duration, parse_duration


class AdmissionRate(Check):
    """Measures admission and preemption rates and flags a trickle or a stall while work is pending.

    What it detects:
        Step 3 of the "why is my workload pending" recipe: how fast the target's ClusterQueue (and the
        cluster) admits and preempts. From Prometheus data in the snapshot it reads
        `kueue_admitted_workloads_total` (else `kueue_quota_reserved_workloads_total`) by `cluster_queue`,
        `kueue_preempted_workloads_total` by `preempting_cluster_queue` (else
        `kueue_evicted_workloads_total{reason="Preempted"}`), `kueue_admission_attempts_total{result}` and
        `kueue_pending_workloads{status}`; without metrics it uses Workload `QuotaReserved`/`Admitted`
        transition times, `Evicted` (reason `Preempted`) times and Kueue's `QuotaReserved`, `Admitted`,
        `Preempted` and `EvictedDueToPreempted` events. It fires only on an anomaly:
        a *trickle* — admissions regularly spaced (e.g. one every 15 minutes, low coefficient of variation of
        the gaps) while work stays pending and preemptions are involved; the gap is compared with the
        termination grace period and preStop hooks of the preemption victims' pods — or a *stall* — no
        admission for a while although work is pending and the target fits in unused nominal quota, in one
        ClusterQueue or across several. Healthy rates (bursts of admissions, queues that drain) are clear.
        Causes: `slow-preemption` (trickle; medium confidence when it matches the victims' grace period),
        `stuck-preemption-target` (stall while queue heads wait on preemption) and `controller-unhealthy`
        (stall across ClusterQueues with nothing preempting, backed by controller evidence: a controller pod
        not Ready or restarting, or a log that covers the stall without a scheduling cycle; a Ready controller
        visibly evaluating the heads is not unhealthy). One ClusterQueue that admits nothing while
        nothing preempts is the guarantee violation itself (KD101): the rate step is ruled out (clear).
        KD301 owns none of these causes: it contributes its evidence to the finding of the owner (KD302 for
        the preemption causes, KD901 for controller-unhealthy), so each cause is stated once.

    Why the workload stays pending:
        A guarantee violation should be resolved within seconds: reclaiming nominal quota means preempting
        borrowers, and Kueue admits as soon as the victims release their quota. When each victim takes its
        whole grace period (plain pods with long preStop hooks), admissions trickle at that interval; when a
        victim never terminates, the heads that picked it stall, and queues behind them with it.

    Evidence:
        The metric selectors (or object fields) the rates come from, the number of admissions and
        preemptions in the window, the median gap and its coefficient of variation, the pending depth, and
        the victims' `terminationGracePeriodSeconds`/preStop hooks. Terminal sparklines of both rates are in
        the message and in `data["sparklines"]`.

    How to fix:
        A trickle that matches the victims' grace period is slow preemption: see KD302 (shorter grace
        periods, `FastQuotaReleaseInPodIntegration` on Kueue >= v0.17.0, manual eviction as a stop-gap). A
        stall across ClusterQueues points at a stuck preemption target (force-delete the zombie pod) or an
        unhealthy controller (KD9xx).

    Example:
        `1 admission every 15m in ClusterQueue demo-cq over 6h while 18 workloads wait; matches the victims'
        900s grace period [slow-preemption]`
    """

    code = "KD301"
    name = "admission-rate"
    requires = ()
    reads = (Part.LOGS,)
    default_severity = Severity.MEDIUM
    options = {"window": "6h", "stall_window": "30m", "max_cv": 0.35, "min_admissions": 4,
               "min_gap_seconds": 120}

    def run(self, snapshot: Snapshot, target: Target) -> CheckResult:
        w = target.workload
        assert w is not None
        cq = target.cluster_queue(snapshot)
        if w.state != WorkloadState.PENDING:
            return CheckResult.not_applicable(f"the workload is {w.state}, not pending")
        if not cq:
            return CheckResult.not_applicable("the workload has no ClusterQueue to measure admissions in")
        window = parse_duration(str(self.opts["window"])).total_seconds()
        stall = parse_duration(str(self.opts["stall_window"])).total_seconds()
        rates = admission_rates(snapshot, cq, window)
        spark = rates.sparklines
        data: dict[str, Any] = {
            "cluster_queue": cq, "source": rates.source, "window_seconds": round(rates.window),
            "step_seconds": round(rates.step), "admissions": len(rates.admission_times),
            "preemptions": len(rates.preemption_times), "admissions_cluster": len(rates.all_admission_times),
            "preemptions_cluster": len(rates.all_preemption_times),
            "pending": rates.pending_by_cq.get(cq), "attempts": rates.attempts, "sparklines": spark,
            "cluster_sparklines": _cluster_sparklines(snapshot, rates),
        }
        trickle = rates.trickle(min_events=int(self.opts["min_admissions"]),
                                min_gap=float(self.opts["min_gap_seconds"]), max_cv=float(self.opts["max_cv"]))
        found = None
        # A trickle that ended more than a stall window ago is history: the stall after it is the news.
        trickle_is_current = trickle is not None and bool(rates.admission_times) and \
            max(rates.admission_times) >= rates.end - stall - trickle.median_gap
        if trickle is not None and trickle_is_current:
            found = self._trickle(snapshot, w, cq, rates, trickle, spark, data)
        if found is None:
            found = self._stall(snapshot, w, cq, rates, stall, spark, data)
        if found is not None:
            return CheckResult.fired(contributions=[found])
        n = len(rates.admission_times)
        cadence = f", no regular trickle (median gap {human_duration(trickle.median_gap)})" if trickle else \
            ", no regular trickle"
        return CheckResult.ruled_out(self._rate_evidence(
            rates, f"{n} admission(s) and {len(rates.preemption_times)} preemption(s) to {cq} in the last "
                   f"{human_duration(rates.window)} (from {rates.source}){cadence}, no stall across ClusterQueues"))

    # --- helpers ---------------------------------------------------------------------------------------------
    def _chart(self, rates: Rates, spark: dict[str, str]) -> str:
        return (f"\n  admissions  {spark['admissions']}  ({len(rates.admission_times)})"
                f"\n  preemptions {spark['preemptions']}  ({len(rates.preemption_times)})"
                f"\n  (one bar = {human_duration(rates.step)}, last {human_duration(rates.window)}, from "
                f"{rates.source})")

    def _rate_evidence(self, rates: Rates, observed: str) -> Evidence:
        return ev("metric" if rates.source == "metrics" else "derived", observed, field=rates.queries[0])

    def _pending_persisted(self, w: WorkloadView, cq: str, rates: Rates, since: float) -> bool:
        """Work stayed pending in the ClusterQueue from `since` (the trickle's start, or the stall window's) on.

        With metrics: the pending gauge never dropped to 0. Without: workloads are pending now and the target
        already waited while admissions went on (or others wait with it).
        """
        lowest = rates.pending_min(since)
        if lowest is not None:
            return lowest > 0
        pending = rates.pending_by_cq.get(cq, 0)
        admitted_since = sorted(t for t in rates.admission_times if t >= since)
        if len(admitted_since) >= 2 and w.created is not None:
            return w.created.timestamp() <= admitted_since[-2] or pending >= 2
        return pending >= 1

    # --- trickle --------------------------------------------------------------------------------------------
    def _trickle(self, snap: Snapshot, w: WorkloadView, cq: str, rates: Rates, trickle: Trickle,
                 spark: dict[str, str], data: dict[str, Any]) -> Contribution | None:
        first = min(rates.admission_times)
        if not self._pending_persisted(w, cq, rates, first):
            return None
        victims = victims_of(snap, w) + [v for v in preemption_victims(snap) if v.preemptor_cq == cq]
        unique: dict[str, Victim] = {v.workload.ref(): v for v in victims}
        graced = [v for v in unique.values() if v.pods]
        gap = trickle.median_gap
        shown = human_duration(round(gap / 60) * 60 if gap >= 60 else gap)
        matching = [v for v in graced if v.max_grace >= 60 and 0.8 * v.max_grace <= gap <= 1.25 * v.max_grace + 120]
        waiting = any(h.workload.uid == w.uid for h in blocked_heads(snap))
        if not matching and not rates.preemption_times and not waiting:
            return None  # a queue that drains as workloads finish: not an anomaly
        pending = rates.pending_by_cq.get(cq)
        pend_txt = f" while {pending:.0f} workload(s) wait" if pending else " while work is pending"
        lasted = human_duration(sum(trickle.gaps))
        title = f"1 admission every {shown} in ClusterQueue {cq} for {lasted}{pend_txt}"
        data.update({"trickle_gap_seconds": round(gap), "trickle_cv": round(trickle.cv, 3),
                     "trickle_admissions": trickle.count})
        evidence = [self._rate_evidence(rates, f"{len(rates.admission_times)} admissions in "
                                        f"{human_duration(rates.window)}, median gap {shown} "
                                        f"(coefficient of variation {trickle.cv:.2f})")]
        if rates.preemption_times:
            evidence.append(ev("metric" if rates.source == "metrics" else "derived",
                               f"{len(rates.preemption_times)} preemptions issued by ClusterQueue {cq}",
                               field=rates.queries[1]))
        message = (f"Admissions to ClusterQueue {cq} arrive at a regular {shown} interval "
                   f"for {lasted} ({trickle.count} admissions, gaps vary by {trickle.cv:.0%}){pend_txt}. A guarantee "
                   "violation is normally resolved within seconds; a steady trickle means each admission waits "
                   "for something slow.")
        if matching:
            grace = max(v.max_grace for v in matching)
            hook = any(v.pre_stop for v in matching)
            title += f"; matches the victims' {grace}s grace period"
            data["victim_grace_seconds"] = grace
            message += (f" The interval matches the termination grace period of the preemption victims "
                        f"({grace}s{', preStop hooks' if hook else ''}): each preemption waits for the victim's "
                        "pods to finish terminating before the quota is released (see KD302).")
            for v in matching[:3]:
                p = max(v.active_pods or list(v.pods), key=lambda x: x.grace_seconds)
                evidence.append(ev("object", f"terminationGracePeriodSeconds={p.grace_seconds}"
                                   f"{', preStop hook' if p.pre_stop else ''} (victim {v.workload.ref()})",
                                   kind="Pod", name=p.pod.name, namespace=p.pod.namespace,
                                   field="spec.terminationGracePeriodSeconds"))
            confidence, severity = Confidence.MEDIUM, Severity.MEDIUM
        else:
            message += (" Preemptions are involved, but the victims' grace periods in the snapshot do not explain "
                        "the interval.")
            confidence, severity = Confidence.LOW, Severity.LOW
        message += self._chart(rates, spark)
        remediation = [
            "Read KD302 for the victims and how long their grace periods still run.",
            "Shorten terminationGracePeriodSeconds/preStop hooks of preemptible pods; on Kueue >= "
            f"{behaviour('fast-quota-release-gate').first} enable the FastQuotaReleaseInPodIntegration feature "
            "gate so plain-pod victims release quota as soon as they are terminating.",
            "Stop-gap for a wave of reclaiming workloads: evict the borrowing/low-priority workloads by hand so "
            "their grace periods run in parallel instead of one after another.",
        ]
        return self.contribute(CauseSlug.SLOW_PREEMPTION, title, message, severity=severity, confidence=confidence,
                            evidence=evidence, remediation=remediation, data=data)

    # --- stall ------------------------------------------------------------------------------------------------
    def _stall(self, snap: Snapshot, w: WorkloadView, cq: str, rates: Rates, stall: float,
               spark: dict[str, str], data: dict[str, Any]) -> Contribution | None:
        if rates.window < stall or rates.count_since(rates.admission_times, rates.end - stall) > 0:
            return None
        if not self._pending_persisted(w, cq, rates, rates.end - stall) or not _fits_free_nominal(snap, cq, w):
            return None
        since = rates.end - stall
        stalled = _stalled(snap, rates, since)
        last = max(rates.admission_times, default=None)
        quiet = rates.end - last if last is not None else rates.window
        heads = [h for h in blocked_heads(snap) if h.cluster_queue in stalled]
        cluster_wide = len(stalled) >= 2
        data.update({"stalled_cluster_queues": stalled, "quiet_seconds": round(quiet)})
        run_start = rates.pending_since()
        if run_start is None and w.queue_order_time is not None:
            run_start = w.queue_order_time.timestamp()
        pending_for = min(quiet, rates.end - run_start) if run_start is not None else None
        waited = f" while work waited {human_duration(pending_for)}" if pending_for else ""
        data["pending_seconds"] = round(pending_for) if pending_for else None
        title = (f"no admission in ClusterQueue {cq} for {human_duration(quiet)}{waited}, although the workload "
                 "fits in unused nominal quota")
        if cluster_wide:
            title += f"; {len(stalled)} ClusterQueues stalled"
        evidence = [self._rate_evidence(rates, f"0 admissions to {cq} in the last {human_duration(quiet)}; "
                                        f"{rates.count_since(rates.all_admission_times, since)} cluster-wide in "
                                        f"the last {human_duration(stall)}")]
        for h in heads[:4]:
            evidence.append(ev("condition", h.message.raw, kind="Workload", name=h.workload.name,
                               namespace=h.workload.namespace, field="status.conditions[type=QuotaReserved].message"))
        message = (f"ClusterQueue {cq} admitted nothing for {human_duration(quiet)}{waited}, and this workload "
                   "fits in its unused nominal quota.")
        if cluster_wide:
            message += (f" The same holds for {', '.join(c for c in stalled if c != cq)}: admissions stalled "
                        "across ClusterQueues.")
        if rates.attempts:
            message += " Admission attempts in the window: " + ", ".join(
                f"{k or '?'}={v:.0f}" for k, v in sorted(rates.attempts.items())) + "."
        if heads:
            overlapping = sum(1 for h in heads if h.overlapping)
            message += (f" {len(heads)} queue head(s) wait on preemption ({overlapping} with `Workload has "
                        "overlapping preemption targets with another workload`): a victim that never releases "
                        "its quota blocks them all (see KD302).")
            cause = "stuck-preemption-target"
            confidence = Confidence.MEDIUM if cluster_wide else Confidence.LOW
        elif cluster_wide:
            # a stall is the controller's fault only with controller evidence: a crash loop, restarts, or a log
            # that covers the window without one scheduling cycle. A scheduler visibly evaluating heads that do
            # not fit is waiting for quota (KD101 names the holders), not an unhealthy controller.
            activity = controller_activity(snap, datetime.fromtimestamp(since, tz=UTC))
            if not activity.problems:
                return None
            message += (" No head waits on preemption, and the controller shows why nothing is admitted: "
                        + "; ".join(activity.problems) + ".")
            for p in activity.pods[:2]:
                evidence.append(ev("object", f"{p.waiting_reason or ('Ready' if p.ready else 'not Ready')}, "
                                             f"{p.restarts} restart(s)", kind="Pod", name=p.name,
                                   namespace=p.namespace, field="status.containerStatuses"))
            if activity.scheduling_lines == 0:
                evidence.append(ev("log", f"0 scheduling-cycle lines in the last {human_duration(quiet)}",
                                   field="schedulingCycle", expected="one per scheduling cycle"))
            cause, confidence = "controller-unhealthy", Confidence.MEDIUM
        else:
            # One ClusterQueue stalled with nothing preempting is the guarantee violation itself (KD101), not a
            # rate anomaly: the recipe's rate step is ruled out (the fair-sharing rounding bug looked like this).
            return None
        message += self._chart(rates, spark)
        if cause == "stuck-preemption-target":
            remediation = [
                "Find the victim the blocked heads wait for (KD302): a Workload with Evicted=True (Preempted) and "
                "QuotaReserved=True whose pod is past its deletionTimestamp; force-delete that pod "
                "(`kubectl delete pod <pod> -n <ns> --force --grace-period=0`) and repair its node.",
                f"Kueue >= {' / '.join(behaviour('pod-group-terminating-release').since)} stops counting "
                "pod-group pods stuck terminating past their grace period (PR #6872).",
            ]
        else:
            remediation = [
                "Check the kueue-controller-manager: `kubectl -n kueue-system get pods -l "
                "control-plane=controller-manager`, its restarts, leader election and logs (KD9xx).",
            ]
        return self.contribute(cause, title, message, severity=Severity.MEDIUM, confidence=confidence,
                            evidence=evidence, remediation=remediation, data=data)


def _cluster_sparklines(snap: Snapshot, rates: Rates) -> dict[str, str]:
    """The cluster-wide sparklines: the same for every ClusterQueue read over the same window (memoised)."""
    return snap.memo(("KD301:cluster-sparklines", rates.source, rates.start, rates.end, rates.step), lambda: {
        "admissions": sparkline(rates.buckets(rates.all_admission_times)),
        "preemptions": sparkline(rates.buckets(rates.all_preemption_times))})


def _stalled(snap: Snapshot, rates: Rates, since: float) -> list[str]:
    """ClusterQueues with pending work and no admission since `since` (memoised per window)."""
    return snap.memo(("KD301:stalled", rates.source, rates.end, since), lambda: sorted(
        c for c, p in rates.pending_by_cq.items()
        if p > 0 and rates.count_since(rates.admissions_by_cq.get(c, []), since) == 0))


def _fits_free_nominal(snap: Snapshot, cq: str, w: WorkloadView) -> bool:
    """Every requested resource fits in the unused nominal quota of one of the ClusterQueue's flavors."""
    quotas = cq_quotas(snap, cq)
    if not quotas:
        return False
    for resource, qty in w.total_requests().items():
        free = [q.free_nominal for (_, r), q in quotas.items() if r == resource]
        if not free or max(free, default=Decimal(0)) < qty:
            return False
    return True
