"""An admitted workload whose pods do not run is never `not-pending`.

Kueue's part ends at admission, but the user's question ("why does my job not run?") does not: when the pods are
missing, unschedulable, still gated, failing to pull their image or stuck on a dead node, the verdict must say so.

Two tests:

* every admitted workload in every bundled fixture (fixtures/snapshots, scenarios, incidents, the demo examples)
  whose pods are evidently not all running gets one of the release-layer causes below;
* a generator derives variants from one sound admitted Job (pods missing, pending unschedulable, gated by
  Kueue's gate, gated by a foreign gate, image pull failing, bound to a NotReady node, no Pod objects but
  Kueue's PodsReady=False) and asserts the cause and the evidence of each, next to the sound base (not-pending).

"Evidently not all running" is decided from the snapshot alone: a pod of the workload that is not in phase
Running; or no pod of it in the snapshot while Kueue records PodsReady=False or the workload's batch Job is
released and reports no active pod. Excluded, and why: a workload admitted less than KD401's grace period ago
(60s: its pods are being created and scheduled, nothing has failed yet); a workload with Evicted=True or
spec.active=false (Kueue is stopping it on purpose: preemption, eviction, deactivation — its pods going away is
the intended outcome, reported by the eviction and activation checks); a workload with no pod in the snapshot
and nothing recorded about its pods (a fixture that holds only queue objects cannot say whether the pods run).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from kueuediag_checks.release_state import ReleaseState

from kueuediag.config import Settings
from kueuediag.engine import diagnose
from kueuediag.models import Verdict
from kueuediag.registry import builtin
from kueuediag.snapshot.kueue import WorkloadState, WorkloadView, workload_pods, workloads
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.snapshot.model import Snapshot
from kueuediag.target import resolve
from tests.bundled import bundled_sources, snapshot, source_id, verdicts

GRACE_SECONDS = ReleaseState.options["grace_seconds"]
RELEASE_CAUSES = {"pods-not-starting", "kube-unschedulable", "fragmentation", "gate-not-removed",
                  "foreign-scheduling-gate"}


def not_all_running(snap: Snapshot, w: WorkloadView) -> str | None:
    """Why the snapshot shows `w`'s pods not all running (None when it does not, or cannot tell)."""
    if w.state != WorkloadState.ADMITTED or w.is_true("Evicted") or not w.active:
        return None
    admitted = w.cond("Admitted")
    age = snap.age_seconds(admitted.last_transition if admitted else None)
    if age is not None and age < GRACE_SECONDS:
        return None  # just admitted: the pods are being created and scheduled, nothing can be said yet
    pods = [p for p in workload_pods(snap, w) if not p.terminal]
    if pods:
        waiting = [p for p in pods if p.phase != "Running"]
        return f"pod {waiting[0].name} is {waiting[0].phase}" if waiting else None
    ready = w.cond("PodsReady")
    if ready is not None and ready.false:
        return f"no pod in the snapshot, PodsReady=False ({ready.reason})"
    owner = snap.by_uid(str(w.owner["uid"])) if w.owner and w.owner.get("uid") else None
    if owner is not None and owner.get("kind") == "Job" and not (owner.get("spec") or {}).get("suspend"):
        st = owner.get("status") or {}
        if not (st.get("active") or st.get("ready") or st.get("succeeded")):
            return "no pod, and its released Job reports none active"
    return None


def _diagnose(snap: Snapshot, w: WorkloadView) -> Verdict:
    return diagnose(snap, resolve(snap, f"workload/{w.name}", w.namespace), builtin(), Settings())


@cache
def release_verdicts(source: Path) -> tuple[tuple[str, str, str, int], ...]:
    """(workload, why its pods do not run, verdict cause, evidence count of the primary finding) for every admitted
    workload of `source` whose pods evidently do not all run."""
    snap = snapshot(source)
    out = []
    for w in workloads(snap):
        why = not_all_running(snap, w)
        if why is not None:
            verdict = verdicts(source)[(f"workload/{w.name}", w.namespace)]
            primary = verdict.findings[0].finding if verdict.findings else None
            out.append((w.ref(), why, verdict.cause, len(primary.evidence) if primary else 0))
    return tuple(out)


@pytest.mark.parametrize("source", bundled_sources(), ids=source_id)
def test_admitted_workloads_whose_pods_do_not_run_get_a_release_cause(source: Path) -> None:
    wrong = [f"{ref} ({why}): {cause}, {n} evidence" for ref, why, cause, n in release_verdicts(source)
             if cause not in RELEASE_CAUSES or n == 0]
    assert wrong == []


def test_the_bundled_fixtures_hold_admitted_workloads_in_each_release_state() -> None:
    """The systematic test above must not pass vacuously: the bundle holds each release cause at least once."""
    seen = {cause for source in bundled_sources() for _, _, cause, _ in release_verdicts(source)}
    assert seen == RELEASE_CAUSES


