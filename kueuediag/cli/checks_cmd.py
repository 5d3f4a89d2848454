"""`kueuediag checks`: the check catalogue (codes, names, families, inputs)."""

from __future__ import annotations

import json
from enum import Enum
from typing import Any

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
        from kueuediag.registry import discover_all

        found = discover_all()
        rows: list[dict[str, Any]] = []
        for cls in found.classes:
            doc = cls.doc()
            rows.append({
                "code": cls.code, "name": cls.name, "family": cls.family(),
                "requires": [p.value for p in cls.requires], "needsWorkload": cls.needs_workload,
                "defaultSeverity": cls.default_severity.label,
                "summary": doc.get("summary", "").splitlines()[0] if doc.get("summary") else "",
                "causes": [c.slug for c in cls.causes],
            })
        if output is CatalogFormat.json:
            for e in found.errors:  # the JSON on stdout stays a list of checks; the broken plugins go to stderr
                typer.echo(f"kueuediag: warning: {e}", err=True)
            typer.echo(json.dumps(rows, indent=2))
            return
        for r in rows:
            needs = ",".join(r["requires"]) or "-"
            typer.echo(f"{r['code']}  {r['name']:<22} {r['family']:<11} needs {needs:<24} {r['summary']}")
        for e in found.errors:
            typer.echo(f"BROKEN plugin {e.name} ({e.value}): {e.error}")
