from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SHARED = ROOT.parent / "shared"


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(scope="session")
def bench_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`bench/generate_large.py --scale small`, generated once per session (read-only: tests only read it)."""
    out = tmp_path_factory.mktemp("bench") / "snap"
    subprocess.run([sys.executable, str(ROOT / "bench" / "generate_large.py"), str(out), "--scale", "small"],
                   check=True, capture_output=True)
    return out


@pytest.fixture(autouse=True)
def _builtin_checks_only(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """kueuediag's own tests see only its built-in checks: a plugin installed in the environment cannot change
    their results. tests/test_plugins.py installs its example plugin and sees the real entry points."""
    if request.node.path.name == "test_plugins.py":
        return
    from importlib.metadata import EntryPoints, entry_points

    from kueuediag import registry

    def builtin_entry_points(*, group: str) -> EntryPoints:
        return EntryPoints(ep for ep in entry_points(group=group) if ep.value.startswith(registry.BUILTIN_MODULE))

    monkeypatch.setattr(registry, "entry_points", builtin_entry_points)
