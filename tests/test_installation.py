"""The one owner of "which Kueue is this?": version with its source, feature gates over per-release defaults."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kueuediag.analysis.installation import installation, parse_feature_gates
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.snapshot.model import Snapshot
from kueuediag.snapshot.reader import RawSnapshot


def _snap(objects: list[dict[str, Any]], manifest: dict[str, Any] | None = None) -> Snapshot:
    raw = RawSnapshot(source="t", manifest=manifest or {"capturedAt": "2026-11-20T14:00:00Z"}, objects=objects)
    return Snapshot(raw, now=datetime(2026, 11, 20, 14, tzinfo=UTC))


def _deploy(image: str, args: list[str]) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "kueue-controller-manager", "namespace": "kueue-system"},
            "spec": {"template": {"spec": {"containers": [{"name": "manager", "image": image, "args": args}]}}}}


CONFIG: dict[str, Any] = {
    "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
    "data": {"controller_manager_config.yaml": "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n"
                                               "featureGates:\n  PrioritizePreemptorWorkloads: true\n"}}


def test_parse_feature_gates() -> None:
    assert parse_feature_gates("A=true, B=false,C=maybe,=true,D") == {"A": True, "B": False}


def test_flags_override_config_and_defaults_follow_the_image_version() -> None:
    deploy = _deploy("registry.k8s.io/kueue/kueue:v0.17.1", [
        "--config=/controller_manager_config.yaml",
        "--feature-gates=FastQuotaReleaseInPodIntegration=true,TopologyAwareScheduling=false"])
    inst = installation(_snap([deploy, CONFIG]))
    assert inst.version.version == "v0.17.1" and "image registry.k8s.io/kueue/kueue:v0.17.1" in inst.version.source
    assert inst.gates.explicit == {"FastQuotaReleaseInPodIntegration": True, "TopologyAwareScheduling": False,
                                   "PrioritizePreemptorWorkloads": True}
    assert inst.gates.source("TopologyAwareScheduling").endswith("--feature-gates")
    assert inst.gates.source("PrioritizePreemptorWorkloads") == \
        "ConfigMap/kueue-system/kueue-manager-config featureGates"
    # not set: the v0.17 default (LocalQueueMetrics went beta/on in v0.17, QuotaCheckStrategy is v0.18+)
    assert inst.gates.enabled("LocalQueueMetrics") is True
    assert inst.gates.enabled("QuotaCheckStrategy") is None
    assert inst.gates.source("LocalQueueMetrics") == "default of Kueue v0.17.1"


def test_gate_defaults_differ_by_release() -> None:
    old = installation(_snap([_deploy("registry.k8s.io/kueue/kueue:v0.13.4", [])]))
    new = installation(_snap([_deploy("registry.k8s.io/kueue/kueue:v0.14.0", [])]))
    assert old.gates.enabled("TopologyAwareScheduling") is False
    assert new.gates.enabled("TopologyAwareScheduling") is True
    assert old.gates.enabled("FastQuotaReleaseInPodIntegration") is None  # the gate is v0.17+
    assert new.gates.enabled("NoSuchGate") is None


def test_unknown_version_says_so_and_uses_the_api_floor() -> None:
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "a"}, "spec": {}}
    inst = installation(_snap([cq]))
    assert inst.version.version is None and inst.version.source == "unknown" and not inst.known
    assert inst.floor == "v0.15.0"
    assert inst.has("drs-precise") is True  # v0.15.0 >= every release in the row
    assert inst.has("fast-quota-release-gate") is None  # v0.17.0 feature: cannot tell
    assert "the Kueue version is unknown" in inst.unknown_note("fast-quota-release-gate")
    assert "v0.17.0" in inst.unknown_note("fast-quota-release-gate")
    bare = installation(_snap([]))
    assert bare.floor is None and bare.has("drs-precise") is None


def test_fixture_installation(fixtures_dir: Path) -> None:
    snap = load_snapshot(str(fixtures_dir / "snapshots" / "health-controller-crashloop"))
    inst = installation(snap)
    assert (inst.version.version, inst.version.source) == ("v0.18.3", "manifest.json kueueVersion")
    assert inst.gates.explicit == {"PrioritizePreemptorWorkloads": True}
    assert inst.gates.enabled("PrioritizePreemptorWorkloads") is True
    assert inst.gates.enabled("TopologyAwareScheduling") is True  # on by default since v0.14
    assert inst.gates.enabled("AdmissionGatedBy") is False  # alpha/off in v0.18, beta/on from v0.19
    grace = installation(load_snapshot(str(fixtures_dir / "snapshots" / "health-pod-preemption-grace")))
    assert grace.gates.enabled("FastQuotaReleaseInPodIntegration") is False  # v0.17.1 default


def _wfpr_config(text: str) -> dict[str, Any]:
    return CONFIG | {"data": {"controller_manager_config.yaml": text}}


def test_wait_for_pods_ready_default_depends_on_the_release() -> None:
    silent = _wfpr_config("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n")
    v18 = installation(_snap([silent, _deploy("registry.k8s.io/kueue/kueue:v0.18.6", [])]))
    v19 = installation(_snap([silent, _deploy("registry.k8s.io/kueue/kueue:v0.19.0", [])]))
    assert v18.config.wait_for_pods_ready.enabled is None
    assert v18.wait_for_pods_ready() is False and v19.wait_for_pods_ready() is True
    disabled = installation(_snap([silent, _deploy("registry.k8s.io/kueue/kueue:v0.19.2",
                                                   ["--feature-gates=DisableWaitForPodsReady=true"])]))
    assert disabled.wait_for_pods_ready() is False
    assert installation(_snap([silent])).wait_for_pods_ready() is None  # version unknown
    explicit = _wfpr_config("apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n"
                            "waitForPodsReady:\n  enable: true\n  timeout: 5m\n")
    old = installation(_snap([explicit, _deploy("registry.k8s.io/kueue/kueue:v0.12.1", [])]))
    assert old.wait_for_pods_ready() is True and old.config.wait_for_pods_ready.timeout == "5m"
