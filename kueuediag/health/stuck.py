"""Stuck things: admission checks Pending or in Retry, PodsReady backoff, deactivated workloads, zombie pods and
victims still holding quota, gates not removed, node and controller health, known issues of the running version.

Health picks the candidate objects (a cheap look at each Workload's status) and the owning check decides and
words each finding: KD701 (admission checks, PodsReady backoff), KD006 (deactivated), KD401 (gates), KD901
(zombies, victims, nodes, controller — run once cluster-wide), KD902 (known issues).
"""

from __future__ import annotations

from collections.abc import Callable

from kueuediag.analysis.health import controller_pods
from kueuediag.analysis.installation import kueue_version
from kueuediag.config import Settings
from kueuediag.health.catalog import BY_ID, Selection
from kueuediag.health.model import Item
from kueuediag.health.owners import CLUSTER, ask_owner, target_for
from kueuediag.health.scope import Scope
from kueuediag.models import Finding, ObjectRef
from kueuediag.snapshot.kueue import (
    WorkloadView,
    active_workloads,
    workload_pods,
)
from kueuediag.snapshot.model import Snapshot

_GATE_PREFIX = "kueue.x-k8s.io/"
ALL = ObjectRef(kind="Cluster", name="all")
KUEUE = ObjectRef(kind="Kueue", name="controller-manager")


def _wref(w: WorkloadView) -> ObjectRef:
    return ObjectRef(kind="Workload", name=w.name, namespace=w.namespace)


def _in_retry_or_pending(w: WorkloadView) -> bool:
    return w.state != "finished" and any(c.state in ("Pending", "Retry", "Rejected") for c in w.admission_checks)


def _in_backoff(snap: Snapshot, w: WorkloadView) -> bool:
    return w.active and w.requeue_at is not None and w.requeue_at > snap.now


def _deactivated(w: WorkloadView) -> bool:
    return not w.active and w.state != "finished"


def _gated(snap: Snapshot, w: WorkloadView) -> bool:
    return w.state == "admitted" and any(
        g.startswith(_GATE_PREFIX) for p in workload_pods(snap, w) for g in p.scheduling_gates)


_WORKLOAD_CHECKS: tuple[tuple[str, str, tuple[str, ...], Callable[[Snapshot, WorkloadView], bool], str], ...] = (
    ("admission-checks", "KD701", ("admission-check-pending", "admission-check-rejected"),
     lambda s, w: _in_retry_or_pending(w), "no admission check Pending or in Retry"),
    ("podsready-backoff", "KD701", ("podsready-backoff",), _in_backoff, "no workload in PodsReady requeue backoff"),
    ("deactivated", "KD006", ("deactivated",), lambda s, w: _deactivated(w), "no deactivated workload"),
    ("gates-not-removed", "KD401", ("gate-not-removed",), _gated,
     "no admitted workload with pods still gated by Kueue"),
)


def _old_enough(f: Finding, minutes: float) -> bool:
    seconds = f.data.get("seconds")
    return not isinstance(seconds, (int, float)) or seconds >= minutes * 60


def workload_items(snap: Snapshot, scope: Scope, sel: Selection, settings: Settings) -> list[Item]:
    items: list[Item] = []
    enabled = [c for c in _WORKLOAD_CHECKS if sel.enabled(c[0])]
    found: dict[str, list[Item]] = {c[0]: [] for c in enabled}
    for w in active_workloads(snap):
        if not scope.has_namespace(w.namespace):
            continue
        for check, code, causes, picks, _ in enabled:
            if not picks(snap, w):
                continue
            res = ask_owner(sel, settings, code, snap, target_for(snap, w), causes)
            kept = [f for f in res.findings
                    if check != "admission-checks" or f.cause != "admission-check-pending"
                    or _old_enough(f, float(sel.option("admission-checks", "minutes")))]
            if kept:
                found[check].append(Item(check, _wref(w), kept[0]))
    for check, _, _, _, quiet in enabled:
        items += found[check] or [Item(check, ALL, None, quiet)]
    return items


def _refs(f: Finding, kind: str) -> list[ObjectRef]:
    seen: dict[str, ObjectRef] = {}
    for e in f.evidence:
        if e.ref is not None and e.ref.kind == kind:
            seen.setdefault(str(e.ref), e.ref)
    return list(seen.values())


_CLUSTER_CHECKS = (
    ("zombie-pods", "zombie-pods", "Pod", "no pod terminating past its grace period"),
    ("victims-holding-quota", "stuck-preemption-target", "Workload", "no preemption victim still holds quota"),
    ("node-health", "node-unhealthy", "Node", "no NotReady or cordoned node"),
)


def system_items(snap: Snapshot, scope: Scope, sel: Selection, settings: Settings) -> list[Item]:
    """KD901 once, cluster-wide: one item per object each finding names (a finding may name several)."""
    wanted = [c for c in _CLUSTER_CHECKS if sel.enabled(c[0])]
    want_controller = sel.enabled("controller")
    if not wanted and not want_controller:
        return []
    res = ask_owner(sel, settings, "KD901", snap, CLUSTER)
    items: list[Item] = []
    for check, cause, kind, quiet in wanted:
        mine = []
        for f in res.findings:
            if f.cause != cause:
                continue
            for ref in _refs(f, kind)[:1] if kind == "Workload" else _refs(f, kind):
                if kind == "Node" or scope.has_namespace(ref.namespace):
                    mine.append(Item(check, ref, f))
        items += mine or [Item(check, ALL, None, quiet)]
    if want_controller:
        bad = [f for f in res.findings if f.cause == "controller-unhealthy"]
        if bad:
            items.append(Item("controller", KUEUE, bad[0]))
        else:
            pods = controller_pods(snap)
            ready = sum(1 for p in pods if p.healthy)
            items.append(Item("controller", KUEUE, None,
                              f"{ready}/{len(pods)} controller pod(s) ready" if pods else
                              "no controller pod in the snapshot (not collected)"))
    return items


def known_issue_items(snap: Snapshot, sel: Selection, settings: Settings) -> list[Item]:
    res = ask_owner(sel, settings, "KD902", snap, CLUSTER, (BY_ID["known-issues"].cause,))
    items = []
    for f in res.findings:
        issue = str(f.data.get("issue") or f.data.get("id") or f.title)
        items.append(Item("known-issues", ObjectRef(kind="KnownIssue", name=issue), f))
    if not items:
        version = kueue_version(snap).version
        items.append(Item("known-issues", KUEUE, None,
                          f"no known issue of Kueue {version} matches this cluster" if version else
                          "Kueue version unknown: the known-issue table could not be consulted"))
    return items
