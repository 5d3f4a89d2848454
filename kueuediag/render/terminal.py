"""The terminal renderer (rich): headline first, then ranked findings, ruled-out checks and what was not checked.

Built for the on-call reader: the first line answers the question; numbers are in the titles; every finding
ends with what to do.
"""

from __future__ import annotations

import io

from kueuediag.models import Outcome, Severity, Verdict
from kueuediag.render.common import confidence_line, data_lines, evidence_line, run_note, workload_line

_SEV_STYLE = {
    Severity.CRITICAL: "bold white on red",
    Severity.HIGH: "bold red",
    Severity.MEDIUM: "yellow",
    Severity.LOW: "cyan",
    Severity.INFO: "dim",
}
_LAYER_STYLE = {"submission": "magenta", "kueue": "blue", "kubernetes": "green", "none": "dim"}


def render_terminal(v: Verdict, *, color: bool = True, width: int | None = None, verbose: bool = False,
                    boxes: bool = True) -> str:
    from rich.console import Console
    from rich.panel import Panel
    from rich.text import Text

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=color, no_color=not color, width=width or 110,
                      color_system="standard" if color else None, highlight=False, soft_wrap=False)
    layer_style = _LAYER_STYLE.get(v.layer.value, "")
    head = Text()
    head.append("VERDICT ", style="bold")
    head.append(v.cause, style=f"bold {layer_style}")
    head.append(f"  ({v.layer.value} layer)\n" if v.layer.value != "none" else "\n", style=layer_style)
    head.append(v.headline, style="bold")
    head.append("\n" + workload_line(v), style="dim")
    if v.captured_at:
        head.append(f"\nsnapshot time {v.captured_at}", style="dim")
    head.append("\n" + confidence_line(v), style="yellow" if v.unseen else "dim")
    for gap in v.unseen:
        head.append("\n  ? " + gap, style="yellow")
    if boxes:
        console.print(Panel(head, title="kueuediag why", title_align="left", border_style=layer_style or "white"))
    else:
        console.print(head)
        console.print()

    target_findings = [r for r in v.findings if r.finding.about_target]
    context = [r for r in v.findings if not r.finding.about_target]
    for group_title, group in (("Findings", target_findings), ("Cluster context", context)):
        if not group:
            continue
        console.print(Text(group_title, style="bold underline"))
        for r in group:
            f = r.finding
            line = Text(f"{r.rank}. ")
            line.append(f"[{f.severity.label.upper()}]", style=_SEV_STYLE[f.severity])
            line.append(f" {f.title}", style="bold")
            line.append(f"  {f.cause} · {f.code} {f.check} · {f.confidence.label} confidence", style="dim")
            if f.contributors:
                line.append(f" · with evidence from {', '.join(f.contributors)}", style="dim")
            console.print(line)
            console.print(Text("   " + f.message))
            for dl in data_lines(f.data, already_shown=f.message):
                console.print(Text("   " + dl, style="cyan"))
            shown = f.evidence if verbose else f.evidence[:6]
            for e in shown:
                console.print(Text("   • " + evidence_line(e), style="dim"))
            if len(f.evidence) > len(shown):
                console.print(Text(f"   • … {len(f.evidence) - len(shown)} more (use -v)", style="dim"))
            for fix in f.remediation:
                console.print(Text("   → ", style="green") + Text(fix))
            console.print()

    clear = v.runs_with(Outcome.RULED_OUT)
    if clear:
        console.print(Text("Ruled out", style="bold underline"))
        for run in clear:
            console.print(Text(f"   ✓ {run.code} {run.check}", style="green")
                          + Text(f" — {run_note(run)}", style="dim"))
            if verbose:
                for e in run.evidence[1:]:
                    console.print(Text("     • " + evidence_line(e), style="dim"))
    not_applicable = v.runs_with(Outcome.NOT_APPLICABLE)
    if not_applicable:
        console.print(Text("Not applicable", style="bold underline"))
        for run in not_applicable:
            console.print(Text(f"   · {run.code} {run.check} — {run_note(run)}", style="dim"))
    not_checked = [r for r in v.runs if r.outcome in (Outcome.COULD_NOT_CHECK, Outcome.ERRORED)]
    if not_checked or v.snapshot_errors:
        console.print(Text("Could not check", style="bold underline"))
        for run in not_checked:
            mark = "!" if run.outcome is Outcome.ERRORED else "-"
            style = "red" if run.outcome is Outcome.ERRORED else "yellow"
            label = "errored" if run.outcome is Outcome.ERRORED else "could not check"
            console.print(Text(f"   {mark} {run.code} {run.check} {label}: ", style=style) + Text(run_note(run)))
        for err in v.snapshot_errors:
            console.print(Text(f"   - not collected: {err}", style="yellow"))
    for warning in v.snapshot_warnings:
        console.print(Text(f"warning: {warning}", style="yellow"))
    if verbose:
        total = sum(r.duration_ms for r in v.runs)
        console.print(Text(f"checks ran in {total:.1f} ms", style="dim"))
    return buf.getvalue()
