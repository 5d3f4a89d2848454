"""Generate the scale benchmark snapshot of a ~10,000-GPU cluster.

At ``--scale 1``: 1,250 nodes (8 GPUs each), 200 ClusterQueues in a 3-level cohort tree (root → 4 divisions →
21 orgs → ClusterQueues), 50,000 Workloads (5,000 pending), 50,000 Jobs, 20,000 Pods, the scheduler's events,
6 h of Kueue metrics at a 60 s step and 100,000 controller log lines (~230 MB). Every count scales linearly.

Deterministic (seeded): the same scale always writes the same bytes. Writes kubectl-style JSON Lists under
OUT/objects/ (with Kueue's controller Deployment and pod), OUT/metrics/kueue.om, the controller's log under
OUT/logs/kueue-system/<pod>/manager.log and OUT/manifest.json.

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
GENERATOR_VERSION = 2
"""recorded in the manifest (``benchGenerator``): a snapshot cached by an older generator is written again"""
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


def scheduler_events(workloads: list[dict]) -> list[dict]:
    """The scheduler's Pending event for every pending Workload (what `kubectl get events` shows)."""
    events = []
    for w in workloads:
        conds = w["status"]["conditions"]
        if conds and conds[0]["status"] == "False":
            m = w["metadata"]
            events.append({
                "apiVersion": "v1", "kind": "Event",
                "metadata": {"name": f"{m['name']}.18a{len(events):07x}", "namespace": m["namespace"],
                             "creationTimestamp": conds[0]["lastTransitionTime"]},
                "involvedObject": {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "name": m["name"],
                                   "namespace": m["namespace"], "uid": m["uid"]},
                "reason": "Pending", "message": conds[0]["message"], "type": "Normal",
                "source": {"component": "kueue-admission"}, "count": 1,
                "firstTimestamp": conds[0]["lastTransitionTime"], "lastTimestamp": conds[0]["lastTransitionTime"],
            })
    return events


def write_metrics(path: Path, cq_names: list[str], rng: random.Random) -> int:
    """Six hours of the Kueue series the checks read, one sample a minute, as OpenMetrics with timestamps."""
    end = int(NOW.timestamp())
    steps = range(end - 6 * 3600, end + 1, 60)
    series = 0
    with open(path, "w") as fh:
        fh.write("# TYPE kueue_build_info gauge\n")
        fh.write(f'kueue_build_info{{git_version="v0.19.2",replica_role="leader"}} 1 {end}\n')
        series += 1
        fh.write("# TYPE kueue_pending_workloads gauge\n")
        for cq in cq_names:
            base = rng.randint(5, 40)
            for status in ("active", "inadmissible"):
                series += 1
                fh.writelines(f'kueue_pending_workloads{{cluster_queue="{cq}",status="{status}",'
                              f'replica_role="leader"}} {base + (t // 600) % 7} {t}\n' for t in steps)
        for family, label in (("kueue_admitted_workloads", "cluster_queue"),
                              ("kueue_preempted_workloads", "preempting_cluster_queue")):
            fh.write(f"# TYPE {family} counter\n")
            for cq in cq_names:
                series += 1
                count, rate = rng.randint(100, 5000), rng.random() * 0.3
                lines = []
                for t in steps:
                    count += 1 if rng.random() < rate else 0
                    lines.append(f'{family}_total{{{label}="{cq}",replica_role="leader"}} {count} {t}\n')
                fh.writelines(lines)
        fh.write("# EOF\n")
    return series


def write_logs(path: Path, workloads: list[dict], n_lines: int, rng: random.Random) -> int:
    """Scheduler log lines at --zap-log-level=3 (zap JSON), spread over the last six hours."""
    pending = [w for w in workloads if w["status"]["conditions"][0]["status"] == "False"] or workloads
    start = NOW - timedelta(hours=6)
    with open(path, "w") as fh:
        for i in range(n_lines):
            w = pending[rng.randrange(len(pending))]["metadata"]
            at = (start + timedelta(seconds=i * 6 * 3600 / max(n_lines, 1))).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            ref = {"name": w["name"], "namespace": w["namespace"]}
            cq = {"name": w["namespace"]}
            if i % 3 == 0:
                line = {"level": "Level(-2)", "ts": at, "logger": "scheduler", "caller": "scheduler/scheduler.go:291",
                        "msg": "Attempting to schedule workload", "schedulingCycle": 100_000 + i // 3,
                        "workload": ref, "clusterQueue": cq, "replica-role": "leader"}
            elif i % 3 == 1:
                line = {"level": "Level(-3)", "ts": at, "logger": "scheduler", "caller": "scheduler/logging.go:40",
                        "msg": "Workload evaluated for admission", "schedulingCycle": 100_000 + i // 3,
                        "workload": ref, "clusterQueue": cq, "status": "",
                        "reason": "couldn't assign flavors to pod set main: insufficient unused quota for "
                                  "nvidia.com/gpu in flavor h100, 8 more needed", "replica-role": "leader"}
            else:
                line = {"level": "Level(-2)", "ts": at, "logger": "scheduler", "caller": "scheduler/scheduler.go:763",
                        "msg": "Workload re-queued", "schedulingCycle": 100_000 + i // 3, "workload": ref,
                        "clusterQueue": cq, "queue": {"name": "default", "namespace": w["namespace"]},
                        "requeueReason": "", "added": True, "status": "", "replica-role": "leader"}
            fh.write(json.dumps(line, separators=(",", ":")) + "\n")
    return n_lines


