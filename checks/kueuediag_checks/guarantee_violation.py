"""KD101 guarantee-violation: the workload fits in unused nominal quota, yet it is pending."""

from __future__ import annotations

from functools import partial
from typing import Any

from kueuediag.analysis.guarantees import (
    OtherViolations,
    QuotaRow,
    RecordReading,
    Violation,
    all_violations,
    cohort_table,
    is_pending,
    pending_requests,
    pending_workloads_history,
    quota_table,
    read_record,
    resource_pending_history,
    stale_violations,
    violation_of,
)
from kueuediag.analysis.quota_summary import cq_quotas
from kueuediag.analysis.quota_tree import quota_tree, require_quota_tree
from kueuediag.causes import CauseSlug
from kueuediag.check import Check
from kueuediag.models import CheckResult, Confidence, Evidence, Finding, Severity, ev
from kueuediag.quantity import format_quantity
from kueuediag.snapshot.kueue import finished_view, kueue_index
from kueuediag.snapshot.metrics import metric_store
from kueuediag.snapshot.model import Part, Snapshot
from kueuediag.target import Target
from kueuediag.timeutil import format_rfc3339, human_duration


class GuaranteeViolation(Check):
    """Flags a pending workload that fits in unused nominal quota while Kueue's record of it has gone stale.

    What it detects:
        For the target's ClusterQueue (and, to count the others, every ClusterQueue in the snapshot): per
        flavor and resource the nominal quota, the quota reserved by its workloads, what it borrows above
        nominal, what of its unused nominal quota other ClusterQueues of the cohort borrowed (lent), and the
        requests of its pending workloads. A pending workload whose every pod set fits in the unused nominal
        quota of some flavor it may use (flavor nodeLabels against the pod's nodeSelector/affinity, flavor
        nodeTaints against its tolerations) is a candidate guarantee violation. Quota lent to other
        ClusterQueues still counts as unused: it is the tenant's guarantee and Kueue must reclaim it. How long it
        has been so grades the finding: up to `violation_minutes` (default 30) a warning (medium), beyond that a
        violation on-call should act on (high). The start is the workload's `QuotaReserved=False` transition,
        moved later when a workload of the same ClusterQueue finished afterwards and its quota was needed for
        the fit, and narrowed by
        `kueue_cluster_queue_nominal_quota` / `kueue_cluster_queue_resource_reservation` history when the
        snapshot has it (`kueue_pending_workloads` history is shown as evidence). When the target does not
        violate but other pending workloads in the cluster do (beyond the churn threshold), a low-severity
        cluster-wide finding (not about the target) lists them: they are the first sign that Kueue itself is
        stuck.

        Kueue's record comes first. The recomputation is compared with the Workload's QuotaReserved=False
        message: only positive evidence that capacity changed after Kueue wrote it (a workload of the
        ClusterQueue finished and freed the quota the fit needs, Prometheus shows the unused quota covering the
        request since then, or the ClusterQueue's spec changed) older than `churn_minutes` — Kueue's normal
        requeue time — makes a `guarantee-violation`. A more recent change is ruled out (the record is not stale
        yet); a record that says Kueue is preempting, or that names a non-quota reason (topology, flavors,
        gates), is ruled out with that record quoted (its owner reports the cause); a record saying the workload
        does not fit, with nothing changed since, is `model-disagreement` (medium confidence, both accounts
        shown; a matching known issue from KD902 ranks above it). A guarantee violation is never the fallback
        for "nothing else fired".

    Why the workload stays pending:
        This check does not say why: a guarantee violation is a symptom. The tenant has unallocated
        guarantees, so Kueue should admit the workload within a scheduling cycle. Acceptable reasons exist
        (reclaiming lent quota needs preemption and victims take their grace period; the queue head blocks
        under StrictFIFO), and so do unacceptable ones (stuck preemption targets, a Kueue bug such as the
        fair-sharing rounding bug, an unhealthy controller). The root-cause checks rank above this finding.

    Evidence:
        ClusterQueue `spec.resourceGroups[].flavors[].resources[].nominalQuota` against the quota reserved by
        its QuotaReserved workloads (`status.flavorsReservation` for comparison); the Workload's
        `QuotaReserved` condition (reason, message, lastTransitionTime); Finished workloads that released
        the quota; Prometheus history when present. `finding.data` carries the per-flavor/resource table of
        the ClusterQueue (nominal, reserved, borrowed, lent, unused, pending), its cohort's subtree quota
        and usage, and the other violating workloads cluster-wide (count and the longest few).

    How to fix:
        Follow the recipe from the KubeCon talk: rule out fragmentation (KD2xx), check admission and
        preemption rates (KD3xx), check whether Kueue released the pods (KD4xx), read the controller logs at
        `--zap-log-level=5` (KD5xx) and the controller's health (KD9xx). As a stop-gap, find what blocks the
        queue head (`kubectl get workloads -n <ns> -o wide`, `kubectl kueue list workloads`) and evict
        stuck preemption victims by hand.

    Example:
        `fits in unused nominal quota of ClusterQueue team-a yet pending for 45m: needs 1 nvidia.com/gpu,
        4 unused in flavor h100 [guarantee-violation]`
    """

    code = "KD101"
    name = "guarantee-violation"
    requires = (Part.WORKLOADS, Part.QUEUES)
    default_severity = Severity.HIGH
    options = {"churn_minutes": 5.0, "violation_minutes": 30.0, "top": 5}

    def run(self, snapshot: Snapshot, target: Target) -> CheckResult:
        w = target.workload
        assert w is not None
        if not is_pending(w):
            return CheckResult.not_applicable(f"the workload is {w.state}, not pending")
        cq = target.cluster_queue(snapshot)
        if cq is None or cq not in kueue_index(snapshot).cluster_queues:
            why = snapshot.part_unavailable(Part.QUEUES)
            if why:
                return CheckResult.could_not_check("ClusterQueues", why)
            return CheckResult.not_applicable("the workload's ClusterQueue does not exist (KD001 reports it)")
        churn_s = float(self.opts["churn_minutes"]) * 60
        require_quota_tree(snapshot, cq)  # the scan below says nothing about a tree holding a malformed Workload
        mine = violation_of(snapshot, w)
        others = all_violations(snapshot).without(mine)
        # only a stale record is a violation: capacity changed after Kueue wrote it and it did not re-evaluate
        significant = stale_violations(snapshot, churn_s).without(mine)
        data = self._data(snapshot, cq, others)
        ruled_out: list[Evidence] = []
        if mine is not None:
            reading = read_record(snapshot, mine, churn_s)
            data = dict(data, record=reading.as_dict)
            if reading.verdict == "stale":
                return CheckResult.fired([self._target_finding(snapshot, mine, significant, data, reading)])
            if reading.verdict in ("disagree", "no-record"):
                return CheckResult.fired([self._disagreement(snapshot, mine, reading, data)])
            if reading.verdict == "fresh":
                age = human_duration(snapshot.age_seconds(reading.change_at))
                why = (f"fits in unused nominal quota, but capacity changed only {age} ago ({reading.change}): "
                       f"within Kueue's normal requeue time ({self.opts['churn_minutes']:g}m), so its record "
                       "is not stale yet")
            else:
                why = f"fits in unused nominal quota, and Kueue's record explains the wait: {reading.explanation}"
            ruled_out.append(ev("condition", f"{why}; {reading.record}", kind="Workload", name=w.name,
                                namespace=w.namespace, field="status.conditions[type=QuotaReserved]"))
        if significant:
            return CheckResult.fired([self._cluster_finding(snapshot, cq, significant, data)])
        return CheckResult.ruled_out(*ruled_out, ev(
            "derived", ("the workload does not fit in ClusterQueue " + cq + "'s unused nominal quota"
                        if mine is None else "no guarantee violation")
            + f", and none of the {len(others)} other pending workload(s) that would fit has a stale record "
            f"older than {self.opts['churn_minutes']:g}m", kind="ClusterQueue", name=cq,
            field="spec.resourceGroups[].flavors[].resources[].nominalQuota - status.flavorsUsage"))

    def confirmed(self, snapshot: Snapshot) -> list[Violation]:
        """Every violation this check rules a `guarantee-violation` (a stale record older than `churn_minutes`),
        longest first. `health` builds its queue tree column and gauge from it: one ruling, not two."""
        return list(stale_violations(snapshot, float(self.opts["churn_minutes"]) * 60).items)

    # --- findings ----------------------------------------------------------------------------------------
    def severity_for(self, seconds: float | None) -> Severity:
        if seconds is None:
            return Severity.MEDIUM
        if seconds < float(self.opts["churn_minutes"]) * 60:
            return Severity.INFO
        if seconds <= float(self.opts["violation_minutes"]) * 60:
            return Severity.MEDIUM
        return Severity.HIGH

    def _target_finding(self, snap: Snapshot, v: Violation, others: OtherViolations,
                        data: dict[str, Any], reading: RecordReading) -> Finding:
        w = v.workload
        cq = v.cluster_queue
        rows = {(r.flavor, r.resource): r for r in quota_table(snap, cq)}
        requests = v.fit.requests()
        key_fr = max(requests, key=lambda fr: (fr[1] != "cpu" and fr[1] != "memory", requests[fr]))
        need, row = requests[key_fr], rows.get(key_fr)
        flavor, resource = key_fr
        unused = row.unused if row else None
        dur = human_duration(v.seconds) if v.seconds is not None else "an unknown time"
        severity = self.severity_for(v.seconds)
        unused_text = format_quantity(unused, resource) if unused is not None else "?"
        title = (f"fits in unused nominal quota of ClusterQueue {cq} yet pending for {dur}: needs "
                 f"{format_quantity(need, resource)} {resource}, {unused_text} unused in flavor {flavor}")
        grade = {Severity.INFO: "short enough to be scheduling churn",
                 Severity.MEDIUM: "long enough to watch",
                 Severity.HIGH: "long enough that on-call should act"}[severity]
        lent_rows = [r for r in rows.values() if r.flavor in v.fit.flavors and r.lent > 0]
        rest = sorted({r for f, r in requests if (f, r) != key_fr})
        also = f" ({', '.join(rest)} fit too)" if rest else ""
        parts = [
            f"Workload {w.ref()} requests {self._req_text(requests)}. ClusterQueue {cq} has "
            + (self._row_text(row) if row else f"quota in flavor {flavor}") + also
            + ". So the workload fits inside the ClusterQueue's guaranteed (nominal) quota, yet it has been "
            f"pending for {dur} ({grade}). This is a guarantee violation: Kueue should admit a workload "
            "that fits its queue's unused guarantees within a scheduling cycle.",
        ]
        if v.since != v.pending_since and v.since is not None:
            began = format_rfc3339(v.pending_since) if v.pending_since else "?"
            parts.append(f"It has been pending since {began}, but the violation only began at "
                         f"{format_rfc3339(v.since)} ({v.since_source}).")
        if lent_rows:
            lent = ", ".join(f"{format_quantity(r.lent, r.resource)} {r.resource} in flavor {r.flavor}"
                             for r in lent_rows)
            preemption = kueue_index(snap).cluster_queues[cq].preemption or {}
            policy = preemption.get("reclaimWithinCohort", "Never")
            parts.append(f"Part of the unused quota ({lent}) is lent to other ClusterQueues of the cohort; "
                         f"Kueue must reclaim it by preemption (spec.preemption.reclaimWithinCohort: {policy}"
                         + (", which forbids it" if policy == "Never" else "") + ").")
        parts.append(f"Kueue's record is stale: it wrote `{reading.record}`, then {reading.change}, and Kueue "
                     f"has not re-evaluated the workload within its normal requeue time "
                     f"({self.opts['churn_minutes']:g}m).")
        if others:
            read = snap.manifest.namespaces  # a namespace-limited collection sees only those namespaces' Workloads
            where = "in the cluster" if read is None else f"in the {len(read)} namespace(s) read"
            parts.append(f"{len(others)} other pending workload(s) {where} are in the same situation.")
        parts.append("A guarantee violation is a symptom: when a root cause is found (fragmentation, slow or "
                     "stuck preemption, release to Kubernetes, the controller) it ranks above this finding and "
                     "says why; when none ranks above it, no layer explains the wait — treat it as a possible "
                     "Kueue scheduling bug and escalate with a snapshot (`kueuediag snapshot --redact`).")
        evidence = self._quota_evidence(snap, cq, sorted(requests))
        qr = w.cond("QuotaReserved")
        if qr is not None:
            when = format_rfc3339(qr.last_transition) if qr.last_transition else "?"
            evidence.append(ev(
                "condition", f"QuotaReserved={qr.status} ({qr.reason}) since {when}: {qr.message}".rstrip(": "),
                kind="Workload", name=w.name, namespace=w.namespace,
                field="status.conditions[type=QuotaReserved]", expected="True"))
        else:
            evidence.append(ev("condition", f"no QuotaReserved condition; {v.pending_source} "
                               f"{format_rfc3339(v.pending_since) if v.pending_since else '?'}",
                               kind="Workload", name=w.name, namespace=w.namespace,
                               field="status.conditions", expected="QuotaReserved=True"))
        rel = finished_view(snap, v.released_by) if v.released_by is not None else None
        if rel is not None:
            fin = rel.cond("Finished")
            evidence.append(ev(
                "condition", f"Finished=True ({fin.reason if fin else '?'}) at "
                f"{format_rfc3339(v.since) if v.since else '?'}: its quota release made the fit possible",
                kind="Workload", name=rel.name, namespace=rel.namespace,
                field="status.conditions[type=Finished]"))
        for note in v.notes:
            if rel is None or "finished at" not in note:
                evidence.append(ev("derived", note, kind="ClusterQueue", name=cq, field="violation start"))
        evidence.extend(self._metric_evidence(snap, cq, v))
        evidence.append(ev("derived", f"stale record: {reading.change}, after Kueue's record",
                           kind="Workload", name=w.name, namespace=w.namespace, field="status.conditions"))
        confidence = self._confidence(snap, cq, v)
        data = dict(data, violation_minutes=None if v.minutes is None else round(v.minutes, 1),
                    since=format_rfc3339(v.since) if v.since else None, since_source=v.since_source,
                    flavors=v.fit.flavors)
        return self.finding(
            CauseSlug.GUARANTEE_VIOLATION, title, " ".join(parts), severity=severity, confidence=confidence,
            evidence=evidence, about_target=True, data=data,
            remediation=self._remediation(w.namespace, cq),
        )

    def _disagreement(self, snap: Snapshot, v: Violation, reading: RecordReading, data: dict[str, Any]) -> Finding:
        """kueuediag's recomputation says it fits; Kueue's record says it does not, and nothing changed since."""
        w, cq = v.workload, v.cluster_queue
        rows = {(r.flavor, r.resource): r for r in quota_table(snap, cq)}
        requests = v.fit.requests()
        model = "; ".join(
            f"{format_quantity(q, r)} {r} needed, "
            f"{format_quantity(rows[(f, r)].unused, r) if (f, r) in rows else '?'} unused in flavor {f}"
            for (f, r), q in sorted(requests.items()))
        qr = w.cond("QuotaReserved")
        kueue = reading.record or "nothing: the Workload has no QuotaReserved=False message"
        said = f"says `{qr.message}`" if qr is not None and reading.record else "recorded no decision"
        title = (f"kueuediag's model and Kueue disagree: the model fits it in ClusterQueue {cq}'s unused nominal "
                 f"quota ({model}), Kueue {said}")
        message = (
            f"kueuediag recomputed the quota of ClusterQueue {cq} from its Workloads and finds room: {model}. "
            f"Kueue recorded {kueue}. Nothing in the snapshot shows capacity changing after Kueue wrote that (no "
            "workload of the ClusterQueue finished since, no quota change, no metric history saying otherwise), "
            "so this is not a stale record and not a guarantee violation. Explanations, in order: a known Kueue "
            "bug or version difference (see the known-issues check, KD902), something the snapshot misses (a "
            "workload or usage Kueue counts), or a wrong model in kueuediag. Kueue's account comes first."
        )
        evidence = self._quota_evidence(snap, cq, sorted(requests))
        evidence.append(ev("condition", kueue, kind="Workload", name=w.name, namespace=w.namespace,
                           field="status.conditions[type=QuotaReserved]"))
        return self.finding(
            CauseSlug.MODEL_DISAGREEMENT, title, message, severity=Severity.MEDIUM, confidence=Confidence.MEDIUM,
            evidence=evidence, about_target=True, data=data,
        )

    def _cluster_finding(self, snap: Snapshot, cq: str, others: OtherViolations,
                         data: dict[str, Any]) -> Finding:
        top = others.top(int(self.opts["top"]))
        longest = top[0]
        cqs = sorted(others.by_cluster_queue())
        title = (f"{len(others)} other pending workload(s) fit in unused nominal quota "
                 f"(longest {human_duration(longest.seconds)}, ClusterQueue {longest.cluster_queue})")
        listing = "; ".join(
            f"{v.workload.ref()} in ClusterQueue {v.cluster_queue} for "
            f"{human_duration(v.seconds) if v.seconds is not None else '?'}" for v in top)
        message = (
            f"Your workload does not fit in the unused nominal quota of ClusterQueue {cq}, so its wait is "
            f"not a guarantee violation. Elsewhere in the cluster {len(others)} pending workload(s) in "
            f"{len(cqs)} ClusterQueue(s) ({', '.join(cqs)}) do fit in their queue's unused guarantees and "
            f"still wait: {listing}. That is the first sign that Kueue is stuck or slow (a guarantee "
            "violation); it may also slow your workload once it reaches the head of its queue.")
        evidence = []
        for v in top:
            qr = v.workload.cond("QuotaReserved")
            msg = f"; QuotaReserved=False: {qr.message}" if qr is not None and qr.false and qr.message else ""
            evidence.append(ev(
                "derived", f"fits in unused nominal quota of ClusterQueue {v.cluster_queue} "
                f"(flavor {', '.join(v.fit.flavors)}), pending {human_duration(v.seconds)}{msg}",
                kind="Workload", name=v.workload.name, namespace=v.workload.namespace,
                field="status.conditions[type=QuotaReserved]", expected="QuotaReserved=True"))
        return self.finding(
            CauseSlug.GUARANTEE_VIOLATION, title, message, severity=Severity.LOW, confidence=Confidence.MEDIUM,
            evidence=evidence, about_target=False, data=data,
            remediation=self._remediation(longest.workload.namespace, longest.cluster_queue),
        )

    # --- pieces --------------------------------------------------------------------------------------------
    def _data(self, snap: Snapshot, cq: str, others: OtherViolations) -> dict[str, Any]:
        """The finding's data: the ClusterQueue's part is the same for all its pending workloads and built once
        per ClusterQueue; the other violations depend on which one is the target's own."""
        top = int(self.opts["top"])
        return dict(snap.memo(("KD101:queue-data", cq), lambda: self._queue_data(snap, cq)), other_violations={
            "count": len(others),
            "by_cluster_queue": others.by_cluster_queue(),
            "top": [{"workload": v.workload.ref(), "cluster_queue": v.cluster_queue,
                     "minutes": None if v.minutes is None else round(v.minutes, 1),
                     "flavors": v.fit.flavors} for v in others.top(top)],
        })

    @staticmethod
    def _queue_data(snap: Snapshot, cq: str) -> dict[str, Any]:
        tree = quota_tree(snap)
        root = tree.root(cq)
        node = tree.cluster_queues.get(cq)
        return {
            "cluster_queue": cq,
            "cohort": node.parent if node else None,
            "quota_table": [r.as_dict() for r in quota_table(snap, cq)],
            "pending_requests": {r: format_quantity(q, r)
                                 for r, q in sorted(pending_requests(snap, cq).items())},
            "cohort_table": cohort_table(snap, root) if root else [],
        }

    @staticmethod
    def _req_text(requests: dict[tuple[str, str], Any]) -> str:
        return ", ".join(f"{format_quantity(q, r)} {r} (flavor {f})"
                         for (f, r), q in sorted(requests.items()))

    @staticmethod
    def _row_text(r: QuotaRow) -> str:
        res = r.resource
        text = (f"nominal quota {format_quantity(r.nominal, res)} {res} in flavor {r.flavor}, "
                f"{format_quantity(r.reserved, res)} reserved, {format_quantity(r.unused, res)} unused")
        if r.borrowed:
            text += f", {format_quantity(r.borrowed, res)} borrowed"
        if r.pending:
            text += f", {format_quantity(r.pending, res)} requested by pending workloads"
        return text

    @staticmethod
    def _quota_evidence(snap: Snapshot, cq: str, frs: list[tuple[str, str]]) -> list[Evidence]:
        """The quota rows behind a fit, read once per ClusterQueue and requested (flavor, resource) set."""
        return list(snap.memo(("KD101:quota-evidence", cq, tuple(frs)),
                              lambda: GuaranteeViolation._build_quota_evidence(snap, cq, frs)))

    @staticmethod
    def _build_quota_evidence(snap: Snapshot, cq: str, frs: list[tuple[str, str]]) -> list[Evidence]:
        out = []
        quotas = cq_quotas(snap, cq)
        for fr in frs:
            q = quotas.get(fr)
            if q is None:
                continue
            res = fr[1]
            source = "recomputed from Workloads" if q.usage_source == "workloads" else \
                "status.flavorsReservation"
            observed = (f"flavor {fr[0]} {res}: nominalQuota {format_quantity(q.nominal, res)}, reserved "
                        f"{format_quantity(q.usage, res)} ({source}), "
                        f"unused {format_quantity(q.free_nominal, res)}")
            if q.status_usage is not None and q.usage_mismatch:
                observed += f"; status.flavorsReservation says {format_quantity(q.status_usage, res)}"
            out.append(ev("object", observed, kind="ClusterQueue", name=cq,
                          field=f"spec.resourceGroups[].flavors[name={fr[0]}].resources[name={res}].nominalQuota",
                          expected="a workload that fits in unused nominal quota is admitted"))
        return out

    @staticmethod
    def _metric_evidence(snap: Snapshot, cq: str, v: Violation) -> list[Evidence]:
        store = metric_store(snap)
        if not store:
            return []
        out = []
        hist = snap.memo(("KD101:pending-history", cq), lambda: pending_workloads_history(store, cq, snap.now))
        if hist is not None:
            seconds, selector = hist
            out.append(ev("metric", f"{selector} > 0 for {human_duration(seconds)}", field=selector))
        for (_, resource), need in sorted(v.fit.requests().items()):
            found = snap.memo(("KD101:resource-pending-history", cq, resource, need),
                              partial(resource_pending_history, store, cq, resource, need, snap.now))
            if found is not None:
                seconds, latest, sel = found
                out.append(ev("metric", f"{sel} = {latest:g}, at least the request "
                              f"({format_quantity(need, resource)}) for {human_duration(seconds)}", field=sel))
        for selector in v.metric_selectors[:2]:
            out.append(ev("metric", "history used to date the start of the violation", field=selector))
        return out

    @staticmethod
    def _confidence(snap: Snapshot, cq: str, v: Violation) -> Confidence:
        quotas = cq_quotas(snap, cq)
        if any(quotas[fr].usage_mismatch for fr in v.fit.requests() if fr in quotas):
            return Confidence.MEDIUM
        if v.seconds is None:
            return Confidence.LOW
        return Confidence.HIGH

    @staticmethod
    def _remediation(namespace: str, cq: str) -> list[str]:
        return [
            "Follow the recipe: rule out fragmentation (`kueuediag why ... --select KD2`), check admission "
            "and preemption rates (KD3xx), whether Kueue released the pods (KD4xx), the controller logs at "
            "--zap-log-level=5 (KD5xx) and controller health (KD9xx).",
            f"See what holds and what waits in the queue: `kubectl get workloads -n {namespace} -o wide` and "
            f"`kubectl get clusterqueue {cq} -o yaml` (status.flavorsReservation, pendingWorkloads).",
            "Stop-gap: evict preemption victims stuck terminating (`kubectl delete pod <pod> --force "
            "--grace-period=0`) or borrowers holding the lent quota.",
        ]


__all__ = ["GuaranteeViolation"]
