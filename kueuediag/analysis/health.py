"""Cluster-health facts a "why pending" diagnosis needs: zombie pods, the Kueue controller's
pods, and recent configuration changes. Preemption victims live in :mod:`kueuediag.analysis.preemption_victims`,
the pod-termination rules in :mod:`kueuediag.analysis.pod_termination`, gates in
:mod:`kueuediag.analysis.installation`.

Pure functions of the snapshot, memoised where they walk every pod or workload. KD901 (system-health) and
KD902 (known-issues) both read them.
"""

from __future__ import annotations

from bisect import bisect_left
from datetime import datetime
from typing import Any

from kueuediag.analysis.fair_sharing import fair_sharing_config
from kueuediag.analysis.kueue_config import CONFIG_MAP, kueue_config
from kueuediag.analysis.pod_termination import (
    KueueActivity,
    counted_active_by_kueue,
    in_pod_group,
    is_zombie,
    seconds_past_grace,
)
from kueuediag.analysis.well_formed import any_pod, require_well_formed
from kueuediag.records import dataclass
from kueuediag.snapshot.k8s import NodeView, PodView, meta
from kueuediag.snapshot.kueue import (
    KueueIndex,
    WorkloadView,
    active_pods,
    active_workloads,
    cluster_queue_of,
    kueue_index,
    nodes,
    workload_pods,
)
from kueuediag.snapshot.logs import container_args, controller_objects, manager_container
from kueuediag.snapshot.model import Snapshot
from kueuediag.timeutil import parse_time_lenient

# --- pods ↔ workloads ---------------------------------------------------------------------------------------


def quota_holder_of_pods(snap: Snapshot) -> dict[str, WorkloadView]:
    """Pod UID → the Workload holding quota that the pod belongs to (memoised)."""

    def build() -> dict[str, WorkloadView]:
        out: dict[str, WorkloadView] = {}
        for w in active_workloads(snap):
            if not w.holds_quota:
                continue
            for p in workload_pods(snap, w):
                out.setdefault(p.uid or f"{p.namespace}/{p.name}", w)
        return out

    return snap.memo("health-pod-quota-holder", build)


def node_by_name(snap: Snapshot) -> dict[str, NodeView]:
    return snap.memo("health-nodes-by-name", lambda: {n.name: n for n in nodes(snap)})


# --- zombies ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Zombie:
    """A pod still not terminal well after its deletionTimestamp (the end of its grace period)."""

    pod: PodView
    overdue_seconds: float
    """seconds past deletionTimestamp, i.e. since its termination grace period ended (the API server sets
    deletionTimestamp = delete request + grace period)"""
    node: NodeView | None
    workload: WorkloadView | None
    """the Workload holding quota that the pod belongs to, if any"""
    cluster_queue: str | None
    activity: KueueActivity
    """whether Kueue still counts the pod active (so its Workload keeps quota)"""

    @property
    def node_ready(self) -> bool | None:
        return None if self.node is None else self.node.ready

    @property
    def in_pod_group(self) -> bool:
        return in_pod_group(self.pod)


def zombie_pods(snap: Snapshot) -> list[Zombie]:
    """Every pod past its grace period for longer than a minute (the one rule:
    :func:`kueuediag.analysis.pod_termination.is_zombie`), oldest first (memoised). MalformedObject (could not
    check) when any pod is malformed: it might be one."""
    require_well_formed(snap, any_pod, "the search for pods stuck Terminating")

    def build() -> list[Zombie]:
        holders = quota_holder_of_pods(snap)
        by_node = node_by_name(snap)
        idx = kueue_index(snap)
        out: list[Zombie] = []
        for p in active_pods(snap):
            if not is_zombie(p, snap.now):
                continue
            w = holders.get(p.uid or f"{p.namespace}/{p.name}")
            out.append(Zombie(p, seconds_past_grace(p, snap.now) or 0.0, by_node.get(p.node or ""), w,
                              cluster_queue_of(idx, w) if w is not None else None,
                              counted_active_by_kueue(snap, p)))
        out.sort(key=lambda z: -z.overdue_seconds)
        return out

    return snap.memo("health-zombies", build)


# --- cohort trees ------------------------------------------------------------------------------------------


def tree_of(idx: KueueIndex, cq: str | None) -> str | None:
    """The root cohort of a ClusterQueue (None without a cohort)."""
    if cq is None or cq not in idx.cluster_queues:
        return None
    cohort = idx.cluster_queues[cq].cohort
    return idx.root_of(cohort) if cohort else None


