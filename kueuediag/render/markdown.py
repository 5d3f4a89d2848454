"""`-o markdown`: a verdict to paste into a ticket."""

from __future__ import annotations

from kueuediag.models import Outcome, Verdict
from kueuediag.render.common import data_lines, evidence_line, workload_line


def _esc(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(v: Verdict) -> str:
    out = [f"## kueuediag verdict: `{v.cause}` ({v.layer.value} layer)", "", f"**{v.headline}**", "",
           f"{workload_line(v)}  ", f"Snapshot time: {v.captured_at}", ""]
    if v.findings:
        out += ["### Findings (ranked)", ""]
        for r in v.findings:
            f = r.finding
            scope = "" if f.about_target else " _(cluster-wide)_"
            out.append(f"{r.rank}. **{f.title}** — `{f.cause}`, {f.severity.label} severity, "
                       f"{f.confidence.label} confidence ({f.code} {f.check}){scope}")
            out.append(f"   {f.message}")
            for line in data_lines(f.data, already_shown=f.message):
                out.append(f"   `{line}`")
            if f.evidence:
                out.append("   - Evidence:")
                out += [f"     - {_esc(evidence_line(e))}" for e in f.evidence]
            if f.remediation:
                out.append("   - Fix:")
                out += [f"     - {_esc(x)}" for x in f.remediation]
            out.append("")
    out += ["### Recipe checks", "", "| code | check | outcome | note |", "|---|---|---|---|"]
    for run in v.runs:
        note = run.reason or (", ".join(sorted({f.cause for f in run.findings})) if run.findings else "ruled out")
        out.append(f"| {run.code} | {run.check} | {run.outcome.value} | {_esc(note)} |")
    skipped = [r for r in v.runs if r.outcome in (Outcome.SKIPPED, Outcome.ERRORED)]
    if skipped or v.snapshot_errors:
        out += ["", "### Could not check", ""]
        out += [f"- {r.code} {r.check}: {r.reason}" for r in skipped]
        out += [f"- snapshot: {e}" for e in v.snapshot_errors]
    return "\n".join(out).rstrip() + "\n"
