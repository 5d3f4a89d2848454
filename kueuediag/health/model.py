"""The fleet-health report: what `kueuediag health` computed in one pass, before any rendering.

Every judgement is an :class:`Item` — one (health check, object) pair, the JUnit test case — carrying either a
:class:`~kueuediag.models.Finding` (the object is in trouble; the same vocabulary `why` uses, so severity
overrides, ``--fail-on`` and renderers treat both alike) or ``None`` with a one-line note of what was checked
and found fine. The tables (queue tree, flavors, rates, heads) are the numbers behind the items.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from kueuediag.models import Finding, Layer, ObjectRef, Severity, Verdict
from kueuediag.records import dataclass


@dataclass(frozen=True)
class Item:
    check: str
    """a health check id (kueuediag.health.catalog)"""
    ref: ObjectRef
    finding: Finding | None
    note: str = ""
    """for a healthy item: what was checked and found fine"""

    @property
    def failed(self) -> bool:
        return self.finding is not None

    @property
    def severity(self) -> Severity | None:
        return self.finding.severity if self.finding is not None else None


@dataclass(frozen=True)
class QuotaCell:
    flavor: str
    resource: str
    nominal: str
    reserved: str
    borrowed: str
    lent: str
    unused: str
    pending: str


@dataclass(frozen=True)
class QueueRow:
    """One ClusterQueue: its place in the cohort tree, quota per (flavor, resource), shares, state."""

    name: str
    cohort: str | None
    path: tuple[str, ...]
    """cohort chain, root first"""
    active: bool
    stop_policy: str
    inactive_reason: str
    quota: tuple[QuotaCell, ...]
    pending_workloads: int
    admitted_workloads: int
    violation_seconds: float | None
    """longest running guarantee violation (None: no violation)"""
    violating_workloads: int
    share_recomputed: str | None
    share_reported: int | None


@dataclass(frozen=True)
class CohortRow:
    name: str
    parent: str | None
    cluster_queues: tuple[str, ...]
    children: tuple[str, ...]
    quota: tuple[dict[str, str], ...]


@dataclass(frozen=True)
class FlavorRow:
    """One ResourceFlavor's nodes: free holes, the fragmentation figure, slots for common pod shapes."""

    name: str
    resource: str
    nodes: int
    usable_nodes: int
    total_free: str
    largest_hole: str
    histogram: dict[str, int]
    fragmentation: float | None
    """share of free units in holes smaller than `common_shape` (None: nothing free or no shape)"""
    common_shape: str | None
    slots: dict[str, int]
    """per-pod shape ('1', '2', '4', '8') → pods that fit at once"""
    topology: str | None
    domains: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class RateRow:
    cluster_queue: str
    source: str
    window_seconds: float
    admissions: int
    preemptions: int
    pending: float
    admission_sparkline: str
    preemption_sparkline: str
    trickle_gap_seconds: float | None
    preemption_gap_seconds: float | None
    stalled_seconds: float | None


@dataclass(frozen=True)
class Head:
    """A pending workload diagnosed by the same engine pass `why` runs.

    The report keeps what every format prints of it (cause, layer, headline, and the head's item); the whole
    verdict only when the output prints it (`-o json`). With `--all-pending` at the benchmark's scale the verdicts
    alone were over a gigabyte; `-o jsonl` writes each one as soon as it is diagnosed and keeps none.
    """

    cluster_queue: str
    position: int
    namespace: str
    name: str
    cause: str
    layer: Layer
    headline: str
    verdict: Verdict | None = None
    """the whole `why` verdict when the report keeps it (`build_report(keep_verdicts=True)`), else None"""


@dataclass
class HealthReport:
    captured_at: str
    source: str
    namespaces: tuple[str, ...] | None
    kueue_version: str | None
    items: list[Item] = field(default_factory=list)
    queues: list[QueueRow] = field(default_factory=list)
    cohorts: list[CohortRow] = field(default_factory=list)
    flavors: list[FlavorRow] = field(default_factory=list)
    rates: list[RateRow] = field(default_factory=list)
    heads: list[Head] = field(default_factory=list)
    checks_run: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    """health check id → why it could not run (missing snapshot part)"""
    snapshot_errors: list[str] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)

    def failures(self, gate: Severity | None = None) -> list[Item]:
        return [i for i in self.items if i.finding is not None and (gate is None or i.finding.severity >= gate)]

    def items_of(self, check: str) -> list[Item]:
        return [i for i in self.items if i.check == check]
