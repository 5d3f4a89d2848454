"""Flavor eligibility has one owner; whether a flavor's own tolerations count follows the Kueue release."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kueuediag.analysis.flavor_match import flavor_tolerations_count, spec_exclusion
from kueuediag.snapshot.kueue import FlavorView
from kueuediag.snapshot.model import Snapshot
from kueuediag.snapshot.reader import RawSnapshot

TAINT = {"key": "spot", "value": "true", "effect": "NoSchedule"}
OWN = FlavorView(obj={}, name="spot", node_labels={"pool": "spot"}, node_taints=[TAINT],
                 tolerations=[{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}], topology_name=None)


def _snap(version: str | None) -> Snapshot:
    manifest: dict[str, Any] = {"capturedAt": "2026-11-20T14:00:00Z"}
    if version:
        manifest["kueueVersion"] = version
    return Snapshot(RawSnapshot(source="t", manifest=manifest, objects=[]),
                    now=datetime(2026, 11, 20, 14, tzinfo=UTC))


def test_flavor_tolerations_count_from_v0_10() -> None:
    assert flavor_tolerations_count(_snap("v0.9.3")) is False
    assert flavor_tolerations_count(_snap("v0.10.0")) is True
    assert flavor_tolerations_count(_snap(None)) is True  # unknown: taken as a current release


def test_a_flavor_tolerating_its_own_taint_depends_on_the_release() -> None:
    spec: dict[str, Any] = {"nodeSelector": {"pool": "spot"}}
    old = spec_exclusion(spec, "spot", OWN, flavor_tolerations=flavor_tolerations_count(_snap("v0.9.3")))
    assert old is not None and old.kind == "untolerated-taint"
    assert old.kueue_message == "untolerated taint spot=true:NoSchedule in flavor spot"
    assert spec_exclusion(spec, "spot", OWN, flavor_tolerations=flavor_tolerations_count(_snap("v0.10.0"))) is None


def test_label_mismatch_and_missing_flavor() -> None:
    other = spec_exclusion({"nodeSelector": {"pool": "reserved"}}, "spot", OWN)
    assert other is not None and other.kueue_message == "flavor spot doesn't match node affinity"
    missing = spec_exclusion({}, "gone", None)
    assert missing is not None and missing.kueue_message == "flavor gone not found"
