"""kueuediag's data tables: the YAML files are the source, tables.json a generated copy that only makes them
fast to read (kueuediag.datafile). The copy must never change what a table says."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml

from kueuediag import datafile


def _yaml(name: str) -> Any:
    text = resources.files("kueuediag").joinpath(f"data/{name}").read_text(encoding="utf-8")
    return yaml.load(text, Loader=yaml.CSafeLoader)


def test_every_table_has_a_current_json_copy() -> None:
    names = datafile.tables()
    assert {"messages.yaml", "known_issues.yaml", "versions.yaml"} <= set(names)
    compiled = datafile._compiled()
    for name in names:
        assert name in compiled, f"{name}: run `python -m kueuediag.docs`"
        assert datafile.data_yaml(name) is compiled[name]["data"], f"{name}: its copy is stale"
        assert datafile.data_yaml(name) == _yaml(name)


def test_a_stale_copy_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    """An edited table whose copy was not regenerated reads from its YAML: the copy's data is never used
    unless its recorded hash is the YAML text's."""
    stale = {"messages.yaml": {"sha256": "0" * 64, "data": {"schema": "stale copy"}}}
    monkeypatch.setattr(datafile, "_compiled", lambda: stale)
    assert datafile.data_yaml.__wrapped__("messages.yaml") == _yaml("messages.yaml")
    text = resources.files("kueuediag").joinpath("data/messages.yaml").read_text(encoding="utf-8")
    stale["messages.yaml"]["sha256"] = datafile._digest(text)
    assert datafile.data_yaml.__wrapped__("messages.yaml") == {"schema": "stale copy"}


def test_a_table_json_cannot_carry_is_refused() -> None:
    with pytest.raises(ValueError, match="quote dates"):
        datafile.json_copy("versions.yaml", "released: 2025-08-01\n")
    with pytest.raises(ValueError, match="string keys"):
        datafile.json_copy("versions.yaml", "13: thirteen\n")
    assert datafile.json_copy("t.yaml", "released: '2025-08-01'\n")["data"] == {"released": "2025-08-01"}


def test_package_data_is_the_folder_importlib_resources_finds(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    """kueuediag.pkgdata reads the data folder beside the package; without one (a zip import) it asks
    importlib.resources, which finds the same files."""
    from kueuediag import pkgdata

    shipped = resources.files("kueuediag").joinpath("data")
    asked: list[str] = []
    real_files = resources.files

    def files(package: Any) -> Any:
        asked.append(package)
        return real_files(package)

    monkeypatch.setattr(resources, "files", files)
    here = pkgdata.package_data()
    assert sorted(p.name for p in here.iterdir()) == sorted(p.name for p in shipped.iterdir())
    assert pkgdata.package_data("tables.json").read_bytes() == shipped.joinpath("tables.json").read_bytes()
    assert pkgdata.package_data("examples").joinpath("index.json").is_file()
    assert asked == []  # installed as files: the folder beside the package
    monkeypatch.setattr(pkgdata, "__file__", str(tmp_path / "elsewhere" / "pkgdata.py"))  # no data folder there
    assert pkgdata.package_data("tables.json").read_bytes() == shipped.joinpath("tables.json").read_bytes()
    assert sorted(p.name for p in pkgdata.package_data().iterdir()) == sorted(p.name for p in shipped.iterdir())
    assert asked == ["kueuediag", "kueuediag"]
