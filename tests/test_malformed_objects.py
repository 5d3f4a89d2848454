"""Junk inside otherwise valid objects: a one-line input error naming object and field, exit 2, no stdout."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from kueuediag.cli import build_app
from kueuediag.errors import ExitCode

BASIC = Path(__file__).resolve().parent.parent / "fixtures" / "snapshots" / "basic"


def _set(path: list[Any], value: Any) -> Callable[[dict[str, Any]], None]:
    def apply(obj: dict[str, Any]) -> None:
        cur = obj
        for key in path[:-1]:
            cur = cur[key]
        cur[path[-1]] = value

    return apply


CASES = [
    ("kueue.yaml", "ClusterQueue", _set(["spec", "resourceGroups", 0, "flavors", 0, "resources", 2, "nominalQuota"],
                                        "sixteen"),
     "ClusterQueue team-a flavor a100 resource nvidia.com/gpu: invalid quantity 'sixteen'"),
    ("kueue.yaml", "ClusterQueue", _set(["spec", "resourceGroups"], "all"),
     "ClusterQueue team-a: spec.resourceGroups must be a list, got 'all'"),
    ("train.yaml", "Workload", _set(["spec", "podSets", 0, "count"], "two"),
     "Workload team-a/job-resnet-train-3c1d2: spec.podSets[].count must be a whole number, got 'two'"),
    ("train.yaml", "Workload", _set(["spec", "podSets", 0, "template", "spec", "containers", 0, "resources",
                                     "requests", "memory"], "128 gigs"),
     "memory: invalid quantity '128 gigs'"),
    ("train.yaml", "Workload", _set(["status"], ["not", "a", "map"]),
     "Workload team-a/job-resnet-train-3c1d2: status must be a mapping"),
    ("kueue.yaml", "LocalQueue", _set(["spec", "clusterQueue"], 42),
     "LocalQueue team-a/team-a-queue: spec.clusterQueue must be a string, got 42"),
]


@pytest.mark.parametrize(("file", "kind", "mutate", "message"), CASES, ids=[c[3][:50] for c in CASES])
def test_malformed_object(tmp_path: Path, file: str, kind: str, mutate: Callable[[dict[str, Any]], None],
                          message: str) -> None:
    snap = tmp_path / "snap"
    shutil.copytree(BASIC, snap)
    path = snap / "objects" / file
    docs = list(yaml.safe_load_all(path.read_text()))
    objs = [o for d in docs for o in (d.get("items") or [d])]
    mutate(next(o for o in objs if o["kind"] == kind))
    path.write_text(yaml.safe_dump_all(docs))
    result = CliRunner().invoke(build_app(), ["why", "job/resnet-train", "-n", "team-a", "--from", str(snap),
                                              "-o", "json"])
    assert result.exit_code == ExitCode.USAGE, result.stdout
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
