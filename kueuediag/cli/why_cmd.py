"""`kueuediag why TARGET`: resolve the target, run the checks, print the ranked verdict."""

from __future__ import annotations

import gc
import time
from pathlib import Path
from typing import Any

import typer

from kueuediag.cli.common import emit, handle_errors, positive_seconds, split_csv, use_color
from kueuediag.errors import ExitCode, InputError


def diagnose_and_print(
    *,
    target: str,
    namespace: str | None,
    source: str | None,
    now: str | None,
    output: str | None,
    select: list[str] | None,
    ignore: list[str] | None,
    severity: list[str] | None,
    config: Path | None,
    fail_on: str | None,
    exit_zero: bool,
    no_color: bool,
    verbose: bool,
    live: dict[str, Any] | None = None,
    limits: dict[str, str | None] | None = None,
) -> int:
    """The body of `why` and `demo`; returns the exit code."""
    from kueuediag.config import load_settings
    from kueuediag.engine import diagnose
    from kueuediag.examples import resolve_source
    from kueuediag.models import Severity
    from kueuediag.registry import discover
    from kueuediag.render import FORMATS, render
    from kueuediag.snapshot.limits import limits_from
    from kueuediag.snapshot.loader import load_snapshot
    from kueuediag.snapshot.model import Snapshot
    from kueuediag.target import resolve
    from kueuediag.timeutil import parse_time

    # A one-shot process over a large, acyclic object graph: the cyclic GC only costs time here.
    gc.disable()
    flags: dict[str, object] = {
        "select": split_csv(select), "ignore": split_csv(ignore), "fail_on": fail_on, "output": output,
    }
    sev_items = split_csv(severity)
    if sev_items:
        bad = [s for s in sev_items if "=" not in s]
        if bad:
            raise InputError(f"--severity takes CODE=SEVERITY, got {bad[0]!r}")
        flags["severity"] = dict(s.split("=", 1) for s in sev_items)
    settings = load_settings(flags=flags, config_file=config)
    read_limits = limits_from({k: v for k, v in (limits or {}).items() if v is not None},
                              base=limits_from(settings.limits, origin="config limits"), origin="flags")
    if settings.output not in FORMATS and settings.output != "md":
        raise InputError(f"unknown output format {settings.output!r} (use {', '.join(FORMATS)})")
    moment = parse_time(now) if now else None
    t0 = time.perf_counter()
    snap: Snapshot
    if source:
        snap = load_snapshot(resolve_source(source), now=moment, limits=read_limits)
    else:
        from kueuediag.cli.common import stderr_status
        from kueuediag.live import LiveOptions, live_snapshot_for_why

        with stderr_status("collecting from the cluster") as progress:
            opts = LiveOptions(**(live or {}), namespace=namespace, progress=progress,
                               report=lambda line: typer.echo(line, err=True))
            snap = live_snapshot_for_why(target, namespace, opts)
        if moment is not None:
            snap.now = moment
    t1 = time.perf_counter()
    resolved = resolve(snap, target, namespace)
    verdict = diagnose(snap, resolved, discover(), settings)
    t2 = time.perf_counter()
    text = render(verdict, settings.output, color=use_color(no_color), verbose=verbose)
    emit(text, settings.output)
    if verbose:
        typer.echo(f"kueuediag: loaded {snap.source} in {t1 - t0:.2f}s, diagnosed in {t2 - t1:.2f}s; "
                   f"settings from {', '.join(settings.source) or 'defaults'}", err=True)
    if settings.fail_on is not None and not exit_zero:
        gate: Severity = settings.fail_on
        if any(r.finding.severity >= gate and r.finding.about_target for r in verdict.findings
               if r.finding.cause != "not-pending"):
            return int(ExitCode.FINDINGS)
    return int(ExitCode.OK)


