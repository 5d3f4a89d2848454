"""`kueuediag snapshot`: record the cluster's Kueue state in snapshot format v1 (directory or .tar.gz).

Only parses flags and delegates to :func:`kueuediag.live.take_snapshot`. Progress goes to stderr (a rich
status); stdout carries only the path of the written snapshot.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

import typer

from kueuediag.cli.common import handle_errors, positive_seconds, split_csv, stderr_status
from kueuediag.errors import ExitCode, InputError


def register(app: typer.Typer) -> None:
    @app.command("snapshot")
    @handle_errors
    def snapshot(
        output: str | None = typer.Option(
            None, "-o", "--output",
            help="FILE.tar.gz or a new DIR (default: kueuediag-snapshot-<cluster>-<time>.tar.gz)."),
        namespace: list[str] | None = typer.Option(
            None, "-n", "--namespace", help="Only these namespaces (repeatable, or comma-separated)."),
        all_namespaces: bool = typer.Option(False, "-A", "--all-namespaces",
                                            help="All namespaces (the default when no -n is given)."),
        since: str = typer.Option("6h", "--since", help="How far back for controller logs and metrics."),
        redact: bool = typer.Option(False, "--redact",
                                    help="Replace names, namespaces, nodes, label values, images, cluster name "
                                         "with consistent pseudonyms."),
        redact_map: str | None = typer.Option(None, "--redact-map",
                                              help="With --redact: write the pseudonym mapping here (keep private)."),
        kubeconfig: str | None = typer.Option(None, "--kubeconfig", help="kubeconfig path (default: KUBECONFIG, "
                                                                          "~/.kube/config, in-cluster)."),
        context: str | None = typer.Option(None, "--context", help="kubeconfig context."),
        kueue_namespace: str = typer.Option("kueue-system", "--kueue-namespace", help="Kueue's namespace."),
        prometheus_url: str | None = typer.Option(None, "--prometheus-url", help="Prometheus base URL."),
        prometheus_header: list[str] | None = typer.Option(
            None, "--prometheus-header", help="NAME=VALUE header for Prometheus (repeatable). A bearer token can "
                                              "come from KUEUEDIAG_PROMETHEUS_TOKEN."),
        prometheus_ca: str | None = typer.Option(None, "--prometheus-ca", help="CA bundle for Prometheus."),
        prometheus_insecure: bool = typer.Option(False, "--prometheus-insecure",
                                                 help="Skip TLS verification for Prometheus."),
        timeout: float = typer.Option(60.0, "--timeout", help="Overall deadline in seconds."),
        verbose: bool = typer.Option(False, "-v", "--verbose", help="Print every request and the totals."),
    ) -> None:
        """Record the cluster's Kueue state (objects, nodes, pods, events, logs, metrics) for later `why --from`."""
        from kueuediag.live import LiveOptions, take_snapshot

        positive_seconds("--timeout", timeout)
        namespaces = split_csv(namespace) or None
        if namespaces and all_namespaces:
            raise InputError("use either -n NAMESPACE or -A, not both")
        if redact_map and not redact:
            raise InputError("--redact-map needs --redact")
        target = output or f"kueuediag-snapshot-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}.tar.gz"
        with stderr_status("collecting from the cluster…") as progress:
            opts = LiveOptions(
                kubeconfig=kubeconfig, context=context, kueue_namespace=kueue_namespace,
                since=since,  # type: ignore[arg-type]
                timeout=timeout, prometheus_url=prometheus_url,
                prometheus_headers=prometheus_header or [],  # type: ignore[arg-type]
                prometheus_ca=prometheus_ca, prometheus_insecure=prometheus_insecure, verbose=verbose,
                progress=progress, report=lambda line: typer.echo(line, err=True),
            )
            result = take_snapshot(target, opts, namespaces=namespaces, redact=redact, redact_map=redact_map)
        kinds = Counter(str(o.get("kind")) for o in result.raw.objects)
        summary = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
        typer.echo(f"kueuediag: recorded {summary}; {len(result.raw.logs)} log file(s), "
                   f"{len(result.raw.metrics)} metrics file(s)" + (" (redacted)" if redact else ""), err=True)
        for err in result.raw.manifest.get("errors") or ():
            typer.echo(f"kueuediag: not collected: {err.get('what')}: {err.get('error')}", err=True)
        typer.echo(str(result.path))
        raise typer.Exit(int(ExitCode.OK))

