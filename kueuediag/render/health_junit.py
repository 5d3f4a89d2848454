"""`health -o junit`: one <testsuite> per health check, one <testcase> per ClusterQueue, flavor or object.

Shaped for the Jenkins/Ant JUnit schema (junit-4.xsd): a <testsuites> root; each <testsuite> carries name,
package, id, timestamp (no zone, as the XSD's pattern wants), hostname, tests, failures, errors, skipped and
time, with <properties> first, then test cases, then <system-out>/<system-err>. A test case fails when its
object has a finding at or above the gate (default: `--fail-on`, else medium); a lower finding is reported in
the case's <system-out>. A check that could not run is one skipped case.
"""

from __future__ import annotations

from xml.etree import ElementTree as ET

from kueuediag import __version__
from kueuediag.health.catalog import HEALTH_CHECKS
from kueuediag.health.model import HealthReport
from kueuediag.models import Finding, Severity
from kueuediag.render.common import evidence_line

HOSTNAME = "kueuediag"
"""The XSD requires a hostname; the report is about a snapshot, not the machine that rendered it."""


def _finding_text(f: Finding) -> str:
    lines = [f"{f.cause} ({f.code} {f.check}, {f.severity.label}): {f.title}", f.message]
    lines += [evidence_line(e) for e in f.evidence]
    lines += [f"fix: {r}" for r in f.remediation]
    return "\n".join(lines)


def render_health_junit(report: HealthReport, gate: Severity | None = None) -> str:
    gate = gate if gate is not None else Severity.MEDIUM
    stamp = report.captured_at.rstrip("Z")
    root = ET.Element("testsuites", name="kueuediag health")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for n, h in enumerate(HEALTH_CHECKS):
        items = report.items_of(h.id)
        skipped_why = report.skipped.get(h.id)
        if not items and skipped_why is None:
            continue
        suite = ET.SubElement(root, "testsuite", name=h.id, package=f"kueuediag.health.{h.section}", id=str(n),
                              timestamp=stamp, hostname=HOSTNAME)
        props = ET.SubElement(suite, "properties")
        for key, value in (("code", h.code), ("cause", h.cause), ("subject", h.subject),
                           ("kueueVersion", report.kueue_version or ""), ("failOn", gate.label),
                           ("tool", f"kueuediag {__version__}")):
            ET.SubElement(props, "property", name=key, value=value)
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        if skipped_why is not None:
            case = ET.SubElement(suite, "testcase", name=f"{h.subject} (all)", classname=f"kueuediag.{h.id}",
                                 time="0.000")
            ET.SubElement(case, "skipped", message=skipped_why)
            counts["tests"] += 1
            counts["skipped"] += 1
        for item in items:
            case = ET.SubElement(suite, "testcase", name=str(item.ref), classname=f"kueuediag.{h.id}",
                                 time="0.000")
            counts["tests"] += 1
            f = item.finding
            if f is not None and f.severity >= gate:
                counts["failures"] += 1
                node = ET.SubElement(case, "failure", message=f.title, type=f.cause)
                node.text = _finding_text(f)
            elif f is not None:
                out = ET.SubElement(case, "system-out")
                out.text = f"below {gate.label}: " + _finding_text(f)
            elif item.note:
                out = ET.SubElement(case, "system-out")
                out.text = item.note
        ET.SubElement(suite, "system-out")
        ET.SubElement(suite, "system-err")
        for key, count in counts.items():
            suite.set(key, str(count))
            totals[key] += count
        suite.set("time", "0.000")
    for key in ("tests", "failures", "errors"):
        root.set(key, str(totals[key]))
    root.set("time", f"{sum(report.timings_ms.values()) / 1000:.3f}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
