"""The controller log's analyses handed back by a child (`kueuediag.health.log_side`) equal the ones parsed here.

`health` parses and scans the log in a forked child and installs the lines, the signature hits and their index
by name that the child sends in a compact form. A head's findings read those lines' every field (times, texts,
what they name, where they sit in the file): so the rebuilt lines must equal the parsed ones field for field, the
hits must hold the rebuilt lines themselves, and anything the hand-over cannot carry must leave the memo alone
(the analyses are then worked out here as before).
"""

from __future__ import annotations

import json
import pickle
import shutil
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kueuediag.analysis.signatures import hits_concerning_index, signature_hits
from kueuediag.cli import build_app
from kueuediag.health import log_side
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.snapshot.logs import LogLine, log_lines, parse_log_line
from kueuediag.snapshot.model import Snapshot

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "snapshots"
WITH_LOGS = sorted(d.name for d in FIXTURES.iterdir() if (d / "logs").is_dir())

MIXED_LOG = "\n".join([
    '{"level":"info","ts":"2026-11-30T10:00:00.5Z","logger":"scheduler","msg":"Workload evaluated for admission",'
    '"workload":{"name":"w1","namespace":"ns"},"clusterQueue":{"name":"cq"},"status":"","reason":"no quota"}',
    '{"level":"Level(-3)","ts":1764496800.25,"logger":"scheduler","msg":"Attempting to schedule workload",'
    '"workload":"ns/w2","schedulingCycle":7}',
    '{"level":"info","ts":"2026-11-30T12:00:00+02:00","logger":"x","msg":"an offset time"}',
    "2026-11-30T10:00:01.000Z\tINFO\tcontroller.workload\tworkload/controller.go:1\tWorkload create event\t"
    '{"workload": {"name": "w3", "namespace": "ns"}}',
    'I1130 10:00:02.000000       1 leaderelection.go:250] attempting to acquire leader lease kueue-system/lease',
    "2026-11-30T10:00:03.000000000Z plain text naming w1 after a kubectl timestamp",
    '{"level":"error","ts":"2026-11-30T10:00:04Z","msg":"Reconciler error","error":"boom","stacktrace":"a\\nb"}',
    "{not json at all}",
    "",
])


def _reference(path: Path) -> tuple[Snapshot, list[Any], list[Any], Any]:
    """A fresh snapshot's lines, hits and index, worked out here in the order the child works them out."""
    snap = load_snapshot(str(path))
    lines = log_lines(snap)
    hits = signature_hits(snap)
    return snap, lines, hits, hits_concerning_index(snap)


def _assert_installed_equal(path: Path, sent: log_side.Handover | None) -> None:
    _, lines, hits, index = _reference(path)
    snap = load_snapshot(str(path))
    assert log_side.install(snap, sent) is True
    got = log_lines(snap)
    assert got == lines  # every field, what each line names included
    assert [ln.raw for ln in got] == [ln.raw for ln in lines]
    assert all(ln.text is snap.logs_text[ln.file] for ln in got)  # read back from this process's own texts
    got_hits = signature_hits(snap)
    assert [(h.signature, h.key, h.lines) for h in got_hits] == [(h.signature, h.key, h.lines) for h in hits]
    ids = {id(ln) for ln in got}
    assert all(id(ln) in ids for h in got_hits for ln in h.lines)  # the installed lines themselves, not copies
    assert hits_concerning_index(snap) == index


def _with_log(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "snap"
    shutil.copytree(FIXTURES / "release-denied", path)
    (path / "logs" / "mixed.log").write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("fixture", WITH_LOGS)
def test_handed_over_lines_and_hits_equal_the_parsed_ones(fixture: str) -> None:
    path = FIXTURES / fixture
    sent = log_side.handover(load_snapshot(str(path)))
    assert sent is not None
    _assert_installed_equal(path, pickle.loads(pickle.dumps(sent, protocol=pickle.HIGHEST_PROTOCOL)))


def test_every_line_format_and_time_survives_the_hand_over(tmp_path: Path) -> None:
    path = _with_log(tmp_path, MIXED_LOG)
    snap = load_snapshot(str(path))
    formats = {ln.format for ln in log_lines(snap)}
    assert {"json", "console", "klog", "text"} <= formats
    assert any(ln.ts is not None and ln.ts.tzinfo is not UTC for ln in log_lines(snap))  # sent as it is
    assert any(ln.ts is None for ln in log_lines(snap))
    sent = log_side.handover(load_snapshot(str(path)))
    _assert_installed_equal(path, pickle.loads(pickle.dumps(sent)))


def test_the_benchmark_log_is_handed_over_by_a_forked_child(bench_dir: Path) -> None:
    child = log_side.start(load_snapshot(str(bench_dir)))
    assert child is not None
    with child:
        sent = child.result()
    _assert_installed_equal(bench_dir, sent)


def test_nothing_is_installed_over_what_was_worked_out_here(tmp_path: Path) -> None:
    path = _with_log(tmp_path, MIXED_LOG)
    sent = log_side.handover(load_snapshot(str(path)))
    snap = load_snapshot(str(path))
    mine = log_lines(snap)
    assert log_side.install(snap, sent) is False
    assert log_lines(snap) is mine
    assert signature_hits(snap)[0].lines[0] in mine  # scanned here, over this process's lines


def test_an_unusable_reply_installs_nothing(tmp_path: Path) -> None:
    path = _with_log(tmp_path, MIXED_LOG)
    sent = log_side.handover(load_snapshot(str(path)))
    assert sent is not None
    columns, hits, index = sent
    unknown = (columns, [("no-such-signature", "k", [0]), *hits], index)
    other_files = ([["logs/other.log"] * len(columns[0]), *columns[1:]], hits, index)
    for reply in (None, unknown, other_files):
        snap = load_snapshot(str(path))
        assert log_side.install(snap, reply) is False
        assert not snap.has_memo("log-lines")
        assert not snap.has_memo("log-signature-hits")
        assert len(log_lines(snap)) == len(columns[0])  # worked out here instead


def test_lines_are_rebuilt_with_every_field_in_its_place() -> None:
    assert LogLine.__struct_fields__ == log_side.FIELDS


def test_a_line_that_is_not_a_slice_of_its_file_is_not_handed_over(tmp_path: Path) -> None:
    snap = load_snapshot(str(_with_log(tmp_path, MIXED_LOG)))
    snap.memo("log-lines", lambda: [parse_log_line("logs/mixed.log", 1, '{"msg":"a line of its own"}')])
    assert log_side.handover(snap) is None


def _without_timings(value: Any) -> Any:
    """A JSON document without its timings (`timingsMs`, each check run's `durationMs`)."""
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k not in ("timingsMs", "durationMs")}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


@pytest.mark.parametrize("fixture", WITH_LOGS)
def test_the_json_report_is_the_same_with_the_log_child(fixture: str) -> None:
    """`-o json` keeps every verdict (no workers): with `--jobs 2` only the log child runs beside it."""
    def report(jobs: str) -> tuple[int, dict[str, Any]]:
        result = CliRunner().invoke(build_app(), ["health", "--from", str(FIXTURES / fixture), "-A", "--all-pending",
                                                  "-o", "json", "--jobs", jobs])
        return result.exit_code, _without_timings(json.loads(result.stdout))

    serial = report("1")
    assert serial[1]["clusterQueues"]
    assert report("2") == serial
