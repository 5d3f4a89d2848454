"""Engine isolation, skipping, selection, overrides and the ranking policy."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest

from kueuediag.check import Check, CouldNotCheck, NotApplicable
from kueuediag.config import Settings
from kueuediag.engine import EMPTY_LIST, diagnose, drop_ignored, matches, run_check, select_checks
from kueuediag.errors import InputError
from kueuediag.frozen import FrozenInstanceError
from kueuediag.models import CheckResult, CheckRun, Confidence, Finding, Outcome, Severity, ev
from kueuediag.ranking import rank
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.snapshot.model import Part, Snapshot
from kueuediag.target import Target, resolve

BASIC = str(Path(__file__).resolve().parent.parent / "fixtures" / "snapshots" / "basic")
DOC = """Test check.

    What it detects:
        x
    Why the workload stays pending:
        x
    Evidence:
        x
    How to fix:
        x
    Example:
        x
    """


class Boom(Check):
    __doc__ = DOC
    code = "KD990"
    name = "boom"

    def run(self, snapshot: Snapshot, target: Target) -> list[Finding]:
        raise RuntimeError("kaboom")


class NeedsMetrics(Check):
    __doc__ = DOC
    code = "KD991"
    name = "needs-metrics"
    requires: ClassVar[tuple[Part, ...]] = (Part.METRICS,)

    def run(self, snapshot: Snapshot, target: Target) -> list[Finding]:  # pragma: no cover - skipped
        return []


class Fires(Check):
    __doc__ = DOC
    code = "KD992"
    name = "fires"
    options: ClassVar[dict[str, object]] = {"minutes": 5}

    def run(self, snapshot: Snapshot, target: Target) -> list[Finding]:
        return [self.finding("waiting-for-quota", f"needs {self.opts['minutes']}", "m",
                             evidence=[ev("derived", "x")])]


@pytest.fixture(scope="module")
def basic() -> tuple[Snapshot, Target]:
    snap = load_snapshot(BASIC)
    return snap, resolve(snap, "job/resnet-train", "team-a")


def test_exception_becomes_errored_run_and_rest_goes_on(basic: tuple[Snapshot, Target]) -> None:
    snap, target = basic
    v = diagnose(snap, target, [Boom, NeedsMetrics, Fires], Settings())
    runs = {r.code: r for r in v.runs}
    assert runs["KD990"].outcome is Outcome.ERRORED and runs["KD990"].reason == "RuntimeError: kaboom"
    assert runs["KD991"].outcome is Outcome.COULD_NOT_CHECK and runs["KD991"].input == "metrics"
    assert runs["KD991"].reason == "no Prometheus metrics in this snapshot"
    assert runs["KD992"].outcome is Outcome.FIRED
    assert v.cause == "waiting-for-quota"


def test_options_ignore_and_severity_override(basic: tuple[Snapshot, Target]) -> None:
    snap, target = basic
    v = diagnose(snap, target, [Fires], Settings(check_options={"KD992": {"minutes": 9}},
                                                 severity={"KD992": Severity.CRITICAL}))
    assert v.findings[0].finding.title == "needs 9" and v.findings[0].finding.severity is Severity.CRITICAL
    v = diagnose(snap, target, [Fires], Settings(ignore=["waiting-for-quota"]))
    assert v.findings == () and v.runs[0].outcome is Outcome.NOT_APPLICABLE
    assert v.runs[0].reason == "all findings (waiting-for-quota) ignored by configuration"
    with pytest.raises(InputError, match="unknown option 'bogus'"):
        select_checks([Fires], Settings(check_options={"KD992": {"bogus": 1}}))


class FiresAndContributes(Check):
    __doc__ = DOC
    code = "KD993"
    name = "fires-and-contributes"

    def run(self, snapshot: Snapshot, target: Target) -> CheckResult:
        return CheckResult.fired(
            [self.finding("waiting-for-quota", "t", "m", evidence=[ev("derived", "x")])],
            contributions=[self.contribute("slow-preemption", "c", "m", evidence=[ev("derived", "y")])])


def dropped_directly(run: CheckRun, ignore: list[str]) -> tuple[Outcome, tuple[str, ...], tuple[str, ...]]:
    """What is left of a fired run once the ignored causes are removed, worked out from its fields."""
    findings = tuple(f.cause for f in run.findings if f.cause not in ignore)
    contributions = tuple(c.cause for c in run.contributions if c.cause not in ignore)
    return (Outcome.FIRED if findings or contributions else Outcome.NOT_APPLICABLE), findings, contributions


@pytest.mark.parametrize("ignore", [[], ["zombie-pods"], ["waiting-for-quota"], ["slow-preemption"],
                                    ["waiting-for-quota", "slow-preemption"]])
def test_drop_ignored_equals_filtering_the_run(basic: tuple[Snapshot, Target], ignore: list[str]) -> None:
    """A run none of whose causes is ignored is handed back as it is (no copy); otherwise exactly the ignored
    findings and contributions are gone, whichever of the two holds them."""
    snap, target = basic
    run = run_check(FiresAndContributes(), snap, target)
    assert run.outcome is Outcome.FIRED and run.findings and run.contributions
    kept = drop_ignored(run, Settings(ignore=ignore))
    left = (kept.outcome, tuple(f.cause for f in kept.findings), tuple(c.cause for c in kept.contributions))
    assert left == dropped_directly(run, ignore)
    assert (kept is run) == (left == dropped_directly(run, []))


def test_selectors() -> None:
    assert matches("KD9", Fires) and matches("KD9xx", Fires) and matches("kd992", Fires)
    assert matches("fires", Fires) and matches("health", Fires)
    assert not matches("KD1", Fires) and not matches("KD99", Fires)


def _f(cause: str, sev: Severity, conf: Confidence = Confidence.HIGH, about: bool = True) -> Finding:
    return Finding(code="KD100", check="t", cause=cause, title=cause, message="", severity=sev, confidence=conf,
                   about_target=about)


def test_ranking_policy_tiers_before_severity() -> None:
    ranked = rank([
        _f("guarantee-violation", Severity.HIGH),
        _f("waiting-for-quota", Severity.MEDIUM),
        _f("slow-preemption", Severity.MEDIUM),
        _f("exceeds-max-quota", Severity.LOW),
        _f("controller-unhealthy", Severity.CRITICAL, about=False),
        _f("zombie-pods", Severity.HIGH),
    ])
    assert [r.finding.cause for r in ranked] == [
        "exceeds-max-quota", "slow-preemption", "waiting-for-quota", "guarantee-violation", "zombie-pods",
        "controller-unhealthy",
    ]
    assert [r.rank for r in ranked] == [1, 2, 3, 4, 5, 6]


def test_info_findings_never_outrank_real_ones() -> None:
    ranked = rank([_f("slow-preemption", Severity.INFO), _f("guarantee-violation", Severity.MEDIUM)])
    assert ranked[0].finding.cause == "guarantee-violation"


def test_guarantee_violation_headline_mentions_root_cause(basic: tuple[Snapshot, Target]) -> None:
    from kueuediag.engine import headline, workload_info

    snap, target = basic
    ranked = rank([_f("guarantee-violation", Severity.HIGH), _f("fragmentation", Severity.HIGH)])
    text = headline(ranked, workload_info(snap, target))
    assert "fragmentation" in text and "explains the guarantee violation" in text


class RulesOut(Check):
    __doc__ = DOC
    code = "KD993"
    name = "rules-out"

    def run(self, snapshot: Snapshot, target: Target) -> CheckResult:
        return CheckResult.ruled_out(ev("derived", "3 nodes in flavor h100, largest hole 8 >= 8 needed",
                                        kind="ResourceFlavor", name="h100"))


class Blind(Check):
    __doc__ = DOC
    code = "KD994"
    name = "blind"

    def run(self, snapshot: Snapshot, target: Target) -> CheckResult:
        raise CouldNotCheck("nodes", "forbidden (403): need list nodes")


class NotForThis(Check):
    __doc__ = DOC
    code = "KD995"
    name = "not-for-this"

    def run(self, snapshot: Snapshot, target: Target) -> CheckResult:
        raise NotApplicable("the workload is not pending")


class Contributes(Check):
    """Contributes evidence to waiting-for-quota, which KD102 owns."""

    __doc__ = DOC
    code = "KD996"
    name = "contributes"

    def run(self, snapshot: Snapshot, target: Target) -> CheckResult:
        return CheckResult.fired(contributions=[self.contribute(
            "waiting-for-quota", "c-title", "c-message", severity=Severity.LOW, confidence=Confidence.HIGH,
            evidence=[ev("metric", "pending 12", field="kueue_pending_workloads")], remediation=["look at it"])])


class Silent(Check):
    __doc__ = DOC
    code = "KD997"
    name = "silent"

    def run(self, snapshot: Snapshot, target: Target) -> list[Finding]:
        return []


def test_four_outcomes_carry_what_backs_them(basic: tuple[Snapshot, Target]) -> None:
    snap, target = basic
    v = diagnose(snap, target, [RulesOut, Blind, NotForThis, Silent], Settings())
    runs = {r.code: r for r in v.runs}
    assert runs["KD993"].outcome is Outcome.RULED_OUT
    assert runs["KD993"].evidence[0].observed == "3 nodes in flavor h100, largest hole 8 >= 8 needed"
    assert (runs["KD994"].outcome, runs["KD994"].input) == (Outcome.COULD_NOT_CHECK, "nodes")
    assert "403" in runs["KD994"].reason
    assert (runs["KD995"].outcome, runs["KD995"].reason) == (Outcome.NOT_APPLICABLE, "the workload is not pending")
    # an empty list says nothing about what was looked at: never "ruled out"
    assert runs["KD997"].outcome is Outcome.ERRORED and runs["KD997"].reason == EMPTY_LIST


def test_ruled_out_without_evidence_is_refused() -> None:
    with pytest.raises(ValueError, match="evidence"):
        CheckResult.ruled_out()
    with pytest.raises(ValueError, match="finding or contribution"):
        CheckResult.fired()


def test_contribution_folds_into_the_owner_finding(basic: tuple[Snapshot, Target]) -> None:
    snap, target = basic
    v = diagnose(snap, target, [Fires, Contributes], Settings())
    assert len(v.findings) == 1
    f = v.findings[0].finding
    assert (f.code, f.cause, f.title, f.contributors) == ("KD992", "waiting-for-quota", "needs 5", ("KD996",))
    assert [e.observed for e in f.evidence] == ["x", "pending 12"]
    assert "look at it" in f.remediation and f.severity is Severity.MEDIUM and f.confidence is Confidence.HIGH
    runs = {r.code: r for r in v.runs}
    assert runs["KD996"].outcome is Outcome.FIRED and runs["KD996"].contributions[0].cause == "waiting-for-quota"


def test_contribution_without_owner_becomes_the_finding(basic: tuple[Snapshot, Target]) -> None:
    snap, target = basic
    v = diagnose(snap, target, [Contributes], Settings())
    f = v.findings[0].finding
    assert (f.code, f.cause, f.title, f.severity, f.contributors) == (
        "KD996", "waiting-for-quota", "c-title", Severity.LOW, ())


def test_verdict_confidence_drops_when_relevant_inputs_are_unseen(basic: tuple[Snapshot, Target]) -> None:
    snap, target = basic
    seen = diagnose(snap, target, [Fires, RulesOut], Settings())
    assert seen.confidence is Confidence.HIGH and seen.unseen == ()

    class BlindOwner(Blind):
        code = "KD102"  # owns exceeds-max-quota, a blocker: it could have outranked waiting-for-quota
        name = "blind-owner"

    blind = diagnose(snap, target, [Fires, BlindOwner], Settings())
    assert blind.confidence is Confidence.MEDIUM
    assert blind.unseen == ("KD102 blind-owner could not check — nodes: forbidden (403): need list nodes",)


@pytest.mark.parametrize("kwargs", [
    {},
    {"kind": "Node", "name": "gpu-1"},
    {"kind": "Workload", "name": "w", "namespace": "team-a", "field": "status.conditions", "expected": "True"},
    {"kind": "", "name": "w"},  # no kind: no reference
    {"kind": "Node", "name": ""},
])
def test_ev_assembled_from_plain_strings_equals_the_validated_model(kwargs: dict[str, str]) -> None:
    """ev() skips every check when every value already is a plain str: the result is the very record pydantic's
    validation builds (equal, same dump, same hash and repr, still frozen)."""
    from kueuediag.frozen import validated
    from kueuediag.models import Evidence, ObjectRef

    fast = ev("derived", "seen", **kwargs)
    ref = (validated(ObjectRef, {"kind": kwargs["kind"], "name": kwargs["name"],
                                 "namespace": kwargs.get("namespace")})
           if kwargs.get("kind") and kwargs.get("name") else None)
    slow = validated(Evidence, {"source": "derived", "ref": ref, "field": kwargs.get("field"), "observed": "seen",
                                "expected": kwargs.get("expected")})
    assert fast == slow
    assert fast.model_dump() == slow.model_dump()
    assert list(fast.__dict__) == list(slow.__dict__)
    assert hash(fast) == hash(slow) and repr(fast) == repr(slow)
    assert fast.model_fields_set == slow.model_fields_set
    with pytest.raises(FrozenInstanceError, match="frozen"):
        fast.observed = "changed"  # type: ignore[misc]
    again = ev("metric", "other", **kwargs)  # the same reference: one shared (frozen) ObjectRef
    assert again.ref is fast.ref and again.ref == slow.ref


def test_ev_still_validates_other_values() -> None:
    """A value that is not a plain str (a plugin passing a number) is validated by pydantic and refused."""
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="observed"):
        ev("derived", 3)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="name"):
        ev("derived", "seen", kind="Node", name=7)  # type: ignore[arg-type]


def test_owner_tables_follow_the_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine's owner tables equal a pass over the catalog, and include a cause a plugin registers later."""
    from dataclasses import replace

    from kueuediag import causes
    from kueuediag.causes import TIER_ORDER, all_causes, owned_tiers, owners, register_cause

    monkeypatch.setattr(causes, "BY_SLUG", dict(causes.BY_SLUG))  # this test's registration stays in its copy

    def direct() -> tuple[dict[str, str], dict[str, list[int]]]:
        tiers: dict[str, list[int]] = {}
        for c in all_causes():
            tiers.setdefault(c.owner, []).append(TIER_ORDER[c.tier])
        return {c.slug: c.owner for c in all_causes()}, tiers

    own, tiers = direct()
    assert owners() == own
    assert {k: list(v) for k, v in owned_tiers().items()} == tiers
    template = next(iter(all_causes()))
    added = replace(template, slug="zz-test-owner-tables", owner="ZZ901")
    register_cause(added)
    own, tiers = direct()
    assert owners()["zz-test-owner-tables"] == "ZZ901" and owners() == own
    assert list(owned_tiers()["ZZ901"]) == tiers["ZZ901"] == [TIER_ORDER[added.tier]]


