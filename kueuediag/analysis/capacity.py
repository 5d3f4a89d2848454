"""Node capacity model: where free room sits, in which hole sizes, and whether a pod shape can be placed.

Quota math says whether Kueue *may* admit a workload; this module says whether the nodes behind a flavor can
physically run it. Free room per node is ``allocatable`` minus the requests of every non-terminal pod bound to
the node (a terminating pod keeps its room until it is gone). Cordoned and NotReady nodes give no room.

The headline numbers follow the KubeCon recipe for ruling out fragmentation: a histogram of nodes by free GPUs
("how many 8-GPU holes are there?"), total free vs the largest hole (1+1+4+2 free on four 8-GPU nodes is 8 free
but no 8-GPU hole), and the number of *slots* for a per-pod shape, counting every resource of the shape at once
and several pods per node.

Everything is a pure function of the Snapshot; per-node figures are memoised on it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import field
from decimal import ROUND_FLOOR, Decimal
from typing import Any, TypeVar

from kueuediag.analysis.well_formed import node_room, require_well_formed
from kueuediag.quantity import ZERO
from kueuediag.records import dataclass
from kueuediag.snapshot.k8s import NodeView, pod_fits_node_labels, pod_spec_requests, taint_str, untolerated_taints
from kueuediag.snapshot.kueue import (
    FlavorView,
    WorkloadState,
    active_workloads,
    nodes,
    pods_by_node,
)
from kueuediag.snapshot.model import Snapshot

DEFAULT_GPU_RESOURCES: tuple[str, ...] = ("nvidia.com/gpu",)
"""Resources treated as accelerators (histogram unit) unless the caller passes its own list."""

PODS = "pods"
"""The `pods` allocatable: each bound pod takes one."""

Shape = Mapping[str, Decimal]
"""Per-pod requests (resource → quantity)."""

T = TypeVar("T")


@dataclass(frozen=True)
class NodeCapacity:
    """One node's room: allocatable, what bound pods request, and what is left."""

    name: str
    labels: dict[str, str]
    taints: tuple[dict[str, Any], ...]
    allocatable: dict[str, Decimal]
    requested: dict[str, Decimal]
    free: dict[str, Decimal]
    """allocatable − requested, never negative; all zero when the node is not usable"""
    pods: int
    """bound, non-terminal pods"""
    usable: bool
    unusable_reason: str | None = None
    """'cordoned (spec.unschedulable)' | 'NotReady'"""

    def free_of(self, resource: str) -> Decimal:
        return self.free.get(resource, ZERO)

    def slots(self, shape: Shape) -> int:
        """How many pods of `shape` fit in this node's free room (every resource at once)."""
        return slots_in(self.free, shape) if self.usable else 0


def slots_in(free: Mapping[str, Decimal], shape: Shape) -> int:
    """Pods of `shape` that fit in `free`: min over requested resources of floor(free / request).

    A shape that requests nothing positive fits without limit; callers cap it with the `pods` allocatable,
    which every real node reports.
    """
    best: int | None = None
    for resource, qty in shape.items():
        if qty <= ZERO:
            continue
        have = free.get(resource, ZERO)
        n = int((have / qty).to_integral_value(rounding=ROUND_FLOOR)) if have > ZERO else 0
        best = n if best is None else min(best, n)
        if best == 0:
            return 0
    if PODS in free:
        cap = int(free[PODS])
        best = cap if best is None else min(best, cap)
    return best if best is not None else 0


def _sub(a: Mapping[str, Decimal], b: Mapping[str, Decimal]) -> dict[str, Decimal]:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, ZERO) - v
    return out


def node_capacities(snap: Snapshot) -> dict[str, NodeCapacity]:
    """Every node's capacity, by name (memoised)."""
    return snap.memo(("capacity", "nodes"), lambda: {n.name: _node_capacity(snap, n) for n in nodes(snap)})


def _node_capacity(snap: Snapshot, node: NodeView) -> NodeCapacity:
    requested: dict[str, Decimal] = {}
    count = 0
    for pod in pods_by_node(snap).get(node.name, ()):
        if not pod.holds_node_resources:
            continue
        count += 1
        for r, q in pod.requests.items():
            requested[r] = requested.get(r, ZERO) + q
    requested[PODS] = Decimal(count)
    reason = None
    if node.unschedulable:
        reason = "cordoned (spec.unschedulable)"
    elif not node.ready:
        reason = "NotReady"
    free: dict[str, Decimal] = {}
    for r, alloc in node.allocatable.items():
        left = alloc - requested.get(r, ZERO)
        free[r] = left if (left > ZERO and reason is None) else ZERO
    return NodeCapacity(
        name=node.name, labels=dict(node.labels), taints=tuple(node.taints), allocatable=dict(node.allocatable),
        requested=requested, free=free, pods=count, usable=reason is None, unusable_reason=reason,
    )


