"""Generate the live-mode fixture (fixtures/snapshots/live/) and large in-memory fixtures for request counts.

    python -m tests.live.fixture_gen      # rewrites fixtures/snapshots/live/

Scenario (cluster prod-gpu-1, Kueue v0.19.2, v1beta2): ClusterQueues team-a and team-b share cohort
`research` (child of `org`); job/llm-finetune in team-a needs 8 nvidia.com/gpu, team-a uses 4 of its 8 and
team-b uses all of its 8, so the workload waits for quota. ClusterQueue `misc` (no cohort, flavor
cpu-pool) and its namespace are outside the target's scope. Pods carry secret-looking env values, args
and a last-applied annotation so sanitization can be tested; the controller writes JSON logs.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "fixtures" / "snapshots" / "live"
NOW = datetime(2026, 11, 20, 10, 0, 0, tzinfo=UTC)
GPU = "nvidia.com/gpu"
KUEUE = "kueue.x-k8s.io/v1beta2"
SECRET_VALUE = "hunter2-SECRET-do-not-leak"


def ts(minutes_ago: float) -> str:
    return (NOW - timedelta(minutes=minutes_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def uid(*parts: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "kueuediag-live/" + "/".join(parts)))


_rv = [41000]


def rv() -> str:
    _rv[0] += 7
    return str(_rv[0])


def meta(kind: str, name: str, ns: str | None = None, minutes_ago: float = 600, **extra: Any) -> dict[str, Any]:
    m: dict[str, Any] = {"name": name}
    if ns:
        m["namespace"] = ns
    m["uid"] = uid(kind, ns or "", name)
    m["resourceVersion"] = rv()
    m["creationTimestamp"] = ts(minutes_ago)
    m.update(extra)
    return m


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": meta("Namespace", name, labels={"kubernetes.io/metadata.name": name, **labels}),
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}


def flavor(name: str, labels: dict[str, str], taint: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeLabels": labels}
    if taint:
        spec["tolerations"] = [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}]
    return {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": meta("ResourceFlavor", name, minutes_ago=9000),
            "spec": spec}


def cohort(name: str, parent: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if parent:
        spec["parentName"] = parent
    return {"apiVersion": KUEUE, "kind": "Cohort", "metadata": meta("Cohort", name, minutes_ago=9000), "spec": spec}


def usage(fl: str, res: dict[str, str]) -> list[dict[str, Any]]:
    return [{"name": fl, "resources": [{"name": r, "total": v, "borrowed": "0"} for r, v in res.items()]}]


def cluster_queue(name: str, cohort_name: str | None, fl: str, quota: dict[str, str], used: dict[str, str],
                  pending: int, admitted: int) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "queueingStrategy": "BestEffortFIFO",
        "preemption": {"reclaimWithinCohort": "Never", "withinClusterQueue": "Never",
                       "borrowWithinCohort": {"policy": "Never"}},
        "resourceGroups": [{"coveredResources": list(quota),
                            "flavors": [{"name": fl, "resources": [{"name": r, "nominalQuota": q}
                                                                   for r, q in quota.items()]}]}],
    }
    if cohort_name:
        spec["cohortName"] = cohort_name
    return {
        "apiVersion": KUEUE, "kind": "ClusterQueue",
        "metadata": meta("ClusterQueue", name, minutes_ago=9000, generation=1),
        "spec": spec,
        "status": {
            "conditions": [{"type": "Active", "status": "True", "reason": "Ready",
                            "message": "Can admit new workloads", "lastTransitionTime": ts(8999),
                            "observedGeneration": 1}],
            "flavorsReservation": usage(fl, used), "flavorsUsage": usage(fl, used),
            "pendingWorkloads": pending, "reservingWorkloads": admitted, "admittedWorkloads": admitted,
        },
    }


def local_queue(ns: str, name: str, cq: str, pending: int, admitted: int) -> dict[str, Any]:
    return {"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": meta("LocalQueue", name, ns, minutes_ago=8000),
            "spec": {"clusterQueue": cq, "stopPolicy": "None"},
            "status": {"conditions": [{"type": "Active", "status": "True", "reason": "Ready",
                                       "message": "Can submit new workloads to localQueue",
                                       "lastTransitionTime": ts(7999)}],
                       "pendingWorkloads": pending, "reservingWorkloads": admitted, "admittedWorkloads": admitted}}


def container(name: str, image: str, req: dict[str, str]) -> dict[str, Any]:
    return {
        "name": name, "image": image,
        "command": ["python", "-m", "train"],
        "args": ["--config", "/configs/run.yaml"],
        "env": [{"name": "NCCL_DEBUG", "value": "INFO"},
                {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}],
        "resources": {"requests": dict(req), "limits": {k: v for k, v in req.items() if k == GPU}},
    }


def pod_spec(image: str, req: dict[str, str], gpu: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {"restartPolicy": "Never", "containers": [container("trainer", image, req)]}
    if gpu:
        spec["tolerations"] = [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}]
    return spec


def job_and_workload(ns: str, name: str, lq: str, req: dict[str, str], *, admitted_cq: str | None,
                     fl: str, minutes_ago: float, gpu: bool = True, priority: int = 0,
                     pending_message: str | None = None) -> list[dict[str, Any]]:
    job_uid = uid("Job", ns, name)
    hash5 = uuid.uuid5(uuid.NAMESPACE_DNS, ns + name).hex[:5]
    wl_name = f"job-{name}-{hash5}"
    image = f"us-docker.pkg.dev/acme-ml/{ns}/{name}:2.{len(name)}"
    spec = pod_spec(image, req, gpu)
    last_applied = json.dumps({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
                               "spec": {"template": {"spec": {"containers": [{"name": "trainer"}]}}}})
    job = {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": meta("Job", name, ns, minutes_ago, generation=2,
                         labels={"kueue.x-k8s.io/queue-name": lq, "team": ns},
                         annotations={"kubectl.kubernetes.io/last-applied-configuration": last_applied},
                         managedFields=[{"manager": "kubectl-client-side-apply", "operation": "Update",
                                         "apiVersion": "batch/v1", "time": ts(minutes_ago),
                                         "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]),
        "spec": {"parallelism": 1, "completions": 1, "backoffLimit": 0, "suspend": admitted_cq is None,
                 "completionMode": "NonIndexed",
                 "template": {"metadata": {"labels": {"app": name}}, "spec": spec}},
        "status": {"active": 1, "startTime": ts(minutes_ago - 0.1), "ready": 1} if admitted_cq else {},
    }
    job["metadata"]["uid"] = job_uid
    conditions: list[dict[str, Any]]
    status: dict[str, Any]
    if admitted_cq:
        conditions = [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
             "message": f"Quota reserved in ClusterQueue {admitted_cq}", "lastTransitionTime": ts(minutes_ago - 0.05),
             "observedGeneration": 1},
            {"type": "Admitted", "status": "True", "reason": "Admitted", "message": "The workload is admitted",
             "lastTransitionTime": ts(minutes_ago - 0.05), "observedGeneration": 1},
        ]
        status = {"admission": {"clusterQueue": admitted_cq, "podSetAssignments": [
            {"name": "main", "count": 1, "flavors": dict.fromkeys(req, fl), "resourceUsage": dict(req)}]},
            "conditions": conditions}
    else:
        conditions = [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
                       "message": pending_message or "", "lastTransitionTime": ts(minutes_ago - 0.05),
                       "observedGeneration": 1}]
        status = {"conditions": conditions}
    wl = {
        "apiVersion": KUEUE, "kind": "Workload",
        "metadata": meta("Workload", wl_name, ns, minutes_ago, generation=1,
                         labels={"kueue.x-k8s.io/job-uid": job_uid},
                         ownerReferences=[{"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": job_uid,
                                           "controller": True, "blockOwnerDeletion": True}]),
        "spec": {"active": True, "queueName": lq, "priority": priority,
                 "podSets": [{"name": "main", "count": 1, "template": {"spec": spec}}]},
        "status": status,
    }
    return [job, wl]


def pod(ns: str, job: dict[str, Any], node: str, minutes_ago: float) -> dict[str, Any]:
    name = job["metadata"]["name"]
    spec = json.loads(json.dumps(job["spec"]["template"]["spec"]))
    spec["nodeName"] = node
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": meta("Pod", f"{name}-x7k2p", ns, minutes_ago,
                         labels={"batch.kubernetes.io/job-name": name, "job-name": name,
                                 "batch.kubernetes.io/controller-uid": job["metadata"]["uid"]},
                         ownerReferences=[{"apiVersion": "batch/v1", "kind": "Job", "name": name,
                                           "uid": job["metadata"]["uid"], "controller": True,
                                           "blockOwnerDeletion": True}]),
        "spec": spec,
        "status": {"phase": "Running", "startTime": ts(minutes_ago - 0.2), "hostIP": "10.0.0.9",
                   "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": ts(minutes_ago - 0.5)}],
                   "containerStatuses": [{"name": "trainer", "ready": True, "restartCount": 0,
                                          "image": spec["containers"][0]["image"], "started": True,
                                          "state": {"running": {"startedAt": ts(minutes_ago - 0.3)}}}]},
    }


def node(name: str, labels: dict[str, str], gpus: int, taint: bool) -> dict[str, Any]:
    alloc = {"cpu": "95", "memory": "1400Gi", "pods": "110"}
    if gpus:
        alloc[GPU] = str(gpus)
    spec: dict[str, Any] = {"providerID": f"gce://acme-prod/us-central1-a/{name}"}
    if taint:
        spec["taints"] = [{"key": GPU, "value": "present", "effect": "NoSchedule"}]
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": meta("Node", name, minutes_ago=20000, labels={
                "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                "topology.kubernetes.io/zone": "us-central1-a", **labels}),
            "spec": spec,
            "status": {"capacity": dict(alloc), "allocatable": dict(alloc),
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                       "message": "kubelet is posting ready status",
                                       "lastTransitionTime": ts(19000), "lastHeartbeatTime": ts(1)}],
                       "addresses": [{"type": "InternalIP", "address": "10.0.0.9"},
                                     {"type": "Hostname", "address": name}]}}


def event(ns: str, kind: str, name: str, api: str, reason: str, message: str, minutes_ago: float,
          etype: str = "Normal") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": meta("Event", f"{name}.{uuid.uuid5(uuid.NAMESPACE_DNS, reason + name).hex[:16]}", ns,
                             minutes_ago),
            "involvedObject": {"apiVersion": api, "kind": kind, "name": name, "namespace": ns,
                               "uid": uid(kind, ns, name)},
            "reason": reason, "message": message, "type": etype, "count": 3,
            "firstTimestamp": ts(minutes_ago), "lastTimestamp": ts(minutes_ago - 5),
            "source": {"component": "kueue-admission"}, "reportingComponent": "kueue-admission"}


PENDING_MSG = ("couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor "
               "a100, 4 more needed")


def build() -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]], dict[str, str], dict[str, str]]:
    """(manifest, objects by file, metrics files, log files)."""
    files: dict[str, list[dict[str, Any]]] = {}
    files["namespaces.yaml"] = [namespace("team-a", team="a"), namespace("team-b", team="b"),
                                namespace("batch-misc"), namespace("kueue-system")]
    gpu_labels = {"cloud.google.com/gke-accelerator": "nvidia-tesla-a100"}
    files["kueue-config.yaml"] = [
        flavor("a100", gpu_labels, taint=True), flavor("cpu-pool", {"acme.io/pool": "cpu"}),
        cohort("org", None), cohort("research", "org"),
        cluster_queue("team-a", "research", "a100", {"cpu": "96", "memory": "768Gi", GPU: "8"},
                      {"cpu": "48", "memory": "384Gi", GPU: "4"}, 1, 1),
        cluster_queue("team-b", "research", "a100", {"cpu": "96", "memory": "768Gi", GPU: "8"},
                      {"cpu": "96", "memory": "768Gi", GPU: "8"}, 0, 1),
        cluster_queue("misc", None, "cpu-pool", {"cpu": "64", "memory": "256Gi"},
                      {"cpu": "8", "memory": "32Gi"}, 0, 1),
        {"apiVersion": KUEUE, "kind": "WorkloadPriorityClass",
         "metadata": meta("WorkloadPriorityClass", "research-high", minutes_ago=9000), "value": 1000,
         "description": "high priority research"},
    ]
    files["localqueues.yaml"] = [local_queue("team-a", "team-a-queue", "team-a", 1, 1),
                                 local_queue("team-b", "team-b-queue", "team-b", 0, 1),
                                 local_queue("batch-misc", "misc", "misc", 0, 1)]
    target = job_and_workload("team-a", "llm-finetune", "team-a-queue",
                              {"cpu": "96", "memory": "768Gi", GPU: "8"}, admitted_cq=None, fl="a100",
                              minutes_ago=45, pending_message=PENDING_MSG)
    evalj = job_and_workload("team-a", "eval-sweep", "team-a-queue", {"cpu": "48", "memory": "384Gi", GPU: "4"},
                             admitted_cq="team-a", fl="a100", minutes_ago=120)
    bjob = job_and_workload("team-b", "pretrain-7b", "team-b-queue", {"cpu": "96", "memory": "768Gi", GPU: "8"},
                            admitted_cq="team-b", fl="a100", minutes_ago=300)
    mjob = job_and_workload("batch-misc", "etl-nightly", "misc", {"cpu": "8", "memory": "32Gi"},
                            admitted_cq="misc", fl="cpu-pool", minutes_ago=90, gpu=False)
    files["team-a.yaml"] = [*target, *evalj, pod("team-a", evalj[0], "gke-a100-pool-1", 119),
                            event("team-a", "Workload", target[1]["metadata"]["name"], KUEUE, "Pending",
                                  PENDING_MSG, 44),
                            event("team-a", "Job", "llm-finetune", "batch/v1", "Suspended", "Job suspended", 45)]
    files["team-b.yaml"] = [*bjob, pod("team-b", bjob[0], "gke-a100-pool-2", 299)]
    files["batch-misc.yaml"] = [*mjob, pod("batch-misc", mjob[0], "cpu-node-1", 89)]
    files["nodes.yaml"] = [node("gke-a100-pool-1", gpu_labels, 8, True), node("gke-a100-pool-2", gpu_labels, 8, True),
                           node("gke-a100-pool-3", gpu_labels, 8, True),
                           node("cpu-node-1", {"acme.io/pool": "cpu"}, 0, False)]
    plugin = {"apiVersion": "v1", "kind": "Pod",
              "metadata": meta("Pod", "nvidia-device-plugin-7xq9z", "kube-system", 20000,
                               labels={"app": "nvidia-device-plugin"}),
              "spec": {"nodeName": "gke-a100-pool-3", "containers": [{
                  "name": "plugin", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
                  "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}}],
                  "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}]},
              "status": {"phase": "Running"}}
    files["kube-system.yaml"] = [plugin]
    image = "registry.k8s.io/kueue/kueue:v0.19.2"
    manager_container = {"name": "manager", "image": image, "command": ["/manager"],
                         "args": ["--config=/controller_manager_config.yaml", "--zap-log-level=2"],
                         "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}}}
    files["kueue-system.yaml"] = [
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": meta("Deployment", "kueue-controller-manager", "kueue-system", 9500, generation=1,
                          labels={"control-plane": "controller-manager"}),
         "spec": {"replicas": 1, "selector": {"matchLabels": {"control-plane": "controller-manager"}},
                  "template": {"metadata": {"labels": {"control-plane": "controller-manager"}},
                               "spec": {"containers": [manager_container]}}},
         "status": {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1, "updatedReplicas": 1,
                    "observedGeneration": 1}},
        {"apiVersion": "v1", "kind": "Pod",
         "metadata": meta("Pod", "kueue-controller-manager-7d9c7c8f5b-x2x9k", "kueue-system", 9400,
                          labels={"control-plane": "controller-manager", "pod-template-hash": "7d9c7c8f5b"}),
         "spec": {"nodeName": "cpu-node-1", "containers": [manager_container]},
         "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True",
                                                        "lastTransitionTime": ts(9399)}],
                    "containerStatuses": [{"name": "manager", "ready": True, "restartCount": 0, "image": image,
                                           "started": True, "state": {"running": {"startedAt": ts(9399)}}}]}},
    ]
    wl_target = target[1]["metadata"]["name"]
    files["visibility.yaml"] = [
        {"apiVersion": "visibility.kueue.x-k8s.io/v1beta2", "kind": "PendingWorkloadsSummary",
         "metadata": {"name": "team-a", "labels": {"kueuediag.io/queue-kind": "ClusterQueue"}},
         "items": [{"metadata": {"name": wl_target, "namespace": "team-a", "creationTimestamp": ts(45)},
                    "priority": 0, "localQueueName": "team-a-queue", "positionInClusterQueue": 0,
                    "positionInLocalQueue": 0}]},
        {"apiVersion": "visibility.kueue.x-k8s.io/v1beta2", "kind": "PendingWorkloadsSummary",
         "metadata": {"name": "team-a-queue", "namespace": "team-a",
                      "labels": {"kueuediag.io/queue-kind": "LocalQueue"}},
         "items": [{"metadata": {"name": wl_target, "namespace": "team-a", "creationTimestamp": ts(45)},
                    "priority": 0, "localQueueName": "team-a-queue", "positionInClusterQueue": 0,
                    "positionInLocalQueue": 0}]},
    ]
    logs = {"logs/kueue-system/kueue-controller-manager-7d9c7c8f5b-x2x9k/manager.log": _log_lines(wl_target)}
    metrics = {"metrics/prometheus.om": _metrics()}
    manifest = {"format": "kueuediag-snapshot/v1", "capturedAt": ts(0), "cluster": "prod-gpu-1",
                "kueueVersion": "v0.19.2", "errors": []}
    return manifest, files, metrics, logs


def _log_lines(wl: str) -> str:
    lines = []
    for i in range(40):
        t = (NOW - timedelta(minutes=44 - i)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        lines.append(json.dumps({
            "level": "Level(-2)", "ts": t, "logger": "scheduler", "caller": "scheduler/scheduler.go:763",
            "msg": "Workload re-queued", "schedulingCycle": 1200 + i,
            "workload": {"name": wl, "namespace": "team-a"}, "clusterQueue": {"name": "team-a"},
            "queue": {"name": "team-a-queue", "namespace": "team-a"}, "requeueReason": "", "added": True,
            "status": ""}, separators=(",", ":")))
    return "\n".join(lines) + "\n"


def metric_start() -> float:
    return (NOW - timedelta(hours=2)).timestamp()


def _metrics() -> str:
    from kueuediag.live.prom import to_openmetrics

    start = metric_start()
    times = [start + 60 * i for i in range(121)]
    series: list[tuple[str, dict[str, str], list[tuple[float, float]]]] = []
    role = {"replica_role": "leader"}
    for cq, pending, used in (("team-a", 1, 4), ("team-b", 0, 8), ("misc", 0, 0)):
        series.append(("kueue_pending_workloads", {"cluster_queue": cq, "status": "active", **role},
                       [(t, float(pending if t >= (NOW - timedelta(minutes=45)).timestamp() else 0)) for t in times]))
        series.append(("kueue_pending_workloads", {"cluster_queue": cq, "status": "inadmissible", **role},
                       [(t, 0.0) for t in times]))
        series.append(("kueue_admitted_active_workloads", {"cluster_queue": cq, **role}, [(t, 1.0) for t in times]))
        if cq != "misc":
            labels = {"cohort": "research", "cluster_queue": cq, "flavor": "a100", "resource": GPU, **role}
            series.append(("kueue_cluster_queue_resource_usage", labels, [(t, float(used)) for t in times]))
            series.append(("kueue_cluster_queue_nominal_quota", labels, [(t, 8.0) for t in times]))
        series.append(("kueue_admitted_workloads_total", {"cluster_queue": cq, **role},
                       [(t, float(10 + i // 30)) for i, t in enumerate(times)]))
    series.append(("kueue_admission_attempts_total", {"result": "inadmissible", **role},
                   [(t, float(100 + i)) for i, t in enumerate(times)]))
    series.append(("kueue_build_info", {"git_version": "v0.19.2", "git_commit": "8eab687", "build_date": "2026-08-20",
                                        "go_version": "go1.24.6", "compiler": "gc", "platform": "linux/amd64"},
                   [(t, 1.0) for t in times]))
    return to_openmetrics(series)


def write(out: Path = OUT) -> None:
    manifest, files, metrics, logs = build()
    (out / "objects").mkdir(parents=True, exist_ok=True)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    for name, objs in files.items():
        if name in ("kueue-config.yaml", "nodes.yaml"):
            text = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objs}, sort_keys=False)
        else:
            text = yaml.safe_dump_all(objs, sort_keys=False)
        (out / "objects" / name).write_text(text)
    for rel, text in {**metrics, **logs}.items():
        p = out / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def inject_secrets(objs: list[dict[str, Any]]) -> None:
    """Give every Job/Pod container what a real cluster leaks (done in memory only: fixtures on disk carry
    no secrets): literal secret env values, envFrom, secret-looking args, and a last-applied annotation."""
    for obj in objs:
        if obj.get("kind") not in ("Job", "Pod", "Workload"):
            continue
        spec = obj.get("spec") or {}
        pod_specs = [spec] if obj["kind"] == "Pod" else (
            [spec["template"]["spec"]] if obj["kind"] == "Job" else [ps["template"]["spec"] for ps in spec["podSets"]])
        for ps in pod_specs:
            for c in ps.get("containers") or ():
                c.setdefault("env", []).append({"name": "HF_TOKEN", "value": SECRET_VALUE})
                c["envFrom"] = [{"secretRef": {"name": "training-secrets"}}]
                c["args"] = [*(c.get("args") or []), f"--wandb-api-key={SECRET_VALUE}", "--token", SECRET_VALUE,
                             f"--db=postgres://admin:{SECRET_VALUE}@db:5432/x"]
        ann = obj["metadata"].setdefault("annotations", {})
        ann["kubectl.kubernetes.io/last-applied-configuration"] = json.dumps({"env": [
            {"name": "HF_TOKEN", "value": SECRET_VALUE}]})


def large(namespaces: int, workloads_per_ns: int, nodes: int, pods_per_node: int) -> list[dict[str, Any]]:
    """A big in-memory cluster (one cohort, one CQ per namespace) for request-count bounds."""
    objs: list[dict[str, Any]] = []
    gpu_labels = {"cloud.google.com/gke-accelerator": "nvidia-tesla-a100"}
    objs += [flavor("a100", gpu_labels, taint=True), cohort("org", None)]
    for n in range(nodes):
        objs.append(node(f"gpu-node-{n:04d}", gpu_labels, 8, True))
    for i in range(namespaces):
        ns = f"team-{i:03d}"
        objs.append(namespace(ns))
        objs.append(cluster_queue(f"cq-{i:03d}", "org", "a100", {"cpu": "96", "memory": "768Gi", GPU: "8"},
                                  {"cpu": "0", "memory": "0", GPU: "0"}, workloads_per_ns, 0))
        objs.append(local_queue(ns, "q", f"cq-{i:03d}", workloads_per_ns, 0))
        for w in range(workloads_per_ns):
            objs += job_and_workload(ns, f"job-{w:04d}", "q", {"cpu": "12", "memory": "96Gi", GPU: "1"},
                                     admitted_cq=None, fl="a100", minutes_ago=30, pending_message=PENDING_MSG)
    running = job_and_workload("team-000", "runner", "q", {"cpu": "1", "memory": "1Gi", GPU: "1"},
                               admitted_cq="cq-000", fl="a100", minutes_ago=30)
    objs += running
    for n in range(nodes):
        for p in range(pods_per_node):
            pd = pod("team-000", running[0], f"gpu-node-{n:04d}", 20)
            pd["metadata"]["name"] = f"runner-{n}-{p}"
            pd["metadata"]["uid"] = uid("Pod", "team-000", f"runner-{n}-{p}")
            objs.append(pd)
    return objs


if __name__ == "__main__":
    write()
    print(f"wrote {OUT}")
