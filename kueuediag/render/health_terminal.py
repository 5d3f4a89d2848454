"""`health` in the terminal (rich): a summary panel, then each section — collapsed to one line when healthy —
with the failing objects first, each with its finding's title and first fix."""

from __future__ import annotations

import io

from kueuediag.health.model import HealthReport
from kueuediag.models import Severity
from kueuediag.render.health_common import sections
from kueuediag.render.terminal import _SEV_STYLE


def render_health_terminal(report: HealthReport, *, gate: Severity | None = Severity.HIGH, color: bool = True,
                           width: int | None = None, verbose: bool = False,
                           changes: list[str] | None = None) -> str:
    from rich.console import Console
    from rich.panel import Panel
    from rich.text import Text

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=color, no_color=not color, width=width or 110,
                      color_system="standard" if color else None, highlight=False, soft_wrap=False)
    failing = report.failures()
    gated = report.failures(gate) if gate is not None else []
    head = Text()
    if failing:
        head.append(f"{len(failing)} problem(s)", style="bold red" if gated else "bold yellow")
        if gate is not None:
            head.append(f", {len(gated)} at or above {gate.label}", style="bold")
    else:
        head.append("healthy: nothing in trouble", style="bold green")
    where = "all namespaces" if report.namespaces is None else "namespaces " + ", ".join(report.namespaces)
    head.append(f"\n{where} · Kueue {report.kueue_version or 'version unknown'} · snapshot time "
                f"{report.captured_at}", style="dim")
    console.print(Panel(head, title="kueuediag health", title_align="left",
                        border_style="red" if gated else ("yellow" if failing else "green")))
    if changes:
        console.print(Text("Changed since the last cycle", style="bold underline"))
        for line in changes:
            console.print(Text("   ⟳ " + line, style="bold magenta"))
    for sec in sections(report):
        if not sec.failing and not verbose:
            console.print(Text("✓ ", style="green") + Text(sec.title, style="bold") + Text(f" — {sec.summary}",
                                                                                           style="dim"))
            continue
        console.print(Text(("✗ " if sec.failing else "✓ "), style="red" if sec.failing else "green")
                      + Text(sec.title, style="bold underline") + Text(f" — {sec.summary}", style="dim"))
        for line in sec.lines:
            console.print(Text("   " + line, style="cyan"))
        for item in sec.failing:
            f = item.finding
            assert f is not None
            row = Text("   ")
            row.append(f"[{f.severity.label.upper()}]", style=_SEV_STYLE[f.severity])
            row.append(f" {item.check} {item.ref}: ", style="bold")
            row.append(f.title)
            row.append(f"  ({f.cause} · {f.code})", style="dim")
            console.print(row)
            if f.remediation:
                console.print(Text("      → ", style="green") + Text(f.remediation[0]))
        if verbose:
            for item in sec.passing:
                console.print(Text(f"   ✓ {item.check} {item.ref}: {item.note}", style="green"))
    if report.skipped:
        console.print(Text("Could not check", style="bold underline"))
        for check, why in report.skipped.items():
            console.print(Text(f"   - {check}: {why}", style="yellow"))
    for err in report.snapshot_errors:
        console.print(Text(f"   - not collected: {err}", style="yellow"))
    if verbose:
        console.print(Text("timings: " + ", ".join(f"{k} {v:.0f} ms" for k, v in report.timings_ms.items()),
                           style="dim"))
    return buf.getvalue()
