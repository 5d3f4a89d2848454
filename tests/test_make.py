"""`kueuediag.models.make`: the instance the constructor builds, assembled when validation would keep every value.

What is compared for each pair: equality, the fields in field order, the fields set, repr, the dump (so the JSON
output), and that the instance is still frozen. Values validation would change (a list for a tuple, an int for a
float or an enum) and values it refuses go through the constructor, so they are converted or refused as before.
"""

from __future__ import annotations

from enum import Enum, StrEnum
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from kueuediag import models
from kueuediag.models import (
    CheckResult,
    CheckRun,
    Confidence,
    Contribution,
    Evidence,
    Finding,
    Fix,
    FixStatus,
    Layer,
    ObjectRef,
    Outcome,
    Patch,
    RankedFinding,
    Severity,
    Verdict,
    WorkloadInfo,
    ev,
    make,
)


class _Slug(StrEnum):
    QUOTA = "insufficient-quota"


class _Mixed(str, Enum):
    KIND = "Node"


E1 = ev("object", "seen", kind="Node", name="gpu-1")
E2 = ev("metric", "fine", field="up")
PATCH = Patch(kind="Pod", name="p", namespace="ns", delete=True, flags=("--force",))
FIX = Fix(text="delete it", patch=PATCH, status=FixStatus.VERIFIED)
FINDING = Finding(code="KD101", check="quota", cause="insufficient-quota", title="t", message="m",
                  severity=Severity.HIGH, evidence=(E1,), fixes=(FIX,))

CASES: list[tuple[type[BaseModel], dict[str, Any]]] = [
    (ObjectRef, {"kind": "Node", "name": "gpu-1"}),
    (ObjectRef, {"kind": _Mixed.KIND, "name": "gpu-1", "namespace": None}),  # a str-Enum member: its text
    (Evidence, {"source": "object", "ref": ObjectRef(kind="Pod", name="p"), "observed": "x", "expected": "y"}),
    (Patch, {"kind": "ClusterQueue", "name": "cq", "json_ops": ({"op": "replace", "path": "/a", "value": 1},)}),
    (Patch, {"kind": "LocalQueue", "name": "lq", "namespace": "ns", "merge": {"spec": {"stopPolicy": "None"}},
             "assumed": {"kind": "LocalQueue"}}),
    (Fix, {"text": "do it", "patch": PATCH, "status": FixStatus.STOP_GAP, "stop_gap": True, "reason": "relief"}),
    (Fix, {"text": "advice", "command": None, "status": FixStatus.ADVICE}),
    (Finding, {"code": "KD101", "check": "quota", "cause": _Slug.QUOTA, "title": "t", "message": "m",
               "severity": Severity.HIGH, "confidence": Confidence.MEDIUM, "evidence": (E1, E2),
               "remediation": ("r1", "r2"), "docs": "https://x", "about_target": False,
               "data": {"share": 0, "series": [1, 2]}, "fixes": (FIX,)}),
    (Finding, {"code": "KD101", "check": "quota", "cause": "c", "title": "t", "message": "m",
               "severity": Severity.LOW}),  # defaults and factories for the rest
    (Contribution, {"cause": "c", "title": "t", "message": "m", "severity": Severity.INFO, "data": {}}),
    (CheckResult, {"outcome": Outcome.FIRED, "findings": (FINDING,)}),
    (CheckResult, {"outcome": Outcome.CLEAR, "evidence": (E1,), "reason": ""}),
    (CheckRun, {"code": "KD101", "check": "quota", "family": "quota", "outcome": Outcome.ERRORED,
                "reason": "boom", "duration_ms": 1.5}),
    (RankedFinding, {"rank": 1, "layer": Layer.KUEUE, "finding": FINDING}),
    (WorkloadInfo, {"namespace": "ns", "name": None, "owner": ObjectRef(kind="Job", name="j"), "state": "pending",
                    "pending_seconds": 12.5, "priority": 100}),
]


def _same(fast: BaseModel, slow: BaseModel) -> None:
    assert type(fast) is type(slow)
    assert fast == slow and repr(fast) == repr(slow)
    assert list(fast.__dict__) == list(slow.__dict__)
    assert fast.model_fields_set == slow.model_fields_set
    assert fast.model_dump() == slow.model_dump() and fast.model_dump_json() == slow.model_dump_json()
    assert all(type(getattr(fast, name)) is type(getattr(slow, name)) for name in type(fast).model_fields)
    with pytest.raises(ValidationError, match="frozen"):
        setattr(fast, next(iter(type(fast).model_fields)), "changed")


@pytest.mark.parametrize("cls, values", CASES, ids=[f"{c.__name__}-{i}" for i, (c, _) in enumerate(CASES)])
def test_make_builds_what_the_constructor_builds(cls: type[BaseModel], values: dict[str, Any]) -> None:
    _same(make(cls, **values), cls(**values))


