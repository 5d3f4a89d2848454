"""Generate the scale benchmark snapshot: 1,250 nodes, 200 ClusterQueues, 50,000 Workloads, 20,000 Pods.

Deterministic (seeded). Writes kubectl-style JSON Lists under OUT/objects/ plus manifest.json (~230 MB).

    python bench/generate_large.py /tmp/kd-large [--scale 1.0]
"""

from __future__ import annotations

import argparse
import json
import random
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
GPU = "nvidia.com/gpu"


def ts(delta_s: float) -> str:
    return (NOW - timedelta(seconds=delta_s)).strftime("%Y-%m-%dT%H:%M:%SZ")


def uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def container(rng: random.Random, gpus: int) -> dict:
    return {
        "name": "trainer",
        "image": f"us-docker.pkg.dev/ml-platform/images/trainer:{rng.randint(1, 40)}.{rng.randint(0, 9)}",
        "command": ["python", "-m", "train"],
        "args": ["--config", f"/configs/exp-{rng.randint(1, 9999)}.yaml", "--steps", str(rng.randint(1000, 90000))],
        "resources": {"requests": {"cpu": str(gpus * 12), "memory": f"{gpus * 96}Gi", GPU: str(gpus)},
                      "limits": {GPU: str(gpus)}},
        "volumeMounts": [{"name": "data", "mountPath": "/data"}, {"name": "dshm", "mountPath": "/dev/shm"}],
        "env": [{"name": "NCCL_DEBUG"}, {"name": "WORLD_SIZE"}],
    }


def pod_template(rng: random.Random, gpus: int) -> dict:
    return {"metadata": {"labels": {"app": "trainer"}},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 60,
                     "containers": [container(rng, gpus)],
                     "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}],
                     "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "datasets"}},
                                 {"name": "dshm", "emptyDir": {"medium": "Memory"}}]}}


SCALES = {"small": 0.005, "full": 1.0}


