"""Scoped live collection against the local API server: scope, GET-only, permissions, deadline, scale."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kueuediag.config import Settings
from kueuediag.engine import diagnose
from kueuediag.live import LiveOptions, collect_for_why, live_snapshot_for_why
from kueuediag.live.kube import KubeClient, KueueNotInstalled
from kueuediag.models import Outcome
from kueuediag.registry import discover
from kueuediag.snapshot.model import Part, Snapshot
from kueuediag.target import resolve
from tests.live.apiserver import Fault
from tests.live.conftest import ServerFactory
from tests.live.fixture_gen import SECRET_VALUE, large


def opts(srv: Any, tmp_path: Path, **kw: Any) -> LiveOptions:
    return LiveOptions(kubeconfig=str(srv.kubeconfig(tmp_path)), **kw)


def keys(raw: Any, kind: str) -> set[tuple[str | None, str]]:
    return {(o["metadata"].get("namespace"), o["metadata"]["name"]) for o in raw.objects if o["kind"] == kind}


def test_scope_of_a_target(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server() as srv:
        raw = collect_for_why("job/llm-finetune", "team-a", opts(srv, tmp_path))
        requests = list(srv.cluster.requests)
    # the target's namespace and the whole cohort tree's queues — not `misc`; Workloads only where they name the
    # holders of team-a's quota (team-a itself: team-b's usage is Kueue's record, ClusterQueue status)
    wl_ns = {ns for ns, _ in keys(raw, "Workload")}
    assert wl_ns == {"team-a"}
    assert ("team-b", "team-b-queue") in keys(raw, "LocalQueue")
    assert ("batch-misc", "misc") not in keys(raw, "LocalQueue")
    assert {n for _, n in keys(raw, "Cohort")} == {"org", "research"}
    # nodes selected by flavor a100 only, and the pods bound to them (any namespace), plus the controller
    assert {n for _, n in keys(raw, "Node")} == {"gke-a100-pool-1", "gke-a100-pool-2", "gke-a100-pool-3"}
    pods = keys(raw, "Pod")
    assert ("kube-system", "nvidia-device-plugin-7xq9z") in pods
    assert ("team-b", "pretrain-7b-x7k2p") in pods
    assert ("batch-misc", "etl-nightly-x7k2p") not in pods
    assert ("kueue-system", "kueue-controller-manager-7d9c7c8f5b-x2x9k") in pods
    assert ("team-a", "llm-finetune") in keys(raw, "Job")
    # visibility API positions, stored as PendingWorkloadsSummary named after the queue
    assert keys(raw, "PendingWorkloadsSummary") == {(None, "team-a"), ("team-a", "team-a-queue")}
    summary = next(o for o in raw.objects if o["kind"] == "PendingWorkloadsSummary" and
                   not o["metadata"].get("namespace"))
    assert summary["items"][0]["positionInClusterQueue"] == 0
    # logs and manifest
    (log_path,) = raw.logs
    assert log_path == "logs/kueue-system/kueue-controller-manager-7d9c7c8f5b-x2x9k/manager.log"
    assert "Workload re-queued" in raw.logs[log_path]
    log_req = next(r for r in requests if r.path.endswith("/log"))
    assert log_req.query["sinceSeconds"] == "7200" and log_req.query["container"] == "manager"
    m = raw.manifest
    assert m["format"] == "kueuediag-snapshot/v1" and m["cluster"] == "prod-gpu-1"
    assert m["kueueVersion"] == "v0.19.2" and m["errors"] == []
    # the namespaces whose Workloads were all read: quota math takes the tree's usage from ClusterQueue status
    assert m["namespaces"] == ["team-a"]
    assert m["scope"] == {"target": "job/llm-finetune", "namespace": "team-a", "clusterQueues": ["team-a", "team-b"]}
    # read-only, no Secrets, no per-node or per-pod requests
    assert {r.method for r in requests} == {"GET"}
    assert not any("secret" in r.path for r in requests)
    assert not any(r.path.startswith("/api/v1/nodes/") for r in requests)
    assert sum(1 for r in requests if "/pods/" in r.path) == 1  # the one controller log
    assert m["collector"]["requests"] == len(requests)


def test_collected_objects_are_sanitized(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server() as srv:
        raw = collect_for_why("job/llm-finetune", "team-a", opts(srv, tmp_path))
    job = next(o for o in raw.objects if o["kind"] == "Job" and o["metadata"]["name"] == "llm-finetune")
    c = job["spec"]["template"]["spec"]["containers"][0]
    assert SECRET_VALUE not in repr(raw.objects)
    assert "envFrom" not in c
    assert {e["name"]: e.get("value") for e in c["env"]}["HF_TOKEN"] == "<redacted>"
    assert "--wandb-api-key=<redacted>" in c["args"] and c["args"][c["args"].index("--token") + 1] == "<redacted>"
    assert "kubectl.kubernetes.io/last-applied-configuration" not in job["metadata"].get("annotations", {})
    assert job["metadata"]["managedFields"] == [{"manager": "kubectl-client-side-apply", "operation": "Update",
                                                 "time": "2026-11-20T09:15:00Z"}]
    # requests (what the diagnosis needs) survive
    assert c["resources"]["requests"]["nvidia.com/gpu"] == "8"


def test_forbidden_nodes_skip_node_checks_rest_runs(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server() as srv:
        srv.cluster.faults.append(Fault(path=r"^/api/v1/nodes$", status=403))
        snap = live_snapshot_for_why("job/llm-finetune", "team-a", opts(srv, tmp_path))
    assert ("nodes (list)", "cannot list nodes (403): need get/list on nodes") in snap.manifest.errors
    assert snap.part_unavailable(Part.NODES) == \
        "not collected (nodes (list): cannot list nodes (403): need get/list on nodes)"
    assert snap.part_unavailable(Part.PODS) is None
    assert snap.part_unavailable(Part.WORKLOADS) is None
    verdict = diagnose(snap, resolve(snap, "job/llm-finetune", "team-a"), discover(), Settings())
    assert verdict.cause == "waiting-for-quota"
    node_checks = [c for c in discover() if Part.NODES in c.requires]
    for run in verdict.runs:
        if run.code in {c.code for c in node_checks}:
            assert run.outcome is Outcome.SKIPPED and "need get/list on nodes" in (run.reason or "")
    assert "nodes (list): cannot list nodes (403): need get/list on nodes" in verdict.snapshot_errors


RESEARCHER_FORBIDDEN = [
    r"^/apis/kueue\.x-k8s\.io/v1beta2/(clusterqueues|cohorts|resourceflavors|topologies|workloadpriorityclasses|"
    r"admissionchecks|provisioningrequestconfigs|localqueues|workloads)(/.*)?$",
    r"^/api/v1/(nodes|pods|events|namespaces/team-a)$",
    r"^/api/v1/namespaces/kueue-system/",
    r"^/apis/apps/v1/namespaces/kueue-system/",
    r"^/apis/scheduling\.k8s\.io/",
    r"^/apis/visibility\.kueue\.x-k8s\.io/v1beta2/clusterqueues/",
]


def test_researcher_with_namespace_read_only(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server() as srv:
        srv.cluster.faults.extend(Fault(path=p, status=403) for p in RESEARCHER_FORBIDDEN)
        snap = live_snapshot_for_why("job/llm-finetune", "team-a", opts(srv, tmp_path))
        requests = list(srv.cluster.requests)
    errors = dict(snap.manifest.errors)
    assert errors["clusterqueues (list)"] == \
        "cannot list clusterqueues.kueue.x-k8s.io (403): need get/list on clusterqueues.kueue.x-k8s.io"
    assert errors["nodes (list)"] == "cannot list nodes (403): need get/list on nodes"
    assert {e for w, e in snap.manifest.errors if w == "controller status (list)"} == {
        "cannot list pods in namespace kueue-system (403): need get/list on pods",
        "cannot list deployments.apps in namespace kueue-system (403): need get/list on deployments.apps"}
    assert "cohort-wide usage (all namespaces)" in errors
    # namespace data still there: the Workload, its Job, the LocalQueue and the LocalQueue's positions
    assert snap.get("LocalQueue", "team-a-queue", "team-a") is not None
    assert snap.get("PendingWorkloadsSummary", "team-a-queue", "team-a") is not None
    assert snap.part_unavailable(Part.WORKLOADS) is None and snap.part_unavailable(Part.PODS) is None
    assert snap.part_unavailable(Part.QUEUES) is not None  # the ClusterQueue is not visible
    assert snap.manifest.namespaces == ("team-a",)  # other namespaces were not readable
    target = resolve(snap, "job/llm-finetune", "team-a")
    assert target.workload is not None
    verdict = diagnose(snap, target, discover(), Settings())
    assert verdict.workload.name == target.workload.name and verdict.workload.state == "pending"
    assert any(r.outcome is Outcome.SKIPPED and "(403)" in (r.reason or "") for r in verdict.runs)
    # still a useful verdict: Kueue's own message, classified, with the LocalQueue position from the visibility API
    assert verdict.cause == "waiting-for-quota"
    top = verdict.findings[0].finding
    assert "ClusterQueue not visible" in top.title and top.confidence.label == "medium"
    assert any(e.ref is not None and e.ref.kind == "PendingWorkloadsSummary" for e in top.evidence)
    assert {r.method for r in requests} == {"GET"}


def test_kueue_not_installed(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server(kueue_installed=False) as srv:
        with pytest.raises(KueueNotInstalled, match="Kueue is not installed"):
            live_snapshot_for_why("job/llm-finetune", "team-a", opts(srv, tmp_path))
        assert len(srv.cluster.requests) == 1


def test_deadline_diagnoses_with_what_was_collected(api_server: ServerFactory, tmp_path: Path) -> None:
    now = [0.0]

    def clock() -> float:
        now[0] += 1.0  # every clock read costs a second
        return now[0]

    with api_server() as srv:
        o = opts(srv, tmp_path, timeout=40)
        client = KubeClient.from_kubeconfig(o.kubeconfig, None, timeout=40, clock=clock)
        snap = live_snapshot_for_why("job/llm-finetune", "team-a", o, client=client)
    errors = dict(snap.manifest.errors)
    assert any(e == "not collected: --timeout reached" for e in errors.values())
    assert snap.get("Workload", next(iter(w["metadata"]["name"] for w in snap.of_kind("Workload"))), "team-a")
    verdict = diagnose(snap, resolve(snap, "job/llm-finetune", "team-a"), discover(), Settings())
    assert verdict.cause is not None
    assert any("--timeout reached" in e for e in verdict.snapshot_errors)


def test_request_count_is_bounded_for_a_large_cluster(api_server: ServerFactory, tmp_path: Path) -> None:
    small = large(namespaces=3, workloads_per_ns=5, nodes=4, pods_per_node=2)
    big = large(namespaces=40, workloads_per_ns=60, nodes=300, pods_per_node=4)
    counts = []
    for objs in (small, big):
        with api_server(objects=objs, logs={}, secrets=False) as srv:
            raw = collect_for_why("job/job-0001", "team-000", opts(srv, tmp_path))
            reqs = list(srv.cluster.requests)
        counts.append(len(reqs))
        assert {r.method for r in reqs} == {"GET"}
        assert not any(r.path.startswith("/api/v1/nodes/") or "/pods/" in r.path for r in reqs)
    # one cohort: all 300 nodes and 1,200 pods are collected; Workloads only of the target's ClusterQueue (its
    # namespace), the other 39 ClusterQueues' usage is their status
    assert len([o for o in raw.objects if o["kind"] == "Node"]) == 300
    assert {o["metadata"]["namespace"] for o in raw.objects if o["kind"] == "Workload"} == {"team-000"}
    assert len([o for o in raw.objects if o["kind"] == "Workload"]) == 60 + 1
    assert len([o for o in raw.objects if o["kind"] == "Pod"]) == 1200
    assert not [r.path for r in reqs if r.path.endswith("/workloads") and "/namespaces/" not in r.path]
    # 1,200 Pods cost only extra pages (500 per page), not a request per object
    assert counts[1] - counts[0] <= 10, counts
    assert counts[1] <= 40, counts


def test_live_snapshot_is_a_snapshot(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server() as srv:
        snap = live_snapshot_for_why("job/llm-finetune", "team-a", opts(srv, tmp_path),
                                     save=tmp_path / "saved.tar.gz")
    assert isinstance(snap, Snapshot)
    assert (tmp_path / "saved.tar.gz").stat().st_size > 0
    from kueuediag.snapshot.loader import load_snapshot

    again = load_snapshot(str(tmp_path / "saved.tar.gz"))
    assert {o["metadata"]["name"] for o in again.of_kind("Workload")} == \
        {o["metadata"]["name"] for o in snap.of_kind("Workload")}


def test_api_going_away_mid_collection_keeps_what_was_read(api_server: ServerFactory, tmp_path: Path) -> None:
    from kueuediag.live.kube import Response, _kubernetes_transport, _load_api_client

    with api_server() as srv:
        api_client, cluster, _, _ = _load_api_client(str(srv.kubeconfig(tmp_path)), None)
        real = _kubernetes_transport(api_client)
        gone = [False]
        after = [0]  # requests sent after the API server went away (the controller's log, read on its own thread
        # from the start, is not counted: whether it is in flight then is a race)

        def flaky(method: str, path: str, query: list[tuple[str, str]], timeout: float) -> Response:
            # discovery, the controller and the namespace's objects; the API server goes away at the first
            # cluster-wide Kueue LIST
            gone[0] = gone[0] or path.endswith("/clusterqueues")
            if gone[0]:
                after[0] += not path.endswith("/log")
                raise ConnectionRefusedError("[Errno 111] Connection refused")
            return real(method, path, query, timeout)

        client = KubeClient(flaky, cluster=cluster, max_retries=1, sleep=lambda s: None)
        snap = live_snapshot_for_why("job/llm-finetune", "team-a", LiveOptions(), client=client)
    errors = dict(snap.manifest.errors)
    assert errors["clusterqueues (list)"].startswith("not collected: cannot reach the Kubernetes API")
    assert errors["nodes (list)"] == "not collected: the Kubernetes API stopped answering"
    assert snap.get("Job", "llm-finetune", "team-a") is not None
    assert snap.part_unavailable(Part.WORKLOADS) is None and snap.part_unavailable(Part.QUEUES) is not None
    assert after[0] == 2  # one try and one retry, then no more requests


@pytest.mark.parametrize("command", ["why", "snapshot -A"])
def test_the_controller_log_travels_while_the_objects_are_read(command: str, api_server: ServerFactory,
                                                              tmp_path: Path) -> None:
    """A manager's log is the largest single answer (up to 32 MiB through the kubelet): it is read on a thread of its
    own from the start of the collection, so the object reads go on while it travels, and it is counted once."""
    import time

    from kueuediag.live.collect import collect_cluster
    from kueuediag.live.kube import Response, _kubernetes_transport, _load_api_client

    with api_server() as srv:
        api_client, cluster, _, _ = _load_api_client(str(srv.kubeconfig(tmp_path)), None)
        real = _kubernetes_transport(api_client)
        spans: list[tuple[str, float, float]] = []

        def slow_log(method: str, path: str, query: list[tuple[str, str]], timeout: float) -> Response:
            start = time.monotonic()
            if path.endswith("/log"):
                time.sleep(0.5)  # a slow kubelet
            try:
                return real(method, path, query, timeout)
            finally:
                spans.append((path, start, time.monotonic()))

        client = KubeClient(slow_log, cluster=cluster)
        srv.cluster.logs = {rel: text + 'level=info msg="dsn=postgres://admin:Kq9LogSecret@db/x"\n'
                            for rel, text in srv.cluster.logs.items()}
        raw = (collect_for_why("job/llm-finetune", "team-a", LiveOptions(), client=client) if command == "why"
               else collect_cluster(None, None, LiveOptions(), client=client))
    ((log_start, log_end),) = [(start, end) for path, start, end in spans if path.endswith("/log")]
    during = [path for path, start, _ in spans if log_start < start < log_end]
    assert any("/workloads" in path for path in during), during  # the objects were read while the log travelled
    (text,) = raw.logs.values()
    assert "Workload re-queued" in text and "postgres://<redacted>@db" in text and "Kq9LogSecret" not in text
    assert raw.manifest["errors"] == [] and raw.manifest["collector"]["requests"] == len(spans)


def test_snapshot_request_count_is_bounded_for_a_large_cluster(api_server: ServerFactory, tmp_path: Path) -> None:
    from kueuediag.live import take_snapshot

    big = large(namespaces=40, workloads_per_ns=60, nodes=300, pods_per_node=4)
    with api_server(objects=big, logs={}, secrets=False) as srv:
        result = take_snapshot(tmp_path / "big.tar.gz", opts(srv, tmp_path))
        reqs = list(srv.cluster.requests)
    kinds: dict[str, int] = {}
    for o in result.raw.objects:
        kinds[o["kind"]] = kinds.get(o["kind"], 0) + 1
    assert kinds["Workload"] == 2401 and kinds["Node"] == 300 and kinds["Pod"] == 1200 and kinds["Job"] == 2401
    assert {r.method for r in reqs} == {"GET"}
    # nothing per object, and no per-queue visibility request unless asked (--pending-positions)
    assert not [r.path for r in reqs if r.path.startswith("/apis/visibility")]
    assert "PendingWorkloadsSummary" not in kinds
    assert len(reqs) <= 40, [r.path for r in reqs]


def test_snapshot_pending_positions_asks_once_per_queue_with_pending_work(api_server: ServerFactory,
                                                                          tmp_path: Path) -> None:
    from kueuediag.live import take_snapshot

    big = large(namespaces=40, workloads_per_ns=60, nodes=300, pods_per_node=4)
    with api_server(objects=big, logs={}, secrets=False) as srv:
        result = take_snapshot(tmp_path / "big.tar.gz", opts(srv, tmp_path, pending_positions=True))
        reqs = list(srv.cluster.requests)
    # 40 ClusterQueues and 40 LocalQueues report pending work: one visibility request each (plus discovery)
    visibility = [r.path for r in reqs if r.path.startswith("/apis/visibility")]
    assert len(visibility) == 1 + 40 + 40
    assert len(set(visibility)) == len(visibility)
    summaries = [o for o in result.raw.objects if o["kind"] == "PendingWorkloadsSummary"]
    assert len(summaries) == 80 and all(s["items"] for s in summaries)


def test_workload_owned_by_a_secret_degrades_only_that_owner(api_server: ServerFactory, live_raw: Any,
                                                             tmp_path: Path) -> None:
    """A Workload owner reference of kind Secret: the Secret guard held, but the run aborted."""
    objs = [dict(o) for o in live_raw.objects]
    for i, o in enumerate(objs):
        if o["kind"] == "Workload" and o["metadata"].get("namespace") == "team-a":
            meta = dict(o["metadata"])
            meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Secret", "name": "creds", "uid": "s-1"},
                                       *(meta.get("ownerReferences") or [])]
            objs[i] = dict(o, metadata=meta)
    with api_server(objects=objs) as srv:
        raw = collect_for_why("job/llm-finetune", "team-a", opts(srv, tmp_path))
        requests = list(srv.cluster.requests)
    assert not any("secret" in r.path for r in requests)
    assert "owner Secret team-a/creds: not read: kueuediag never reads Secrets" in raw.manifest["notes"]
    assert ("team-a", "llm-finetune") in keys(raw, "Job") and raw.manifest["errors"] == []
    snap = Snapshot(raw)
    verdict = diagnose(snap, resolve(snap, "job/llm-finetune", "team-a"), discover(), Settings())
    assert verdict.workload.name is not None and not [r for r in verdict.runs if r.outcome is Outcome.ERRORED]
