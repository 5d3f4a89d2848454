"""The kueuediag command line. It only parses and delegates: one module per command.

Heavy libraries (rich, kubernetes, prometheus_api_client) are imported inside commands, so `--help` and
snapshot-only runs stay fast.
"""

from __future__ import annotations

import sys

import typer

from kueuediag import __version__


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kueuediag {__version__}")
        raise typer.Exit(0)


def build_app() -> typer.Typer:
    app = typer.Typer(
        name="kueuediag",
        help="Why is my Kueue workload pending? A ranked, evidence-backed verdict from a snapshot or a live cluster.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )

    @app.callback()
    def _root(
        version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                     help="Print the version and exit."),
    ) -> None:
        """kueuediag: diagnose pending Kueue workloads."""

    from kueuediag.cli import checks_cmd, demo_cmd, explain_cmd, health_cmd, rules_cmd, why_cmd

    why_cmd.register(app)
    health_cmd.register(app)
    rules_cmd.register(app)
    demo_cmd.register(app)
    checks_cmd.register(app)
    explain_cmd.register(app)
    try:
        from kueuediag.cli import snapshot_cmd
    except ImportError:  # pragma: no cover - live extras missing
        pass
    else:
        snapshot_cmd.register(app)
    return app


def main() -> None:
    from kueuediag.cli.watch import optional_watch_value

    app = build_app()
    try:
        app(args=optional_watch_value(sys.argv[1:]), prog_name="kueuediag")
    except BrokenPipeError:  # `kueuediag ... | head`
        sys.stderr.close()
        sys.exit(0)