def register(app: typer.Typer) -> None:
    @app.command("why")
    @handle_errors
    def why(
        target: str = typer.Argument(
            ..., help="job/NAME, jobset/NAME, pod/NAME, workload/NAME, KIND.GROUP/NAME or NAME"),
        namespace: str | None = typer.Option(None, "-n", "--namespace", help="Namespace of the target."),
        source: str | None = typer.Option(
            None, "--from", "-f",
            help="Snapshot directory, .tar.gz, single YAML/JSON file, or example:NAME. Omit to collect live."),
        now: str | None = typer.Option(None, "--now", help="Override 'now' (RFC3339) for time computations."),
        output: str | None = typer.Option(None, "-o", "--output", help="terminal | json | markdown | junit"),
        select: list[str] | None = typer.Option(None, "--select", help="Only these checks (code, family, slug)."),
        ignore: list[str] | None = typer.Option(None, "--ignore", help="Skip checks (code/family/slug) or causes."),
        severity: list[str] | None = typer.Option(None, "--severity", help="Override severity: KD101=high."),
        config: Path | None = typer.Option(None, "--config", help="A .kueuediag.yaml or pyproject.toml."),
        fail_on: str | None = typer.Option(None, "--fail-on", help="Exit 1 when a finding reaches this severity."),
        exit_zero: bool = typer.Option(False, "--exit-zero", help="Always exit 0 after a verdict (rollouts)."),
        no_color: bool = typer.Option(False, "--no-color", help="No colours (NO_COLOR is honoured too)."),
        verbose: bool = typer.Option(False, "-v", "--verbose", help="All evidence, timings, request counts."),
        kubeconfig: str | None = typer.Option(None, "--kubeconfig", help="Live: kubeconfig path."),
        context: str | None = typer.Option(None, "--context", help="Live: kubeconfig context."),
        kueue_namespace: str = typer.Option("kueue-system", "--kueue-namespace", help="Live: Kueue's namespace."),
        since: str = typer.Option("2h", "--since", help="Live: how far back for logs and metrics."),
        timeout: float = typer.Option(60.0, "--timeout", help="Live: overall deadline in seconds."),
        prometheus_url: str | None = typer.Option(None, "--prometheus-url", help="Live: Prometheus base URL."),
        prometheus_header: list[str] | None = typer.Option(None, "--prometheus-header", help="NAME=VALUE"),
        prometheus_ca: str | None = typer.Option(None, "--prometheus-ca", help="CA bundle for Prometheus."),
        prometheus_insecure: bool = typer.Option(False, "--prometheus-insecure", help="Skip TLS verification."),
        save: str | None = typer.Option(None, "--save", help="Live: also write what was collected (dir/.tar.gz)."),
        max_bytes: str | None = typer.Option(None, "--max-bytes", help="Read at most this many bytes in total "
                                             "(default 2Gi; see docs/snapshot-format.md#bounds)."),
        max_file_bytes: str | None = typer.Option(None, "--max-file-bytes", help="Per file (default 512Mi)."),
        max_files: str | None = typer.Option(None, "--max-files", help="Files looked at (default 200000)."),
        max_objects: str | None = typer.Option(None, "--max-objects", help="Objects (default 1000000)."),
        max_log_lines: str | None = typer.Option(None, "--max-log-lines", help="Log lines kept (default 2000000)."),
        max_series: str | None = typer.Option(None, "--max-series", help="Metric series (default 200000)."),
        max_alias_nodes: str | None = typer.Option(None, "--max-alias-nodes",
                                                   help="YAML alias expansion (default 10000)."),
    ) -> None:
        """Explain why a workload is pending: a ranked verdict with evidence and remediation."""
        positive_seconds("--timeout", timeout)
        live: dict[str, Any] | None = None
        if source is None:
            live = {
                "kubeconfig": kubeconfig, "context": context, "kueue_namespace": kueue_namespace,
                "since": since, "timeout": timeout, "prometheus_url": prometheus_url,
                "prometheus_headers": split_csv(prometheus_header), "prometheus_ca": prometheus_ca,
                "prometheus_insecure": prometheus_insecure, "verbose": verbose, "save": save,
            }
        elif save:
            raise InputError("--save only applies to live collection (without --from)")
        code = diagnose_and_print(
            target=target, namespace=namespace, source=source, now=now, output=output, select=select,
            ignore=ignore, severity=severity, config=config, fail_on=fail_on, exit_zero=exit_zero,
            no_color=no_color, verbose=verbose, live=live,
            limits={"max_bytes": max_bytes, "max_file_bytes": max_file_bytes, "max_files": max_files,
                    "max_objects": max_objects, "max_log_lines": max_log_lines, "max_series": max_series,
                    "max_alias_nodes": max_alias_nodes},
        )
        raise typer.Exit(code)
