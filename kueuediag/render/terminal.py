"""The terminal renderer (rich): the answer and the fix on the first screen.

Built for the on-call reader at 3 a.m.: the verdict box holds the cause in plain words, the one key number (the
top finding's title), the confidence, how long the workload has waited, and the first fix as a copy-pasteable
command. A reader who stops after the box knows what to do.

Default output fits one screen: the box, the top findings (one per cause, at most three) with their strongest
evidence lines and first fix, and the ruled-out / could-not-check / not-applicable checks compacted to one line
each. `-v` shows everything. The box is drawn with horizontal rules only, so a command can be copied from the
terminal even when it wraps (no border characters inside it), and with `boxes=False` (TERM=dumb, pipes,
NO_COLOR) it is plain text.
"""

from __future__ import annotations

import io
from typing import Any

from kueuediag.causes import BY_SLUG
from kueuediag.models import Fix, FixStatus, Outcome, RankedFinding, Severity, Verdict
from kueuediag.render.common import (
    FIX_LABELS,
    NO_CAUSE,
    NO_CHECKED_FIX,
    confidence_line,
    data_lines,
    evidence_line,
    run_note,
    snapshot_command,
)
from kueuediag.timeutil import human_duration

_SEV_STYLE = {
    Severity.CRITICAL: "bold white on red",
    Severity.HIGH: "bold red",
    Severity.MEDIUM: "yellow",
    Severity.LOW: "cyan",
    Severity.INFO: "dim",
}
_LAYER_STYLE = {"submission": "magenta", "kueue": "blue", "kubernetes": "green", "none": "dim"}
_FIX_STYLE = {FixStatus.VERIFIED: "bold green", FixStatus.STOP_GAP: "yellow", FixStatus.UNVERIFIED: "yellow",
              FixStatus.ADVICE: "cyan"}
TOP_FINDINGS = 3
EVIDENCE_LINES = 3


def render_terminal(v: Verdict, *, color: bool = True, width: int | None = None, verbose: bool = False,
                    boxes: bool = True) -> str:
    from rich.console import Console

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=color, no_color=not color, width=width or 100,
                      color_system="standard" if color else None, highlight=False, soft_wrap=False,
                      emoji=False, markup=False)
    _Screen(console, v, verbose=verbose, boxes=boxes, color=color).render()
    return "".join(line.rstrip(" ") + "\n" for line in buf.getvalue().splitlines())