# --- the generator ---------------------------------------------------------------------------------------------

NS = "vision"
NOW = "2026-11-30T11:00:00Z"
ADMITTED = "2026-11-30T10:30:00Z"
V2 = "kueue.x-k8s.io/v1beta2"
Objects = dict[str, dict[str, Any]]


def _cond(type_: str, status: str, reason: str, message: str, when: str = ADMITTED) -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message, "lastTransitionTime": when}


def base() -> Objects:
    """One sound admitted Job: quota reserved and admitted 30m ago, its pod Running on a Ready node."""
    requests = {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "1"}
    pod_spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": "registry.example.com/vision/seg:2.0",
                        "resources": {"requests": requests, "limits": {"nvidia.com/gpu": "1"}}}],
        "nodeSelector": {"cloud.google.com/gke-accelerator": "nvidia-l4"}, "restartPolicy": "Never",
        "nodeName": "gke-l4-pool-a1"}
    return {
        "ns": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        "rf": {"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": "l4"},
               "spec": {"nodeLabels": {"cloud.google.com/gke-accelerator": "nvidia-l4"}}},
        "cq": {"apiVersion": V2, "kind": "ClusterQueue", "metadata": {"name": "vision"},
               "spec": {"namespaceSelector": {}, "resourceGroups": [{
                   "coveredResources": ["cpu", "memory", "nvidia.com/gpu"], "flavors": [{"name": "l4", "resources": [
                       {"name": "cpu", "nominalQuota": "64"}, {"name": "memory", "nominalQuota": "512Gi"},
                       {"name": "nvidia.com/gpu", "nominalQuota": "8"}]}]}]},
               "status": {"conditions": [_cond("Active", "True", "Ready", "Can admit new workloads")]}},
        "lq": {"apiVersion": V2, "kind": "LocalQueue", "metadata": {"name": "vision", "namespace": NS},
               "spec": {"clusterQueue": "vision"},
               "status": {"conditions": [_cond("Active", "True", "Ready", "Can submit new workloads to localQueue")]}},
        "node": {"apiVersion": "v1", "kind": "Node",
                 "metadata": {"name": "gke-l4-pool-a1", "labels": {"cloud.google.com/gke-accelerator": "nvidia-l4",
                                                                   "kubernetes.io/hostname": "gke-l4-pool-a1"}},
                 "spec": {},
                 "status": {"allocatable": {"cpu": "31", "memory": "120Gi", "nvidia.com/gpu": "2", "pods": "110"},
                            "capacity": {"cpu": "32", "memory": "128Gi", "nvidia.com/gpu": "2", "pods": "110"},
                            "conditions": [_cond("Ready", "True", "KubeletReady", "kubelet is posting ready status")]}},
        "job": {"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": "seg", "namespace": NS, "uid": "job-seg",
                             "labels": {"kueue.x-k8s.io/queue-name": "vision"}},
                "spec": {"suspend": False, "parallelism": 1, "completions": 1,
                         "template": {"spec": {"containers": [{"name": "main", "image": "x"}],
                                               "restartPolicy": "Never"}}},
                "status": {"active": 1, "startTime": ADMITTED}},
        "wl": {"apiVersion": V2, "kind": "Workload",
               "metadata": {"name": "job-seg-1a2b3", "namespace": NS, "uid": "wl-seg",
                            "labels": {"kueue.x-k8s.io/job-uid": "job-seg"},
                            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "seg",
                                                 "uid": "job-seg", "controller": True}]},
               "spec": {"queueName": "vision", "podSets": [{"name": "main", "count": 1,
                                                            "template": {"spec": pod_spec}}]},
               "status": {"conditions": [
                   _cond("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue vision"),
                   _cond("Admitted", "True", "Admitted", "The workload is admitted")],
                   "admission": {"clusterQueue": "vision", "podSetAssignments": [
                       {"name": "main", "count": 1, "flavors": {r: "l4" for r in requests},
                        "resourceUsage": requests}]}}},
        "pod": {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "seg-x7k2p", "namespace": NS, "uid": "pod-seg",
                             "creationTimestamp": "2026-11-30T10:30:01Z",
                             "labels": {"batch.kubernetes.io/job-name": "seg", "job-name": "seg"},
                             "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "seg",
                                                  "uid": "job-seg", "controller": True}]},
                "spec": pod_spec,
                "status": {"phase": "Running", "startTime": "2026-11-30T10:30:05Z", "conditions": [
                    _cond("PodScheduled", "True", "", ""), _cond("Ready", "True", "", "")]}},
    }


