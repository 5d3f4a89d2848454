"""A snapshot's object files parsed in two processes (kueuediag/snapshot/split_load.py): what is read must be
exactly what one process reads — the same items in the same order, held items that decode to the same objects,
the same origins — and every error must be the one the serial reader raises, from the file it raises it for."""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

import kueuediag.snapshot.reader as reader
import kueuediag.snapshot.split_load as split_load
from kueuediag.errors import InputError
from kueuediag.snapshot.held import Held, InMemory, OpenFile, split_list
from kueuediag.snapshot.limits import DEFAULT_LIMITS
from kueuediag.snapshot.reader import RawSnapshot, read_snapshot
from tests.test_hostile_input import _tar

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="a second process needs os.fork (POSIX)")


def _workload(i: int) -> dict[str, Any]:
    conditions = [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                   "message": "Quota reserved in ClusterQueue cq-a", "lastTransitionTime": "2026-11-20T08:00:00Z"}]
    if i % 3:
        conditions.append({"type": "Finished", "status": "True", "reason": "Succeeded", "message": "done",
                           "lastTransitionTime": f"2026-11-20T09:{i % 60:02d}:00Z"})
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": f"job-w-{i}", "namespace": f"team-{i % 4}", "uid": f"uid-w-{i}",
                     "resourceVersion": str(1000 + i), "labels": {"kueue.x-k8s.io/job-uid": f"uid-j-{i}", "x": "y"},
                     "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": f"w-{i}",
                                          "uid": f"uid-j-{i}", "controller": True}]},
        "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
            "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": str(1 + i % 8)}}}]}}}]},
        "status": {"conditions": conditions, "admission": {"clusterQueue": "cq-a", "podSetAssignments": [
            {"name": "main", "count": 1, "flavors": {"nvidia.com/gpu": "h100"},
             "resourceUsage": {"nvidia.com/gpu": str(1 + i % 8)}}]}},
    }


def _pod(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"p-{i}", "namespace": "team-0", "uid": f"uid-p-{i}"},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
            "status": {"phase": "Succeeded" if i % 2 else "Running"}}


def _node(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n-{i}", "uid": f"uid-n-{i}"},
            "status": {"allocatable": {"nvidia.com/gpu": "8"}}}


def _list(items: list[dict[str, Any]]) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "List", "items": items}, option=orjson.OPT_INDENT_2)


_CQ = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq-a"},
       "spec": {"resourceGroups": []}}


def _files() -> dict[str, bytes]:
    return {
        "objects/jobs.json": _list([_workload(i) | {"kind": "Workload"} for i in range(300, 420)]),
        "objects/kueue.yaml": yaml.safe_dump_all([_CQ, _node(99)]).encode(),
        "objects/nodes.json": _list([_node(i) for i in range(40)]),
        "objects/pods.json": _list([_pod(i) for i in range(150)]),
        "objects/workloads.json": _list([_workload(i) for i in range(300)]),
    }


