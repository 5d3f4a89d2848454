"""kueuediag's data tables: the YAML files are the source, tables.json a generated copy that only makes them
fast to read (kueuediag.datafile). The copy must never change what a table says."""

from __future__ import annotations

from importlib import resources
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
