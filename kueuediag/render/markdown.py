"""`-o markdown`: a verdict to paste into a ticket."""

from __future__ import annotations

from kueuediag.models import Fix, Outcome, Verdict
from kueuediag.render import common
from kueuediag.render.common import FIX_LABELS, confidence_line, data_lines, evidence_line, run_note, workload_line


def _esc(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(v: Verdict) -> str:
    out = [f"## kueuediag verdict: `{v.cause}` ({v.layer.value} layer)", "", f"**{v.headline}**", "",
           f"{workload_line(v)}  ", f"Snapshot time: {v.captured_at}  ", f"{confidence_line(v)}", ""]
    out += [f"- could not see: {_esc(line)}" for line in v.unseen]
    if v.unseen:
        out.append("")
    out += _first_fix(v) + [""]
    if v.findings:
        out += ["### Findings (ranked)", ""]
        for r in v.findings:
            f = r.finding
            scope = "" if f.about_target else " _(cluster-wide)_"
            more = f", with evidence from {', '.join(f.contributors)}" if f.contributors else ""
            out.append(f"{r.rank}. **{f.title}** — `{f.cause}`, {f.severity.label} severity, "
                       f"{f.confidence.label} confidence ({f.code} {f.check}{more}){scope}")
            out.append(f"   {f.message}")
            for line in data_lines(f.data, already_shown=f.message):
                out.append(f"   `{line}`")
            if f.evidence:
                out.append("   - Evidence:")
                out += [f"     - {_esc(evidence_line(e))}" for e in f.evidence]
            if f.fixes:
                out.append("   - Fix:")
                for x in f.fixes:
                    out.append(f"     - _{FIX_LABELS[x.status]}_: {_esc(x.text)}")
                    if x.command and x.command != x.text:
                        out.append(f"       `{x.command}`")
            elif f.remediation:
                out.append("   - Fix:")
                out += [f"     - {_esc(x)}" for x in f.remediation]
            out.append("")
    out += ["### Recipe checks", "", "| code | check | outcome | evidence or reason |", "|---|---|---|---|"]
    for run in v.runs:
        out.append(f"| {run.code} | {run.check} | {run.outcome.label} | {_esc(run_note(run))} |")
    not_checked = [r for r in v.runs if r.outcome in (Outcome.COULD_NOT_CHECK, Outcome.ERRORED)]
    if not_checked or v.snapshot_errors:
        out += ["", "### Could not check", ""]
        out += [f"- {r.code} {r.check} ({r.outcome.label}): {_esc(run_note(r))}" for r in not_checked]
        out += [f"- snapshot: {e}" for e in v.snapshot_errors]
    if v.snapshot_warnings:
        out += ["", "### Snapshot warnings", ""] + [f"- {_esc(w)}" for w in v.snapshot_warnings]
    return "\n".join(out).rstrip() + "\n"


def _first_fix(v: Verdict) -> list[str]:
    """What the terminal's verdict box says to do first, with its label (checked, stop-gap, next step)."""
    fix: Fix | None = v.first_fix
    if fix is None:
        if v.primary is None:
            return [f"**Next step:** {common.NO_CAUSE}", "", "```sh", common.snapshot_command(v), "```"]
        return [f"**No checked fix:** {common.NO_CHECKED_FIX}"]
    label = FIX_LABELS[fix.status]
    heading = f"**First {label}:**" if fix.status.value != "advice" else f"**{label[:1].upper()}{label[1:]}:**"
    out = [f"{heading} {_esc(fix.text) if fix.text != fix.command else ''}".rstrip()]
    if fix.command:
        out += ["", "```sh", fix.command, "```"]
    if fix.reason:
        out += ["", f"_Why only a stop-gap:_ {_esc(fix.reason)}."]
    if fix.note:
        out += ["", f"> {_esc(fix.note)}"]
    return out
