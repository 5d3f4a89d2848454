"""`kueuediag why [TARGET]`: resolve the target, run the checks, print the ranked verdict."""

from __future__ import annotations

import gc
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from kueuediag.cli import options as opt
from kueuediag.cli.common import emit, handle_errors, retain_until_exit, settings_from_flags, terminal_style
from kueuediag.errors import ExitCode, InputError, KueuediagError, SaveFailed

if TYPE_CHECKING:
    from kueuediag.config import Settings
    from kueuediag.snapshot.model import Snapshot
    from kueuediag.snapshot.reader import RawSnapshot


def _target_in_snapshot(
    snap: Snapshot, target: str | None, namespace: str | None, settings: Settings
) -> tuple[str, str | None]:
    """The target to diagnose: the one given (translated through a redaction map), else the recorded one."""
    if target is None:
        if snap.manifest.target is None:
            raise InputError(
                "no TARGET given and the snapshot records none (take it with `kueuediag snapshot "
                "--for TARGET`, or name the target: kueuediag why job/NAME -n NAMESPACE --from …)"
            )
        typer.echo(
            f"kueuediag: diagnosing {snap.manifest.target}"
            f"{' -n ' + snap.manifest.target_namespace if snap.manifest.target_namespace else ''}"
            " (recorded in the snapshot)",
            err=True,
        )
        return snap.manifest.target, namespace or snap.manifest.target_namespace
    if settings.redact_map and snap.manifest.redacted:
        from kueuediag.live.redact import read_map, redact_target

        names = read_map(settings.redact_map)
        pseudo = redact_target({"target": target, "namespace": namespace}, names)
        if (pseudo["target"], pseudo["namespace"]) != (target, namespace):
            shown_ns = f" -n {pseudo['namespace']}" if pseudo["namespace"] else ""
            typer.echo(
                f"kueuediag: {target}{' -n ' + namespace if namespace else ''} is {pseudo['target']}"
                f"{shown_ns} in this redacted snapshot",
                err=True,
            )
        return str(pseudo["target"]), pseudo["namespace"]
    return target, namespace


