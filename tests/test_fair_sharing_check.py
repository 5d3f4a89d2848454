"""KD103 on variations of the fair-sharing fixtures: unknown version, fixed version, large disagreement."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kueuediag_checks.fair_sharing import FairSharing

from kueuediag.models import Confidence, Severity
from kueuediag.snapshot.model import Snapshot
from kueuediag.snapshot.reader import RawSnapshot, read_snapshot
from kueuediag.target import resolve
from kueuediag.testing import findings_of

Edit = Callable[[list[dict[str, Any]]], None]


def _load(fixtures_dir: Path, name: str, edit: Edit | None = None,
          manifest: dict[str, Any] | None = None) -> Snapshot:
    raw = read_snapshot(fixtures_dir / "snapshots" / name)
    objects = copy.deepcopy(raw.objects)
    if edit is not None:
        edit(objects)
    return Snapshot(RawSnapshot(source=raw.source, manifest=dict(raw.manifest, **(manifest or {})),
                                objects=objects, metrics=raw.metrics, logs=raw.logs))


def _set_share(kind: str, name: str, value: int) -> Edit:
    def edit(objects: list[dict[str, Any]]) -> None:
        for o in objects:
            if o["kind"] == kind and o["metadata"]["name"] == name:
                o.setdefault("status", {})["fairSharing"] = {"weightedShare": value}
    return edit


def _drop_version_sources(objects: list[dict[str, Any]]) -> None:
    objects[:] = [o for o in objects if o["kind"] != "Deployment"]


def _run(snap: Snapshot, job: str, ns: str) -> list[Any]:
    return findings_of(FairSharing().run(snap, resolve(snap, job, ns)))


def test_unknown_version_zero_share_is_the_bug_signature(fixtures_dir: Path) -> None:
    snap = _load(fixtures_dir, "fair-sharing-rounding-bug", _drop_version_sources, {"kueueVersion": None})
    [f] = _run(snap, "job/llm-pretrain-70b", "team-a")
    assert f.cause == "fair-sharing-anomaly"
    assert (f.severity, f.confidence) == (Severity.HIGH, Confidence.MEDIUM)
    assert "rounding bug signature" in f.title
    assert "Kueue version is not in the snapshot" in f.message


def test_version_from_controller_image_when_manifest_lacks_it(fixtures_dir: Path) -> None:
    snap = _load(fixtures_dir, "fair-sharing-rounding-bug", manifest={"kueueVersion": None})
    [f] = _run(snap, "job/llm-pretrain-70b", "team-a")
    assert (f.severity, f.confidence) == (Severity.HIGH, Confidence.HIGH)
    assert any("image registry.k8s.io/kueue/kueue:v0.13.2" in e.observed for e in f.evidence)


def test_zero_share_on_a_fixed_release_is_not_the_known_bug(fixtures_dir: Path) -> None:
    snap = _load(fixtures_dir, "fair-sharing-fixed", _set_share("ClusterQueue", "team-b", 0))
    [f] = _run(snap, "job/llm-pretrain-70b", "team-a")
    assert (f.severity, f.confidence) == (Severity.MEDIUM, Confidence.LOW)
    assert "not explained by Kueue v0.14.0" in f.title
    assert "re-collect" in f.message


def test_large_disagreement_fires_small_does_not(fixtures_dir: Path) -> None:
    # nlp's recomputed share is 334 (24 of 72 lendable GPUs); v1beta2 objects imply Kueue >= v0.15.0.
    snap = _load(fixtures_dir, "fair-sharing-hierarchical", _set_share("ClusterQueue", "nlp", 90),
                 {"kueueVersion": None})
    [f] = _run(snap, "job/vit-22b-eval", "vision")
    assert (f.severity, f.confidence) == (Severity.MEDIUM, Confidence.MEDIUM)
    assert "ClusterQueue nlp: Kueue reports weightedShare 90, recomputed 334" in f.title
    assert f.about_target
    assert any("so >= v0.15.0" in e.observed for e in f.evidence)
    close = _load(fixtures_dir, "fair-sharing-hierarchical", _set_share("ClusterQueue", "nlp", 320))
    assert _run(close, "job/vit-22b-eval", "vision") == []


def test_fair_sharing_disabled_in_config_and_no_status_is_clear(fixtures_dir: Path) -> None:
    def disable(objects: list[dict[str, Any]]) -> None:
        for o in objects:
            if o["kind"] == "ConfigMap":
                o["data"]["controller_manager_config.yaml"] = o["data"]["controller_manager_config.yaml"].replace(
                    "enable: true\n  preemptionStrategies", "enable: false\n  preemptionStrategies")
            if o["kind"] in ("ClusterQueue", "Cohort"):
                o.get("status", {}).pop("fairSharing", None)

    snap = _load(fixtures_dir, "fair-sharing-rounding-bug", disable)
    assert _run(snap, "job/llm-pretrain-70b", "team-a") == []
