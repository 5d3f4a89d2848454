"""The controller-log parser: zap JSON, zap console, klog, plain text; log-level inference."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kueuediag.snapshot.loader import load_snapshot
from kueuediag.snapshot.logs import (
    cluster_queue_log_lines,
    flag_value,
    log_level_info,
    log_lines,
    parse_level,
    parse_log_line,
    parse_log_text,
    parse_ts,
    workload_log_lines,
    zap_level_value,
)

# The real line from upstream issue #8064 (Kueue v0.13.10), kueue-facts §10.
REAL = (
    '{"level":"Level(-2)","ts":"2025-12-03T20:18:40.916670248Z","logger":"scheduler",'
    '"caller":"scheduler/scheduler.go:763","msg":"Workload re-queued","schedulingCycle":245469,'
    '"workload":{"name":"job-xc-b200-a204b","namespace":"mltraining-dev"},"clusterQueue":{"name":"research-modeling"},'
    '"queue":{"name":"research-modeling","namespace":"mltraining-dev"},"requeueReason":"","added":true,"status":""}'
)


def test_real_zap_json_line() -> None:
    ln = parse_log_line("logs/kueue.log", 7, REAL)
    assert ln.format == "json"
    assert ln.verbosity == 2 and ln.level == "Level(-2)" and ln.severity == "debug"
    assert ln.ts == datetime(2025, 12, 3, 20, 18, 40, 916670, tzinfo=UTC)
    assert (ln.logger, ln.caller, ln.msg) == ("scheduler", "scheduler/scheduler.go:763", "Workload re-queued")
    assert ln.workload == ("mltraining-dev", "job-xc-b200-a204b")
    assert ln.cluster_queue == "research-modeling"
    assert ln.fields["schedulingCycle"] == 245469
    assert ln.field_text("queue") == "mltraining-dev/research-modeling"
    assert ln.field_text("requeueReason") == ""
    assert ln.location == "logs/kueue.log:7"
    assert ln.names_workload("mltraining-dev", "job-xc-b200-a204b")
    assert not ln.names_workload("other-ns", "job-xc-b200-a204b")
    assert not ln.names_workload("mltraining-dev", "job-xc-b200")  # no substring matches on structured refs


@pytest.mark.parametrize(("level", "verbosity", "severity"), [
    ("info", 0, "info"), ("debug", 1, "debug"), ("Level(-2)", 2, "debug"), ("Level(-3)", 3, "debug"),
    ("LEVEL(-5)", 5, "debug"), ("error", 0, "error"), ("ERROR", 0, "error"), ("warn", 0, "warn"),
    ("DPANIC", 0, "dpanic"), ("bogus", None, "bogus"),
])
def test_levels(level: str, verbosity: int | None, severity: str) -> None:
    assert parse_level(level) == (verbosity, severity)


def test_epoch_ts_error_and_stacktrace() -> None:
    ln = parse_log_line("f", 1, '{"level":"error","ts":1733257120.5,"logger":"setup","msg":"Could not run manager",'
                                '"error":"leader election lost","stacktrace":"main.main\\n\\t/x.go:1"}')
    assert ln.ts == datetime(2024, 12, 3, 20, 18, 40, 500000, tzinfo=UTC)
    assert ln.is_error and ln.error == "leader election lost" and ln.stacktrace.startswith("main.main")
    assert "error" not in ln.fields and "stacktrace" not in ln.fields


def test_console_format_with_and_without_logger() -> None:
    full = parse_log_line("f", 3, '2026-01-02T03:04:05.123Z\tLEVEL(-3)\tscheduler\tscheduler/logging.go:40\t'
                                  'Workload evaluated for admission\t{"workload": {"name": "w1", "namespace": "ns"}, '
                                  '"status": "skipped", "reason": "Workload no longer fits after processing another '
                                  'workload"}')
    assert full.format == "console"
    assert full.verbosity == 3 and full.logger == "scheduler" and full.caller == "scheduler/logging.go:40"
    assert full.msg == "Workload evaluated for admission"
    assert full.workload == ("ns", "w1") and full.field_text("status") == "skipped"
    assert full.ts == datetime(2026, 1, 2, 3, 4, 5, 123000, tzinfo=UTC)
    no_logger = parse_log_line("f", 4, "2026-01-02T03:04:06.000Z\tINFO\tkueue/main.go:412\tStarting manager")
    assert (no_logger.logger, no_logger.caller, no_logger.msg) == ("", "kueue/main.go:412", "Starting manager")
    epoch = parse_log_line("f", 6, "1.7640e+09\tDEBUG\tevents\tStarted")
    assert epoch.format == "console" and epoch.verbosity == 1 and epoch.ts == datetime.fromtimestamp(1.764e9, tz=UTC)
    err = parse_log_line("f", 5, '2026-01-02T03:04:07.000Z\tERROR\tsetup\tkueue/main.go:415\tCould not run manager'
                                 '\t{"error": "leader election lost"}')
    assert err.is_error and err.error == "leader election lost" and "error" not in err.fields


def test_klog_and_text_lines_and_timestamps_prefix() -> None:
    text = "\n".join([
        "I1124 13:54:11.104377       1 leaderelection.go:257] attempting to acquire leader lease kueue-system/x...",
        "E1124 13:58:16.880112       1 leaderelection.go:436] error retrieving resource lock kueue-system/x: boom",
        "",
        "panic: runtime error: invalid memory address or nil pointer dereference",
        '2026-11-24T13:59:00.000000001Z {"level":"info","ts":"2026-11-24T13:59:00Z","msg":"Starting manager"}',
        '{"level":"info","msg":"truncated',
    ])
    lines = parse_log_text("logs/x.log", text, year=2026)
    assert [ln.format for ln in lines] == ["klog", "klog", "text", "json", "text"]
    assert [ln.lineno for ln in lines] == [1, 2, 4, 5, 6]  # blank line skipped, numbering kept
    assert lines[0].ts == datetime(2026, 11, 24, 13, 54, 11, 104377, tzinfo=UTC) and lines[0].severity == "info"
    assert lines[1].is_error and lines[1].caller == "leaderelection.go:436"
    assert lines[2].verbosity is None and lines[2].msg.startswith("panic: runtime error")
    assert lines[3].msg == "Starting manager"  # `kubectl logs --timestamps` prefix stripped
    assert lines[4].format == "text"  # broken JSON stays text, never raises


def test_text_lines_match_workload_by_name() -> None:
    ln = parse_log_line("f", 1, "something about job-a-12345 happened")
    assert ln.names_workload("ns", "job-a-12345")
    assert not ln.names_workload("ns", "job-a-1234")


def test_parse_ts_variants() -> None:
    assert parse_ts("2026-01-02T03:04:05.999999999Z") == datetime(2026, 1, 2, 3, 4, 5, 999999, tzinfo=UTC)
    assert parse_ts("1.7672e+09") == datetime.fromtimestamp(1.7672e9, tz=UTC)
    assert parse_ts(True) is None and parse_ts("yesterday") is None and parse_ts(None) is None


def test_flags() -> None:
    args = ["/manager", "--config=/c.yaml", "--zap-log-level", "5", "--feature-gates=A=true,B=false"]
    assert flag_value(args, "--zap-log-level") == "5"
    assert flag_value(args, "--feature-gates") == "A=true,B=false"
    assert flag_value(["-zap-log-level=3"], "--zap-log-level") == "3"
    assert flag_value(["/bin/sh", "-c", "exec /manager --zap-log-level=4 --leader-elect"], "--zap-log-level") == "4"
    assert flag_value(args, "--missing") is None
    assert [zap_level_value(v) for v in ("2", "debug", "info", "error", "junk")] == [2, 1, 0, -2, None]


def test_snapshot_log_level_from_deployment_flag(fixtures_dir: object) -> None:
    from pathlib import Path

    snap = load_snapshot(str(Path(str(fixtures_dir)) / "snapshots" / "health-logs-level2"))
    info = log_level_info(snap)
    assert (info.flag, info.flag_raw, info.max_seen, info.effective) == (2, "2", 2, 2)
    assert info.flag_source == "Deployment/kueue-system/kueue-controller-manager"
    lines = log_lines(snap)
    assert lines is log_lines(snap)  # memoised
    assert all(ln.file == "logs/kueue-controller-manager-7d4c5b9f8-q8l2m.log" for ln in lines)


def test_snapshot_mixed_formats(fixtures_dir: object) -> None:
    from pathlib import Path

    snap = load_snapshot(str(Path(str(fixtures_dir)) / "snapshots" / "health-controller-crashloop"))
    formats = {ln.format for ln in log_lines(snap)}
    assert formats == {"console", "klog", "json", "text"}
    info = log_level_info(snap)
    assert info.flag == 2 and info.max_seen == 1


def test_level_inferred_from_logs_without_flag(tmp_path: object) -> None:
    from pathlib import Path

    root = Path(str(tmp_path))
    (root / "logs").mkdir()
    (root / "logs" / "kueue.log").write_text(REAL + "\n" + REAL.replace("Level(-2)", "debug") + "\n")
    (root / "manifest.json").write_text('{"format": "kueuediag-snapshot/v1", "capturedAt": "2025-12-03T21:00:00Z"}')
    snap = load_snapshot(str(root))
    info = log_level_info(snap)
    assert (info.flag, info.max_seen, info.effective, info.flag_source) == (None, 2, 2, None)
    from kueuediag.snapshot.logs import LogLevelInfo

    assert LogLevelInfo(max_seen=3, flag=2).effective == 3  # V3 lines prove a higher level at some point
    assert LogLevelInfo(max_seen=1, flag=2).effective == 2
    assert LogLevelInfo(max_seen=None, flag=None).effective is None


def test_event_mirror_lines_name_their_workload() -> None:
    ln = parse_log_line("f", 1, '{"level":"debug","ts":"2025-09-15T23:19:48.846773705Z","logger":"events",'
                                '"caller":"recorder/recorder.go:104","msg":"Workload has overlapping preemption '
                                'targets with another workload","type":"Warning","object":{"kind":"Workload",'
                                '"namespace":"team-vision","name":"job-vit-h14-finetune-e3-543dc"},"reason":"Pending"}')
    assert ln.workload == ("team-vision", "job-vit-h14-finetune-e3-543dc") and ln.verbosity == 1


def test_lines_by_workload_and_cluster_queue(fixtures_dir: object) -> None:
    from pathlib import Path

    snap = load_snapshot(str(Path(str(fixtures_dir)) / "snapshots" / "health-zombie-pod-group"))
    mine = workload_log_lines(snap, "team-a", "job-llm-finetune-5d2e1")
    msgs = {ln.msg for ln in mine}
    assert len(mine) == 12 + 12 + 3 + 1 and msgs == {
        "Attempting to schedule workload", "Workload evaluated for admission", "Workload re-queued",
        "Job is suspended and workload not yet admitted by a clusterQueue, nothing to do"}
    assert workload_log_lines(snap, "other-ns", "job-llm-finetune-5d2e1") == []
    victim = workload_log_lines(snap, "team-b", "infer-pg-7f9c")  # as targetWorkload of Preempted lines
    assert {ln.msg for ln in victim} == {"Preempted", "Preemption already issued, waiting for observation"}
    assert {ln.msg for ln in cluster_queue_log_lines(snap, "team-b")} == {"Preempted"}  # targetClusterQueue
    crash = load_snapshot(str(Path(str(fixtures_dir)) / "snapshots" / "health-controller-crashloop"))
    assert [ln.format for ln in workload_log_lines(crash, "nlp", "job-bert-pretrain-41c0d")] == ["console", "console"]


def test_structured_is_known_without_parsing_a_json_line_again() -> None:
    """A JSON line keeps no parsed fields (they are read again from its text); whether it has any is recorded at
    parse time, and a field is looked up only when the line's text holds its key."""
    bare = parse_log_line("f", 1, '{"level":"info","ts":"2026-01-02T03:04:05Z","logger":"setup","msg":"Starting"}')
    rich = parse_log_line("f", 2, '{"level":"info","ts":"2026-01-02T03:04:05Z","msg":"Workload re-queued",'
                                  '"workload":{"name":"w","namespace":"ns"},"clusterQueue":{"name":"cq"}}')
    assert not bare.structured() and bare.fields == {}
    assert rich.structured() and rich.has_field("workload") and not rich.has_field("cohort")
    assert rich.fields == {"workload": {"name": "w", "namespace": "ns"}, "clusterQueue": {"name": "cq"}}
    assert rich.workloads == (("ns", "w"),) and rich.cluster_queues == ("cq",)
    assert rich.field_text("clusterQueue") == "cq" and rich.field_text("cohort") == ""
