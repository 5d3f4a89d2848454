"""Golden JSON outputs: the full `why -o json` document for selected snapshots, byte for byte (minus timings).

Regenerate after an intended change with `KUEUEDIAG_UPDATE_GOLDEN=1 python -m pytest tests/test_golden.py`
and review the diff like code.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kueuediag.cli import build_app

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"
CASES = json.loads((GOLDEN / "cases.json").read_text())


def _normalise(doc: dict[str, Any]) -> dict[str, Any]:
    for check in doc["checks"]:
        check.pop("durationMs", None)
    doc["tool"].pop("version", None)
    return doc


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_golden_json(case: dict[str, Any]) -> None:
    args = ["why", case["target"], "--from", str(ROOT / case["snapshot"]), "-o", "json"]
    if case.get("namespace"):
        args += ["-n", case["namespace"]]
    result = CliRunner().invoke(build_app(), args)
    assert result.exit_code == 0, result.stderr
    doc = _normalise(json.loads(result.stdout))
    path = GOLDEN / f"{case['name']}.json"
    if os.environ.get("KUEUEDIAG_UPDATE_GOLDEN"):
        path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    expected = json.loads(path.read_text())
    assert doc == expected, f"{case['name']}: output differs from {path.name} (see module docstring)"
