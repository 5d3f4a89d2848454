"""Test checks with YAML case files — kueuediag's own checks and third-party plugins alike.

A case file names a check, and cases: a snapshot (relative to a fixtures root), the target, and the expected
findings (cause, severity, confidence, title/message/evidence substrings, evidence refs, data) — or
`expect: []` for a case where the check finds nothing. The format (documented in docs/contributing.md):

    check: XY101
    cases:
      - name: a workload without the team label
        snapshot: snapshots/unlabelled               # relative to the fixtures root
        target: job/train
        namespace: team-a                            # optional
        now: "2026-01-01T00:00:00Z"                  # optional
        kueue_version: v0.13.5                       # optional: run as if the manifest recorded this release
        expect:                                      # [] for a clear case
          - cause: missing-team-label
            severity: low                            # optional
            confidence: high                         # optional
            title_contains: ["team"]                 # optional, all must appear
            message_contains: ["label"]              # optional
            evidence_refs: ["Workload/team-a/job-train-1"]  # optional: KIND/NAME or KIND/NS/NAME present
            evidence_contains: ["no team label"]     # optional: substrings of some evidence observed
            data: {label: team}                      # optional: subset of finding.data (str compare)

A plugin's test suite:

    from kueuediag.testing import assert_case, load_cases
    from xy_checks import TeamLabel

    CASES = load_cases(Path(__file__).parent / "cases", Path(__file__).parent / "fixtures")

    @pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
    def test_case(case):
        assert_case(case, [TeamLabel])

`findings_of` flattens a CheckResult returned by `Check.run` into what the check said.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from kueuediag.check import Check
from kueuediag.config import Settings
from kueuediag.engine import diagnose
from kueuediag.merge import contribution_finding
from kueuediag.models import CheckResult, Finding, Outcome, Verdict
from kueuediag.records import dataclass
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.target import resolve
from kueuediag.timeutil import parse_time


@dataclass
class Case:
    check: str
    file: str
    name: str
    snapshot: str
    target: str
    namespace: str | None
    now: str | None
    expect: list[dict[str, Any]]
    kueue_version: str | None = None
    issue: str | None = None
    """KD902: the known-issue id a clear case shows fixed (firing cases name it in `data.issue`)"""
    root: Path = Path(".")
    """the fixtures root `snapshot` is relative to"""

    @property
    def id(self) -> str:
        return f"{self.check}:{self.name}"


def load_cases(cases_dir: Path, fixtures: Path, pattern: str = "*.yaml") -> list[Case]:
    """Every case of every case file in `cases_dir` (sorted), with snapshots relative to `fixtures`."""
    cases: list[Case] = []
    for path in sorted(cases_dir.glob(pattern)):
        doc = yaml.safe_load(path.read_text())
        for raw in doc["cases"]:
            cases.append(Case(
                check=doc["check"], file=path.name, name=raw["name"], snapshot=raw["snapshot"],
                target=raw["target"], namespace=raw.get("namespace"), now=raw.get("now"),
                expect=list(raw.get("expect") or []), kueue_version=raw.get("kueue_version"),
                issue=raw.get("issue"), root=fixtures,
            ))
    return cases


def run_case(case: Case, classes: Sequence[type[Check]]) -> tuple[Verdict, list[Finding]]:
    """Run the case's check (looked up in `classes`) and return the verdict and what the check said."""
    snap = load_snapshot(str(case.root / case.snapshot), now=parse_time(case.now) if case.now else None)
    if case.kueue_version is not None:
        snap.manifest = replace(snap.manifest, kueue_version=case.kueue_version)
    target = resolve(snap, case.target, case.namespace)
    chosen = [c for c in classes if c.code == case.check]
    assert chosen, f"no check with code {case.check}"
    verdict = diagnose(snap, target, chosen, Settings())
    run = verdict.runs[0]
    assert run.outcome is not Outcome.ERRORED, f"{case.id}: check errored: {run.reason}"
    assert run.outcome is not Outcome.COULD_NOT_CHECK, f"{case.id}: check could not check: {run.reason}"
    # what the check itself said: its findings and its contributions to causes other checks own
    return verdict, [*run.findings, *(contribution_finding(run.code, run.check, c) for c in run.contributions)]


def case_problems(case: Case, findings: Sequence[Finding]) -> list[str]:
    """Why `findings` do not meet the case's expectations (empty: they do)."""
    causes = sorted(f.cause for f in findings)
    expected = sorted(e["cause"] for e in case.expect)
    if causes != expected:
        return [f"{case.id}: causes {causes} != expected {expected}; "
                + "; ".join(f"{f.cause}: {f.title}" for f in findings)]
    unmatched = list(findings)
    for exp in case.expect:
        errors: list[str] = []
        for f in unmatched:
            problems = match_expectation(f, exp)
            if not problems:
                unmatched.remove(f)
                break
            errors.append(f"{f.cause}/{f.title}: {'; '.join(problems)}")
        else:
            return [f"{case.id}: no finding matches {exp}: {errors}"]
    return []


def assert_case(case: Case, classes: Sequence[type[Check]]) -> Verdict:
    """Run one case and fail with every mismatch; returns the verdict for further assertions."""
    verdict, findings = run_case(case, classes)
    problems = case_problems(case, findings)
    assert not problems, "\n".join(problems)
    return verdict


def _ref_strings(f: Finding) -> set[str]:
    out = set()
    for e in f.evidence:
        if e.ref:
            out.add(f"{e.ref.kind}/{e.ref.name}")
            if e.ref.namespace:
                out.add(f"{e.ref.kind}/{e.ref.namespace}/{e.ref.name}")
    return out


def match_expectation(f: Finding, exp: dict[str, Any]) -> list[str]:
    """Mismatches between one finding and one expectation (empty = match)."""
    problems = []
    if f.cause != exp["cause"]:
        return [f"cause {f.cause} != {exp['cause']}"]
    if "severity" in exp and f.severity.label != exp["severity"]:
        problems.append(f"severity {f.severity.label} != {exp['severity']}")
    if "confidence" in exp and f.confidence.label != exp["confidence"]:
        problems.append(f"confidence {f.confidence.label} != {exp['confidence']}")
    for s in _as_list(exp.get("title_contains")):
        if s not in f.title:
            problems.append(f"title {f.title!r} lacks {s!r}")
    for s in _as_list(exp.get("message_contains")):
        if s not in f.message:
            problems.append(f"message {f.message!r} lacks {s!r}")
    refs = _ref_strings(f)
    for s in _as_list(exp.get("evidence_refs")):
        if s not in refs:
            problems.append(f"evidence refs {sorted(refs)} lack {s!r}")
    observed = " | ".join(e.observed for e in f.evidence)
    for s in _as_list(exp.get("evidence_contains")):
        if s not in observed:
            problems.append(f"evidence {observed!r} lacks {s!r}")
    for key, value in (exp.get("data") or {}).items():
        if key not in f.data:
            problems.append(f"data lacks key {key!r}")
        elif str(f.data[key]) != str(value):
            problems.append(f"data[{key!r}] {f.data[key]!r} != {value!r}")
    return problems


def _as_list(v: Any) -> list[str]:
    if v is None:
        return []
    return [v] if isinstance(v, str) else list(v)


def findings_of(result: CheckResult | list[Finding], code: str = "", check: str = "") -> list[Finding]:
    """The findings a check returned plus its contributions (stamped with `code`/`check`) as findings."""
    if isinstance(result, list):
        return result
    return [*result.findings, *(contribution_finding(code, check, c) for c in result.contributions)]
