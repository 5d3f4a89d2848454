"""Check discovery: one entry-point group, `kueuediag.checks`.

An entry point may name a Check subclass or a callable returning an iterable of Check subclasses. The built-in
checks are published the same way (`builtin = kueuediag_checks:builtin_checks`), so plugins and built-ins take
one route. When kueuediag runs from a source tree without installed metadata, the built-ins are imported
directly.

Plugins are first-class but cannot break the diagnosis: a plugin that fails to import or breaks the contract
(bad code, a prefix another package uses, a cause that clashes with the catalog) is left out and reported as a
:class:`PluginError` (on stderr by `why`, with its error by `kueuediag checks`); every other check still runs.
A plugin registers its own causes (`Check.causes`) and owns them. The code prefix ``KD`` is reserved for the
built-ins; two packages may not share a prefix.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import field
from typing import TYPE_CHECKING, Any

from kueuediag.entry_scan import declared
from kueuediag.records import dataclass

if TYPE_CHECKING:  # imported where used: `kueuediag checks` lists the built-ins without loading the contract
    from importlib.metadata import EntryPoint, EntryPoints

    from kueuediag.check import Check

GROUP = "kueuediag.checks"
BUILTIN_MODULE = "kueuediag_checks"
CATALOGUE = "checks.json"
"""the built-in checks' catalogue rows, under kueuediag/data/ (generated: `python -m kueuediag.docs`)"""


@dataclass(frozen=True)
class PluginError:
    """A plugin (entry point) that was left out, and why."""

    name: str
    value: str
    error: str

    def __str__(self) -> str:
        return f"check plugin {self.name} ({self.value}) left out: {self.error}"


@dataclass
class Discovery:
    """The checks that will run, and the plugins that could not be loaded."""

    classes: list[type[Check]] = field(default_factory=list)
    errors: list[PluginError] = field(default_factory=list)


def entry_points(*, group: str) -> EntryPoints:
    """importlib.metadata's entry points of `group` (imported here: most runs never need it, see `_declared_eps`)."""
    from importlib import metadata

    return metadata.entry_points(group=group)


def _declared_eps() -> list[EntryPoint]:
    """The `kueuediag.checks` entry points, or none when no distribution declares one besides the built-ins.

    The built-ins are then imported directly (`discover_all`), as when kueuediag runs without installed metadata:
    the same classes, without importlib.metadata's scan of every distribution (~35 ms of a small `why`). The
    metadata files are read directly to tell (`kueuediag.entry_scan`); anything else declared there, or a path
    that scan cannot read, goes to importlib.metadata as before.
    """
    values = declared(GROUP)
    if values is not None and all(v.startswith(BUILTIN_MODULE) for v in values):
        return []
    return list(entry_points(group=GROUP))


def _expand(obj: Any) -> list[type[Check]]:
    from kueuediag.check import Check

    if isinstance(obj, type) and issubclass(obj, Check):
        return [obj]
    if callable(obj):
        produced = obj()
        if isinstance(produced, Iterable):
            out = []
            for item in produced:
                if not (isinstance(item, type) and issubclass(item, Check)):
                    raise ValueError(f"{item!r} is not a Check subclass")
                out.append(item)
            return out
    raise ValueError("must be a Check subclass or a callable returning them")


def is_builtin(cls: type[Check]) -> bool:
    """The class is one of kueuediag's own checks (module kueuediag_checks), not a plugin's."""
    return cls.__module__.split(".")[0] == BUILTIN_MODULE


def _admit(cls: type[Check], dist: str, by_code: dict[str, type[Check]], prefixes: dict[str, str]) -> None:
    """Validate one class against the contract and what is already registered; register its causes."""
    from kueuediag.check import BUILTIN_PREFIX, validate_check_class

    validate_check_class(cls)
    builtin = is_builtin(cls)
    prefix = cls.prefix()
    if prefix == BUILTIN_PREFIX and not builtin:
        raise ValueError(f"{cls.code}: the prefix {BUILTIN_PREFIX} is reserved for kueuediag's built-in checks")
    owner_dist = prefixes.setdefault(prefix, dist)
    if owner_dist != dist:
        raise ValueError(f"{cls.code}: prefix {prefix} is already used by {owner_dist}")
    other = by_code.get(cls.code)
    if other is not None and other is not cls:
        raise ValueError(f"duplicate check code {cls.code}: {other.__module__} and {cls.__module__}")
    cls.register_causes()
    by_code[cls.code] = cls


