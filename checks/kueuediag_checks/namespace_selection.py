"""KD004 namespace-selection: does the ClusterQueue's namespaceSelector select the workload's namespace?"""

from __future__ import annotations

from kueuediag.analysis.kueue_config import namespace_labels, selector_str
from kueuediag.analysis.messages import PendingMessage, ReasonKind
from kueuediag.analysis.queue_route import QueueRoute
from kueuediag.causes import CauseSlug
from kueuediag.models import Confidence, Evidence, Finding, Severity, ev
from kueuediag.snapshot.k8s import label_selector_matches
from kueuediag.snapshot.kueue import ClusterQueueView, WorkloadView
from kueuediag.snapshot.model import Snapshot
from kueuediag_checks._submission import (
    Pending,
    SubmissionCheck,
    cq_name,
    from_message,
    label_fix,
    labels_str,
    lq_active_evidence,
    qr_evidence,
)


class NamespaceSelection(SubmissionCheck):
    """Finds a ClusterQueue whose namespaceSelector does not select the workload's namespace.

    What it detects:
        The ClusterQueue reached through the workload's LocalQueue has a `spec.namespaceSelector` that does not
        match the namespace's labels — including the null selector, which selects no namespace at all (only `{}`
        selects every namespace). (Split out of the former `queue-configuration` check, KD001.)

    Why the workload stays pending:
        The scheduler rejects the workload on every cycle with `workload namespace doesn't match ClusterQueue
        selector` (capitalised `Workload` before v0.19); it never looks at quota. Waiting changes nothing.

    Evidence:
        ClusterQueue `spec.namespaceSelector`, the Namespace's labels (or the fact the Namespace is not in the
        snapshot, at lower confidence), and the QuotaReserved message when it says so.

    How to fix:
        Label the namespace to match (the exact `kubectl label` command is given) or widen the selector.

    Example:
        `namespace team-b does not match ClusterQueue shared's namespaceSelector (team=a) [namespace-not-selected]`
    """

    code = "KD004"
    name = "namespace-selection"
    requires = ()
    default_severity = Severity.HIGH

    def looked_at(self, p: Pending, route: QueueRoute) -> str:
        return f"ClusterQueue {cq_name(route)} spec.namespaceSelector selects namespace {p.w.namespace}"

    def route_findings(self, snapshot: Snapshot, p: Pending, route: QueueRoute) -> list[Finding]:
        causes = ("namespace-not-selected",)
        if route.state == "lq-unknown":
            return from_message(self, p, causes, "LocalQueue")
        if route.state == "cq-unknown" and route.lq is not None:
            return from_message(self, p, causes, "ClusterQueue", lq_active_evidence(route.lq))
        if route.cq is None:
            return []
        return self._namespace(snapshot, route.cq, p.w, qr_evidence(p.w, p.qr), p.pm)

    def _namespace(
        self, snap: Snapshot, cq: ClusterQueueView, w: WorkloadView, wl_ev: list[Evidence], pm: PendingMessage | None
    ) -> list[Finding]:
        ns_labels, exists = namespace_labels(snap, w.namespace)
        selector = cq.namespace_selector
        if label_selector_matches(selector, ns_labels):
            return []
        msg = pm is not None and pm.has(ReasonKind.NAMESPACE_MISMATCH)
        quoted = (
            pm.of(ReasonKind.NAMESPACE_MISMATCH)[0].text
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
            why = f"spec.namespaceSelector is `{sel}` and namespace {w.namespace} has labels {labels_str(ns_labels)}"
        fixes = []
        fix = label_fix(selector, w.namespace) if selector is not None else None
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
                f"labels {labels_str(ns_labels)}" + ("" if exists else " (Namespace object not in snapshot)"),
                kind="Namespace",
                name=w.namespace,
                field="metadata.labels",
            ),
        ]
        return [
            self.finding(
                CauseSlug.NAMESPACE_NOT_SELECTED,
                title,
                f"The scheduler rejects the workload on every cycle (`{quoted}`): {why}.",
                confidence=confidence,
                evidence=[*evidence, *wl_ev],
                remediation=fixes,
                data={"selector": sel, "namespace": w.namespace},
            )
        ]
