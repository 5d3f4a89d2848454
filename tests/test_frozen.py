"""`kueuediag.frozen`: a record's constructor builds what pydantic's validation builds.

Values of their fields' exact types are kept by the record's generated checks; pydantic validates the rest. What
is compared for each pair (the constructor, `frozen.validated`): equality, the fields in field order, the fields
set, repr, the dump (so the JSON output), and that the instance is frozen. Values validation would change (a list
for a tuple, an int for a float or an enum) and values it refuses go to pydantic, so they are converted or refused
as pydantic converts or refuses them.
"""

from __future__ import annotations

import pickle
from enum import Enum, StrEnum
from typing import Any

import pytest
from pydantic import ValidationError

from kueuediag.frozen import Field, FrozenInstanceError, Record, validated, validator
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

CASES: list[tuple[type[Record], dict[str, Any]]] = [
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


def _same(fast: Record, slow: Record) -> None:
    assert type(fast) is type(slow)
    assert fast == slow and repr(fast) == repr(slow)
    assert list(fast.__dict__) == list(slow.__dict__)
    assert fast.model_fields_set == slow.model_fields_set
    assert fast.model_dump() == slow.model_dump() and fast.model_dump_json() == slow.model_dump_json()
    assert all(type(getattr(fast, name)) is type(getattr(slow, name)) for name in type(fast).model_fields)
    with pytest.raises(FrozenInstanceError, match="frozen"):
        setattr(fast, next(iter(type(fast).model_fields)), "changed")
    with pytest.raises(FrozenInstanceError, match="frozen"):
        delattr(fast, next(iter(type(fast).model_fields)))
    assert pickle.loads(pickle.dumps(fast)) == fast and pickle.loads(pickle.dumps(fast)).model_fields_set == \
        fast.model_fields_set


@pytest.mark.parametrize("cls, values", CASES, ids=[f"{c.__name__}-{i}" for i, (c, _) in enumerate(CASES)])
def test_the_constructor_builds_what_validation_builds(cls: type[Record], values: dict[str, Any]) -> None:
    _same(cls(**values), validated(cls, values))


def test_dicts_are_copied_as_validation_copies_them() -> None:
    data = {"series": [1, 2]}
    ops = {"op": "remove", "path": "/x"}
    f = Finding(code="KD1", check="c", cause="x", title="t", message="m", severity=Severity.LOW, data=data)
    p = Patch(kind="Pod", name="p", json_ops=(ops,))
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
def test_values_validation_converts_are_validated(cls: type[Record], values: dict[str, Any]) -> None:
    _same(cls(**values), validated(cls, values))


@pytest.mark.parametrize("cls, values", [
    (Evidence, {"source": "derived", "observed": 3}),
    (Evidence, {"source": "derived"}),  # a required field missing
    (Evidence, {"source": "derived", "observed": "x", "colour": "red"}),  # an unknown field
    (Finding, {"code": "KD1", "check": "c", "cause": "x", "title": "t", "message": "m", "severity": "urgent"}),
    (Finding, {"code": "KD1", "check": "c", "cause": "x", "title": "t", "message": "m", "severity": Severity.LOW,
               "data": {1: "not a str key"}}),
    (RankedFinding, {"rank": 1, "layer": Layer.KUEUE, "finding": "not a finding"}),
], ids=["wrong-type", "missing", "unknown", "bad-enum", "bad-dict-key", "bad-model"])
def test_refused_values_fail_as_the_constructor_fails(cls: type[Record], values: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as slow:
        validated(cls, values)
    with pytest.raises(ValidationError) as fast:
        cls(**values)
    assert fast.value.errors() == slow.value.errors() and fast.value.title == cls.__name__


def test_verdict_assembled_from_typed_parts() -> None:
    info = WorkloadInfo(namespace="ns", name="w", state="pending")
    ranked = (RankedFinding(rank=1, layer=Layer.KUEUE, finding=FINDING),)
    run = CheckRun(code="KD101", check="quota", family="quota", outcome=Outcome.FIRED, findings=(FINDING,))
    values: dict[str, Any] = {"workload": info, "cause": "insufficient-quota", "layer": Layer.KUEUE,
                              "headline": "h", "findings": ranked, "runs": (run,),
                              "captured_at": "2026-01-01T00:00:00Z", "confidence": Confidence.HIGH, "unseen": (),
                              "first_fix": FIX}
    _same(Verdict(**values), validated(Verdict, values))


def test_a_subclass_adds_fields_and_keeps_its_own_init() -> None:
    """A plugin's subclass of a record: its fields follow the parent's, each class compiles its own checks, and
    an instance of the subclass is kept where the parent's type is asked for (as pydantic keeps it)."""

    class Tagged(Evidence):
        tag: str = Field(default="", description="a plugin's label")

    t = Tagged(source="derived", observed="x", tag="mine")
    assert list(t.__dict__) == [*Evidence.model_fields, "tag"] and t.tag == "mine"
    assert Evidence(source="derived", observed="x") == validated(Evidence, {"source": "derived", "observed": "x"})
    assert CheckResult.ruled_out(t).evidence[0] is t
    with pytest.raises(ValidationError, match="tag"):
        Tagged(source="derived", observed="x", tag=1)
    assert validator(Tagged).model_fields["tag"].description == "a plugin's label"
    assert "tag" not in vars(Tagged)  # a field's default is the instance's, not a class attribute (as pydantic)


def test_model_interface() -> None:
    """The parts of pydantic's model interface kueuediag and its plugins use."""
    assert Finding.model_fields["confidence"].default is Confidence.HIGH
    assert Finding.model_fields["code"].is_required() and not Finding.model_fields["data"].is_required()
    assert Evidence.model_validate({"observed": "o", "source": "s"}) == ev("s", "o")
    assert Evidence.model_validate(E1) is E1
    dumped = FINDING.model_dump(mode="json")
    assert dumped["severity"] == 3 and dumped["evidence"][0]["ref"] == {"kind": "Node", "name": "gpu-1",
                                                                         "namespace": None}
    assert FINDING.model_dump()["evidence"] == ({"source": "object", "ref": {"kind": "Node", "name": "gpu-1",
                                                                              "namespace": None},
                                                 "field": None, "observed": "seen", "expected": None},)
    assert "fixes" not in FINDING.model_dump(exclude={"fixes"})
    assert ObjectRef(kind="Node", name="n").model_dump_json() == '{"kind":"Node","name":"n","namespace":null}'
    schema = Finding.model_json_schema()
    assert schema["title"] == "Finding" and "severity" in schema["required"]
    assert hash(ObjectRef(kind="Node", name="n")) == hash(validated(ObjectRef, {"kind": "Node", "name": "n"}))
    assert dict(ObjectRef(kind="Node", name="n")) == {"kind": "Node", "name": "n", "namespace": None}
