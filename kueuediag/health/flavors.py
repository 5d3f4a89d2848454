"""Flavors: free-hole histogram, the fragmentation figure, slots for 1/2/4/8-accelerator pods, TAS domains.

The capacity model is :mod:`kueuediag.analysis.capacity`'s; whether a flavor is *in trouble* is KD201's call:
health only finds a workload whose per-pod shape has no hole in the flavor although the flavor has that many
free units in total (a pending workload that may use the flavor, or an admitted one whose pods are unplaced),
and asks KD201 about it.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from kueuediag.analysis.capacity import (
    DEFAULT_GPU_RESOURCES,
    NodeCapacity,
    common_shape,
    fmt_qty,
    fragmentation,
    holes,
    matching_nodes,
    topology_domains,
    total_slots,
)
from kueuediag.config import Settings
from kueuediag.health.catalog import Selection
from kueuediag.health.model import FlavorRow, Item
from kueuediag.health.owners import ask_owner, target_for
from kueuediag.health.scope import Scope
from kueuediag.models import ObjectRef
from kueuediag.quantity import ZERO
from kueuediag.snapshot.kueue import (
    WorkloadView,
    active_workloads,
    cluster_queue_of,
    kueue_index,
    workload_pods,
)
from kueuediag.snapshot.model import Snapshot

SHAPES = (1, 2, 4, 8)


def gpu_resources(sel: Selection) -> tuple[str, ...]:
    owner = sel.owners.get("KD201")
    text = str(owner.opts["gpu_resources"]) if owner is not None else ",".join(DEFAULT_GPU_RESOURCES)
    return tuple(r.strip() for r in text.split(",") if r.strip())


def _probe_spec(resource: str) -> dict[str, Any]:
    """A pod asking for one unit of `resource`: the extended-resource taint of GPU nodes counts as tolerated."""
    return {"containers": [{"name": "probe", "resources": {"requests": {resource: "1"}}}]}


def _nodes_for(snap: Snapshot, flavor: str, resource: str) -> tuple[NodeCapacity, ...]:
    return matching_nodes(snap, kueue_index(snap).flavors.get(flavor), _probe_spec(resource)).nodes


def flavor_resource(snap: Snapshot, flavor: str, gpus: tuple[str, ...]) -> str:
    """The accelerator the flavor's nodes offer (first of `gpus`), else cpu."""
    for r in gpus:
        if any(n.allocatable.get(r, ZERO) > ZERO for n in _nodes_for(snap, flavor, r)):
            return r
    return "cpu"


def _nodes(snap: Snapshot, flavor: str, gpus: tuple[str, ...]) -> tuple[NodeCapacity, ...]:
    return _nodes_for(snap, flavor, flavor_resource(snap, flavor, gpus))


def flavor_rows(snap: Snapshot, scope: Scope, sel: Selection) -> list[FlavorRow]:
    idx = kueue_index(snap)
    gpus = gpu_resources(sel)
    rows = []
    for name in sorted(scope.flavors):
        nodes = _nodes(snap, name, gpus)
        resource = flavor_resource(snap, name, gpus)
        usable = [n for n in nodes if n.usable]
        h = holes(nodes, resource)
        shape = common_shape(snap, resource)
        frag = fragmentation(snap, resource, node_set=usable, shape=shape) if usable and resource != "cpu" else None
        ratio = float(frag.ratio) if frag is not None and frag.total_free > ZERO and shape is not None else None
        slots = {str(k): total_slots(usable, {resource: Decimal(k)}) for k in SHAPES} if resource != "cpu" else {}
        fv = idx.flavors.get(name)
        topo = fv.topology_name if fv is not None else None
        domains: tuple[dict[str, object], ...] = ()
        if topo and topo in idx.topologies:
            want = {resource: shape or Decimal(1)}
            for level in topology_domains(usable, idx.topologies[topo], resource, want):
                best = level.best
                domains += ({"level": level.level, "domains": len(level.domains),
                             "bestFree": fmt_qty(best.free) if best else "0",
                             "bestSlots": best.slots if best else 0},)
        rows.append(FlavorRow(
            name=name, resource=resource, nodes=len(nodes), usable_nodes=len(usable),
            total_free=fmt_qty(h.total_free), largest_hole=fmt_qty(h.largest), histogram=h.histogram_dict(),
            fragmentation=round(ratio, 4) if ratio is not None else None,
            common_shape=fmt_qty(shape) if shape is not None else None, slots=slots, topology=topo,
            domains=domains,
        ))
    return rows


def _demand(snap: Snapshot, w: WorkloadView, flavor: str, resource: str) -> Decimal:
    """Per-pod request of `resource` of a workload that wants `flavor` and is not placed (0 when none)."""
    idx = kueue_index(snap)
    if w.state == "pending" and w.active:
        cq = idx.cluster_queues.get(cluster_queue_of(idx, w) or "")
        group = cq.group_for(resource) if cq is not None else None
        if group is None or flavor not in [f for f, _ in group.flavors]:
            return ZERO
        return max((ps.requests.get(resource, ZERO) for ps in w.pod_sets), default=ZERO)
    if w.state == "admitted" and any(a.flavors.get(resource) == flavor for a in w.assignments):
        unplaced = [p for p in workload_pods(snap, w) if not p.node and not p.terminal and not p.terminating]
        return max((p.requests.get(resource, ZERO) for p in unplaced), default=ZERO)
    return ZERO


def fragmentation_items(snap: Snapshot, scope: Scope, sel: Selection, settings: Settings) -> list[Item]:
    gpus = gpu_resources(sel)
    candidates: dict[str, list[WorkloadView]] = {}
    resources = {name: flavor_resource(snap, name, gpus) for name in scope.flavors}
    no_hole: dict[tuple[str, Decimal], bool] = {}

    def lacks_hole(name: str, resource: str, need: Decimal) -> bool:
        key = (name, need)
        if key not in no_hole:
            usable = [n for n in _nodes(snap, name, gpus) if n.usable]
            free = sum((n.free_of(resource) for n in usable), ZERO)
            no_hole[key] = free >= need and total_slots(usable, {resource: need}) == 0
        return no_hole[key]

    for w in active_workloads(snap):
        if w.state not in ("pending", "admitted") or not scope.has_namespace(w.namespace):
            continue
        for name, resource in resources.items():
            if resource == "cpu":
                continue
            need = _demand(snap, w, name, resource)
            if need <= ZERO:
                continue
            if lacks_hole(name, resource, need):
                candidates.setdefault(name, []).append(w)
    items = []
    for name in sorted(scope.flavors):
        ref = ObjectRef(kind="ResourceFlavor", name=name)
        found = None
        for w in candidates.get(name, []):
            res = ask_owner(sel, settings, "KD201", snap, target_for(snap, w), ("fragmentation", "topology-no-fit"))
            if res.findings:
                found = res.findings[0]
                break
        if found is not None:
            items.append(Item("fragmentation", ref, found))
        elif resources[name] == "cpu":
            items.append(Item("fragmentation", ref, None, "no accelerator on this flavor's nodes"))
        else:
            items.append(Item("fragmentation", ref, None,
                              "every unplaced pod shape has a hole, or the flavor lacks the free units in total"))
    return items
