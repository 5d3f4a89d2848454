"""Architecture rules (STYLE.md §1, §8): checks are pure, the core never imports the CLI or UI libraries."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORE = [p for p in (ROOT / "kueuediag").rglob("*.py")
        if "cli" not in p.relative_to(ROOT / "kueuediag").parts and p.name not in ("__main__.py", "console.py")]
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
    if not (path.parent.name == "render" and path.name.endswith("terminal.py")):
        assert "rich" not in found, f"{path}: only the terminal renderers (render/*terminal.py) may import rich"


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


def _internal_imports(path: Path) -> set[str]:
    """Every kueuediag module a file imports, at module level or inside functions."""
    return {n for n in _imports(path) if n.startswith("kueuediag.")}


def test_snapshot_package_has_no_import_cycle() -> None:
    """The loader sits above the index and the metrics store; the index never imports either back."""
    pkg = ROOT / "kueuediag" / "snapshot"
    graph = {f"kueuediag.snapshot.{p.stem}": {m for m in _internal_imports(p) if m.startswith("kueuediag.snapshot.")}
             for p in pkg.glob("*.py") if p.stem != "__init__"}
    assert "kueuediag.snapshot.metrics" not in graph["kueuediag.snapshot.model"]
    assert "kueuediag.snapshot.loader" not in graph["kueuediag.snapshot.model"]

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph.get(start, ()):
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    cycles = sorted(m for m in graph if reaches(m, m, {m}))
    assert cycles == [], f"import cycle through {cycles}"


# --- layering: cli → engine → checks → analysis → snapshot → base ------------------------------------------------

LAYERS = ("base", "snapshot", "analysis", "checks", "engine", "cli")
"""Lowest first: a module may import its own layer and the layers below it, never one above."""

_BY_PREFIX: tuple[tuple[str, str], ...] = (
    ("kueuediag.cli", "cli"),
    ("kueuediag.__main__", "cli"),
    ("kueuediag.console", "cli"),  # the console entries: the collector paused, then the CLI
    ("kueuediag.engine", "engine"),
    ("kueuediag.merge", "engine"),
    ("kueuediag.fixes", "engine"),
    ("kueuediag.split_runs", "engine"),  # one diagnosis's checks in two processes (engine.diagnose, jobs > 1)
    ("kueuediag.ranking", "engine"),
    ("kueuediag.registry", "engine"),
    ("kueuediag.testing", "engine"),
    ("kueuediag.docs", "engine"),
    ("kueuediag.render", "engine"),
    ("kueuediag.live", "engine"),
    ("kueuediag.health", "engine"),  # fleet health: runs checks and engine.diagnose over a shared snapshot
    ("kueuediag.check", "checks"),
    ("kueuediag_checks", "checks"),
    ("kueuediag.analysis", "analysis"),
    ("kueuediag.snapshot", "snapshot"),
    ("kueuediag.target", "snapshot"),
    ("kueuediag", "base"),  # models, errors, causes, quantity, timeutil, config, examples, the package itself
)


def layer_of(module: str) -> str | None:
    """The layer of a kueuediag module (None for third-party and stdlib modules)."""
    for prefix, layer in _BY_PREFIX:
        if module == prefix or module.startswith(prefix + "."):
            return layer
    return None


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT / "checks") if path.is_relative_to(ROOT / "checks") else path.relative_to(ROOT)
    parts = list(rel.with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _all_imports(path: Path) -> set[str]:
    """Every absolute import in the module, including the lazy ones inside functions."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


SOURCES = sorted((ROOT / "kueuediag").rglob("*.py")) + sorted((ROOT / "checks" / "kueuediag_checks").glob("*.py"))


def test_every_module_has_a_layer() -> None:
    assert not [p for p in SOURCES if layer_of(_module_name(p)) is None]
    assert layer_of("kueuediag.checks_cmd") == "base" and layer_of("kueuediag.cli.why_cmd") == "cli"
    assert layer_of("kueuediag.check") == "checks" and layer_of("kueuediag.checkpoint") == "base"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_follow_the_layers(path: Path) -> None:
    own = layer_of(_module_name(path))
    assert own is not None
    upward = sorted(
        f"{name} ({layer})"
        for name in _all_imports(path)
        if (layer := layer_of(name)) is not None and LAYERS.index(layer) > LAYERS.index(own)
    )
    assert not upward, f"{path.relative_to(ROOT)} ({own} layer) imports from a higher layer: {upward}"


@pytest.mark.parametrize("path", CHECKS, ids=lambda p: p.name)
def test_checks_never_import_live_render_or_cli(path: Path) -> None:
    banned = ("kueuediag.live", "kueuediag.render", "kueuediag.cli")
    bad = sorted(n for n in _all_imports(path) if any(n == m or n.startswith(m + ".") for m in banned))
    assert not bad, f"{path.name} imports {bad}"


@pytest.mark.parametrize("path", CHECKS, ids=lambda p: p.name)
def test_built_in_checks_name_causes_through_the_enum(path: Path) -> None:
    """`self.finding("fragmentaton", …)` would only fail at run time; `CauseSlug.FRAGMENTATON` fails mypy."""
    literal = []
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("finding", "contribute") and node.args
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            literal.append(f"line {node.lineno}: {node.args[0].value!r}")
    assert not literal, f"{path.name}: use CauseSlug members, not string literals: {literal}"


def test_the_layer_test_catches_a_violation(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from kueuediag.render.terminal import render_terminal\n")
    names = _all_imports(bad)
    assert "kueuediag.render.terminal" in names and layer_of("kueuediag.render.terminal") == "engine"
    assert LAYERS.index("engine") > LAYERS.index("checks")



def _private_imports_across_packages(package: str, source: str) -> list[str]:
    """`from kueuediag.X import _name` where X's package is not ``package`` (the importer's own)."""
    bad = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.split(".")[0] in ("kueuediag", "kueuediag_checks"):
            is_package = (ROOT / "kueuediag").joinpath(*node.module.split(".")[1:]).is_dir()
            home = node.module if is_package else node.module.rsplit(".", 1)[0]
            bad += [f"{node.module}.{a.name}" for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__") and home != package]
    return bad


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_private_names_imported_from_another_package(path: Path) -> None:
    """A private helper is free to change; another package that needs it gets a public, documented API
    (health once called the engine's `_override` and `_apply_ignore`; now `override_finding`, `run_configured`)."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    assert not _private_imports_across_packages(package, path.read_text()), path


def test_the_private_import_rule_catches_a_violation() -> None:
    source = ("from kueuediag.engine import _apply_ignore\nfrom kueuediag.health.owners import _fine\n"
              "from kueuediag.engine import run_configured\n")
    assert _private_imports_across_packages("kueuediag.health", source) == ["kueuediag.engine._apply_ignore"]
