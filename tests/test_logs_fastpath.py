"""The fast ways of reading a log line agree with the general one, on ordinary and odd lines alike.

A JSON line's fields are read one key at a time with msgspec (the rest skipped in C) where the general path
parses the whole line with orjson (falling back to :mod:`json`): on any line, the two must give the same values,
and `scan` must give the same hits as matching every line against every signature through the general path.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict

import pytest

from kueuediag.analysis.signatures import SIGNATURES, Signature, scan
from kueuediag.snapshot.logs import LogLine, _as_text, _json_field, _json_fields, parse_log_line, parse_log_text

_WL = '"workload":{"name":"job-a","namespace":"team-1"}'
_RQ = '{"level":"Level(-2)","ts":"2026-01-01T00:00:0Z","msg":"Workload re-queued",' + _WL

CORPUS: tuple[str, ...] = (
    # ordinary zap JSON, with and without the fields the signatures read
    _RQ.replace("0Z", "1Z") + ',"requeueReason":"PendingPreemption","clusterQueue":{"name":"cq"}}',
    _RQ.replace("0Z", "2Z") + ',"requeueReason":"NoFit"}',
    _RQ.replace("0Z", "3Z") + ',"requeueReason":""}',
    _RQ.replace("0Z", "4Z") + "}",
    '{"level":"Level(-3)","ts":"2026-01-01T00:00:05.123456789Z","logger":"scheduler","msg":"Workload evaluated for '
    'admission",' + _WL + ',"status":"skipped","reason":"Workload has overlapping preemption targets"}',
    # odd types: level as a number, ts as float / int / garbage, refs as strings, msg missing, nested refs
    '{"level":2,"ts":1764547200.25,"msg":"Workload re-queued","workload":"team-1/job-a","requeueReason":5}',
    '{"L":"info","T":1764547200,"M":"Workload re-queued","wl":"job-b","requeueReason":["PendingPreemption"]}',
    '{"level":"info","ts":"yesterday","workload":{"name":"job-c"},"requeueReason":{"name":"x","namespace":"y"}}',
    '{"level":null,"ts":null,"msg":null,"error":{"code":1},"requeueReason":null}',
    '{"level":"error","msg":"Reconciler error","error":"Internal error occurred: failed calling webhook '
    '\\"mworkload.kb.io\\": context deadline exceeded","object":{"kind":"Workload","name":"w","namespace":"n"}}',
    # unicode escapes, duplicated keys, numbers the parsers disagree on, escapes only json accepts
    '{"level":"info","msg":"Workload re-queued","requeueReason":"Pending\\u0050reemption","x":"\\u00e9\\u2028"}',
    '{"level":"info","msg":"Workload re-queued","requeueReason":"NoFit","requeueReason":"PendingPreemption"}',
    '{"level":"info","msg":"Workload re-queued","requeueReason":123456789012345678901234567890}',
    '{"level":"info","msg":"Workload re-queued","requeueReason":1e999,"big":-1e999}',
    '{"level":"info","msg":"Workload re-queued","requeueReason":NaN}',
    '{"level":"info","msg":"Workload re-queued","requeueReason":"\\ud800 lone"}',
    '{"level":"info","msg":"Workload re-queued","x":"\\ud83d","requeueReason":"PendingPreemption"}',
    # deep nesting (beyond every parser's limit, and just below some), a kubectl --timestamps prefix
    '{"level":"info","msg":"Workload re-queued","deep":' + "[" * 3000 + "]" * 3000 + ',"requeueReason":"NoFit"}',
    '{"level":"info","msg":"Workload re-queued","deep":' + "[" * 900 + "]" * 900 + ',"requeueReason":"NoFit"}',
    '{"level":"info","msg":"Workload re-queued","deep":' + "[" * 150 + "]" * 150 + ',"requeueReason":"NoFit"}',
    '2026-01-01T00:00:00.5Z {"level":"info","msg":"Workload re-queued","requeueReason":"PendingPreemption"}',
    # not JSON objects, truncated, trailing junk, other encoders
    '["level","info"]',
    '{"level":"info","msg":"Workload re-queued","requeueReason":"NoFi',
    '{"level":"info","msg":"Workload re-queued","requeueReason":"NoFit"} trailing',
    '{"level":"info","msg":"Workload re-queued",,"requeueReason":"NoFit"}',
    '2026-01-01T00:00:00Z\tLEVEL(-2)\tscheduler\tscheduler.go:1\tWorkload re-queued\t{"requeueReason":"NoFit"}',
    "E0101 00:00:00.000000       1 leaderelection.go:1] failed to renew lease kueue-system/x: timed out",
    "panic: runtime error: invalid memory address",
    "   ",
)

KEYS = ("requeueReason", "workload", "wl", "error", "level", "msg", "big", "x", "deep", "missing", "cluster-queue")


def _same(a: object, b: object) -> bool:
    """Equal, NaN included (the general path's `json` fallback reads NaN)."""
    return json.dumps(a, sort_keys=True, default=repr) == json.dumps(b, sort_keys=True, default=repr)


@pytest.mark.parametrize("raw", CORPUS, ids=range(len(CORPUS)))
def test_one_key_is_read_as_the_whole_line_reads_it(raw: str) -> None:
    general = _json_fields(raw)
    for key in KEYS:
        assert _same(_json_field(raw, key), general.get(key)), key


def test_field_text_is_the_general_fields_value_as_text() -> None:
    for i, raw in enumerate(CORPUS):
        if not raw.strip():
            continue
        line = parse_log_line("f", i, raw)
        for key in KEYS:
            assert line.field_text(key) == ("" if key not in line.fields else _as_text(line.fields[key])), (i, key)


def _general_match(sig: Signature, line: LogLine) -> bool:
    """A signature matched through the general path: every field read from the whole parsed line."""
    if sig.msg is not None and re.search(sig.msg, line.msg) is None:
        return False
    for key, pattern in sig.fields:
        value = line.error if key == "error" else _as_text(line.fields.get(key))
        if re.search(pattern, value) is None:
            return False
    return sig.text is None or re.search(sig.text, line.raw) is not None


def test_scan_finds_what_matching_every_line_through_the_general_path_finds() -> None:
    lines = parse_log_text("f", "\n".join(CORPUS))
    lines += [parse_log_line("single", i, raw) for i, raw in enumerate(CORPUS) if raw.strip()]  # one text each
    expected: dict[tuple[str, str], list[int]] = defaultdict(list)
    for line in lines:
        for sig in SIGNATURES:
            if _general_match(sig, line):
                expected[(sig.id, sig.group_key(line))].append(id(line))
    got = {(h.signature.id, h.key): [id(ln) for ln in h.lines] for h in scan(lines)}
    assert got == dict(expected)
    assert {sid for sid, _ in got} >= {"requeue-loop-pending-preemption", "requeue-loop", "webhook-error",
                                       "api-timeout", "leader-election-lost", "panic", "evaluated-for-admission"}


def test_depth_limits_do_not_decide_differently() -> None:
    """msgspec and json stop at the interpreter's recursion limit, orjson at 1024 levels: with the limit raised,
    some depth is one msgspec reads and the general path refuses (orjson too deep, json out of stack). The general
    path is called one frame deep, as `_json_field` calls it (how deep json may go depends on the stack)."""
    import inspect
    import sys

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack(0)) + 1100)
    try:
        for depth in range(1000, 1100):
            raw = '{"deep":' + "[" * depth + "]" * depth + ',"requeueReason":"NoFit"}'
            general = (lambda text: _json_fields(text))(raw).get("requeueReason")  # noqa: PLW0108
            assert _same(_json_field(raw, "requeueReason"), general), depth
    finally:
        sys.setrecursionlimit(old)
