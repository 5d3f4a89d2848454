"""`kueuediag health`: the whole cluster at once, for CI gates and on-call (docs/health.md).

Parses flags, loads or collects one Snapshot, calls :func:`kueuediag.health.build.build_report`, renders, and
exits 0 (nothing at or above `--fail-on`, default high), 1 (findings at or above it), 2 (usage/input error) or
4 (cluster unreachable). `--watch` re-collects live and highlights what changed.
"""

from __future__ import annotations

import codecs
import gc
import json
import os
import sys
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from kueuediag.cli import options as opt
from kueuediag.cli.common import handle_errors, live_options, settings_from_flags, split_csv, terminal_style
from kueuediag.errors import ExitCode, InputError

if TYPE_CHECKING:
    from kueuediag.config import Settings
    from kueuediag.health.model import HealthReport
    from kueuediag.health.workers import HeadSink
    from kueuediag.models import Severity, Verdict
    from kueuediag.snapshot.model import Snapshot

class HealthFormat(str, Enum):
    """`health -o`: why's formats plus the line-per-workload and metrics formats."""

    terminal = "terminal"
    json = "json"
    markdown = "markdown"
    md = "md"
    junit = "junit"
    jsonl = "jsonl"
    openmetrics = "openmetrics"


def parse_options(values: list[str] | None) -> dict[str, dict[str, str]]:
    """`--option KD101.violation_minutes=15` → {"KD101": {"violation_minutes": "15"}}."""
    out: dict[str, dict[str, str]] = {}
    for item in split_csv(values):
        key, sep, value = item.partition("=")
        code, dot, name = key.partition(".")
        if not sep or not dot or not code.strip() or not name.strip():
            raise InputError(f"--option takes CHECK.NAME=VALUE (e.g. KD101.violation_minutes=15), got {item!r}")
        out.setdefault(code.strip(), {})[name.strip()] = value.strip()
    return out


def render_report(report: HealthReport, settings: Settings, *, changes: list[str] | None = None) -> str:
    """`settings.output` is the health format (why's config formats plus jsonl and openmetrics)."""
    fmt = "markdown" if settings.output == "md" else settings.output
    gate = settings.fail_on
    if fmt == "json":
        from kueuediag.render.health_json import render_health_json

        return render_health_json(report, gate)
    if fmt == "markdown":
        from kueuediag.render.health_markdown import render_health_markdown

        return render_health_markdown(report, gate)
    if fmt == "junit":
        from kueuediag.render.health_junit import render_health_junit

        return render_health_junit(report, gate)
    if fmt == "openmetrics":
        from kueuediag.render.health_openmetrics import render_health_openmetrics

        return render_health_openmetrics(report)
    if fmt == "jsonl":
        from kueuediag.render.health_json import kept, verdict_lines

        return "".join(verdict_lines(kept(h) for h in report.heads))
    from kueuediag.render.health_terminal import render_health_terminal

    style = terminal_style(settings)
    return render_health_terminal(report, gate=gate, color=style.color, width=style.width,
                                  verbose=settings.verbose, changes=changes)


def exit_code(report: HealthReport, gate: Severity | None, exit_zero: bool) -> int:
    if exit_zero or gate is None:
        return int(ExitCode.OK)
    return int(ExitCode.FINDINGS) if report.failures(gate) else int(ExitCode.OK)


