"""Shared presentation for the submission checks (KD001, KD003, KD004, KD005, KD006).

These checks were one module (queue-configuration) until it grew eleven causes. They still quote the same
QuotaReserved condition, print labels and selectors the same way, and fall back to Kueue's own message the
same way when the queue objects are missing from the snapshot; that shared wording lives here so each check
only decides its own causes.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from kueuediag.analysis.messages import PendingMessage, ReasonKind, parse_pending_message
from kueuediag.analysis.queue_route import QueueRoute, queue_route
from kueuediag.causes import CauseSlug
from kueuediag.check import Check
from kueuediag.models import CheckResult, Confidence, Evidence, Finding, Fix, Patch, ev
from kueuediag.records import dataclass
from kueuediag.snapshot.k8s import Condition
from kueuediag.snapshot.kueue import LocalQueueView, WorkloadState, WorkloadView
from kueuediag.snapshot.model import Snapshot
from kueuediag.target import Target

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
GATED_BY = "kueue.x-k8s.io/admission-gated-by"
STOPPED = ("Hold", "HoldAndDrain")


@dataclass(frozen=True)
class Pending:
    """A pending Workload with its QuotaReserved condition and the parsed message, if any."""

    w: WorkloadView
    qr: Condition | None
    pm: PendingMessage | None


def pending(w: WorkloadView | None) -> Pending | None:
    """The pending context of a Workload, or None when it is absent, finished, or holds quota."""
    if w is None or w.state != WorkloadState.PENDING:
        return None
    qr = w.cond("QuotaReserved")
    pm = parse_pending_message(qr.message) if qr is not None and qr.false and qr.message else None
    return Pending(w, qr, pm)


def qr_evidence(w: WorkloadView, qr: Condition | None) -> list[Evidence]:
    """The QuotaReserved=False condition quoted as corroboration (empty when there is none)."""
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


def labels_str(lbls: dict[str, str]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in sorted(lbls.items())) + "}"


def label_fix(selector: dict[str, Any] | None, namespace: str) -> str | None:
    """A `kubectl label namespace` command that would make `selector` select `namespace` (None if unknown)."""
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


# kinds of message reason → (cause, title, remediation); {name} {ns} {resource} are filled in
_FROM_MESSAGE: tuple[tuple[tuple[ReasonKind, ...], CauseSlug, str, str], ...] = (
    (
        (ReasonKind.LQ_STOPPED, ReasonKind.LQ_INACTIVE),
        CauseSlug.LOCALQUEUE_STOPPED,
        "LocalQueue {name} is stopped or inactive",
        "`kubectl describe localqueue {name} -n {ns}`; if it is on hold: `kubectl patch localqueue {name} "
        '-n {ns} --type merge -p \'{{"spec":{{"stopPolicy":"None"}}}}\'`.',
    ),
    (
        (ReasonKind.CQ_MISSING,),
        CauseSlug.CLUSTERQUEUE_MISSING,
        "ClusterQueue {name} does not exist",
        "`kubectl get clusterqueues`; create ClusterQueue {name} or recreate the LocalQueue pointing at an "
        "existing one (spec.clusterQueue is immutable).",
    ),
    (
        (ReasonKind.CQ_INACTIVE, ReasonKind.CQ_STOPPED),
        CauseSlug.CLUSTERQUEUE_INACTIVE,
        "ClusterQueue {name} is inactive",
        "`kubectl describe clusterqueue {name}` and fix what its Active condition names (missing "
        "ResourceFlavor/AdmissionCheck/Topology, or stopPolicy).",
    ),
    (
        (ReasonKind.NAMESPACE_MISMATCH,),
        CauseSlug.NAMESPACE_NOT_SELECTED,
        "namespace {ns} is not selected by the ClusterQueue",
        "`kubectl get clusterqueue <cq> -o jsonpath='{{.spec.namespaceSelector}}'` and label namespace {ns} to "
        "match, or set the selector to `{{}}`.",
    ),
    (
        (ReasonKind.RESOURCE_UNAVAILABLE,),
        CauseSlug.RESOURCE_NOT_COVERED,
        "requests {resource}, not covered by the ClusterQueue",
        "Add {resource} to the ClusterQueue's coveredResources, drop it from the pod template, or exclude it "
        "with resources.excludeResourcePrefixes.",
    ),
)


def from_message(
    check: Check,
    p: Pending,
    causes: tuple[str, ...],
    missing_kind: str,
    extra: list[Evidence] | None = None,
) -> list[Finding]:
    """Findings for `causes` that only the QuotaReserved message tells, when the queue objects are absent.

    `missing_kind` is the object the snapshot lacks (LocalQueue or ClusterQueue): the finding says that it
    rests on the condition alone, at medium confidence.
    """
    w, qr, pm = p.w, p.qr, p.pm
    if pm is None or qr is None:
        return []
    cond_ev = [*qr_evidence(w, qr), *(extra or [])]
    note = (
        f" The {missing_kind} is not in this snapshot, so this comes from the Workload's QuotaReserved "
        "condition alone (it may be stale)."
    )
    out: list[Finding] = []
    for kinds, cause, title, fix in _FROM_MESSAGE:
        if cause not in causes:
            continue
        reasons = pm.of(*kinds)
        if not reasons:
            continue
        r = reasons[0]
        values = {"name": r.name or "?", "ns": w.namespace, "resource": r.resource or "?"}
        out.append(
            check.finding(
                cause,
                title.format(**values),
                f"Kueue reports `{r.text}`.{note}",
                confidence=Confidence.MEDIUM,
                evidence=cond_ev,
                remediation=[fix.format(**values)],
                data={"from": "message"},
                fixes=_resume_recorded_localqueue(w, r.name) if r.kind == ReasonKind.LQ_STOPPED and r.name else [],
            )
        )
    flavor_reasons = pm.of(ReasonKind.NODE_AFFINITY, ReasonKind.UNTOLERATED_TAINT, ReasonKind.FLAVOR_NOT_FOUND)
    if (
        "no-matching-flavor" in causes
        and flavor_reasons
        and not pm.has(ReasonKind.INSUFFICIENT_UNUSED_QUOTA, ReasonKind.EXCEEDS_MAX_QUOTA)
    ):
        flavors = ", ".join(sorted({r.flavor or "?" for r in flavor_reasons}))
        out.append(
            check.finding(
                CauseSlug.NO_MATCHING_FLAVOR,
                f"every flavor tried was excluded: {flavors}",
                f"Kueue reports `{'; '.join(r.text for r in flavor_reasons)}`.{note}",
                confidence=Confidence.MEDIUM,
                evidence=cond_ev,
                data={"from": "message"},
            )
        )
    return out


def _resume_recorded_localqueue(w: WorkloadView, name: str) -> list[Fix]:
    """Resume a LocalQueue the dump lacks but Kueue's record calls stopped: the patch carries the queue as the
    record describes it (held by stopPolicy), so the verifier can apply the change to the partial snapshot."""
    api = str(w.obj.get("apiVersion") or "kueue.x-k8s.io/v1beta1")
    assumed = {"apiVersion": api, "kind": "LocalQueue", "metadata": {"name": name, "namespace": w.namespace},
               "spec": {"stopPolicy": "Hold"}}
    return [Fix(text=f"Resume LocalQueue {name} (Kueue's record says it is stopped; ask the namespace's "
                           "queue owner why first).",
                 patch=Patch(kind="LocalQueue", name=name, namespace=w.namespace,
                            merge={"spec": {"stopPolicy": "None"}}, assumed=assumed))]


def lq_active_evidence(lq: LocalQueueView) -> list[Evidence]:
    """The LocalQueue's Active=False condition, quoted (empty when it is active or unknown)."""
    active = lq.conditions.get("Active")
    if active is None or not active.false:
        return []
    return [
        ev(
            "condition",
            f"Active={active.status} ({active.reason}): {active.message}",
            kind="LocalQueue",
            name=lq.name,
            namespace=lq.namespace,
            field="status.conditions[type=Active]",
        )
    ]