def diagnose_and_print(
    *,
    target: str | None,
    namespace: str | None,
    source: str | None,
    now: str | None,
    settings: Settings,
    save: str | None = None,
    jobs: int | None = None,
) -> int:
    """The body of `why` and `demo`; returns the exit code. `jobs`: processes for the checks (None: two on an
    idle machine when the snapshot's controller logs are large, see kueuediag.split_runs)."""
    started = time.monotonic()  # live `--timeout` counts from here: imports and check loading spend it too
    from kueuediag.engine import diagnose
    from kueuediag.examples import resolve_source
    from kueuediag.models import Severity
    from kueuediag.registry import discover_all
    from kueuediag.render import render, verdict_line
    from kueuediag.snapshot.limits import limits_from
    from kueuediag.snapshot.loader import load_snapshot
    from kueuediag.snapshot.model import Snapshot
    from kueuediag.split_runs import split_jobs
    from kueuediag.target import resolve
    from kueuediag.timeutil import parse_time

    # A one-shot process over a large, acyclic object graph: the cyclic GC only costs time here.
    gc.disable()
    moment = parse_time(now) if now else None
    # Load the checks (and their imports) before collecting: `--timeout` bounds the whole run, so nothing slow
    # may be left for after the deadline.
    found = discover_all()
    for err in found.errors:  # a broken plugin is left out; every other check runs
        typer.echo(f"kueuediag: warning: {err}", err=True)
    classes = found.classes
    t0 = time.perf_counter()
    raw: RawSnapshot | None = None
    if source:
        snap = load_snapshot(resolve_source(source), now=moment, limits=limits_from(settings.limits), jobs=jobs)
        target, namespace = _target_in_snapshot(snap, target, namespace, settings)
    else:
        if target is None:
            raise InputError(
                "name a TARGET (job/NAME, pod/NAME, workload/NAME …); only a snapshot taken with "
                "`kueuediag snapshot --for TARGET` can be diagnosed without one (--from FILE)"
            )
        from kueuediag.cli.common import live_options, stderr_status
        from kueuediag.live import collect_for_why

        with stderr_status("collecting from the cluster") as progress:
            opts = live_options(settings, namespace, progress, "2h")
            opts.started = started
            raw = collect_for_why(target, namespace, opts)
        snap = Snapshot(raw)
        if moment is not None:
            snap.now = moment
    if snap.manifest.partial:
        typer.echo(f"kueuediag: warning: partial snapshot ({len(snap.manifest.errors)} part(s) not collected; "
                   "checks that need them say so)", err=True)
    t1 = time.perf_counter()
    retain_until_exit(snap, raw)
    try:
        resolved = resolve(snap, target, namespace)
        used = split_jobs(snap, jobs)
        verdict = diagnose(snap, resolved, classes, settings, jobs=used)
        t2 = time.perf_counter()
        if settings.quiet and settings.output == "terminal":
            typer.echo(verdict_line(verdict))
        else:
            style = terminal_style(settings)
            emit(
                render(
                    verdict,
                    settings.output,
                    color=style.color,
                    width=style.width,
                    verbose=settings.verbose,
                    boxes=style.boxes,
                ),
                settings.output,
            )
    except KueuediagError:
        if raw is not None and save is not None:
            _save(raw, save, after_verdict=False)
        raise
    if raw is not None and save is not None:
        _save(raw, save, after_verdict=True)
    if settings.verbose:
        typer.echo(
            f"kueuediag: loaded {snap.source} in {t1 - t0:.2f}s, diagnosed in {t2 - t1:.2f}s "
            f"({'the log checks in a second process' if used > 1 else 'one process'}); "
            f"settings from {', '.join(settings.source) or 'defaults'}",
            err=True,
        )
    if settings.fail_on is not None and not settings.exit_zero:
        gate: Severity = settings.fail_on
        if any(
            r.finding.severity >= gate and r.finding.about_target
            for r in verdict.findings
            if r.finding.cause != "not-pending"
        ):
            return int(ExitCode.FINDINGS)
    return int(ExitCode.OK)


def _save(raw: RawSnapshot, path: str, *, after_verdict: bool) -> None:
    """`--save`: write what was collected. A failure never discards the verdict: it was printed first, and the
    failure is reported after it (exit 5); when there is no verdict (target unreadable) it is only a warning
    beside the error that follows."""
    from kueuediag.live.write import write_snapshot

    try:
        written = write_snapshot(raw, path)
    except InputError as exc:
        if after_verdict:
            raise SaveFailed(f"--save: {exc} (the verdict above is complete)") from None
        typer.echo(f"kueuediag: warning: --save: {exc}", err=True)
        return
    typer.echo(f"kueuediag: saved what was collected to {written}", err=True)