# --- which nodes a flavor / pod may use -----------------------------------------------------------------------


@dataclass(frozen=True)
class NodeMatch:
    """Nodes considered for one (flavor, pod constraints) pair, and why the others were left out."""

    nodes: tuple[NodeCapacity, ...]
    """label- and taint-compatible nodes, usable or not"""
    excluded: dict[str, int]
    """reason → node count: 'nodeLabels', 'nodeSelector/affinity', 'taint "<key>=<value>:<Effect>"'"""

    _cache: dict[tuple[Any, ...], Any] = field(default_factory=dict, compare=False, repr=False)
    """answers about these nodes (holes, placements): a NodeMatch is memoised on the snapshot per (flavor,
    constraints), so every workload of one shape asks them once"""

    def _memo(self, key: tuple[Any, ...], compute: Callable[[], T]) -> T:
        if key not in self._cache:
            self._cache[key] = compute()
        found: T = self._cache[key]
        return found

    def holes(self, resource: str) -> Holes:
        """:func:`holes` of these nodes (memoised)."""
        return self._memo(("holes", resource), lambda: holes(self.nodes, resource))

    def place(self, demands: Sequence[Demand], gpu_resources: Sequence[str] = DEFAULT_GPU_RESOURCES) -> Placement:
        """:func:`place` onto these nodes (memoised per demands)."""
        return self._memo(("place", _demands_key(demands), tuple(gpu_resources)),
                          lambda: place(self.nodes, demands, gpu_resources))

    def short_in_total(self, demands: Sequence[Demand]) -> dict[str, Decimal]:
        """:func:`short_in_total` on these nodes (memoised per demands)."""
        return self._memo(("short", _demands_key(demands)), lambda: short_in_total(self.nodes, demands))

    def topology_domains(self, levels: Sequence[str], resource: str, shape: Shape) -> list[LevelDomains]:
        """:func:`topology_domains` of these nodes (memoised)."""
        return self._memo(("topology", tuple(levels), resource, tuple(sorted(shape.items()))),
                          lambda: topology_domains(self.nodes, levels, resource, shape))

    @property
    def usable(self) -> tuple[NodeCapacity, ...]:
        return tuple(n for n in self.nodes if n.usable)

    @property
    def unusable(self) -> tuple[NodeCapacity, ...]:
        return tuple(n for n in self.nodes if not n.usable)


def matching_nodes(snap: Snapshot, flavor: FlavorView | None, pod_spec: Mapping[str, Any] | None = None) -> NodeMatch:
    """Nodes a pod of `pod_spec` admitted in `flavor` may land on (memoised per flavor + constraints).

    A node must carry every `flavor.spec.nodeLabels` label, satisfy the pod's nodeSelector and required node
    affinity, and have no NoSchedule/NoExecute taint left untolerated by the pod's plus the flavor's
    tolerations (the tolerations Kueue injects at admission). A taint whose key is an extended resource the pod
    requests (`nvidia.com/gpu=present:NoSchedule` on GPU nodes) counts as tolerated: the
    ExtendedResourceToleration admission plugin (on by default on GKE) adds that toleration to such pods.
    MalformedObject (could not check) when a malformed Node carries the flavor's labels or a malformed pod is
    bound to one of these nodes: their free capacity is unknown.
    """
    spec = dict(pod_spec or {})
    flavor_key = _keyed_once(snap, flavor, lambda f: json.dumps([f.name, f.node_labels, f.tolerations],
                                                                 sort_keys=True, default=str)) if flavor else None
    key = ("capacity", "match", constraint_key(snap, pod_spec or {}), flavor_key)
    match: NodeMatch = snap.memo(key, lambda: _match(snap, flavor, spec))

    def well_formed() -> bool:  # raises (and is not memoised) when malformed
        where = f"flavor {flavor.name}" if flavor is not None else "the pod's constraints"
        room = node_room({c.name for c in match.nodes}, flavor.node_labels if flavor is not None else {})
        require_well_formed(snap, room, f"the free capacity of the nodes of {where}")
        return True

    snap.memo((*key, "well-formed"), well_formed)
    return match


