"""A small path language over Kubernetes objects, for data tables that describe what an object shows.

Paths are dotted keys with three list/map forms, so a YAML table can say "any condition of type X" or "any
annotation named with dots and slashes" without code:

* ``status.conditions[type=QuotaReserved].message`` — the elements of a list whose ``type`` is ``QuotaReserved``;
* ``spec.podSets[].count`` — every element of a list;
* ``metadata.annotations["kueue.x-k8s.io/podset-slice-size"]`` — a key that contains dots or slashes;
* ``status.consumedResources.*`` — every value of a map.

:func:`resolve` returns every value a path reaches (none when a step is missing); :func:`holds` applies one
predicate (``exists``, ``eq``, ``ne``, ``regex``, ``gt``, ``all_eq``, ``len_gt``) to those values.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

_TOKEN = re.compile(r"""\.?(?:\["(?P<quoted>[^"]+)"\]|\[(?P<filter>[^\]]*)\]|(?P<key>[A-Za-z0-9_*-]+))""")

PREDICATES = ("exists", "eq", "ne", "regex", "gt", "all_eq", "len_gt")


def tokens(path: str) -> list[tuple[str, str]]:
    """``a.b[]["x/y"]`` → [("key", "a"), ("key", "b"), ("filter", ""), ("key", "x/y")]; ValueError on junk."""
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(path):
        m = _TOKEN.match(path, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"bad object path {path!r} at {pos}")
        if m.group("quoted") is not None:
            out.append(("key", m.group("quoted")))
        elif m.group("filter") is not None:
            out.append(("filter", m.group("filter")))
        else:
            out.append(("key", m.group("key")))
        pos = m.end()
    return out


def resolve(obj: Any, path: str) -> list[Any]:
    """Every value `path` reaches in `obj` (lists are walked only where the path says ``[]`` / ``[k=v]``)."""
    current: list[Any] = [obj]
    for kind, value in tokens(path):
        nxt: list[Any] = []
        for item in current:
            if kind == "key" and value == "*":
                if isinstance(item, dict):
                    nxt.extend(item.values())
            elif kind == "key":
                if isinstance(item, dict) and value in item:
                    nxt.append(item[value])
            elif isinstance(item, list):
                if not value:
                    nxt.extend(item)
                else:
                    k, _, v = value.partition("=")
                    nxt.extend(e for e in item if isinstance(e, dict) and str(e.get(k)) == v)
        current = nxt
    return current


def _number(value: Any) -> Decimal | None:
    try:
        return Decimal(str(value))
    except (InvalidOperation, ValueError):
        return None


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def holds(obj: Any, path: str, predicate: dict[str, Any]) -> bool:
    """Whether `predicate` (one or more of :data:`PREDICATES`, all must hold) is true of `path` in `obj`."""
    values = resolve(obj, path)
    for op, want in predicate.items():
        if op == "exists":
            ok = bool(values) == bool(want)
        elif op == "eq":
            ok = any(_text(v) == _text(want) for v in values)
        elif op == "ne":
            ok = bool(values) and all(_text(v) != _text(want) for v in values)
        elif op == "regex":
            ok = any(re.search(str(want), _text(v)) for v in values if not isinstance(v, (dict, list)))
        elif op == "gt":
            nums = [n for n in (_number(v) for v in values) if n is not None]
            ok = any(n > Decimal(str(want)) for n in nums)
        elif op == "all_eq":
            ok = bool(values) and all(_text(v) == _text(want) for v in values)
        elif op == "len_gt":
            ok = any(isinstance(v, (list, dict)) and len(v) > int(want) for v in values)
        else:
            raise ValueError(f"unknown predicate {op!r} (known: {', '.join(PREDICATES)})")
        if not ok:
            return False
    return True


def first_text(obj: Any, path: str) -> str | None:
    """The first scalar `path` reaches, as text (for evidence lines)."""
    for v in resolve(obj, path):
        if not isinstance(v, (dict, list)):
            return _text(v)
    return None
