"""Health analysis helpers: feature gates, managedFields change times, zombies, victims, controller pods."""

from __future__ import annotations

from pathlib import Path

from kueuediag.analysis.health import (
    config_changes,
    controller_pods,
    last_spec_change,
    quota_holding_victims,
    zombie_pods,
)
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.timeutil import format_rfc3339


def test_last_spec_change_ignores_status_writes() -> None:
    obj = {"metadata": {"managedFields": [
        {"manager": "kubectl", "operation": "Update", "time": "2026-01-01T00:00:00Z"},
        {"manager": "kueue", "operation": "Update", "subresource": "status", "time": "2026-01-02T00:00:00Z"},
        {"manager": "argocd", "operation": "Apply", "time": "2026-01-01T12:00:00Z"},
        {"manager": "junk", "operation": "Update", "time": "not a time"},
    ]}}
    last = last_spec_change(obj)
    assert last is not None and (format_rfc3339(last[0]), last[1], last[2]) == ("2026-01-01T12:00:00Z", "argocd",
                                                                               "Apply")
    assert last_spec_change({"metadata": {}}) is None


def test_zombie_and_victim_in_pod_group(fixtures_dir: Path) -> None:
    snap = load_snapshot(str(fixtures_dir / "snapshots" / "health-zombie-pod-group"))
    [z] = zombie_pods(snap)
    assert (z.pod.namespace, z.pod.name) == ("team-b", "infer-pg-7f9c-0")
    assert z.in_pod_group and z.node_ready is False and z.cluster_queue == "team-b"
    assert z.workload is not None and z.workload.name == "infer-pg-7f9c"
    assert round(z.overdue_seconds) == 9588  # 14:00:00 - 11:20:12 (deletionTimestamp)
    [v] = quota_holding_victims(snap)
    assert v.workload.name == "infer-pg-7f9c" and v.preempted_reason == "InCohortReclamation"
    assert [p.name for p in v.zombies] == ["infer-pg-7f9c-0"] and v.pod_integration


def test_pods_within_grace_are_not_zombies(fixtures_dir: Path) -> None:
    snap = load_snapshot(str(fixtures_dir / "snapshots" / "health-pod-preemption-grace"))
    assert [z.pod.name for z in zombie_pods(snap)] == ["jupyter-alice"]
    victims = quota_holding_victims(snap)
    assert sorted(v.workload.name for v in victims) == ["batch-embed-a7c1", "batch-embed-b9d3"]
    assert all(not v.zombies and v.pod_integration and round(v.held_seconds or 0) == 718 for v in victims)


def test_controller_pods(fixtures_dir: Path) -> None:
    snap = load_snapshot(str(fixtures_dir / "snapshots" / "health-controller-crashloop"))
    pods = controller_pods(snap)
    assert [(p.name.rsplit("-", 1)[-1], p.healthy, p.waiting_reason, p.restarts) for p in pods] == [
        ("h7kqz", False, "CrashLoopBackOff", 14), ("w2r5c", False, "", 6)]


def test_config_changes_newest_first(fixtures_dir: Path) -> None:
    snap = load_snapshot(str(fixtures_dir / "snapshots" / "health-fairsharing-enabled"))
    changes = config_changes(snap)
    first = changes[0]
    assert (first.kind, first.name, format_rfc3339(first.at), first.manager) == (
        "ConfigMap", "kueue-manager-config", "2026-11-24T09:05:02Z", "kubectl-edit")
    assert "fairSharing is enabled" in first.what
    assert all(a.at >= b.at for a, b in zip(changes, changes[1:], strict=False))