@pytest.mark.parametrize("fixture", ["basic", "frag-h100", "guarantee-violation", "queue-priority"])
def test_builtin_runs_assembled_equal_validated_runs(fixture: str) -> None:
    """A built-in check's run is assembled from its CheckResult without checking it again: every run equals the
    CheckRun pydantic's validation builds from the same values, field for field and in field order."""
    from kueuediag.frozen import validated as check_validated
    from kueuediag.models import CheckRun
    from kueuediag.registry import discover
    from kueuediag.snapshot.kueue import workloads

    snap = load_snapshot(str(Path(__file__).resolve().parent.parent / "fixtures" / "snapshots" / fixture))
    compared = 0
    for w in workloads(snap)[:6]:
        verdict = diagnose(snap, resolve(snap, f"workload/{w.name}", w.namespace), discover(), Settings())
        for run in verdict.runs:
            validated = check_validated(CheckRun, {name: getattr(run, name) for name in run.model_fields_set})
            assert run == validated and list(run.__dict__) == list(validated.__dict__), run.code
            assert run.model_dump() == validated.model_dump() and run.model_fields_set == validated.model_fields_set
            compared += 1
    assert compared > 0


def test_result_constructors_assemble_what_validation_builds() -> None:
    """CheckResult.ruled_out / could_not_check / not_applicable assemble the result when the values already have
    their fields' types: equal to what pydantic's validation builds, same fields set; other values are validated."""
    from kueuediag.frozen import validated
    from kueuediag.models import Evidence

    e1, e2 = ev("derived", "looked", kind="Node", name="n"), ev("metric", "fine", field="up")
    pairs = [
        (CheckResult.ruled_out(e1, e2, reason="why"),
         {"outcome": Outcome.RULED_OUT, "evidence": (e1, e2), "reason": "why"}),
        (CheckResult.ruled_out(e1), {"outcome": Outcome.RULED_OUT, "evidence": (e1,), "reason": ""}),
        (CheckResult.could_not_check("metrics", "not collected"),
         {"outcome": Outcome.COULD_NOT_CHECK, "input": "metrics", "reason": "not collected"}),
        (CheckResult.could_not_check("", "no input named"),
         {"outcome": Outcome.COULD_NOT_CHECK, "input": "", "reason": "no input named"}),
        (CheckResult.not_applicable("not pending"), {"outcome": Outcome.NOT_APPLICABLE, "reason": "not pending"}),
    ]
    for fast, values in pairs:
        slow = validated(CheckResult, values)
        assert fast == slow and list(fast.__dict__) == list(slow.__dict__) and repr(fast) == repr(slow)
        assert fast.model_fields_set == slow.model_fields_set and fast.model_dump() == slow.model_dump()
    # a dict is validated into an Evidence; a wrong type is refused
    lax = CheckResult.ruled_out({"source": "derived", "observed": "x"})  # type: ignore[arg-type]
    assert lax.evidence == (Evidence(source="derived", observed="x"),)
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="reason"):
        CheckResult.not_applicable(42)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="evidence"):
        CheckResult.ruled_out("not evidence")  # type: ignore[arg-type]


