"""The fast ways of reading a log line agree with the general one, on ordinary and odd lines alike.

A JSON line is parsed by decoding its head alone with msgspec (the keys a LogLine keeps, the rest skipped in C),
and a field is read one key at a time the same way, where the general path parses the whole line with orjson
(falling back to :mod:`json`): on any line, the two must give the same LogLine and the same values, and `scan`
must give the same hits as matching every line against every signature through the general path.
"""

from __future__ import annotations

import json
import random
import re
from collections import defaultdict
from typing import Any

import pytest

from kueuediag.analysis.signatures import SIGNATURES, Signature, scan
from kueuediag.snapshot import logs
from kueuediag.snapshot.logs import (
    LogLine,
    _as_text,
    _json_bare,
    _json_field,
    _json_fields,
    _json_has,
    parse_log_line,
    parse_log_text,
)

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
    # the other spellings of the core keys, levels, times and references
    '{"L":"DPANIC","T":"2026-01-01T02:00:00+02:00","N":"workload-reconciler","C":"core/workload.go:9","M":"Reconcile",'
    '"name":"job-d","namespace":"team-2"}',
    '{"level":"Level(-5)","ts":"2026-01-01T00:00:00.999999999Z","logger":"cluster-queue-reconciler","msg":"q",'
    '"name":"cq-1"}',
    '{"level":"warning","ts":1764547200.123456789,"logger":"workload-reconciler","msg":"w","name":7}',
    '{"level":"info","ts":"2026-01-01 00:00:00","msg":"Workload re-queued","Workload":{"name":"job-e","namespace":'
    '"team-3","uid":"u","extra":{"deep":[1,{"name":2}]}},"preemptingWorkload":{"name":"job-f","namespace":"team-3"}'
    ',"targetWorkload":"team-4/job-g","cluster-queue":{"name":"cq-2"},"targetClusterQueue":"cq-3","cq":"cq-2"}',
    '{"level":"info","logger":"events","msg":"Normal QuotaReserved","object":{"kind":"Workload","name":"job-h",'
    '"namespace":"team-5","apiVersion":"kueue.x-k8s.io/v1beta1"},"involvedObject":{"kind":"Pod","name":"p"},'
    '"regarding":{"kind":"Workload","name":null}}',
    '{"level":"info","msg":"refs of odd shapes","workload":{"name":5},"clusterQueue":["cq"],"wl":true}',
    '{"level":"info","msg":"null refs","workload":null,"clusterQueue":null,"ClusterQueue":{"name":""},"object":"x"}',
    '{"level":"info","msg":"dup","workload":{"name":"a"},"workload":{"name":"b","name":"c"},"msg":"dup again"}',
    '{"level":"error","msg":"failed","error":"boom","stacktrace":"main.go:1\\nmain.go:2","errorVerbose":"x"}',
    '{"level":"info","msg":"\\u00e9t\\u00e9 \\ud83d\\ude00","logger":"\\u0073cheduler","caller":""}',
    '{"level":"info","msg":"raw surrogates \udcff (a file read with surrogateescape)","workload":"w"}',
    '{"level":"info","ts":"garbage","msg":"","error":"","stacktrace":null}',
    '{"level":"info"}',
    "{}",
    '{"level":"info","msg":"only core keys","ts":"2026-01-01T00:00:00Z","logger":"l","caller":"c","error":"e",'
    '"stacktrace":"s","L":"x","M":"y","T":1,"N":"n","C":"c"}',
    '{"msg":"only a message","T":1e999}',
    '{"ts":"2026-01-01T00:00:00Z","ts":17e8,"level":"info","msg":"dup ts"}',
    '2026-01-01T00:00:00.5Z {"level":"info","msg":"no time of its own"}',
    '2026-01-01T00:00:00.5Z  {"level":"info","ts":"garbage","msg":"bad own time, the prefix\'s"}',
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
        assert _json_has(raw, key) == (key in general), key


def test_field_text_and_has_field_answer_as_the_general_fields() -> None:
    for i, raw in enumerate(CORPUS):
        if not raw.strip():
            continue
        line = parse_log_line("f", i, raw)
        for key in KEYS:
            assert line.field_text(key) == ("" if key not in line.fields else _as_text(line.fields[key])), (i, key)
            assert line.has_field(key) == (key in line.fields), (i, key)


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


def _general(monkeypatch: pytest.MonkeyPatch, text: str) -> list[LogLine]:
    """`text` parsed with every JSON line read the general way (orjson, then json)."""
    with monkeypatch.context() as m:
        m.setattr(logs, "_read_head", lambda body: None)
        return parse_log_text("f", text, 2026)


def test_the_head_holds_the_core_keys_then_the_keys_that_name_objects() -> None:
    assert set(logs._HEAD_KEYS[:logs._REFS_AT]) == logs._CORE_KEYS
    assert logs._HEAD_REF_KEYS == (*logs._WORKLOAD_KEYS, *logs._EVENT_OBJECT_KEYS, *logs._CQ_KEYS, "name",
                                   "namespace")


