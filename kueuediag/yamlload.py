"""Which YAML loader kueuediag parses with, and the bundled data tables (kueuediag/data/*.yaml) parsed once.

libyaml (PyYAML's C loader) parses about ten times faster than the pure-Python loader; the bundled tables
(message catalogue, known issues, version table) are ~120 kB that every diagnosis reads, and parsing them with
the pure-Python loader was most of a small `why`'s run time. The loader falls back to the pure-Python one when
PyYAML was built without libyaml.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import yaml

try:
    FAST_SAFE_LOADER: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    FAST_SAFE_LOADER = yaml.SafeLoader


@cache
def bundled_yaml(name: str) -> Any:
    """``kueuediag/data/NAME`` parsed once per process; callers only read the result (it is shared)."""
    text = resources.files("kueuediag").joinpath(f"data/{name}").read_text(encoding="utf-8")
    return yaml.load(text, Loader=FAST_SAFE_LOADER)  # noqa: S506 - a safe loader (libyaml's SafeLoader)
