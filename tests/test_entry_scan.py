"""kueuediag.entry_scan reads the entry points importlib.metadata reads, or says it cannot (issue 11, cold start)."""

from __future__ import annotations

import sys
import zipfile
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from kueuediag import registry
from kueuediag.entry_scan import declared


def _dist(site: Path, folder: str, entry_points: str) -> None:
    info = site / folder
    info.mkdir(parents=True)
    name = folder.split("-")[0]
    (info / "METADATA" if folder.endswith(".dist-info") else info / "PKG-INFO").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entry_points)


def test_agrees_with_importlib_metadata_in_this_environment() -> None:
    for group in ("console_scripts", registry.GROUP, "pydantic"):
        found = declared(group)
        assert found is not None
        # importlib.metadata keeps the first of two distributions of one name (e.g. the kueuediag.egg-info a
        # source checkout holds beside the installed dist-info): the scan may list an entry twice, never miss one
        assert set(found) == {ep.value for ep in metadata.entry_points(group=group)}, group
    assert "kueuediag.console:main" in (declared("console_scripts") or [])


def test_reads_dist_info_and_egg_info_as_importlib_metadata_does(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _dist(tmp_path, "alpha_checks-1.0.dist-info",
          "# a comment\n[console_scripts]\nalpha = alpha.cli:main\n\n[kueuediag.checks]\n ab = alpha_checks:AB101\n"
          "batch=alpha_checks.more:all_checks\n")
    _dist(tmp_path, "Beta_Checks.egg-info", "[kueuediag.checks]\nbeta = beta_checks:checks\n")
    _dist(tmp_path, "gamma-2.0.dist-info", "[other]\nx = y:z\n[ kueuediag.checks ]\nspaced = not:read\n")
    (tmp_path / "delta-1.0.dist-info").mkdir()  # no entry_points.txt: declares nothing
    monkeypatch.syspath_prepend(str(tmp_path))
    expected = ["alpha_checks:AB101", "alpha_checks.more:all_checks", "beta_checks:checks"]
    third_party = {v for v in declared(registry.GROUP) or [] if not v.startswith(registry.BUILTIN_MODULE)}
    assert third_party == set(expected) == {
        ep.value for ep in metadata.entry_points(group=registry.GROUP) if not ep.value.startswith("kueuediag_")}
    asked: list[str] = []

    def record(*, group: str) -> list[Any]:
        asked.append(group)
        return []

    monkeypatch.setattr(registry, "entry_points", record)
    registry._declared_eps()
    assert asked == [registry.GROUP]  # a third-party plugin: importlib.metadata is asked


def test_cannot_tell_means_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "plugins.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("zipped-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: zipped\nVersion: 1.0\n")
        zf.writestr("zipped-1.0.dist-info/entry_points.txt", "[kueuediag.checks]\nz = zipped:Z\n")
    with monkeypatch.context() as m:
        m.syspath_prepend(str(archive))
        assert declared(registry.GROUP) is None
        assert "zipped:Z" in [ep.value for ep in metadata.entry_points(group=registry.GROUP)]  # it reads the zip
    with monkeypatch.context() as m:
        m.syspath_prepend(str(tmp_path / "old.egg"))
        assert declared(registry.GROUP) is None
    with monkeypatch.context() as m:
        m.setattr(sys, "path", [tmp_path, *sys.path])
        assert declared(registry.GROUP) is None

    class Finder:
        def find_spec(self, *args: Any) -> None:
            return None

        def find_distributions(self, *args: Any) -> list[Any]:
            return []

    with monkeypatch.context() as m:
        m.setattr(sys, "meta_path", [*sys.meta_path, Finder()])
        assert declared(registry.GROUP) is None
    bad = tmp_path / "site"
    (bad / "latin-1.0.dist-info").mkdir(parents=True)
    (bad / "latin-1.0.dist-info" / "entry_points.txt").write_bytes(b"[kueuediag.checks]\nx = caf\xe9:X\n")
    with monkeypatch.context() as m:
        m.syspath_prepend(str(bad))
        assert declared(registry.GROUP) is None


def test_builtins_only_skip_importlib_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    """With only kueuediag's own entry point installed, the built-ins are imported directly: the same checks."""

    def refuse(*, group: str) -> Any:
        raise AssertionError("importlib.metadata was asked")

    expected = [c.code for c in registry.builtin()]
    monkeypatch.setattr(registry, "entry_points", refuse)
    found = registry.discover_all()
    assert [c.code for c in found.classes] == expected and not found.errors
    rows, errors = registry.describe_all()
    assert [r["code"] for r in rows] == expected and not errors
