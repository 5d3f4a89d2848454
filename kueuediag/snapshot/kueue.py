"""Normalised Kueue objects: one shape for v1beta1 and v1beta2 (kueue-facts §1.2 renames).

Views are built lazily per kind and memoised on the Snapshot (`kueue_index(snap)`), so a 50,000-workload
snapshot is normalised once whatever number of checks ask.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import field
from datetime import datetime
from decimal import Decimal
from enum import StrEnum
from functools import cached_property
from typing import Any, TypeVar

from kueuediag.errors import InputError, MalformedObject
from kueuediag.quantity import ZERO, parse_quantity, parse_resource_list
from kueuediag.records import dataclass
from kueuediag.snapshot.held import Held, is_settled
from kueuediag.snapshot.k8s import (
    Condition,
    EventView,
    NodeView,
    PodView,
    conditions,
    event_view,
    meta,
    node_view,
    pod_spec_requests,
    pod_view,
)
from kueuediag.snapshot.model import BAD_SHAPE_ERRORS, Snapshot, typed
from kueuediag.timeutil import parse_time_lenient

V = TypeVar("V")
FlavorResource = tuple[str, str]
"""(flavor name, resource name)"""


# --- Workload -------------------------------------------------------------------------------------------------


class WorkloadState(StrEnum):
    """A Workload's state as Kueue derives it (pkg/workload Status()); `not-managed` is a job without one;
    `unknown` is a job whose Workload could not be read (the Workloads' collection failed)."""

    PENDING = "pending"
    QUOTA_RESERVED = "quota-reserved"
    ADMITTED = "admitted"
    FINISHED = "finished"
    NOT_MANAGED = "not-managed"
    UNKNOWN = "unknown"


@dataclass
class PodSet:
    name: str
    count: int
    min_count: int | None
    requests: dict[str, Decimal]
    """per pod"""
    spec: dict[str, Any]
    topology_request: dict[str, Any] | None

    def total(self, count: int | None = None) -> dict[str, Decimal]:
        n = self.count if count is None else count
        return {r: q * n for r, q in self.requests.items()}


@dataclass
class PodSetAssignment:
    name: str
    flavors: dict[str, str]
    usage: dict[str, Decimal]
    count: int | None
    topology: dict[str, Any] | None


@dataclass
class AdmissionCheckState:
    name: str
    state: str
    message: str
    last_transition: datetime | None
    retry_count: int | None = None


@dataclass
class WorkloadView:
    obj: dict[str, Any]
    namespace: str
    name: str
    uid: str
    created: datetime | None
    queue_name: str | None
    priority: int
    priority_class: str | None
    priority_class_kind: str | None
    active: bool
    pod_sets: list[PodSet]
    conditions: dict[str, Condition]
    admission_cq: str | None
    assignments: list[PodSetAssignment]
    admission_checks: list[AdmissionCheckState]
    requeue_count: int | None
    requeue_at: datetime | None
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    owner: dict[str, Any] | None = None

    def cond(self, type_: str) -> Condition | None:
        return self.conditions.get(type_)

    def is_true(self, type_: str) -> bool:
        c = self.conditions.get(type_)
        return bool(c and c.true)

    @cached_property
    def state(self) -> WorkloadState:
        """finished > admitted > quota-reserved > pending (pkg/workload Status()). Kept on the view (its conditions
        are never changed after it is built): the checks ask it a few dozen times per pending workload."""
        if self.is_true("Finished"):
            return WorkloadState.FINISHED
        if self.is_true("Admitted"):
            return WorkloadState.ADMITTED
        if self.is_true("QuotaReserved"):
            return WorkloadState.QUOTA_RESERVED
        return WorkloadState.PENDING

    @cached_property
    def holds_quota(self) -> bool:
        return self.is_true("QuotaReserved") and not self.is_true("Finished")

    @property
    def queue_order_time(self) -> datetime | None:
        """Creation time, or the last eviction/requeue time (requeuingStrategy.timestamp: Eviction)."""
        evicted = self.conditions.get("Evicted")
        if evicted and evicted.true and evicted.reason in ("PodsReadyTimeout", "AdmissionCheck") \
                and evicted.last_transition:
            return evicted.last_transition
        requeued = self.conditions.get("Requeued")
        if requeued and requeued.reason in ("PodsReadyTimeout", "AdmissionCheck", "BackoffFinished") \
                and requeued.last_transition:
            return requeued.last_transition
        return self.created

    def total_requests(self) -> dict[str, Decimal]:
        """What all pod sets request together, per resource (a copy: the caller may change it)."""
        return dict(self._total_requests)

    @cached_property
    def _total_requests(self) -> dict[str, Decimal]:
        """Worked out once per view (its pod sets are never changed after it is built): KD601 sums the requests
        of the workloads ahead of each pending workload of a queue."""
        out: dict[str, Decimal] = {}
        for ps in self.pod_sets:
            for r, q in ps.total().items():
                out[r] = out.get(r, ZERO) + q
        return out

    def usage(self) -> dict[FlavorResource, Decimal]:
        """Quota this workload holds per (flavor, resource), from status.admission."""
        out: dict[FlavorResource, Decimal] = defaultdict(lambda: ZERO)
        for a in self.assignments:
            for res, qty in a.usage.items():
                flavor = a.flavors.get(res)
                if flavor:
                    out[(flavor, res)] += qty
        return dict(out)

    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"


def workload_view(obj: dict[str, Any]) -> WorkloadView:
    m = meta(obj)
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    where = f"Workload {m.get('namespace')}/{m.get('name')}"
    pod_sets: list[PodSet] = []
    requested = {rr.get("name"): rr.get("resources") for rr in status.get("resourceRequests") or ()
                 if isinstance(rr, dict)}
    for ps in spec.get("podSets") or ():
        tmpl_spec = ((ps.get("template") or {}).get("spec")) or {}
        name = ps.get("name") or "main"
        reqs = pod_spec_requests(tmpl_spec, where)
        pod_sets.append(PodSet(
            name=name,
            count=int(ps.get("count", 1)),
            min_count=ps.get("minCount"),
            requests=reqs,
            spec=tmpl_spec,
            topology_request=ps.get("topologyRequest"),
        ))
        # status.resourceRequests (totals after LimitRange defaults) is authoritative when present.
        if requested.get(name) and ps.get("count", 1):
            totals = parse_resource_list(requested[name], where)
            count = int(ps.get("count", 1)) or 1
            pod_sets[-1].requests = {r: q / count for r, q in totals.items()} or reqs
    # priority: v1beta2 priorityClassRef{kind,name}; v1beta1 priorityClassName + priorityClassSource
    pc_ref = spec.get("priorityClassRef") or {}
    pc_name = pc_ref.get("name") or spec.get("priorityClassName")
    pc_kind = pc_ref.get("kind") or _source_kind(spec.get("priorityClassSource"))
    admission = status.get("admission") or {}
    assignments = []
    for a in admission.get("podSetAssignments") or ():
        assignments.append(PodSetAssignment(
            name=a.get("name") or "main",
            flavors=dict(a.get("flavors") or {}),
            usage=parse_resource_list(a.get("resourceUsage"), where),
            count=a.get("count"),
            topology=a.get("topologyAssignment"),
        ))
    checks = [
        AdmissionCheckState(
            name=c.get("name", ""), state=c.get("state", ""), message=c.get("message") or "",
            last_transition=parse_time_lenient(c.get("lastTransitionTime")), retry_count=c.get("retryCount"),
        )
        for c in status.get("admissionChecks") or () if isinstance(c, dict)
    ]
    requeue = status.get("requeueState") or {}
    owner = None
    for ref in m.get("ownerReferences") or ():
        if isinstance(ref, dict) and (ref.get("controller") or owner is None):
            owner = ref
    return WorkloadView(
        obj=obj,
        namespace=m.get("namespace") or "",
        name=m.get("name") or "",
        uid=m.get("uid") or "",
        created=parse_time_lenient(m.get("creationTimestamp")),
        queue_name=typed(spec, "queueName", "str", "spec.queueName"),
        priority=int(typed(spec, "priority", "int", "spec.priority") or 0),
        priority_class=pc_name,
        priority_class_kind=pc_kind,
        active=spec.get("active", True) is not False,
        pod_sets=pod_sets,
        conditions=conditions(obj),
        admission_cq=typed(admission, "clusterQueue", "str", "status.admission.clusterQueue"),
        assignments=assignments,
        admission_checks=checks,
        requeue_count=requeue.get("count"),
        requeue_at=parse_time_lenient(requeue.get("requeueAt")),
        labels=m.get("labels") or {},
        annotations=m.get("annotations") or {},
        owner=owner,
    )


def _source_kind(source: str | None) -> str | None:
    if source == "kueue.x-k8s.io/workloadpriorityclass":
        return "WorkloadPriorityClass"
    if source == "scheduling.k8s.io/priorityclass":
        return "PriorityClass"
    return None


# --- quota-bearing nodes: ClusterQueue and Cohort -------------------------------------------------------------


@dataclass
class Quota:
    nominal: Decimal
    borrowing_limit: Decimal | None
    lending_limit: Decimal | None


@dataclass
class ResourceGroup:
    covered: list[str]
    flavors: list[tuple[str, dict[str, Quota]]]
    """ordered (flavor name, resource → quota)"""


def find_quota(groups: list[ResourceGroup], flavor: str, resource: str) -> Quota | None:
    """The quota of (flavor, resource) in a ClusterQueue's or Cohort's resource groups."""
    for rg in groups:
        for fname, quotas in rg.flavors:
            if fname == flavor and resource in quotas:
                return quotas[resource]
    return None


def _resource_groups(spec: dict[str, Any], where: str) -> list[ResourceGroup]:
    groups = []
    for rg in spec.get("resourceGroups") or ():
        flavors = []
        for fq in rg.get("flavors") or ():
            quotas = {}
            for r in fq.get("resources") or ():
                rname = r.get("name", "")
                try:
                    quotas[rname] = Quota(
                        nominal=parse_quantity(r.get("nominalQuota", 0)),
                        borrowing_limit=None if r.get("borrowingLimit") is None
                        else parse_quantity(r.get("borrowingLimit")),
                        lending_limit=None if r.get("lendingLimit") is None
                        else parse_quantity(r.get("lendingLimit")),
                    )
                except InputError as exc:
                    raise InputError(f"{where} flavor {fq.get('name')} resource {rname}: {exc}") from None
            flavors.append((fq.get("name", ""), quotas))
        groups.append(ResourceGroup(covered=list(rg.get("coveredResources") or []), flavors=flavors))
    return groups


def _usage_list(raw: Any, where: str) -> dict[FlavorResource, tuple[Decimal, Decimal]]:
    """status.flavorsReservation/flavorsUsage → (flavor, resource) → (total, borrowed)."""
    out: dict[FlavorResource, tuple[Decimal, Decimal]] = {}
    for f in raw or ():
        for r in f.get("resources") or ():
            out[(f.get("name", ""), r.get("name", ""))] = (
                parse_quantity(r.get("total", 0)), parse_quantity(r.get("borrowed", 0)))
    return out


@dataclass
class ClusterQueueView:
    obj: dict[str, Any]
    name: str
    cohort: str | None
    resource_groups: list[ResourceGroup]
    namespace_selector: dict[str, Any] | None
    queueing_strategy: str
    preemption: dict[str, Any]
    flavor_fungibility: dict[str, Any]
    stop_policy: str
    admission_checks: list[tuple[str, list[str]]]
    fair_weight: Decimal
    conditions: dict[str, Condition]
    reservation: dict[FlavorResource, tuple[Decimal, Decimal]]
    usage: dict[FlavorResource, tuple[Decimal, Decimal]]
    pending_workloads: int | None
    weighted_share: int | None

    def quota(self, flavor: str, resource: str) -> Quota | None:
        return find_quota(self.resource_groups, flavor, resource)

    def flavor_names(self) -> list[str]:
        return [f for rg in self.resource_groups for f, _ in rg.flavors]

    def group_for(self, resource: str) -> ResourceGroup | None:
        for rg in self.resource_groups:
            if resource in rg.covered:
                return rg
        return None

    @property
    def active(self) -> bool:
        c = self.conditions.get("Active")
        return c is None or c.true


def cluster_queue_view(obj: dict[str, Any]) -> ClusterQueueView:
    m = meta(obj)
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    where = f"ClusterQueue {m.get('name')}"
    checks: list[tuple[str, list[str]]] = [(n, []) for n in spec.get("admissionChecks") or ()]
    for ac in (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or ():
        checks.append((ac.get("name", ""), list(ac.get("onFlavors") or [])))
    fs = status.get("fairSharing") or {}
    return ClusterQueueView(
        obj=obj,
        name=m.get("name", ""),
        cohort=typed(spec, "cohortName", "str", "spec.cohortName") or typed(spec, "cohort", "str", "spec.cohort")
        or None,
        resource_groups=_resource_groups(spec, where),
        namespace_selector=spec.get("namespaceSelector"),
        queueing_strategy=spec.get("queueingStrategy") or "BestEffortFIFO",
        preemption=spec.get("preemption") or {},
        flavor_fungibility=spec.get("flavorFungibility") or {},
        stop_policy=spec.get("stopPolicy") or "None",
        admission_checks=checks,
        fair_weight=parse_quantity((spec.get("fairSharing") or {}).get("weight", 1)),
        conditions=conditions(obj),
        reservation=_usage_list(status.get("flavorsReservation"), where),
        usage=_usage_list(status.get("flavorsUsage"), where),
        pending_workloads=status.get("pendingWorkloads"),
        weighted_share=fs.get("weightedShare"),
    )


@dataclass
class CohortView:
    obj: dict[str, Any] | None
    name: str
    parent: str | None
    resource_groups: list[ResourceGroup]
    fair_weight: Decimal
    weighted_share: int | None

    def quota(self, flavor: str, resource: str) -> Quota | None:
        return find_quota(self.resource_groups, flavor, resource)


def cohort_view(obj: dict[str, Any]) -> CohortView:
    m = meta(obj)
    spec = obj.get("spec") or {}
    fs = (obj.get("status") or {}).get("fairSharing") or {}
    return CohortView(
        obj=obj,
        name=m.get("name", ""),
        parent=spec.get("parentName") or spec.get("parent") or None,
        resource_groups=_resource_groups(spec, f"Cohort {m.get('name')}"),
        fair_weight=parse_quantity((spec.get("fairSharing") or {}).get("weight", 1)),
        weighted_share=fs.get("weightedShare"),
    )


@dataclass
class LocalQueueView:
    obj: dict[str, Any]
    namespace: str
    name: str
    cluster_queue: str
    stop_policy: str
    conditions: dict[str, Condition]


def local_queue_view(obj: dict[str, Any]) -> LocalQueueView:
    m = meta(obj)
    spec = obj.get("spec") or {}
    return LocalQueueView(
        obj=obj, namespace=m.get("namespace") or "", name=m.get("name", ""),
        cluster_queue=spec.get("clusterQueue") or "", stop_policy=spec.get("stopPolicy") or "None",
        conditions=conditions(obj),
    )


@dataclass
class FlavorView:
    obj: dict[str, Any]
    name: str
    node_labels: dict[str, str]
    node_taints: list[dict[str, Any]]
    tolerations: list[dict[str, Any]]
    topology_name: str | None


def flavor_view(obj: dict[str, Any]) -> FlavorView:
    spec = obj.get("spec") or {}
    return FlavorView(
        obj=obj, name=meta(obj).get("name", ""), node_labels=dict(spec.get("nodeLabels") or {}),
        node_taints=list(spec.get("nodeTaints") or []), tolerations=list(spec.get("tolerations") or []),
        topology_name=spec.get("topologyName"),
    )


# --- the memoised index -------------------------------------------------------------------------------------


@dataclass
class KueueIndex:
    cluster_queues: dict[str, ClusterQueueView]
    cohorts: dict[str, CohortView]
    """explicit Cohort objects plus implicit cohorts named only by cohortName/parentName"""
    local_queues: dict[tuple[str, str], LocalQueueView]
    flavors: dict[str, FlavorView]
    topologies: dict[str, list[str]]
    priority_classes: dict[str, int]
    admission_checks: dict[str, dict[str, Any]]

    def cohort_children(self, cohort: str) -> tuple[list[str], list[str]]:
        """(child cohorts, child ClusterQueues)."""
        cohorts = sorted(c.name for c in self.cohorts.values() if c.parent == cohort)
        cqs = sorted(q.name for q in self.cluster_queues.values() if q.cohort == cohort)
        return cohorts, cqs

    def root_of(self, cohort: str) -> str:
        seen = set()
        while cohort in self.cohorts and self.cohorts[cohort].parent and cohort not in seen:
            seen.add(cohort)
            cohort = self.cohorts[cohort].parent or cohort
        return cohort


def kueue_index(snap: Snapshot) -> KueueIndex:
    return snap.memo("kueue-index", lambda: _build_index(snap))


def _build_index(snap: Snapshot) -> KueueIndex:
    cqs = {v.name: v for v in map(guarded(snap, cluster_queue_view), snap.of_kind("ClusterQueue"))}
    cohorts = {v.name: v for v in map(guarded(snap, cohort_view), snap.of_kind("Cohort"))}
    implicit = {q.cohort for q in cqs.values() if q.cohort} | {c.parent for c in cohorts.values() if c.parent}
    for name in implicit:
        if name and name not in cohorts:
            cohorts[name] = CohortView(obj=None, name=name, parent=None, resource_groups=[],
                                       fair_weight=Decimal(1), weighted_share=None)
    lqs = {(v.namespace, v.name): v for v in map(guarded(snap, local_queue_view), snap.of_kind("LocalQueue"))}
    flavors = {v.name: v for v in map(guarded(snap, flavor_view), snap.of_kind("ResourceFlavor"))}
    topologies = {
        meta(t).get("name", ""): [lv.get("nodeLabel", "") for lv in (t.get("spec") or {}).get("levels") or ()]
        for t in snap.of_kind("Topology")
    }
    pcs = {meta(p).get("name", ""): int(p.get("value") or 0) for p in snap.of_kind("WorkloadPriorityClass")}
    acs = {meta(a).get("name", ""): a for a in snap.of_kind("AdmissionCheck")}
    return KueueIndex(cqs, cohorts, lqs, flavors, topologies, pcs, acs)


def guarded(snap: Snapshot, build: Callable[[dict[str, Any]], V]) -> Callable[[dict[str, Any]], V]:
    """Wrap a view builder: a malformed object becomes an InputError naming the file, the object and the field."""

    def wrapper(obj: dict[str, Any]) -> V:
        try:
            return build(obj)
        except (InputError, *BAD_SHAPE_ERRORS) as exc:
            raise snap.input_error(obj, exc) from None

    return wrapper


def workload_of(snap: Snapshot, obj: dict[str, Any]) -> WorkloadView:
    """The view of one Workload object, built on first use and shared by every caller.

    Resolving one target normalises only the Workloads it touches; `workloads()` hands out the very same
    view objects, so identity comparisons between a target and a listed workload hold.
    """
    return _shared_view(snap, "workload", workload_view, obj)


def _shared_view(snap: Snapshot, name: str, build: Callable[[dict[str, Any]], V], obj: dict[str, Any]) -> V:
    """The view of `obj` built by `build` (guarded) once per snapshot, then handed to every caller."""
    views: dict[int, V] = snap.memo(f"{name}-views", dict)
    view = views.get(id(obj))
    if view is None:
        guarded_build = snap.memo(f"guarded-{name}-view", lambda: guarded(snap, build))
        view = views[id(obj)] = guarded_build(obj)
    return view


def workloads(snap: Snapshot) -> list[WorkloadView]:
    """Every well-formed Workload, finished ones too (decodes them all: prefer `active_workloads`); a malformed
    one is left out and recorded (see `malformed_objects`)."""
    return snap.memo("workloads", lambda: _well_formed(snap, "Workload", lambda o: workload_of(snap, o)))


def active_workloads(snap: Snapshot) -> list[WorkloadView]:
    """Every well-formed Workload that is not Finished: the ones that hold quota, wait for it or run.

    A Finished Workload holds no quota and waits for nothing (Kueue releases its quota when it finishes), so
    every question about quota, queues, preemption and placement is answered from these; a snapshot's finished
    Workloads stay undecoded (:mod:`kueuediag.snapshot.held`).
    """
    return snap.memo("active-workloads",
                     lambda: _well_formed(snap, "Workload", lambda o: workload_of(snap, o), active=True))


def workload_by_uid(snap: Snapshot, uid: str) -> WorkloadView | None:
    """The well-formed Workload with this UID (finished or not), None when there is none."""
    held = snap.held_by_uid(uid)
    if held is None or held.kind != "Workload":
        return None
    try:
        return workload_of(snap, snap.obj(held))
    except MalformedObject:
        return None


@dataclass(frozen=True)
class Skipped:
    """A malformed object a list view left out: the raw object (for scope tests) and the error naming its field."""

    obj: dict[str, Any]
    error: MalformedObject


def workloads_since(snap: Snapshot, moment: datetime) -> list[WorkloadView]:
    """Every well-formed Workload that can have been admitted after `moment`: those not Finished, and the
    Finished ones that finished after it (or whose finishing time was not recorded). Decodes only those."""
    start = moment.timestamp()

    def recent(held: Held) -> bool:
        if not held.settled:
            return True
        finished = parse_time_lenient(held.settled_at)
        return finished is None or finished.timestamp() > start

    objs = [snap.obj(h) for h in snap.entries("Workload") if recent(h)]
    return _well_formed(snap, "Workload", lambda o: workload_of(snap, o), objs=objs)


def finished_newest_first(snap: Snapshot, cluster_queue: str) -> list[tuple[datetime, Held]]:
    """The Finished Workloads admitted to `cluster_queue` with their finishing time, newest first (ties by
    namespace and name, newest-first order reversed), read from their index keys: none is decoded. A Workload
    whose finishing time was not recorded is left out (it cannot be placed in time)."""

    def build() -> dict[str, list[tuple[datetime, Held]]]:
        out: dict[str, list[tuple[datetime, Held]]] = defaultdict(list)
        for h in snap.entries("Workload"):
            when = parse_time_lenient(h.settled_at) if h.settled and h.settled_in else None
            if h.settled_in and when is not None:
                out[h.settled_in].append((when, h))
        for lst in out.values():
            lst.sort(key=lambda x: (x[0], x[1].namespace or "", x[1].name), reverse=True)
        return dict(out)

    return snap.memo("finished-workloads-by-cq", build).get(cluster_queue, [])


def finished_view(snap: Snapshot, held: Held) -> WorkloadView | None:
    """The view of a Finished Workload found by `finished_newest_first` (None when it is malformed: recorded)."""
    views = _well_formed(snap, "Workload", lambda o: workload_of(snap, o), objs=[snap.obj(held)])
    return views[0] if views else None


def _well_formed(snap: Snapshot, kind: str, build: Callable[[dict[str, Any]], V], active: bool = False,
                 objs: list[dict[str, Any]] | None = None) -> list[V]:
    """The views of every object of `kind` (that is not settled, with `active`) that builds; the others are
    recorded once in the snapshot's registry, unless settled (a Finished Workload decoded for its conditions holds
    no quota: its junk must not make a cohort tree "could not check").

    One malformed object must not blind every check that lists its kind: the analyses that aggregate over a
    scope ask `malformed_objects` whether anything inside their scope was left out (require_well_formed).
    """
    registry: dict[int, Skipped] = snap.memo("malformed-objects", dict)
    out: list[V] = []
    for obj in (objs if objs is not None else snap.active(kind) if active else snap.of_kind(kind)):
        try:
            out.append(build(obj))
        except MalformedObject as exc:
            if not is_settled(obj):  # a settled object is in no aggregate: its junk blinds no analysis
                registry.setdefault(id(obj), Skipped(obj, exc))
    return out


def malformed_objects(snap: Snapshot) -> list[Skipped]:
    """Every malformed Workload, Pod, Node and Event that an aggregate could count, in load order (memoised per
    kind). Settled objects (finished Workloads, terminated Pods) are in no aggregate and are not decoded."""
    def build_views() -> bool:
        for view in (active_workloads, active_pods, nodes, events):
            view(snap)
        return True

    snap.memo("malformed-objects:views-built", build_views)  # asked ~16 times per diagnosis: the views once
    registry: dict[int, Skipped] = snap.memo("malformed-objects", dict)
    return list(registry.values()) if registry else []


def workload(snap: Snapshot, namespace: str, name: str) -> WorkloadView | None:
    obj = snap.get("Workload", name, namespace)
    return workload_of(snap, obj) if obj is not None else None


def workloads_by_cluster_queue(snap: Snapshot) -> dict[str, list[WorkloadView]]:
    """Workloads that are not Finished per ClusterQueue: the admission CQ when reserved, else the CQ of the
    LocalQueue."""

    def build() -> dict[str, list[WorkloadView]]:
        idx = kueue_index(snap)
        out: dict[str, list[WorkloadView]] = defaultdict(list)
        for w in active_workloads(snap):
            cq = cluster_queue_of(idx, w)
            if cq:
                out[cq].append(w)
        return dict(out)

    return snap.memo("workloads-by-cq", build)


def cluster_queue_of(idx: KueueIndex, w: WorkloadView) -> str | None:
    if w.admission_cq:
        return w.admission_cq
    lq = idx.local_queues.get((w.namespace, w.queue_name or ""))
    return lq.cluster_queue if lq else None


def pod_of(snap: Snapshot, obj: dict[str, Any]) -> PodView:
    """The view of one Pod object, built on first use and shared by every caller (like `workload_of`)."""
    return _shared_view(snap, "pod", pod_view, obj)


def pods(snap: Snapshot) -> list[PodView]:
    """Every well-formed Pod, terminated ones too (decodes them all: prefer `active_pods`)."""
    return snap.memo("pods", lambda: _well_formed(snap, "Pod", lambda o: pod_of(snap, o)))


def active_pods(snap: Snapshot) -> list[PodView]:
    """Every well-formed Pod that is not settled: pending, running, or being deleted (a Succeeded or Failed pod
    holds no node resources and, unless it is being deleted, nothing else)."""
    return snap.memo("active-pods", lambda: _well_formed(snap, "Pod", lambda o: pod_of(snap, o), active=True))


def pods_by_node(snap: Snapshot) -> dict[str, list[PodView]]:
    """Pods bound to each node that are not settled (terminated pods use none of its resources)."""

    def build() -> dict[str, list[PodView]]:
        out: dict[str, list[PodView]] = defaultdict(list)
        for p in active_pods(snap):
            if p.node:
                out[p.node].append(p)
        return dict(out)

    return snap.memo("pods-by-node", build)


def nodes(snap: Snapshot) -> list[NodeView]:
    return snap.memo("nodes", lambda: _well_formed(snap, "Node", guarded(snap, node_view)))


def events(snap: Snapshot) -> list[EventView]:
    return snap.memo("events", lambda: _well_formed(snap, "Event", guarded(snap, event_view)))


def events_for(snap: Snapshot, kind: str, namespace: str | None, name: str) -> list[EventView]:
    """Events about one object, newest last."""

    def build() -> dict[tuple[str, str | None, str], list[EventView]]:
        out: dict[tuple[str, str | None, str], list[EventView]] = defaultdict(list)
        for e in events(snap):
            out[(e.involved_kind, e.involved_namespace or e.namespace, e.involved_name)].append(e)
        for lst in out.values():
            lst.sort(key=lambda e: (e.last or e.first or snap.now))
        return dict(out)

    return snap.memo("events-by-object", build).get((kind, namespace, name), [])


def workload_pods(snap: Snapshot, w: WorkloadView) -> list[PodView]:
    """Pods that belong to a Workload: via the pod-group label, the workload annotation, or the owner chain.

    Found from the pods' index keys (labels, Kueue's annotations, owner references): only the pods found are
    decoded. A malformed pod is left out (and recorded), as `pods` leaves it out."""

    def build() -> dict[str, list[Held]]:
        out: dict[str, list[Held]] = defaultdict(list)
        for h in snap.entries("Pod"):
            key = h.labels.get("kueue.x-k8s.io/pod-group-name") or h.annotations.get(
                "kueue.x-k8s.io/pod-group-name") or h.annotations.get("kueue.x-k8s.io/workload")
            if key:
                out[f"{h.namespace or ''}/{key}"].append(h)
        return dict(out)

    direct = snap.memo("pods-by-workload-name", build).get(w.ref())
    if direct:
        return _pod_views(snap, direct)
    found: list[Held] = []
    owner_uid = (w.owner or {}).get("uid") or w.labels.get("kueue.x-k8s.io/job-uid")
    if owner_uid:
        stack = [owner_uid]
        seen: set[str] = set()
        while stack:
            uid = stack.pop()
            if uid in seen:
                continue
            seen.add(uid)
            for child in snap.child_entries(uid):
                if child.kind == "Pod" and child.uid:
                    found.append(child)
                elif child.uid and child.kind != "Workload":
                    stack.append(child.uid)
        owner = snap.held_by_uid(owner_uid)
        if w.owner and w.owner.get("kind") == "Pod" and owner is not None and owner.kind == "Pod":
            found.append(owner)
    return _pod_views(snap, found)


def well_formed_workload(snap: Snapshot, namespace: str, name: str) -> WorkloadView | None:
    """The Workload `namespace/name` when it exists and is well-formed (a malformed one is recorded, not raised)."""
    try:
        return workload(snap, namespace, name)
    except MalformedObject:
        return None


def workload_of_object(snap: Snapshot, obj: dict[str, Any]) -> WorkloadView | None:
    """The well-formed Workload an object belongs to — the inverse of `workload_pods`: the Workload it owns (a
    job-like owner, by ownerReference or Kueue's job-uid label); for a pod, the Workload of its pod group or
    annotation, else the one owned by the nearest owner up its chain. Read from index keys: decodes only what
    it finds."""

    def build() -> dict[str, Held]:
        out: dict[str, Held] = {}
        for h in snap.entries("Workload"):
            for uid, _, _, _ in h.owners:
                if uid:
                    out.setdefault(uid, h)
            job_uid = h.labels.get("kueue.x-k8s.io/job-uid")
            if job_uid:
                out.setdefault(job_uid, h)
        return out

    by_owner = snap.memo("workloads-by-owner-uid", build)

    def of(held: Held) -> WorkloadView | None:
        try:
            return workload_of(snap, snap.obj(held))
        except MalformedObject:
            return None

    m = meta(obj)
    current: dict[str, Any] | None = obj
    if obj.get("kind") == "Pod":
        lbls, ann = m.get("labels") or {}, m.get("annotations") or {}
        key = lbls.get("kueue.x-k8s.io/pod-group-name") or ann.get("kueue.x-k8s.io/pod-group-name") or ann.get(
            "kueue.x-k8s.io/workload")
        if key:
            return well_formed_workload(snap, str(m.get("namespace") or ""), str(key))
    seen: set[str] = set()
    while current is not None:
        uid = str(meta(current).get("uid") or "")
        if not uid or uid in seen:
            return None
        seen.add(uid)
        held = by_owner.get(uid)
        if held is not None:
            return of(held)
        refs = meta(current).get("ownerReferences") or []
        ref = next((r for r in refs if isinstance(r, dict) and r.get("controller")), refs[0] if refs else None)
        current = snap.by_uid(str(ref.get("uid") or "")) if isinstance(ref, dict) else None
    return None


def _pod_views(snap: Snapshot, held: list[Held]) -> list[PodView]:
    registry: dict[int, Skipped] = snap.memo("malformed-objects", dict)
    out: list[PodView] = []
    for h in held:
        obj = snap.obj(h)
        try:
            out.append(pod_of(snap, obj))
        except MalformedObject as exc:
            if not is_settled(obj):  # a settled object is in no aggregate: its junk blinds no analysis
                registry.setdefault(id(obj), Skipped(obj, exc))
    return out
