"""Machine-readable outputs that last: the JSON schema evolves additively (a v1 consumer written against the
schema as published still validates tomorrow's output), and JUnit validates against the Ant and the Jenkins
structures (XSDs written for these tests in tests/data/)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import xmlschema

from kueuediag.config import Settings
from kueuediag.engine import diagnose
from kueuediag.examples import list_examples
from kueuediag.models import Verdict
from kueuediag.registry import discover
from kueuediag.render.json_out import verdict_dict
from kueuediag.render.junit import render_junit
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.target import resolve

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "docs" / "schema" / "why-v1.schema.json").read_text())
CONSUMER = json.loads((ROOT / "tests" / "data" / "why-v1-consumer.schema.json").read_text())
"""the why/v1 schema as a consumer copied it when it was published (frozen: never edit this copy)"""
EXAMPLES = list_examples()


def _verdict(name: str) -> Verdict:
    ex = next(e for e in EXAMPLES if e.name == name)
    snap = load_snapshot(str(ex.path))
    return diagnose(snap, resolve(snap, ex.target, ex.namespace), discover(), Settings())


def _json(v: Verdict) -> dict[str, Any]:
    return json.loads(json.dumps(verdict_dict(v), default=str))


def _closed_objects(node: Any, path: str = "$") -> list[str]:
    found = []
    if isinstance(node, dict):
        if node.get("additionalProperties") is False:
            found.append(path)
        for key, value in node.items():
            found += _closed_objects(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += _closed_objects(value, f"{path}[{i}]")
    return found


def test_schema_leaves_every_object_open_and_cause_a_documented_string() -> None:
    assert _closed_objects(SCHEMA) == []
    cause = SCHEMA["properties"]["verdict"]["properties"]["cause"]
    assert cause["type"] == "string" and "enum" not in cause and "new causes" in cause["description"]
    finding_cause = SCHEMA["properties"]["findings"]["items"]["properties"]["cause"]
    assert finding_cause["type"] == "string" and "enum" not in finding_cause


def _tomorrow(doc: dict[str, Any]) -> dict[str, Any]:
    """What a later kueuediag may write within v1: new fields everywhere, a cause and a check nobody knows yet."""
    out = copy.deepcopy(doc)

    def grow(node: Any) -> None:
        if isinstance(node, dict):
            for value in list(node.values()):
                grow(value)
            node["addedLater"] = {"anything": [1, "two"]}
        elif isinstance(node, list):
            for value in node:
                grow(value)

    grow(out)
    out["verdict"]["cause"] = "gpu-driver-mismatch"
    for f in out["findings"]:
        f["cause"] = "gpu-driver-mismatch"
    out["checks"].append({"code": "KD998", "check": "future-check", "outcome": "clear", "reason": "",
                          "family": "future"})
    return out


@pytest.mark.parametrize("name", [e.name for e in EXAMPLES])
def test_v1_consumers_validate_todays_and_tomorrows_output(name: str) -> None:
    doc = _json(_verdict(name))
    jsonschema.validate(doc, SCHEMA)
    jsonschema.validate(doc, CONSUMER)
    jsonschema.validate(_tomorrow(doc), CONSUMER)
    jsonschema.validate(_tomorrow(doc), SCHEMA)


def test_a_closed_schema_would_have_failed_the_consumer_test() -> None:
    """The evolution test can fail: the schema as first published (closed at the root) rejects tomorrow."""
    closed = copy.deepcopy(CONSUMER)
    closed["additionalProperties"] = False
    with pytest.raises(jsonschema.ValidationError, match="addedLater"):
        jsonschema.validate(_tomorrow(_json(_verdict(EXAMPLES[0].name))), closed)


@pytest.fixture(scope="module")
def xsds() -> dict[str, xmlschema.XMLSchema]:
    return {name: xmlschema.XMLSchema(str(ROOT / "tests" / "data" / f"junit-{name}.xsd"))
            for name in ("ant", "jenkins")}


@pytest.mark.parametrize("name", [e.name for e in EXAMPLES])
def test_junit_validates_against_ant_and_jenkins(name: str, xsds: dict[str, xmlschema.XMLSchema]) -> None:
    v = _verdict(name)
    xml = render_junit(v, hostname="ci-runner-7")
    for kind, schema in xsds.items():
        errors = [str(e.reason) for e in schema.iter_errors(xml)]
        assert errors == [], f"{kind}: {errors[:3]}"
    import xml.etree.ElementTree as ET

    suite = ET.fromstring(xml)
    assert [c.tag for c in suite][0] == "properties" and [c.tag for c in suite][-2:] == ["system-out", "system-err"]
    assert suite.get("hostname") == "ci-runner-7"
    assert suite.get("timestamp") == (v.captured_at or "").rstrip("Z")
    props = {p.get("name"): p.get("value") for p in suite.find("properties") or ()}
    assert props["verdict"] == v.cause
    assert int(suite.get("tests") or 0) == len(suite.findall("testcase")) == len(v.runs)


def test_junit_without_properties_first_fails_the_ant_schema(xsds: dict[str, xmlschema.XMLSchema]) -> None:
    """The XSD is strict where Ant is: properties after the testcases is rejected (the test can fail)."""
    import xml.etree.ElementTree as ET

    suite = ET.fromstring(render_junit(_verdict(EXAMPLES[0].name), hostname="h"))
    props = suite.find("properties")
    assert props is not None
    suite.remove(props)
    suite.insert(len(suite) - 2, props)
    assert not xsds["ant"].is_valid(ET.tostring(suite, encoding="unicode"))
