"""`-o junit`: one testcase per check run, so CI systems show the recipe as a test report.

A fired check with a finding at or above MEDIUM severity about the target is a <failure>; skipped runs are
<skipped>; errored runs are <error>.
"""

from __future__ import annotations

from xml.etree import ElementTree as ET

from kueuediag.models import Outcome, Severity, Verdict


def render_junit(v: Verdict, gate: Severity = Severity.MEDIUM) -> str:
    suite = ET.Element("testsuite", name="kueuediag", tests=str(len(v.runs)))
    failures = errors = skipped = 0
    for run in v.runs:
        case = ET.SubElement(suite, "testcase", classname=f"kueuediag.{run.family}", name=f"{run.code} {run.check}",
                             time=f"{run.duration_ms / 1000:.3f}")
        if run.outcome is Outcome.SKIPPED:
            skipped += 1
            ET.SubElement(case, "skipped", message=run.reason)
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
                out.text = "\n".join(f"{f.cause}: {f.title}" for f in run.findings)
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(skipped))
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="verdict", value=v.cause)
    ET.SubElement(props, "property", name="headline", value=v.headline)
    return ET.tostring(suite, encoding="unicode") + "\n"