def test_replaced_equals_model_copy() -> None:
    """models.replaced (the engine's copy of a finding, run, ranked finding or fix with a few fields changed) builds
    what pydantic's model_copy(update=...) builds: the updated values unvalidated, the other fields as they were,
    in field order, the updated names added to the fields set; a new frozen record, the original untouched."""
    from kueuediag.models import (
        CheckRun,
        Finding,
        Fix,
        FixStatus,
        Layer,
        RankedFinding,
        Severity,
        replaced,
    )

    finding = Finding(code="KD101", check="guarantee-violation", cause="guarantee-violation", title="t",
                      message="m", severity=Severity.HIGH, evidence=(ev("derived", "seen"),), data={"a": 1})
    fix = Fix(text="kubectl get pods", status=FixStatus.ADVICE)
    cases = [
        (finding, {"severity": Severity.LOW}),
        (finding, {"fixes": (fix,), "contributors": ("KD201",)}),
        (RankedFinding(rank=1, layer=Layer.KUEUE, finding=finding), {"finding": finding}),
        (CheckRun(code="KD101", check="c", family="f", outcome=Outcome.FIRED, findings=(finding,)),
         {"findings": (), "outcome": Outcome.NOT_APPLICABLE, "reason": "ignored"}),
        (fix, {"note": "ask the admin"}),
    ]
    for obj, update in cases:
        before = dict(obj.__dict__)
        fast, slow = replaced(obj, **update), obj.model_copy(update=update)
        assert fast == slow and repr(fast) == repr(slow) and fast.model_dump() == slow.model_dump()
        assert type(fast) is type(obj) and fast.__dict__ == {**before, **update}
        assert list(fast.__dict__) == list(type(obj).model_fields) and obj.__dict__ == before
        assert fast.model_fields_set == obj.model_fields_set | update.keys() == slow.model_fields_set
        assert fast.__dict__ is not obj.__dict__
        with pytest.raises(FrozenInstanceError, match="frozen"):
            fast.code = "changed"  # type: ignore[misc,union-attr]
