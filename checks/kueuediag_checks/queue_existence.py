"""KD001 queue-existence: does the job reach an existing LocalQueue and ClusterQueue at all?"""

from __future__ import annotations

import difflib
from dataclasses import field
from typing import Any

from kueuediag.analysis.kueue_config import (
    FRAMEWORKS,
    KueueConfig,
    default_namespace_selector,
    kueue_config,
    namespace_labels,
    selector_str,
)
from kueuediag.analysis.queue_route import QueueRoute, local_queue_names, queue_route
from kueuediag.causes import CauseSlug
from kueuediag.models import CheckResult, Confidence, Evidence, Finding, Severity, ev
from kueuediag.records import dataclass
from kueuediag.snapshot.k8s import label_selector_matches, labels, meta
from kueuediag.snapshot.kueue import events_for, kueue_index
from kueuediag.snapshot.model import Snapshot
from kueuediag.target import Target, workload_for_owner
from kueuediag.timeutil import format_rfc3339, human_duration, parse_time_lenient
from kueuediag_checks._submission import (
    QUEUE_LABEL,
    Pending,
    SubmissionCheck,
    cq_name,
    from_message,
    label_fix,
    labels_str,
    lq_active_evidence,
    qr_evidence,
)


@dataclass
class _Reason:
    title: str
    message: str
    evidence: list[Evidence] = field(default_factory=list)
    remediation: list[str] = field(default_factory=list)
    key: str = ""


def _defaulted_queue_label(snap: Snapshot, owner: dict[str, Any], ns: str) -> bool:
    """The job carries the `default` queue name and is suspended in a namespace with a LocalQueue `default`: the
    mark Kueue's LocalQueue-defaulting webhook leaves, which (before PR #13375) it left in unmanaged namespaces
    too."""
    job_labels = meta(owner).get("labels") or {}
    suspended = (owner.get("spec") or {}).get("suspend") is True
    return job_labels.get(QUEUE_LABEL) == "default" and suspended and snap.get("LocalQueue", "default", ns) is not None