def constraint_key(snap: Snapshot, pod_spec: Mapping[str, Any]) -> str:
    """The part of a pod spec that decides which nodes it may use (nodeSelector, affinity, tolerations, the
    resources it requests), as text: worked out once per pod spec object, since a workload's pod set is matched
    against each flavor its ClusterQueue offers (four in the benchmark) and serialising its constraints was a
    third of each match's cost."""
    def text(spec: Mapping[str, Any]) -> str:
        constraint: dict[str, Any] = {k: spec.get(k) for k in ("nodeSelector", "affinity", "tolerations")}
        constraint["requests"] = sorted(pod_spec_requests(dict(spec), "pod template"))
        return json.dumps(constraint, sort_keys=True, default=str)

    return _keyed_once(snap, pod_spec, text)


K = TypeVar("K")


def _keyed_once(snap: Snapshot, obj: K, text: Callable[[K], str]) -> str:
    """`text(obj)`, memoised on the snapshot per object identity. The memo keeps the object it was computed
    from, so an entry is used only for that very object (its id cannot be reused while the entry holds it)."""
    held, found = snap.memo(("capacity", "keyed-once", id(obj)), lambda: (obj, text(obj)))
    return found if held is obj else text(obj)


def _match(snap: Snapshot, flavor: FlavorView | None, spec: dict[str, Any]) -> NodeMatch:
    labels = flavor.node_labels if flavor else {}
    tolerations = list(spec.get("tolerations") or []) + (list(flavor.tolerations) if flavor else [])
    for resource in pod_spec_requests(spec, "pod template"):
        if "/" in resource and not resource.startswith(("kubernetes.io/", "hugepages-")):
            tolerations.append({"key": resource, "operator": "Exists", "effect": "NoSchedule"})
    kept: list[NodeCapacity] = []
    excluded: Counter[str] = Counter()
    for cap in node_capacities(snap).values():
        if any(cap.labels.get(k) != v for k, v in labels.items()):
            excluded["nodeLabels"] += 1
            continue
        if not pod_fits_node_labels(spec, cap.labels):
            excluded["nodeSelector/affinity"] += 1
            continue
        bad = [t for t in untolerated_taints(tolerations, list(cap.taints)) if not _lifecycle_taint(t)]
        if bad:
            excluded[f'taint "{taint_str(bad[0])}"'] += 1
            continue
        kept.append(cap)
    kept.sort(key=lambda c: c.name)
    return NodeMatch(nodes=tuple(kept), excluded=dict(excluded))


_LIFECYCLE_TAINTS = ("node.kubernetes.io/unschedulable", "node.kubernetes.io/not-ready",
                     "node.kubernetes.io/unreachable")


def _lifecycle_taint(taint: Mapping[str, Any]) -> bool:
    """Taints the node lifecycle controller adds for cordoned/NotReady nodes: reported as unusable instead."""
    return taint.get("key") in _LIFECYCLE_TAINTS


# --- holes and histograms ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Holes:
    """Free room of one resource across a set of nodes."""

    resource: str
    per_node: tuple[tuple[str, Decimal], ...]
    """(node, free) for usable nodes, largest first"""
    buckets: tuple[tuple[int, int], ...]
    """(free, nodes) for every free amount present (floored, in `unit`), ascending; always includes 0"""
    total_free: Decimal
    largest: Decimal
    nodes_without_room: tuple[tuple[str, str], ...] = ()
    """(node, reason) for cordoned / NotReady nodes that were left out"""
    unit: str = ""
    """'' (whole units: GPUs, cores) or 'Gi' for byte resources"""

    @property
    def histogram(self) -> tuple[int, ...]:
        """Dense histogram: histogram[k] = usable nodes with exactly k free, k = 0..max (empty above 256)."""
        top = self.buckets[-1][0] if self.buckets else 0
        if top > _DENSE_LIMIT:
            return ()
        dense = [0] * (top + 1)
        for k, n in self.buckets:
            dense[k] = n
        return tuple(dense)

    def histogram_dict(self) -> dict[str, int]:
        """Dense ('0'..max) for small ranges like GPUs; only the present buckets otherwise."""
        dense = self.histogram
        if dense:
            return {f"{k}{self.unit}": n for k, n in enumerate(dense)}
        return {f"{k}{self.unit}": n for k, n in self.buckets}

    def histogram_text(self) -> str:
        """'0 free: 0 nodes, 1 free: 2 nodes, 2 free: 1 node, 4 free: 1 node' (empty buckets skipped but 0)."""
        return ", ".join(f"{k}{self.unit} free: {n} node{'s' if n != 1 else ''}" for k, n in self.buckets)

    def layout(self) -> str:
        """'1+1+4+2' (free per usable node, node-name order)."""
        by_name = sorted(self.per_node)
        return "+".join(_fmt(q) for _, q in by_name) if by_name else "0"


