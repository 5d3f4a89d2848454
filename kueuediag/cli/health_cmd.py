"""`kueuediag health`: the whole cluster at once, for CI gates and on-call (docs/health.md).

Parses flags, loads or collects one Snapshot, calls :func:`kueuediag.health.build.build_report`, renders, and
exits 0 (nothing at or above `--fail-on`, default high), 1 (findings at or above it), 2 (usage/input error) or
4 (cluster unreachable). `--watch` re-collects live and highlights what changed.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from kueuediag.cli.common import handle_errors, split_csv, use_color
from kueuediag.errors import ExitCode, InputError

if TYPE_CHECKING:
    from kueuediag.config import Settings
    from kueuediag.health.model import HealthReport
    from kueuediag.models import Severity
    from kueuediag.snapshot.model import Snapshot

HEALTH_FORMATS = ("terminal", "json", "markdown", "junit", "jsonl", "openmetrics")


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


def health_settings(*, select: list[str] | None, ignore: list[str] | None, severity: list[str] | None,
                    options: list[str] | None, fail_on: str | None, output: str | None,
                    config: Path | None) -> Settings:
    from kueuediag.config import load_settings
    from kueuediag.models import Severity

    flags: dict[str, object] = {"select": split_csv(select), "ignore": split_csv(ignore), "fail_on": fail_on,
                                "output": output, "checks": parse_options(options) or None}
    sev_items = split_csv(severity)
    if sev_items:
        bad = [s for s in sev_items if "=" not in s]
        if bad:
            raise InputError(f"--severity takes CODE=SEVERITY, got {bad[0]!r}")
        flags["severity"] = dict(s.split("=", 1) for s in sev_items)
    settings = load_settings(flags=flags, config_file=config)
    if settings.output == "md":
        settings.output = "markdown"
    if settings.output not in HEALTH_FORMATS:
        raise InputError(f"unknown output format {settings.output!r} (use {', '.join(HEALTH_FORMATS)})")
    if settings.fail_on is None:
        settings.fail_on = Severity.HIGH
    return settings


def render_report(report: HealthReport, settings: Settings, *, color: bool, verbose: bool,
                  changes: list[str] | None = None) -> str:
    fmt = settings.output
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
        from kueuediag.render.health_json import verdict_lines

        return "".join(verdict_lines(h.verdict for h in report.heads))
    from kueuediag.render.health_terminal import render_health_terminal

    return render_health_terminal(report, gate=gate, color=color, verbose=verbose, changes=changes)


def exit_code(report: HealthReport, gate: Severity | None, exit_zero: bool) -> int:
    if exit_zero or gate is None:
        return int(ExitCode.OK)
    return int(ExitCode.FINDINGS) if report.failures(gate) else int(ExitCode.OK)


def register(app: typer.Typer) -> None:
    @app.command("health")
    @handle_errors
    def health(
        source: str | None = typer.Option(
            None, "--from", "-f", help="Snapshot directory, .tar.gz, single file, or example:NAME. Omit for live."),
        namespace: list[str] | None = typer.Option(
            None, "-n", "--namespace", help="Only these namespaces (repeatable or comma-separated)."),
        all_namespaces: bool = typer.Option(False, "-A", "--all-namespaces", help="All namespaces (default)."),
        now: str | None = typer.Option(None, "--now", help="Override 'now' (RFC3339) for time computations."),
        output: str | None = typer.Option(
            None, "-o", "--output", help="terminal | json | markdown | junit | jsonl | openmetrics"),
        all_pending: bool = typer.Option(False, "--all-pending",
                                         help="Diagnose every pending workload, not only each queue's head."),
        select: list[str] | None = typer.Option(None, "--select",
                                                help="Only these checks (code, family, name, health check, cause)."),
        ignore: list[str] | None = typer.Option(None, "--ignore", help="Skip checks or causes."),
        severity: list[str] | None = typer.Option(None, "--severity", help="Override severity: KD101=high."),
        option: list[str] | None = typer.Option(
            None, "--option", help="Threshold: CHECK.NAME=VALUE, e.g. KD101.violation_minutes=15."),
        config: Path | None = typer.Option(None, "--config", help="A .kueuediag.yaml or pyproject.toml."),
        fail_on: str | None = typer.Option(None, "--fail-on",
                                           help="Exit 1 when an object has a finding at this severity (high)."),
        exit_zero: bool = typer.Option(False, "--exit-zero", help="Always exit 0 after a report."),
        no_color: bool = typer.Option(False, "--no-color", help="No colours (NO_COLOR is honoured too)."),
        verbose: bool = typer.Option(False, "-v", "--verbose", help="Healthy objects too, timings."),
        watch: str | None = typer.Option(
            None, "--watch", metavar="[SECONDS]",
            help="Live: re-collect every SECONDS (30 when omitted), redraw, highlight changes; Ctrl-C stops."),
        watch_count: int | None = typer.Option(None, "--watch-count", min=1, help="With --watch: stop after N cycles."),
        kubeconfig: str | None = typer.Option(None, "--kubeconfig", help="Live: kubeconfig path."),
        context: str | None = typer.Option(None, "--context", help="Live: kubeconfig context."),
        kueue_namespace: str = typer.Option("kueue-system", "--kueue-namespace", help="Live: Kueue's namespace."),
        since: str = typer.Option("2h", "--since", help="Live: how far back for logs and metrics."),
        timeout: float = typer.Option(60.0, "--timeout", help="Live: deadline per collection, in seconds."),
        prometheus_url: str | None = typer.Option(None, "--prometheus-url", help="Live: Prometheus base URL."),
        prometheus_header: list[str] | None = typer.Option(None, "--prometheus-header", help="NAME=VALUE"),
        prometheus_ca: str | None = typer.Option(None, "--prometheus-ca", help="CA bundle for Prometheus."),
        prometheus_insecure: bool = typer.Option(False, "--prometheus-insecure", help="Skip TLS verification."),
    ) -> None:
        """Fleet health: every ClusterQueue, flavor and stuck object, and each queue's pending head."""
        from kueuediag.cli.watch import parse_interval, watch_loop
        from kueuediag.health.build import build_report
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
        settings = health_settings(select=select, ignore=ignore, severity=severity, options=option,
                                   fail_on=fail_on, output=output, config=config)
        if settings.output == "jsonl" and interval is not None:
            raise InputError("-o jsonl cannot be watched; use -o json or the terminal")
        moment = parse_time(now) if now else None
        classes = discover()
        live: dict[str, Any] = {
            "kubeconfig": kubeconfig, "context": context, "kueue_namespace": kueue_namespace, "since": since,
            "timeout": timeout, "prometheus_url": prometheus_url,
            "prometheus_headers": split_csv(prometheus_header), "prometheus_ca": prometheus_ca,
            "prometheus_insecure": prometheus_insecure, "verbose": verbose,
        }

        def load() -> Snapshot:
            from kueuediag.snapshot.model import load_snapshot

            if source is not None:
                from kueuediag.examples import resolve_source

                return load_snapshot(resolve_source(source), now=moment)
            return collect_live(live, namespaces, moment)

        def cycle() -> HealthReport:
            return build_report(load(), classes, settings, namespaces=namespaces, all_pending=all_pending)

        color = use_color(no_color)
        if interval is None:
            report = cycle()
            typer.echo(render_report(report, settings, color=color, verbose=verbose), nl=False)
            raise typer.Exit(exit_code(report, settings.fail_on, exit_zero))

        from kueuediag.health.changes import report_changes

        def show(cur: HealthReport, prev: HealthReport | None, n: int) -> str:
            changes = report_changes(prev, cur) if prev is not None else None
            text = render_report(cur, settings, color=color, verbose=verbose, changes=changes)
            if settings.output == "terminal":
                text += f"cycle {n} · every {interval:g}s · Ctrl-C to stop\n"
            return text

        watch_loop(cycle, show, interval=interval, count=watch_count)
        raise typer.Exit(int(ExitCode.OK))  # watching is interactive: stopping it is success


def collect_live(live: dict[str, Any], namespaces: list[str] | None, moment: Any) -> Snapshot:
    """One cluster-wide collection (the same `kueuediag snapshot` does), as a Snapshot."""
    from kueuediag.cli.common import stderr_status
    from kueuediag.live import LiveOptions
    from kueuediag.live.collect import collect_cluster
    from kueuediag.snapshot.model import Snapshot

    with stderr_status("collecting from the cluster") as progress:
        opts = LiveOptions(**live, progress=progress, report=lambda line: typer.echo(line, err=True))
        raw = collect_cluster(namespaces, None, opts)
    snap = Snapshot(raw)
    if moment is not None:
        snap.now = moment
    return snap
