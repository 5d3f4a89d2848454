"""Check discovery: one entry-point group, `kueuediag.checks`.

An entry point may name a Check subclass or a callable returning an iterable of Check subclasses. The built-in
checks are published the same way (`builtin = kueuediag_checks:builtin_checks`), so plugins and built-ins take
one route. When kueuediag runs from a source tree without installed metadata, the built-ins are imported
directly.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib.metadata import entry_points
from typing import Any

from kueuediag.check import Check, validate_check_class
from kueuediag.errors import InputError

GROUP = "kueuediag.checks"


def _expand(obj: Any, origin: str) -> list[type[Check]]:
    if isinstance(obj, type) and issubclass(obj, Check):
        return [obj]
    if callable(obj):
        produced = obj()
        if isinstance(produced, Iterable):
            out = []
            for item in produced:
                if not (isinstance(item, type) and issubclass(item, Check)):
                    raise InputError(f"check plugin {origin}: {item!r} is not a Check subclass")
                out.append(item)
            return out
    raise InputError(f"check plugin {origin}: must be a Check subclass or a callable returning them")


def discover() -> list[type[Check]]:
    """All check classes, ordered by code. Raises InputError on broken plugins or duplicate codes."""
    classes: list[type[Check]] = []
    eps = list(entry_points(group=GROUP))
    if not any(ep.value.startswith("kueuediag_checks") for ep in eps):
        from kueuediag_checks import builtin_checks

        classes.extend(builtin_checks())
    for ep in eps:
        try:
            loaded = ep.load()
        except Exception as exc:  # a broken third-party plugin must not hide the built-ins' message
            raise InputError(f"check plugin {ep.name} ({ep.value}) failed to load: {exc}") from None
        classes.extend(_expand(loaded, f"{ep.name} ({ep.value})"))
    by_code: dict[str, type[Check]] = {}
    for cls in classes:
        validate_check_class(cls)
        other = by_code.get(cls.code)
        if other is not None and other is not cls:
            raise InputError(f"duplicate check code {cls.code}: {other.__module__} and {cls.__module__}")
        by_code[cls.code] = cls
    return [by_code[c] for c in sorted(by_code)]
