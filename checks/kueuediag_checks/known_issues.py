"""KD902 known-issues: the snapshot matches an upstream Kueue bug fixed in a later release."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal

from kueuediag.analysis.fair_sharing import fair_sharing_config
from kueuediag.analysis.health import (
    quota_holding_victims,
    shares_quota_with,
    victim_blocks,
    zombie_pods,
)
from kueuediag.analysis.installation import installation
from kueuediag.analysis.signatures import (
    KNOWN_ISSUES,
    KnownIssue,
    signature_hits,
)
from kueuediag.analysis.versions import Version, fixed_version_for, parse_version
from kueuediag.check import Check, ev
from kueuediag.models import CheckResult, Confidence, Evidence, Finding, Severity
from kueuediag.quantity import format_quantity
from kueuediag.snapshot.kueue import ClusterQueueView, KueueIndex, WorkloadView, kueue_index
from kueuediag.snapshot.model import Snapshot
from kueuediag.target import Target
from kueuediag.timeutil import format_rfc3339, human_duration


@dataclass
class _Ctx:
    snap: Snapshot
    target: Target
    idx: KueueIndex
    version: Version
    workload: WorkloadView | None
    cq: str | None
    pending: bool


@dataclass
class _Match:
    summary: str
    evidence: list[Evidence]
    about_target: bool
    confidence: Confidence = Confidence.MEDIUM
    stopgap: list[str] = field(default_factory=list)


class KnownIssues(Check):
    """Matches the Kueue version and what the snapshot shows against known upstream Kueue bugs.

    What it detects:
        A Kueue release (from the snapshot manifest, the controller image tag or `kueue_build_info`) that
        predates the fix of a known upstream bug, *and* the bug's fingerprint in the snapshot:
        * fair-sharing rounding (#6577, fixed by PR #6617 in v0.14.0 / v0.13.3 / v0.12.8): a borrowing
          ClusterQueue whose `status.fairSharing.weightedShare` is 0;
        * imprecise fair-sharing shares (#6774, PR #6925 in v0.14.0 / v0.13.5): fair sharing on, queues
          borrowing;
        * pods stuck terminating keep quota in pod groups (#6143/#6489, PR #6872 in v0.14.0 / v0.13.5 /
          v0.12.10): zombie pods of pod-group workloads;
        * serialized pod preemption (#6143, gate `FastQuotaReleaseInPodIntegration` since v0.17.0, off by
          default): plain-pod preemption victims holding quota through their grace period;
        * misleading `request > maximum capacity` with several pod sets (#4134, PR #7232 in v0.15.0).
        Log signatures listed by the issue (e.g. `Workload requires preemption, but there are no candidate
        workloads allowed for preemption`) are added as corroborating evidence.

    Why the workload stays pending:
        The bug itself keeps it pending: a borrowing queue that looks like it is not borrowing is never
        chosen for reclamation; a zombie pod keeps its preempted Workload's quota forever; plain-pod
        preemptions complete one grace period at a time.

    Evidence:
        The Kueue version and where it came from, the objects showing the fingerprint (ClusterQueue
        `status.fairSharing.weightedShare` and `status.flavorsReservation[].resources[].borrowed`, Pod
        `metadata.deletionTimestamp`, Workload conditions), and matching log lines.

    How to fix:
        Upgrade Kueue to the fixed release the finding names (the patch release of your minor line when the
        fix was cherry-picked); the finding also gives the stop-gap (force-delete zombie pods, evict
        borrowers by hand, enable the feature gate).

    Example:
        `Kueue v0.13.2 has upstream bug #6577 (fair-sharing share rounds to 0 for a borrowing ClusterQueue);
        fixed in v0.13.3 [known-issue]`
    """

    code = "KD902"
    name = "known-issues"
    requires = ()
    needs_workload = False
    default_severity = Severity.HIGH

    def run(self, snapshot: Snapshot, target: Target) -> CheckResult:
        inst = installation(snapshot)
        kv = inst.version
        version = parse_version(kv.version)
        if version is None:
            return CheckResult.could_not_check(
                "Kueue version", "unknown: not in the snapshot manifest, the controller image or kueue_build_info"
                + (f" (found {kv.version!r})" if kv.version else ""))
        w = target.workload
        ctx = _Ctx(snapshot, target, kueue_index(snapshot), version, w, target.cluster_queue(snapshot),
                   w is not None and w.state in ("pending", "quota-reserved"))
        out: list[Finding] = []
        fired: set[str] = set()
        for issue in KNOWN_ISSUES:
            if issue.id == "fair-sharing-rounding-precision" and "fair-sharing-rounding-zero" in fired:
                continue  # the same family of bug: report the stronger fingerprint only
            gate_on = bool(issue.mitigation_gate and inst.gates.enabled(issue.mitigation_gate))
            if gate_on and issue.gate_available(version):
                continue
            if not issue.affects(version):
                continue
            match = _DETECTORS[issue.condition](ctx)
            if match is None:
                continue
            fired.add(issue.id)
            out.append(self._finding(ctx, issue, match, kv.version or str(version), kv.source))
        affecting = [i.id for i in KNOWN_ISSUES if i.affects(version)]
        return self.result(out, ev(
            "derived", f"Kueue {kv.version or version} (from {kv.source}): {len(affecting)} of {len(KNOWN_ISSUES)} "
                       "known issue(s) affect this version, none of their signatures is in the snapshot"
            + (f" ({', '.join(affecting[:4])})" if affecting else ""), field="known issues"))

    def _finding(self, ctx: _Ctx, issue: KnownIssue, match: _Match, shown: str, source: str) -> Finding:
        evidence = [ev("manifest", f"Kueue {shown} ({source})", field="kueueVersion",
                       expected=f"fixed in {', '.join(issue.fixed_in)}" if issue.fixed_in
                       else f">= {issue.gate_since} with {issue.mitigation_gate}=true")]
        evidence += match.evidence
        confidence = match.confidence
        hits = [h for h in signature_hits(ctx.snap) if h.signature.id in issue.signatures] \
            if ctx.snap.logs_text else []
        for h in hits[:2]:
            ln = h.lines[-1]
            evidence.append(ev("log", f"{ln.location}: {ln.msg} ({h.count}x)", field=h.signature.id))
        if hits and confidence < Confidence.HIGH:
            confidence = Confidence(int(confidence) + 1)
        first_issue = issue.issues[0]
        if issue.fixed_in:
            fix = fixed_version_for(ctx.version, issue.fixed_in)
            title = f"Kueue {shown} has upstream bug {first_issue} ({_lower_first(issue.title)}); fixed in {fix}"
            upgrade = (f"Upgrade Kueue to {fix} or later ({issue.refs}); releases with the fix: "
                       f"{', '.join(issue.fixed_in)}.")
        else:
            fix = f"{issue.gate_since} with {issue.mitigation_gate}"
            title = (f"Kueue {shown}: {_lower_first(issue.title)} ({first_issue}); mitigated by "
                     f"{issue.mitigation_gate} (>= {issue.gate_since})")
            if issue.gate_available(ctx.version):
                upgrade = (f"Enable the feature gate: add --feature-gates={issue.mitigation_gate}=true to the "
                           f"kueue-controller-manager args (alpha, off by default; {issue.refs}).")
            else:
                upgrade = (f"Upgrade Kueue to {issue.gate_since} or later and enable --feature-gates="
                           f"{issue.mitigation_gate}=true ({issue.refs}).")
        changelog = f' Changelog: "{issue.changelog}"' if issue.changelog else ""
        return self.finding(
            "known-issue", title,
            f"{issue.meaning} In this snapshot: {match.summary}.{changelog}",
            severity=Severity.HIGH if match.about_target else Severity.MEDIUM,
            confidence=confidence, evidence=evidence, remediation=[upgrade, *match.stopgap],
            about_target=match.about_target,
            data={"issue": issue.id, "upstream": list(issue.issues), "prs": list(issue.prs), "fixed_in": fix,
                  "kueueVersion": shown},
        )


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


# --- detectors (KnownIssue.condition → fingerprint in the snapshot) -------------------------------------


def _fair_sharing_on(ctx: _Ctx) -> bool:
    fs = fair_sharing_config(ctx.snap)
    if fs.enabled is not None:
        return fs.enabled
    return any((q.obj.get("status") or {}).get("fairSharing") is not None for q in ctx.idx.cluster_queues.values())


def _borrowed(q: ClusterQueueView) -> dict[str, Decimal]:
    out: dict[str, Decimal] = {}
    for (_flavor, res), (_total, borrowed) in q.reservation.items():
        if borrowed > 0:
            out[res] = out.get(res, Decimal(0)) + borrowed
    return out


def _borrowing_zero_share(ctx: _Ctx) -> _Match | None:
    if not _fair_sharing_on(ctx):
        return None
    bad = [q for q in ctx.idx.cluster_queues.values() if _borrowed(q) and q.weighted_share == 0]
    if not bad:
        return None
    about = ctx.pending and any(shares_quota_with(ctx.idx, ctx.cq, q.name) for q in bad)
    evidence = [ev("object", f"weightedShare 0 while borrowing "
                             f"{', '.join(f'{format_quantity(v, r)} {r}' for r, v in sorted(_borrowed(q).items()))}",
                   kind="ClusterQueue", name=q.name, field="status.fairSharing.weightedShare",
                   expected="> 0 for a borrowing ClusterQueue") for q in bad[:4]]
    names = ", ".join(q.name for q in bad)
    return _Match(
        f"ClusterQueue {names} borrow{'s' if len(bad) == 1 else ''} quota but "
        f"report{'s' if len(bad) == 1 else ''} weightedShare 0, so "
        f"fair-sharing preemption never picks {'it' if len(bad) == 1 else 'them'}"
        + (f" and ClusterQueue {ctx.cq} cannot reclaim its nominal quota" if about else ""),
        evidence, about, Confidence.HIGH,
        stopgap=[f"Stop-gap: evict the borrowing workloads of {names} by hand "
                 "(`kubectl kueue stop workload <wl>` / delete their jobs), or lower fairSharing weights."],
    )


def _fair_sharing_borrowing(ctx: _Ctx) -> _Match | None:
    if not _fair_sharing_on(ctx):
        return None
    borrowing = [q for q in ctx.idx.cluster_queues.values() if _borrowed(q)]
    if not borrowing:
        return None
    about = ctx.pending and any(shares_quota_with(ctx.idx, ctx.cq, q.name) for q in borrowing)
    evidence = [ev("object", f"weightedShare {q.weighted_share}", kind="ClusterQueue", name=q.name,
                   field="status.fairSharing.weightedShare") for q in borrowing[:4]]
    return _Match(f"fair sharing is on and {len(borrowing)} ClusterQueue(s) borrow, so shares are compared "
                  "after rounding", evidence, about, Confidence.LOW)


def _zombies_in_pod_groups(ctx: _Ctx) -> _Match | None:
    zs = [z for z in zombie_pods(ctx.snap) if z.in_pod_group and z.workload is not None]
    if not zs:
        return None
    about = ctx.pending and any(shares_quota_with(ctx.idx, ctx.cq, z.cluster_queue) for z in zs)
    evidence: list[Evidence] = []
    for z in zs[:3]:
        evidence.append(ev("object", f"pod-group pod Terminating {human_duration(z.overdue_seconds)} past its "
                                     f"grace period (deletionTimestamp "
                                     f"{format_rfc3339(z.pod.deletion) if z.pod.deletion else '?'})",
                           kind="Pod", name=z.pod.name, namespace=z.pod.namespace,
                           field="metadata.deletionTimestamp"))
        if z.workload is not None:
            evidence.append(ev("condition", "QuotaReserved=True", kind="Workload", name=z.workload.name,
                               namespace=z.workload.namespace, field="status.conditions[type=QuotaReserved]"))
    groups = sorted({z.workload.ref() for z in zs if z.workload is not None})
    return _Match(
        f"{len(zs)} pod(s) of pod group(s) {', '.join(groups)} are stuck terminating and their Workloads still "
        "hold quota", evidence, about, Confidence.HIGH,
        stopgap=[f"Stop-gap: kubectl delete pod {z.pod.name} -n {z.pod.namespace} --force --grace-period=0"
                 for z in zs[:2]],
    )


def _pod_victims_terminating(ctx: _Ctx) -> _Match | None:
    victims = [v for v in quota_holding_victims(ctx.snap)
               if v.pod_integration and not v.zombies and any(p.deletion is not None for p in v.pods)]
    if not victims:
        return None
    about = ctx.pending and any(victim_blocks(ctx.idx, ctx.workload, ctx.cq, v) for v in victims)
    evidence = []
    for v in victims[:3]:
        grace = max((p.grace_seconds for p in v.pods), default=0)
        evidence.append(ev("condition", f"Evicted=True (Preempted) {human_duration(v.held_seconds)} ago, "
                                        f"QuotaReserved=True; pods terminating with grace {grace}s",
                           kind="Workload", name=v.workload.name, namespace=v.workload.namespace,
                           field="status.conditions[type=Evicted]"))
    return _Match(f"{len(victims)} plain-pod preemption victim(s) keep quota while their pods terminate",
                  evidence, about, Confidence.MEDIUM)


def _multi_podset_max_capacity(ctx: _Ctx) -> _Match | None:
    w = ctx.workload
    if w is None or len(w.pod_sets) < 2:
        return None
    cond = w.cond("QuotaReserved")
    if cond is None or "request > maximum capacity" not in cond.message:
        return None
    return _Match(
        f"{w.ref()} has {len(w.pod_sets)} pod sets and its message uses the old `request > maximum capacity` "
        "template, whose numbers ignore earlier pod sets",
        [ev("condition", cond.message[:300], kind="Workload", name=w.name, namespace=w.namespace,
            field="status.conditions[type=QuotaReserved].message")],
        ctx.pending, Confidence.MEDIUM,
        stopgap=["Add up the requests of all pod sets yourself and compare with nominal quota + borrowingLimit."],
    )


_DETECTORS: dict[str, Callable[[_Ctx], _Match | None]] = {
    "borrowing-cq-zero-share": _borrowing_zero_share,
    "fair-sharing-borrowing": _fair_sharing_borrowing,
    "zombie-pods-in-pod-group": _zombies_in_pod_groups,
    "pod-preemption-victim-terminating": _pod_victims_terminating,
    "multi-podset-max-capacity": _multi_podset_max_capacity,
}
