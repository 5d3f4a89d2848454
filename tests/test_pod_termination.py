"""The two pod-termination facts, each with its own rule: past its grace (Kubernetes) and counted active (Kueue)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kueuediag.analysis.pod_termination import (
    counted_active_by_kueue,
    describe_termination,
    grace_remaining_seconds,
    is_past_grace,
    is_zombie,
    seconds_past_grace,
)
from kueuediag.snapshot.k8s import pod_view
from kueuediag.snapshot.model import Snapshot
from kueuediag.snapshot.reader import RawSnapshot

NOW = datetime(2026, 11, 20, 14, 0, tzinfo=UTC)


def _pod(deleted: str | None, *, phase: str = "Running", grace: int = 900, labels: dict[str, str] | None = None,
         name: str = "p") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": labels or {}}
    if deleted:
        meta["deletionTimestamp"] = deleted
        meta["deletionGracePeriodSeconds"] = grace
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"terminationGracePeriodSeconds": grace, "containers": [{"name": "c"}]},
            "status": {"phase": phase}}


def _snap(objects: list[dict[str, Any]], version: str | None = None, gates: str = "") -> Snapshot:
    objs = list(objects)
    if version or gates:
        objs.append({"apiVersion": "apps/v1", "kind": "Deployment",
                     "metadata": {"name": "kueue-controller-manager", "namespace": "kueue-system"},
                     "spec": {"template": {"spec": {"containers": [{
                         "name": "manager", "image": f"registry.k8s.io/kueue/kueue:{version or 'latest'}",
                         "args": [f"--feature-gates={gates}"] if gates else []}]}}}})
    return Snapshot(RawSnapshot(source="t", manifest={"capturedAt": "2026-11-20T14:00:00Z"}, objects=objs), now=NOW)


PLAIN = {"kueue.x-k8s.io/managed": "true"}
GROUP = {"kueue.x-k8s.io/managed": "true", "kueue.x-k8s.io/pod-group-name": "g"}


def test_past_grace_is_measured_from_deletion_timestamp() -> None:
    """deletionTimestamp already includes the grace period: past it means past the grace."""
    within = pod_view(_pod("2026-11-20T14:04:40Z"))
    past = pod_view(_pod("2026-11-20T13:54:40Z"))
    just = pod_view(_pod("2026-11-20T13:59:30Z"))
    done = pod_view(_pod("2026-11-20T13:00:00Z", phase="Succeeded"))
    assert grace_remaining_seconds(within, NOW) == 280 and seconds_past_grace(within, NOW) is None
    assert seconds_past_grace(past, NOW) == 320 and is_past_grace(past, NOW) and is_zombie(past, NOW)
    assert is_past_grace(just, NOW) and not is_zombie(just, NOW)  # 30s over: not yet a zombie
    assert not is_past_grace(done, NOW) and grace_remaining_seconds(done, NOW) is None
    assert seconds_past_grace(pod_view(_pod(None)), NOW) is None


@pytest.mark.parametrize("deleted,labels,version,gates,active", [
    # a plain pod counts while Running, even a zombie, on every release
    ("2026-11-20T13:00:00Z", PLAIN, "v0.16.2", "", True),
    ("2026-11-20T13:00:00Z", PLAIN, "v0.19.2", "", True),
    # a pod-group pod past deletionTimestamp + grace (13:00 + 900s < 14:00) stops counting from v0.14.0/v0.13.5
    ("2026-11-20T13:00:00Z", GROUP, "v0.13.4", "", True),
    ("2026-11-20T13:00:00Z", GROUP, "v0.13.5", "", False),
    ("2026-11-20T13:00:00Z", GROUP, "v0.14.0", "", False),
    # ... but not before that cut-off (13:50 + 900s > 14:00), even though it is past its grace already
    ("2026-11-20T13:50:00Z", GROUP, "v0.19.2", "", True),
    # unknown version: the pod-group answer depends on it
    ("2026-11-20T13:00:00Z", GROUP, None, "", None),
    # FastQuotaReleaseInPodIntegration (v0.17+): any terminating pod is inactive
    ("2026-11-20T14:10:00Z", PLAIN, "v0.17.0", "FastQuotaReleaseInPodIntegration=true", False),
    ("2026-11-20T14:10:00Z", PLAIN, "v0.17.0", "", True),
    # job pods: terminating means inactive
    ("2026-11-20T14:10:00Z", {}, "v0.12.1", "", False),
    (None, {}, "v0.12.1", "", True),
])
def test_counted_active_by_kueue(deleted: str | None, labels: dict[str, str], version: str | None, gates: str,
                                 active: bool | None) -> None:
    pod = pod_view(_pod(deleted, labels=labels))
    got = counted_active_by_kueue(_snap([], version, gates), pod)
    assert got.active is active, got.rule
    if active is None:
        assert got.depends_on == "pod-group-terminating-release"


def test_describe_termination_states_both_facts() -> None:
    snap = _snap([], "v0.16.2")
    text = describe_termination(snap, pod_view(_pod("2026-11-20T13:54:40Z", labels=PLAIN)))
    assert text.startswith("Running 5m20s past its grace period (a zombie); Kueue still counts it active")
    within = describe_termination(snap, pod_view(_pod("2026-11-20T14:04:40Z", labels=PLAIN)))
    assert within.startswith("terminating, grace ends in 4m40s; Kueue still counts it active")
