"""kueuediag's own data tables (``kueuediag/data/*.yaml``), parsed once per process.

The YAML files are the source (edited by hand, commented). ``kueuediag/data/tables.json`` holds the same
documents as JSON, each with the SHA-256 of the YAML text it was made from; ``python -m kueuediag.docs`` writes
it and a test fails when it is stale. PyYAML builds objects in pure Python even with libyaml: the three tables
cost ~35 ms of CPU, most of what a small ``why`` may spend (issue 11, cold start); the JSON copy reads in ~2 ms.
A table whose YAML does not match its recorded hash (an edit not yet regenerated) is parsed from the YAML, so
the tables' content never depends on the copy being current — only the speed does.

Callers get the parsed document shared (do not mutate it); a malformed table is kueuediag's bug and raises.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from typing import Any

from kueuediag import jsonload
from kueuediag.pkgdata import package_data

COMPILED = "tables.json"
"""the JSON copy of every table, under kueuediag/data/"""


def _parse_yaml(text: str) -> Any:
    from kueuediag.yamlload import safe_load  # noqa: PLC0415 - only when the JSON copy is missing or stale

    return safe_load(text)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@cache
def _compiled() -> dict[str, Any]:
    path = package_data(COMPILED)
    if not path.is_file():
        return {}
    doc: dict[str, Any] = jsonload.loads(path.read_bytes())
    return doc


@cache
def data_yaml(name: str) -> Any:
    """The parsed ``kueuediag/data/<name>`` (read and parsed once)."""
    text = package_data(name).read_text(encoding="utf-8")
    copy = _compiled().get(name)
    if isinstance(copy, dict) and copy.get("sha256") == _digest(text):
        return copy["data"]
    return _parse_yaml(text)


def tables() -> list[str]:
    """The names of the data tables (``*.yaml`` under kueuediag/data/)."""
    return sorted(p.name for p in package_data().iterdir() if p.name.endswith(".yaml"))


def json_copy(name: str, text: str) -> dict[str, Any]:
    """One table's entry in tables.json: its parsed YAML `text` and the hash of that text.

    Raises ValueError when the table holds what JSON cannot carry (a YAML date, a set, a non-string key).
    """
    data = _parse_yaml(text)
    try:
        same = json.loads(json.dumps(data)) == data
    except TypeError:  # a YAML timestamp, binary or set
        same = False
    if not same:
        raise ValueError(f"kueuediag/data/{name}: holds values JSON cannot carry (quote dates, use string keys)")
    return {"sha256": _digest(text), "data": data}


def compiled_text() -> str:
    """The content of kueuediag/data/tables.json: every table as JSON with the hash of its YAML text."""
    copies = {name: json_copy(name, package_data(name).read_text(encoding="utf-8")) for name in tables()}
    return json.dumps(copies, ensure_ascii=False, separators=(",", ":")) + "\n"
