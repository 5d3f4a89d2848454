"""Load per-check case files (fixtures/cases/KD*.yaml) and compare findings to expectations.

Case file format (documented in docs/contributing.md):

    check: KD102
    cases:
      - name: exceeds max quota (v1beta2)
        snapshot: snapshots/exceeds-max-quota     # relative to fixtures/
        target: job/big-train
        namespace: team-a                          # optional
        now: "2026-01-01T00:00:00Z"               # optional
        kueue_version: v0.13.5                     # optional: run as if the manifest recorded this release
        expect:                                    # [] for a clear case
          - cause: exceeds-max-quota
            severity: high                         # optional
            confidence: high                       # optional
            title_contains: ["64", "nvidia.com/gpu"]       # optional, all must appear
            message_contains: ["maximum capacity"]         # optional
            evidence_refs: ["ClusterQueue/team-a"]         # optional: KIND/NAME or KIND/NS/NAME present
            evidence_contains: ["34 more needed"]          # optional: substrings of some evidence observed
            data: {needed: "64"}                           # optional: subset of finding.data (str compare)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from kueuediag.config import Settings
from kueuediag.engine import diagnose
from kueuediag.merge import contribution_finding
from kueuediag.models import Finding, Outcome, Verdict
from kueuediag.registry import discover
from kueuediag.snapshot.model import load_snapshot
from kueuediag.target import resolve
from kueuediag.timeutil import parse_time

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


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

    @property
    def id(self) -> str:
        return f"{self.check}:{self.name}"


def load_cases() -> list[Case]:
    cases: list[Case] = []
    for path in sorted((FIXTURES / "cases").glob("KD*.yaml")):
        doc = yaml.safe_load(path.read_text())
        for raw in doc["cases"]:
            cases.append(Case(
                check=doc["check"], file=path.name, name=raw["name"], snapshot=raw["snapshot"],
                target=raw["target"], namespace=raw.get("namespace"), now=raw.get("now"),
                expect=list(raw.get("expect") or []), kueue_version=raw.get("kueue_version"),
                issue=raw.get("issue"),
            ))
    return cases


def run_case(case: Case) -> tuple[Verdict, list[Finding]]:
    snap = load_snapshot(str(FIXTURES / case.snapshot), now=parse_time(case.now) if case.now else None)
    if case.kueue_version is not None:
        snap.manifest = replace(snap.manifest, kueue_version=case.kueue_version)
    target = resolve(snap, case.target, case.namespace)
    classes = [c for c in discover() if c.code == case.check]
    assert classes, f"no check with code {case.check}"
    verdict = diagnose(snap, target, classes, Settings())
    run = verdict.runs[0]
    assert run.outcome is not Outcome.ERRORED, f"{case.id}: check errored: {run.reason}"
    assert run.outcome is not Outcome.COULD_NOT_CHECK, f"{case.id}: check could not check: {run.reason}"
    # what the check itself said: its findings and its contributions to causes other checks own
    return verdict, [*run.findings, *(contribution_finding(run.code, run.check, c) for c in run.contributions)]


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
