"""`why TARGET --watch [SECONDS]`: re-collect the target's slice of the cluster, re-diagnose, redraw, and say
what changed (the cause, the workload's state: admitted, finished). Live mode only; see cli/watch.py."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kueuediag.errors import InputError

if TYPE_CHECKING:
    from kueuediag.config import Settings
    from kueuediag.models import Verdict


def watch_why(*, target: str | None, namespace: str | None, source: str | None, settings: Settings,
              interval: float, count: int | None) -> int:
    from kueuediag.cli.common import live_options, stderr_status, terminal_style
    from kueuediag.cli.watch import watch_loop
    from kueuediag.engine import diagnose
    from kueuediag.health.changes import verdict_changes
    from kueuediag.live import live_snapshot_for_why
    from kueuediag.registry import discover
    from kueuediag.render import render
    from kueuediag.target import resolve

    if source is not None:
        raise InputError("--watch needs live mode (omit --from)")
    if target is None:
        raise InputError("--watch needs a TARGET")
    classes = discover()

    def cycle() -> Verdict:
        with stderr_status("collecting from the cluster") as progress:
            snap = live_snapshot_for_why(target, namespace, live_options(settings, namespace, progress, "2h"))
        return diagnose(snap, resolve(snap, target, namespace), classes, settings)

    def show(cur: Verdict, prev: Verdict | None, n: int) -> str:
        style = terminal_style(settings)
        text = render(cur, settings.output, color=style.color, width=style.width, verbose=settings.verbose,
                      boxes=style.boxes)
        if settings.output != "terminal":
            return text
        changes = verdict_changes(prev, cur) if prev is not None else []
        head = "".join(f"⟳ {line}\n" for line in changes)
        if prev is not None and not changes:
            head = "⟳ no change since the last cycle\n"
        return head + text + f"cycle {n} · every {interval:g}s · Ctrl-C to stop\n"

    watch_loop(cycle, show, interval=interval, count=count)
    return 0
