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
    """`value` as JSON text ending in a newline: indented by two spaces, or compact on one line (`-o jsonl`)."""
    return dumps_text(value, indent=indent)[0]


def dumps_text(value: Any, *, indent: bool = True) -> tuple[str, bool]:
    """:func:`dumps`, and whether the text is known to be valid UTF-8: orjson wrote it (it refuses a lone surrogate,
    the one thing a str may hold that UTF-8 cannot carry), so a UTF-8 stream takes it without a trial encoding.
    Text :mod:`json` wrote (the fallback, which also takes the document orjson refused for a surrogate) is not."""
    try:
        data = orjson.dumps(value, default=to_json_value, option=orjson.OPT_INDENT_2 if indent else 0)
    except TypeError:  # an integer beyond 64 bits, a key that is not a string, a lone surrogate
        return json.dumps(_finite(value), indent=2 if indent else None, default=to_json_value,
                          ensure_ascii=False, separators=None if indent else (",", ":")) + "\n", False
    return data.decode() + "\n", True


def _finite(o: Any) -> Any:
    """`o` with NaN and the infinities as None, as orjson writes them."""
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {k: _finite(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_finite(v) for v in o]
    return o