_DENSE_LIMIT = 256
_BYTE_RESOURCES = ("memory", "ephemeral-storage")
_GI = Decimal(1024) ** 3


def _fmt(q: Decimal) -> str:
    return format(q.normalize(), "f") if q == q.to_integral_value() else str(q)


def holes(node_set: Iterable[NodeCapacity], resource: str) -> Holes:
    """Free `resource` per usable node, the bucketed histogram, total free and the largest hole.

    Byte resources (memory, ephemeral-storage, hugepages) are bucketed in Gi; everything else in whole units.
    """
    usable: list[tuple[str, Decimal]] = []
    without: list[tuple[str, str]] = []
    for n in node_set:
        if not n.usable:
            without.append((n.name, n.unusable_reason or "unusable"))
            continue
        if resource not in n.allocatable:
            continue
        usable.append((n.name, n.free_of(resource)))
    usable.sort(key=lambda x: (-x[1], x[0]))
    in_bytes = resource in _BYTE_RESOURCES or resource.startswith("hugepages-")
    scale = _GI if in_bytes else Decimal(1)
    counts: Counter[int] = Counter({0: 0})
    for _, q in usable:
        counts[int((q / scale).to_integral_value(rounding=ROUND_FLOOR))] += 1
    total = sum((q for _, q in usable), ZERO)
    return Holes(resource=resource, per_node=tuple(usable), buckets=tuple(sorted(counts.items())), total_free=total,
                 largest=usable[0][1] if usable else ZERO, nodes_without_room=tuple(without),
                 unit="Gi" if in_bytes else "")


def short_in_total(node_set: Iterable[NodeCapacity], demands: Sequence[Demand]) -> dict[str, Decimal]:
    """Resources whose total free room on usable nodes is below the demands' total: resource → shortfall.

    Empty means the room exists in aggregate, so a failed placement is fragmentation, not a lack of capacity.
    """
    usable = [n for n in node_set if n.usable]
    need: dict[str, Decimal] = {}
    for d in demands:
        for r, q in d.shape.items():
            if q > ZERO:
                need[r] = need.get(r, ZERO) + q * d.count
    out: dict[str, Decimal] = {}
    for r, q in need.items():
        have = sum((n.free_of(r) for n in usable), ZERO)
        if have < q:
            out[r] = q - have
    return out


def total_slots(node_set: Iterable[NodeCapacity], shape: Shape) -> int:
    return sum(n.slots(shape) for n in node_set)


# --- placement -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Demand:
    """`count` pods of one per-pod shape (one pod set)."""

    name: str
    shape: dict[str, Decimal]
    count: int


@dataclass(frozen=True)
class Placement:
    """Result of a greedy (best-fit decreasing) placement of one or more pod sets onto free node room.

    `fits` True is a real placement (ignoring inter-pod affinity and topology spread). `fits` False is exact
    for a single pod shape; with several shapes the greedy order is a heuristic, so False is a bound
    (`exact` says which).
    """

    fits: bool
    exact: bool
    placed: dict[str, int]
    """pod set → pods placed"""
    needed: dict[str, int]
    slots: dict[str, int]
    """pod set → slots for its shape on the free room alone (not sharing with other pod sets)"""
    assignment: dict[str, dict[str, int]] = field(default_factory=dict)
    """pod set → node → pods"""


def _demands_key(demands: Sequence[Demand]) -> tuple[tuple[object, ...], ...]:
    return tuple((d.name, tuple(sorted(d.shape.items())), d.count) for d in demands)


def _dominance(shape: Mapping[str, Decimal], gpu_resources: Sequence[str]) -> tuple[Decimal, ...]:
    gpus = sum((shape.get(r, ZERO) for r in gpu_resources), ZERO)
    return (gpus, shape.get("cpu", ZERO), shape.get("memory", ZERO))