def test_dicts_are_copied_as_validation_copies_them() -> None:
    data = {"series": [1, 2]}
    ops = {"op": "remove", "path": "/x"}
    f = make(Finding, code="KD1", check="c", cause="x", title="t", message="m", severity=Severity.LOW, data=data)
    p = make(Patch, kind="Pod", name="p", json_ops=(ops,))
    assert f.data == data and f.data is not data and f.data["series"] is data["series"]  # shallow, as validation
    assert p.json_ops == (ops,) and p.json_ops[0] is not ops
    data["added"] = True
    assert "added" not in f.data


@pytest.mark.parametrize("cls, values", [
    (CheckResult, {"outcome": Outcome.CLEAR, "evidence": [E1]}),  # a list for a tuple: converted
    (CheckResult, {"outcome": "ruled-out", "evidence": ({"source": "derived", "observed": "x"},)}),  # dict → model
    (CheckRun, {"code": "KD1", "check": "c", "family": "f", "outcome": Outcome.FIRED, "duration_ms": 3}),  # int
    (Finding, {"code": "KD1", "check": "c", "cause": "x", "title": "t", "message": "m", "severity": 3}),  # int
    (Fix, {"text": "x", "status": "advice"}),  # the enum's value
], ids=["list-for-tuple", "dict-for-model", "int-for-float", "int-for-enum", "str-for-enum"])
def test_values_validation_converts_are_validated(cls: type[BaseModel], values: dict[str, Any]) -> None:
    fast, slow = make(cls, **values), cls(**values)
    _same(fast, slow)


@pytest.mark.parametrize("cls, values", [
    (Evidence, {"source": "derived", "observed": 3}),
    (Evidence, {"source": "derived"}),  # a required field missing
    (Evidence, {"source": "derived", "observed": "x", "colour": "red"}),  # an unknown field
    (Finding, {"code": "KD1", "check": "c", "cause": "x", "title": "t", "message": "m", "severity": "urgent"}),
    (Finding, {"code": "KD1", "check": "c", "cause": "x", "title": "t", "message": "m", "severity": Severity.LOW,
               "data": {1: "not a str key"}}),
    (RankedFinding, {"rank": 1, "layer": Layer.KUEUE, "finding": "not a finding"}),
], ids=["wrong-type", "missing", "unknown", "bad-enum", "bad-dict-key", "bad-model"])
def test_refused_values_fail_as_the_constructor_fails(cls: type[BaseModel], values: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as slow:
        cls(**values)
    with pytest.raises(ValidationError) as fast:
        make(cls, **values)
    assert fast.value.errors() == slow.value.errors()


def test_a_long_run_validates_after_the_first_instances(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ASSEMBLED_PER_CLASS instances of a class, `make` calls the constructor (a built validator is faster):
    the instances are the same either way."""
    monkeypatch.setattr(models, "ASSEMBLED_PER_CLASS", 2)
    monkeypatch.setattr(models, "_MADE", {})
    calls: list[dict[str, Any]] = []
    real = ObjectRef.__init__

    def counting(self: ObjectRef, /, **data: Any) -> None:
        calls.append(data)
        real(self, **data)

    monkeypatch.setattr(ObjectRef, "__init__", counting)
    refs = [make(ObjectRef, kind="Node", name=f"n{i}") for i in range(4)]
    assert [c["name"] for c in calls] == ["n2", "n3"]
    for i, ref in enumerate(refs):
        _same(ref, ObjectRef(kind="Node", name=f"n{i}"))


def test_verdict_assembled_from_typed_parts() -> None:
    info = make(WorkloadInfo, namespace="ns", name="w", state="pending")
    ranked = (make(RankedFinding, rank=1, layer=Layer.KUEUE, finding=FINDING),)
    run = make(CheckRun, code="KD101", check="quota", family="quota", outcome=Outcome.FIRED, findings=(FINDING,))
    values: dict[str, Any] = {"workload": info, "cause": "insufficient-quota", "layer": Layer.KUEUE,
                              "headline": "h", "findings": ranked, "runs": (run,),
                              "captured_at": "2026-01-01T00:00:00Z", "confidence": Confidence.HIGH, "unseen": (),
                              "first_fix": FIX}
    _same(make(Verdict, **values), Verdict(**values))


def test_a_subclass_defined_elsewhere_is_always_validated() -> None:
    """A plugin's subclass may add validators or configuration: `make` (and CheckResult's constructors, which
    use it) hand it to the constructor, so they run."""
    from pydantic import field_validator

    class Shouting(CheckResult):
        @field_validator("reason")
        @classmethod
        def upper(cls, value: str) -> str:
            return value.upper()

    assert make(Shouting, outcome=Outcome.NOT_APPLICABLE, reason="quiet").reason == "QUIET"
    assert Shouting.not_applicable("quiet").reason == "QUIET"
    assert Shouting.fired([FINDING]).findings == (FINDING,)
