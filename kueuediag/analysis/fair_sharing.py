"""Fair sharing: recompute Kueue's Dominant Resource Share (DRS) and the `weightedShare` it reports.

This is a faithful, exact re-implementation of ``pkg/cache/scheduler/fair_sharing.go`` and
``resource_node.go`` (kueue-facts §4), plus the integer arithmetic of Kueue up to v0.13.2 whose truncation
reported borrowing ClusterQueues at 0 (§4.1, issue #6577, fixed by #6617 and #6925):

* ``SubtreeQuota``: a ClusterQueue's nominal quota; a Cohort's own nominal plus, per child,
  ``childSubtreeQuota − localQuota(child)`` (children contribute at most their lendingLimit);
* ``localQuota = max(0, SubtreeQuota − lendingLimit)`` when a lendingLimit is set, else 0;
* usage: a ClusterQueue's *reserved* quota; a Cohort's is Σ children ``max(0, usage − localQuota)``;
* ``borrowed_r`` = Σ over flavors of ``max(0, usage − SubtreeQuota)`` per (flavor, resource);
* ``lendable_r`` = Σ over the root's flavors of ``potentialAvailable(parent, (flavor, r))``;
* ``ratio_r = borrowed_r × 1000 / lendable_r`` (resources with lendable 0 skipped), DRS = max over r
  (ties: alphabetically first resource), weighted share = DRS / weight; weight 0 while borrowing = +Inf;
* status ``weightedShare`` = ``ceil(weighted share)``, MaxInt64 for +Inf.

Quantities are converted to Kueue's integer amounts (cpu in millicores, everything else in units, both
rounded up like ``Quantity.MilliValue``/``Value``) and the ratio is an exact :class:`fractions.Fraction`,
so no float ever enters the quota math. The functions here are pure; :func:`fair_sharing_tree` builds the
tree from a Snapshot and memoises it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import field
from decimal import Decimal
from enum import StrEnum
from fractions import Fraction
from typing import Any

from kueuediag.analysis.kueue_config import CONFIG_KEY, kueue_config
from kueuediag.analysis.quota_tree import quota_tree, workload_usage_by_cq
from kueuediag.analysis.versions import Version, has_behaviour
from kueuediag.analysis.well_formed import require_well_formed, workloads_in_cluster_queue
from kueuediag.quantity import ZERO
from kueuediag.records import dataclass
from kueuediag.snapshot.kueue import ClusterQueueView, CohortView, FlavorResource, Quota, kueue_index
from kueuediag.snapshot.model import Snapshot

MAX_INT64 = 9223372036854775807
"""What Kueue writes to status.fairSharing.weightedShare for a zero-weight node that borrows."""

NodeKey = tuple[str, str]
"""("ClusterQueue" | "Cohort", name)"""


# --- integer amounts like Kueue's resources.Amount ---------------------------------------------------------


def kueue_amount(resource: str, quantity: Decimal) -> int:
    """A quantity as Kueue's int64 amount: millicores for cpu, units (rounded up) for everything else."""
    value = quantity * 1000 if resource == "cpu" else quantity
    return math.ceil(value)


