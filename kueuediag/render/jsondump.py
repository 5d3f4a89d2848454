"""The one JSON writer of kueuediag's machine output (`why -o json`, `health -o json`, `-o jsonl`).

orjson writes a `health -A -o json` report (every head carries a whole `why` document) several times faster than
:mod:`json`, in the same layout: two-space indentation, ``": "`` after keys, keys in insertion order, UTF-8 text
unescaped. Two differences, both within JSON: NaN and the infinities (which JSON has no spelling for, and which
:mod:`json` wrote as the invalid ``NaN``) are written ``null``, and a float with an exponent is spelled the
shortest way (``1e-5``, not ``1e-05``): the same number to every JSON reader. An integer beyond 64 bits or a
key that is not a string, which orjson refuses, sends the document through :mod:`json` (non-finite floats
still as ``null``).

Values JSON has no type for (Decimal quantities, sets, datetimes) are written as :func:`to_json_value` says.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

import orjson


def to_json_value(o: Any) -> Any:
    """What a value JSON has no type for is written as: a whole Decimal as an int, another as a float, a set or
    tuple as a list, a datetime as its ISO 8601 text, anything else as its text."""
    if isinstance(o, Decimal):
        return int(o) if o == o.to_integral_value() else float(o)
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    if hasattr(o, "isoformat"):
        return o.isoformat()
    return str(o)


def dumps(value: Any, *, indent: bool = True) -> str:
    """`value` as JSON text ending in a newline: indented by two spaces, or compact on one line."""
    data = _orjson(value, orjson.OPT_INDENT_2 if indent else 0)
    return data.decode() + "\n" if data is not None else _json_text(value, indent=indent)


def dumps_line(value: Any) -> bytes | str:
    """`value` compact on one line with its newline (`-o jsonl`): the UTF-8 bytes orjson wrote, as they are, or,
    where orjson refused the value, the text :mod:`json` wrote, which may hold a lone surrogate and so is left to
    the caller to encode as its stream can carry it. A fleet scan writes a ~25 KB `why` document per pending
    workload: decoding it only for stdout (and a worker's file, and the main process reading that file back) to
    encode it again cost ~0.15 ms a workload with worker processes, ~0.04 ms without."""
    data = _orjson(value, orjson.OPT_APPEND_NEWLINE)
    return data if data is not None else _json_text(value, indent=False)


def _orjson(value: Any, option: int) -> bytes | None:
    """orjson's bytes, or None for what it refuses: an integer beyond 64 bits, a key that is not a string, a lone
    surrogate."""
    try:
        return orjson.dumps(value, default=to_json_value, option=option)
    except TypeError:
        return None


def _json_text(value: Any, *, indent: bool) -> str:
    """The fallback writer: :mod:`json` in orjson's layout, non-finite floats as None as orjson writes them."""
    return json.dumps(_finite(value), indent=2 if indent else None, default=to_json_value,
                      ensure_ascii=False, separators=None if indent else (",", ":")) + "\n"


def _finite(o: Any) -> Any:
    """`o` with NaN and the infinities as None, as orjson writes them."""
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {k: _finite(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_finite(v) for v in o]
    return o
