"""KD701 admission-checks: admission checks, ProvisioningRequests and WaitForPodsReady."""

from __future__ import annotations

from typing import Any

from kueuediag.analysis.kueue_config import kueue_config
from kueuediag.analysis.messages import checks_in_state, rejected_checks
from kueuediag.analysis.pod_history import history_evidence
from kueuediag.causes import CauseSlug
from kueuediag.check import Check
from kueuediag.models import CheckResult, Confidence, Evidence, Finding, Severity, ev
from kueuediag.snapshot.k8s import conditions, meta
from kueuediag.snapshot.kueue import (
    AdmissionCheckState,
    WorkloadState,
    WorkloadView,
    active_workloads,
    events_for,
    kueue_index,
)
from kueuediag.snapshot.model import Part, Snapshot
from kueuediag.target import Target
from kueuediag.timeutil import format_rfc3339, human_duration
from kueuediag_checks._evidence import condition_ev

WAITING_MSG = "waiting for all admitted workloads to be in PodsReady condition"
PR_CONDITIONS = ("Accepted", "Provisioned", "Failed", "CapacityRevoked", "BookingExpired")


class AdmissionChecks(Check):
    """Explains waits caused by admission checks and by WaitForPodsReady.

    What it detects:
        A Workload that holds quota but waits for an admission check (state `Pending`/`Retry`, e.g. a
        ProvisioningRequest that is not `Provisioned` yet); a check that `Rejected` the workload; a workload in
        requeue backoff after a PodsReady timeout (`status.requeueState.requeueAt` in the future, Evicted
        reason `PodsReadyTimeout`); and a workload held by `waitForPodsReady.blockAdmission` while other
        admitted workloads are not PodsReady (`waiting for all admitted workloads to be in PodsReady
        condition`). A check in `Retry` — or a workload evicted by a check in Retry (`Evicted due to
        AdmissionCheck in Retry state: ...`) — is `admission-check-retry`; when its backoff (`requeueAt`) has
        passed and Kueue recorded no requeue (`Requeued=True`, `BackoffFinished`) and no new decision, the
        finding says Kueue did not re-evaluate it (high severity).

    Why the workload stays pending:
        `Admitted=True` needs QuotaReserved **and** every admission check Ready, so a quota-holding workload
        waits (Admitted reason `UnsatisfiedChecks`) until its checks' controllers say Ready; a `Rejected`
        check deactivates it. After a PodsReady timeout Kueue evicts the workload and does not look at it again
        before `requeueAt` (exponential backoff). With blockAdmission, the scheduler admits nothing while any
        admitted workload's pods are not ready.

    Evidence:
        `status.admissionChecks[]` (state, message, lastTransitionTime), the AdmissionCheck object
        (controllerName, Active), ProvisioningRequest conditions (Accepted/Provisioned/Failed/CapacityRevoked/
        BookingExpired), `status.requeueState` with the Evicted/Requeued conditions, the QuotaReserved
        message, the admitted workloads whose PodsReady condition is not True, and for a PodsReady-timeout
        backoff the events of the job's pods that were deleted since (why they never became ready).

    How to fix:
        Read the check's message and its ProvisioningRequest (capacity not available, quota of the cloud
        provider); wait for the backoff to end or fix why pods did not become ready (image pulls,
        unschedulable pods); find the admitted workload whose pods are not ready, or set
        `waitForPodsReady.blockAdmission: false`.

    Example:
        `admission check gpu-provisioning is Pending for 14m: Provisioning Request wasn't provisioned. Waiting
        for resources, the request is queued [admission-check-pending]`
    """

    code = "KD701"
    name = "admission-checks"
    requires = (Part.WORKLOADS,)
    default_severity = Severity.MEDIUM

    def run(self, snapshot: Snapshot, target: Target) -> CheckResult:
        w = target.workload
        assert w is not None
        if w.state in (WorkloadState.ADMITTED, WorkloadState.FINISHED):
            return CheckResult.not_applicable(f"the workload is {w.state}: admission checks and backoff are behind it")
        out: list[Finding] = []
        out += self._backoff(snapshot, w)
        out += self._waiting_for_podsready(snapshot, w)
        out += self._checks(snapshot, w)
        out += self._stale_retry(snapshot, w)
        states = ", ".join(f"{c.name}={c.state}" for c in w.admission_checks) or "none"
        cfg = kueue_config(snapshot).wait_for_pods_ready
        return self.result(
            out,
            ev("object", f"admission checks: {states}", kind="Workload", name=w.name, namespace=w.namespace,
               field="status.admissionChecks"),
            ev("object", "no requeue backoff pending" if w.requeue_at is None or w.requeue_at <= snapshot.now
               else f"requeueAt {format_rfc3339(w.requeue_at)} (admission-check retry)", kind="Workload",
               name=w.name, namespace=w.namespace, field="status.requeueState"),
            ev("derived", "waitForPodsReady.blockAdmission is " + ("on, and no admitted workload blocks it"
                                                                   if cfg.block_admission else "off"),
               field="waitForPodsReady"),
        )

    # --- WaitForPodsReady requeue backoff -----------------------------------------------------------------
    def _backoff(self, snap: Snapshot, w: WorkloadView) -> list[Finding]:
        if not w.active or w.requeue_at is None or w.requeue_at <= snap.now:
            return []
        evicted = w.cond("Evicted")
        requeued = w.cond("Requeued")
        reasons = {c.reason for c in (evicted, requeued) if c is not None}
        if "AdmissionCheck" in reasons and "PodsReadyTimeout" not in reasons:
            return []  # admission-check retry backoff: reported with the check
        left = (w.requeue_at - snap.now).total_seconds()
        count = w.requeue_count or 0
        cfg = kueue_config(snap).wait_for_pods_ready
        evidence = [
            ev(
                "object",
                f"requeueState: count {count}, requeueAt {format_rfc3339(w.requeue_at)}",
                kind="Workload",
                name=w.name,
                namespace=w.namespace,
                field="status.requeueState",
                expected=f"requeueAt <= now ({format_rfc3339(snap.now)})",
            )
        ]
        for c in (evicted, requeued):
            if c is not None and c.reason == "PodsReadyTimeout":
                evidence.append(condition_ev(w, c))
        owner = snap.by_uid(str(w.owner["uid"])) if w.owner and w.owner.get("uid") else None
        evidence += history_evidence(snap, owner)
        underlying = _eviction_cause(w, "PodsReadyTimeout")
        cause_txt = {
            "WaitForStart": "its pods did not all become ready within the timeout after admission",
            "WaitForRecovery": "a pod failed and the pods did not recover within the recovery timeout",
        }.get(underlying or "", "its pods did not become ready in time")
        limit = cfg.backoff_limit_count
        remaining = ""
        if limit is not None:
            left_tries = max(limit - count, 0)
            remaining = (
                f" backoffLimitCount is {limit}: {left_tries} more timeout(s) and Kueue deactivates it "
                "(DeactivatedDueToRequeuingLimitExceeded)."
            )
        timeout_msg = f" ({evicted.message})" if evicted is not None and evicted.message else ""
        return [
            self.finding(
                CauseSlug.PODSREADY_BACKOFF,
                f"requeue backoff after {count} PodsReady timeout(s): waits until {format_rfc3339(w.requeue_at)} "
                f"({human_duration(left)} left)",
                f"Kueue evicted the workload because {cause_txt}{timeout_msg} and requeued it with exponential "
                f"backoff (about {cfg.backoff_base_seconds}s × 2^(count−1), capped at {cfg.backoff_max_seconds}s). "
                f"It is not considered for admission before {format_rfc3339(w.requeue_at)}, "
                f"{human_duration(left)} from now.{remaining}",
                evidence=evidence,
                remediation=[
                    "The backoff ends by itself; meanwhile find why the pods did not become ready: "
                    f"`kubectl get pods -n {w.namespace}` for this job, `kubectl describe pod` (image pulls, "
                    "unschedulable pods, crash loops, missing volumes).",
                    f"If the timeout ({cfg.timeout}) is too short for this job's start-up, raise "
                    "`waitForPodsReady.timeout` in the kueue-manager-config ConfigMap.",
                ],
                data={
                    "count": count,
                    "requeue_at": format_rfc3339(w.requeue_at),
                    "seconds_left": int(left),
                    "underlying_cause": underlying or "",
                },
            )
        ]

    # --- blockAdmission -------------------------------------------------------------------------------------
    def _waiting_for_podsready(self, snap: Snapshot, w: WorkloadView) -> list[Finding]:
        qr = w.cond("QuotaReserved")
        by_condition = (
            qr is not None
            and qr.false
            and (qr.reason in ("Waiting", "WaitingForPodsReady") or qr.message.startswith(WAITING_MSG))
        )
        cfg = kueue_config(snap).wait_for_pods_ready
        unready = _unready_admitted(snap)
        by_objects = qr is None and cfg.block_admission and w.active and any(x.uid != w.uid for x in unready)
        if not (by_condition or by_objects):
            return []
        blockers = [x for x in unready if x.uid != w.uid]
        evidence: list[Evidence] = []
        if qr is not None and by_condition:
            evidence.append(condition_ev(w, qr))
        if cfg.block_admission:
            evidence.append(
                ev(
                    "object",
                    "waitForPodsReady.blockAdmission: true",
                    kind="ConfigMap",
                    name="kueue-manager-config",
                    namespace=kueue_config(snap).namespace,
                    field="data[controller_manager_config.yaml] waitForPodsReady.blockAdmission",
                )
            )
        shown = []
        for x in sorted(blockers, key=lambda x: x.created or snap.now):
            pr = x.cond("PodsReady")
            adm = x.cond("Admitted")
            since = pr.last_transition if pr is not None else (adm.last_transition if adm is not None else None)
            age = human_duration(snap.age_seconds(since)) if since else "?"
            state = f"PodsReady=False ({pr.reason})" if pr is not None else "no PodsReady condition yet"
            shown.append(f"{x.ref()} ({state} for {age})")
            evidence.append(
                ev(
                    "condition",
                    f"{state}: {pr.message if pr is not None else ''}".rstrip(": "),
                    kind="Workload",
                    name=x.name,
                    namespace=x.namespace,
                    field="status.conditions[type=PodsReady]",
                    expected="True",
                )
            )
        names = ", ".join(shown[:5]) + (f" and {len(shown) - 5} more" if len(shown) > 5 else "")
        if blockers:
            title = (
                f"admission blocked until {len(blockers)} admitted workload(s) are PodsReady: "
                f"{', '.join(x.ref() for x in blockers[:3])}"
            )
            who = f"Right now {names} {'is' if len(blockers) == 1 else 'are'} not ready."
        else:
            title = "admission blocked by waitForPodsReady.blockAdmission"
            who = (
                "No admitted workload without PodsReady is in the snapshot: the condition may be stale, or "
                "the snapshot does not include every namespace."
            )
        return [
            self.finding(
                CauseSlug.WAITING_FOR_PODSREADY,
                title,
                "waitForPodsReady.blockAdmission is on: the scheduler admits nothing new while any admitted "
                f"workload's pods are not all ready (`{WAITING_MSG}`). {who}",
                confidence=Confidence.HIGH if by_condition else Confidence.MEDIUM,
                evidence=evidence,
                remediation=[
                    "Find why the named workload's pods are not ready (`kubectl describe pod`, FailedScheduling "
                    "events, image pulls); it is evicted after waitForPodsReady.timeout "
                    f"({cfg.timeout}) at the latest.",
                    "If one slow job should not block the cluster, set `waitForPodsReady.blockAdmission: false` in "
                    "the kueue-manager-config ConfigMap and restart kueue-controller-manager.",
                ],
                data={"blocking": [x.ref() for x in blockers]},
            )
        ]

    # --- admission checks --------------------------------------------------------------------------------
    def _checks(self, snap: Snapshot, w: WorkloadView) -> list[Finding]:
        out: list[Finding] = []
        rejected = self._rejected_names(snap, w)
        for c in w.admission_checks:
            if c.name in rejected:
                continue
            retry_backoff = (
                w.requeue_at is not None
                and w.requeue_at > snap.now
                and any(x is not None and x.reason == "AdmissionCheck" for x in (w.cond("Evicted"), w.cond("Requeued")))
            )
            # a check left in Retry by an AdmissionCheck eviction is still the reason after the backoff ended:
            # the workload re-enters the queue only to fail the same check again
            failed_retry = c.state == "Retry" and any(
                x is not None and x.true and x.reason == "AdmissionCheck" for x in (w.cond("Evicted"),))
            if c.state in ("Pending", "Retry") and (
                    w.state == WorkloadState.QUOTA_RESERVED or retry_backoff or failed_retry):
                out.append(self._pending(snap, w, c, retry_backoff))
        for name in rejected:
            out.append(self._rejected(snap, w, name, rejected[name]))
        admitted = w.cond("Admitted")
        if (
            not w.admission_checks
            and w.state == WorkloadState.QUOTA_RESERVED
            and admitted is not None
            and admitted.reason in ("UnsatisfiedChecks", "UnsatisfiedAdmissionChecks")
        ):
            cq = kueue_index(snap).cluster_queues.get(w.admission_cq or "")
            names = [n for n, _ in cq.admission_checks] if cq is not None else []
            shown = ", ".join(names) or "(unknown)"
            out.append(
                self.finding(
                    CauseSlug.ADMISSION_CHECK_PENDING,
                    f"holds quota, waiting for admission check(s) {shown}",
                    f"The workload holds quota in ClusterQueue {w.admission_cq} but is not admitted "
                    f"(`{admitted.message}`), and its status lists no admission check state yet: the check "
                    f"controller(s) for {shown} have not written one.",
                    confidence=Confidence.MEDIUM,
                    evidence=[condition_ev(w, admitted)]
                    + (
                        [
                            ev(
                                "object",
                                f"admission checks: {shown}",
                                kind="ClusterQueue",
                                name=cq.name,
                                field="spec.admissionChecksStrategy.admissionChecks",
                            )
                        ]
                        if cq is not None
                        else []
                    ),
                    remediation=[
                        f"Check the controllers of AdmissionCheck(s) {shown} (`kubectl get admissionchecks`, "
                        "their Active condition and the controller logs)."
                    ],
                    data={"check": shown, "state": "", "seconds": None},
                )
            )
        return out

    def _stale_retry(self, snap: Snapshot, w: WorkloadView) -> list[Finding]:
        """Evicted by an admission check in Retry, its backoff over, and Kueue never requeued it."""
        evicted, requeued, qr = w.cond("Evicted"), w.cond("Requeued"), w.cond("QuotaReserved")
        if not w.active or w.state != "pending" or w.requeue_at is None:
            return []
        if evicted is None or not evicted.true or evicted.reason != "AdmissionCheck":
            return []
        overdue = (snap.now - w.requeue_at).total_seconds()
        if overdue < 60:
            return []  # within the backoff (reported with the check) or just past it
        if requeued is not None and requeued.true and requeued.last_transition is not None \
                and requeued.last_transition >= w.requeue_at:
            return []  # Kueue requeued it when the backoff ended (BackoffFinished)
        if qr is not None and qr.last_transition is not None and qr.last_transition > w.requeue_at:
            return []  # evaluated again since
        names = checks_in_state(evicted.message, "Retry") or [c.name for c in w.admission_checks]
        shown = ", ".join(names) or "(unnamed)"
        evidence = [condition_ev(w, evicted)]
        if requeued is not None:
            evidence.append(condition_ev(w, requeued))
        evidence.append(ev("object", f"requeueState: count {w.requeue_count or 0}, requeueAt "
                           f"{format_rfc3339(w.requeue_at)} ({human_duration(overdue)} ago)", kind="Workload",
                           name=w.name, namespace=w.namespace, field="status.requeueState",
                           expected="Requeued=True (BackoffFinished) once requeueAt passes"))
        for c in w.admission_checks:
            if c.name in names:
                evidence.append(ev("object", f"state {c.state}: {c.message}".rstrip(": "), kind="Workload",
                                   name=w.name, namespace=w.namespace, field=f"status.admissionChecks[name={c.name}]"))
        return [self.finding(
            CauseSlug.ADMISSION_CHECK_RETRY,
            f"evicted by admission check {shown} in Retry; its backoff ended {human_duration(overdue)} ago and Kueue "
            "has not re-evaluated it",
            f"Kueue evicted the workload because admission check {shown} asked for a retry (`{evicted.message}`) "
            f"and set requeueAt {format_rfc3339(w.requeue_at)}. That time passed {human_duration(overdue)} ago, yet "
            "the workload was not requeued (Requeued is not True with BackoffFinished) and no new QuotaReserved "
            "decision was recorded since: the workload controller did not pick it up again.",
            severity=Severity.HIGH,
            evidence=evidence,
            remediation=[
                "Check the Kueue controller (the system-health check, KD901) and its logs for this workload: "
                f"`kubectl -n kueue-system logs deploy/kueue-controller-manager | grep {w.name}`.",
                f"Stop-gap: deactivate and reactivate it to requeue it now: `kubectl patch workload {w.name} -n "
                f"{w.namespace} --type merge -p '{{\"spec\":{{\"active\":false}}}}'`, then the same with true.",
            ],
            data={"checks": names, "requeue_at": format_rfc3339(w.requeue_at), "overdue_seconds": int(overdue)},
        )]

    def _rejected_names(self, snap: Snapshot, w: WorkloadView) -> dict[str, str]:
        """check name → the message that says it rejected the workload."""
        out: dict[str, str] = {c.name: c.message for c in w.admission_checks if c.state == "Rejected"}
        if w.active:
            # reactivated since: old "Previously: Rejected" messages and events are history, not the cause
            return out
        for c in w.admission_checks:
            if "Previously: Rejected" in c.message:
                out.setdefault(c.name, c.message)
        texts = [
            x.message
            for x in (w.cond("Evicted"), w.cond("DeactivationTarget"))
            if x is not None and "AdmissionCheck" in x.reason
        ]
        texts += [
            e.message for e in events_for(snap, "Workload", w.namespace, w.name) if e.reason == "AdmissionCheckRejected"
        ]
        for text in texts:
            for name in rejected_checks(text):
                if name not in out or out[name].startswith("Reset to Pending"):
                    out[name] = text
        return out

    def _check_object(self, snap: Snapshot, name: str) -> tuple[list[Evidence], str]:
        obj = kueue_index(snap).admission_checks.get(name)
        if obj is None:
            return [], ""
        spec = obj.get("spec") or {}
        active = conditions(obj).get("Active")
        ctrl = spec.get("controllerName", "?")
        evidence = [
            ev(
                "object",
                f"controllerName: {ctrl}"
                + (f", Active={active.status} ({active.reason})" if active is not None else ""),
                kind="AdmissionCheck",
                name=name,
                field="spec.controllerName",
            )
        ]
        return evidence, str(ctrl)

    def _pending(self, snap: Snapshot, w: WorkloadView, c: AdmissionCheckState, retry: bool) -> Finding:
        age = snap.age_seconds(c.last_transition)
        age_s = f" for {human_duration(age)}" if age is not None else ""
        evidence = [
            ev(
                "object",
                f"state {c.state}{age_s}: {c.message}".rstrip(": "),
                kind="Workload",
                name=w.name,
                namespace=w.namespace,
                field=f"status.admissionChecks[name={c.name}]",
                expected="Ready",
            )
        ]
        ac_ev, ctrl = self._check_object(snap, c.name)
        evidence += ac_ev
        admitted = w.cond("Admitted")
        if (
            admitted is not None
            and admitted.false
            and admitted.reason in ("UnsatisfiedChecks", "UnsatisfiedAdmissionChecks", "NoReservationUnsatisfiedChecks")
        ):
            evidence.append(condition_ev(w, admitted))
        prs = provisioning_requests(snap, w, c.name)
        pr_text = ""
        severity = self.default_severity
        if prs:
            pr = prs[-1]
            pr_name, summary, bad, pr_ev = _pr_evidence(pr, w.namespace)
            evidence.append(pr_ev)
            pr_text = f" ProvisioningRequest {pr_name}: {summary}."
            if bad:
                severity = Severity.HIGH
        if retry and w.requeue_at is not None:
            evicted = w.cond("Evicted")
            if evicted is not None and evicted.reason == "AdmissionCheck":
                evidence.insert(1, condition_ev(w, evicted))
            left = human_duration((w.requeue_at - snap.now).total_seconds())
            evidence.append(
                ev(
                    "object",
                    f"requeueAt {format_rfc3339(w.requeue_at)} (count {w.requeue_count or 0})",
                    kind="Workload",
                    name=w.name,
                    namespace=w.namespace,
                    field="status.requeueState",
                )
            )
            lead = (
                f"admission check {c.name} asked for a retry: Kueue evicted the workload and requeues it at "
                f"{format_rfc3339(w.requeue_at)} ({left} left)"
            )
            title = f"admission check {c.name} retry: requeued at {format_rfc3339(w.requeue_at)} ({left} left)"
        elif not w.holds_quota:
            evicted = w.cond("Evicted")
            if evicted is not None:
                evidence.insert(1, condition_ev(w, evicted))
            lead = (
                f"Admission check {c.name}{' (controller ' + ctrl + ')' if ctrl else ''} failed and is still "
                f"{c.state}{age_s}: Kueue evicted the workload, released its quota and requeued it; once it gets "
                "quota again the same check runs again"
            )
            short = c.message if len(c.message) <= 90 else c.message[:87] + "..."
            title = f"admission check {c.name} is {c.state}{age_s}" + (f": {short}" if short else "")
        else:
            lead = (
                f"The workload holds quota but is not admitted: admission check {c.name}"
                f"{' (controller ' + ctrl + ')' if ctrl else ''} is {c.state}{age_s}"
            )
            short = c.message if len(c.message) <= 90 else c.message[:87] + "..."
            title = f"admission check {c.name} is {c.state}{age_s}" + (f": {short}" if short else "")
        fixes = [
            f"`kubectl get workload {w.name} -n {w.namespace} -o jsonpath='{{.status.admissionChecks}}'` "
            f"and the check's controller ({ctrl or 'see AdmissionCheck ' + c.name}) logs."
        ]
        if prs:
            fixes.append(
                f"`kubectl describe provisioningrequest {meta(prs[-1]).get('name')} -n {w.namespace}` "
                "(cluster-autoscaler explains why capacity is not provisioned: stockout, quota, "
                "machine type); consider another flavor or a smaller request."
            )
        return self.finding(
            CauseSlug.ADMISSION_CHECK_RETRY if retry or c.state == "Retry" else CauseSlug.ADMISSION_CHECK_PENDING,
            title,
            f"{lead}"
            + (f" — message: {c.message}." if c.message and not retry else ".")
            + pr_text
            + " Admission needs every admission check Ready.",
            severity=severity,
            evidence=evidence,
            remediation=fixes,
            data={"check": c.name, "state": c.state, "seconds": int(age) if age is not None else None},
        )

    def _rejected(self, snap: Snapshot, w: WorkloadView, name: str, text: str) -> Finding:
        evidence = [
            ev(
                "object" if name in {c.name for c in w.admission_checks} else "condition",
                text,
                kind="Workload",
                name=w.name,
                namespace=w.namespace,
                field=f"status.admissionChecks[name={name}]",
                expected="Ready",
            )
        ]
        for cond in (w.cond("Evicted"), w.cond("DeactivationTarget")):
            if cond is not None and "AdmissionCheck" in cond.reason:
                evidence.append(condition_ev(w, cond))
        ac_ev, ctrl = self._check_object(snap, name)
        evidence += ac_ev
        prs = provisioning_requests(snap, w, name)
        pr_text = ""
        if prs:
            pr_name, summary, _, pr_ev = _pr_evidence(prs[-1], w.namespace)
            evidence.append(pr_ev)
            pr_text = f" Its ProvisioningRequest {pr_name}: {summary}."
        deactivated = " and Kueue deactivated it (spec.active: false)" if not w.active else ""
        return self.finding(
            CauseSlug.ADMISSION_CHECK_REJECTED,
            f"admission check {name} rejected the workload",
            f"Admission check {name}{' (controller ' + ctrl + ')' if ctrl else ''} reported Rejected"
            f"{deactivated}: {text}.{pr_text} It will not be admitted until the cause is fixed and the "
            "Workload is reactivated.",
            severity=Severity.HIGH,
            evidence=evidence,
            remediation=[
                f"Read the check's message and the ProvisioningRequest (`kubectl describe "
                f"provisioningrequest -n {w.namespace}`); fix the request or the capacity problem.",
                f"Then `kubectl patch workload {w.name} -n {w.namespace} --type merge -p "
                '\'{"spec":{"active":true}}\'`.',
            ],
            data={"check": name},
        )


