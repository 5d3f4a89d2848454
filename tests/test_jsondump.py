"""The JSON writer of machine output: orjson's speed, the standard library's layout."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal

from kueuediag.render.jsondump import dumps, to_json_value

DOC = {
    "schema": "kueuediag/why/v1",
    "verdict": {"cause": "waiting-for-quota", "confidence": 0.83, "layer": "kueue"},
    "text": "ünïcode — “quotes”, a \"quote\", a tab\t and a control \u0001",
    "empty": {"list": [], "dict": {}},
    "nested": [[1, 2.5, None, True, False], {"a": {"b": [{"c": "d"}]}}],
    "order": {"z": 1, "a": 2, "m": 3},
}


def test_layout_is_the_standard_librarys() -> None:
    assert dumps(DOC) == json.dumps(DOC, indent=2, ensure_ascii=False) + "\n"
    assert dumps(DOC, indent=False) == json.dumps(DOC, ensure_ascii=False, separators=(",", ":")) + "\n"
    assert "\n" not in dumps(DOC, indent=False).rstrip("\n")


def test_values_json_has_no_type_for() -> None:
    when = datetime(2026, 12, 1, 18, 0, 5, 250000, tzinfo=UTC)
    doc = {"whole": Decimal("8"), "part": Decimal("0.5"), "set": {"x"}, "tuple": ("a", "b"), "when": when}
    assert json.loads(dumps(doc)) == {"whole": 8, "part": 0.5, "set": ["x"], "tuple": ["a", "b"],
                                      "when": "2026-12-01T18:00:05.250000+00:00"}
    assert to_json_value(Decimal("3.000")) == 3 and isinstance(to_json_value(Decimal("3.000")), int)


def test_non_finite_floats_are_null_on_both_paths() -> None:
    doc = {"nan": float("nan"), "inf": [float("inf"), -float("inf")], "big": 2**70}
    # the integer beyond 64 bits sends the document through the standard library: still valid JSON
    out = dumps(doc)
    assert json.loads(out) == {"nan": None, "inf": [None, None], "big": 2**70}
    assert "NaN" not in out and "Infinity" not in out
    assert json.loads(dumps({"nan": float("nan")})) == {"nan": None}


def test_exponent_floats_read_back_as_the_same_number() -> None:
    doc = {"small": 1e-05, "large": 1e16, "ratio": 0.1 + 0.2}
    assert json.loads(dumps(doc)) == doc
