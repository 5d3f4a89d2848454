"""`kueuediag snapshot`: record the cluster's Kueue state in snapshot format v1 (directory or .tar.gz).

Only parses flags and delegates to :func:`kueuediag.live.take_snapshot`. Progress goes to stderr (a rich
status); stdout carries only the path of the written snapshot.
"""

from __future__ import annotations

import gc
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import typer

from kueuediag.cli import options as opt
from kueuediag.cli.common import (
    handle_errors,
    live_options,
    retain_until_exit,
    settings_from_flags,
    split_csv,
    stderr_status,
)
from kueuediag.errors import ExitCode, InputError


def register(app: typer.Typer) -> None:
    @app.command("snapshot")
    @handle_errors
    @opt.with_cluster_flags
    def snapshot(
        output: str | None = typer.Option(
            None,
            "-o",
            "--output",
            metavar="PATH",
            help="FILE.tar.gz or a new DIR (default: kueuediag-snapshot-<time>.tar.gz).",
        ),
        namespace: list[str] | None = typer.Option(
            None,
            "-n",
            "--namespace",
            metavar="NAMESPACE",
            help="Only these namespaces (repeatable, or comma-separated; default: the kubeconfig context's).",
        ),
        all_namespaces: bool = typer.Option(False, "-A", "--all-namespaces", help="Every namespace."),
        for_target: str | None = typer.Option(
            None,
            "--for",
            metavar="TARGET",
            help="Record this target (job/NAME …) so `kueuediag why --from FILE` diagnoses it.",
        ),
        since: str | None = typer.Option(
            None, "--since", metavar="DURATION", help="How far back for controller logs and metrics (6h)."
        ),
        redact: bool = typer.Option(
            False,
            "--redact",
            help="Replace names, namespaces, nodes, label values, images, cluster name with consistent pseudonyms.",
        ),
        redact_map: str | None = typer.Option(
            None,
            "--redact-map",
            metavar="FILE",
            help="With --redact: where to write the pseudonym map (default: beside the "
            "snapshot, <output>.redaction-map.json; never inside it). Keep it private.",
        ),
        pending_positions: bool = typer.Option(
            False,
            "--pending-positions",
            help="Also record the visibility API's pending positions of every queue with pending work (one "
            "request per queue; `why --from` orders a queue from its Workloads without them).",
        ),
        config: Path | None = opt.CONFIG,
        verbose: bool | None = typer.Option(None, "-v", "--verbose", help="Print every request and the totals."),
        cluster: dict[str, Any] | None = None,
    ) -> None:
        """Record the cluster's Kueue state (objects, nodes, pods, events, logs, metrics) for later `why --from`."""
        started = time.monotonic()  # `--timeout` counts from here
        from kueuediag.live import take_snapshot

        # A one-shot process building a large, acyclic object graph (every decoded object): the cyclic GC only
        # costs time here (a third of the client's CPU on the scale benchmark).
        gc.disable()
        namespaces = split_csv(namespace) or None
        if namespaces and all_namespaces:
            raise InputError("use either -n NAMESPACE or -A, not both")
        if redact_map and not redact:
            raise InputError("--redact-map needs --redact")
        settings = settings_from_flags(
            config,
            since=since,
            verbose=verbose,
            **(cluster or {}),
        )
        target = output or f"kueuediag-snapshot-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}.tar.gz"
        with stderr_status("collecting from the cluster…") as progress:
            opts = live_options(
                settings, namespaces[0] if namespaces and len(namespaces) == 1 else None, progress, "6h"
            )
            opts.started = started
            opts.pending_positions = pending_positions
            result = take_snapshot(
                target,
                opts,
                namespaces=namespaces,
                redact=redact,
                redact_map=redact_map,
                all_namespaces=all_namespaces,
                for_target=for_target,
            )
        # Every collected object is garbage once the summary is printed: freeing them one by one took 0.25 s of a
        # quarter-size `snapshot -A` (a tenth of its transfer); the process ends without the teardown.
        retain_until_exit(result)
        kinds = Counter(str(o.get("kind")) for o in result.raw.dicts())
        summary = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
        typer.echo(
            f"kueuediag: recorded {summary}; {len(result.raw.logs)} log file(s), "
            f"{len(result.raw.metrics)} metrics file(s)" + (" (redacted)" if redact else ""),
            err=True,
        )
        recorded = result.raw.manifest.get("target")
        if isinstance(recorded, dict):
            typer.echo(
                f"kueuediag: recorded target {recorded.get('target')}"
                f"{' -n ' + str(recorded['namespace']) if recorded.get('namespace') else ''}: "
                f"`kueuediag why --from {result.path}` diagnoses it",
                err=True,
            )
        if result.map_path is not None:
            typer.echo(f"kueuediag: redaction map (keep private, do not attach): {result.map_path}", err=True)
        for err in result.raw.manifest.get("errors") or ():
            typer.echo(f"kueuediag: not collected: {err.get('what')}: {err.get('error')}", err=True)
        typer.echo(str(result.path))
        raise typer.Exit(int(ExitCode.OK))
