"""What `health -n NS…` covers: the namespaces' workloads and pods, the ClusterQueues their LocalQueues point
to, those queues' cohort trees and flavors. ``-A`` (no namespaces) covers everything."""

from __future__ import annotations

from kueuediag.records import dataclass
from kueuediag.snapshot.kueue import kueue_index
from kueuediag.snapshot.model import Snapshot


@dataclass(frozen=True)
class Scope:
    namespaces: frozenset[str] | None
    cluster_queues: frozenset[str]
    flavors: frozenset[str]

    def has_namespace(self, namespace: str | None) -> bool:
        return self.namespaces is None or (namespace or "") in self.namespaces

    def has_queue(self, cq: str | None) -> bool:
        return cq is not None and cq in self.cluster_queues


def scope_of(snap: Snapshot, namespaces: list[str] | None) -> Scope:
    idx = kueue_index(snap)
    if not namespaces:
        cqs = frozenset(idx.cluster_queues)
        flavors = frozenset(idx.flavors) | {f for cq in idx.cluster_queues.values() for f in cq.flavor_names()}
        return Scope(None, cqs, frozenset(flavors))
    wanted = frozenset(namespaces)
    cqs = frozenset(lq.cluster_queue for (ns, _), lq in idx.local_queues.items()
                    if ns in wanted and lq.cluster_queue in idx.cluster_queues)
    flavors = frozenset(f for name in cqs for f in idx.cluster_queues[name].flavor_names())
    return Scope(wanted, cqs, flavors)
