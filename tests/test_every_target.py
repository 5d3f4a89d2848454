"""Robustness: every Workload, Job, JobSet and Pod in every fixture snapshot gets a verdict, and no check errors.

Fixtures were written for specific targets; diagnosing *everything else* in them is how we meet shapes no case
file anticipated (bystanders, system pods, finished jobs, pods of other integrations).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kueuediag.causes import BY_SLUG
from kueuediag.config import Settings
from kueuediag.engine import diagnose
from kueuediag.models import Outcome
from kueuediag.registry import builtin
from kueuediag.snapshot.kueue import workloads
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.target import resolve

FIX = Path(__file__).resolve().parent.parent / "fixtures"
SNAPSHOTS = sorted([p for p in (FIX / "snapshots").iterdir() if p.is_dir()]
                   + [p for p in (FIX / "scenarios").iterdir() if p.is_dir()])


@pytest.mark.parametrize("path", SNAPSHOTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_target_gets_a_verdict_without_errors(path: Path) -> None:
    snap = load_snapshot(str(path))
    classes = builtin()
    targets = [(f"workload/{w.name}", w.namespace) for w in workloads(snap)]
    for kind in ("Job", "JobSet", "Pod"):
        targets += [(f"{kind.lower()}/{o['metadata']['name']}", o["metadata"].get("namespace"))
                    for o in snap.of_kind(kind)]
    assert targets, f"{path}: nothing to diagnose"
    problems = []
    for text, ns in targets:
        verdict = diagnose(snap, resolve(snap, text, ns), classes, Settings())
        problems += [f"{text} -n {ns}: {r.code} errored: {r.reason}" for r in verdict.runs
                     if r.outcome is Outcome.ERRORED]
        assert verdict.cause == "unknown" or verdict.cause in BY_SLUG
        assert [r.rank for r in verdict.findings] == list(range(1, len(verdict.findings) + 1))
    assert not problems, "\n".join(problems[:10])