def _write(root: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def _view(raw: RawSnapshot) -> list[tuple[Any, ...]]:
    """Everything a reader hands on, held items decoded."""
    out: list[tuple[Any, ...]] = []
    for o in raw.objects:
        if isinstance(o, Held):
            fields = tuple(getattr(o, s) for s in Held.__slots__ if s not in ("_raw", "_obj", "_off", "_len"))
            out.append(("held", fields, o.obj()))
        else:
            out.append(("dict", raw.origins[id(o)], o))
    return out


@pytest.fixture
def rebuilt(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many items this process rebuilt from what the child sent (only this process rebuilds)."""
    counts: list[int] = []
    original = split_load._rebuilt

    def counting(sent: list[Any], data: Any) -> list[Any]:
        counts.append(len(sent))
        return original(sent, data)

    monkeypatch.setattr(split_load, "_rebuilt", counting)
    return counts


def _read(path: Path, jobs: int) -> RawSnapshot:
    return read_snapshot(path, DEFAULT_LIMITS, partial(split_load.parse_files, jobs=jobs))


@pytest.mark.parametrize("layout", ["directory", "mapped directory", "tar.gz"])
def test_two_processes_read_exactly_what_one_reads(layout: str, tmp_path: Path, rebuilt: list[int],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    if layout == "mapped directory":
        monkeypatch.setattr(reader, "MAP_AT_BYTES", 0)  # every JSON file mapped, held items read by offset
    path = _tar(tmp_path / "snap.tgz", _files()) if layout == "tar.gz" else _write(tmp_path / "snap", _files())
    serial = _read(path, 1)
    assert not rebuilt
    split = _read(path, 2)
    # the child parsed the files beside the largest one (all but workloads.json), kueue.yaml and nodes.json too
    assert sorted(rebuilt) == [2, 40, 120, 150]
    sources = {type(o._raw) for o in split.objects if isinstance(o, Held) and o.kind == "Pod"}
    assert sources == {OpenFile if layout == "mapped directory" else InMemory}  # read back from this process's bytes
    assert _view(split) == _view(serial)


def test_a_held_record_survives_being_sent() -> None:
    data = _list([_workload(1), _workload(2), _pod(3)])
    items = split_list(data, "objects/w.json", InMemory(data))
    assert items is not None
    for item in items:
        assert isinstance(item, Held)
        state = item.state()
        assert state is not None
        back = Held.from_state(state, InMemory(bytes(data)))
        assert [getattr(back, s) for s in Held.__slots__ if s != "_raw"] == \
               [getattr(item, s) for s in Held.__slots__ if s != "_raw"]
        assert back.obj() == item.obj()
        assert item.state() is None  # decoded now: nothing left to read back by offset
    sliced = split_list(data, "objects/w.json")  # held as slices of the bytes: no offset to send
    assert sliced is not None and all(isinstance(h, Held) and h.state() is None for h in sliced)


@pytest.mark.parametrize(("bad", "expected"), [
    (["objects/pods.json"], "objects/pods.json"),  # the child's file: parsed again here, same error
    (["objects/workloads.json"], "objects/workloads.json"),  # this process's own file
    (["objects/jobs.json", "objects/workloads.json"], "objects/jobs.json"),  # the earlier file's, as serially
    (["objects/kueue.yaml", "objects/pods.json"], "objects/kueue.yaml"),
])
def test_the_error_is_the_serial_readers(bad: list[str], expected: str, tmp_path: Path) -> None:
    files = _files()
    for rel in bad:
        files[rel] = files[rel][:-40] + b'"metadata": 7}]}' if rel.endswith(".json") else b"kind: Pod\nmetadata: [\n"
    path = _write(tmp_path / "snap", files)
    with pytest.raises(InputError) as serial:
        _read(path, 1)
    with pytest.raises(InputError) as split:
        _read(path, 2)
    assert str(split.value) == str(serial.value)
    assert str(split.value).startswith(expected)


def test_a_dead_child_s_files_are_parsed_here(tmp_path: Path, rebuilt: list[int],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path / "snap", _files())
    serial = _read(path, 1)
    parent, original, here = os.getpid(), split_load._sendable, []

    def dies_in_the_child(rel: str, data: Any, limits: Any) -> Any:
        if os.getpid() != parent:
            os._exit(3)
        here.append(rel)
        return original(rel, data, limits)

    monkeypatch.setattr(split_load, "_sendable", dies_in_the_child)
    assert _view(_read(path, 2)) == _view(serial)
    assert sorted(here) == ["objects/jobs.json", "objects/kueue.yaml", "objects/nodes.json", "objects/pods.json"]
    assert sorted(rebuilt) == [2, 40, 120, 150]  # every file the child held, parsed here instead


def test_a_file_the_child_cannot_name_by_offset_is_parsed_here(tmp_path: Path, rebuilt: list[int],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path / "snap", _files())
    serial = _read(path, 1)
    monkeypatch.setattr(Held, "state", lambda self: None)  # as for an item held as a slice of the bytes
    assert _view(_read(path, 2)) == _view(serial)
    assert sorted(rebuilt) == [2, 40]  # only kueue.yaml and nodes.json (decoded objects, no held item) came back


def test_which_files_the_child_parses(monkeypatch: pytest.MonkeyPatch) -> None:
    mb = 1 << 20
    sizes = [3 * mb, 108 * mb, 1 * mb, 45 * mb, 57 * mb]
    monkeypatch.setattr(split_load, "auto_jobs", lambda: 2)
    # the largest file stays here, each next one (largest first) goes to the side with fewer bytes so far
    assert split_load.child_share(sizes, None) == {0, 2, 3, 4}
    assert split_load.child_share([10, 10, 10, 10], 2) == {1, 3}
    assert split_load.child_share(sizes, 1) == set()  # `--jobs 1` never forks
    assert split_load.child_share([sizes[1]], 2) == set()  # one file: nothing to share
    assert split_load.child_share([mb, mb], 2) == {1}  # asked for two: whatever the size
    assert split_load.child_share([mb, mb], None) == set()  # small: one process
    monkeypatch.setattr(split_load, "auto_jobs", lambda: 1)  # busy CPUs
    assert split_load.child_share(sizes, None) == set()