def register(app: typer.Typer) -> None:
    @app.command("health")
    @handle_errors
    @opt.with_cluster_flags
    def health(
        source: str | None = typer.Option(
            None, "--from", "-f", metavar="SNAPSHOT",
            help="Snapshot directory, .tar.gz, single file, or example:NAME. Omit to collect live (one collection)."),
        namespace: list[str] | None = typer.Option(
            None, "-n", "--namespace", metavar="NAMESPACE",
            help="Only these namespaces' queues and objects (repeatable or comma-separated)."),
        all_namespaces: bool = typer.Option(False, "-A", "--all-namespaces", help="All namespaces (the default)."),
        now: str | None = typer.Option(None, "--now", metavar="TIME", help="Override 'now' (RFC3339)."),
        output: HealthFormat | None = typer.Option(None, "-o", "--output", case_sensitive=False,
                                                   help="Output format."),
        all_pending: bool = typer.Option(False, "--all-pending",
                                         help="Diagnose every pending workload, not only each queue's head."),
        select: list[str] | None = typer.Option(
            None, "--select", metavar="CHECKS", help="Only these (code, family, check, health check, cause)."),
        ignore: list[str] | None = typer.Option(None, "--ignore", metavar="CHECKS", help="Skip checks or causes."),
        severity: list[str] | None = typer.Option(
            None, "--severity", metavar="CODE=SEVERITY", help="Override severity: KD101=high."),
        option: list[str] | None = typer.Option(
            None, "--option", metavar="CHECK.NAME=VALUE", help="Threshold, e.g. KD101.violation_minutes=15."),
        config: Path | None = opt.CONFIG,
        fail_on: str | None = typer.Option(
            None, "--fail-on", metavar="SEVERITY", help="Exit 1 when an object has a finding this severe (high)."),
        exit_zero: bool | None = typer.Option(None, "--exit-zero", help="Always exit 0 after a report."),
        verbose: bool | None = opt.VERBOSE,
        no_color: bool | None = opt.NO_COLOR,
        width: int | None = opt.WIDTH,
        watch: str | None = typer.Option(
            None, "--watch", metavar="[SECONDS]",
            help="Live: re-collect every SECONDS (30 when omitted), redraw, highlight changes; Ctrl-C stops."),
        watch_count: int | None = typer.Option(None, "--watch-count", min=1, help="With --watch: stop after N cycles."),
        since: str | None = typer.Option(
            None, "--since", metavar="DURATION", help="Live: how far back for logs and metrics (2h)."),
        jobs: int | None = typer.Option(
            None, "--jobs", "-j", min=1, metavar="N",
            help="Processes parsing the snapshot and diagnosing heads (default: one per idle CPU for a large "
                 "snapshot or 200+ heads; 1 never forks; output identical)."),
        cluster: dict[str, Any] | None = None,
    ) -> None:
        """Fleet health: every ClusterQueue, flavor and stuck object, and each queue's pending head."""
        from kueuediag.cli.watch import parse_interval, watch_loop
        from kueuediag.health.build import build_report
        from kueuediag.models import Severity
        from kueuediag.registry import discover
        from kueuediag.timeutil import parse_time

        gc.disable()
        namespaces = split_csv(namespace) or None
        if namespaces and all_namespaces:
            raise InputError("use either -n NAMESPACE or -A, not both")
        interval = parse_interval(watch)
        if interval is not None and source is not None:
            raise InputError("--watch needs live mode (omit --from)")
        if watch_count is not None and interval is None:
            raise InputError("--watch-count needs --watch")
        settings = settings_from_flags(
            config, select=select, ignore=ignore, severity=severity, fail_on=fail_on, exit_zero=exit_zero,
            verbose=verbose, no_color=no_color, width=width, since=since, checks=parse_options(option) or None,
            **(cluster or {}),
        )
        if output is not None:
            settings.output = output.value
        if settings.fail_on is None:
            settings.fail_on = Severity.HIGH
        if settings.output == "jsonl" and interval is not None:
            raise InputError("-o jsonl cannot be watched; use -o json or the terminal")
        moment = parse_time(now) if now else None
        classes = discover()

        def load() -> Snapshot:
            if source is not None:
                from kueuediag.examples import resolve_source
                from kueuediag.snapshot.limits import limits_from
                from kueuediag.snapshot.loader import load_snapshot

                return load_snapshot(resolve_source(source), now=moment, limits=limits_from(settings.limits),
                                     jobs=jobs)
            return collect_live(settings, namespaces, moment)

        def cycle() -> HealthReport:
            return build_report(load(), classes, settings, namespaces=namespaces, all_pending=all_pending,
                                keep_verdicts=settings.output == "json", jobs=jobs)

        if interval is None and settings.output == "jsonl":
            report = build_report(load(), classes, settings, namespaces=namespaces, all_pending=all_pending,
                                  keep_verdicts=False, sink=jsonl_sink(), jobs=jobs)
            raise typer.Exit(exit_code(report, settings.fail_on, settings.exit_zero))
        if interval is None:
            report = cycle()
            typer.echo(render_report(report, settings), nl=False)
            raise typer.Exit(exit_code(report, settings.fail_on, settings.exit_zero))

        from kueuediag.health.changes import report_changes

        def show(cur: HealthReport, prev: HealthReport | None, n: int) -> str:
            changes = report_changes(prev, cur) if prev is not None else None
            text = render_report(cur, settings, changes=changes)
            if settings.output == "terminal":
                text += f"cycle {n} · every {interval:g}s · Ctrl-C to stop\n"
            return text

        watch_loop(cycle, show, interval=interval, count=watch_count)
        raise typer.Exit(int(ExitCode.OK))  # watching is interactive: stopping it is success


