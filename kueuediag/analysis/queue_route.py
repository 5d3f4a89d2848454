"""Which LocalQueue and ClusterQueue a pending Workload goes through, and whether the snapshot can tell.

The submission checks (KD001 queue existence, KD003 queue state, KD004 namespace selection, KD005 resource
coverage) each own a few causes along the same route: queueName → LocalQueue → ClusterQueue. They must agree
on where the route breaks, so the walk lives here once. "Not in the snapshot" only means "does not exist" when
the snapshot says that kind was collected; otherwise the checks fall back to Kueue's own message.
"""

from __future__ import annotations

from kueuediag.analysis.messages import PendingMessage, ReasonKind
from kueuediag.records import dataclass
from kueuediag.snapshot.k8s import Condition
from kueuediag.snapshot.kueue import ClusterQueueView, LocalQueueView, WorkloadView, kueue_index
from kueuediag.snapshot.model import Snapshot


def collected(snap: Snapshot, kind: str, namespace: str | None) -> bool:
    """Whether absence of `kind` objects in the snapshot means absence in the cluster."""
    if snap.manifest.format is None:
        return False  # a loose folder of kubectl output: we cannot tell what was collected
    limited = snap.manifest.namespaces
    in_scope = namespace is None or limited is None or namespace in limited
    if snap.count(kind):
        return in_scope
    if any(kind.lower() in what.lower() for what, _ in snap.manifest.errors):
        return False
    return in_scope


def local_queue_names(snap: Snapshot, namespace: str) -> list[str]:
    """The LocalQueues of `namespace`, by name: what a route that names a missing queue suggests instead.

    Indexed by namespace once per snapshot, so a pending workload costs its namespace, not every LocalQueue.
    """

    def build() -> dict[str, list[str]]:
        by_ns: dict[str, list[str]] = {}
        for (ns, _), lq in kueue_index(snap).local_queues.items():
            by_ns.setdefault(ns, []).append(lq.name)
        return {ns: sorted(names) for ns, names in by_ns.items()}

    return list(snap.memo("queue-route:local-queue-names", build).get(namespace, ()))


@dataclass(frozen=True)
class QueueRoute:
    """Where the Workload's queue route ends.

    `state` is one of:
    ``no-queue-name`` (spec.queueName empty), ``lq-missing`` (the LocalQueue does not exist),
    ``lq-unknown`` (not in the snapshot and the snapshot cannot say it is missing), ``cq-missing``,
    ``cq-unknown`` (same for the ClusterQueue), ``resolved`` (both objects at hand).
    """

    state: str
    lq_name: str
    lq: LocalQueueView | None
    cq: ClusterQueueView | None
    lq_collected: bool
    cq_collected: bool

    @property
    def lq_active(self) -> Condition | None:
        return self.lq.conditions.get("Active") if self.lq is not None else None


def queue_route(snap: Snapshot, w: WorkloadView, pm: PendingMessage | None) -> QueueRoute:
    """Walk spec.queueName → LocalQueue → ClusterQueue; Kueue's message counts as proof of absence."""
    idx = kueue_index(snap)
    lq_name = w.queue_name or ""
    lq_collected = collected(snap, "LocalQueue", w.namespace)
    cq_collected = collected(snap, "ClusterQueue", None)
    if not lq_name:
        return QueueRoute("no-queue-name", "", None, None, lq_collected, cq_collected)
    lq = idx.local_queues.get((w.namespace, lq_name))
    if lq is None:
        msg_says = pm is not None and any(r.name == lq_name for r in pm.of(ReasonKind.LQ_MISSING))
        state = "lq-missing" if lq_collected or msg_says else "lq-unknown"
        return QueueRoute(state, lq_name, None, None, lq_collected, cq_collected)
    cq = idx.cluster_queues.get(lq.cluster_queue)
    if cq is None:
        active = lq.conditions.get("Active")
        msg_says = pm is not None and any(r.name == lq.cluster_queue for r in pm.of(ReasonKind.CQ_MISSING))
        lq_says = active is not None and active.reason == "ClusterQueueDoesNotExist"
        state = "cq-missing" if cq_collected or msg_says or lq_says else "cq-unknown"
        return QueueRoute(state, lq_name, lq, None, lq_collected, cq_collected)
    return QueueRoute("resolved", lq_name, lq, cq, lq_collected, cq_collected)
