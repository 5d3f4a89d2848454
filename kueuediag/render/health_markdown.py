"""`health -o markdown`: the report for a ticket or a shift hand-over note."""

from __future__ import annotations

from kueuediag.health.model import HealthReport
from kueuediag.models import Severity
from kueuediag.render.common import evidence_line
from kueuediag.render.health_common import sections


def _esc(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_health_markdown(report: HealthReport, gate: Severity | None = Severity.HIGH) -> str:
    failing = report.failures()
    where = "all namespaces" if report.namespaces is None else "namespaces " + ", ".join(report.namespaces)
    status = f"{len(failing)} problem(s)" if failing else "healthy"
    if failing and gate is not None:
        status += f", {len(report.failures(gate))} at or above {gate.label}"
    out = [f"## kueuediag health: {status}", "",
           f"{where} · Kueue {report.kueue_version or 'version unknown'} · snapshot time {report.captured_at}", ""]
    for sec in sections(report):
        out += [f"### {'✗' if sec.failing else '✓'} {sec.title} — {sec.summary}", ""]
        if sec.failing:
            out += ["| severity | check | object | finding | cause |", "|---|---|---|---|---|"]
            for i in sec.failing:
                f = i.finding
                assert f is not None
                out.append(f"| {f.severity.label} | {i.check} | `{i.ref}` | {_esc(f.title)} | `{f.cause}` ({f.code}) |")
            out.append("")
            for i in sec.failing:
                f = i.finding
                assert f is not None
                out.append(f"- **{i.ref}** — {_esc(f.message)}")
                out += [f"  - {_esc(evidence_line(e))}" for e in f.evidence[:4]]
                out += [f"  - Fix: {_esc(x)}" for x in f.remediation[:1]]
            out.append("")
        if sec.lines and (sec.failing or sec.key == "heads"):
            out += ["```", *sec.lines, "```", ""]
    if report.skipped or report.snapshot_errors:
        out += ["### Could not check", ""]
        out += [f"- {k}: {v}" for k, v in report.skipped.items()]
        out += [f"- snapshot: {e}" for e in report.snapshot_errors]
    return "\n".join(out).rstrip() + "\n"