def register(app: typer.Typer) -> None:
    @app.command("why")
    @handle_errors
    @opt.with_cluster_flags
    def why(
        target: str | None = opt.TARGET,
        namespace: str | None = opt.NAMESPACE,
        source: str | None = typer.Option(
            None,
            "--from",
            "-f",
            metavar="SNAPSHOT",
            help="Snapshot directory, .tar.gz, single YAML/JSON file, or example:NAME. Omit to collect live.",
        ),
        output: opt.OutputFormat | None = opt.OUTPUT,
        quiet: bool | None = opt.QUIET,
        verbose: bool | None = opt.VERBOSE,
        no_color: bool | None = opt.NO_COLOR,
        width: int | None = opt.WIDTH,
        now: str | None = typer.Option(
            None, "--now", metavar="TIME", help="Override 'now' (RFC3339) for time computations."
        ),
        select: list[str] | None = typer.Option(
            None, "--select", metavar="CHECKS", help="Only these checks (code, family, slug)."
        ),
        ignore: list[str] | None = typer.Option(
            None, "--ignore", metavar="CHECKS", help="Skip checks (code/family/slug) or causes."
        ),
        severity: list[str] | None = typer.Option(
            None, "--severity", metavar="CODE=SEVERITY", help="Override severity: KD101=high."
        ),
        config: Path | None = opt.CONFIG,
        fail_on: str | None = typer.Option(
            None, "--fail-on", metavar="SEVERITY", help="Exit 1 when a finding reaches this severity."
        ),
        exit_zero: bool | None = typer.Option(None, "--exit-zero", help="Always exit 0 after a verdict (rollouts)."),
        redact_map: str | None = typer.Option(
            None,
            "--redact-map",
            metavar="FILE",
            help="With a redacted snapshot: the map written by `snapshot --redact`, so real "
            "names can be given (the pseudonym is printed).",
        ),
        since: str | None = typer.Option(
            None, "--since", metavar="DURATION", help="Live: how far back for logs and metrics (2h)."
        ),
        max_bytes: str | None = typer.Option(None, "--max-bytes", help="Read at most this many bytes in total "
                                             "(default 2Gi; see docs/snapshot-format.md#bounds)."),
        max_file_bytes: str | None = typer.Option(None, "--max-file-bytes", help="Per file (default 512Mi)."),
        max_files: str | None = typer.Option(None, "--max-files", help="Files looked at (default 200000)."),
        max_objects: str | None = typer.Option(None, "--max-objects", help="Objects (default 1000000)."),
        max_log_lines: str | None = typer.Option(None, "--max-log-lines", help="Log lines kept (default 2000000)."),
        max_series: str | None = typer.Option(None, "--max-series", help="Metric series (default 200000)."),
        max_alias_nodes: str | None = typer.Option(None, "--max-alias-nodes",
                                                   help="YAML alias expansion (default 10000)."),
        save: str | None = typer.Option(
            None, "--save", metavar="PATH", help="Live: also write what was collected (dir/.tar.gz)."
        ),
        watch: str | None = typer.Option(
            None, "--watch", metavar="[SECONDS]",
            help="Live: re-diagnose every SECONDS (30 when omitted), say what changed; Ctrl-C stops."),
        watch_count: int | None = typer.Option(None, "--watch-count", min=1, help="With --watch: stop after N cycles."),
        jobs: int | None = typer.Option(
            None, "--jobs", "-j", min=1, metavar="N",
            help="Processes: 2 parses the object files and runs the log checks in two (default: 2 on an idle "
                 "machine for a large snapshot; 1 never forks; the verdict is the same)."),
        cluster: dict[str, Any] | None = None,
    ) -> None:
        """Explain why a workload is pending: the cause, the key number and the first fix, then the evidence."""
        if source is not None and save:
            raise InputError("--save only applies to live collection (without --from)")
        settings = settings_from_flags(
            config,
            select=select,
            ignore=ignore,
            severity=severity,
            fail_on=fail_on,
            exit_zero=exit_zero,
            output=output.value if output else None,
            quiet=quiet,
            verbose=verbose,
            no_color=no_color,
            width=width,
            redact_map=redact_map,
            since=since,
            **(cluster or {}),
            max_bytes=max_bytes, max_file_bytes=max_file_bytes, max_files=max_files, max_objects=max_objects,
            max_log_lines=max_log_lines, max_series=max_series, max_alias_nodes=max_alias_nodes,
        )
        if watch is not None or watch_count is not None:
            from kueuediag.cli.watch import parse_interval
            from kueuediag.cli.why_watch import watch_why

            interval = parse_interval(watch)
            if interval is None:
                raise InputError("--watch-count needs --watch")
            raise typer.Exit(watch_why(target=target, namespace=namespace, source=source, settings=settings,
                                       interval=interval, count=watch_count))
        code = diagnose_and_print(
            target=target, namespace=namespace, source=source, now=now, settings=settings, save=save, jobs=jobs
        )
        raise typer.Exit(code)