def place(node_set: Iterable[NodeCapacity], demands: Sequence[Demand],
          gpu_resources: Sequence[str] = DEFAULT_GPU_RESOURCES) -> Placement:
    """Best-fit decreasing: largest pods first, each onto the fullest node where it still fits."""
    usable = [n for n in node_set if n.usable]
    slots = {d.name: total_slots(usable, d.shape) for d in demands}
    live = [d for d in demands if d.count > 0]
    if len(live) <= 1:
        # one pod shape: per-node slots are exact, fill the fullest nodes first without simulating pod by pod
        placed = {d.name: 0 for d in demands}
        assignment: dict[str, dict[str, int]] = {d.name: {} for d in demands}
        for d in live:
            fullest = sorted(usable, key=lambda n: (_dominance(n.free, gpu_resources), n.name))
            for n in fullest:
                room = min(n.slots(d.shape), d.count - placed[d.name])
                if room > 0:
                    assignment[d.name][n.name] = room
                    placed[d.name] += room
                if placed[d.name] >= d.count:
                    break
        return Placement(fits=all(placed[d.name] >= d.count for d in demands), exact=True, placed=placed,
                         needed={d.name: d.count for d in demands}, slots=slots, assignment=assignment)
    free = {n.name: dict(n.free) for n in usable}
    # pods in decreasing size; nodes ordered by least free of the pod's main resource (best-fit-ish, packs)
    order = sorted(demands, key=lambda d: _dominance(d.shape, gpu_resources), reverse=True)
    placed = {d.name: 0 for d in demands}
    assignment = {d.name: {} for d in demands}
    for d in order:
        take = dict(d.shape)
        take[PODS] = take.get(PODS, ZERO) + 1
        for _ in range(d.count):
            candidates = sorted(free, key=lambda name: (_dominance(free[name], gpu_resources), name))
            for name in candidates:
                if slots_in(free[name], d.shape) >= 1:
                    free[name] = _sub(free[name], take)
                    placed[d.name] += 1
                    assignment[d.name][name] = assignment[d.name].get(name, 0) + 1
                    break
            else:
                break
    fits = all(placed[d.name] >= d.count for d in demands)
    return Placement(fits=fits, exact=False, placed=placed, needed={d.name: d.count for d in demands},
                     slots=slots, assignment=assignment)


# --- topology domains ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Domain:
    values: tuple[str, ...]
    """label values from the top level down to this level"""
    nodes: int
    free: Decimal
    slots: int


@dataclass(frozen=True)
class LevelDomains:
    level: str
    domains: tuple[Domain, ...]
    """largest slots first"""
    unlabelled_nodes: int = 0

    @property
    def best(self) -> Domain | None:
        return self.domains[0] if self.domains else None


def topology_domains(node_set: Iterable[NodeCapacity], levels: Sequence[str], resource: str,
                     shape: Shape) -> list[LevelDomains]:
    """Per topology level (top first), the domains formed by node label values, with free room and slots.

    A node lacking a level's label is not part of any domain at that level (Kueue's TAS ignores it too).
    """
    usable = [n for n in node_set if n.usable]
    out: list[LevelDomains] = []
    for i, level in enumerate(levels):
        keys = levels[: i + 1]
        groups: dict[tuple[str, ...], list[NodeCapacity]] = {}
        missing = 0
        for n in usable:
            vals = tuple(n.labels.get(k) or "" for k in keys)
            if "" in vals:
                missing += 1
                continue
            groups.setdefault(vals, []).append(n)
        domains = [
            Domain(values=vals, nodes=len(members), free=sum((m.free_of(resource) for m in members), ZERO),
                   slots=total_slots(members, shape))
            for vals, members in groups.items()
        ]
        domains.sort(key=lambda d: (-d.slots, -d.free, d.values))
        out.append(LevelDomains(level=level, domains=tuple(domains), unlabelled_nodes=missing))
    return out


# --- cluster fragmentation figure ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Fragmentation:
    """Share of free accelerators sitting in holes smaller than the most common requested per-pod shape."""

    resource: str
    shape: Decimal | None
    """most common per-pod request of `resource` among pending/admitted workloads (None: nobody asks)"""
    total_free: Decimal
    stranded: Decimal
    """free units on nodes whose hole is > 0 but < shape"""
    nodes: int

    @property
    def ratio(self) -> Decimal:
        if self.total_free <= ZERO:
            return ZERO
        return self.stranded / self.total_free

    @property
    def percent(self) -> str:
        return f"{(self.ratio * 100).quantize(Decimal(1))}%"


