"""Hostile snapshot input (the fuzzing findings): one-line errors naming file, object and field; bounded reads;
no internal error, no hang, no unbounded memory.

Each test names the fuzz finding it pins down.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import socket
import tarfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from kueuediag.errors import InputError, shown
from kueuediag.snapshot.limits import Limits, limits_from
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.snapshot.metrics import metric_store
from kueuediag.snapshot.reader import read_snapshot
from tests.fuzz.harness import run_cli, run_files, why_argv
from tests.fuzz.seeds import FIXTURES

BASIC = FIXTURES / "snapshots" / "basic"
TARGET = ("job/resnet-train", "team-a")
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1", "namespace": "ns", "uid": "u1",
                                                       "creationTimestamp": "2026-01-01T00:00:00Z"}}


def _basic_files() -> dict[str, bytes]:
    return {p.relative_to(BASIC).as_posix(): p.read_bytes() for p in BASIC.rglob("*") if p.is_file()}


def _edit(files: dict[str, bytes], rel: str, kind: str, change: Callable[[dict[str, Any]], None]) -> None:
    docs = list(yaml.safe_load_all(files[rel]))
    objs = [o for d in docs for o in (d.get("items") or [d])]
    change(next(o for o in objs if o["kind"] == kind))
    files[rel] = yaml.safe_dump_all(docs).encode()


def _one_line_error(outcome: Any) -> str:
    assert outcome.problem() is None, outcome.problem()
    assert outcome.code == 2, (outcome.code, outcome.stderr)
    assert outcome.stdout == ""
    return str(outcome.stderr)


def _meta(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(obj: dict[str, Any]) -> None:
        obj["metadata"][key] = value
    return change


def _owner_uid(value: Any) -> Callable[[dict[str, Any]], None]:
    def change(obj: dict[str, Any]) -> None:
        obj["metadata"]["ownerReferences"][0]["uid"] = value
    return change


def _spec(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(obj: dict[str, Any]) -> None:
        obj["spec"][key] = value
    return change


# Fixed-type Kubernetes fields with the wrong JSON type: internal errors in the first fuzz run (TypeError:
# unhashable type as an index key, AttributeError on labels, OverflowError on -.inf).
WRONG_TYPES = [
    ("train.yaml", "Workload", _meta("uid", {"a": 1}), "objects/train.yaml: Workload team-a/job-resnet-train-3c1d2: "
     "metadata.uid must be a string, got {'a': 1}"),
    ("train.yaml", "Workload", _meta("namespace", ["team-a"]), "metadata.namespace must be a string, got ['team-a']"),
    ("train.yaml", "Workload", _meta("uid", 12), "metadata.uid must be a string, got 12"),
    ("train.yaml", "Workload", _meta("labels", ["a"]), "metadata.labels must be a mapping, got ['a']"),
    ("train.yaml", "Workload", _meta("labels", 7), "metadata.labels must be a mapping, got 7"),
    ("train.yaml", "Workload", _meta("labels", {"team": {"x": 1}}), "metadata.labels.'team' must be a string"),
    ("train.yaml", "Workload", _owner_uid({"x": 1}), "metadata.ownerReferences[0].uid must be a string, got {'x': 1}"),
    ("train.yaml", "Workload", _owner_uid(["u"]), "metadata.ownerReferences[0].uid must be a string, got ['u']"),
    ("train.yaml", "Workload", _owner_uid(5), "metadata.ownerReferences[0].uid must be a string, got 5"),
    ("train.yaml", "Workload", _meta("creationTimestamp", 1700000000),
     "metadata.creationTimestamp must be a string, got 1700000000"),
    ("train.yaml", "Workload", _meta("creationTimestamp", {"t": 1}), "metadata.creationTimestamp must be a string"),
    ("train.yaml", "Workload", _spec("priority", float("-inf")), "spec.priority must be a whole number, got -inf"),
    ("train.yaml", "Workload", _spec("queueName", {"name": "q"}), "spec.queueName must be a string, got {'name': 'q'}"),
    ("kueue.yaml", "LocalQueue", _spec("clusterQueue", {"name": "team-a"}),
     "objects/kueue.yaml: LocalQueue team-a/team-a-queue: spec.clusterQueue must be a string"),
    ("kueue.yaml", "ClusterQueue", _spec("cohortName", ["c"]), "ClusterQueue team-a: spec.cohortName must be a string"),
]


@pytest.mark.parametrize(("file", "kind", "change", "message"), WRONG_TYPES, ids=[c[3][-60:] for c in WRONG_TYPES])
def test_wrong_types_in_fixed_type_fields_are_one_line_errors(file: str, kind: str,
                                                              change: Callable[[dict[str, Any]], None],
                                                              message: str) -> None:
    files = _basic_files()
    _edit(files, f"objects/{file}", kind, change)
    stderr = _one_line_error(run_files(files, *TARGET))
    assert message in stderr, stderr


def test_huge_integer_priority_is_read_or_refused_never_an_internal_error() -> None:
    files = _basic_files()
    _edit(files, "objects/train.yaml", "Workload", _spec("priority", 10**30))
    outcome = run_files(files, *TARGET)
    assert outcome.problem() is None and outcome.code == 0, outcome.stderr
    assert json.loads(outcome.stdout)["workload"]["priority"] == 10**30


@pytest.mark.parametrize("digits", [5000, 100_000])
def test_integers_beyond_pythons_conversion_limit(tmp_path: Path, digits: int) -> None:
    """`ValueError: Exceeds the limit (4300 digits)` escaped the JSON and YAML parsers."""
    (tmp_path / "objects").mkdir()
    (tmp_path / "objects" / "a.json").write_text('{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},'
                                                 '"spec":{"priority":' + "9" * digits + "}}")
    with pytest.raises(InputError, match=r"objects/a.json: invalid JSON \(Exceeds the limit") as info:
        load_snapshot(str(tmp_path))
    assert len(str(info.value)) < 300
    (tmp_path / "objects" / "a.json").unlink()
    (tmp_path / "objects" / "a.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
                                                 f"  priority: {'9' * digits}\n")
    with pytest.raises(InputError, match=r"objects/a.yaml: invalid YAML"):
        load_snapshot(str(tmp_path))


def test_deep_nesting_is_a_one_line_error(tmp_path: Path) -> None:
    """100,000-deep JSON raised RecursionError."""
    (tmp_path / "objects").mkdir()
    deep = "[" * 100_000 + "]" * 100_000
    (tmp_path / "objects" / "a.json").write_text('{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},'
                                                 f'"spec":{deep}}}')
    with pytest.raises(InputError, match=r"objects/a.json: invalid JSON \(nested too deeply\)"):
        load_snapshot(str(tmp_path))
    (tmp_path / "objects" / "a.json").unlink()
    (tmp_path / "objects" / "a.yaml").write_text(f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec: {deep}\n")
    with pytest.raises(InputError, match=r"objects/a.yaml: invalid YAML at line 4 \(.*nesting depth"):
        load_snapshot(str(tmp_path))
    (tmp_path / "manifest.json").write_text(deep)
    with pytest.raises(InputError, match=r"manifest.json: invalid JSON \(nested too deeply\)"):
        load_snapshot(str(tmp_path))


def test_names_with_newlines_still_give_one_line_errors() -> None:
    files = _basic_files()
    _edit(files, "objects/kueue.yaml", "LocalQueue", _spec("clusterQueue", ["line\nbreak"]))
    stderr = _one_line_error(run_files(files, *TARGET))
    assert "\\n" in stderr and stderr.count("\n") == 1


def test_error_messages_are_one_line_and_bounded_whatever_the_caller_passes() -> None:
    err = InputError("a\nb\r\x00" + "x" * 5000)
    assert "\n" not in str(err) and "\r" not in str(err) and len(str(err)) <= 1000
    assert str(err).startswith("a\\nb\\r\\x00")
    assert shown(10**5000) == "<integer of ~5000 digits>"
    assert shown("line\nbreak") == "'line\\nbreak'"


def _bomb(levels: int = 12, width: int = 9, field: str = "labels") -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels)]
    body = "\n".join("  " + ln for ln in lines)
    return f"apiVersion: v1\nkind: Pod\nspec:\n{body}\nmetadata:\n  name: bomb\n  {field}: *a{levels - 1}\n"


@pytest.mark.parametrize("field", ["labels", "uid", "ownerReferences"])
def test_yaml_alias_bomb_is_refused_quickly(field: str) -> None:
    """A 529-byte document reached 3 GB in 34 s: the error message printed the aliased value."""
    files = _basic_files()
    files["objects/bomb.yaml"] = _bomb(field=field).encode()
    assert len(files["objects/bomb.yaml"]) < 800  # 9**12 labels once expanded
    start = time.monotonic()
    stderr = _one_line_error(run_files(files, *TARGET, timeout=20))
    assert time.monotonic() - start < 10
    assert "objects/bomb.yaml: YAML aliases expand to more than 10,000 extra nodes" in stderr
    assert "--max-alias-nodes" in stderr


def test_a_few_yaml_aliases_are_fine(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  labels: &l {a: b}\n"
                                     "  creationTimestamp: '2026-01-01T00:00:00Z'\n  annotations: *l\n")
    snap = load_snapshot(str(tmp_path / "a.yaml"))
    assert snap.of_kind("Node")[0]["metadata"]["annotations"] == {"a": "b"}
    with pytest.raises(InputError, match="YAML aliases expand to more than 1 extra nodes"):
        read_snapshot(tmp_path / "a.yaml", Limits(max_alias_nodes=1))


# --- bounds ---------------------------------------------------------------------------------------------------


def _tar(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def test_gzip_bomb_member_is_refused_from_its_header_not_inflated(tmp_path: Path) -> None:
    """A 10 MB gzip bomb was fully decompressed even though the reader ignores the member."""
    big = 64 * 1024 * 1024
    path = tmp_path / "bomb.tar.gz"
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1) as gz, \
            tarfile.open(fileobj=gz, mode="w|") as tf:
        pod = json.dumps(POD).encode()
        info = tarfile.TarInfo("objects/p.json")
        info.size = len(pod)
        tf.addfile(info, io.BytesIO(pod))
        info = tarfile.TarInfo("ignored/zeros.bin")
        info.size = big
        tf.addfile(info, io.BytesIO(bytes(big)))
    assert path.stat().st_size < big // 100
    start = time.monotonic()
    with pytest.raises(InputError, match=r"bytes read, more than the bound of 33,554,432 \(raise it with --max-bytes"):
        read_snapshot(path, Limits(max_bytes=32 * 1024 * 1024))
    assert time.monotonic() - start < 2
    assert read_snapshot(path).objects[0]["metadata"]["name"] == "p1"  # within the default bound it reads


def test_per_file_bound_for_objects(tmp_path: Path) -> None:
    (tmp_path / "objects").mkdir()
    (tmp_path / "objects" / "p.json").write_text(json.dumps(POD))
    with pytest.raises(InputError, match=r"objects/p.json: \d+ bytes, more than the bound of 10 "
                                         r"\(raise it with --max-file-bytes\)"):
        read_snapshot(tmp_path, Limits(max_file_bytes=10))
    path = _tar(tmp_path / "s.tar.gz", {"objects/p.json": json.dumps(POD).encode()})
    with pytest.raises(InputError, match=r"member objects/p.json has \d+ bytes, more than the bound of 10"):
        read_snapshot(path, Limits(max_file_bytes=10))


def test_a_long_log_keeps_its_newest_part(tmp_path: Path) -> None:
    """A 2 GiB log took 12 GB and 202 s: now a log keeps its last max_file_bytes, and says so."""
    lines = [json.dumps({"level": "info", "ts": f"2026-01-01T00:00:{i % 60:02d}Z", "msg": f"line {i}"})
             for i in range(2000)]
    text = "\n".join(lines) + "\n"
    (tmp_path / "objects").mkdir()
    (tmp_path / "objects" / "p.json").write_text(json.dumps(POD))
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "kueue.log").write_text(text)
    limits = Limits(max_file_bytes=20_000)
    for source in (tmp_path, _tar(tmp_path.parent / "logs.tar.gz", {
            "objects/p.json": json.dumps(POD).encode(), "logs/kueue.log": text.encode()})):
        raw = read_snapshot(source, limits)
        kept = raw.logs["logs/kueue.log"]
        assert kept.endswith('"msg": "line 1999"}\n') and len(kept) <= 20_000
        assert kept.startswith('{"level"')  # cut at a line boundary
        assert any("logs/kueue.log" in w and "only the last" in w and "--max-file-bytes" in w for w in raw.warnings)


def test_log_lines_bound_keeps_the_newest_lines(tmp_path: Path) -> None:
    (tmp_path / "objects").mkdir()
    (tmp_path / "objects" / "p.json").write_text(json.dumps(POD))
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "kueue.log").write_text("".join(f"line {i}\n" for i in range(100)))
    raw = read_snapshot(tmp_path, Limits(max_log_lines=10))
    assert raw.logs["logs/kueue.log"].splitlines() == [f"line {i}" for i in range(90, 100)]
    assert raw.warnings == ["logs/kueue.log: 100 log lines, only the last 10 kept (raise it with --max-log-lines)"]


def test_object_and_file_count_bounds(tmp_path: Path) -> None:
    (tmp_path / "objects").mkdir()
    (tmp_path / "objects" / "pods.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        dict(POD, metadata=dict(POD["metadata"], name=f"p{i}")) for i in range(5)]}))
    with pytest.raises(InputError, match=r"more than 3 objects, more than the bound of 3 \(raise it with --max-o"):
        read_snapshot(tmp_path, Limits(max_objects=3))
    for i in range(4):
        (tmp_path / "objects" / f"x{i}.txt").write_text("not read")
    with pytest.raises(InputError, match=r"more than 2 files.*--max-files"):
        read_snapshot(tmp_path, Limits(max_files=2))


def test_metric_series_bound(tmp_path: Path) -> None:
    (tmp_path / "objects").mkdir()
    (tmp_path / "objects" / "p.json").write_text(json.dumps(POD))
    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "k.om").write_text("".join(f'kueue_pending_workloads{{cluster_queue="q{i}"}} 1 1700000000\n'
                                                       for i in range(5)) + "# EOF\n")
    assert len(metric_store(load_snapshot(str(tmp_path))).select("kueue_pending_workloads")) == 5
    with pytest.raises(InputError, match=r"metrics/k.om: 5 metric series so far, more than the bound of 4 "
                                         r"\(raise it with --max-series\)"):
        load_snapshot(str(tmp_path), limits=Limits(max_series=4))


def test_non_regular_files_are_skipped_with_a_warning(tmp_path: Path) -> None:
    """A symlink to /dev/zero read 3.8 GB; a FIFO in the folder hung forever."""
    (tmp_path / "objects").mkdir()
    (tmp_path / "objects" / "p.json").write_text(json.dumps(POD))
    os.symlink("/dev/zero", tmp_path / "objects" / "zero.yaml")
    os.mkfifo(tmp_path / "objects" / "fifo.yaml")
    os.symlink(tmp_path / "missing", tmp_path / "objects" / "dangling.json")
    sock = socket.socket(socket.AF_UNIX)
    sock_path = tmp_path / "logs" / "s.log"
    sock_path.parent.mkdir()
    try:
        sock.bind(str(sock_path))
        start = time.monotonic()
        snap = load_snapshot(str(tmp_path))
        assert time.monotonic() - start < 5
    finally:
        sock.close()
    assert [p["metadata"]["name"] for p in snap.of_kind("Pod")] == ["p1"]
    assert len(snap.warnings) == 1 and snap.warnings[0].startswith("skipped 4 file(s) that are not regular files")
    with pytest.raises(InputError, match="not a regular file"):
        read_snapshot(tmp_path / "objects" / "fifo.yaml")
    with pytest.raises(InputError, match="not a regular file"):
        read_snapshot(tmp_path / "objects" / "zero.yaml")


def test_tar_members_that_are_links_or_devices_are_not_read(tmp_path: Path) -> None:
    path = tmp_path / "s.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        pod = json.dumps(POD).encode()
        info = tarfile.TarInfo("objects/p.json")
        info.size = len(pod)
        tf.addfile(info, io.BytesIO(pod))
        for name, typ in (("objects/zero.yaml", tarfile.SYMTYPE), ("objects/dev.yaml", tarfile.CHRTYPE),
                          ("objects/fifo.yaml", tarfile.FIFOTYPE)):
            info = tarfile.TarInfo(name)
            info.type = typ
            info.linkname = "/dev/zero"
            tf.addfile(info)
    raw = read_snapshot(path)
    assert [o["metadata"]["name"] for o in raw.objects] == ["p1"]


def test_tar_reading_is_linear_in_the_member_count(tmp_path: Path) -> None:
    """5,000 members took 70 s and 10,000 took 282 s (a name scan per member): now one pass."""
    members = {f"snap/objects/p{i}.json": json.dumps(dict(POD, metadata=dict(POD["metadata"], name=f"p{i}"))).encode()
               for i in range(5000)}
    path = _tar(tmp_path / "many.tar.gz", members)
    start = time.monotonic()
    raw = read_snapshot(path)
    elapsed = time.monotonic() - start
    assert len(raw.objects) == 5000 and raw.origins[id(raw.objects[0])] == "objects/p0.json"
    assert elapsed < 10, elapsed


def test_non_utf8_log_byte_keeps_the_diagnosis() -> None:
    """One non-UTF-8 byte in a controller log rejected the whole snapshot."""
    files = _basic_files()
    files["logs/kueue-controller-manager.log"] = (b'{"level":"info","ts":"2026-01-01T00:00:00Z","msg":"caf\xe9"}\n'
                                                  b'{"level":"info","msg":"fine"}\n')
    outcome = run_files(files, *TARGET)
    assert outcome.problem() is None and outcome.code == 0, outcome.stderr
    verdict = json.loads(outcome.stdout)
    assert verdict["snapshotWarnings"] == ["logs/kueue-controller-manager.log: not valid UTF-8 (first bad byte at "
                                           "offset 54); 1 character(s) replaced with U+FFFD"]
    markdown = run_files(files, *TARGET, output="markdown")
    assert "### Snapshot warnings" in markdown.stdout and "replaced with U+FFFD" in markdown.stdout


# --- flags and output encodings -------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "0"])
def test_timeout_must_be_a_positive_finite_number(value: str) -> None:
    """`--timeout nan` disabled the deadline."""
    for argv in (["why", "job/x", "--from", str(BASIC), "--timeout", value], ["snapshot", "--timeout", value]):
        outcome = run_cli(argv)
        assert outcome.code == 2 and outcome.stdout == "" and "Traceback" not in outcome.stderr, outcome.stderr
        # the flag's range check (click's usage message) or the settings check (one line) refuses it
        assert ("Invalid value for '--timeout'" in outcome.stderr
                or "timeout: expected a positive number, got" in _one_line_error(outcome)), outcome.stderr


@pytest.mark.parametrize(("flag", "value", "message"), [
    ("--max-bytes", "nan", "--max-bytes: expected a positive whole number or a quantity such as 512Mi, got 'nan'"),
    ("--max-bytes", "-1Gi", "--max-bytes: expected a positive whole number, got '-1Gi'"),
    ("--max-objects", "0", "--max-objects: expected a positive whole number, got '0'"),
    ("--max-series", "1.5", "--max-series: expected a positive whole number, got '1.5'"),
    ("--max-log-lines", "lots", "--max-log-lines: expected a positive whole number, got 'lots'"),
])
def test_limit_flags_are_validated(flag: str, value: str, message: str) -> None:
    outcome = run_cli(why_argv(BASIC, *TARGET) + [flag, value])
    assert message in _one_line_error(outcome)


def test_limit_flags_and_config_apply(tmp_path: Path) -> None:
    outcome = run_cli(why_argv(BASIC, *TARGET) + ["--max-objects", "3"])
    assert "more than the bound of 3 (raise it with --max-objects)" in _one_line_error(outcome)
    config = tmp_path / ".kueuediag.yaml"
    config.write_text("limits:\n  max_file_bytes: 1Ki\n")
    outcome = run_cli(why_argv(BASIC, *TARGET) + ["--config", str(config)])
    assert "more than the bound of 1,024 (raise it with --max-file-bytes)" in _one_line_error(outcome)
    outcome = run_cli(["health", "--from", str(BASIC), "--config", str(config)])  # health reads the same bounds
    assert "more than the bound of 1,024 (raise it with --max-file-bytes)" in _one_line_error(outcome)
    assert limits_from({"max_bytes": "1Gi"}).max_bytes == 1 << 30
    with pytest.raises(InputError, match="unknown limit"):
        limits_from({"max_bytez": 1})
    from dataclasses import fields

    from kueuediag.config import LIMIT_KEYS
    assert {f.name for f in fields(Limits)} == LIMIT_KEYS


@pytest.mark.parametrize("encoding", ["latin-1", "cp437", "ascii"])
@pytest.mark.parametrize("output", ["json", "terminal", "markdown"])
def test_narrow_stdout_encodings(encoding: str, output: str, tmp_path: Path) -> None:
    """A latin-1 or cp437 stdout failed with UnicodeEncodeError even for -o json."""
    snap = tmp_path / "snap"
    shutil.copytree(BASIC, snap)
    # a lone surrogate (valid JSON escape) that no encoding can write, and characters latin-1 lacks
    (snap / "objects" / "odd.json").write_text(json.dumps({
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "e\u2192\U0001f680", "namespace": "team-a"},
        "involvedObject": {"kind": "Job", "name": "resnet-train", "namespace": "team-a"},
        "reason": "FailedCreate", "message": "bad \ud800 \u2192 here", "type": "Warning"}))
    outcome = run_cli(why_argv(snap, *TARGET, output=output), encoding=encoding)
    assert outcome.problem(output) is None and outcome.code == 0, outcome.stderr
    outcome.stdout.encode(encoding)  # only characters the stream can carry were written
    if output == "json":
        doc = json.loads(outcome.stdout)
        assert doc["workload"]["name"] == "job-resnet-train-3c1d2"
    else:
        assert "job/resnet-train" in outcome.stdout


@pytest.mark.parametrize("value", [".nan", ".inf", "-1", "0"])
def test_timeout_in_config_must_be_positive_and_finite(tmp_path: Path, value: str) -> None:
    """`timeout: .nan` in a config file would have disabled the live deadline (nan compares false)."""
    from kueuediag.config import load_settings

    config = tmp_path / ".kueuediag.yaml"
    config.write_text(f"timeout: {value}\n")
    with pytest.raises(InputError, match="timeout: expected a positive number"):
        load_settings(config_file=config, env={})
