"""Example snapshots bundled inside the package (`kueuediag demo`, `--from example:NAME`)."""

from __future__ import annotations

import json
from pathlib import Path

from kueuediag.errors import TargetNotFound
from kueuediag.pkgdata import package_data
from kueuediag.records import dataclass

EXAMPLE_PREFIX = "example:"


@dataclass(frozen=True)
class Example:
    name: str
    title: str
    target: str
    namespace: str | None
    expected_cause: str | None
    path: Path


def _root() -> Path:
    return Path(str(package_data("examples")))


def list_examples() -> list[Example]:
    root = _root()
    index = root / "index.json"
    if not index.is_file():
        return []
    out = []
    for item in json.loads(index.read_text()):
        path = root / item.get("file", f"{item['name']}.tar.gz")
        out.append(Example(name=item["name"], title=item.get("title", ""), target=item["target"],
                           namespace=item.get("namespace"), expected_cause=item.get("expected_cause"), path=path))
    return out


def find_example(name: str) -> Example:
    examples = list_examples()
    for ex in examples:
        if ex.name == name:
            return ex
    raise TargetNotFound(f"no bundled example named {name!r}", [f"example:{e.name}" for e in examples])


def resolve_source(source: str) -> str:
    """`example:NAME` → the bundled file's path; anything else unchanged."""
    if source.startswith(EXAMPLE_PREFIX):
        return str(find_example(source[len(EXAMPLE_PREFIX):]).path)
    return source