def jsonl_sink() -> HeadSink:
    """`-o jsonl`: each head's `why` document is printed as soon as it is diagnosed (the report keeps none)."""
    from kueuediag.health.workers import HeadSink

    return HeadSink(render=jsonl_line, write=write_stdout_bytes)


def jsonl_line(verdict: Verdict) -> bytes:
    """One `why -o json` document as a line, encoded as stdout carries it. orjson's UTF-8 bytes go to a UTF-8
    stream as they are (no decoding and encoding again of ~25 KB a workload); a line stdout's encoding cannot
    carry (a latin-1 terminal, lone surrogates from the input) is re-escaped to ASCII, which keeps every
    character, as `why -o json` does."""
    from kueuediag.render.health_json import verdict_line

    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    name = encoding.lower().replace("_", "-")
    line = verdict_line(verdict)
    if isinstance(line, bytes):
        if name in ("utf-8", "utf8"):
            return line  # valid UTF-8: orjson wrote it
        if line.isascii() and name in ("ascii", "latin-1", "iso-8859-1"):
            return line  # every one of these encodings carries ASCII text as is
        line = line.decode()
    try:
        return line.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        escaped = json.dumps(json.loads(line), ensure_ascii=True, separators=(",", ":")) + "\n"
        return escaped.encode("ascii" if not _known(encoding) else encoding)


def _known(encoding: str) -> bool:
    try:
        codecs.lookup(encoding)
    except LookupError:
        return False
    return True


def write_stdout_bytes(data: bytes) -> None:
    """Write bytes :func:`jsonl_line` encoded for stdout: to its byte buffer (after what its text layer holds), or,
    for a text-only stream, as text again."""
    out = sys.stdout
    buffer = getattr(out, "buffer", None)
    if buffer is None:
        out.write(data.decode(getattr(out, "encoding", None) or "utf-8"))
        return
    if os.linesep != "\n":  # what the text layer would have done; a JSON line holds no other newline
        data = data.replace(b"\n", os.linesep.encode())
    out.flush()
    buffer.write(data)


def collect_live(settings: Settings, namespaces: list[str] | None, moment: datetime | None) -> Snapshot:
    """One cluster-wide collection (the same `kueuediag snapshot -A` / `-n …` does), as a Snapshot."""
    from kueuediag.cli.common import stderr_status
    from kueuediag.live.collect import collect_cluster
    from kueuediag.snapshot.model import Snapshot

    with stderr_status("collecting from the cluster") as progress:
        raw = collect_cluster(namespaces, None, live_options(settings, None, progress, "2h"))
    snap = Snapshot(raw)
    if moment is not None:
        snap.now = moment
    return snap
