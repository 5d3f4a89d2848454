"""`-o junit`: one testcase per check run, so CI systems show the recipe as a test report.

A fired check with a finding at or above MEDIUM severity about the target is a <failure>; could-not-check and
not-applicable runs are <skipped> (the message says which, and names the input); errored runs are <error>;
ruled-out runs pass.

The document satisfies both structures CI tools read: Ant's (XMLJUnitResultFormatter: `timestamp` without a
zone, `hostname`, `time` on the suite, `<properties>` first, suite-level `<system-out>`/`<system-err>` last, at
most one result element per testcase) and Jenkins'. Because Ant allows no output inside a testcase, what backs
each passing run (the ruling-out evidence) goes to the suite's `<system-out>`, one line per check.
"""

from __future__ import annotations

import socket
from xml.etree import ElementTree as ET

from kueuediag.models import Finding, Outcome, Severity, Verdict
from kueuediag.render.common import evidence_line, run_note


def _finding_of(v: Verdict, code: str) -> list[Finding]:
    """The merged findings a check owns or contributed to (what the verdict shows for it)."""
    return [r.finding for r in v.findings if r.finding.code == code or code in r.finding.contributors]


def _timestamp(v: Verdict) -> str:
    """The snapshot's capture time in Ant's form (ISO 8601, seconds, no zone; the time is UTC)."""
    text = (v.captured_at or "1970-01-01T00:00:00Z").rstrip("Z")
    return text[:19]


def render_junit(v: Verdict, gate: Severity = Severity.MEDIUM, hostname: str | None = None) -> str:
    suite = ET.Element("testsuite", name="kueuediag", tests=str(len(v.runs)))
    suite.set("timestamp", _timestamp(v))
    suite.set("hostname", hostname or socket.gethostname() or "localhost")
    props = ET.SubElement(suite, "properties")
    for name, value in (("verdict", v.cause), ("headline", v.headline), ("confidence", v.confidence.label),
                        ("workload", f"{v.workload.namespace}/{v.workload.name}" if v.workload.name else "")):
        ET.SubElement(props, "property", name=name, value=value)
    failures = errors = skipped = 0
    notes: list[str] = []
    for run in v.runs:
        case = ET.SubElement(suite, "testcase", classname=f"kueuediag.{run.family}", name=f"{run.code} {run.check}",
                             time=f"{run.duration_ms / 1000:.3f}")
        if run.outcome in (Outcome.COULD_NOT_CHECK, Outcome.NOT_APPLICABLE):
            skipped += 1
            ET.SubElement(case, "skipped", message=f"{run.outcome.label}: {run_note(run)}")
        elif run.outcome is Outcome.RULED_OUT:
            lines = [evidence_line(e) for e in run.evidence] or [run_note(run)]
            notes.append(f"{run.code} {run.check}: ruled out: " + "; ".join(lines))
        elif run.outcome is Outcome.ERRORED:
            errors += 1
            ET.SubElement(case, "error", message=run.reason, type="errored")
        elif run.outcome is Outcome.FIRED:
            bad = [f for f in run.findings if f.severity >= gate and f.about_target]
            if bad:
                failures += 1
                node = ET.SubElement(case, "failure", message=bad[0].title, type=bad[0].cause)
                node.text = "\n".join(f"{f.cause}: {f.message}" for f in bad)
            else:
                notes += [f"{run.code} {run.check}: {f.cause}: {f.title}" for f in _finding_of(v, run.code)]
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(skipped))
    suite.set("time", f"{sum(r.duration_ms for r in v.runs) / 1000:.3f}")
    ET.SubElement(suite, "system-out").text = "\n".join(notes)
    ET.SubElement(suite, "system-err").text = "\n".join(f"not collected: {e}" for e in v.snapshot_errors)
    return ET.tostring(suite, encoding="unicode") + "\n"