def shares_quota_with(idx: KueueIndex, target_cq: str | None, other_cq: str | None) -> bool:
    """Whether quota held in `other_cq` can matter to `target_cq`: the same ClusterQueue or the same cohort
    tree."""
    if target_cq is None or other_cq is None:
        return False
    if target_cq == other_cq:
        return True
    root = tree_of(idx, target_cq)
    return root is not None and root == tree_of(idx, other_cq)


def concerns_queue(idx: KueueIndex, cq: str | None, kind: str, name: str) -> bool:
    """Whether a change to the queue object `kind`/`name` matters to a workload of ClusterQueue `cq`: the
    ClusterQueue itself, the ClusterQueues and Cohorts of its cohort tree, and the ResourceFlavors it offers;
    every object when the workload has no known ClusterQueue.

    Asked per change (a few per snapshot) rather than by listing the tree's members per ClusterQueue, which cost
    each ClusterQueue a pass over every ClusterQueue and Cohort of the cluster (`health --all-pending`: quadratic
    in the number of ClusterQueues)."""
    if cq is None or cq not in idx.cluster_queues:
        return True
    if kind == "ClusterQueue":
        return shares_quota_with(idx, cq, name)
    if kind == "Cohort":
        root = tree_of(idx, cq)
        return root is not None and name in idx.cohorts and idx.root_of(name) == root
    if kind == "ResourceFlavor":
        return name in idx.cluster_queues[cq].flavor_names()
    return False


# --- the Kueue controller -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ControllerPod:
    obj: dict[str, Any]
    namespace: str
    name: str
    ready: bool
    phase: str
    restarts: int
    waiting_reason: str
    """e.g. CrashLoopBackOff, ImagePullBackOff ('' when running)"""
    last_terminated_reason: str
    last_exit_code: int | None
    last_finished: datetime | None
    started: datetime | None
    node: str | None
    image: str
    deleting: bool = False

    @property
    def healthy(self) -> bool:
        return self.ready and not self.waiting_reason and not self.deleting


def controller_pods(snap: Snapshot) -> list[ControllerPod]:
    """The Kueue controller-manager pods (kueue-facts: namespace kueue-system, label
    control-plane=controller-manager or app.kubernetes.io/name=kueue), memoised."""

    def build() -> list[ControllerPod]:
        out: list[ControllerPod] = []
        for obj in controller_objects(snap):
            if obj.get("kind") != "Pod":
                continue
            m = meta(obj)
            status = obj.get("status") or {}
            container = manager_container(obj) or {}
            cname = container.get("name")
            statuses = [s for s in status.get("containerStatuses") or () if isinstance(s, dict)]
            cs = next((s for s in statuses if s.get("name") == cname), statuses[0] if statuses else {})
            state, last = cs.get("state") or {}, (cs.get("lastState") or {}).get("terminated") or {}
            ready_cond = next((c for c in status.get("conditions") or ()
                               if isinstance(c, dict) and c.get("type") == "Ready"), None)
            ready = (ready_cond.get("status") == "True") if ready_cond else bool(cs.get("ready"))
            exit_code = last.get("exitCode")
            restarts = cs.get("restartCount")
            out.append(ControllerPod(
                obj=obj, namespace=m.get("namespace") or "", name=m.get("name") or "", ready=ready,
                phase=status.get("phase") or "Unknown",
                restarts=restarts if isinstance(restarts, int) and not isinstance(restarts, bool) else 0,
                waiting_reason=str((state.get("waiting") or {}).get("reason") or ""),
                last_terminated_reason=str(last.get("reason") or ""),
                last_exit_code=int(exit_code) if isinstance(exit_code, int) else None,
                last_finished=parse_time_lenient(last.get("finishedAt")),
                started=parse_time_lenient((state.get("running") or {}).get("startedAt")),
                node=(obj.get("spec") or {}).get("nodeName"), image=str(container.get("image") or ""),
                deleting=bool(m.get("deletionTimestamp")),
            ))
        out.sort(key=lambda p: (p.healthy, p.name))
        return out

    return snap.memo("health-controller-pods", build)


def controller_deployment(snap: Snapshot) -> dict[str, Any] | None:
    deps = [o for o in controller_objects(snap) if o.get("kind") == "Deployment"]
    return deps[0] if deps else None


# --- configuration changes ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    kind: str
    name: str
    namespace: str | None
    at: datetime
    manager: str
    operation: str
    generation: int | None
    what: str
    """human summary of what changed (e.g. `fairSharing enabled in the Configuration`)"""