def test_a_line_read_by_its_head_is_the_line_read_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "\n".join(CORPUS)
    fast = parse_log_text("f", text, 2026)
    general = _general(monkeypatch, text)
    assert len(fast) == len(general)
    for a, b in zip(fast, general, strict=True):
        assert a == b, a.lineno  # every field, what the line names included
        assert (a.workloads, a.cluster_queues, a.bare, a.structured(), a.raw) == \
            (b.workloads, b.cluster_queues, b.bare, b.structured(), b.raw), a.lineno
        assert _same(a.fields, b.fields), a.lineno
        if a.format == "json":
            assert _json_bare(a.raw) == (not _json_fields(a.raw)), a.lineno
    assert [ln.lineno for ln in fast if ln.bare] == [39, *range(41, 49)]
    by_head = {i for i, raw in enumerate(CORPUS, 1) if raw.startswith("{") and logs._read_head(raw) is not None}
    assert {1, 5, 7, 10, 30, 33, 34, 35, 37, 46} <= by_head  # ordinary lines, all spellings, odd references
    assert not {6, 9, 15, 18, 45} & by_head  # odd core values, NaN, 1e999 and deep nesting do not
    by_lineno = {ln.lineno: ln for ln in fast}
    assert (by_lineno[33].workloads, by_lineno[33].cluster_queues) == (
        (("team-3", "job-e"), ("team-3", "job-f"), ("team-4", "job-g")), ("cq-2", "cq-3"))
    assert by_lineno[34].workloads == (("team-5", "job-h"),)
    assert by_lineno[30].workloads == (("team-2", "job-d"),) and by_lineno[31].cluster_queues == ("cq-1",)
    assert (by_lineno[30].severity, by_lineno[30].logger, by_lineno[30].msg) == ("dpanic", "workload-reconciler",
                                                                                 "Reconcile")


def test_what_lines_name_is_the_same_when_the_per_file_tables_are_full(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "\n".join(CORPUS * 3)
    roomy = parse_log_text("f", text, 2026)
    monkeypatch.setattr(logs._PerFile, "_MAX", 2)
    assert parse_log_text("f", text, 2026) == roomy


def test_a_full_per_file_table_keeps_what_it_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    """A log names the same objects round after round (each scheduling cycle names the pending heads again): with
    more distinct references than the table holds, the ones it holds still answer, rather than every line missing
    after the table is emptied and refilled in the same order."""
    names, rounds, room = 6, 5, 4
    text = "\n".join(
        f'{{"level":"Level(-3)","ts":"2026-11-20T06:{r:02d}:{i:02d}Z","logger":"scheduler",'
        f'"caller":"scheduler/logging.go:40","msg":"Workload evaluated for admission",'
        f'"workload":{{"name":"job-{i}","namespace":"team"}},"clusterQueue":{{"name":"cq"}},"status":"",'
        f'"reason":"waiting"}}'
        for r in range(rounds) for i in range(names))
    roomy = parse_log_text("f", text, 2026)
    assert [ln.workloads for ln in roomy[:names]] == [(("team", f"job-{i}"),) for i in range(names)]
    read = logs._workload_refs
    calls: list[str] = []

    def counted(fields: Any, logger: str) -> Any:
        calls.append(logger)
        return read(fields, logger)

    monkeypatch.setattr(logs, "_workload_refs", counted)
    monkeypatch.setattr(logs._PerFile, "_MAX", room)
    assert parse_log_text("f", text, 2026) == roomy
    assert len(calls) == room + (names - room) * rounds  # the 4 held once each, the other 2 on every round


def test_scan_gives_the_same_hits_over_lines_read_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "\n".join(CORPUS)

    def hits(lines: list[LogLine]) -> list[tuple[str, str, list[int]]]:
        return [(h.signature.id, h.key, [ln.lineno for ln in h.lines]) for h in scan(lines)]

    fast = hits(parse_log_text("f", text, 2026))
    assert fast == hits(_general(monkeypatch, text))
    assert ("requeue-loop", "team-3/job-e", [33]) in fast


_PIECES = ('"', "\\", "\\u00", "\\ud800", "{", "}", "[", "]", ",", ":", "null", "true", "1e999", "-0", "1.5", '"level"',
           '"L"', '"ts"', '"T"', '"msg"', '"M"', '"workload"', '"name"', '"namespace"', '"logger"', '"cluster-queue"',
           '"kind"', '"Workload"', "\t", " ", "\u2028", "\x85", "\xa0", "\x1c", "é", "\U0001f600", "\udcff",
           '"requeueReason"', "123456789012345678901234567890", '{"name":"x","namespace":"y"}',
           '"workload-reconciler"', '"cluster-queue-x"', "2026-01-01T00:00:00Z ", "NaN")


def _mutated(rng: random.Random, line: str) -> str:
    for _ in range(rng.randint(1, 2)):
        op, i = rng.random(), rng.randint(0, len(line))
        if op < 0.4:
            line = line[:i] + rng.choice(_PIECES) + line[i:]
        elif op < 0.7:
            line = line[:i] + line[i + rng.randint(1, 8):]
        elif op < 0.85:
            a, b = sorted((rng.randint(0, len(line)), rng.randint(0, len(line))))
            line = line + line[a:b]
        else:
            line = line[:i]
    return line.replace("\n", "")


def test_mutated_lines_read_the_same_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seeded mutations of the corpus (inserted quotes, escapes, brackets, core and reference keys, odd blanks,
    cuts and repeats): every line, every field, every one-key read agrees between the fast and general ways."""
    rng = random.Random(11)
    seeds = [raw for raw in CORPUS if raw.strip()]
    text = "\n".join(_mutated(rng, rng.choice(seeds)) for _ in range(1500))
    fast = parse_log_text("f", text, 2026)
    general = _general(monkeypatch, text)
    assert len(fast) == len(general)
    read_fast = 0
    for a, b in zip(fast, general, strict=True):
        assert a == b and (a.workloads, a.cluster_queues, a.bare) == (b.workloads, b.cluster_queues, b.bare), a.raw
        if a.format == "json":
            whole = _json_fields(a.raw)
            for key in KEYS:
                assert _same(_json_field(a.raw, key), whole.get(key)) and a.has_field(key) == (key in whole), a.raw
                assert _json_has(a.raw, key) == (key in whole), a.raw
            read_fast += logs._read_head(a.raw.strip()) is not None
    assert read_fast > 100  # the fast way is exercised, not only the fallback
