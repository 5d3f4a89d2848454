"""`why` with the log checks in a forked child (kueuediag.split_runs): the verdict must be the serial one."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from kueuediag import split_runs
from kueuediag.check import Check, validate_check_class
from kueuediag.cli import build_app
from kueuediag.config import Settings
from kueuediag.engine import diagnose, run_configured, select_checks
from kueuediag.models import CheckResult, CheckRun, Verdict
from kueuediag.registry import discover
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.snapshot.model import Part, Snapshot
from kueuediag.target import Target, resolve

from .test_golden import CASES as GOLDEN_CASES
from .test_golden import GOLDEN, ROOT, _normalise
from .test_incidents import CASES as INCIDENTS
from .test_incidents import INCIDENTS as INCIDENTS_DIR

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="forking needs os.fork (POSIX)")


def _without_timings(verdict: Verdict) -> dict[str, Any]:
    doc = verdict.model_dump(mode="json")
    for run in doc["runs"]:
        run.pop("duration_ms")
    return doc


@pytest.mark.parametrize("case", GOLDEN_CASES, ids=[c["name"] for c in GOLDEN_CASES])
def test_split_why_prints_the_golden_document(case: dict[str, Any]) -> None:
    """`why --jobs 2` prints, byte for byte minus timings, the golden document of the serial run."""
    args = ["why", case["target"], "--from", str(ROOT / case["snapshot"]), "-o", "json", "--jobs", "2"]
    if case.get("namespace"):
        args += ["-n", case["namespace"]]
    result = CliRunner().invoke(build_app(), args)
    assert result.exit_code == 0, result.stderr
    assert _normalise(json.loads(result.stdout)) == json.loads((GOLDEN / f"{case['name']}.json").read_text())


@pytest.mark.parametrize("case", INCIDENTS, ids=[c.slug for c in INCIDENTS])
def test_split_verdict_equals_serial_on_every_incident(case: Any) -> None:
    snap = load_snapshot(str(INCIDENTS_DIR / case.slug))
    target = resolve(snap, case.target, case.namespace)
    classes, settings = discover(), Settings()
    serial = diagnose(snap, target, classes, settings, jobs=1)
    split = diagnose(load_snapshot(str(INCIDENTS_DIR / case.slug)), target, classes, settings, jobs=2)
    assert [r.code for r in split.runs] == [r.code for r in serial.runs]
    assert _without_timings(split) == _without_timings(serial)


def test_the_log_readers_are_the_ones_that_say_so() -> None:
    checks = select_checks(discover(), Settings())
    side = sorted(c.code for c in checks if split_runs.reads_logs(c))
    assert side == ["KD003", "KD301", "KD401", "KD501", "KD902"]
    assert all(Part.LOGS in c.requires or Part.LOGS in c.reads for c in checks if c.code in side)


# --- the serial loop's behaviour kept: errors, dead children ---------------------------------------------------


class _Boom(Exception):
    pass


def _fake(code: str, *, logs: bool) -> Check:
    class Fake(Check):
        reads = (Part.LOGS,) if logs else ()

        def run(self, snapshot: Snapshot, target: Target) -> CheckResult:
            return CheckResult.not_applicable(f"{self.code} ran in {'the child' if os.getpid() != PARENT else 'here'}")

    Fake.code, Fake.name = code, f"fake-{code.lower()}"
    return Fake()


PARENT = os.getpid()


@pytest.fixture
def fakes() -> Iterator[tuple[Snapshot, Target]]:
    snap = load_snapshot(str(INCIDENTS_DIR / INCIDENTS[0].slug))
    yield snap, resolve(snap, INCIDENTS[0].target, INCIDENTS[0].namespace)


def _raising(codes: set[str], *, exit_in_child: set[str] | None = None) -> Any:
    def run(check: Check, snap: Snapshot, target: Target, settings: Settings) -> CheckRun:
        if exit_in_child and check.code in exit_in_child and os.getpid() != PARENT:
            os._exit(3)  # the child dies without a word
        if check.code in codes:
            raise _Boom(check.code)
        return run_configured(check, snap, target, settings)

    return run


@pytest.mark.parametrize(("raising", "first"), [({"XY102", "XY103"}, "XY102"), ({"XY101", "XY102"}, "XY101"),
                                                ({"XY103"}, "XY103"), ({"XY104"}, "XY104")])
def test_the_earliest_check_that_raises_is_the_one_raised(monkeypatch: pytest.MonkeyPatch, fakes: Any,
                                                          raising: set[str], first: str) -> None:
    """Serially the first check (in order) that raises stops the diagnosis: the same whichever process ran it."""
    snap, target = fakes
    checks = [_fake("XY101", logs=False), _fake("XY102", logs=True), _fake("XY103", logs=False),
              _fake("XY104", logs=True)]
    monkeypatch.setattr(split_runs, "run_configured", _raising(raising))
    with pytest.raises(_Boom) as exc:
        split_runs.run_split(checks, snap, target, Settings())
    assert str(exc.value) == first


def test_a_dead_child_s_checks_run_here(monkeypatch: pytest.MonkeyPatch, fakes: Any) -> None:
    snap, target = fakes
    checks = [_fake("XY101", logs=False), _fake("XY102", logs=True), _fake("XY103", logs=True)]
    monkeypatch.setattr(split_runs, "run_configured", _raising(set(), exit_in_child={"XY103"}))
    runs = split_runs.run_split(checks, snap, target, Settings())
    assert [(r.code, r.reason) for r in runs] == [("XY101", "XY101 ran in here"), ("XY102", "XY102 ran in here"),
                                                  ("XY103", "XY103 ran in here")]


def test_the_child_runs_the_log_readers(fakes: Any) -> None:
    snap, target = fakes
    checks = [_fake("XY101", logs=False), _fake("XY102", logs=True), _fake("XY103", logs=False)]
    runs = split_runs.run_split(checks, snap, target, Settings())
    assert [(r.code, r.reason) for r in runs] == [("XY101", "XY101 ran in here"), ("XY102", "XY102 ran in the child"),
                                                  ("XY103", "XY103 ran in here")]
    only_logs = split_runs.run_split([checks[1]], snap, target, Settings())
    assert [r.reason for r in only_logs] == ["XY102 ran in here"]  # nothing to run beside it: no fork


# --- when to fork --------------------------------------------------------------------------------------------


def test_processes_asked_for_or_worked_out(monkeypatch: pytest.MonkeyPatch, fakes: Any) -> None:
    snap, _ = fakes
    monkeypatch.setattr(split_runs, "auto_jobs", lambda: 2)
    assert split_runs.split_jobs(snap, 1) == 1
    assert split_runs.split_jobs(snap, 2) == 2
    assert not split_runs.worth_splitting(snap)
    assert split_runs.split_jobs(snap, None) == 1  # small logs: a fork would cost more than it saves
    monkeypatch.setattr(split_runs, "MIN_LOG_CHARS", 0)
    assert split_runs.split_jobs(snap, None) == 2
    monkeypatch.setattr(split_runs, "auto_jobs", lambda: 1)  # busy CPUs
    assert split_runs.split_jobs(snap, None) == 1


def test_reads_must_name_snapshot_parts() -> None:
    class Wrong(Check):
        """Finds nothing (refused before its documentation is read)."""

        code, name = "XY199", "wrong-reads"
        reads = ("logs",)  # type: ignore[assignment]

        def run(self, snapshot: Snapshot, target: Target) -> CheckResult:
            return CheckResult.not_applicable("never runs")

    with pytest.raises(ValueError, match=r"XY199 wrong-reads: reads must be a tuple of Part values"):
        validate_check_class(Wrong)


def test_jobs_is_refused_below_one() -> None:
    result = CliRunner().invoke(build_app(), ["why", "job/x", "--from", str(ROOT / GOLDEN_CASES[0]["snapshot"]),
                                              "--jobs", "0"])
    assert result.exit_code == 2
    assert "--jobs" in result.stderr



@pytest.mark.parametrize(("jobs", "said"), [("1", "(one process)"), ("2", "(the log checks in a second process)")])
def test_verbose_says_how_the_checks_ran(jobs: str, said: str) -> None:
    case = GOLDEN_CASES[0]
    args = ["why", case["target"], "--from", str(ROOT / case["snapshot"]), "-q", "-v", "--jobs", jobs]
    if case.get("namespace"):
        args += ["-n", case["namespace"]]
    result = CliRunner().invoke(build_app(), args)
    assert result.exit_code == 0, result.stderr
    assert said in result.stderr
