"""Docs generated from code must be current; the JSON output must match its published schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from typer.testing import CliRunner

from kueuediag.cli import build_app
from kueuediag.docs import generated_files

ROOT = Path(__file__).resolve().parent.parent


def test_generated_docs_are_current() -> None:
    """The docs pages and kueuediag/data/checks.json (the built-ins `kueuediag checks` lists)."""
    stale = []
    for rel, text in generated_files().items():
        path = ROOT / rel
        if not path.is_file() or path.read_text() != text:
            stale.append(rel)
    assert not stale, f"stale generated files {stale}: run `python -m kueuediag.docs`"


def test_json_output_matches_schema() -> None:
    schema = json.loads((ROOT / "docs" / "schema" / "why-v1.schema.json").read_text())
    result = CliRunner().invoke(build_app(), ["why", "job/resnet-train", "-n", "team-a", "--from",
                                              str(ROOT / "fixtures" / "snapshots" / "basic"), "-o", "json"])
    assert result.exit_code == 0, result.stderr
    jsonschema.validate(json.loads(result.stdout), schema)