def _scale(text: str) -> float:
    return SCALES[text] if text in SCALES else float(text)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--scale", type=_scale, default=1.0,
                    help="fraction of the full size, or 'small' (0.005: 6 nodes, 250 Workloads) for tests")
    args = ap.parse_args()
    rng = random.Random(20261120)
    out = Path(args.out)
    (out / "objects").mkdir(parents=True, exist_ok=True)
    n_nodes, n_cq = int(1250 * args.scale), max(2, int(200 * args.scale))
    n_wl, n_pods = int(50_000 * args.scale), int(20_000 * args.scale)
    flavors = ["h100", "a100", "l4", "b200"]
    nodes = []
    for i in range(n_nodes):
        fl = flavors[i % len(flavors)]
        nodes.append({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": f"gke-ml-{fl}-pool-{i:05d}", "uid": uid(rng), "resourceVersion": str(1000 + i),
                         "creationTimestamp": ts(86400 * 30),
                         "labels": {"cloud.google.com/gke-accelerator": fl, "kubernetes.io/hostname": f"node-{i:05d}",
                                    "cloud.google.com/gce-topology-block": f"block-{i // 100}",
                                    "cloud.google.com/gce-topology-subblock": f"sub-{i // 20}"}},
            "spec": {"taints": [{"key": GPU, "value": "present", "effect": "NoSchedule"}]},
            "status": {"capacity": {"cpu": "208", "memory": "1843Gi", GPU: "8", "pods": "110"},
                       "allocatable": {"cpu": "206", "memory": "1800Gi", GPU: "8", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                       "lastTransitionTime": ts(86400 * 30)}]},
        })
    objs = []
    for f in flavors:
        objs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                     "metadata": {"name": f, "uid": uid(rng), "creationTimestamp": ts(86400 * 60)},
                     "spec": {"nodeLabels": {"cloud.google.com/gke-accelerator": f},
                              "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}]}})
    for c in range(n_cq // 10 + 1):
        objs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
                     "metadata": {"name": f"org-{c}", "uid": uid(rng), "creationTimestamp": ts(86400 * 60)},
                     "spec": {"parentName": "root"}})
    cq_names = [f"team-{i:03d}" for i in range(n_cq)]
    for i, cq in enumerate(cq_names):
        objs.append({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": cq, "uid": uid(rng), "creationTimestamp": ts(86400 * 60), "generation": 1},
            "spec": {"cohortName": f"org-{i // 10}", "namespaceSelector": {}, "queueingStrategy": "BestEffortFIFO",
                     "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
                     "resourceGroups": [{"coveredResources": ["cpu", "memory", GPU], "flavors": [
                         {"name": f, "resources": [{"name": "cpu", "nominalQuota": "1200"},
                                                   {"name": "memory", "nominalQuota": "9600Gi"},
                                                   {"name": GPU, "nominalQuota": "48"}]} for f in flavors]}]},
            "status": {"conditions": [{"type": "Active", "status": "True", "reason": "Ready",
                                       "message": "Can admit new workloads", "lastTransitionTime": ts(86400 * 60)}]},
        })
        objs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                     "metadata": {"name": "default", "namespace": cq, "uid": uid(rng),
                                  "creationTimestamp": ts(86400 * 60)},
                     "spec": {"clusterQueue": cq}})
        objs.append({"apiVersion": "v1", "kind": "Namespace",
                     "metadata": {"name": cq, "uid": uid(rng), "creationTimestamp": ts(86400 * 60),
                                  "labels": {"kubernetes.io/metadata.name": cq}}})
    workloads, jobs = [], []
    for i in range(n_wl):
        ns = cq_names[i % n_cq]
        gpus = rng.choice([1, 1, 2, 4, 8, 8])
        job_uid = uid(rng)
        name = f"exp-{i:06d}"
        created = rng.uniform(60, 86400 * 3)
        admitted = rng.random() < 0.3
        conds = []
        status: dict = {}
        if admitted:
            fl = rng.choice(flavors)
            conds = [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                      "message": f"Quota reserved in ClusterQueue {ns}", "lastTransitionTime": ts(created - 5)},
                     {"type": "Admitted", "status": "True", "reason": "Admitted",
                      "message": "The workload is admitted", "lastTransitionTime": ts(created - 5)}]
            status["admission"] = {"clusterQueue": ns, "podSetAssignments": [{
                "name": "main", "count": 1, "flavors": {"cpu": fl, "memory": fl, GPU: fl},
                "resourceUsage": {"cpu": str(gpus * 12), "memory": f"{gpus * 96}Gi", GPU: str(gpus)}}]}
        else:
            conds = [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
                      "message": f"couldn't assign flavors to pod set main: insufficient unused quota for {GPU} "
                                 f"in flavor h100, {gpus} more needed", "lastTransitionTime": ts(created - 2)}]
            status["resourceRequests"] = [{"name": "main", "resources": {
                "cpu": str(gpus * 12), "memory": f"{gpus * 96}Gi", GPU: str(gpus)}}]
        status["conditions"] = conds
        workloads.append({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": f"job-{name}-{i % 99991:05x}", "namespace": ns, "uid": uid(rng),
                         "resourceVersion": str(10_000 + i), "creationTimestamp": ts(created), "generation": 1,
                         "labels": {"kueue.x-k8s.io/job-uid": job_uid},
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": job_uid,
                                              "controller": True, "blockOwnerDeletion": True}]},
            "spec": {"active": True, "queueName": "default", "priority": rng.choice([0, 0, 100, 1000]),
                     "podSets": [{"name": "main", "count": 1, "template": pod_template(rng, gpus)}]},
            "status": status,
        })
        jobs.append({"apiVersion": "batch/v1", "kind": "Job",
                     "metadata": {"name": name, "namespace": ns, "uid": job_uid, "creationTimestamp": ts(created),
                                  "labels": {"kueue.x-k8s.io/queue-name": "default"}},
                     "spec": {"suspend": not admitted, "parallelism": 1, "completions": 1,
                              "template": pod_template(rng, gpus)}})
    pods = []
    for i in range(n_pods):
        wl = workloads[i % len(workloads)]
        gpus = int(wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"][GPU])
        node = nodes[rng.randrange(len(nodes))]
        pods.append({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{wl['metadata']['ownerReferences'][0]['name']}-{i:05d}",
                         "namespace": wl["metadata"]["namespace"], "uid": uid(rng),
                         "creationTimestamp": wl["metadata"]["creationTimestamp"],
                         "labels": {"batch.kubernetes.io/job-name": wl["metadata"]["ownerReferences"][0]["name"]},
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job",
                                              "name": wl["metadata"]["ownerReferences"][0]["name"],
                                              "uid": wl["metadata"]["labels"]["kueue.x-k8s.io/job-uid"],
                                              "controller": True}]},
            "spec": dict(pod_template(rng, gpus)["spec"], nodeName=node["metadata"]["name"]),
            "status": {"phase": "Running", "hostIP": "10.0.0.1", "podIP": f"10.8.{i // 250}.{i % 250}",
                       "startTime": wl["metadata"]["creationTimestamp"],
                       "conditions": [{"type": t, "status": "True", "lastTransitionTime": wl["metadata"][
                           "creationTimestamp"]} for t in ("PodReadyToStartContainers", "Initialized", "Ready",
                                                           "ContainersReady", "PodScheduled")],
                       "containerStatuses": [{"name": "trainer", "ready": True, "restartCount": 0, "started": True,
                                              "image": "us-docker.pkg.dev/ml-platform/images/trainer:1.0",
                                              "imageID": "us-docker.pkg.dev/ml-platform/images/trainer@sha256:"
                                                         + "ab" * 32,
                                              "containerID": "containerd://" + "cd" * 32,
                                              "state": {"running": {"startedAt": wl["metadata"][
                                                  "creationTimestamp"]}}}]},
        })
    target = workloads[1]["metadata"]
    manifest = {"format": "kueuediag-snapshot/v1", "capturedAt": NOW.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "cluster": "bench-large", "kueueVersion": "v0.19.2", "errors": [],
                "benchTarget": {"workload": target["name"], "namespace": target["namespace"]}}
    (out / "manifest.json").write_text(json.dumps(manifest))
    for name, items in (("nodes", nodes), ("kueue", objs), ("workloads", workloads), ("jobs", jobs), ("pods", pods)):
        with open(out / "objects" / f"{name}.json", "w") as fh:
            json.dump({"apiVersion": "v1", "kind": "List", "items": items}, fh)
    print(f"wrote {out}: {n_nodes} nodes, {n_cq} ClusterQueues, {n_wl} workloads, {n_pods} pods")


if __name__ == "__main__":
    main()
