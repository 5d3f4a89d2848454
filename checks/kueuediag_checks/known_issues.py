"""KD902 known-issues: the snapshot matches an upstream Kueue bug fixed in a later release."""

from __future__ import annotations

from kueuediag.analysis.installation import installation
from kueuediag.analysis.known_issues import Context, Match, context_for, known_issues, match_all
from kueuediag.analysis.known_issues import affecting as affecting_issues
from kueuediag.analysis.versions import fixed_version_for, parse_version
from kueuediag.causes import CauseSlug
from kueuediag.check import Check
from kueuediag.models import CheckResult, Finding, Severity, ev
from kueuediag.snapshot.model import Part, Snapshot
from kueuediag.target import Target


class KnownIssues(Check):
    """Matches the Kueue version and what the snapshot recorded against a table of known upstream Kueue bugs.

    What it detects:
        A Kueue release (from the snapshot manifest, the controller image tag or `kueue_build_info`) that has a
        known upstream bug (kueuediag/data/known_issues.yaml, listed in docs/known-issues.md: fair-sharing
        rounding, zombie pods holding quota, serialized pod preemption, TAS pods never ungated, flavors edited
        without a retry, admission races, controller crashes, ...) *and* the bug's signature in the snapshot.
        Confidence is graded by what was recorded: the fingerprint in objects (conditions, status, pods) is
        high; an affected version with a matching log signature and the required configuration, but no object
        evidence, is medium; an affected version alone never fires.

    Why the workload stays pending:
        The bug itself keeps it pending (a borrowing queue that looks like it is not borrowing is never chosen
        for reclamation; pods admitted but never ungated; a stale message never retried), or holds quota the
        workload needs; some entries only change a message or the queue order, and say so.

    Evidence:
        The Kueue version and where it came from, the configuration the bug needs, the objects showing the
        fingerprint, and matching log lines.

    How to fix:
        Upgrade Kueue to the fixed release the finding names (the patch release of your minor line when the
        fix was cherry-picked); the finding also gives the workaround until then.

    Example:
        `Kueue v0.13.2 has upstream bug #6577 (fair-sharing share rounds to 0 for a borrowing ClusterQueue);
        fixed in v0.13.3 [known-issue]`
    """

    code = "KD902"
    name = "known-issues"
    requires = ()
    reads = (Part.LOGS,)
    needs_workload = False
    default_severity = Severity.HIGH

    def run(self, snapshot: Snapshot, target: Target) -> CheckResult:
        kv = installation(snapshot).version
        version = parse_version(kv.version)
        if version is None:
            return CheckResult.could_not_check(
                "Kueue version", "unknown: not in the snapshot manifest, the controller image or kueue_build_info"
                + (f" (found {kv.version!r})" if kv.version else ""))
        ctx = context_for(snapshot, version, target.workload, target.cluster_queue(snapshot))
        matches = match_all(ctx)
        fired = {m.issue.id for m in matches}
        out = [self._finding(ctx, m, kv.version or str(version), kv.source) for m in matches
               # the same family of bug: report the stronger fingerprint only
               if not (m.issue.id == "fair-sharing-rounding-precision" and "fair-sharing-rounding-zero" in fired)]
        table = known_issues()
        affecting = [i.id for i in affecting_issues(snapshot, version)]
        return self.result(out, ev(
            "derived", f"Kueue {kv.version or version} (from {kv.source}): {len(affecting)} of {len(table)} "
                       "known issue(s) affect this version, none of their signatures is in the snapshot"
            + (f" ({', '.join(affecting[:4])}{', ...' if len(affecting) > 4 else ''})" if affecting else ""),
            field="known issues"))

    def _finding(self, ctx: Context, m: Match, shown: str, source: str) -> Finding:
        issue = m.issue
        evidence = [ev("manifest", f"Kueue {shown} ({source})", field="kueueVersion",
                       expected=f"fixed in {', '.join(issue.fixed_in)}" if issue.fixed_in
                       else f">= {issue.gate_since} with {issue.mitigation_gate}=true")]
        evidence += m.evidence
        if issue.fixed_in:
            fix = fixed_version_for(ctx.version, issue.fixed_in)
            title = f"Kueue {shown} has upstream bug {issue.first_ref} ({_lower_first(issue.title)}); fixed in {fix}"
            upgrade = (f"Upgrade Kueue to {fix} or later ({issue.refs}); releases with the fix: "
                       f"{', '.join(issue.fixed_in)}.")
        else:
            fix = f"{issue.gate_since} with {issue.mitigation_gate}"
            title = (f"Kueue {shown}: {_lower_first(issue.title)} ({issue.first_ref}); mitigated by "
                     f"{issue.mitigation_gate} (>= {issue.gate_since})")
            if issue.gate_available(ctx.version):
                upgrade = (f"Enable the feature gate: add --feature-gates={issue.mitigation_gate}=true to the "
                           f"kueue-controller-manager args (alpha, off by default; {issue.refs}).")
            else:
                upgrade = (f"Upgrade Kueue to {issue.gate_since} or later and enable --feature-gates="
                           f"{issue.mitigation_gate}=true ({issue.refs}).")
        changelog = f' Changelog: "{issue.changelog}"' if issue.changelog else ""
        effect = {"blocks-admission": "", "holds-quota": " It keeps quota held.",
                  "ordering": " It changes the queue order, not whether the workload can be admitted.",
                  "message-only": " It only changes what a message or status says; admission is unaffected."}
        # a bug that only garbles a message explains the message, not why the workload waits: it is context for
        # the target, never its verdict (the cause owners say why it is pending)
        about = m.about_target and issue.effect != "message-only"
        severity = Severity.HIGH if about else Severity.MEDIUM
        if issue.effect in ("ordering", "message-only"):
            severity = Severity.MEDIUM if about else Severity.LOW
        return self.finding(
            CauseSlug.KNOWN_ISSUE, title,
            f"{issue.meaning}{effect[issue.effect]} In this snapshot: {m.summary}.{changelog}",
            severity=severity, confidence=m.confidence, evidence=evidence,
            remediation=[upgrade, f"Workaround: {issue.workaround}", *m.stopgap],
            about_target=about,
            data={"issue": issue.id, "upstream": list(issue.issues), "prs": list(issue.prs), "fixed_in": fix,
                  "kueueVersion": shown, "effect": issue.effect},
        )


def _lower_first(text: str) -> str:
    """Sentence case inside a title, keeping names (`TAS`, `LeaderWorkerSet`, `FairSharing`) as they are."""
    word = text.split(" ", 1)[0]
    return text[:1].lower() + text[1:] if word[1:] == word[1:].lower() else text
