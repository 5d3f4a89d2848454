"""One answer per fact: checks never contradict each other about the same object.

Two halves (STYLE §13):

* **By construction** — each fact has one owner in ``kueuediag/analysis``; the AST of every other module is
  searched for a second implementation (pod termination arithmetic on ``deletionTimestamp``, flavor taint or
  label matching, version literals in comparisons).
* **By output** — every check that concludes something about an object records it in
  ``Finding.data["facts"]`` (fact → object → value). For every target of every fixture, the values that
  different checks (and findings) give for one (fact, object) must agree, and must equal the owner's answer.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from kueuediag.analysis.pod_termination import counted_active_by_kueue, is_past_grace
from kueuediag.config import Settings
from kueuediag.engine import diagnose
from kueuediag.registry import discover
from kueuediag.snapshot.k8s import pod_view
from kueuediag.snapshot.kueue import workloads
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.snapshot.model import Snapshot
from kueuediag.target import resolve

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures"
SNAPSHOTS = sorted([p for p in (FIX / "snapshots").iterdir() if p.is_dir()]
                   + [p for p in (FIX / "scenarios").iterdir() if p.is_dir()])
SOURCES = sorted([*(ROOT / "kueuediag").rglob("*.py"), *(ROOT / "checks").rglob("*.py")])


def _targets(snap: Snapshot) -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = [(f"workload/{w.name}", w.namespace) for w in workloads(snap)]
    for kind in ("Job", "JobSet", "Pod"):
        out += [(f"{kind.lower()}/{o['metadata']['name']}", o["metadata"].get("namespace")) for o in snap.of_kind(kind)]
    return out


def _facts_of(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    facts = data.get("facts")
    return facts if isinstance(facts, dict) else {}


def _owner_answer(snap: Snapshot, fact: str, obj: str) -> tuple[bool, Any]:
    """(known, value) straight from the owner, for the facts whose owner takes one object."""
    if fact in ("pod-past-grace", "pod-counted-active-by-kueue"):
        _, ns, name = obj.split("/", 2)
        pod = next((pod_view(o) for o in snap.of_kind("Pod")
                    if o["metadata"].get("namespace") == ns and o["metadata"].get("name") == name), None)
        assert pod is not None, obj
        if fact == "pod-past-grace":
            return True, is_past_grace(pod, snap.now)
        return True, counted_active_by_kueue(snap, pod).active
    return False, None


def _said(runs: Any) -> dict[tuple[str, str], dict[str, list[str]]]:
    """(fact, object) → value → the checks (code:cause) that said it."""
    said: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        for item in [*run.findings, *run.contributions]:
            for fact, values in _facts_of(item.data).items():
                for obj, value in values.items():
                    said[(fact, obj)][repr(value)].append(f"{run.code}:{item.cause}")
    return said


def _contradictions(said: dict[tuple[str, str], dict[str, list[str]]]) -> list[str]:
    return [f"{fact} of {obj}: " + "; ".join(f"{value} by {', '.join(who)}" for value, who in answers.items())
            for (fact, obj), answers in said.items() if len(answers) > 1]


@pytest.mark.parametrize("path", SNAPSHOTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_two_checks_contradict_each_other(path: Path) -> None:
    snap = load_snapshot(str(path))
    classes = discover()
    problems: list[str] = []
    seen_facts = 0
    for text, ns in _targets(snap):
        verdict = diagnose(snap, resolve(snap, text, ns), classes, Settings())
        said = _said(verdict.runs)
        seen_facts += len(said)
        problems += [f"{text} -n {ns}: {c}" for c in _contradictions(said)]
        for (fact, obj), answers in said.items():
            known, expected = _owner_answer(snap, fact, obj)
            if known and repr(expected) not in answers:
                problems.append(f"{text} -n {ns}: {fact} of {obj}: checks say {list(answers)}, owner says {expected!r}")
    assert not problems, "\n".join(problems[:10])
    if path.name in ("slow-pod-preemption", "zombie-preemption-target", "health-zombie-pod-group",
                     "quota-cohort-borrowing", "frag-h100"):
        assert seen_facts, f"{path.name}: the checks recorded no facts"


def test_the_comparison_catches_a_contradiction() -> None:
    from kueuediag.models import CheckRun, Confidence, Finding, Outcome, Severity

    def run(code: str, value: bool) -> CheckRun:
        f = Finding(code=code, check="x", cause="slow-preemption", title="t", message="m", severity=Severity.LOW,
                    confidence=Confidence.LOW, data={"facts": {"pod-past-grace": {"Pod/ns/p": value}}})
        return CheckRun(code=code, check="x", family="rates", outcome=Outcome.FIRED, findings=(f,))

    assert _contradictions(_said([run("KD302", True), run("KD901", True)])) == []
    [problem] = _contradictions(_said([run("KD302", True), run("KD901", False)]))
    assert "pod-past-grace of Pod/ns/p" in problem and "KD302" in problem and "KD901" in problem


def test_slow_plain_pod_preemption_has_one_statement_of_victim_state() -> None:
    """The reported case: at 14:10 KD302, KD901 and KD102 all see the same zombie that Kueue still counts."""
    from datetime import UTC, datetime

    snap = load_snapshot(str(FIX / "snapshots" / "slow-pod-preemption"),
                         now=datetime(2026, 11, 20, 14, 10, tzinfo=UTC))
    verdict = diagnose(snap, resolve(snap, "pod/infer-server-7", "inference"), discover(), Settings())
    pod = "Pod/batch-jobs/sft-shard-36"
    by_code: dict[str, dict[str, Any]] = {}
    for run in verdict.runs:
        for item in [*run.findings, *run.contributions]:
            facts = _facts_of(item.data)
            if pod in facts.get("pod-past-grace", {}):
                by_code[run.code] = {k: v[pod] for k, v in facts.items() if pod in v}
    assert {"KD302", "KD901", "KD102"} <= set(by_code), by_code
    for code, facts in by_code.items():
        assert facts == {"pod-past-grace": True, "pod-counted-active-by-kueue": True}, code
    texts = " ".join(r.finding.title + " " + r.finding.message for r in verdict.findings)
    assert "within their termination grace period" not in texts
    assert "pods have not terminated yet" not in texts


# --- by construction -----------------------------------------------------------------------------------------

OWNERS = {
    "pod termination arithmetic on deletionTimestamp": {"kueuediag/analysis/pod_termination.py"},
    "flavor taint/label matching": {"kueuediag/analysis/flavor_match.py"},
    "version literal in a comparison": {"kueuediag/analysis/versions.py"},
}
_VERSION_LITERAL = re.compile(r"^v?\d+\.\d+(\.\d+)?$")


def _attr(node: ast.AST) -> str | None:
    return node.attr if isinstance(node, ast.Attribute) else None


def _second_implementations(tree: ast.AST) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and all(isinstance(op, ast.Is | ast.IsNot) for op in node.ops):
            continue  # `pod.deletion is None` asks whether a value exists, not what it means
        if isinstance(node, ast.BinOp | ast.Compare):
            parts = [node.left, node.right] if isinstance(node, ast.BinOp) else [node.left, *node.comparators]
            if any(_attr(p) == "deletion" for p in parts):
                found.add("pod termination arithmetic on deletionTimestamp")
            if isinstance(node, ast.Compare) and any(
                    isinstance(p, ast.Constant) and isinstance(p.value, str) and _VERSION_LITERAL.match(p.value)
                    for p in parts):
                found.add("version literal in a comparison")
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else _attr(node.func)
            args = [_attr(a) for a in node.args]
            if name == "untolerated_taints" and "node_taints" in args:
                found.add("flavor taint/label matching")
            if name in ("pod_fits_node_labels", "node_selector_terms_match") and "node_labels" in args:
                found.add("flavor taint/label matching")
            if name in ("satisfies", "is_fixed", "parse_version") and any(
                    isinstance(a, ast.Constant) and isinstance(a.value, str) and _VERSION_LITERAL.match(a.value)
                    for a in node.args):
                found.add("version literal in a comparison")
    return found


def test_each_fact_has_one_implementation() -> None:
    offenders: list[str] = []
    for path in SOURCES:
        rel = path.relative_to(ROOT).as_posix()
        for fact in _second_implementations(ast.parse(path.read_text(), rel)):
            if rel not in OWNERS[fact]:
                offenders.append(f"{rel}: {fact} (owner: {', '.join(sorted(OWNERS[fact]))})")
    assert not offenders, "\n".join(offenders)


def test_the_detector_finds_each_kind_of_duplicate() -> None:
    """The AST search above must be able to fail: each forbidden shape is detected in a sample."""
    samples = {
        "pod termination arithmetic on deletionTimestamp": "x = snap.now > pod.deletion + grace",
        "flavor taint/label matching": "bad = untolerated_taints(tols, fv.node_taints)",
        "version literal in a comparison": "ok = version >= 'v0.14.0'",
    }
    for fact, code in samples.items():
        assert fact in _second_implementations(ast.parse(code)), fact
    assert not _second_implementations(ast.parse("x = pod.name == 'v1'"))