class SubmissionCheck(Check):
    """A check about a pending Workload's queue route: pending → route → its findings or what it looked at.

    Subclasses give `route_findings` (their causes for the route) and `looked_at` (the one line that rules their
    causes out); `run` turns them into the honest outcome with `submission_result`.
    """

    def run(self, snapshot: Snapshot, target: Target) -> CheckResult:
        p = pending(target.workload)
        if p is None:
            return submission_result(self, [], target.workload, None, "")
        route = queue_route(snapshot, p.w, p.pm)
        return submission_result(self, self.route_findings(snapshot, p, route), p.w, route, self.looked_at(p, route))

    @abstractmethod
    def route_findings(self, snapshot: Snapshot, p: Pending, route: QueueRoute) -> list[Finding]:
        """Findings for this check's causes along the route."""

    @abstractmethod
    def looked_at(self, p: Pending, route: QueueRoute) -> str:
        """What was looked at and found fine (the ruled-out evidence line)."""


def cq_name(route: QueueRoute) -> str:
    return route.cq.name if route.cq is not None else "?"


def submission_result(
    check: Check, findings: list[Finding], w: WorkloadView | None, route: QueueRoute | None, looked: str
) -> CheckResult:
    """The honest outcome of a submission check.

    Findings fire. Without findings: a workload that is not pending is not applicable; a queue object the
    snapshot does not hold (``lq-unknown`` / ``cq-unknown``: not collected or not readable) means only Kueue's
    message could be read, so the check could not check that object; otherwise `looked` (what was looked at and
    found fine) rules the cause out.
    """
    if findings:
        return check.result(findings)
    if w is None or route is None:
        state = w.state if w is not None else "not managed by Kueue"
        return CheckResult.not_applicable(f"the workload is {state}, not pending")
    if route.state == "lq-unknown":
        return CheckResult.could_not_check(
            f"LocalQueue {w.namespace}/{route.lq_name}",
            "not in the snapshot (not collected or not readable); Kueue's QuotaReserved message names no "
            "problem with it")
    if route.state == "cq-unknown":
        name = route.lq.cluster_queue if route.lq is not None else "?"
        return CheckResult.could_not_check(
            f"ClusterQueue {name}", "not in the snapshot (not collected or not readable); Kueue's QuotaReserved "
            "message names no problem with it")
    ref = route.cq.name if route.cq is not None else route.lq_name
    return CheckResult.ruled_out(ev("object", looked, kind="ClusterQueue" if route.cq is not None else "LocalQueue",
                                    name=ref, namespace=None if route.cq is not None else w.namespace))
