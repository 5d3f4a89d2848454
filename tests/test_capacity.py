"""kueuediag.analysis.capacity: node room, holes, slots, placement, topology domains, fragmentation figure."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from kueuediag.analysis import capacity as cap
from kueuediag.errors import InputError
from kueuediag.snapshot.kueue import FlavorView, kueue_index
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.snapshot.model import Snapshot
from kueuediag.snapshot.reader import RawSnapshot

from .conftest import FIXTURES

D = Decimal
GPU = "nvidia.com/gpu"


def _node(name: str, gpus: str = "8", *, labels: dict[str, str] | None = None,
          taints: list[dict[str, Any]] | None = None, ready: bool = True, cordoned: bool = False,
          cpu: str = "200", pods: str = "110") -> dict[str, Any]:
    spec: dict[str, Any] = {"taints": taints or []}
    if cordoned:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": {"allocatable": {"cpu": cpu, "memory": "1000Gi", GPU: gpus, "pods": pods},
                   "conditions": [{"type": "Ready", "status": "True" if ready else "Unknown"}]},
    }


def _pod(name: str, node: str | None, gpus: str, *, cpu: str = "1", phase: str = "Running",
         deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"uid-{name}"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, GPU: gpus}}}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": phase}}


def _snap(*objs: dict[str, Any]) -> Snapshot:
    return Snapshot(RawSnapshot(source="test", manifest={"capturedAt": "2026-01-01T00:01:00Z"}, objects=list(objs)))


def _flavor(**kw: Any) -> FlavorView:
    return FlavorView(obj={}, name=kw.get("name", "f"), node_labels=kw.get("labels", {}),
                      node_taints=[], tolerations=kw.get("tolerations", []), topology_name=None)


def test_free_room_counts_terminating_but_not_finished_pods() -> None:
    snap = _snap(
        _node("n1"),
        _pod("running", "n1", "3"),
        _pod("terminating", "n1", "2", deleting=True),
        _pod("done", "n1", "8", phase="Succeeded"),
        _pod("failed", "n1", "8", phase="Failed"),
        _pod("unbound", None, "8", phase="Pending"),
    )
    n1 = cap.node_capacities(snap)["n1"]
    assert n1.requested[GPU] == D(5)
    assert n1.free[GPU] == D(3)
    assert n1.pods == 2
    assert n1.free["pods"] == D(108)


def test_cordoned_and_notready_nodes_give_no_room() -> None:
    snap = _snap(_node("ok", "2"), _node("cordoned", cordoned=True), _node("down", ready=False))
    caps = cap.node_capacities(snap)
    assert caps["cordoned"].unusable_reason == "cordoned (spec.unschedulable)"
    assert caps["down"].unusable_reason == "NotReady"
    assert caps["down"].slots({GPU: D(1)}) == 0
    h = cap.holes(caps.values(), GPU)
    assert h.total_free == D(2)
    assert {n for n, _ in h.nodes_without_room} == {"cordoned", "down"}


def test_holes_histogram_layout_and_largest() -> None:
    snap = _snap(*(_node(f"n{i}") for i in range(4)),
                 _pod("a", "n0", "7"), _pod("b", "n1", "7"), _pod("c", "n2", "4"), _pod("d", "n3", "6"))
    h = cap.holes(cap.node_capacities(snap).values(), GPU)
    assert h.layout() == "1+1+4+2"
    assert h.histogram == (0, 2, 1, 0, 1)
    assert (h.total_free, h.largest) == (D(8), D(4))
    assert h.histogram_text() == "0 free: 0 nodes, 1 free: 2 nodes, 2 free: 1 node, 4 free: 1 node"


def test_slots_take_every_resource_and_several_pods_per_node() -> None:
    assert cap.slots_in({GPU: D(8), "cpu": D(100)}, {GPU: D(2), "cpu": D(30)}) == 3  # cpu binds, not GPUs
    assert cap.slots_in({GPU: D(8), "cpu": D(100), "pods": D(2)}, {GPU: D(1)}) == 2  # pods allocatable caps it
    assert cap.slots_in({"cpu": D(100)}, {GPU: D(1)}) == 0  # resource missing on the node
    assert cap.slots_in({"cpu": D("1.5")}, {"cpu": D("0.5")}) == 3  # exact decimals


def test_placement_single_shape_is_exact_and_multi_shape_is_a_bound() -> None:
    snap = _snap(_node("n1"), _node("n2"), _pod("x", "n1", "4"))
    nodes = list(cap.node_capacities(snap).values())
    one = cap.place(nodes, [cap.Demand("main", {GPU: D(4)}, 3)])
    assert one.fits and one.exact and one.slots == {"main": 3}
    too_many = cap.place(nodes, [cap.Demand("main", {GPU: D(8)}, 2)])
    assert not too_many.fits and too_many.placed == {"main": 1}
    both = cap.place(nodes, [cap.Demand("small", {GPU: D(2)}, 2), cap.Demand("big", {GPU: D(8)}, 1)])
    assert both.fits and not both.exact
    assert both.assignment["big"] == {"n2": 1}  # largest first, small pods fill the 4-GPU hole on n1
    assert both.assignment["small"] == {"n1": 2}


def test_matching_nodes_labels_selector_and_taints() -> None:
    spot = {"key": "spot", "value": "true", "effect": "NoSchedule"}
    gpu_taint = {"key": GPU, "value": "present", "effect": "NoSchedule"}
    snap = _snap(
        _node("a", labels={"pool": "gpu"}, taints=[gpu_taint]),
        _node("b", labels={"pool": "gpu"}, taints=[gpu_taint, spot]),
        _node("c", labels={"pool": "cpu"}),
        _node("d", labels={"pool": "gpu", "zone": "z2"}, cordoned=True,
              taints=[{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]),
    )
    gpu_pod = {"containers": [{"name": "c", "resources": {"limits": {GPU: "1"}}}]}
    m = cap.matching_nodes(snap, _flavor(labels={"pool": "gpu"}), gpu_pod)
    # the GPU taint is tolerated via ExtendedResourceToleration; cordoned d is kept but unusable
    assert [n.name for n in m.nodes] == ["a", "d"]
    assert [n.name for n in m.usable] == ["a"]
    assert m.excluded == {"nodeLabels": 1, 'taint "spot=true:NoSchedule"': 1}
    spot_ok = _flavor(labels={"pool": "gpu"}, tolerations=[{"key": "spot", "operator": "Exists"}])
    tolerant = cap.matching_nodes(snap, spot_ok, gpu_pod)
    assert [n.name for n in tolerant.nodes] == ["a", "b", "d"]
    cpu_pod = {"containers": [{"name": "c"}], "nodeSelector": {"zone": "z2"}}
    m2 = cap.matching_nodes(snap, None, cpu_pod)
    # only d carries zone=z2; its cordon taint is not an exclusion: d is kept and reported unusable
    assert [n.name for n in m2.nodes] == ["d"] and m2.usable == ()
    assert m2.excluded == {"nodeSelector/affinity": 3}


def test_topology_domains_sum_free_per_level() -> None:
    levels = ["block", "subblock", "kubernetes.io/hostname"]
    snap = _snap(
        _node("n0", labels={"block": "b1", "subblock": "s1"}), _node("n1", labels={"block": "b1", "subblock": "s1"}),
        _node("n2", labels={"block": "b1", "subblock": "s2"}), _node("n3", labels={"block": "b1", "subblock": "s2"}),
        _node("n4", labels={"subblock": "s9"}),
        _pod("a", "n0", "7"), _pod("b", "n1", "7"), _pod("c", "n2", "4"), _pod("d", "n3", "6"), _pod("e", "n4", "8"),
    )
    doms = cap.topology_domains(cap.node_capacities(snap).values(), levels, GPU, {GPU: D(4)})
    block, sub, host = doms
    assert block.unlabelled_nodes == 1
    assert [(d.values, d.free, d.slots) for d in block.domains] == [(("b1",), D(8), 1)]
    assert [(d.values[-1], d.free) for d in sub.domains] == [("s2", D(6)), ("s1", D(2))]
    assert host.best is not None and host.best.values[-1] == "n2" and host.best.slots == 1


def test_fragmentation_figure_uses_most_common_requested_shape() -> None:
    def wl(name: str, gpus: str, count: int) -> dict[str, Any]:
        return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                "metadata": {"name": name, "namespace": "ns"},
                "spec": {"podSets": [{"name": "main", "count": count, "template": {"spec": {"containers": [
                    {"name": "c", "resources": {"requests": {GPU: gpus}}}]}}}]}}

    snap = _snap(*(_node(f"n{i}") for i in range(4)),
                 _pod("a", "n0", "7"), _pod("b", "n1", "7"), _pod("c", "n2", "4"), _pod("d", "n3", "6"),
                 wl("w1", "4", 1), wl("w2", "4", 2), wl("w3", "8", 1))
    assert cap.common_shape(snap, GPU) == D(4)
    f = cap.fragmentation(snap)
    assert (f.total_free, f.stranded, f.percent) == (D(8), D(4), "50%")  # 1+1+2 sit in holes < 4


def test_junk_allocatable_is_an_input_error() -> None:
    snap = _snap({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "bad"},
                  "status": {"allocatable": {GPU: "eight"}}})
    with pytest.raises(InputError):
        cap.node_capacities(snap)


def test_fixture_frag_h100_is_the_1_1_4_2_case() -> None:
    snap = load_snapshot(str(FIXTURES / "snapshots" / "frag-h100"))
    flavor = kueue_index(snap).flavors["h100"]
    m = cap.matching_nodes(snap, flavor, {})
    h = cap.holes(m.nodes, GPU)
    assert h.layout() == "1+1+4+2"
    assert [n for n, _ in h.nodes_without_room] == ["gke-ml-prod-a3-h100-pool-5f2c9a1e-wd3n"]
    eight = {GPU: D(8), "cpu": D(96), "memory": D(640) * 1024**3}
    assert cap.total_slots(m.nodes, eight) == 0
    assert cap.matching_nodes(snap, flavor, {}) is m  # memoised per snapshot


def test_topology_assignment_v1beta1_domains_and_v1beta2_slices() -> None:
    levels, doms = cap.topology_assignment({
        "levels": ["kubernetes.io/hostname"],
        "domains": [{"values": ["n1"], "count": 2}, {"values": ["n2"], "count": 1}]})
    assert levels == ("kubernetes.io/hostname",)
    assert [(d.values, d.pods) for d in doms] == [(("n1",), 2), (("n2",), 1)]
    levels, doms = cap.topology_assignment({
        "levels": ["block", "kubernetes.io/hostname"],
        "slices": [
            {"domainCount": 3,
             "valuesPerLevel": [{"universal": "b1"}, {"individual": {"prefix": "gke-pool-", "suffix": "-x",
                                                                     "roots": ["a", "b", "c"]}}],
             "podCounts": {"individual": [4, 2, 2]}},
            {"domainCount": 1, "valuesPerLevel": [{"universal": "b2"}, {"individual": {"roots": ["z"]}}],
             "podCounts": {"universal": 8}},
        ]})
    assert [(d.values, d.pods) for d in doms] == [
        (("b1", "gke-pool-a-x"), 4), (("b1", "gke-pool-b-x"), 2), (("b1", "gke-pool-c-x"), 2), (("b2", "z"), 8)]
    assert cap.topology_assignment(None) == ((), ())


def test_byte_and_cpu_histograms_are_bucketed_not_dense() -> None:
    snap = _snap(_node("big", cpu="400"), _node("small", cpu="3"), _pod("p", "small", "0", cpu="2"))
    nodes = list(cap.node_capacities(snap).values())
    mem = cap.holes(nodes, "memory")
    assert mem.unit == "Gi"
    assert mem.histogram_dict() == {"0Gi": 0, "1000Gi": 2}
    assert mem.histogram_text() == "0Gi free: 0 nodes, 1000Gi free: 2 nodes"
    cpu = cap.holes(nodes, "cpu")
    assert cpu.histogram == ()  # 400 cores: too wide for a dense histogram
    assert cpu.histogram_dict() == {"0": 0, "1": 1, "400": 1}


def test_single_shape_placement_fills_fullest_nodes_first() -> None:
    snap = _snap(_node("n1"), _node("n2"), _node("n3"), _pod("a", "n1", "6"), _pod("b", "n2", "2"))
    p = cap.place(cap.node_capacities(snap).values(), [cap.Demand("main", {GPU: D(2)}, 5)])
    assert p.fits and p.exact
    assert p.assignment["main"] == {"n1": 1, "n2": 3, "n3": 1}


def test_short_in_total_separates_fragmentation_from_lack_of_capacity() -> None:
    snap = _snap(_node("n1", cpu="10"), _node("n2", cpu="10"), _pod("a", "n1", "4", cpu="9"), _pod("b", "n2", "4"))
    nodes = list(cap.node_capacities(snap).values())
    eight = [cap.Demand("main", {GPU: D(8), "cpu": D(2)}, 1)]
    assert cap.short_in_total(nodes, eight) == {}  # 4+4 GPUs and 1+9 cores free: fragmented, not short
    assert not cap.place(nodes, eight).fits
    assert cap.short_in_total(nodes, [cap.Demand("main", {GPU: D(4), "cpu": D(6)}, 2)]) == {"cpu": D(2)}
