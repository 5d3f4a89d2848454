"""`why -o json`'s evidence and check entries, written from the models' own fields, equal the field-by-field
document the v1 contract describes, key order included (the order `-o json` prints)."""

from __future__ import annotations

from typing import Any

import pytest

from kueuediag.config import Settings
from kueuediag.engine import diagnose
from kueuediag.examples import list_examples
from kueuediag.models import Evidence, ObjectRef, Outcome, Verdict, ev, replaced
from kueuediag.registry import discover
from kueuediag.render.json_out import _evidence, verdict_dict
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.target import resolve

EXAMPLES = list_examples()


def field_by_field(e: Evidence) -> dict[str, Any]:
    return {
        "source": e.source,
        "ref": {"kind": e.ref.kind, "name": e.ref.name, "namespace": e.ref.namespace} if e.ref else None,
        "field": e.field,
        "observed": e.observed,
        "expected": e.expected,
    }


def same(a: Any, b: Any) -> bool:
    """Equal, with dict keys in the same order at every level."""
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def _verdict(name: str) -> Verdict:
    ex = next(e for e in EXAMPLES if e.name == name)
    snap = load_snapshot(str(ex.path))
    return diagnose(snap, resolve(snap, ex.target, ex.namespace), discover(), Settings())


@pytest.mark.parametrize("name", [e.name for e in EXAMPLES])
def test_every_evidence_item_and_check_entry_of_the_examples(name: str) -> None:
    v = _verdict(name)
    doc = verdict_dict(v)
    items = [e for r in v.runs for e in r.evidence] + [e for f in v.findings for e in f.finding.evidence]
    assert items, "an example whose verdict carries no evidence tests nothing here"
    for e in items:
        assert same(_evidence(e), field_by_field(e))
    for run, entry in zip(v.runs, doc["checks"], strict=True):
        assert (entry["outcome"], entry["result"]) == (run.outcome.v1, run.outcome.value)
        assert same(entry["evidence"], [field_by_field(e) for e in run.evidence])


@pytest.mark.parametrize("e", [
    ev("derived", "plain", kind="ClusterQueue", name="a", field="spec", expected="x"),
    ev("derived", "no ref"),
    Evidence(source="object", observed="validated", ref=ObjectRef(kind="Workload", name="w",
                                                                     namespace="ns")),
    Evidence(source="log", observed="constructed", expected="e", ref=ObjectRef(kind="Node", name="n")),
    Evidence.model_validate({"expected": "e", "observed": "keys out of order", "source": "metric"}),
    replaced(ev("derived", "replaced", kind="Workload", name="w", namespace="ns"), observed="new", field="f"),
], ids=["ev", "ev-no-ref", "make", "constructor", "validated-out-of-order", "replaced"])
def test_evidence_built_every_way(e: Evidence) -> None:
    """However an item was built, its JSON is its fields in field order (a copy: the model is not touched)."""
    out = _evidence(e)
    assert same(out, field_by_field(e))
    out["observed"] = "changed"
    if out["ref"] is not None:
        out["ref"]["name"] = "changed"
    assert e.observed != "changed" and (e.ref is None or e.ref.name != "changed")


def test_every_outcome_has_its_json_names() -> None:
    from kueuediag.render.json_out import _OUTCOME_JSON

    for o in Outcome:
        assert _OUTCOME_JSON[o] == (o.v1, o.value)
    assert _OUTCOME_JSON[Outcome.CLEAR] == ("clear", "ruled-out")
    assert _OUTCOME_JSON[Outcome.NOT_APPLICABLE] == ("skipped", "not-applicable")
