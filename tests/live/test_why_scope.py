"""What live `why` reads (issue 11): quota from Kueue's record, Workloads only where they name holders.

The verdicts are compared with `why --from` the full fixture (every Workload of the cluster): trimming what is
read must not change what `why` concludes.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from kueuediag.config import Settings
from kueuediag.engine import diagnose
from kueuediag.live import LiveOptions, collect_for_why
from kueuediag.models import Verdict
from kueuediag.registry import discover
from kueuediag.snapshot.model import Snapshot
from kueuediag.snapshot.reader import RawSnapshot
from kueuediag.target import resolve
from tests.live.conftest import ServerFactory
from tests.live.verdicts import same_conclusion, same_observations

TARGET, NS = "job/llm-finetune", "team-a"
WORKLOADS = "/apis/kueue.x-k8s.io/v1beta2/workloads"


def opts(srv: Any, tmp_path: Path, **kw: Any) -> LiveOptions:
    return LiveOptions(kubeconfig=str(srv.kubeconfig(tmp_path)), **kw)


def verdict_of(snap: Snapshot) -> Verdict:
    return diagnose(snap, resolve(snap, TARGET, NS), discover(), Settings())


def workload_lists(requests: list[Any]) -> list[str]:
    return sorted(r.path for r in requests if r.path.endswith("/workloads"))


def test_live_why_reads_the_workloads_of_the_target_queue_only(api_server: ServerFactory, live_raw: RawSnapshot,
                                                                 tmp_path: Path) -> None:
    disk = Snapshot(live_raw)
    with api_server() as srv:
        raw = collect_for_why(TARGET, NS, opts(srv, tmp_path))
        requests = list(srv.cluster.requests)
    # team-a's own Workloads name its holders; team-b's usage comes from ClusterQueue status
    assert workload_lists(requests) == ["/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads"]
    assert {(o["metadata"]["namespace"]) for o in raw.objects if o["kind"] == "Workload"} == {"team-a"}
    assert raw.manifest["namespaces"] == ["team-a"]
    # pods: the target namespace's, and one cluster-wide LIST of the running pods bound to a node
    pod_lists = [r for r in requests if r.path == "/api/v1/pods"]
    assert [r.query.get("fieldSelector") for r in pod_lists] == [
        "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"]
    # live why asks the visibility API about the target's two queues only
    assert sorted(r.path for r in requests if r.path.endswith("/pendingworkloads")) == [
        "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/team-a/pendingworkloads",
        "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/team-a/localqueues/team-a-queue/pendingworkloads"]
    live = Snapshot(raw, now=disk.now)
    got, expected = verdict_of(live), verdict_of(disk)
    same_conclusion(got, expected)
    same_observations(got, expected)
    # the quota numbers are Kueue's record now, the same numbers the full snapshot recomputes
    quota_ev = next(e for r in got.findings for e in r.finding.evidence
                    if e.ref is not None and e.ref.kind == "ClusterQueue" and e.field
                    and e.field.startswith("spec.resourceGroups"))
    assert "in use 4 (status.flavorsReservation)" in quota_ev.observed


def _without_own_holders(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """team-a's running workload gone and its GPU quota halved: team-a holds nothing of a100 and has 4 GPUs of the
    8 the target needs; team-b's workload holds all 8 of team-b's, so nothing is borrowable."""
    out = []
    for o in copy.deepcopy(objects):
        m = o["metadata"]
        if m.get("namespace") == "team-a" and "eval-sweep" in m["name"]:
            continue
        if o["kind"] in ("Pod", "Event") and "eval-sweep" in str(o):
            continue
        if o["kind"] == "ClusterQueue" and m["name"] == "team-a":
            for rg in o["spec"]["resourceGroups"]:
                for f in rg["flavors"]:
                    for r in f["resources"]:
                        if r["name"] == "nvidia.com/gpu":
                            r["nominalQuota"] = "4"
            for key in ("flavorsReservation", "flavorsUsage"):
                for f in o["status"][key]:
                    for r in f["resources"]:
                        r["total"] = "0"
            o["status"]["reservingWorkloads"] = o["status"]["admittedWorkloads"] = 0
        out.append(o)
    return out


def test_cohort_holders_are_read_when_the_target_queue_holds_none(api_server: ServerFactory, live_raw: RawSnapshot,
                                                                   tmp_path: Path) -> None:
    objects = _without_own_holders(live_raw.objects)
    disk = Snapshot(RawSnapshot(source="fixture", manifest=dict(live_raw.manifest), objects=objects,
                                metrics=dict(live_raw.metrics), logs=dict(live_raw.logs)))
    with api_server(objects=objects) as srv:
        raw = collect_for_why(TARGET, NS, opts(srv, tmp_path))
        requests = list(srv.cluster.requests)
    # the message names a100, which team-a holds none of: team-b (holding a100) is read, batch-misc is not
    assert workload_lists(requests) == ["/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads",
                                        "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-b/workloads"]
    assert raw.manifest["namespaces"] == ["team-a", "team-b"]
    got, expected = verdict_of(Snapshot(raw, now=disk.now)), verdict_of(disk)
    same_conclusion(got, expected)
    same_observations(got, expected)
    assert any("pretrain-7b" in (e.ref.name if e.ref else "") for r in got.findings for e in r.finding.evidence)


def test_without_kueues_usage_record_every_workload_of_the_tree_is_read(api_server: ServerFactory,
                                                                       live_raw: RawSnapshot,
                                                                       tmp_path: Path) -> None:
    objects = copy.deepcopy(live_raw.objects)
    for o in objects:
        if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == "team-b":
            del o["status"]["flavorsReservation"]
    _reads_the_whole_tree(api_server, objects, tmp_path)


def test_a_queue_fed_by_many_namespaces_is_read_in_one_cluster_wide_list(api_server: ServerFactory,
                                                                          live_raw: RawSnapshot,
                                                                          tmp_path: Path) -> None:
    from kueuediag.live.collect import MAX_NAMESPACE_LISTS
    from tests.live.fixture_gen import local_queue, namespace

    extra = [f"team-a-{i:02d}" for i in range(MAX_NAMESPACE_LISTS + 1)]
    objects = [*copy.deepcopy(live_raw.objects), *(namespace(ns) for ns in extra),
               *(local_queue(ns, "team-a-queue", "team-a", 0, 0) for ns in extra)]
    with api_server(objects=objects) as srv:
        raw = collect_for_why(TARGET, NS, opts(srv, tmp_path))
        requests = list(srv.cluster.requests)
    # one paginated LIST costs fewer requests than 12 namespace LISTs; then every Workload of the tree is kept
    assert workload_lists(requests) == ["/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads", WORKLOADS]
    assert {o["metadata"]["namespace"] for o in raw.objects if o["kind"] == "Workload"} == {"team-a", "team-b"}
    assert "namespaces" not in raw.manifest


def test_a_target_waiting_for_preemption_reads_every_workload_of_the_tree(api_server: ServerFactory,
                                                                           live_raw: RawSnapshot,
                                                                           tmp_path: Path) -> None:
    """Its victims, which `why` names, may be in any ClusterQueue of the cohort tree."""
    objects = copy.deepcopy(live_raw.objects)
    for o in objects:
        if o["kind"] == "Workload" and o["metadata"]["name"].startswith("job-llm-finetune"):
            qr = next(c for c in o["status"]["conditions"] if c["type"] == "QuotaReserved")
            qr["message"] += ". Pending the preemption of 1 workload(s)"
    _reads_the_whole_tree(api_server, objects, tmp_path)


def test_a_namespace_limited_snapshot_counts_other_violations_only_where_it_read() -> None:
    """KD101 counts the other pending workloads in the same situation: in a collection limited to some namespaces
    (live `why`, `snapshot -n`) it says where it counted, never "in the cluster"."""
    from kueuediag_checks.guarantee_violation import GuaranteeViolation

    from kueuediag.snapshot.reader import read_snapshot
    from kueuediag.testing import findings_of
    from tests.live.conftest import LIVE_FIXTURE

    raw = read_snapshot(LIVE_FIXTURE.parent / "guarantee-violation")
    for manifest, where in ((raw.manifest, "in the cluster"),
                            (dict(raw.manifest, namespaces=["research", "team-a"]), "in the 2 namespace(s) read")):
        snap = Snapshot(RawSnapshot(source=raw.source, manifest=manifest, objects=raw.objects, metrics=raw.metrics,
                                    logs=raw.logs))
        (finding,) = findings_of(GuaranteeViolation().run(snap, resolve(snap, "job/train-shard-5", "research")))
        assert f"3 other pending workload(s) {where} are in the same situation." in finding.message


def _reads_the_whole_tree(api_server: ServerFactory, objects: list[Any], tmp_path: Path) -> None:
    """One cluster-wide Workload LIST, filtered to the cohort tree, and quota recomputed from the Workloads."""
    with api_server(objects=objects) as srv:
        raw = collect_for_why(TARGET, NS, opts(srv, tmp_path))
        requests = list(srv.cluster.requests)
    assert WORKLOADS in workload_lists(requests)
    assert {o["metadata"]["namespace"] for o in raw.objects if o["kind"] == "Workload"} == {"team-a", "team-b"}
    assert "namespaces" not in raw.manifest