def _go_div(a: int, b: int) -> int:
    """Go's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


# --- the tree ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QuotaAmounts:
    """One (flavor, resource) quota of a node, in Kueue amounts."""

    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass
class FSNode:
    """A ClusterQueue or Cohort in the fair-sharing tree."""

    kind: str
    name: str
    parent: str | None
    quotas: dict[FlavorResource, QuotaAmounts]
    weight: Decimal
    reported: int | None
    """status.fairSharing.weightedShare as found in the snapshot (None: absent)"""
    own_usage: dict[FlavorResource, int] = field(default_factory=dict)
    """ClusterQueues only: reserved quota"""
    subtree_quota: dict[FlavorResource, int] = field(default_factory=dict)
    usage: dict[FlavorResource, int] = field(default_factory=dict)
    children: list[NodeKey] = field(default_factory=list)
    in_cycle: bool = False

    @property
    def key(self) -> NodeKey:
        return (self.kind, self.name)

    def local_quota(self, fr: FlavorResource) -> int:
        q = self.quotas.get(fr)
        if q is not None and q.lending_limit is not None:
            return max(0, self.subtree_quota.get(fr, 0) - q.lending_limit)
        return 0


@dataclass(frozen=True)
class DRS:
    """The dominant resource share of one node, with everything needed to explain it."""

    node: NodeKey
    has_parent: bool
    borrowing: bool
    borrowed: Mapping[str, int]
    """per resource name, summed across flavors (Kueue amounts)"""
    lendable: Mapping[str, int]
    """per resource name, what the parent could lend (Kueue amounts)"""
    ratio: Fraction
    """unweighted per-mille share of the dominant resource (0 when not borrowing or nothing lendable)"""
    dominant_resource: str | None
    weight: Decimal
    legacy_ratio: int
    """the integer ratio Kueue <= v0.13.2 computed (-1 when borrowing only unlendable resources)"""

    @property
    def zero_weight_borrows(self) -> bool:
        return self.weight == 0 and self.borrowing

    @property
    def weighted_share(self) -> Fraction | None:
        """The precise weighted share; None stands for +Inf (zero weight while borrowing)."""
        if self.zero_weight_borrows:
            return None
        if self.ratio == 0:
            return Fraction(0)
        return self.ratio / Fraction(self.weight)

    def status_value(self, rounding: ShareRounding | None = None) -> int:
        """The weightedShare Kueue writes to status with the given arithmetic (default: precise, >= v0.14)."""
        mode = rounding or ShareRounding.PRECISE
        if mode is ShareRounding.PRECISE or mode is ShareRounding.UNKNOWN:
            ws = self.weighted_share
            return MAX_INT64 if ws is None else math.ceil(ws)
        if not self.borrowing:
            return 0
        if self.weight == 0:
            return MAX_INT64
        milli = math.ceil(self.weight * 1000)
        legacy = _go_div(self.legacy_ratio * 1000, milli)
        if mode is ShareRounding.INTEGER_MIN1:
            return max(1, legacy)
        return legacy

    def explain(self) -> str:
        """`borrows 4 cpu of 40 lendable → 10%` in plain words."""
        if not self.has_parent:
            return "not in a cohort (share is always 0)"
        if not self.borrowing:
            return "not borrowing (usage within its quota)"
        if self.dominant_resource is None:
            res = ", ".join(f"{r} {fmt_amount(r, b)}" for r, b in sorted(self.borrowed.items()))
            return f"borrows {res}, but the cohort lends none of it (ratio 0)"
        r = self.dominant_resource
        return (f"borrows {fmt_amount(r, self.borrowed[r])} {r} of {fmt_amount(r, self.lendable[r])} "
                f"lendable → {fmt_fraction(self.ratio / 10)}%")


class ShareRounding(StrEnum):
    """How a Kueue release turns the DRS into status.fairSharing.weightedShare (kueue-facts §4.1)."""

    INTEGER = "integer"
    """<= v0.12.7 and v0.13.0–v0.13.2: `b*1000/lr`, then `drs*1000/weight.MilliValue()`, truncated
    (the rounding bug)"""
    INTEGER_MIN1 = "integer-min1"
    """v0.12.8+ and v0.13.3–v0.13.4 (#6617 cherry-picks #6619/#6620): as above but any borrowing node >= 1"""
    PRECISE = "precise"
    """v0.13.5+ (#6994) and v0.14.0+ (#6925): float DRS, status = ceil"""
    UNKNOWN = "unknown"


def fmt_amount(resource: str, amount: int) -> str:
    if resource == "cpu":
        return f"{amount}m" if amount % 1000 else str(amount // 1000)
    return str(amount)


def fmt_fraction(x: Fraction | None) -> str:
    """Up to 4 significant decimals, never scientific: 100, 6.25, 0.0025."""
    if x is None:
        return "+Inf"
    if x.denominator == 1:
        return str(x.numerator)
    value = Decimal(x.numerator) / Decimal(x.denominator)
    if abs(value) >= 1:
        text = f"{value:.2f}"
    else:
        text = f"{value:.3g}" if abs(value) >= Decimal("0.0001") else f"{value:.2e}"
        if "e" in text:
            return text
    return text.rstrip("0").rstrip(".") if "." in text else text


class FairShareTree:
    """ClusterQueues and Cohorts with Kueue's SubtreeQuota/usage accumulation."""

    def __init__(self) -> None:
        self.nodes: dict[NodeKey, FSNode] = {}
        self._finalized = False

    # --- building ------------------------------------------------------------------------------------
    def add_cluster_queue(
        self,
        name: str,
        cohort: str | None,
        quotas: Mapping[FlavorResource, QuotaAmounts],
        usage: Mapping[FlavorResource, int],
        weight: Decimal = Decimal(1),
        reported: int | None = None,
    ) -> None:
        self.nodes[("ClusterQueue", name)] = FSNode(
            kind="ClusterQueue", name=name, parent=cohort or None, quotas=dict(quotas), weight=weight,
            reported=reported, own_usage=dict(usage))
        self._finalized = False

    def add_cohort(
        self,
        name: str,
        parent: str | None = None,
        quotas: Mapping[FlavorResource, QuotaAmounts] | None = None,
        weight: Decimal = Decimal(1),
        reported: int | None = None,
    ) -> None:
        self.nodes[("Cohort", name)] = FSNode(
            kind="Cohort", name=name, parent=parent or None, quotas=dict(quotas or {}), weight=weight,
            reported=reported)
        self._finalized = False

    def finalize(self) -> FairShareTree:
        """Create implicit cohorts, link children, detect cycles, accumulate SubtreeQuota and usage."""
        for node in list(self.nodes.values()):
            if node.parent and ("Cohort", node.parent) not in self.nodes:
                self.nodes[("Cohort", node.parent)] = FSNode(
                    kind="Cohort", name=node.parent, parent=None, quotas={}, weight=Decimal(1), reported=None)
        for node in self.nodes.values():
            node.children = []
        for key, node in sorted(self.nodes.items()):
            if node.parent:
                self.nodes[("Cohort", node.parent)].children.append(key)
        for node in self.nodes.values():
            node.in_cycle = self._in_cycle(node)
        for root in self.roots():
            self._accumulate(root)
        self._finalized = True
        return self

    def _in_cycle(self, node: FSNode) -> bool:
        seen: set[str] = set()
        current: FSNode | None = node
        while current is not None and current.parent:
            if current.parent in seen:
                return True
            seen.add(current.parent)
            current = self.nodes.get(("Cohort", current.parent))
        return False

    def roots(self) -> list[FSNode]:
        return [n for _, n in sorted(self.nodes.items()) if not n.parent and not n.in_cycle]

    def _accumulate(self, node: FSNode) -> None:
        if node.kind == "ClusterQueue":
            node.subtree_quota = {fr: q.nominal for fr, q in node.quotas.items()}
            node.usage = dict(node.own_usage)
            return
        node.subtree_quota = {fr: q.nominal for fr, q in node.quotas.items()}
        node.usage = {}
        for ckey in node.children:
            child = self.nodes[ckey]
            self._accumulate(child)
            for fr, cq in child.subtree_quota.items():
                node.subtree_quota[fr] = node.subtree_quota.get(fr, 0) + cq - child.local_quota(fr)
            for fr, cu in child.usage.items():
                node.usage[fr] = node.usage.get(fr, 0) + max(0, cu - child.local_quota(fr))

    # --- navigation -----------------------------------------------------------------------------------
    def parent_of(self, node: FSNode) -> FSNode | None:
        return self.nodes.get(("Cohort", node.parent)) if node.parent else None

    def root_of(self, node: FSNode) -> FSNode:
        current = node
        seen = {current.key}
        while (p := self.parent_of(current)) is not None and p.key not in seen:
            seen.add(p.key)
            current = p
        return current

    def potential_available(self, node: FSNode, fr: FlavorResource) -> int:
        """Kueue's potentialAvailable: the most this node could use of fr, assuming no usage elsewhere."""
        parent = self.parent_of(node)
        if parent is None:
            return node.subtree_quota.get(fr, 0)
        available = node.local_quota(fr) + self.potential_available(parent, fr)
        q = node.quotas.get(fr)
        if q is not None and q.borrowing_limit is not None:
            available = min(node.subtree_quota.get(fr, 0) + q.borrowing_limit, available)
        return available

    def lendable(self, node: FSNode) -> dict[str, int]:
        """calculateLendable(node): per resource, Σ over the root's flavors of potentialAvailable."""
        out: dict[str, int] = {}
        for fr in sorted(self.root_of(node).subtree_quota):
            out[fr[1]] = out.get(fr[1], 0) + self.potential_available(node, fr)
        return out

    # --- the share ------------------------------------------------------------------------------------
    def drs(self, kind: str, name: str) -> DRS:
        if not self._finalized:
            self.finalize()
        node = self.nodes[(kind, name)]
        parent = self.parent_of(node)
        empty = DRS(node=node.key, has_parent=parent is not None and not node.in_cycle, borrowing=False,
                    borrowed={}, lendable={}, ratio=Fraction(0), dominant_resource=None, weight=node.weight,
                    legacy_ratio=0)
        if parent is None or node.in_cycle:
            return empty
        borrowed: dict[str, int] = {}
        for fr, quota in node.subtree_quota.items():
            amount = node.usage.get(fr, 0) - quota
            if amount > 0:
                borrowed[fr[1]] = borrowed.get(fr[1], 0) + amount
        if not borrowed:
            return empty
        lendable = self.lendable(parent)
        best, dominant = Fraction(0), None
        legacy = -1
        for r in sorted(borrowed):
            lr = lendable.get(r, 0)
            if lr <= 0:
                continue
            ratio = Fraction(borrowed[r] * 1000, lr)
            if ratio > best:  # sorted: ties keep the alphabetically first
                best, dominant = ratio, r
            lratio = _go_div(borrowed[r] * 1000, lr)
            legacy = max(legacy, lratio)
        return DRS(node=node.key, has_parent=True, borrowing=True, borrowed=borrowed,
                   lendable={r: lendable.get(r, 0) for r in borrowed}, ratio=best, dominant_resource=dominant,
                   weight=node.weight, legacy_ratio=legacy)

    def all_shares(self) -> dict[NodeKey, DRS]:
        if not self._finalized:
            self.finalize()
        return {key: self.drs(*key) for key in sorted(self.nodes)}

    def members(self, root: str) -> list[NodeKey]:
        """Every node in the tree under cohort `root` (inclusive)."""
        out: list[NodeKey] = []
        stack: list[NodeKey] = [("Cohort", root)]
        while stack:
            key = stack.pop()
            if key in out or key not in self.nodes:
                continue
            out.append(key)
            stack.extend(self.nodes[key].children)
        return out


# --- versions ----------------------------------------------------------------------------------------------


def share_rounding(version: str | Version | None) -> ShareRounding:
    """Which arithmetic a Kueue release uses for weightedShare (kueue-facts §4.1; version table rows
    ``drs-precise`` and ``drs-reclamation-floor``)."""
    if has_behaviour(version, "drs-precise") is None:
        return ShareRounding.UNKNOWN
    if has_behaviour(version, "drs-precise"):
        return ShareRounding.PRECISE
    if has_behaviour(version, "drs-reclamation-floor"):
        return ShareRounding.INTEGER_MIN1
    return ShareRounding.INTEGER


# --- is fair sharing enabled? ---------------------------------------------------------------------------

@dataclass(frozen=True)
class FairSharingConfig:
    enabled: bool | None
    """None: the snapshot does not say (no manager ConfigMap)"""
    source: str
    preemption_strategies: tuple[str, ...] = ()


def fair_sharing_config(snap: Snapshot) -> FairSharingConfig:
    """`fairSharing` in the Kueue manager config: v1beta2 config: present = on; v1beta1: `enable: true`."""
    cfg = kueue_config(snap)
    if not cfg.found:
        return FairSharingConfig(None, cfg.source)
    fs = cfg.raw.get("fairSharing")
    where = f"{cfg.source} {CONFIG_KEY}"
    if fs is None:
        return FairSharingConfig(False, f"{where}: no fairSharing section")
    if not isinstance(fs, dict):
        return FairSharingConfig(True, f"{where}: fairSharing present")
    strategies = tuple(str(s) for s in fs.get("preemptionStrategies") or ())
    if "enable" in fs or str(cfg.api_version or "").endswith("/v1beta1"):
        on = fs.get("enable") is True
        shown = str(fs.get("enable")).lower()
        return FairSharingConfig(on, f"{where}: fairSharing.enable: {shown}", strategies)
    return FairSharingConfig(True, f"{where}: fairSharing section present", strategies)


# --- from a snapshot ---------------------------------------------------------------------------------------


def _quota_amounts(quotas: Mapping[FlavorResource, Quota]) -> dict[FlavorResource, QuotaAmounts]:
    """A node's quotas (as the quota tree holds them) in Kueue's int64 amounts."""
    return {
        (flavor, r): QuotaAmounts(
            nominal=kueue_amount(r, q.nominal),
            borrowing_limit=None if q.borrowing_limit is None else kueue_amount(r, q.borrowing_limit),
            lending_limit=None if q.lending_limit is None else kueue_amount(r, q.lending_limit),
        )
        for (flavor, r), q in quotas.items()
    }


def reserved_usage(snap: Snapshot, cq: ClusterQueueView) -> tuple[dict[FlavorResource, Decimal], str]:
    """Quota reserved in a ClusterQueue: status.flavorsReservation (written together with weightedShare),
    else summed over the workloads that hold a quota reservation."""
    if cq.obj.get("status", {}).get("flavorsReservation") is not None:
        return {fr: total for fr, (total, _) in cq.reservation.items()}, "status.flavorsReservation"
    require_well_formed(snap, workloads_in_cluster_queue(snap, cq.name), f"the usage of ClusterQueue {cq.name}")
    out: dict[FlavorResource, Decimal] = {}
    for _, held in workload_usage_by_cq(snap).get(cq.name, []):
        for fr, q in held.items():
            out[fr] = out.get(fr, ZERO) + q
    return out, "workloads holding QuotaReserved"


def fair_sharing_tree(snap: Snapshot) -> FairShareTree:
    """The snapshot's quota tree (:func:`kueuediag.analysis.quota_tree.quota_tree`: the same nodes, parents and
    quotas every check reads) in Kueue's int64 amounts, with weights and reported shares (memoised).

    The DRS arithmetic re-accumulates SubtreeQuota in integers on purpose: reproducing the weightedShare Kueue
    wrote needs Kueue's own rounding of every quantity, not the exact decimals of the quota tree."""

    def build() -> FairShareTree:
        idx = kueue_index(snap)
        qt = quota_tree(snap)
        tree = FairShareTree()
        for node in qt.cluster_queues.values():
            cq = idx.cluster_queues[node.name]
            usage, _ = reserved_usage(snap, cq)
            tree.add_cluster_queue(
                node.name, node.parent, _quota_amounts(node.quotas),
                {fr: kueue_amount(fr[1], q) for fr, q in usage.items()},
                weight=cq.fair_weight, reported=_reported(cq.obj))
        for node in qt.cohorts.values():
            co = idx.cohorts.get(node.name)
            tree.add_cohort(node.name, node.parent, _quota_amounts(node.quotas),
                            weight=co.fair_weight if co is not None else Decimal(1),
                            reported=_reported(co.obj) if co is not None and co.obj is not None else None)
        return tree.finalize()

    return snap.memo("fair-sharing-tree", build)


def _reported(obj: dict[str, Any] | None) -> int | None:
    fs = ((obj or {}).get("status") or {}).get("fairSharing")
    if not isinstance(fs, dict) or fs.get("weightedShare") is None:
        return None
    try:
        return int(fs["weightedShare"])
    except (TypeError, ValueError):
        return None


def view_of(snap: Snapshot, key: NodeKey) -> ClusterQueueView | CohortView | None:
    idx = kueue_index(snap)
    return idx.cluster_queues.get(key[1]) if key[0] == "ClusterQueue" else idx.cohorts.get(key[1])