class _Screen:
    def __init__(self, console: Any, v: Verdict, *, verbose: bool, boxes: bool, color: bool) -> None:
        self.console = console
        self.v = v
        self.verbose = verbose
        self.boxes = boxes
        self.color = color
        self.width: int = console.width

    # --- primitives -------------------------------------------------------------------------------------------
    def text(self, text: str = "", style: str = "", *, indent: str = "", clip: bool = False) -> None:
        """One logical line; clipped to one row with an ellipsis when `clip` (default mode's evidence lines)."""
        from rich.text import Text

        line = indent + text
        if clip and not self.verbose and len(line) > self.width:
            line = line[: self.width - 1] + "…"
        self.console.print(Text(line, style=style))

    def parts(self, *chunks: tuple[str, str]) -> Any:
        from rich.text import Text

        out = Text()
        for chunk, style in chunks:
            out.append(chunk, style=style)
        return out

    def rule(self, title: str = "") -> None:
        if not self.boxes:
            if title:
                self.text(f"== {title} ==", "bold")
            return
        from rich.rule import Rule

        self.console.print(Rule(title, align="left", style=_LAYER_STYLE.get(self.v.layer.value, "white"),
                                characters="─"))

    def command(self, cmd: str, indent: str) -> None:
        """A command on its own line, never hard-wrapped (the terminal soft-wraps it; copy-paste keeps it whole)."""
        from rich.text import Text

        self.console.print(Text(indent + cmd, style="bold" if self.color else ""), soft_wrap=True)

    # --- sections ---------------------------------------------------------------------------------------------
    def render(self) -> None:
        self.box()
        self.findings()
        self.checks()

    def box(self) -> None:
        v = self.v
        top = v.primary
        layer_style = _LAYER_STYLE.get(v.layer.value, "")
        self.rule("kueuediag why")
        incomplete = v.cause == "unknown" and top is not None  # only context found while relevant checks were blind
        plain = BY_SLUG[v.cause].title if v.cause in BY_SLUG else (
            "diagnosis incomplete" if incomplete else "no check found a cause")
        layer = f" · {v.layer.value} layer" if v.layer.value != "none" else ""
        self.console.print(self.parts(("VERDICT ", "bold"), (plain, f"bold {layer_style}"),
                                      (f"  ({v.cause}{layer})", layer_style)))
        if top is not None:
            self.text(v.headline if incomplete else top.finding.title, "bold")
        self.text(self._who_line())
        conf = confidence_line(v)
        self.text(conf, "yellow" if v.unseen else "dim")
        gaps = v.unseen if self.verbose else v.unseen[:2]
        for gap in gaps:
            self.text(gap, "yellow", indent="  ? ", clip=True)
        if len(v.unseen) > len(gaps):
            self.text(f"… {len(v.unseen) - len(gaps)} more (use -v)", "yellow", indent="  ? ")
        fix = v.first_fix
        if fix is not None:
            self.fix(fix, indent="", first=True)
        elif top is None:
            self.text(f"NEXT STEP: {NO_CAUSE}", "yellow")
            self.command(snapshot_command(v), "    ")
        else:
            self.text(f"NO CHECKED FIX: {NO_CHECKED_FIX}", "yellow")
        self.rule()

    def _who_line(self) -> str:
        w = self.v.workload
        who = (f"{w.owner.kind.lower()}/{w.owner.name}" if w.owner else f"workload/{w.name}") + \
            (f" -n {w.namespace}" if w.namespace else "")
        bits = [who, w.state]
        if w.pending_seconds is not None:
            bits.append(f"waiting {human_duration(w.pending_seconds)}")
        if w.cluster_queue:
            bits.append(f"ClusterQueue {w.cluster_queue}")
        return " · ".join(bits)

    def fix(self, fix: Fix, indent: str, first: bool = False) -> None:
        label, style = FIX_LABELS[fix.status], _FIX_STYLE[fix.status]
        prefix = "FIRST " if first and fix.status is not FixStatus.ADVICE else ""
        heading = f"{prefix}{label.upper() if first else label}: "
        words = fix.text if not fix.command or fix.text != fix.command else ""
        if fix.command and f"`{fix.command}`" in words:  # printed whole on its own line below
            words = words.replace(f"`{fix.command}`", "(the command below)")
        self.console.print(self.parts((indent + ("→ " if not first else ""), "green"), (heading, style), (words, "")))
        if fix.command:
            self.command(fix.command, indent + "    ")
        if fix.reason:
            self.text(f"Why only a stop-gap: {fix.reason}.", "yellow", indent=indent + "    ")
        if fix.note:
            self.text(fix.note, "yellow", indent=indent + "    ")

    def findings(self) -> None:
        v = self.v
        about = [r for r in v.findings if r.finding.about_target]
        context = [r for r in v.findings if not r.finding.about_target]
        shown = about if self.verbose else _one_per_cause(about)[:TOP_FINDINGS]
        if shown:
            self.text()
            self.text("Findings (ranked)", "bold underline")
        ceiling = Severity.CRITICAL
        first = v.first_fix
        printed_fixes: set[str] = {first.command or first.text} if first is not None else set()
        for r in shown:
            ceiling = min(ceiling, r.finding.severity)
            self.finding(r, ceiling, printed_fixes)
        rest = [r for r in about if r not in shown]
        if rest:
            causes = ", ".join(dict.fromkeys(r.finding.cause for r in rest))
            self.text(f"+ {len(rest)} more finding(s): {causes} (use -v)", "dim", clip=True)
        if context:
            if self.verbose:
                self.text()
                self.text("Cluster context", "bold underline")
                for r in context:
                    self.finding(r, r.finding.severity, printed_fixes)
            else:
                items = ", ".join(f"{r.finding.cause} ({r.finding.code})" for r in context)
                self.text(f"Cluster context: {items} (use -v)", "dim", clip=True)

    def finding(self, r: RankedFinding, ceiling: Severity, printed_fixes: set[str]) -> None:
        f = r.finding
        sev = min(f.severity, ceiling)
        shown_sev = f"[{sev.label.upper()}]"
        line = self.parts((f"{r.rank}. ", ""), (shown_sev, _SEV_STYLE[sev]), (f" {f.title}", "bold"),
                          (f"  {f.cause} · {f.code} · {f.confidence.label} confidence", "dim"))
        if sev != f.severity:
            line.append(f" · {f.severity.label} on its own, listed below a {ceiling.label} finding", style="dim")
        if f.contributors and self.verbose:
            line.append(f" · with evidence from {', '.join(f.contributors)}", style="dim")
        self.console.print(line)
        if self.verbose:
            self.text(f.message, indent="   ")
            for dl in data_lines(f.data, already_shown=f.message):
                self.text(dl, "cyan", indent="   ")
        evidence = f.evidence if self.verbose else f.evidence[:EVIDENCE_LINES]
        for e in evidence:
            self.text(evidence_line(e), "dim", indent="   • ", clip=True)
        if len(f.evidence) > len(evidence):
            self.text(f"… {len(f.evidence) - len(evidence)} more evidence line(s) (use -v)", "dim", indent="   • ")
        fixes = list(f.fixes)
        if not self.verbose:
            fixes = [x for x in fixes if x.status is not FixStatus.ADVICE][:1] or fixes[:1]
            fixes = [x for x in fixes if (x.command or x.text) not in printed_fixes]
        for x in fixes:
            printed_fixes.add(x.command or x.text)
            self.fix(x, indent="   ")

    def checks(self) -> None:
        v = self.v
        groups = (
            ("Ruled out", v.runs_with(Outcome.RULED_OUT), "green", "✓"),
            ("Could not check", [r for r in v.runs if r.outcome in (Outcome.COULD_NOT_CHECK, Outcome.ERRORED)],
             "yellow", "-"),
            ("Not applicable", v.runs_with(Outcome.NOT_APPLICABLE), "dim", "·"),
        )
        if any(runs for _, runs, _, _ in groups) or v.snapshot_errors:
            self.text()
        for title, runs, style, mark in groups:
            if not runs:
                continue
            if self.verbose:
                self.text(title, "bold underline")
                for run in runs:
                    label = " errored" if run.outcome is Outcome.ERRORED else ""
                    self.text(f"{run.code} {run.check}{label} — {run_note(run)}", style, indent=f"   {mark} ")
                    if run.outcome is Outcome.RULED_OUT:
                        for e in run.evidence[1:]:
                            self.text(evidence_line(e), "dim", indent="     • ")
            else:
                items = [f"{run.code} {run.check}" if run.outcome is not Outcome.COULD_NOT_CHECK
                         else f"{run.code} ({run.input or run.reason})" for run in runs]
                self.text(f"{mark} {title} ({len(runs)}): " + ", ".join(items), style, clip=True)
        if v.snapshot_errors:
            errors = v.snapshot_errors if self.verbose else v.snapshot_errors[:1]
            for err in errors:
                self.text(f"- not collected: {err}", "yellow", clip=True)
            if len(v.snapshot_errors) > len(errors):
                self.text(f"- … {len(v.snapshot_errors) - len(errors)} more not collected (use -v)", "yellow")
        warnings = v.snapshot_warnings if self.verbose else v.snapshot_warnings[:1]
        for warning in warnings:
            self.text(f"warning: {warning}", "yellow", clip=True)
        if len(v.snapshot_warnings) > len(warnings):
            self.text(f"… {len(v.snapshot_warnings) - len(warnings)} more warning(s) (use -v)", "yellow")
        if self.verbose:
            total = sum(r.duration_ms for r in v.runs)
            self.text(f"checks ran in {total:.1f} ms", "dim")


def _one_per_cause(ranked: list[RankedFinding]) -> list[RankedFinding]:
    seen: set[str] = set()
    out = []
    for r in ranked:
        if r.finding.cause not in seen:
            seen.add(r.finding.cause)
            out.append(r)
    return out


def display_rows(text: str, width: int) -> int:
    """How many terminal rows `text` takes at `width` columns (soft-wrapped lines count once per row)."""
    rows = 0
    for line in text.splitlines():
        rows += max(1, -(-len(line) // width))
    return rows
