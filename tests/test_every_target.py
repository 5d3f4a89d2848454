"""Robustness: every Workload, Job, JobSet and Pod in every fixture snapshot gets a verdict, and no check errors.

Fixtures were written for specific targets; diagnosing *everything else* in them is how we meet shapes no case
file anticipated (bystanders, system pods, finished jobs, pods of other integrations).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kueuediag.causes import BY_SLUG
from kueuediag.models import Outcome
from tests.bundled import verdicts

FIX = Path(__file__).resolve().parent.parent / "fixtures"
SNAPSHOTS = sorted([p for p in (FIX / "snapshots").iterdir() if p.is_dir()]
                   + [p for p in (FIX / "scenarios").iterdir() if p.is_dir()])


@pytest.mark.parametrize("path", SNAPSHOTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_target_gets_a_verdict_without_errors(path: Path) -> None:
    found = verdicts(path)
    assert found, f"{path}: nothing to diagnose"
    problems = []
    for (text, ns), verdict in found.items():
        problems += [f"{text} -n {ns}: {r.code} errored: {r.reason}" for r in verdict.runs
                     if r.outcome is Outcome.ERRORED]
        assert verdict.cause == "unknown" or verdict.cause in BY_SLUG
        assert [r.rank for r in verdict.findings] == list(range(1, len(verdict.findings) + 1))
    assert not problems, "\n".join(problems[:10])
