"""`kueuediag checks`: the check catalogue (codes, names, families, inputs)."""

from __future__ import annotations

import json
from enum import Enum

import typer

from kueuediag.cli.common import handle_errors


class CatalogFormat(str, Enum):
    text = "text"
    json = "json"


def register(app: typer.Typer) -> None:
    @app.command("checks")
    @handle_errors
    def checks(output: CatalogFormat = typer.Option(CatalogFormat.text, "-o", "--output",
                                                     help="Output format.")) -> None:
        """List every check: code, name, family, what it needs — and plugins that could not be loaded."""
        from kueuediag.registry import describe_all

        rows, errors = describe_all()
        if output is CatalogFormat.json:
            for e in errors:  # the JSON on stdout stays a list of checks; the broken plugins go to stderr
                typer.echo(f"kueuediag: warning: {e}", err=True)
            typer.echo(json.dumps(rows, indent=2))
            return
        for r in rows:
            needs = ",".join(r["requires"]) or "-"
            typer.echo(f"{r['code']}  {r['name']:<22} {r['family']:<11} needs {needs:<24} {r['summary']}")
        for e in errors:
            typer.echo(f"BROKEN plugin {e.name} ({e.value}): {e.error}")