# --- helpers -------------------------------------------------------------------------------------------------


def provisioning_requests(snap: Snapshot, w: WorkloadView, check: str) -> list[dict[str, Any]]:
    """ProvisioningRequests Kueue created for this workload and check (`<workload>-<check>-<attempt>`), oldest
    attempt first."""
    prefix = f"{w.name}-{check}-"
    found: dict[str, dict[str, Any]] = {}
    for obj in snap.children(w.uid):
        if obj.get("kind") == "ProvisioningRequest" and str(meta(obj).get("name", "")).startswith(prefix):
            found[meta(obj)["name"]] = obj
    for obj in snap.in_namespace("ProvisioningRequest", w.namespace):
        if str(meta(obj).get("name", "")).startswith(prefix):
            found.setdefault(meta(obj)["name"], obj)
    return sorted(found.values(), key=lambda o: _attempt(str(meta(o).get("name")), prefix))


def _attempt(name: str, prefix: str) -> int:
    tail = name[len(prefix) :]
    return int(tail) if tail.isdigit() else 0


def _pr_summary(pr: dict[str, Any]) -> tuple[str, bool]:
    conds = conditions(pr)
    parts = []
    bad = False
    for t in PR_CONDITIONS:
        c = conds.get(t)
        if c is None:
            continue
        text = f"{t}={c.status}" + (f" ({c.reason})" if c.reason else "")
        if c.message and (
            c.true and t in ("Failed", "CapacityRevoked", "BookingExpired") or (t == "Provisioned" and not c.true)
        ):
            text += f": {c.message}"
        parts.append(text)
        if c.true and t in ("Failed", "CapacityRevoked", "BookingExpired"):
            bad = True
    cls = (pr.get("spec") or {}).get("provisioningClassName")
    prefix = f"class {cls}; " if cls else ""
    return prefix + ("; ".join(parts) if parts else "no conditions yet (not picked up by cluster-autoscaler)"), bad


def _unready_admitted(snap: Snapshot) -> list[WorkloadView]:
    """Admitted, unfinished Workloads whose pods are not all ready: what blocks admission under
    `waitForPodsReady.blockAdmission` (read once per snapshot, memoised)."""
    return snap.memo("admission-checks:unready-admitted", lambda: [
        x for x in active_workloads(snap)
        if x.is_true("Admitted") and not x.is_true("Finished") and not x.is_true("PodsReady")])


def _eviction_cause(w: WorkloadView, reason: str) -> str | None:
    stats = ((w.obj.get("status") or {}).get("schedulingStats") or {}).get("evictions") or []
    for s in stats:
        if isinstance(s, dict) and s.get("reason") == reason and s.get("underlyingCause"):
            return str(s["underlyingCause"])
    return None


def _pr_evidence(pr: dict[str, Any], namespace: str) -> tuple[str, str, bool, Evidence]:
    """(name, condition summary, whether it failed, evidence) for a ProvisioningRequest."""
    summary, bad = _pr_summary(pr)
    name = str(meta(pr).get("name"))
    return name, summary, bad, ev("object", summary, kind="ProvisioningRequest", name=name, namespace=namespace,
                                  field="status.conditions")
