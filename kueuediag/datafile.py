"""kueuediag's own data tables (``kueuediag/data/*.yaml``), parsed once per process with libyaml.

The tables (messages, known issues, versions) hold ~120 kB of YAML that several checks read on every run;
PyYAML's pure-Python loader spent most of a second on them, libyaml's takes a tenth of that. Callers get the
parsed document shared (do not mutate it); a malformed table is kueuediag's bug and raises.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import yaml

try:
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _Loader = yaml.SafeLoader


@cache
def data_yaml(name: str) -> Any:
    """The parsed ``kueuediag/data/<name>`` (read and parsed once)."""
    text = resources.files("kueuediag").joinpath(f"data/{name}").read_text(encoding="utf-8")
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader, chosen above
