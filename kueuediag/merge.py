"""One finding per cause: fold what several checks say about one cause into the owner's finding.

Each cause has one owning check (`Cause.owner`). Other checks that see supporting facts return
:class:`~kueuediag.models.Contribution` objects; the engine merges them here. The rules (docs/ranking.md):

* the owner's finding is the base: its title, message and severity stand;
* every contributed evidence item is kept (exact duplicates once), remediation is the union in order;
* confidence is the highest of the owner's and the contributions';
* the finding is about the target when any part of it is;
* `contributors` lists the codes of the checks whose evidence was folded in;
* when the owner did not fire, the first contribution becomes the finding for its cause at its own severity
  and confidence (stamped with the contributing check's code), and later ones fold into it — except when the
  owner looked and ruled the cause out: then the two disagree, and the finding is kept at low confidence with
  a sentence naming the owner's ruling.

Several findings of one cause from the owner stay separate: that is the owner's decision.
"""

from __future__ import annotations

from collections.abc import Sequence

from kueuediag.causes import cause
from kueuediag.check import DOCS_BASE
from kueuediag.models import CheckRun, Confidence, Contribution, Finding, Outcome, replaced


def contribution_finding(code: str, check: str, c: Contribution) -> Finding:
    """The finding a contribution stands for when its cause's owner did not fire."""
    return Finding(code=code, check=check, cause=c.cause, title=c.title, message=c.message, severity=c.severity,
        confidence=c.confidence, evidence=c.evidence, remediation=c.remediation or (cause(c.cause).remediation,),
        docs=f"{DOCS_BASE}/{code}.md",
        about_target=c.about_target, data=dict(c.data),
    )


def fold(base: Finding, code: str, extra: Finding | Contribution) -> Finding:
    """`base` with `extra`'s evidence, remediation and confidence folded in (contributed by check `code`)."""
    evidence = list(base.evidence)
    evidence += [e for e in extra.evidence if e not in evidence]
    remediation = list(base.remediation)
    remediation += [r for r in extra.remediation if r not in remediation]
    contributors = list(base.contributors)
    if code != base.code and code not in contributors:
        contributors.append(code)
    data = dict(extra.data)
    data.update(base.data)
    fixes = list(base.fixes)
    if isinstance(extra, Finding):
        fixes += [x for x in extra.fixes if x not in fixes]
    return replaced(
        base,
        fixes=tuple(fixes),
        evidence=tuple(evidence),
        remediation=tuple(remediation),
        confidence=max(base.confidence, extra.confidence),
        about_target=base.about_target or extra.about_target,
        contributors=tuple(contributors),
        data=data,
    )


def merge_runs(runs: Sequence[CheckRun], owners: dict[str, str]) -> list[Finding]:
    """All findings of `runs`, with every contribution folded into its cause's finding.

    `owners` maps cause slug → owning check code. A contribution folds into the owner's finding of its cause,
    else into the first finding of that cause, else it becomes that finding.
    """
    out = [f for run in runs for f in run.findings]
    first: dict[str, int] = {}
    for i, f in enumerate(out):
        if f.cause not in first or (owners.get(f.cause) == f.code and out[first[f.cause]].code != f.code):
            first[f.cause] = i
    by_code = {r.code: r for r in runs}
    for run in runs:
        for c in run.contributions:
            at = first.get(c.cause)
            if at is None:
                first[c.cause] = len(out)
                owner = by_code.get(owners.get(c.cause, ""))
                out.append(contribution_finding(run.code, run.check, _contested(c, owner)))
            else:
                out[at] = fold(out[at], run.code, c)
    return out


def _contested(c: Contribution, owner: CheckRun | None) -> Contribution:
    """A contribution whose owner looked and ruled the cause out: kept, but at low confidence and saying so.

    The two checks disagree; the output shows both instead of choosing silently (STYLE.md §15).
    """
    if owner is None or owner.outcome is not Outcome.RULED_OUT:
        return c
    why = f" {owner.code} {owner.check} ruled this cause out"
    if owner.evidence:
        why += f" ({owner.evidence[0].observed})"
    return replaced(c, confidence=Confidence.LOW, message=c.message + why + ".")