def common_shape(snap: Snapshot, resource: str) -> Decimal | None:
    """The most common per-pod request of `resource` over non-finished workloads' pod sets (ties: larger)."""

    def build() -> Decimal | None:
        counts: Counter[Decimal] = Counter()
        for w in active_workloads(snap):
            if w.state == WorkloadState.FINISHED or not w.active:
                continue
            for ps in w.pod_sets:
                q = ps.requests.get(resource, ZERO)
                if q > ZERO and ps.count > 0:
                    counts[q] += 1
        if not counts:
            return None
        return max(counts.items(), key=lambda kv: (kv[1], kv[0]))[0]

    return snap.memo(("capacity", "common-shape", resource), build)


def fragmentation(snap: Snapshot, resource: str = DEFAULT_GPU_RESOURCES[0],
                  node_set: Iterable[NodeCapacity] | None = None, shape: Decimal | None = None) -> Fragmentation:
    """The cluster (or `node_set`) fragmentation figure for `resource` (memoised for the whole cluster)."""

    def build() -> Fragmentation:
        chosen = list(node_set) if node_set is not None else list(node_capacities(snap).values())
        s = shape if shape is not None else common_shape(snap, resource)
        h = holes(chosen, resource)
        stranded = sum((q for _, q in h.per_node if ZERO < q and s is not None and q < s), ZERO)
        return Fragmentation(resource=resource, shape=s, total_free=h.total_free, stranded=stranded,
                             nodes=len(h.per_node))

    if node_set is not None or shape is not None:
        return build()
    return snap.memo(("capacity", "fragmentation", resource), build)


def main_resource(shape: Shape, gpu_resources: Sequence[str] = DEFAULT_GPU_RESOURCES) -> str:
    """The resource to draw holes in: the first accelerator the pod asks for, else cpu (else any)."""
    for r in gpu_resources:
        if shape.get(r, ZERO) > ZERO:
            return r
    if shape.get("cpu", ZERO) > ZERO:
        return "cpu"
    for r, q in shape.items():
        if q > ZERO:
            return r
    return "cpu"


def fmt_qty(q: Decimal) -> str:
    """Decimal → compact text ('8', '0.5')."""
    return _fmt(q)


# --- TAS assignment in Workload status (kueue-facts §7.4) ---------------------------------------------------------


@dataclass(frozen=True)
class AssignedDomain:
    """One domain of `status.admission.podSetAssignments[].topologyAssignment`, with its pod count."""

    values: tuple[str, ...]
    """one value per assignment level (only the lowest level when it is kubernetes.io/hostname)"""
    pods: int


def topology_assignment(raw: Mapping[str, Any] | None) -> tuple[tuple[str, ...], tuple[AssignedDomain, ...]]:
    """Decode a topologyAssignment: v1beta1 `domains[{values, count}]` or v1beta2 compressed `slices[]`.

    v1beta2 slices carry `domainCount`, `valuesPerLevel[]` (each `universal` or
    `individual{prefix, roots[], suffix}` → prefix + root + suffix) and `podCounts` (`universal` or
    `individual[]`).
    """
    if not raw:
        return (), ()
    levels = tuple(str(lv) for lv in raw.get("levels") or ())
    out: list[AssignedDomain] = []
    for d in raw.get("domains") or ():
        if isinstance(d, dict):
            values = tuple(str(v) for v in d.get("values") or ())
            out.append(AssignedDomain(values=values, pods=int(d.get("count") or 0)))
    for sl in raw.get("slices") or ():
        if not isinstance(sl, dict):
            continue
        n = int(sl.get("domainCount") or 0)
        columns: list[list[str]] = []
        for per in sl.get("valuesPerLevel") or ():
            per = per or {}
            if per.get("universal") is not None:
                columns.append([str(per["universal"])] * n)
            else:
                ind = per.get("individual") or {}
                pre, suf = str(ind.get("prefix") or ""), str(ind.get("suffix") or "")
                columns.append([f"{pre}{root}{suf}" for root in ind.get("roots") or ()])
        counts = sl.get("podCounts") or {}
        if counts.get("universal") is not None:
            pods = [int(counts["universal"])] * n
        else:
            pods = [int(c) for c in counts.get("individual") or ()]
        for i in range(n):
            values = tuple(col[i] for col in columns if i < len(col))
            out.append(AssignedDomain(values=values, pods=pods[i] if i < len(pods) else 0))
    return levels, tuple(out)