def _pending(o: Objects, conditions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    pod = o["pod"]
    pod["status"] = {"phase": "Pending", "conditions": conditions or []}
    o["job"]["status"] = {"active": 1, "startTime": ADMITTED}
    return pod


def pods_missing(o: Objects) -> None:
    del o["pod"]
    o["job"]["status"] = {}


def unschedulable(o: Objects) -> None:
    pod = _pending(o, [_cond("PodScheduled", "False", "Unschedulable",
                             "0/4 nodes are available: 1 Insufficient nvidia.com/gpu, 3 node(s) had untolerated taint "
                             "{nvidia.com/gpu: present}. preemption: 0/4 nodes are available: 4 Preemption is not "
                             "helpful for scheduling.")])
    del pod["spec"]["nodeName"]


def kueue_gate(o: Objects) -> None:
    pod = _pending(o, [_cond("PodScheduled", "False", "SchedulingGated",
                             "Scheduling is blocked due to non-empty scheduling gates")])
    del pod["spec"]["nodeName"]
    pod["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/admission"}]


def foreign_gate(o: Objects) -> None:
    kueue_gate(o)
    o["pod"]["spec"]["schedulingGates"] = [{"name": "example.com/license-check"}]


def image_pull(o: Objects) -> None:
    pod = _pending(o, [_cond("PodScheduled", "True", "", "")])
    pod["status"]["containerStatuses"] = [{
        "name": "main", "image": "registry.example.com/vision/seg:2.0", "imageID": "", "ready": False,
        "restartCount": 0, "state": {"waiting": {"reason": "ImagePullBackOff",
                                                 "message": 'Back-off pulling image "registry.example.com/vision/'
                                                            'seg:2.0"'}}}]


def node_not_ready(o: Objects) -> None:
    _pending(o, [_cond("PodScheduled", "True", "", "")])
    o["node"]["status"]["conditions"] = [_cond("Ready", "Unknown", "NodeStatusUnknown",
                                               "Kubelet stopped posting node status.")]


def podsready_only(o: Objects) -> None:
    """No Pod objects at all (a snapshot taken without pods); Kueue's PodsReady=False is the record."""
    del o["pod"]
    o["wl"]["status"]["conditions"].append(_cond("PodsReady", "False", "WaitForStart",
                                                 "Not all pods are ready or succeeded"))


VARIANTS: dict[str, tuple[Callable[[Objects], None], str, list[str]]] = {
    "pods missing": (pods_missing, "pods-not-starting", ["Job seg has no pod", "no pod of it in the snapshot"]),
    "pending unschedulable": (unschedulable, "kube-unschedulable", ["untolerated taint", "Pod/vision/seg-x7k2p"]),
    "gated by Kueue's gate": (kueue_gate, "gate-not-removed", ["kueue.x-k8s.io/admission", "Pod/vision/seg-x7k2p"]),
    "foreign gate": (foreign_gate, "foreign-scheduling-gate", ["example.com/license-check", "Pod/vision/seg-x7k2p"]),
    "image pull failing": (image_pull, "pods-not-starting", ["ImagePullBackOff", "Pod/vision/seg-x7k2p"]),
    "bound to a NotReady node": (node_not_ready, "pods-not-starting",
                                 ["NotReady", "Node/gke-l4-pool-a1", "NodeStatusUnknown"]),
    "no Pod objects, PodsReady=False": (podsready_only, "pods-not-starting",
                                        ["PodsReady=False (WaitForStart)", "no Pod objects"]),
}


def _snapshot(tmp: Path, objects: Objects) -> Snapshot:
    (tmp / "objects").mkdir(parents=True)
    (tmp / "manifest.json").write_text(json.dumps({"format": "kueuediag-snapshot/v1", "capturedAt": NOW,
                                                   "kueueVersion": "v0.19.2", "errors": []}))
    doc = {"apiVersion": "v1", "kind": "List", "items": list(objects.values())}
    (tmp / "objects" / "objects.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return load_snapshot(str(tmp))


def _texts(verdict: Verdict) -> str:
    f = verdict.findings[0].finding
    parts = [f.title, f.message, *f.remediation]
    for e in f.evidence:
        parts += [e.observed, str(e.ref) if e.ref else ""]
    return "\n".join(parts)


def test_the_base_workload_runs_and_is_not_pending(tmp_path: Path) -> None:
    snap = _snapshot(tmp_path, base())
    (w,) = workloads(snap)
    assert not_all_running(snap, w) is None
    assert _diagnose(snap, w).cause == "not-pending"


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_each_variant_of_an_admitted_workload_gets_its_release_cause(tmp_path: Path, variant: str) -> None:
    mutate, cause, needles = VARIANTS[variant]
    objects = base()
    mutate(objects)
    snap = _snapshot(tmp_path, objects)
    (w,) = workloads(snap)
    assert not_all_running(snap, w) is not None, "the variant must describe pods that do not run"
    verdict = _diagnose(snap, w)
    assert verdict.cause == cause, f"{variant}: {verdict.cause} ({verdict.findings[0].finding.title})"
    text = _texts(verdict)
    missing = [n for n in needles if n not in text]
    assert missing == [], f"{variant}: evidence lacks {missing}:\n{text}"
