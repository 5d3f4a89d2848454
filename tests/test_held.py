"""Held objects (kueuediag/snapshot/held.py): bulk kinds of a kubectl JSON List are indexed by their head and
decoded only when read.

The promise is that holding changes nothing a user sees: every fixture diagnosed from kubectl's JSON List layout
(where Workloads, Pods, Jobs and Events are held) gives the verdict it gives from its own layout (YAML, decoded
at load); a held object decodes to exactly its item; a malformed head is loaded the ordinary way and gets the
ordinary error; settled objects (finished Workloads, terminated Pods) are read only through their heads.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from kueuediag.config import Settings
from kueuediag.engine import diagnose
from kueuediag.errors import InputError
from kueuediag.registry import builtin
from kueuediag.snapshot.held import Held, OpenFile, split_list
from kueuediag.snapshot.kueue import (
    active_pods,
    active_workloads,
    finished_newest_first,
    workloads,
    workloads_since,
)
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.snapshot.reader import MAP_AT_BYTES, read_snapshot
from kueuediag.target import resolve
from kueuediag.testing import load_cases
from kueuediag.timeutil import parse_time

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def _meta(name: str, ns: str = "team-a", uid: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"name": name, "namespace": ns, "uid": uid or f"uid-{name}", **extra}


def _workload(name: str, finished_at: str | None = None, cq: str = "cq-a", gpus: str = "8") -> dict[str, Any]:
    conditions = [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                   "message": f"Quota reserved in ClusterQueue {cq}", "lastTransitionTime": "2026-11-20T08:00:00Z"}]
    if finished_at:
        conditions.append({"type": "Finished", "status": "True", "reason": "Succeeded", "message": "done",
                           "lastTransitionTime": finished_at})
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": _meta(name, labels={"kueue.x-k8s.io/job-uid": f"job-{name}", "team": "a"},
                          annotations={"kubectl.kubernetes.io/last-applied-configuration": "{}", "note": "x"},
                          ownerReferences=[{"apiVersion": "batch/v1", "kind": "Job", "name": name,
                                            "uid": f"job-{name}", "controller": True}]),
        "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
            "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": gpus}}}]}}}]},
        "status": {"conditions": conditions, "admission": {"clusterQueue": cq, "podSetAssignments": [
            {"name": "main", "count": 1, "flavors": {"nvidia.com/gpu": "h100"},
             "resourceUsage": {"nvidia.com/gpu": gpus}}]}},
    }


def _list(items: list[dict[str, Any]], kind: str = "List") -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": kind, "items": items})


def test_bulk_items_are_held_by_their_head_and_decode_to_exactly_their_item() -> None:
    finished = _workload("done", finished_at="2026-11-20T09:00:00Z")
    running = _workload("running")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": _meta("p", labels={"control-plane": "x"}),
           "spec": {"containers": []}, "status": {"phase": "Succeeded"}}
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq-a"},
          "spec": {"resourceGroups": []}}
    out = split_list(_list([finished, running, pod, cq]), "objects/all.json")
    assert out is not None and [type(o).__name__ for o in out] == ["Held", "Held", "Held", "dict"]
    done, run, held_pod = out[0], out[1], out[2]
    assert isinstance(done, Held) and isinstance(run, Held) and isinstance(held_pod, Held)
    assert (done.kind, done.namespace, done.name, done.uid) == ("Workload", "team-a", "done", "uid-done")
    assert done.owners == (("job-done", "Job", "done", True),)
    assert done.labels == {"kueue.x-k8s.io/job-uid": "job-done"}  # only the labels indexes are keyed by
    assert done.settled and done.settled_at == "2026-11-20T09:00:00Z" and done.settled_in == "cq-a"
    assert done.settled_usage == (("h100", "nvidia.com/gpu", "8"),)
    assert not run.settled and run.settled_usage == ()
    assert held_pod.settled and held_pod.labels == {"control-plane": "x"}
    assert not done.decoded
    decoded = done.obj()
    expected = json.loads(json.dumps(finished))
    del expected["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    assert decoded == expected and done.obj() is decoded  # decoded once, then shared
    assert out[3] == cq


def test_items_of_a_typed_list_get_the_lists_kind_and_version() -> None:
    item = _workload("w")
    del item["kind"], item["apiVersion"]
    out = split_list(orjson.dumps({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadList",
                                   "items": [item]}), "w.json")
    assert out is not None and isinstance(out[0], Held)
    assert out[0].kind == "Workload" and out[0].obj()["apiVersion"] == "kueue.x-k8s.io/v1beta2"


def test_a_head_with_wrong_types_is_loaded_the_ordinary_way_and_named(tmp_path: Path) -> None:
    bad = _workload("bad")
    bad["metadata"]["labels"]["team"] = 7
    out = split_list(_list([_workload("good"), bad]), "objects/w.json")
    assert out is not None and isinstance(out[0], Held) and isinstance(out[1], dict)
    (tmp_path / "objects").mkdir()
    (tmp_path / "objects" / "w.json").write_bytes(_list([_workload("good"), bad]))
    with pytest.raises(InputError) as err:
        load_snapshot(str(tmp_path), now=datetime(2026, 11, 20, 12, tzinfo=UTC))
    assert "objects/w.json" in str(err.value) and "Workload team-a/bad" in str(err.value)
    assert "metadata.labels.'team' must be a string, got 7" in str(err.value)


def test_not_a_list_or_not_json_is_left_to_the_ordinary_parser() -> None:
    assert split_list(orjson.dumps(_workload("single")), "w.json") is None
    assert split_list(b'{"kind": "List", "items": [', "w.json") is None
    assert split_list(b"[1, 2]", "w.json") is None


def test_a_large_file_is_mapped_split_and_read_back_by_offset(tmp_path: Path) -> None:
    items = [_workload(f"w-{i:05d}", finished_at="2026-11-20T09:00:00Z" if i % 3 else None) for i in range(3000)]
    data = json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=1).encode()
    assert len(data) >= MAP_AT_BYTES  # the mapped path, with kubectl's indented layout
    (tmp_path / "objects").mkdir()
    (tmp_path / "objects" / "workloads.json").write_bytes(data)
    raw = read_snapshot(tmp_path)
    held = [o for o in raw.objects if isinstance(o, Held)]
    assert len(held) == 3000 and not any(h.decoded for h in held)
    assert all(isinstance(h._raw, OpenFile) for h in held)  # the map is gone: items are read back by offset
    for h, item in zip(held[::97], items[::97], strict=True):
        expected = json.loads(json.dumps(item))
        del expected["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
        assert h.obj() == expected


def test_a_file_changed_after_loading_is_an_input_error_not_wrong_objects(tmp_path: Path) -> None:
    items = [_workload(f"w-{i:05d}") for i in range(3000)]
    data = json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=1).encode()
    (tmp_path / "objects").mkdir()
    path = tmp_path / "objects" / "workloads.json"
    path.write_bytes(data)
    raw = read_snapshot(tmp_path)
    last = [o for o in raw.objects if isinstance(o, Held)][-1]
    os.truncate(path, 100)
    with pytest.raises(ValueError, match="changed while kueuediag was reading it"):
        last.obj()


def test_settled_objects_stay_undecoded_and_out_of_the_active_views(tmp_path: Path) -> None:
    items = [_workload("old", finished_at="2026-11-20T07:00:00Z"), _workload("new", finished_at="2026-11-20T11:00:00Z"),
             _workload("runs")]
    (tmp_path / "objects").mkdir()
    (tmp_path / "objects" / "w.json").write_bytes(_list(items))
    snap = load_snapshot(str(tmp_path), now=datetime(2026, 11, 20, 12, tzinfo=UTC))
    assert [w.name for w in active_workloads(snap)] == ["runs"]
    assert not any(h.decoded for h in snap.entries("Workload") if h.settled)
    assert [h.name for _, h in finished_newest_first(snap, "cq-a")] == ["new", "old"]
    since = workloads_since(snap, datetime(2026, 11, 20, 10, tzinfo=UTC))
    assert sorted(w.name for w in since) == ["new", "runs"]  # "old" finished before: it cannot be an admission
    assert not next(h for h in snap.entries("Workload") if h.name == "old").decoded
    assert sorted(w.name for w in workloads(snap)) == ["new", "old", "runs"]  # asked for all: all decoded
    assert active_pods(snap) == []


def _as_json_lists(src: Path, dst: Path) -> None:
    """`src` rewritten in kubectl's JSON List layout: every object file becomes one List (same objects, same
    order); manifest, metrics and logs are copied."""
    raw = read_snapshot(src)
    files: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for obj in raw.dicts():
        origin = raw.origins.get(id(obj)) or "objects/rest.json"
        files[origin.rsplit(".", 1)[0] + ".json"].append(obj)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("*.yaml", "*.yml", "*.json"))
    if (src / "manifest.json").exists():
        shutil.copy(src / "manifest.json", dst / "manifest.json")
    for rel, objs in files.items():
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        (dst / rel).write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}, default=str))


def _one_case_per_snapshot() -> list[Any]:
    seen: dict[str, Any] = {}
    for case in load_cases(FIXTURES / "cases", FIXTURES):
        seen.setdefault(case.snapshot, case)
    return list(seen.values())


@pytest.mark.parametrize("case", _one_case_per_snapshot(), ids=lambda c: c.snapshot)
def test_every_fixture_gives_the_same_verdict_from_json_lists(case: Any, tmp_path: Path) -> None:
    src = case.root / case.snapshot
    dst = tmp_path / "lists"
    _as_json_lists(src, dst)
    now = parse_time(case.now) if case.now else None

    def verdict(path: Path) -> dict[str, Any]:
        snap = load_snapshot(str(path), now=now)
        v = diagnose(snap, resolve(snap, case.target, case.namespace), builtin(), Settings())
        doc = v.model_dump(mode="json")
        for run in doc["runs"]:
            del run["duration_ms"]  # the one field that is measured, not derived
        return doc

    objects = read_snapshot(dst).objects
    bulk = [o for o in objects if (o.kind if isinstance(o, Held) else o.get("kind")) in ("Workload", "Pod", "Job")]
    assert all(isinstance(o, Held) for o in bulk)  # the layout under test really holds them
    assert verdict(dst) == verdict(src)
