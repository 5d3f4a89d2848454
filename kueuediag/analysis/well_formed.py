"""Which malformed objects an analysis depends on: the scope test behind "could not check" for junk objects.

List views leave malformed objects out and record them (kueuediag.snapshot.kueue.malformed_objects). An analysis
that aggregates over a scope — the quota of a cohort tree, the pending queue of a ClusterQueue, the pods on the
nodes of a flavor — calls `require_well_formed` with that scope: a malformed object inside it makes the analysis
(and so the check that asked) "could not check", naming the object and field; one outside it is ignored,
and the analysis makes no claim about it. The predicates read the raw object, since it has no view.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from kueuediag.errors import MalformedObject
from kueuediag.snapshot.k8s import meta
from kueuediag.snapshot.kueue import kueue_index, malformed_objects
from kueuediag.snapshot.model import Snapshot

Scope = Callable[[dict[str, Any]], bool]
"""Does the analysis depend on this (malformed, raw) object?"""


def require_well_formed(snap: Snapshot, in_scope: Scope, what: str) -> None:
    """Raise MalformedObject for the first malformed object inside the scope of `what`; do nothing otherwise.

    The engine turns it into "could not check" for the asking check, with the object as input and the field
    (and what needed it) as reason.
    """
    for bad in malformed_objects(snap):
        if in_scope(bad.obj):
            err = bad.error
            scoped = MalformedObject(f"{err} (needed for {what})", err.kind, err.namespace, err.name)
            scoped.source, scoped.field = err.source, err.field
            raise scoped


def _dig(obj: Any, *keys: str) -> Any:
    for key in keys:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def raw_cluster_queue(snap: Snapshot, obj: dict[str, Any]) -> str | None:
    """The ClusterQueue a raw Workload is admitted in or queued for (None when unreadable or unrouted)."""
    admitted = _dig(obj, "status", "admission", "clusterQueue")
    if isinstance(admitted, str) and admitted:
        return admitted
    queue = _dig(obj, "spec", "queueName")
    lq = kueue_index(snap).local_queues.get((str(meta(obj).get("namespace") or ""), str(queue or "")))
    return lq.cluster_queue if lq else None


def workloads_in_quota_tree(snap: Snapshot, cluster_queue: str) -> Scope:
    """Workloads whose ClusterQueue shares `cluster_queue`'s cohort tree (or is it, without a cohort).

    A Workload whose ClusterQueue cannot be told is in scope: it might hold quota there.
    """
    members = snap.memo(("well-formed:quota-tree-members", cluster_queue), lambda: _tree_members(snap, cluster_queue))

    def in_scope(obj: dict[str, Any]) -> bool:
        if obj.get("kind") != "Workload":
            return False
        queue = raw_cluster_queue(snap, obj)
        return queue is None or queue in members

    return in_scope


def _tree_members(snap: Snapshot, cluster_queue: str) -> frozenset[str]:
    idx = kueue_index(snap)
    cq = idx.cluster_queues.get(cluster_queue)
    if cq is None or not cq.cohort:
        return frozenset({cluster_queue})
    return _members_by_root(snap)[idx.root_of(cq.cohort)]


def _members_by_root(snap: Snapshot) -> dict[str, frozenset[str]]:
    """The ClusterQueues of each cohort tree, by its root (worked out once: asked for every ClusterQueue)."""

    def build() -> dict[str, frozenset[str]]:
        idx = kueue_index(snap)
        out: dict[str, set[str]] = {}
        for q in idx.cluster_queues.values():
            if q.cohort:
                out.setdefault(idx.root_of(q.cohort), set()).add(q.name)
        return {root: frozenset(names) for root, names in out.items()}

    return snap.memo("well-formed:tree-members-by-root", build)


def workloads_in_cluster_queue(snap: Snapshot, cluster_queue: str) -> Scope:
    """Workloads admitted in or queued for `cluster_queue` (or whose ClusterQueue cannot be told)."""

    def in_scope(obj: dict[str, Any]) -> bool:
        queue = raw_cluster_queue(snap, obj) if obj.get("kind") == "Workload" else ""
        return queue is None or queue == cluster_queue

    return in_scope


def node_room(names: Collection[str], labels: dict[str, str]) -> Scope:
    """What the free room of nodes `names` (those carrying `labels`) depends on: Nodes carrying `labels` (an
    unreadable label set is in scope) and pods bound to one of `names` (a pod whose spec.nodeName cannot be read
    is in scope; an unbound one is not)."""

    def in_scope(obj: dict[str, Any]) -> bool:
        if obj.get("kind") == "Node":
            have = meta(obj).get("labels")
            return not isinstance(have, dict) or all(have.get(k) == v for k, v in labels.items())
        if obj.get("kind") != "Pod":
            return False
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return True
        node = spec.get("nodeName")
        return node is not None and (not isinstance(node, str) or node in names)

    return in_scope


def any_pod(obj: dict[str, Any]) -> bool:
    """Every pod: for analyses that make a claim about all pods of the cluster."""
    return obj.get("kind") == "Pod"