CONTROLLER_POD = "kueue-controller-manager-6f8d9c7b5d-x2x4q"
LOG_FILE = f"logs/kueue-system/{CONTROLLER_POD}/manager.log"
"""the controller's log, where a snapshot keeps it and where the test API server serves it from"""


def controller_objects(node: str) -> list[dict]:
    """Kueue's controller as every cluster running Kueue has it: its Deployment and its running manager pod (live
    collections find the pod and read its log, as they would on a real cluster)."""
    labels = {"control-plane": "controller-manager", "app.kubernetes.io/name": "kueue"}
    manager = {"name": "manager", "image": "registry.k8s.io/kueue/kueue:v0.19.2",
               "args": ["--config=/controller_manager_config.yaml", "--zap-log-level=3"],
               "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}}}
    created = ts(-14 * 24 * 3600)
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "kueue-controller-manager", "namespace": "kueue-system",
                               "uid": "00000000-0000-4000-8000-00000000c0de", "creationTimestamp": created,
                               "labels": labels},
                  "spec": {"replicas": 1, "selector": {"matchLabels": {"control-plane": "controller-manager"}},
                           "template": {"metadata": {"labels": labels}, "spec": {"containers": [manager]}}},
                  "status": {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1}}
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": CONTROLLER_POD, "namespace": "kueue-system",
                        "uid": "00000000-0000-4000-8000-00000000c0d1", "creationTimestamp": created,
                        "labels": dict(labels, **{"pod-template-hash": "6f8d9c7b5d"})},
           "spec": {"containers": [manager], "nodeName": node},
           "status": {"phase": "Running", "startTime": created,
                      "containerStatuses": [{"name": "manager", "ready": True, "restartCount": 0, "started": True,
                                             "image": manager["image"], "imageID": "",
                                             "state": {"running": {"startedAt": created}}}]}}
    return [deployment, pod]


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
    n_div = 4
    objs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
                 "metadata": {"name": "root", "uid": uid(rng), "creationTimestamp": ts(86400 * 60)}, "spec": {}})
    for d in range(n_div):
        objs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
                     "metadata": {"name": f"division-{d}", "uid": uid(rng), "creationTimestamp": ts(86400 * 60)},
                     "spec": {"parentName": "root"}})
    for c in range(n_cq // 10 + 1):
        objs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
                     "metadata": {"name": f"org-{c}", "uid": uid(rng), "creationTimestamp": ts(86400 * 60)},
                     "spec": {"parentName": f"division-{c % n_div}"}})
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
                                                   {"name": GPU, "nominalQuota": "12"}]} for f in flavors]}]},
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
        roll = rng.random()
        admitted, finished = roll >= 0.1, roll >= 0.14  # 10 % pending, 4 % running, 86 % finished
        if i == 0 and admitted:
            # the bench's `why` target is the first workload, pending at every scale, so that doubling the cluster
            # times `why` on the same workload (the first of the first ClusterQueue); the flavor it would have
            # been admitted to is still drawn, so the rest of the cluster stays what the seed makes it
            rng.choice(flavors)
            admitted = finished = False
        conds = []
        status: dict = {}
        if admitted:
            fl = rng.choice(flavors)
            conds = [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                      "message": f"Quota reserved in ClusterQueue {ns}", "lastTransitionTime": ts(created - 5)},
                     {"type": "Admitted", "status": "True", "reason": "Admitted",
                      "message": "The workload is admitted", "lastTransitionTime": ts(created - 5)}]
            if finished:
                conds.append({"type": "Finished", "status": "True", "reason": "Succeeded",
                              "message": "Job finished successfully", "lastTransitionTime": ts(created / 2)})
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
    running = [w for w in workloads if len(w["status"]["conditions"]) == 2]
    done = [w for w in workloads if len(w["status"]["conditions"]) == 3]
    for i in range(n_pods):
        # the running workloads' pods first, then completed pods of finished workloads (kept by the Job)
        wl = running[i] if i < len(running) else done[(i - len(running)) % len(done)]
        phase = "Running" if i < len(running) else "Succeeded"
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
            "status": {"phase": phase, "hostIP": "10.0.0.1", "podIP": f"10.8.{i // 250}.{i % 250}",
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
    events = scheduler_events(workloads)
    target = next(w for w in workloads if w["status"]["conditions"][0]["status"] == "False")["metadata"]
    manifest = {"format": "kueuediag-snapshot/v1", "capturedAt": NOW.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "cluster": "bench-large", "kueueVersion": "v0.19.2", "errors": [],
                "benchGenerator": GENERATOR_VERSION,
                "benchTarget": {"workload": target["name"], "namespace": target["namespace"]}}
    (out / "manifest.json").write_text(json.dumps(manifest))
    for name, items in (("nodes", nodes), ("kueue", objs), ("workloads", workloads), ("jobs", jobs), ("pods", pods),
                        ("events", events), ("controller", controller_objects(nodes[0]["metadata"]["name"]))):
        with open(out / "objects" / f"{name}.json", "w") as fh:
            json.dump({"apiVersion": "v1", "kind": "List", "items": items}, fh)
    (out / "metrics").mkdir(exist_ok=True)
    n_series = write_metrics(out / "metrics" / "kueue.om", cq_names, rng)
    (out / LOG_FILE).parent.mkdir(parents=True, exist_ok=True)
    n_lines = write_logs(out / LOG_FILE, workloads, int(100_000 * args.scale), rng)
    print(f"wrote {out}: {n_nodes} nodes, {n_cq} ClusterQueues, {n_wl} workloads, {n_pods} pods, "
          f"{len(events)} events, {n_series} metric series, {n_lines} log lines")


if __name__ == "__main__":
    main()
