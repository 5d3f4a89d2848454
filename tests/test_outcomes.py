"""Contracts of the result API: one owner per cause, honest outcomes on every fixture, escalation of stale waits.

Every built-in check runs on every (snapshot, target) that the per-check case files name, with the built-in
check list (an installed plugin cannot change these results).
"""

from __future__ import annotations

import json
import shutil
from functools import cache
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from kueuediag.causes import CAUSES
from kueuediag.cli import build_app
from kueuediag.config import Settings
from kueuediag.engine import diagnose
from kueuediag.errors import ExitCode
from kueuediag.models import Outcome, Verdict
from kueuediag.registry import builtin
from kueuediag.snapshot.model import load_snapshot
from kueuediag.target import resolve
from kueuediag.timeutil import parse_time

from .case_runner import FIXTURES, load_cases

BUILTIN = builtin()
TARGETS = sorted({(c.snapshot, c.target, c.namespace, c.now) for c in load_cases()}, key=str)


@cache
def verdict(snapshot: str, target: str, namespace: str | None, now: str | None) -> Verdict:
    snap = load_snapshot(str(FIXTURES / snapshot), now=parse_time(now) if now else None)
    return diagnose(snap, resolve(snap, target, namespace), BUILTIN, Settings())


def test_every_cause_has_one_built_in_owner() -> None:
    codes = {cls.code for cls in BUILTIN}
    orphans = [f"{c.slug} -> {c.owner!r}" for c in CAUSES if c.owner not in codes]
    assert not orphans, f"causes whose owner is not a built-in check: {orphans}"


@pytest.mark.parametrize("key", TARGETS, ids=[f"{s}:{t}" for s, t, _, _ in TARGETS])
def test_only_the_owner_emits_a_cause_and_every_outcome_is_backed(key: tuple[str, str, str | None, str | None]) -> None:
    v = verdict(*key)
    owner = {c.slug: c.owner for c in CAUSES}
    problems: list[str] = []
    for run in v.runs:
        problems += [f"{run.code} emits {f.cause} (owner {owner[f.cause]})" for f in run.findings
                     if owner[f.cause] != run.code]
        problems += [f"{run.code} contributes to its own cause {c.cause}" for c in run.contributions
                     if owner[c.cause] == run.code]
        if run.outcome is Outcome.FIRED:
            if not (run.findings or run.contributions):
                problems.append(f"{run.code} fired without findings or contributions")
        elif run.outcome is Outcome.RULED_OUT:
            if not run.evidence or not all(e.observed.strip() for e in run.evidence):
                problems.append(f"{run.code} ruled out without evidence")
        elif run.outcome is Outcome.COULD_NOT_CHECK:
            if not (run.input and run.reason):
                problems.append(f"{run.code} could not check without naming the input and why")
        elif run.outcome is Outcome.NOT_APPLICABLE:
            if not run.reason:
                problems.append(f"{run.code} not applicable without a reason")
        else:
            problems.append(f"{run.code} errored: {run.reason}")
    causes = [r.finding.cause for r in v.findings]
    restated = {c for c in causes if causes.count(c) > 1
                and len({r.finding.code for r in v.findings if r.finding.cause == c}) > 1}
    problems += [f"cause {c} stated by several checks" for c in sorted(restated)]
    assert not problems, "\n".join(problems)


def test_stuck_preemption_is_stated_once_with_all_evidence() -> None:
    v = verdict("scenarios/stuck-preemption-target", "job/vit-h14-finetune-e3", "team-vision", None)
    stuck = [r.finding for r in v.findings if r.finding.cause == "stuck-preemption-target"]
    assert len(stuck) == 1, [(f.code, f.title) for f in stuck]
    f = stuck[0]
    assert f.code == "KD302" and set(f.contributors) == {"KD301", "KD501", "KD901"}
    refs = {str(e.ref) for e in f.evidence if e.ref}
    # the zombie pod (KD302/KD901), the blocked heads' conditions and the log lines (KD501) are all there
    assert "Pod/ml-sweeps/sweep-lr-0917-g4-1" in refs and "Workload/ml-sweeps/sweep-lr-0917-g4" in refs
    assert any(e.source == "log" for e in f.evidence) and any(e.source == "metric" for e in f.evidence)
    # the known bug is its own cause, stated once
    assert [r.finding.code for r in v.findings if r.finding.cause == "known-issue"] == ["KD902"]


def test_preemption_unchanged_for_hours_is_escalated(tmp_path: Path) -> None:
    root = tmp_path / "snap"
    shutil.copytree(FIXTURES / "snapshots" / "healthy-burst", root)
    objects = root / "objects" / "ml.yaml"
    text = objects.read_text()
    moved = text.replace("Pending the preemption of 1 workload(s)'\n    lastTransitionTime: '2026-11-20T13:59:50Z'",
                         "Pending the preemption of 1 workload(s)'\n    lastTransitionTime: '2026-11-20T10:59:50Z'")
    assert moved != text
    objects.write_text(moved)
    snap = load_snapshot(str(root))
    v = diagnose(snap, resolve(snap, "job/eval-9", "ml"), BUILTIN, Settings())
    [f] = [r.finding for r in v.findings if r.finding.code == "KD302"]
    assert f.cause == "stuck-preemption-target" and f.severity.label == "high"
    assert f.title.startswith("preemption has not progressed for 3h00m")
    assert "cycle" not in f.title and "Normal" not in f.message and "3h00m" in f.message