class QueueExistence(SubmissionCheck):
    """Finds jobs Kueue never queues: not managed at all, or sent to a LocalQueue/ClusterQueue that does not exist.

    What it detects:
        A job Kueue does not manage (no `kueue.x-k8s.io/queue-name` label and no LocalQueue named `default`,
        namespace outside `managedJobsNamespaceSelector`, integration not enabled in `integrations.frameworks`,
        or a child job whose parent is the one queued); a Workload without `spec.queueName`; a `spec.queueName`
        naming a LocalQueue that does not exist; a LocalQueue whose `spec.clusterQueue` does not exist.
        This check was named `queue-configuration` and owned every submission cause until it was split: queue
        state (KD003), namespace selection (KD004), resource coverage (KD005) and workload activation (KD006)
        now have their own checks.

    Why the workload stays pending:
        Without a Workload nothing happens at all; with a missing queue the workload controller marks the
        Workload `Inadmissible` (`LocalQueue <name> doesn't exist`, `ClusterQueue <name> doesn't exist`) and the
        scheduler never looks at it. Neither resolves by waiting.

    Evidence:
        The job's labels and owner references, the Namespace labels, the `kueue-manager-config` ConfigMap
        (`controller_manager_config.yaml`), the LocalQueues of the namespace, LocalQueue `spec.clusterQueue`
        and `Active` condition, the list of ClusterQueues. The QuotaReserved message, when present, is quoted as
        corroboration; when the queue objects are not in the snapshot the finding rests on that message alone
        (medium confidence).

    How to fix:
        Add the queue-name label or create a `default` LocalQueue, enable the integration, label the namespace,
        fix the label's typo (the closest existing LocalQueue is suggested), create the missing
        LocalQueue/ClusterQueue or recreate the LocalQueue pointing at an existing ClusterQueue.

    Example:
        `job/notebook-sweep has no Workload: no kueue.x-k8s.io/queue-name label and namespace research has no
        LocalQueue named default [not-managed]`
    """

    code = "KD001"
    name = "queue-existence"
    requires = ()
    needs_workload = False
    default_severity = Severity.HIGH

    def run(self, snapshot: Snapshot, target: Target) -> CheckResult:
        if target.workload is None and target.workload_unknown:
            # A Workload that could not be read is unknown, never evidence that Kueue created none.
            return CheckResult.could_not_check("workloads", target.workload_unknown)
        if target.workload is None:
            found = self._not_managed(snapshot, target)
            if found:
                return self.result(found)
            return CheckResult.not_applicable("no Workload and no owning job object to explain")
        return super().run(snapshot, target)

    def looked_at(self, p: Pending, route: QueueRoute) -> str:
        return (f"LocalQueue {p.w.namespace}/{route.lq_name} exists and points at ClusterQueue {cq_name(route)}, "
                "which exists")

    def route_findings(self, snapshot: Snapshot, p: Pending, route: QueueRoute) -> list[Finding]:
        return self._route(snapshot, p)

    # --- not managed ---------------------------------------------------------------------------------------
    def _not_managed(self, snap: Snapshot, target: Target) -> list[Finding]:
        owner = target.owner
        if owner is None:
            return []
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
                    CauseSlug.NOT_MANAGED,
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
            fix = label_fix(selector, ns)
            defaulted = _defaulted_queue_label(snap, owner, ns)
            reasons.append(
                _Reason(
                    f"namespace {ns} is outside managedJobsNamespaceSelector ({sel})",
                    f"Kueue only manages jobs in namespaces matching `managedJobsNamespaceSelector` ({sel}"
                    f"{'' if cfg.namespace_selector_set else ', the default'}); namespace {ns} has labels "
                    f"{labels_str(ns_labels)}. The controller logs `namespace selector does not match, ignoring "
                    "the job` and creates no Workload."
                    + (f" The {kind} carries `{QUEUE_LABEL}: default` and is suspended although it was not "
                       f"meant for Kueue: the LocalQueue-defaulting webhook labels and suspends jobs in every "
                       f"namespace with a LocalQueue named `default` before looking at managedJobsNamespaceSelector "
                       "(kueue#13374, fixed by PR #13375), and nothing will unsuspend it." if defaulted else ""),
                    [
                        ev(
                            "object",
                            f"labels {labels_str(ns_labels)}",
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
                        *([ev("object", f"{QUEUE_LABEL}=default and spec.suspend=true", kind=kind, name=name,
                              namespace=ns, field=f"metadata.labels[{QUEUE_LABEL}]"),
                           ev("object", f"LocalQueue default exists in namespace {ns}", kind="LocalQueue",
                              name="default", namespace=ns)] if defaulted else []),
                    ],
                    [
                        *([f"If {ns} should stay outside Kueue: delete LocalQueue {ns}/default (or upgrade to a "
                           f"release with PR #13375), then recreate the {kind} without the queue label "
                           "(resubmitting gets the same label while the default LocalQueue exists)."]
                          if defaulted else []),
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
                    f"namespaceSelector` ({sel}); namespace {ns} has labels {labels_str(ns_labels)}.",
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
                    [label_fix(cfg.pod_namespace_selector, ns) or "Widen integrations.podOptions.namespaceSelector."],
                    key="namespace",
                )
            )

        # 3. queue-name label (or a LocalQueue named `default`, or manageJobsWithoutQueueName)
        owner_labels = labels(owner)
        queue = owner_labels.get(QUEUE_LABEL)
        idx = kueue_index(snap)
        ns_queues = local_queue_names(snap, ns)
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
                                f"labels {labels_str(owner_labels)}",
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
                                f"labels {labels_str(owner_labels)}",
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
                CauseSlug.NOT_MANAGED,
                f"{who} has no Workload: {first.title}",
                message,
                confidence=confidence,
                evidence=[e for r in reasons for e in r.evidence],
                remediation=remediation,
                data={"reasons": [r.key for r in reasons], "framework": framework or "", "config": cfg.source,
                      # what keeps Kueue from managing the job; "unknown" (nothing found) only asks for a resubmit
                      "blockers": [r.key for r in reasons if r.key != "unknown"]},
            )
        ]

    # --- the queue route -----------------------------------------------------------------------------------
    def _route(self, snap: Snapshot, p: Pending) -> list[Finding]:
        w, qr = p.w, p.qr
        idx = kueue_index(snap)
        route = queue_route(snap, w, p.pm)
        wl_ev = qr_evidence(w, qr)
        out: list[Finding] = []
        ns_queues = local_queue_names(snap, w.namespace)
        if route.state == "lq-unknown":
            return from_message(self, p, ("clusterqueue-missing",), "LocalQueue")
        if route.state == "no-queue-name":
            out.append(
                self.finding(
                    CauseSlug.LOCALQUEUE_MISSING,
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
        if route.state == "lq-missing":
            lq_name = route.lq_name
            close = difflib.get_close_matches(lq_name, ns_queues, n=1, cutoff=0.6)
            hint = f" Did you mean `{close[0]}`?" if close else ""
            out.append(
                self.finding(
                    CauseSlug.LOCALQUEUE_MISSING,
                    f"LocalQueue {lq_name} does not exist in namespace {w.namespace}",
                    f"The Workload is submitted to LocalQueue `{lq_name}`, which does not exist in namespace "
                    f"{w.namespace} (LocalQueues there: {', '.join(ns_queues) or 'none'}).{hint} Kueue marks it "
                    f"Inadmissible (`LocalQueue {lq_name} doesn't exist`) and never considers it.",
                    confidence=Confidence.HIGH if route.lq_collected else Confidence.MEDIUM,
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
        lq = route.lq
        if route.state != "cq-missing" or lq is None:
            return out
        lq_ev = lq_active_evidence(lq)
        cqs = sorted(idx.cluster_queues)
        out.append(
            self.finding(
                CauseSlug.CLUSTERQUEUE_MISSING,
                f"LocalQueue {lq.name} points at ClusterQueue {lq.cluster_queue}, which does not exist",
                f"LocalQueue {lq.namespace}/{lq.name} has spec.clusterQueue `{lq.cluster_queue}`, but no such "
                f"ClusterQueue exists (ClusterQueues: {', '.join(cqs) or 'none'}). Workloads submitted to it stay "
                f"Inadmissible (`ClusterQueue {lq.cluster_queue} doesn't exist`).",
                confidence=Confidence.HIGH if route.cq_collected else Confidence.MEDIUM,
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


# --- helpers -------------------------------------------------------------------------------------------------


def _cfg_ref(cfg: KueueConfig) -> tuple[str | None, str]:
    return (cfg.namespace, "kueue-manager-config") if cfg.found else (None, "")


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
