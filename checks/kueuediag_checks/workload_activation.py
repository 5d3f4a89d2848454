"""KD006 workload-activation: is the Workload deactivated or held by an admission or preemption gate?"""

from __future__ import annotations

from kueuediag.analysis.kueue_config import kueue_config
from kueuediag.analysis.messages import PendingMessage, ReasonKind, rejected_checks
from kueuediag.causes import CauseSlug
from kueuediag.check import Check
from kueuediag.models import CheckResult, Confidence, Finding, Severity, ev
from kueuediag.snapshot.k8s import Condition
from kueuediag.snapshot.kueue import WorkloadState, WorkloadView
from kueuediag.snapshot.model import Snapshot
from kueuediag.target import Target
from kueuediag.timeutil import human_duration
from kueuediag_checks._evidence import condition_ev
from kueuediag_checks._submission import GATED_BY, pending


class WorkloadActivation(Check):
    """Finds a Workload that is switched off: deactivated, admission-gated, or behind a closed preemption gate.

    What it detects:
        A Workload with `spec.active: false` (set by a user, or by Kueue after `RequeuingLimitExceeded`,
        `MaximumExecutionTimeExceeded` or a rejecting admission check — read from the `Evicted`,
        `DeactivationTarget` and `Requeued` conditions); the `kueue.x-k8s.io/admission-gated-by` annotation or an
        `AdmissionGated` QuotaReserved reason; a closed preemption gate (`BlockedOnPreemptionGates`, `Workload
        requires preemption, but it's gated`). (Split out of the former `queue-configuration` check, KD001.)

    Why the workload stays pending:
        A deactivated Workload is never considered for admission; a gated one is skipped until every named
        controller removes itself from the gate. None of it is about quota.

    Evidence:
        The Workload's `spec.active`, annotations, `status.requeueState`, `spec.preemptionGates` and
        `status.preemptionGates`, and the conditions that say who deactivated or gated it and why.

    How to fix:
        Fix the reason it was deactivated (pods that never became ready, a rejected admission check, a too-short
        execution limit), then set `spec.active: true`; for gates, the controller named in the gate must
        release it (or remove a stale annotation).

    Example:
        `Workload is deactivated (spec.active: false): DeactivatedDueToRequeuingLimitExceeded — its pods missed
        the waitForPodsReady timeout (5m) 3 time(s) [deactivated]`
    """

    code = "KD006"
    name = "workload-activation"
    requires = ()
    default_severity = Severity.HIGH

    def run(self, snapshot: Snapshot, target: Target) -> CheckResult:
        w = target.workload
        if w is None or w.state == WorkloadState.FINISHED:
            return CheckResult.not_applicable("the workload is finished" if w else "no Workload exists")
        p = pending(w)
        if p is None:
            # still holding quota while being deactivated (eviction in progress) is worth saying
            found = self._deactivated(snapshot, w, w.cond("QuotaReserved"))
        else:
            found = [*self._deactivated(snapshot, w, p.qr), *self._gated(w, p.qr, p.pm)]
        gates = (w.obj.get("metadata") or {}).get("annotations", {}).get(GATED_BY)
        return self.result(found, ev(
            "object", "true; " + (f"annotation {GATED_BY}: {gates}" if gates else f"no {GATED_BY} annotation"),
            kind="Workload", name=w.name, namespace=w.namespace, field="spec.active"))

    def _deactivated(self, snap: Snapshot, w: WorkloadView, qr: Condition | None) -> list[Finding]:
        if w.active:
            return []
        evicted = w.cond("Evicted")
        target_cond = w.cond("DeactivationTarget")
        requeued = w.cond("Requeued")
        reason = ""
        detail = ""
        evidence = [
            ev(
                "object",
                "spec.active: false",
                kind="Workload",
                name=w.name,
                namespace=w.namespace,
                field="spec.active",
                expected="true",
            )
        ]
        for cond in (evicted, target_cond, requeued):
            if cond is not None and (
                cond.reason.startswith("Deactivated")
                or cond.reason
                in ("InactiveWorkload", "RequeuingLimitExceeded", "MaximumExecutionTimeExceeded", "AdmissionCheck")
            ):
                evidence.append(condition_ev(w, cond))
                if not reason:
                    reason = (
                        cond.reason
                        if cond.reason.startswith("Deactivated") or cond.reason == "InactiveWorkload"
                        else f"DeactivatedDueTo{cond.reason}"
                    )
                    detail = cond.message
        if (
            qr is not None
            and qr.false
            and (qr.reason == "Deactivated" or qr.message.startswith("The workload is deactivated"))
        ):
            evidence.append(condition_ev(w, qr))
        reason = reason or "Deactivated"
        fixes: list[str] = []
        if "RequeuingLimitExceeded" in reason:
            cfg = kueue_config(snap)
            limit = cfg.wait_for_pods_ready.backoff_limit_count
            count = w.requeue_count
            why = (
                f"its pods missed the waitForPodsReady timeout ({cfg.wait_for_pods_ready.timeout}) "
                f"{count if count is not None else 'too many'} time(s)"
                f"{f' and backoffLimitCount is {limit}' if limit is not None else ''}"
            )
            if count is not None:
                evidence.append(
                    ev(
                        "object",
                        f"requeueState.count: {count}",
                        kind="Workload",
                        name=w.name,
                        namespace=w.namespace,
                        field="status.requeueState.count",
                    )
                )
            owner = w.owner or {}
            selector = f" -l batch.kubernetes.io/job-name={owner.get('name')}" if owner.get("kind") == "Job" else ""
            fixes.append(
                "Find why the pods never became ready (image pulls, unschedulable pods, crash loops): "
                f"`kubectl get pods -n {w.namespace}{selector}`, `kubectl describe pod <pod>`."
            )
        elif "MaximumExecutionTime" in reason:
            limit_s = (w.obj.get("spec") or {}).get("maximumExecutionTimeSeconds")
            why = f"it ran longer than spec.maximumExecutionTimeSeconds ({limit_s}s)"
            fixes.append("Raise the job label `kueue.x-k8s.io/max-exec-time-seconds` or make the job shorter.")
        elif "AdmissionCheck" in reason:
            rejected = [
                c.name for c in w.admission_checks if c.state == "Rejected" or "Previously: Rejected" in c.message
            ]
            if not rejected:
                rejected = rejected_checks(detail)
            why = f"admission check {', '.join(rejected) or '(see message)'} rejected it"
            fixes.append("Read the admission check's message (and its ProvisioningRequest) and fix the cause.")
        else:
            why = "a user or controller set spec.active: false"
        fixes.append(
            f"`kubectl patch workload {w.name} -n {w.namespace} --type merge -p "
            '\'{"spec":{"active":true}}\'` (or `kubectl kueue resume workload '
            f"{w.name} -n {w.namespace}`)."
        )
        when = evicted.last_transition if evicted is not None and evicted.last_transition else None
        ago = f" {human_duration(snap.age_seconds(when))} ago" if when else ""
        return [
            self.finding(
                CauseSlug.DEACTIVATED,
                f"Workload is deactivated (spec.active: false): {reason} — {why}",
                f"The Workload was deactivated{ago} because {why}"
                f"{': ' + detail if detail else ''}. A deactivated Workload is never considered for admission "
                "until spec.active is set back to true.",
                evidence=evidence,
                remediation=fixes,
                data={"reason": reason},
            )
        ]

    def _gated(self, w: WorkloadView, qr: Condition | None, pm: PendingMessage | None) -> list[Finding]:
        out: list[Finding] = []
        gate = (w.annotations.get(GATED_BY) or "").strip()
        qr_gated = (
            qr is not None
            and qr.false
            and (qr.reason == "AdmissionGated" or qr.message.startswith("Admission is gated by"))
        )
        if gate or (qr_gated and pm is not None and pm.has(ReasonKind.ADMISSION_GATED)):
            names = gate or next((r.name or "" for r in (pm.of(ReasonKind.ADMISSION_GATED) if pm else [])), "")
            evidence = []
            if gate:
                evidence.append(
                    ev(
                        "object",
                        f"{GATED_BY}: {gate}",
                        kind="Workload",
                        name=w.name,
                        namespace=w.namespace,
                        field=f"metadata.annotations[{GATED_BY}]",
                        expected="absent",
                    )
                )
            if qr_gated and qr is not None:
                evidence.append(condition_ev(w, qr))
            out.append(
                self.finding(
                    CauseSlug.ADMISSION_GATED,
                    f"admission is gated by {names}",
                    f"The annotation `{GATED_BY}` lists {names}: Kueue will not reserve quota until each named "
                    "controller removes itself from the annotation.",
                    confidence=Confidence.HIGH if gate else Confidence.MEDIUM,
                    evidence=evidence,
                    remediation=[
                        f"Check the controller(s) {names}: they must remove their name from `{GATED_BY}`.",
                        f"If the gate is stale: `kubectl annotate workload {w.name} -n {w.namespace} "
                        f"{GATED_BY}-` (and remove it from the job so it is not copied again).",
                    ],
                    data={"gates": names},
                )
            )
        blocked = w.cond("BlockedOnPreemptionGates")
        spec_gates = [
            g.get("name", "") for g in (w.obj.get("spec") or {}).get("preemptionGates") or () if isinstance(g, dict)
        ]
        status_gates = {
            g.get("name", ""): g.get("position", "")
            for g in (w.obj.get("status") or {}).get("preemptionGates") or ()
            if isinstance(g, dict)
        }
        msg_gated = pm is not None and pm.has(ReasonKind.PREEMPTION_GATED)
        if (blocked is not None and blocked.true) or msg_gated:
            closed = [g for g in spec_gates if status_gates.get(g, "Closed") != "Open"] or spec_gates
            positions = ", ".join(f"{g} ({status_gates.get(g, 'Closed')})" for g in spec_gates) or "none"
            evidence = [
                ev(
                    "object",
                    f"preemptionGates: {positions}",
                    kind="Workload",
                    name=w.name,
                    namespace=w.namespace,
                    field="status.preemptionGates",
                )
            ]
            if blocked is not None:
                evidence.append(
                    ev(
                        "condition",
                        f"BlockedOnPreemptionGates={blocked.status} ({blocked.reason}): {blocked.message}",
                        kind="Workload",
                        name=w.name,
                        namespace=w.namespace,
                        field="status.conditions[type=BlockedOnPreemptionGates]",
                    )
                )
            if msg_gated and qr is not None:
                evidence.append(condition_ev(w, qr))
            shown = ", ".join(closed) or "(unnamed)"
            out.append(
                self.finding(
                    CauseSlug.ADMISSION_GATED,
                    f"needs preemption, but preemption gate {shown} is closed",
                    "The workload only fits by preempting others, and its preemption gate(s) "
                    f"{shown} are Closed (`Workload requires preemption, but it's gated`): it waits until the "
                    "controller owning the gate opens it.",
                    evidence=evidence,
                    remediation=[
                        f"Find the controller that owns preemption gate(s) {shown}; it must set their "
                        "status.preemptionGates position to Open."
                    ],
                    data={"preemption_gates": closed},
                )
            )
        return out