def _copy(tmp_path: Path, rel: str) -> Path:
    root = tmp_path / "snap"
    shutil.copytree(FIXTURES / rel, root)
    return root


def test_junk_in_an_unrelated_pod_leaves_the_verdict_intact(tmp_path: Path) -> None:
    root = _copy(tmp_path, "snapshots/frag-h100")
    pods = root / "objects" / "pods.yaml"
    text = pods.read_text()
    proxy = "  - name: kube-proxy\n    image: gke.gcr.io/kube-proxy-amd64:v1.32.4-gke.1415000\n    resources:\n" \
            "      requests:\n        cpu: 100m"
    assert proxy in text
    pods.write_text(text.replace(proxy, proxy.replace("cpu: 100m", "cpu: lots"), 1))
    result = CliRunner().invoke(build_app(), ["why", "job/llm-finetune", "-n", "team-a", "--from", str(root),
                                              "-o", "json"])
    assert result.exit_code == ExitCode.OK, result.stderr
    doc = json.loads(result.stdout)
    assert doc["verdict"]["cause"] == "not-pending"  # what is still known: it is admitted
    runs = {c["code"]: c for c in doc["checks"]}
    bad = "Pod kube-system/kube-proxy-gke-ml-prod-a3-h100-pool-5f2c9a1e-4xk2"
    blind = sorted(code for code, c in runs.items() if c["result"] == "could-not-check" and c["input"] == bad)
    assert "KD201" in blind and "KD901" in blind, runs
    assert runs["KD201"]["reason"] == "containers[kube-proxy].resources.requests: cpu: invalid quantity 'lots'"
    # the checks that did not need the pod went on, and the verdict says what it could not see
    assert runs["KD002"]["result"] == "fired" and runs["KD701"]["result"] == "not-applicable"
    assert not [c for c in runs.values() if c["result"] == "errored"]
    assert doc["verdict"]["confidence"] == "low"
    assert any(bad in line and "invalid quantity 'lots'" in line for line in doc["verdict"]["unseen"])


def test_junk_in_the_target_workload_is_still_exit_2(tmp_path: Path) -> None:
    root = _copy(tmp_path, "snapshots/frag-h100")
    for path in (root / "objects").glob("*.yaml"):
        text = path.read_text()
        if "name: job-llm-finetune-" in text and "kind: Workload" in text:
            break
    else:
        raise AssertionError("no Workload file")
    docs = list(yaml.safe_load_all(text))
    objs = [o for d in docs if d for o in (d.get("items") or [d])]
    wl = next(o for o in objs if o["kind"] == "Workload" and o["metadata"]["name"].startswith("job-llm-finetune-"))
    wl["spec"]["podSets"][0]["count"] = "many"
    path.write_text(yaml.safe_dump_all(docs))
    result = CliRunner().invoke(build_app(), ["why", "job/llm-finetune", "-n", "team-a", "--from", str(root)])
    assert result.exit_code == ExitCode.USAGE and "count must be a whole number" in result.stderr


def test_forbidden_nodes_lower_the_verdict_confidence(tmp_path: Path) -> None:
    root = _copy(tmp_path, "scenarios/stuck-preemption-target")
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["errors"] = [{"what": "nodes", "error": "forbidden (403): cannot list resource \"nodes\""}]
    (root / "manifest.json").write_text(json.dumps(manifest))
    snap = load_snapshot(str(root))
    v = diagnose(snap, resolve(snap, "job/vit-h14-finetune-e3", "team-vision"), BUILTIN, Settings())
    full = verdict("scenarios/stuck-preemption-target", "job/vit-h14-finetune-e3", "team-vision", None)
    assert full.confidence.label == "high" and full.unseen == ()
    assert v.cause == "stuck-preemption-target" and v.confidence.label == "medium"
    runs = {r.code: r for r in v.runs}
    assert runs["KD201"].outcome is Outcome.COULD_NOT_CHECK and runs["KD201"].input == "nodes"
    assert any(line.startswith("KD201 fragmentation could not check — nodes: not collected (nodes: forbidden (403)")
               for line in v.unseen), v.unseen


def test_an_installed_plugin_cannot_reach_kueuediags_own_tests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """tests/conftest.py keeps every test but test_plugins.py on the built-in checks."""
    from kueuediag.registry import discover_all

    info = tmp_path / "rogue-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: rogue\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[kueuediag.checks]\nrogue = rogue_module:Nope\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = discover_all()
    assert found.errors == [] and [c.code for c in found.classes] == [c.code for c in BUILTIN]
