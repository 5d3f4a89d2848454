"""ClusterQueues and cohorts as a tree: quota per (flavor, resource), guarantee violations, fair-sharing shares,
stopped and inactive queues.

Numbers come from the analyses (`analysis.guarantees.quota_table`, `guarantee_violations`, `analysis.quota_tree`,
`analysis.fair_sharing`); verdicts come from the owning checks (KD101 words a violation the way `why` does, KD103
decides a share anomaly with its tolerances).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from kueuediag.analysis.fair_sharing import fair_sharing_tree, fmt_fraction
from kueuediag.analysis.guarantees import Violation, cohort_table, guarantee_violations, quota_table
from kueuediag.analysis.queue_order import pending_queue
from kueuediag.analysis.quota_tree import quota_tree
from kueuediag.config import Settings
from kueuediag.engine import override_finding
from kueuediag.health.catalog import BY_ID, Selection
from kueuediag.health.model import CohortRow, Item, QueueRow, QuotaCell
from kueuediag.health.owners import CLUSTER, ask_owner, target_for
from kueuediag.health.scope import Scope
from kueuediag.models import Finding, ObjectRef, Severity, ev
from kueuediag.snapshot.kueue import ClusterQueueView, kueue_index, workloads_by_cluster_queue
from kueuediag.snapshot.model import Snapshot
from kueuediag.timeutil import human_duration


def cq_ref(name: str) -> ObjectRef:
    return ObjectRef(kind="ClusterQueue", name=name)


@runtime_checkable
class GuaranteeRuling(Protocol):
    """What KD101 offers besides its findings: the violations it rules `guarantee-violation`."""

    def confirmed(self, snapshot: Snapshot) -> list[Violation]: ...


def kd101_ruling(snap: Snapshot, sel: Selection) -> list[Violation] | None:
    """KD101's ruling over every raw violation, longest first; None when KD101 is not selected (then the tree
    shows no violation column rather than an unruled recomputation)."""
    owner = sel.owners.get(BY_ID["guarantee-violation"].code)
    return owner.confirmed(snap) if isinstance(owner, GuaranteeRuling) else None


def queue_rows(snap: Snapshot, scope: Scope, ruling: list[Violation] | None) -> list[QueueRow]:
    """The tree's rows; the "guarantee violated" column is KD101's `ruling` (kd101_ruling), never the raw
    `guarantee_violations` recomputation, which also lists waits KD101 rules out (a fresh record, a record
    that explains the wait)."""
    idx = kueue_index(snap)
    tree = quota_tree(snap)
    shares = fair_sharing_tree(snap)
    by_cq: dict[str, list[float]] = {}
    for v in ruling or ():
        by_cq.setdefault(v.cluster_queue, []).append(v.seconds or 0.0)
    rows = []
    for name in sorted(scope.cluster_queues):
        cq = idx.cluster_queues[name]
        cells = tuple(QuotaCell(**r.as_dict()) for r in quota_table(snap, name))
        node = shares.nodes.get(("ClusterQueue", name))
        recomputed = None
        if node is not None and node.parent is not None:
            recomputed = fmt_fraction(shares.drs("ClusterQueue", name).weighted_share)
        held = sum(1 for w in workloads_by_cluster_queue(snap).get(name, []) if w.holds_quota)
        violations = by_cq.get(name, [])
        rows.append(QueueRow(
            name=name, cohort=cq.cohort, path=tuple(reversed(tree.path(name))), active=cq.active,
            stop_policy=cq.stop_policy, inactive_reason=_inactive_reason(cq), quota=cells,
            pending_workloads=len(pending_queue(snap, name)), admitted_workloads=held,
            violation_seconds=max(violations) if violations else None, violating_workloads=len(violations),
            share_recomputed=recomputed, share_reported=node.reported if node is not None else None,
        ))
    return rows


def cohort_rows(snap: Snapshot, scope: Scope) -> list[CohortRow]:
    idx = kueue_index(snap)
    tree = quota_tree(snap)
    wanted = {c for name in scope.cluster_queues for c in tree.path(name)}
    rows = []
    for name in sorted(wanted):
        co = idx.cohorts.get(name)
        children, cqs = idx.cohort_children(name)
        rows.append(CohortRow(name=name, parent=co.parent if co else None, cluster_queues=tuple(cqs),
                              children=tuple(children), quota=tuple(cohort_table(snap, name))))
    return rows


def _inactive_reason(cq: ClusterQueueView) -> str:
    c = cq.conditions.get("Active")
    if c is not None and not c.true:
        return f"{c.reason}: {c.message}".strip(": ")
    if cq.stop_policy not in ("", "None"):
        return f"stopPolicy {cq.stop_policy}"
    return ""


def guarantee_items(snap: Snapshot, scope: Scope, sel: Selection, settings: Settings,
                    ruling: list[Violation] | None) -> list[Item]:
    """One item per ClusterQueue: KD101's finding for its longest violation KD101 confirms, or what was ruled
    out (a wait that fits unused nominal quota but whose Kueue record KD101 does not read as stale)."""
    if ruling is None:  # KD101 not selected: the health check is not selected either
        return []
    worst: dict[str, Violation] = {}
    for v in ruling:  # longest first
        worst.setdefault(v.cluster_queue, v)
    raw: dict[str, Violation] = {}
    for v in guarantee_violations(snap):
        raw.setdefault(v.cluster_queue, v)
    items = []
    for name in sorted(scope.cluster_queues):
        confirmed = worst.get(name)
        if confirmed is None:
            fits = raw.get(name)
            items.append(Item("guarantee-violation", cq_ref(name), None, (
                f"{fits.workload.namespace}/{fits.workload.name} fits unused nominal quota for "
                f"{human_duration(fits.seconds or 0)}, but KD101 rules it out (Kueue's record is recent or "
                f"explains the wait: `kueuediag why workload/{fits.workload.name} -n {fits.workload.namespace}`)"
            ) if fits is not None else "no pending workload fits the unused nominal quota"))
            continue
        w = confirmed.workload
        res = ask_owner(sel, settings, "KD101", snap, target_for(snap, w), ("guarantee-violation",))
        found = [f for f in res.findings if f.about_target]
        if not found:
            items.append(Item("guarantee-violation", cq_ref(name), None,
                              f"{w.namespace}/{w.name}: guarantee violation for "
                              f"{human_duration(confirmed.seconds or 0)} "
                              f"({res.not_checked or 'ignored by configuration'})"))
            continue
        items.append(Item("guarantee-violation", cq_ref(name), found[0]))
    return items


def fair_sharing_items(snap: Snapshot, scope: Scope, sel: Selection, settings: Settings) -> list[Item]:
    """KD103 decides (its tolerances, the running version's rounding); each ClusterQueue it names fails."""
    shares = fair_sharing_tree(snap)
    res = ask_owner(sel, settings, "KD103", snap, CLUSTER, ("fair-sharing-anomaly",))
    named: dict[str, Finding] = {}
    for f in res.findings:
        for e in f.evidence:
            if e.ref is not None and e.ref.kind == "ClusterQueue":
                named.setdefault(e.ref.name, f)
    items = []
    for name in sorted(scope.cluster_queues):
        node = shares.nodes.get(("ClusterQueue", name))
        if node is None or node.reported is None:
            continue
        hit = named.get(name)
        if hit is not None:
            items.append(Item("fair-sharing", cq_ref(name), hit))
        else:
            drs = shares.drs("ClusterQueue", name)
            items.append(Item("fair-sharing", cq_ref(name), None,
                              f"weightedShare {node.reported} agrees with the recomputed "
                              f"{fmt_fraction(drs.weighted_share)}"))
    return items


def inactive_items(snap: Snapshot, scope: Scope, sel: Selection, settings: Settings) -> list[Item]:
    """Stopped or inactive ClusterQueues: every workload in them stays pending."""
    idx = kueue_index(snap)
    owner = sel.owners.get(BY_ID["queue-inactive"].code)
    items = []
    for name in sorted(scope.cluster_queues):
        cq = idx.cluster_queues[name]
        reason = _inactive_reason(cq)
        if not reason or owner is None:
            items.append(Item("queue-inactive", cq_ref(name), None, "Active=True, stopPolicy None"))
            continue
        waiting = len(pending_queue(snap, name))
        stopped = cq.stop_policy not in ("", "None")
        sev = Severity.MEDIUM if stopped and cq.stop_policy != "HoldAndDrain" else Severity.HIGH
        f = owner.finding(
            "clusterqueue-inactive", f"ClusterQueue {name} is {'stopped' if stopped else 'inactive'} ({reason})",
            f"ClusterQueue {name} admits nothing while {reason}; {waiting} workload(s) wait in it.",
            severity=sev, about_target=False,
            evidence=[ev("condition", reason, kind="ClusterQueue", name=name,
                         field="status.conditions[Active] / spec.stopPolicy", expected="Active=True")],
            data={"pending": waiting},
        )
        over = override_finding(f, settings, sel.classes)
        items.append(Item("queue-inactive", cq_ref(name), over,
                          "" if over is not None else f"{reason} (ignored by configuration)"))
    return items
