"""Architecture rules (STYLE.md §1, §8): checks are pure, the core never imports the CLI or UI libraries."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORE = [p for p in (ROOT / "kueuediag").rglob("*.py")
        if "cli" not in p.relative_to(ROOT / "kueuediag").parts and p.name != "__main__.py"]
CHECKS = list((ROOT / "checks" / "kueuediag_checks").glob("*.py"))


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _top(names: set[str]) -> set[str]:
    return {n.split(".")[0] for n in names} | {".".join(n.split(".")[:2]) for n in names}


@pytest.mark.parametrize("path", CORE, ids=lambda p: str(p.relative_to(ROOT)))
def test_core_never_imports_cli_or_typer(path: Path) -> None:
    found = _top(_imports(path))
    assert not found & {"typer", "click", "kueuediag.cli"}, f"{path}: core imports the CLI layer"
    if path.name != "terminal.py":
        assert "rich" not in found, f"{path}: only the terminal renderer may import rich"


@pytest.mark.parametrize("path", CHECKS, ids=lambda p: p.name)
def test_checks_are_pure(path: Path) -> None:
    found = _top(_imports(path))
    forbidden = {"typer", "rich", "kubernetes", "prometheus_api_client", "requests", "urllib", "socket",
                 "subprocess", "kueuediag.cli", "kueuediag.live", "time", "datetime.datetime"}
    assert not found & forbidden, f"{path}: checks read only the Snapshot (found {found & forbidden})"
    text = path.read_text()
    assert "datetime.now(" not in text and "time.time(" not in text, f"{path}: no clock in checks (use snapshot.now)"


def test_heavy_clients_only_imported_lazily_in_live() -> None:
    for path in (ROOT / "kueuediag" / "live").glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in tree.body:  # module level only
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                mods = _top(_imports_of(node))
                heavy = {"kubernetes", "prometheus_api_client", "urllib3"}
                assert not mods & heavy, f"{path}: import it inside the function"


def _imports_of(node: ast.Import | ast.ImportFrom) -> set[str]:
    if isinstance(node, ast.Import):
        return {a.name for a in node.names}
    return {node.module} if node.module else set()
