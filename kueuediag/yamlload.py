"""The one YAML loader kueuediag reads input with: PyYAML's safe loader, the libyaml (C) one when the build has it.

libyaml reads about ten times faster than the pure-Python loader and builds the same objects (the same safe
constructor resolves tags, timestamps and numbers); both raise :class:`yaml.YAMLError` subclasses.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from kueuediag.errors import InputError

try:
    LOADER: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    LOADER = yaml.SafeLoader


def safe_load(text: str) -> Any:
    """One YAML document (None when `text` holds none)."""
    return yaml.load(text, Loader=LOADER)  # noqa: S506 - a safe loader, chosen above


def load_document(text: str, where: str) -> Any:
    """One YAML document of a small input kueuediag reads as configuration (a `.kueuediag.yaml`, Kueue's
    ConfigMap), or an :class:`~kueuediag.errors.InputError` naming `where` with the parser's first line."""
    try:
        return safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError(f"{where}: invalid YAML ({str(exc).splitlines()[0]})") from None


def safe_load_all(text: str) -> Iterator[Any]:
    """Every document of a YAML stream, in order."""
    return yaml.load_all(text, Loader=LOADER)  # noqa: S506 - a safe loader, chosen above
