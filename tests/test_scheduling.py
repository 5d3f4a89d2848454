"""kueuediag.analysis.scheduling: kube-scheduler FailedScheduling messages and pod start failures."""

from __future__ import annotations

import pytest

from kueuediag.analysis.scheduling import (
    container_start_failures,
    image_pull_failures,
    parse_failed_scheduling,
    pod_scheduling,
)
from kueuediag.snapshot.k8s import pod_view
from kueuediag.snapshot.kueue import pods
from kueuediag.snapshot.loader import load_snapshot

from .conftest import FIXTURES


def test_filter_reasons_and_preemption_are_counted() -> None:
    f = parse_failed_scheduling(
        "0/7 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't match Pod's node affinity/selector, "
        "4 Insufficient nvidia.com/gpu. preemption: 0/7 nodes are available: 3 Preemption is not helpful for "
        "scheduling, 4 No preemption victims found for incoming pod.")
    assert f is not None
    assert f.total_nodes == 7
    assert [(r.kind, r.count) for r in f.reasons] == [
        ("unschedulable-node", 1), ("node-affinity", 2), ("insufficient", 4)]
    assert f.insufficient() == {"nvidia.com/gpu": 4}
    assert [(r.kind, r.count) for r in f.preemption] == [("preemption-not-helpful", 3), ("no-victims", 4)]
    assert f.summary().startswith("4 Insufficient nvidia.com/gpu, 2 node(s)")


def test_taint_struct_and_old_taint_wording() -> None:
    f = parse_failed_scheduling(
        "0/6 nodes are available: 2 Insufficient nvidia.com/gpu, 1 node(s) had untolerated taint "
        "{nvidia.com/gpu: present}, 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/6 nodes are "
        "available: 2 No preemption victims found for incoming pod, 4 Preemption is not helpful for scheduling.")
    assert f is not None
    taint = f.of("untolerated-taint")[0]
    assert (taint.count, taint.taint) == (1, "nvidia.com/gpu: present")
    assert f.counts() == {"Insufficient nvidia.com/gpu": 2,
                          "node(s) had untolerated taint {nvidia.com/gpu: present}": 1,
                          "node(s) didn't match Pod's node affinity/selector": 3}
    old = parse_failed_scheduling("0/3 nodes are available: 1 node(s) had taint {node-role.kubernetes.io/master: }, "
                                  "that the pod didn't tolerate, 2 Insufficient cpu, 2 Insufficient memory.")
    assert old is not None
    assert [(r.kind, r.count, r.resource) for r in old.reasons] == [
        ("untolerated-taint", 1, None), ("insufficient", 2, "cpu"), ("insufficient", 2, "memory")]


def test_prefilter_pvc_message_has_no_count() -> None:
    f = parse_failed_scheduling("0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. "
                                "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
    assert f is not None
    assert [(r.kind, r.count) for r in f.reasons] == [("unbound-pvc", None)]
    assert f.counts() == {"pod has unbound immediate PersistentVolumeClaims": 3}


@pytest.mark.parametrize("text", ["", "Successfully assigned ns/p to node-1", "binding rejected: timeout"])
def test_non_scheduler_messages_are_none(text: str) -> None:
    assert parse_failed_scheduling(text) is None


def test_unknown_reason_is_kept_as_other() -> None:
    f = parse_failed_scheduling("0/2 nodes are available: 2 node(s) had volume node affinity conflict, "
                                "1 node(s) frobnicated.")
    assert f is not None
    assert [(r.kind, r.count) for r in f.reasons] == [("volume-node-affinity", 2), ("other", 1)]


def test_pod_scheduling_prefers_the_newer_event_and_counts_occurrences() -> None:
    snap = load_snapshot(str(FIXTURES / "snapshots" / "frag-h100"))
    pod = next(p for p in pods(snap) if p.name.startswith("llm-finetune-"))
    s = pod_scheduling(snap, pod)
    assert s.source == "event"  # events.k8s.io/v1 series newer than the condition
    assert s.events == 31
    assert s.failure is not None and s.failure.insufficient() == {"nvidia.com/gpu": 4}
    assert s.since is not None and (snap.now - s.since).total_seconds() == 25 * 60


def test_image_pull_failures_from_container_statuses() -> None:
    p = pod_view({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
                  "spec": {"nodeName": "n", "containers": [{"name": "a"}, {"name": "b"}]},
                  "status": {"phase": "Pending",
                             "initContainerStatuses": [{"name": "init", "image": "x:1",
                                                        "state": {"waiting": {"reason": "ErrImagePull"}}}],
                             "containerStatuses": [
                                 {"name": "a", "image": "x:1", "state": {"waiting": {"reason": "PodInitializing"}}},
                                 {"name": "b", "image": "y:2", "state": {"waiting": {
                                     "reason": "ImagePullBackOff", "message": 'Back-off pulling image "y:2"'}}}]}})
    fails = image_pull_failures(p)
    assert [(f.container, f.reason) for f in fails] == [("init", "ErrImagePull"), ("b", "ImagePullBackOff")]
    assert fails[1].message == 'Back-off pulling image "y:2"'


def test_container_start_failures_include_config_errors() -> None:
    p = pod_view({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
                  "spec": {"nodeName": "n", "containers": [{"name": "a"}]},
                  "status": {"phase": "Pending", "containerStatuses": [
                      {"name": "a", "image": "x:1", "state": {"waiting": {
                          "reason": "CreateContainerConfigError", "message": 'secret "hf-token" not found'}}}]}})
    assert [(f.reason, f.message) for f in container_start_failures(p)] == [
        ("CreateContainerConfigError", 'secret "hf-token" not found')]
    assert image_pull_failures(p) == []
