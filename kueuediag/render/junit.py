"""`-o junit`: one testcase per check run, so CI systems show the recipe as a test report.

A fired check with a finding at or above MEDIUM severity about the target is a <failure>; could-not-check and
not-applicable runs are <skipped> (the message says which, and names the input); errored runs are <error>;
ruled-out runs pass with their evidence in <system-out>.
"""

from __future__ import annotations

from xml.etree import ElementTree as ET

from kueuediag.models import Finding, Outcome, Severity, Verdict
from kueuediag.render.common import evidence_line, run_note


def _finding_of(v: Verdict, code: str) -> list[Finding]:
    """The merged findings a check owns or contributed to (what the verdict shows for it)."""
    return [r.finding for r in v.findings if r.finding.code == code or code in r.finding.contributors]


def render_junit(v: Verdict, gate: Severity = Severity.MEDIUM) -> str:
    suite = ET.Element("testsuite", name="kueuediag", tests=str(len(v.runs)))
    failures = errors = skipped = 0
    for run in v.runs:
        case = ET.SubElement(suite, "testcase", classname=f"kueuediag.{run.family}", name=f"{run.code} {run.check}",
                             time=f"{run.duration_ms / 1000:.3f}")
        if run.outcome in (Outcome.COULD_NOT_CHECK, Outcome.NOT_APPLICABLE):
            skipped += 1
            ET.SubElement(case, "skipped", message=f"{run.outcome.label}: {run_note(run)}")
        elif run.outcome is Outcome.RULED_OUT:
            out = ET.SubElement(case, "system-out")
            out.text = "ruled out: " + "\n".join([evidence_line(e) for e in run.evidence] or [run_note(run)])
        elif run.outcome is Outcome.ERRORED:
            errors += 1
            ET.SubElement(case, "error", message=run.reason)
        elif run.outcome is Outcome.FIRED:
            bad = [f for f in run.findings if f.severity >= gate and f.about_target]
            if bad:
                failures += 1
                node = ET.SubElement(case, "failure", message=bad[0].title, type=bad[0].cause)
                node.text = "\n".join(f"{f.cause}: {f.message}" for f in bad)
            else:
                out = ET.SubElement(case, "system-out")
                out.text = "\n".join(f"{f.cause}: {f.title}" for f in _finding_of(v, run.code))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(skipped))
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="verdict", value=v.cause)
    ET.SubElement(props, "property", name="headline", value=v.headline)
    ET.SubElement(props, "property", name="confidence", value=v.confidence.label)
    return ET.tostring(suite, encoding="unicode") + "\n"