def discover_all(builtin_only: bool = False) -> Discovery:
    """All check classes, ordered by code, plus the plugins left out with their error."""
    found = Discovery()
    by_code: dict[str, type[Check]] = {}
    prefixes: dict[str, str] = {}
    eps = [] if builtin_only else _declared_eps()
    if builtin_only or not any(ep.value.startswith(BUILTIN_MODULE) for ep in eps):
        from kueuediag_checks import builtin_checks

        for cls in builtin_checks():
            _admit(cls, "kueuediag", by_code, prefixes)
    _load_entry_points(eps, found, by_code, prefixes)
    found.classes = [by_code[c] for c in sorted(by_code)]
    return found


def _load_entry_points(eps: list[EntryPoint], found: Discovery, by_code: dict[str, type[Check]],
                       prefixes: dict[str, str]) -> None:
    """Load and admit each entry point's classes into `by_code`; a broken one goes to `found.errors`."""
    for ep in eps:
        dist = ep.dist.name if ep.dist is not None else ep.value.split(":")[0]
        try:
            classes = _expand(ep.load())
        except Exception as exc:  # a broken plugin must not hide the other checks
            found.errors.append(PluginError(ep.name, ep.value, f"failed to load: {type(exc).__name__}: {exc}"))
            continue
        admitted = dict(by_code)
        try:
            for cls in classes:
                _admit(cls, dist, admitted, prefixes)
        except ValueError as exc:
            found.errors.append(PluginError(ep.name, ep.value, str(exc)))
            continue
        by_code.clear()
        by_code.update(admitted)


def catalogue_row(cls: type[Check]) -> dict[str, Any]:
    """One check as `kueuediag checks` lists it (and as kueuediag/data/checks.json records the built-ins)."""
    doc = cls.doc()
    return {
        "code": cls.code, "name": cls.name, "family": cls.family(),
        "requires": [p.value for p in cls.requires], "needsWorkload": cls.needs_workload,
        "defaultSeverity": cls.default_severity.label,
        "summary": doc.get("summary", "").splitlines()[0] if doc.get("summary") else "",
        "causes": [c.slug for c in cls.causes],
    }


def catalogue_text(classes: list[type[Check]]) -> str:
    """The generated kueuediag/data/checks.json for these (built-in) classes."""
    return json.dumps([catalogue_row(cls) for cls in classes], indent=2, ensure_ascii=False) + "\n"


def describe_all() -> tuple[list[dict[str, Any]], list[PluginError]]:
    """Every check's catalogue row, ordered by code, and the plugins left out: what `kueuediag checks` lists.

    The built-ins come from kueuediag/data/checks.json, generated from their classes by
    `python -m kueuediag.docs` (a test fails when it is stale), so listing them imports none of the checks, the
    analyses or the result models: most of what made `kueuediag checks` slow to start. Plugins are loaded and
    admitted as for a diagnosis, against the same reserved prefix.
    """
    from kueuediag.pkgdata import package_data

    text = package_data(CATALOGUE).read_text(encoding="utf-8")
    rows: list[dict[str, Any]] = json.loads(text)
    plugins = [ep for ep in _declared_eps() if not ep.value.startswith(BUILTIN_MODULE)]
    found = Discovery()
    by_code: dict[str, type[Check]] = {}
    if plugins:
        from kueuediag.check import BUILTIN_PREFIX

        _load_entry_points(plugins, found, by_code, {BUILTIN_PREFIX: "kueuediag"})
    rows.extend(catalogue_row(cls) for cls in by_code.values())
    return sorted(rows, key=lambda r: str(r["code"])), found.errors


def discover() -> list[type[Check]]:
    """The checks that will run: built-ins and every plugin that loads (see `discover_all` for the rest)."""
    return discover_all().classes


def builtin() -> list[type[Check]]:
    """Only kueuediag's own checks: what its tests run, so an installed plugin cannot change their results."""
    return discover_all(builtin_only=True).classes
