"""The fuzz corpus: every fixture snapshot a case file names, with one target each."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"


@dataclass(frozen=True)
class Seed:
    """One fixture snapshot as bytes per relative path, and a target that exists in it."""

    name: str
    files: dict[str, bytes]
    target: str
    namespace: str | None


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)}


def load_seeds(max_bytes: int = 400_000) -> list[Seed]:
    """Small fixture snapshots (the big generated scenarios would only slow the campaign down)."""
    seen: dict[str, Seed] = {}
    for case_file in sorted((FIXTURES / "cases").glob("*.yaml")):
        for case in yaml.safe_load(case_file.read_text()).get("cases") or ():
            rel = case.get("snapshot")
            if not isinstance(rel, str) or rel in seen or not rel.startswith("snapshots/"):
                continue
            folder = FIXTURES / rel
            files = _files(folder)
            if sum(len(b) for b in files.values()) > max_bytes:
                continue
            seen[rel] = Seed(name=rel, files=files, target=str(case["target"]), namespace=case.get("namespace"))
    return list(seen.values())
