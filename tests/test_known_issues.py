"""KD902's table of known upstream bugs: coverage by cases, graded confidence, the path language it is written in."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from kueuediag.analysis.known_issues import (
    EFFECTS,
    context_for,
    known_issue,
    known_issues,
    match_issue,
)
from kueuediag.analysis.object_path import holds, resolve, tokens
from kueuediag.analysis.signatures import parse_version
from kueuediag.models import Confidence
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.target import resolve as resolve_target

from .case_runner import load_cases

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
KD902 = [c for c in load_cases() if c.check == "KD902"]


def test_table_has_at_least_thirty_well_formed_entries() -> None:
    issues = known_issues()
    assert len(issues) >= 30
    for i in issues:
        assert i.effect in EFFECTS, i.id
        for ref in (*i.issues, *i.prs):
            assert re.fullmatch(r"#\d+", ref), f"{i.id}: bad reference {ref!r}"
        for v in i.fixed_in:
            assert parse_version(v) is not None, f"{i.id}: bad fixed_in {v!r}"
        # a release note line quoted as evidence, short (never more than one line of upstream text)
        assert len(i.changelog) <= 200, i.id
        assert i.workaround, i.id


def test_every_entry_has_a_firing_and_a_fixed_version_clear_case() -> None:
    firing = {str(e.get("data", {}).get("issue")) for c in KD902 for e in c.expect}
    clear = {c.issue for c in KD902 if not c.expect and c.issue}
    missing_fire = [i.id for i in known_issues() if i.id not in firing]
    missing_clear = [i.id for i in known_issues() if i.id not in clear]
    assert not missing_fire, f"entries without a firing case in fixtures/cases/KD902.yaml: {missing_fire}"
    assert not missing_clear, f"entries without a fixed-version clear case: {missing_clear}"


@pytest.mark.parametrize("case", [c for c in KD902 if not c.expect and c.issue], ids=lambda c: c.issue)
def test_clear_case_runs_a_release_with_the_fix(case: object) -> None:
    """The clear case of an entry is the firing snapshot on a fixed release (or with the mitigating gate on)."""
    from .case_runner import Case

    assert isinstance(case, Case) and case.issue
    issue = known_issue(case.issue)
    if case.kueue_version is not None:
        assert not issue.affects(case.kueue_version), f"{case.kueue_version} is not fixed for {issue.id}"
    else:
        assert issue.mitigation_gate, f"{issue.id}: clear case without kueue_version and no mitigating gate"


def _ctx(snapshot: str, target: str, namespace: str, version: str, drop_logs: bool = False) -> object:
    snap = load_snapshot(str(FIXTURES / "snapshots" / snapshot))
    snap.manifest = replace(snap.manifest, kueue_version=version)
    if drop_logs:
        snap.logs_text = None
    t = resolve_target(snap, target, namespace)
    v = parse_version(version)
    assert v is not None
    return context_for(snap, v, t.workload, t.cluster_queue(snap))


def test_version_alone_never_fires() -> None:
    """A cluster with nothing wrong, on a release that has every bug of the table, matches none of them."""
    for issue in known_issues():
        fixes = sorted(v for v in (parse_version(x) for x in issue.fixed_in) if v is not None)
        first = fixes[0] if fixes else None
        version = "v0.19.2" if first is None else str(
            replace(first, patch=0, pre=()) if first.patch else replace(first, minor=first.minor - 1, pre=()))
        if issue.introduced and not issue.affects(version):
            version = issue.introduced
        assert issue.affects(version), f"{issue.id}: {version} should be affected"
        ctx = _ctx("basic", "job/resnet-train", "team-a", version)
        assert match_issue(ctx, issue) is None, f"{issue.id} fired on {version} without its signature"  # type: ignore[arg-type]


def test_object_evidence_is_high_and_a_log_alone_is_medium() -> None:
    high = _ctx("ki-tas-preemption-without-tas-cache", "workload/job-train-a1b2c", "team-a", "v0.15.0")
    m = match_issue(high, known_issue("tas-preemption-without-tas-cache"))  # type: ignore[arg-type]
    assert m is not None and m.confidence is Confidence.HIGH
    assert any("no TAS cache information" in e.observed for e in m.evidence)

    medium = _ctx("ki-localqueue-status-too-many-flavors", "workload/job-train-a1b2c", "team-a", "v0.17.4")
    m = match_issue(medium, known_issue("localqueue-status-too-many-flavors"))  # type: ignore[arg-type]
    assert m is not None and m.confidence is Confidence.MEDIUM
    assert any(e.source == "log" and "must have at most 16 items" in e.observed for e in m.evidence)
    assert any(e.ref is not None and e.ref.kind == "ClusterQueue" for e in m.evidence)  # the configuration


def test_configuration_without_the_log_line_does_not_fire() -> None:
    """The same cluster (18 flavors, affected release) without the rejected status write: nothing to report."""
    ctx = _ctx("ki-localqueue-status-too-many-flavors", "workload/job-train-a1b2c", "team-a", "v0.17.4",
               drop_logs=True)
    assert match_issue(ctx, known_issue("localqueue-status-too-many-flavors")) is None  # type: ignore[arg-type]


def test_a_log_line_without_the_required_configuration_does_not_fire() -> None:
    """The `no candidate workloads` line on a flat cohort is not the hierarchical-cohort bug."""
    ctx = _ctx("ki-preemption-over-borrowing-stuck", "workload/job-train-a1b2c", "team-a", "v0.11.3")
    assert match_issue(ctx, known_issue("hierarchical-cohort-classical-preemption")) is None  # type: ignore[arg-type]


def test_stale_message_detectors_need_the_message_to_be_stale() -> None:
    """Taint still on the flavor → the message is current: not the no-retry bug."""
    ctx = _ctx("ki-flavor-taint-edit-not-retried", "workload/job-train-a1b2c", "team-a", "v0.18.4")
    issue = known_issue("flavor-taint-edit-not-retried")
    m = match_issue(ctx, issue)  # type: ignore[arg-type]
    assert m is not None and "{reserved maintenance NoSchedule <nil>}" in m.summary
    snap = ctx.snap  # type: ignore[attr-defined]
    rf = snap.get("ResourceFlavor", "default")
    rf["spec"]["nodeTaints"] = [{"key": "reserved", "value": "maintenance", "effect": "NoSchedule"}]
    snap._memo.clear()
    assert match_issue(context_for(snap, ctx.version, ctx.workload, ctx.cq), issue) is None  # type: ignore[attr-defined]


def test_object_path_language() -> None:
    obj = {"metadata": {"annotations": {"kueue.x-k8s.io/podset-slice-size": "4"}},
           "spec": {"podSets": [{"count": 0}, {"count": 3}]},
           "status": {"conditions": [{"type": "QuotaReserved", "status": "False", "message": "no TAS cache"}],
                      "consumed": {"cpu": "0", "gpu": "0"}}}
    assert tokens('a.b[]["x/y"]') == [("key", "a"), ("key", "b"), ("filter", ""), ("key", "x/y")]
    assert resolve(obj, 'metadata.annotations["kueue.x-k8s.io/podset-slice-size"]') == ["4"]
    assert resolve(obj, "spec.podSets[].count") == [0, 3]
    assert holds(obj, "status.conditions[type=QuotaReserved].message", {"regex": "TAS cache"})
    assert not holds(obj, "status.conditions[type=Admitted].message", {"exists": True})
    assert holds(obj, "status.consumed.*", {"all_eq": "0"})
    assert holds(obj, "spec.podSets", {"len_gt": 1}) and not holds(obj, "spec.podSets", {"len_gt": 2})
    assert holds(obj, "spec.podSets[].count", {"gt": 2}) and not holds(obj, "spec.podSets[].count", {"gt": 3})
    with pytest.raises(ValueError):
        holds(obj, "spec", {"bogus": 1})