def last_spec_change(obj: dict[str, Any]) -> tuple[datetime, str, str] | None:
    """(time, manager, operation) of the newest managedFields entry that is not a status write."""
    best: tuple[datetime, str, str] | None = None
    for mf in meta(obj).get("managedFields") or ():
        if not isinstance(mf, dict) or mf.get("subresource") == "status":
            continue
        t = parse_time_lenient(mf.get("time"))
        if t is None:
            continue
        if best is None or t > best[0]:
            best = (t, str(mf.get("manager") or "?"), str(mf.get("operation") or "?"))
    return best


def config_changes(snap: Snapshot) -> list[Change]:
    """Spec changes of ClusterQueues, Cohorts, ResourceFlavors, the manager ConfigMap and the controller
    Deployment, by managedFields time (newest first). Objects only ever written at creation count too: a
    ClusterQueue created an hour ago is a change."""

    def build() -> list[Change]:
        out: list[Change] = []
        candidates: list[dict[str, Any]] = []
        for kind in ("ClusterQueue", "Cohort", "ResourceFlavor"):
            candidates.extend(snap.of_kind(kind))
        candidates.extend(cm for cm in snap.of_kind("ConfigMap")
                          if str(meta(cm).get("name", "")).endswith(CONFIG_MAP))
        candidates.extend(o for o in controller_objects(snap) if o.get("kind") == "Deployment")
        for obj in candidates:
            last = last_spec_change(obj)
            m = meta(obj)
            if last is None:
                continue
            gen = m.get("generation")
            out.append(Change(
                kind=str(obj.get("kind")), name=str(m.get("name")), namespace=m.get("namespace"), at=last[0],
                manager=last[1], operation=last[2], generation=int(gen) if isinstance(gen, int) else None,
                what=_describe_change(snap, obj),
            ))
        out.sort(key=lambda c: c.at, reverse=True)
        return out

    return snap.memo("health-config-changes", build)


def _describe_change(snap: Snapshot, obj: dict[str, Any]) -> str:
    kind = obj.get("kind")
    if kind == "ConfigMap":
        fs = fair_sharing_config(snap)
        parts = ["Kueue manager configuration"]
        if fs.enabled:
            strategies = f" (preemptionStrategies {', '.join(fs.preemption_strategies)})" \
                if fs.preemption_strategies else ""
            parts.append(f"fairSharing is enabled{strategies}")
        gates = kueue_config(snap).raw.get("featureGates")
        if isinstance(gates, dict) and gates:
            parts.append("featureGates " + ",".join(f"{k}={v}" for k, v in sorted(gates.items())))
        return "; ".join(parts)
    if kind == "Deployment":
        c = manager_container(obj)
        args = " ".join(container_args(c)) if c else ""
        return f"controller Deployment (manager args: {args})" if args else "controller Deployment"
    return f"{kind} spec (generation {meta(obj).get('generation', '?')})"


# --- is the controller working? ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ControllerActivity:
    """What the snapshot says about the controller over a window: the evidence that it was *not* working
    (not Ready, restarting, crash looping, no scheduling-cycle log lines), and how many scheduling-cycle lines
    show the scheduler evaluating workloads (None: no log covers the window)."""

    problems: tuple[str, ...]
    """one sentence per piece of controller evidence"""
    pods: tuple[ControllerPod, ...]
    """the controller pods the problems name"""
    scheduling_lines: int | None


def controller_activity(snap: Snapshot, since: datetime) -> ControllerActivity:
    """Controller evidence for a stall that began at `since`: the one owner KD301 and KD901 agree on."""
    from kueuediag.snapshot.logs import log_lines

    problems: list[str] = []
    bad = [p for p in controller_pods(snap) if not p.healthy or p.restarts > 0]
    for p in bad:
        state = p.waiting_reason or ("Ready" if p.ready else "not Ready")
        problems.append(f"controller pod {p.namespace}/{p.name}: {state}, {p.restarts} restart(s)"
                        + (f", last exit {p.last_terminated_reason}" if p.last_terminated_reason else ""))
    def timeline() -> tuple[datetime | None, list[datetime]]:
        """(newest timestamp, sorted times of scheduling-cycle lines), read once per snapshot."""
        covered = [ln for ln in (log_lines(snap) if snap.logs_text else []) if ln.ts is not None]
        newest = max((ln.ts for ln in covered if ln.ts is not None), default=None)
        return newest, sorted(ln.ts for ln in covered if ln.ts is not None and ln.has_field("schedulingCycle"))

    newest, cycles = snap.memo("health:scheduling-cycle-times", timeline)
    scheduling: int | None = None
    if newest is not None and newest >= since:
        scheduling = len(cycles) - bisect_left(cycles, since)
        if scheduling == 0:
            problems.append(f"no scheduling-cycle log line since {since.isoformat()} although the log covers "
                            "that window")
    return ControllerActivity(tuple(problems), tuple(bad), scheduling)
