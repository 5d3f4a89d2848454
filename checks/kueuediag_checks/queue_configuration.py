"""KD001 queue-configuration: can this workload ever be admitted as submitted and configured?"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

from kueuediag.analysis.flavor_match import FlavorExclusion, group_exclusions, groups_for_pod_set
from kueuediag.analysis.kueue_config import (
    FRAMEWORKS,
    KueueConfig,
    default_namespace_selector,
    kueue_config,
    namespace_labels,
    selector_str,
)
from kueuediag.analysis.messages import PendingMessage, parse_cq_inactive_message, parse_pending_message
from kueuediag.check import Check, ev
from kueuediag.models import Confidence, Evidence, Finding, Severity
from kueuediag.quantity import format_quantity
from kueuediag.snapshot.k8s import Condition, conditions, label_selector_matches, labels, meta
from kueuediag.snapshot.kueue import (
    ClusterQueueView,
    KueueIndex,
    LocalQueueView,
    WorkloadView,
    events_for,
    kueue_index,
)
from kueuediag.snapshot.model import Snapshot
from kueuediag.target import Target, workload_for_owner
from kueuediag.timeutil import format_rfc3339, human_duration, parse_time_lenient

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
GATED_BY = "kueue.x-k8s.io/admission-gated-by"
STOPPED = ("Hold", "HoldAndDrain")
_PART_ORDER = ("stopped", "terminating", "missing-flavors", "missing-checks", "inactive-checks", "missing-topology")
_INACTIVE_WORDS = {
    "stopped": "is stopped",
    "terminating": "is terminating",
    "missing-flavors": "references missing ResourceFlavor(s)",
    "missing-checks": "references missing AdmissionCheck(s)",
    "inactive-checks": "references inactive AdmissionCheck(s)",
    "missing-topology": "references missing Topology",
}


@dataclass
class _Reason:
    title: str
    message: str
    evidence: list[Evidence] = field(default_factory=list)
    remediation: list[str] = field(default_factory=list)
    key: str = ""


class QueueConfiguration(Check):
    """Finds submission and queue-configuration mistakes that keep a workload pending forever.

    What it detects:
        Everything between the job and the scheduler that can never resolve by waiting: a job Kueue does
        not manage at all (no `kueue.x-k8s.io/queue-name` label and no LocalQueue named `default`,
        namespace outside `managedJobsNamespaceSelector`, integration not enabled in `integrations.frameworks`);
        a missing or stopped LocalQueue; a LocalQueue pointing at a missing ClusterQueue; an inactive
        ClusterQueue (stopped, missing ResourceFlavor/AdmissionCheck/Topology, inactive AdmissionCheck) — also
        recomputed from the objects when the ClusterQueue has no status yet; a `namespaceSelector` that does not
        select the namespace (null selects nothing, `{}` everything); a requested resource no resourceGroup
        covers; pod constraints that exclude every flavor; a deactivated Workload (`spec.active: false`); and
        admission gates (`kueue.x-k8s.io/admission-gated-by`, closed preemption gates).

    Why the workload stays pending:
        Kueue never gets as far as looking at quota. Without a Workload nothing happens at all; with a
        missing/stopped queue the workload controller marks it `Inadmissible` (`LocalQueue <name> doesn't
        exist`, `ClusterQueue <name> is inactive`); a namespace or resource mismatch makes the scheduler write
        `workload namespace doesn't match ClusterQueue selector` or `resource <r> unavailable in ClusterQueue`
        on every cycle. None of these go away with time.

    Evidence:
        The objects themselves: the job's labels, the Namespace labels, the `kueue-manager-config` ConfigMap
        (`controller_manager_config.yaml`), LocalQueue `spec.stopPolicy` and `Active` condition, ClusterQueue
        `spec.resourceGroups`, `spec.namespaceSelector`, `spec.admissionChecksStrategy`, `spec.stopPolicy` and
        `Active` condition, ResourceFlavor `nodeLabels`/`nodeTaints`, the Workload's `spec.active`,
        annotations and conditions. The QuotaReserved message, when present, is quoted as corroboration.

    How to fix:
        Each finding names the exact field and a kubectl command: add the queue-name label or create a
        `default` LocalQueue, enable the integration, create the missing LocalQueue/ClusterQueue/ResourceFlavor,
        set `stopPolicy: None`, widen `namespaceSelector`, cover the resource, align nodeSelector/tolerations
        with a flavor, or reactivate the Workload once its deactivation reason is fixed.

    Example:
        `job/notebook-sweep has no Workload: no kueue.x-k8s.io/queue-name label and namespace research has no
        LocalQueue named default [not-managed]`
    """

    code = "KD001"
    name = "queue-configuration"
    requires = ()
    needs_workload = False
    default_severity = Severity.HIGH

    def run(self, snapshot: Snapshot, target: Target) -> list[Finding]:
        if target.workload is None:
            return self._not_managed(snapshot, target)
        w = target.workload
        if w.state == "finished":
            return []
        qr = w.cond("QuotaReserved")
        if w.state != "pending":
            # still holding quota while being deactivated (eviction in progress) is worth saying; the rest is
            # about workloads that never got quota
            return self._deactivated(snapshot, w, qr)
        pm = parse_pending_message(qr.message) if qr is not None and qr.false and qr.message else None
        findings: list[Finding] = []
        findings += self._deactivated(snapshot, w, qr)
        findings += self._gated(w, qr, pm)
        findings += self._queues(snapshot, w, qr, pm)
        return findings

    # --- not managed ---------------------------------------------------------------------------------------
    def _not_managed(self, snap: Snapshot, target: Target) -> list[Finding]:
        owner = target.owner
        if owner is None or target.workload_unknown:
            return []  # a Workload that could not be read is unknown, never evidence that Kueue created none
        kind = str(owner.get("kind", ""))
        group = str(owner.get("apiVersion", "")).rpartition("/")[0]
        m = meta(owner)
        ns, name = str(m.get("namespace") or ""), str(m.get("name") or "")
        who = f"{kind.lower()}/{name}"
        cfg = kueue_config(snap)
        parent = _controller_parent(snap, owner)
        parent_wl = workload_for_owner(snap, parent) if parent is not None else None
        if parent is not None and parent_wl is not None:
            pkind, pname = str(parent.get("kind")), str(meta(parent).get("name"))
            return [
                self.finding(
                    "not-managed",
                    f"{who} is part of {pkind}/{pname}: Kueue queues it as workload/{parent_wl.name}",
                    f"Kueue creates one Workload for the top-level {pkind}, not for the {kind} it owns; the {kind} "
                    f"waits with its parent. Diagnose {pkind.lower()}/{pname} (workload/{parent_wl.name}) instead.",
                    severity=Severity.INFO,
                    evidence=[
                        ev(
                            "object",
                            f"controller ownerReference {pkind}/{pname}",
                            kind=kind,
                            name=name,
                            namespace=ns,
                            field="metadata.ownerReferences",
                        ),
                        ev(
                            "object",
                            f"Workload for {pkind}/{pname}",
                            kind="Workload",
                            name=parent_wl.name,
                            namespace=parent_wl.namespace,
                            field="metadata.ownerReferences",
                        ),
                    ],
                    remediation=[f"`kueuediag why {pkind.lower()}/{pname} -n {ns}`"],
                    data={"reasons": ["parent"], "parent": f"{pkind}/{pname}", "workload": parent_wl.name},
                )
            ]
        cfg_ref = _cfg_ref(cfg)
        cfg_field = "data[controller_manager_config.yaml]"
        reasons: list[_Reason] = []

        # 1. integration (framework) enabled?
        framework = FRAMEWORKS.get((kind, group))
        if framework is None:
            reasons.append(
                _Reason(
                    f"Kueue has no integration for {kind} ({group or 'core'})",
                    f"Kueue only manages the kinds of its integrations; {kind}.{group or 'core'} is not one of them, "
                    "so it is never queued. Submit it through a supported kind (batch Job, JobSet, ...) or wrap it "
                    "in an AppWrapper.",
                    [
                        ev(
                            "object",
                            f"apiVersion {owner.get('apiVersion')}, kind {kind}",
                            kind=kind,
                            name=name,
                            namespace=ns,
                        )
                    ],
                    ["Submit the work as a Kueue-supported kind (see `integrations.frameworks` in the Kueue docs)."],
                    key="framework",
                )
            )
        elif not cfg.framework_enabled(framework):
            shown = ", ".join(cfg.frameworks) or "(none)"
            default_note = "" if cfg.frameworks_set else " (the default: only batch/job)"
            reasons.append(
                _Reason(
                    f"integration {framework} is not enabled in integrations.frameworks",
                    f"The Kueue manager configuration enables only [{shown}]{default_note}, so Kueue ignores every "
                    f"{kind}: no Workload is created and nothing will admit it.",
                    [
                        ev(
                            "object",
                            f"integrations.frameworks: [{shown}]{default_note}",
                            kind="ConfigMap" if cfg.found else None,
                            name=cfg_ref[1],
                            namespace=cfg_ref[0],
                            field=f"{cfg_field} integrations.frameworks",
                            expected=f"contains {framework}",
                        )
                    ],
                    [
                        f"Add `{framework}` to `integrations.frameworks` in `kubectl -n {cfg.namespace} edit configmap "
                        f"kueue-manager-config` (key controller_manager_config.yaml), then `kubectl -n {cfg.namespace} "
                        "rollout restart deployment kueue-controller-manager`; resubmit the job afterwards."
                    ],
                    key="framework",
                )
            )

        # 2. namespace selected by managedJobsNamespaceSelector?
        ns_labels, ns_exists = namespace_labels(snap, ns)
        selector = cfg.managed_jobs_namespace_selector or default_namespace_selector(cfg.namespace)
        if not label_selector_matches(selector, ns_labels):
            sel = selector_str(selector)
            fix = _label_fix(selector, ns)
            reasons.append(
                _Reason(
                    f"namespace {ns} is outside managedJobsNamespaceSelector ({sel})",
                    f"Kueue only manages jobs in namespaces matching `managedJobsNamespaceSelector` ({sel}"
                    f"{'' if cfg.namespace_selector_set else ', the default'}); namespace {ns} has labels "
                    f"{_labels_str(ns_labels)}. The controller logs `namespace selector does not match, ignoring "
                    "the job` and creates no Workload.",
                    [
                        ev(
                            "object",
                            f"labels {_labels_str(ns_labels)}",
                            kind="Namespace",
                            name=ns,
                            field="metadata.labels",
                            expected=f"match {sel}",
                        ),
                        ev(
                            "object",
                            f"managedJobsNamespaceSelector: {sel}",
                            kind="ConfigMap" if cfg.found else None,
                            name=cfg_ref[1],
                            namespace=cfg_ref[0],
                            field=f"{cfg_field} managedJobsNamespaceSelector",
                        ),
                    ],
                    [
                        fix
                        or f"Change `managedJobsNamespaceSelector` in ConfigMap {cfg.namespace}/kueue-manager-config "
                        f"so it selects namespace {ns}, then restart kueue-controller-manager.",
                        "Then resubmit the job (existing jobs are not re-evaluated until they change).",
                    ],
                    key="namespace",
                )
            )
        elif (
            cfg.pod_namespace_selector is not None
            and kind == "Pod"
            and not label_selector_matches(cfg.pod_namespace_selector, ns_labels)
        ):
            sel = selector_str(cfg.pod_namespace_selector)
            reasons.append(
                _Reason(
                    f"namespace {ns} is outside integrations.podOptions.namespaceSelector ({sel})",
                    f"The pod integration only manages pods in namespaces matching `integrations.podOptions."
                    f"namespaceSelector` ({sel}); namespace {ns} has labels {_labels_str(ns_labels)}.",
                    [
                        ev(
                            "object",
                            f"podOptions.namespaceSelector: {sel}",
                            kind="ConfigMap" if cfg.found else None,
                            name=cfg_ref[1],
                            namespace=cfg_ref[0],
                            field=f"{cfg_field} integrations.podOptions",
                        )
                    ],
                    [_label_fix(cfg.pod_namespace_selector, ns) or "Widen integrations.podOptions.namespaceSelector."],
                    key="namespace",
                )
            )

        # 3. queue-name label (or a LocalQueue named `default`, or manageJobsWithoutQueueName)
        owner_labels = labels(owner)
        queue = owner_labels.get(QUEUE_LABEL)
        idx = kueue_index(snap)
        ns_queues = sorted(lq.name for (lns, _), lq in idx.local_queues.items() if lns == ns)
        if not queue and not cfg.manage_jobs_without_queue_name:
            default_lq = idx.local_queues.get((ns, "default"))
            created = parse_time_lenient(m.get("creationTimestamp"))
            suggestions = ", ".join(ns_queues) if ns_queues else "none"
            label_cmd = (
                f"Resubmit the {kind} with `metadata.labels.{QUEUE_LABEL}: <localqueue>` "
                f"(LocalQueues in {ns}: {suggestions}; `kubectl get localqueues -n {ns}`)."
            )
            if default_lq is None:
                reasons.append(
                    _Reason(
                        f"no {QUEUE_LABEL} label and namespace {ns} has no LocalQueue named default",
                        f"The {kind} has no `{QUEUE_LABEL}` label, namespace {ns} has no LocalQueue named `default` "
                        f"to fall back on, and `manageJobsWithoutQueueName` is false"
                        f"{'' if cfg.found else ' (the default)'}. Kueue logs `queue-name label is not set, ignoring "
                        "the job` and never creates a Workload.",
                        [
                            ev(
                                "object",
                                f"labels {_labels_str(owner_labels)}",
                                kind=kind,
                                name=name,
                                namespace=ns,
                                field=f"metadata.labels[{QUEUE_LABEL}]",
                                expected="<localqueue name>",
                            ),
                            ev(
                                "derived",
                                f"LocalQueues in namespace {ns}: {suggestions}",
                                kind="Namespace",
                                name=ns,
                                expected="a LocalQueue named default",
                            ),
                            ev(
                                "object",
                                f"manageJobsWithoutQueueName: {str(cfg.manage_jobs_without_queue_name).lower()}",
                                kind="ConfigMap" if cfg.found else None,
                                name=cfg_ref[1],
                                namespace=cfg_ref[0],
                                field=f"{cfg_field} manageJobsWithoutQueueName",
                            ),
                        ],
                        [
                            label_cmd,
                            f"Or create a default LocalQueue so unlabelled jobs are queued: `kubectl kueue create "
                            f"localqueue default -n {ns} -c <clusterqueue>` (applies to jobs created afterwards).",
                        ],
                        key="queue-name",
                    )
                )
            else:
                lq_created = parse_time_lenient(meta(default_lq.obj).get("creationTimestamp"))
                late = created is not None and lq_created is not None and lq_created > created
                when = (
                    f"LocalQueue default was created {format_rfc3339(lq_created)}, after the {kind} "
                    f"({format_rfc3339(created)}); the defaulting webhook only labels jobs at creation"
                    if late and lq_created and created
                    else "the LocalQueue `default` exists, yet the label was not defaulted (created before the "
                    "LocalQueue or by a client that bypassed the webhook)"
                )
                reasons.append(
                    _Reason(
                        f"no {QUEUE_LABEL} label ({when.split(';')[0]})",
                        f"The {kind} has no `{QUEUE_LABEL}` label: {when}. Kueue ignores it.",
                        [
                            ev(
                                "object",
                                f"labels {_labels_str(owner_labels)}",
                                kind=kind,
                                name=name,
                                namespace=ns,
                                field=f"metadata.labels[{QUEUE_LABEL}]",
                                expected="default",
                            ),
                            ev(
                                "object",
                                f"created {format_rfc3339(lq_created) if lq_created else '?'}",
                                kind="LocalQueue",
                                name="default",
                                namespace=ns,
                                field="metadata.creationTimestamp",
                            ),
                        ],
                        [
                            f"Delete and resubmit the {kind} (it will be defaulted to LocalQueue default), or resubmit "
                            f"with `metadata.labels.{QUEUE_LABEL}: default`."
                        ],
                        key="queue-name",
                    )
                )
        confidence = Confidence.HIGH if cfg.found or all(r.key == "queue-name" for r in reasons) else Confidence.MEDIUM
        if not reasons:
            # Every precondition holds: Kueue should have created a Workload. Look at the job's events.
            evs = events_for(snap, kind, ns, name)
            interesting = [
                e
                for e in evs
                if e.reason in ("ErrWorkloadCompose", "JobNestingTooDeep", "CreatedWorkload", "DeletedWorkload")
            ]
            detail = "; ".join(f"{e.reason}: {e.message}" for e in interesting[-3:])
            age = snap.age_seconds(parse_time_lenient(m.get("creationTimestamp")))
            fresh = (
                f"It was created only {human_duration(age)} before the snapshot: Kueue may simply not have "
                "reconciled it yet. "
                if age is not None and age < 60
                else ""
            )
            reasons.append(
                _Reason(
                    "labelled and in a managed namespace, but Kueue created no Workload",
                    f"The {kind} carries `{QUEUE_LABEL}={queue}`"
                    f"{' (manageJobsWithoutQueueName is true)' if not queue else ''}, its namespace matches "
                    f"managedJobsNamespaceSelector and the integration is enabled, yet there is no Workload. "
                    + (f"Events: {detail}. " if detail else "No Kueue event on the job either. ")
                    + fresh
                    + ("Otherwise the" if fresh else "The")
                    + " Kueue controller may be down, or the Workload could not be built.",
                    [ev("event", f"{e.reason}: {e.message}", kind=kind, name=name, namespace=ns) for e in interesting]
                    or [
                        ev(
                            "derived",
                            "no Workload with label kueue.x-k8s.io/job-uid=" + str(m.get("uid")),
                            kind=kind,
                            name=name,
                            namespace=ns,
                            field="metadata.uid",
                        )
                    ],
                    [
                        f"`kubectl -n {cfg.namespace} logs deploy/kueue-controller-manager | grep {name}`; check the "
                        "controller is running (see the controller-health check)."
                    ],
                    key="unknown",
                )
            )
            confidence = Confidence.LOW
        state = _held_state(owner)
        first = reasons[0]
        message = (
            f"{who} exists but Kueue created no Workload for it, so it is never queued or admitted"
            f"{state}. " + " ".join(r.message for r in reasons)
        )
        remediation: list[str] = []
        for r in reasons:
            remediation += [x for x in r.remediation if x not in remediation]
        return [
            self.finding(
                "not-managed",
                f"{who} has no Workload: {first.title}",
                message,
                confidence=confidence,
                evidence=[e for r in reasons for e in r.evidence],
                remediation=remediation,
                data={"reasons": [r.key for r in reasons], "framework": framework or "", "config": cfg.source},
            )
        ]

    # --- deactivated -----------------------------------------------------------------------------------
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
                evidence.append(
                    ev(
                        "condition",
                        f"{cond.type}={cond.status} ({cond.reason}): {cond.message}",
                        kind="Workload",
                        name=w.name,
                        namespace=w.namespace,
                        field=f"status.conditions[type={cond.type}]",
                    )
                )
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
            evidence.append(
                ev(
                    "condition",
                    f"QuotaReserved=False ({qr.reason}): {qr.message}",
                    kind="Workload",
                    name=w.name,
                    namespace=w.namespace,
                    field="status.conditions[type=QuotaReserved]",
                )
            )
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
                m = re.search(r'in Rejected state: "?([A-Za-z0-9.\-]+)"?', detail)
                rejected = [m.group(1)] if m else []
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
                "deactivated",
                f"Workload is deactivated (spec.active: false): {reason} — {why}",
                f"The Workload was deactivated{ago} because {why}"
                f"{': ' + detail if detail else ''}. A deactivated Workload is never considered for admission "
                "until spec.active is set back to true.",
                evidence=evidence,
                remediation=fixes,
                data={"reason": reason},
            )
        ]

    # --- admission gates ---------------------------------------------------------------------------------
    def _gated(self, w: WorkloadView, qr: Condition | None, pm: PendingMessage | None) -> list[Finding]:
        out: list[Finding] = []
        gate = (w.annotations.get(GATED_BY) or "").strip()
        qr_gated = (
            qr is not None
            and qr.false
            and (qr.reason == "AdmissionGated" or qr.message.startswith("Admission is gated by"))
        )
        if gate or (qr_gated and pm is not None and pm.has("admission-gated")):
            names = gate or next((r.name or "" for r in (pm.of("admission-gated") if pm else [])), "")
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
                evidence.append(
                    ev(
                        "condition",
                        f"QuotaReserved=False ({qr.reason}): {qr.message}",
                        kind="Workload",
                        name=w.name,
                        namespace=w.namespace,
                        field="status.conditions[type=QuotaReserved]",
                    )
                )
            out.append(
                self.finding(
                    "admission-gated",
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
        msg_gated = pm is not None and pm.has("preemption-gated")
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
                evidence.append(
                    ev(
                        "condition",
                        f"QuotaReserved=False ({qr.reason}): {qr.message}",
                        kind="Workload",
                        name=w.name,
                        namespace=w.namespace,
                        field="status.conditions[type=QuotaReserved]",
                    )
                )
            shown = ", ".join(closed) or "(unnamed)"
            out.append(
                self.finding(
                    "admission-gated",
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

    # --- queues, ClusterQueue and pod-set compatibility ---------------------------------------------------
    def _queues(
        self, snap: Snapshot, w: WorkloadView, qr: Condition | None, pm: PendingMessage | None
    ) -> list[Finding]:
        idx = kueue_index(snap)
        wl_ev = _qr_evidence(w, qr)
        out: list[Finding] = []
        lq_name = w.queue_name or ""
        ns_queues = sorted(lq.name for (lns, _), lq in idx.local_queues.items() if lns == w.namespace)
        if not lq_name:
            out.append(
                self.finding(
                    "localqueue-missing",
                    "Workload has no spec.queueName",
                    "The Workload names no LocalQueue (the job was managed through manageJobsWithoutQueueName "
                    "without a queue-name label, and no LocalQueue `default` existed): it can never be admitted.",
                    evidence=[
                        ev(
                            "object",
                            "spec.queueName is empty",
                            kind="Workload",
                            name=w.name,
                            namespace=w.namespace,
                            field="spec.queueName",
                            expected="<localqueue name>",
                        ),
                        *wl_ev,
                    ],
                    remediation=[
                        f"Resubmit the job with label `{QUEUE_LABEL}: <localqueue>` (LocalQueues in "
                        f"{w.namespace}: {', '.join(ns_queues) or 'none'})."
                    ],
                )
            )
            return out
        lq = idx.local_queues.get((w.namespace, lq_name))
        if lq is None:
            msg_says = pm is not None and any(r.name == lq_name for r in pm.of("lq-missing"))
            if not (_collected(snap, "LocalQueue", w.namespace) or msg_says):
                return out + self._from_message(w, qr, pm, "LocalQueue")
            close = difflib.get_close_matches(lq_name, ns_queues, n=1, cutoff=0.6)
            hint = f" Did you mean `{close[0]}`?" if close else ""
            out.append(
                self.finding(
                    "localqueue-missing",
                    f"LocalQueue {lq_name} does not exist in namespace {w.namespace}",
                    f"The Workload is submitted to LocalQueue `{lq_name}`, which does not exist in namespace "
                    f"{w.namespace} (LocalQueues there: {', '.join(ns_queues) or 'none'}).{hint} Kueue marks it "
                    f"Inadmissible (`LocalQueue {lq_name} doesn't exist`) and never considers it.",
                    confidence=Confidence.HIGH if _collected(snap, "LocalQueue", w.namespace) else Confidence.MEDIUM,
                    evidence=[
                        ev(
                            "object",
                            f"spec.queueName: {lq_name}",
                            kind="Workload",
                            name=w.name,
                            namespace=w.namespace,
                            field="spec.queueName",
                            expected=f"one of: {', '.join(ns_queues) or '(none exist)'}",
                        ),
                        ev(
                            "derived",
                            f"no LocalQueue {w.namespace}/{lq_name} in the snapshot",
                            kind="LocalQueue",
                            name=lq_name,
                            namespace=w.namespace,
                        ),
                        *wl_ev,
                    ],
                    remediation=[
                        f"Resubmit the job with `{QUEUE_LABEL}: {close[0] if close else '<existing localqueue>'}` "
                        f"(`kubectl get localqueues -n {w.namespace}`).",
                        f"Or create it: `kubectl kueue create localqueue {lq_name} -n {w.namespace} "
                        "-c <clusterqueue>`.",
                    ],
                    data={"local_queue": lq_name},
                )
            )
            return out
        out += self._lq_stopped(lq, w, wl_ev)
        cq = idx.cluster_queues.get(lq.cluster_queue)
        lq_active = lq.conditions.get("Active")
        lq_ev = (
            [
                ev(
                    "condition",
                    f"Active={lq_active.status} ({lq_active.reason}): {lq_active.message}",
                    kind="LocalQueue",
                    name=lq.name,
                    namespace=lq.namespace,
                    field="status.conditions[type=Active]",
                )
            ]
            if lq_active is not None and lq_active.false
            else []
        )
        if cq is None:
            msg_says = pm is not None and any(r.name == lq.cluster_queue for r in pm.of("cq-missing"))
            lq_says = lq_active is not None and lq_active.reason == "ClusterQueueDoesNotExist"
            if not (_collected(snap, "ClusterQueue", None) or msg_says or lq_says):
                return out + self._from_message(w, qr, pm, "ClusterQueue", lq_ev)
            cqs = sorted(idx.cluster_queues)
            out.append(
                self.finding(
                    "clusterqueue-missing",
                    f"LocalQueue {lq.name} points at ClusterQueue {lq.cluster_queue}, which does not exist",
                    f"LocalQueue {lq.namespace}/{lq.name} has spec.clusterQueue `{lq.cluster_queue}`, but no such "
                    f"ClusterQueue exists (ClusterQueues: {', '.join(cqs) or 'none'}). Workloads submitted to it stay "
                    f"Inadmissible (`ClusterQueue {lq.cluster_queue} doesn't exist`).",
                    confidence=Confidence.HIGH if _collected(snap, "ClusterQueue", None) else Confidence.MEDIUM,
                    evidence=[
                        ev(
                            "object",
                            f"spec.clusterQueue: {lq.cluster_queue}",
                            kind="LocalQueue",
                            name=lq.name,
                            namespace=lq.namespace,
                            field="spec.clusterQueue",
                            expected=f"one of: {', '.join(cqs) or '(none exist)'}",
                        ),
                        ev(
                            "derived",
                            f"no ClusterQueue {lq.cluster_queue} in the snapshot",
                            kind="ClusterQueue",
                            name=lq.cluster_queue,
                        ),
                        *lq_ev,
                        *wl_ev,
                    ],
                    remediation=[
                        f"Create ClusterQueue `{lq.cluster_queue}` (`kubectl kueue create clusterqueue "
                        f"{lq.cluster_queue} --nominal-quota ...`), or",
                        "recreate the LocalQueue pointing at an existing ClusterQueue (spec.clusterQueue is "
                        f"immutable): `kubectl delete localqueue {lq.name} -n {lq.namespace}` then "
                        f"`kubectl kueue create localqueue {lq.name} -n {lq.namespace} -c <clusterqueue>`.",
                    ],
                    data={"cluster_queue": lq.cluster_queue},
                )
            )
            return out
        inactive = self._cq_inactive(snap, idx, cq, lq_ev, wl_ev)
        out += inactive
        missing_flavors_reported = {f for f in inactive for f in f.data.get("missing_flavors", [])}
        out += self._namespace(snap, cq, w, wl_ev, pm)
        out += self._resources(snap, cq, w, wl_ev)
        out += self._flavors(snap, idx, cq, w, wl_ev, pm, missing_flavors_reported)
        return out

    def _from_message(
        self,
        w: WorkloadView,
        qr: Condition | None,
        pm: PendingMessage | None,
        missing_kind: str,
        extra: list[Evidence] | None = None,
    ) -> list[Finding]:
        """Causes only the QuotaReserved message tells, when the queue objects are not in the snapshot."""
        if pm is None or qr is None:
            return []
        cond_ev = [*_qr_evidence(w, qr), *(extra or [])]
        note = (
            f" The {missing_kind} is not in this snapshot, so this comes from the Workload's QuotaReserved "
            "condition alone (it may be stale)."
        )
        ns = w.namespace
        mapping: list[tuple[tuple[str, ...], str, str, str]] = [
            (
                ("lq-stopped", "lq-inactive"),
                "localqueue-stopped",
                "LocalQueue {name} is stopped or inactive",
                f"`kubectl describe localqueue {{name}} -n {ns}`; if it is on hold: `kubectl patch localqueue {{name}} "
                f'-n {ns} --type merge -p \'{{{{"spec":{{{{"stopPolicy":"None"}}}}}}}}\'`.',
            ),
            (
                ("cq-missing",),
                "clusterqueue-missing",
                "ClusterQueue {name} does not exist",
                "`kubectl get clusterqueues`; create ClusterQueue {name} or recreate the LocalQueue pointing at an "
                "existing one (spec.clusterQueue is immutable).",
            ),
            (
                ("cq-inactive", "cq-stopped"),
                "clusterqueue-inactive",
                "ClusterQueue {name} is inactive",
                "`kubectl describe clusterqueue {name}` and fix what its Active condition names (missing "
                "ResourceFlavor/AdmissionCheck/Topology, or stopPolicy).",
            ),
            (
                ("namespace-mismatch",),
                "namespace-not-selected",
                "namespace {ns} is not selected by the ClusterQueue",
                "`kubectl get clusterqueue <cq> -o jsonpath='{{.spec.namespaceSelector}}'` and label namespace {ns} to "
                "match, or set the selector to `{{}}`.",
            ),
            (
                ("resource-unavailable",),
                "resource-not-covered",
                "requests {resource}, not covered by the ClusterQueue",
                "Add {resource} to the ClusterQueue's coveredResources, drop it from the pod template, or exclude it "
                "with resources.excludeResourcePrefixes.",
            ),
        ]
        if missing_kind == "ClusterQueue":
            mapping = [m for m in mapping if m[1] not in ("localqueue-stopped", "clusterqueue-missing")]
        out: list[Finding] = []
        for kinds, cause, title, fix in mapping:
            reasons = pm.of(*kinds)
            if not reasons:
                continue
            r = reasons[0]
            values = {"name": r.name or "?", "ns": w.namespace, "resource": r.resource or "?"}
            out.append(
                self.finding(
                    cause,
                    title.format(**values),
                    f"Kueue reports `{r.text}`.{note}",
                    confidence=Confidence.MEDIUM,
                    evidence=cond_ev,
                    remediation=[fix.format(**values)],
                    data={"from": "message"},
                )
            )
        flavor_reasons = pm.of("node-affinity", "untolerated-taint", "flavor-not-found")
        if flavor_reasons and not pm.has("insufficient-unused-quota", "exceeds-max-quota"):
            flavors = ", ".join(sorted({r.flavor or "?" for r in flavor_reasons}))
            out.append(
                self.finding(
                    "no-matching-flavor",
                    f"every flavor tried was excluded: {flavors}",
                    f"Kueue reports `{'; '.join(r.text for r in flavor_reasons)}`.{note}",
                    confidence=Confidence.MEDIUM,
                    evidence=cond_ev,
                    data={"from": "message"},
                )
            )
        return out

    def _lq_stopped(self, lq: LocalQueueView, w: WorkloadView, wl_ev: list[Evidence]) -> list[Finding]:
        active = lq.conditions.get("Active")
        cond_stopped = (
            active is not None
            and active.false
            and active.reason not in ("ClusterQueueDoesNotExist", "ClusterQueueIsInactive")
        )
        if lq.stop_policy not in STOPPED and not cond_stopped:
            return []
        evidence = []
        if lq.stop_policy in STOPPED:
            evidence.append(
                ev(
                    "object",
                    f"spec.stopPolicy: {lq.stop_policy}",
                    kind="LocalQueue",
                    name=lq.name,
                    namespace=lq.namespace,
                    field="spec.stopPolicy",
                    expected="None",
                )
            )
        if active is not None and active.false:
            evidence.append(
                ev(
                    "condition",
                    f"Active=False ({active.reason}): {active.message}",
                    kind="LocalQueue",
                    name=lq.name,
                    namespace=lq.namespace,
                    field="status.conditions[type=Active]",
                )
            )
        what = (
            f"stopPolicy {lq.stop_policy}"
            if lq.stop_policy in STOPPED
            else f"Active=False, {active.reason if active else '?'}"
        )
        drain = " and evicts workloads it already admitted" if lq.stop_policy == "HoldAndDrain" else ""
        return [
            self.finding(
                "localqueue-stopped",
                f"LocalQueue {lq.name} is stopped ({what})",
                f"LocalQueue {lq.namespace}/{lq.name} is stopped ({what}): it accepts no new admissions{drain}, so the "
                f"workload is held (`LocalQueue {lq.name} is stopped`) until someone resumes the queue.",
                evidence=[*evidence, *wl_ev],
                remediation=[
                    f"`kubectl patch localqueue {lq.name} -n {lq.namespace} --type merge -p "
                    '\'{"spec":{"stopPolicy":"None"}}\'` (or `kubectl kueue resume localqueue '
                    f"{lq.name} -n {lq.namespace}`) — check with the queue owner why it was stopped."
                ],
                data={"stop_policy": lq.stop_policy},
            )
        ]

    def _cq_inactive(
        self, snap: Snapshot, idx: KueueIndex, cq: ClusterQueueView, lq_ev: list[Evidence], wl_ev: list[Evidence]
    ) -> list[Finding]:
        active = cq.conditions.get("Active")
        from_status = parse_cq_inactive_message(active.message) if active is not None and active.false else {}
        parts: dict[str, list[str]] = {}
        evidence: list[Evidence] = []
        fixes: list[str] = []
        if cq.stop_policy in STOPPED:
            parts["stopped"] = [cq.stop_policy]
            evidence.append(
                ev(
                    "object",
                    f"spec.stopPolicy: {cq.stop_policy}",
                    kind="ClusterQueue",
                    name=cq.name,
                    field="spec.stopPolicy",
                    expected="None",
                )
            )
            fixes.append(
                f"`kubectl patch clusterqueue {cq.name} --type merge -p "
                '\'{"spec":{"stopPolicy":"None"}}\'` (or `kubectl kueue resume clusterqueue '
                f"{cq.name}`)."
            )
        if meta(cq.obj).get("deletionTimestamp"):
            parts["terminating"] = []
            evidence.append(
                ev(
                    "object",
                    f"deletionTimestamp: {meta(cq.obj).get('deletionTimestamp')}",
                    kind="ClusterQueue",
                    name=cq.name,
                    field="metadata.deletionTimestamp",
                )
            )
            fixes.append(
                "The ClusterQueue is being deleted (finalizer kueue.x-k8s.io/resource-in-use waits for "
                "its workloads); recreate it or move the LocalQueue to another ClusterQueue."
            )
        if _collected(snap, "ResourceFlavor", None):
            missing = [f for f in dict.fromkeys(cq.flavor_names()) if f not in idx.flavors]
            if missing:
                parts["missing-flavors"] = missing
                evidence.append(
                    ev(
                        "derived",
                        f"ResourceFlavor(s) {', '.join(missing)} referenced in spec.resourceGroups do not exist",
                        kind="ClusterQueue",
                        name=cq.name,
                        field="spec.resourceGroups[].flavors[].name",
                        expected=f"existing flavors: {', '.join(sorted(idx.flavors)) or 'none'}",
                    )
                )
                fixes.append(
                    f"Create ResourceFlavor(s) {', '.join(missing)} (`kubectl kueue create resourceflavor "
                    f"{missing[0]}` or `kubectl apply` a `kind: ResourceFlavor` manifest) or remove them "
                    f"from ClusterQueue {cq.name} spec.resourceGroups."
                )
            tas_missing = [
                (f, fv.topology_name)
                for f in dict.fromkeys(cq.flavor_names())
                if (fv := idx.flavors.get(f)) is not None
                and fv.topology_name
                and fv.topology_name not in idx.topologies
                and _collected(snap, "Topology", None)
            ]
            if tas_missing:
                parts["missing-topology"] = [t for _, t in tas_missing if t]
                for f, t in tas_missing:
                    evidence.append(
                        ev(
                            "derived",
                            f"TAS flavor {f} has spec.topologyName {t}, but Topology {t} does not exist",
                            kind="ResourceFlavor",
                            name=f,
                            field="spec.topologyName",
                        )
                    )
                fixes.append(
                    f"Create Topology {tas_missing[0][1]} (spec.levels[].nodeLabel) or fix "
                    f"spec.topologyName of ResourceFlavor {tas_missing[0][0]}."
                )
        checks = [name for name, _ in cq.admission_checks]
        if checks and _collected(snap, "AdmissionCheck", None):
            missing_ac = [c for c in checks if c not in idx.admission_checks]
            inactive_ac = []
            for c in checks:
                obj = idx.admission_checks.get(c)
                if obj is not None:
                    cond = _conds(obj).get("Active")
                    if cond is not None and cond.false:
                        inactive_ac.append(c)
                        evidence.append(
                            ev(
                                "condition",
                                f"Active=False ({cond.reason}): {cond.message}",
                                kind="AdmissionCheck",
                                name=c,
                                field="status.conditions[type=Active]",
                            )
                        )
            if missing_ac:
                parts["missing-checks"] = missing_ac
                evidence.append(
                    ev(
                        "derived",
                        f"AdmissionCheck(s) {', '.join(missing_ac)} do not exist",
                        kind="ClusterQueue",
                        name=cq.name,
                        field="spec.admissionChecksStrategy.admissionChecks",
                    )
                )
                fixes.append(
                    f"Create AdmissionCheck(s) {', '.join(missing_ac)} or remove them from ClusterQueue "
                    f"{cq.name} spec.admissionChecksStrategy."
                )
            if inactive_ac:
                parts["inactive-checks"] = inactive_ac
                fixes.append(
                    f"Fix AdmissionCheck(s) {', '.join(inactive_ac)}: their controller or parameters "
                    "(e.g. the ProvisioningRequestConfig) are not ready."
                )
        recomputed = bool(parts)
        status_false = active is not None and active.false
        if not recomputed and not status_false:
            return []
        for k, v in from_status.items():
            parts.setdefault(k, v)
        parts = {k: parts[k] for k in _PART_ORDER if k in parts}
        if status_false and active is not None:
            evidence.insert(
                0,
                ev(
                    "condition",
                    f"Active=False ({active.reason}): {active.message}",
                    kind="ClusterQueue",
                    name=cq.name,
                    field="status.conditions[type=Active]",
                    expected="True",
                ),
            )
        if status_false and not recomputed:
            fixes.append(f"Fix what the Active condition names: `kubectl describe clusterqueue {cq.name}`.")
        if active is None:
            status_note = (
                " The ClusterQueue has no status yet (Kueue has not reconciled it, or the controller is "
                "down), so this was recomputed from the objects."
            )
            confidence = Confidence.HIGH
        elif active.false:
            status_note = ""
            confidence = Confidence.HIGH
        else:
            status_note = (
                " Its Active condition still says True: the status may be stale, or the snapshot lacks "
                "the referenced objects."
            )
            confidence = Confidence.LOW
        summary = "; ".join(
            f"{_INACTIVE_WORDS.get(k, k)}{': ' + ', '.join(v) if v and k != 'stopped' else ''}"
            + (f" ({v[0]})" if k == "stopped" and v else "")
            for k, v in parts.items()
        )
        reason = active.reason if status_false and active is not None else _first_reason(parts)
        return [
            self.finding(
                "clusterqueue-inactive",
                f"ClusterQueue {cq.name} is inactive: {summary}",
                f"ClusterQueue {cq.name} cannot admit new workloads ({reason}): {summary}. Every workload in it stays "
                f"pending with `ClusterQueue {cq.name} is inactive`.{status_note}",
                confidence=confidence,
                evidence=[*evidence, *lq_ev, *wl_ev],
                remediation=fixes,
                data={"reason": reason, "parts": sorted(parts), "missing_flavors": parts.get("missing-flavors", [])},
            )
        ]

    def _namespace(
        self, snap: Snapshot, cq: ClusterQueueView, w: WorkloadView, wl_ev: list[Evidence], pm: PendingMessage | None
    ) -> list[Finding]:
        ns_labels, exists = namespace_labels(snap, w.namespace)
        selector = cq.namespace_selector
        if label_selector_matches(selector, ns_labels):
            return []
        msg = pm is not None and pm.has("namespace-mismatch")
        quoted = (
            pm.of("namespace-mismatch")[0].text
            if pm is not None and msg
            else "workload namespace doesn't match ClusterQueue selector"
        )
        sel = selector_str(selector)
        only_name = (
            selector is not None
            and all(k == "kubernetes.io/metadata.name" for k in (selector.get("matchLabels") or {}))
            and all(e.get("key") == "kubernetes.io/metadata.name" for e in selector.get("matchExpressions") or ())
        )
        confidence = Confidence.HIGH if exists or selector is None or only_name or msg else Confidence.MEDIUM
        if selector is None:
            title = f"ClusterQueue {cq.name} has no namespaceSelector (null): it admits no namespace"
            why = (
                "spec.namespaceSelector is unset (null), which selects no namespace at all — only `{}` "
                "selects every namespace"
            )
        else:
            title = f"namespace {w.namespace} does not match ClusterQueue {cq.name}'s namespaceSelector ({sel})"
            why = f"spec.namespaceSelector is `{sel}` and namespace {w.namespace} has labels {_labels_str(ns_labels)}"
        fixes = []
        fix = _label_fix(selector, w.namespace) if selector is not None else None
        if fix:
            fixes.append(fix)
        fixes.append(
            f"Or widen the selector: `kubectl patch clusterqueue {cq.name} --type merge -p "
            '\'{"spec":{"namespaceSelector":{}}}\'` (selects every namespace).'
        )
        evidence = [
            ev(
                "object",
                f"spec.namespaceSelector: {sel}",
                kind="ClusterQueue",
                name=cq.name,
                field="spec.namespaceSelector",
                expected=f"selects namespace {w.namespace}",
            ),
            ev(
                "object" if exists else "derived",
                f"labels {_labels_str(ns_labels)}" + ("" if exists else " (Namespace object not in snapshot)"),
                kind="Namespace",
                name=w.namespace,
                field="metadata.labels",
            ),
        ]
        return [
            self.finding(
                "namespace-not-selected",
                title,
                f"The scheduler rejects the workload on every cycle (`{quoted}`): {why}.",
                confidence=confidence,
                evidence=[*evidence, *wl_ev],
                remediation=fixes,
                data={"selector": sel, "namespace": w.namespace},
            )
        ]

    def _resources(self, snap: Snapshot, cq: ClusterQueueView, w: WorkloadView, wl_ev: list[Evidence]) -> list[Finding]:
        cfg = kueue_config(snap)
        missing: dict[str, list[str]] = {}
        excluded: set[str] = set()
        for ps in w.pod_sets:
            for res, qty in ps.requests.items():
                if cfg.excluded(res):
                    excluded.add(res)
                    continue
                if cq.group_for(res) is None:
                    missing.setdefault(res, []).append(f"{ps.name}: {format_quantity(qty)} per pod × {ps.count}")
        if not missing:
            return []
        covered = sorted({r for rg in cq.resource_groups for r in rg.covered})
        names = ", ".join(missing)
        excl = f" ({', '.join(sorted(excluded))} ignored via resources.excludeResourcePrefixes)" if excluded else ""
        return [
            self.finding(
                "resource-not-covered",
                f"requests {names}, which ClusterQueue {cq.name} does not cover",
                f"The workload requests {names}, but no resourceGroup of ClusterQueue {cq.name} lists it in "
                f"coveredResources (covered: {', '.join(covered) or 'none'}){excl}. The scheduler answers `resource "
                f"{next(iter(missing))} unavailable in ClusterQueue` on every attempt.",
                evidence=[
                    *[
                        ev(
                            "object",
                            f"{res} requested ({'; '.join(detail)})",
                            kind="Workload",
                            name=w.name,
                            namespace=w.namespace,
                            field="spec.podSets[].template.spec.containers[].resources.requests",
                        )
                        for res, detail in missing.items()
                    ],
                    ev(
                        "object",
                        f"coveredResources: {', '.join(covered) or 'none'}",
                        kind="ClusterQueue",
                        name=cq.name,
                        field="spec.resourceGroups[].coveredResources",
                        expected=f"includes {names}",
                    ),
                    *wl_ev,
                ],
                remediation=[
                    f"Add {names} to a resourceGroup of ClusterQueue {cq.name} (`kubectl edit clusterqueue {cq.name}`: "
                    "spec.resourceGroups[].coveredResources plus a nominalQuota in every flavor of that group), or",
                    f"drop the {names} request from the pod template, or",
                    f"have Kueue ignore it: add the prefix to `resources.excludeResourcePrefixes` in ConfigMap "
                    f"{cfg.namespace}/kueue-manager-config.",
                ],
                data={"resources": sorted(missing)},
            )
        ]

    def _flavors(
        self,
        snap: Snapshot,
        idx: KueueIndex,
        cq: ClusterQueueView,
        w: WorkloadView,
        wl_ev: list[Evidence],
        pm: PendingMessage | None,
        already: set[str],
    ) -> list[Finding]:
        if not _collected(snap, "ResourceFlavor", None):
            return []
        out: list[Finding] = []
        for ps in w.pod_sets:
            for rg in groups_for_pod_set(cq, ps):
                excluded, usable = group_exclusions(ps, rg, idx.flavors)
                if usable or not excluded:
                    continue
                if all(x.kind == "not-found" and x.flavor in already for x in excluded):
                    continue
                per = [f"{x.flavor}: {_exclusion_text(x)}" for x in excluded]
                covered = ", ".join(r for r in rg.covered if r in ps.requests)
                msg_reasons = (
                    [
                        r.text
                        for r in pm.reasons
                        if r.kind in ("node-affinity", "untolerated-taint", "flavor-not-found")
                        and (r.pod_set in (None, ps.name))
                    ]
                    if pm is not None
                    else []
                )
                evidence = [
                    ev(
                        "derived",
                        f"flavor {x.flavor} excluded: {x.detail}",
                        kind="ResourceFlavor",
                        name=x.flavor,
                        field={
                            "not-found": "metadata.name",
                            "untolerated-taint": "spec.nodeTaints",
                            "node-affinity": "spec.nodeLabels",
                        }[x.kind],
                    )
                    for x in excluded
                ]
                evidence.append(
                    ev(
                        "object",
                        _pod_constraints(ps.spec),
                        kind="Workload",
                        name=w.name,
                        namespace=w.namespace,
                        field=f"spec.podSets[name={ps.name}].template.spec",
                    )
                )
                if msg_reasons:
                    evidence.append(
                        ev(
                            "condition",
                            f"QuotaReserved message: {'; '.join(msg_reasons)}",
                            kind="Workload",
                            name=w.name,
                            namespace=w.namespace,
                            field="status.conditions[type=QuotaReserved].message",
                        )
                    )
                fixes = []
                for x in excluded:
                    fv = idx.flavors.get(x.flavor)
                    if x.kind == "untolerated-taint" and fv is not None:
                        t = next((t for t in fv.node_taints if t.get("effect") in ("NoSchedule", "NoExecute")), {})
                        fixes.append(
                            f"To use {x.flavor}: add to the pod template `tolerations: [{{key: "
                            f"{t.get('key')}, operator: Exists, effect: {t.get('effect')}}}]`."
                        )
                    elif x.kind == "node-affinity" and fv is not None:
                        want = ", ".join(f"{k}: {v}" for k, v in fv.node_labels.items())
                        fixes.append(
                            f"To use {x.flavor}: make the pod's nodeSelector/affinity agree with its "
                            f"nodeLabels ({want}), or drop the conflicting key."
                        )
                    elif x.kind == "not-found":
                        fixes.append(f"Create ResourceFlavor {x.flavor} or remove it from ClusterQueue {cq.name}.")
                out.append(
                    self.finding(
                        "no-matching-flavor",
                        f"no flavor of ClusterQueue {cq.name} fits pod set {ps.name}: "
                        + ", ".join(f"{x.flavor} ({x.kind.replace('-', ' ')})" for x in excluded),
                        f"Pod set {ps.name} needs {covered} from a resource group whose flavors are all excluded "
                        f"before quota is even considered — {'; '.join(per)}. Kueue tries flavors in order and "
                        "finds none the pods could run on.",
                        evidence=[*evidence, *([] if msg_reasons else wl_ev)],
                        remediation=fixes,
                        data={"pod_set": ps.name, "flavors": {x.flavor: x.kind for x in excluded}},
                    )
                )
        return out


# --- helpers -------------------------------------------------------------------------------------------------


def _conds(obj: dict[str, Any]) -> dict[str, Condition]:
    return conditions(obj)


def _collected(snap: Snapshot, kind: str, namespace: str | None) -> bool:
    """Whether absence of `kind` objects in the snapshot means absence in the cluster."""
    if snap.manifest.format is None:
        return False  # a loose folder of kubectl output: we cannot tell what was collected
    if snap.of_kind(kind):
        limited = snap.manifest.namespaces
        return namespace is None or limited is None or namespace in limited
    if any(kind.lower() in what.lower() for what, _ in snap.manifest.errors):
        return False
    limited = snap.manifest.namespaces
    return namespace is None or limited is None or namespace in limited


def _qr_evidence(w: WorkloadView, qr: Condition | None) -> list[Evidence]:
    if qr is None or not qr.false or not qr.message:
        return []
    return [
        ev(
            "condition",
            f"QuotaReserved=False ({qr.reason}): {qr.message}",
            kind="Workload",
            name=w.name,
            namespace=w.namespace,
            field="status.conditions[type=QuotaReserved]",
        )
    ]


def _cfg_ref(cfg: KueueConfig) -> tuple[str | None, str]:
    return (cfg.namespace, "kueue-manager-config") if cfg.found else (None, "")


def _labels_str(lbls: dict[str, str]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in sorted(lbls.items())) + "}"


def _label_fix(selector: dict[str, Any] | None, namespace: str) -> str | None:
    if not selector:
        return None
    wanted = [f"{k}={v}" for k, v in (selector.get("matchLabels") or {}).items() if k != "kubernetes.io/metadata.name"]
    for e in selector.get("matchExpressions") or ():
        if e.get("key") == "kubernetes.io/metadata.name":
            continue
        if e.get("operator") == "In" and e.get("values"):
            wanted.append(f"{e.get('key')}={e['values'][0]}")
        elif e.get("operator") == "Exists":
            wanted.append(f"{e.get('key')}=true")
    if not wanted:
        return None
    return f"`kubectl label namespace {namespace} {' '.join(wanted)}`"


def _held_state(owner: dict[str, Any]) -> str:
    spec = owner.get("spec") or {}
    if owner.get("kind") == "Pod":
        gates = [g.get("name") for g in spec.get("schedulingGates") or () if isinstance(g, dict)]
        if gates:
            return f" (the pod carries scheduling gates {', '.join(map(str, gates))})"
        if spec.get("nodeName"):
            return " (it is already bound to a node: it runs outside Kueue's quota)"
        return ""
    suspend = spec.get("suspend")
    if suspend is None:
        suspend = (spec.get("runPolicy") or {}).get("suspend")
    if suspend is True:
        return " (it is suspended, and nothing will ever unsuspend it)"
    if suspend is False:
        return " (it is not suspended: it runs outside Kueue's quota)"
    return ""


def _controller_parent(snap: Snapshot, obj: dict[str, Any]) -> dict[str, Any] | None:
    for ref in meta(obj).get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller"):
            parent = snap.by_uid(str(ref.get("uid", "")))
            if parent is not None:
                group = str(parent.get("apiVersion", "")).rpartition("/")[0]
                if (str(parent.get("kind")), group) in FRAMEWORKS:
                    return parent
    return None


def _first_reason(parts: dict[str, list[str]]) -> str:
    order = [
        ("stopped", "Stopped"),
        ("terminating", "Terminating"),
        ("missing-flavors", "FlavorNotFound"),
        ("missing-checks", "AdmissionCheckNotFound"),
        ("inactive-checks", "AdmissionCheckInactive"),
        ("missing-topology", "TopologyNotFound"),
    ]
    return next((r for k, r in order if k in parts), "Unknown")


def _exclusion_text(x: FlavorExclusion) -> str:
    if x.kind == "not-found":
        return "the ResourceFlavor does not exist"
    if x.kind == "untolerated-taint":
        return f"{x.detail} (the pod has no matching toleration)"
    return f"doesn't match node affinity: {x.detail}"


def _pod_constraints(spec: dict[str, Any]) -> str:
    sel = spec.get("nodeSelector") or {}
    tols = spec.get("tolerations") or []
    aff = bool(
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    )
    tol_s = ", ".join(f"{t.get('key', '*')}:{t.get('effect', '*')}" for t in tols) or "none"
    return (
        f"nodeSelector {_labels_str({str(k): str(v) for k, v in sel.items()})}, "
        f"required node affinity {'set' if aff else 'none'}, tolerations {tol_s}"
    )
