"""Prometheus recording/alerting rules and a Grafana dashboard for the recipe's signals (`kueuediag rules`).

Written on Kueue's own metrics (kueue-facts §5) so the alerts work without kueuediag running, plus the
`kueuediag_*` gauges `kueuediag health -o openmetrics` exports (exact guarantee-violation durations,
fragmentation). Version notes, v0.12 – v0.19:

* since v0.16 nearly every metric has a `replica_role` label (leader/follower/standalone); the rules select
  ``replica_role!="follower"`` — which also matches series without the label (older releases) — and aggregate
  it away with ``sum by (cluster_queue)``, so one expression serves both;
* ``kueue_cluster_queue_resource_pending`` exists only since v0.18 (and, like nominal quota and reservation,
  only with ``metrics.enableClusterQueueResources: true``): the guarantee-violation rule uses it per resource
  (every requested resource must have room in some flavor; a lone pending workload's request must fit) and
  falls back (``or`` … ``unless``) to ``kueue_pending_workloads`` per ClusterQueue where it is absent; where
  kueuediag's gauge is scraped it decides alone (docs/health.md lists where the two can differ);
* ``kueue_admitted_workloads_total``, ``kueue_preempted_workloads_total{preempting_cluster_queue}``,
  ``kueue_pending_workloads{status}``, ``kueue_reserving_active_workloads`` and
  ``kueue_admitted_active_workloads`` keep their names over the whole range.
"""

from __future__ import annotations

from kueuediag.records import dataclass

KUEUE_METRICS: frozenset[str] = frozenset({
    "kueue_pending_workloads", "kueue_admitted_workloads_total", "kueue_preempted_workloads_total",
    "kueue_evicted_workloads_total", "kueue_reserving_active_workloads", "kueue_admitted_active_workloads",
    "kueue_cluster_queue_nominal_quota", "kueue_cluster_queue_resource_reservation",
    "kueue_cluster_queue_resource_pending", "kueue_admission_attempts_total", "kueue_cluster_queue_status",
    "kueue_build_info", "up",
})
"""Kueue (and scrape) series the rules and the dashboard read."""


@dataclass(frozen=True)
class Thresholds:
    guarantee_minutes: int = 15
    trickle_max_per_hour: int = 4
    pending_growth_per_hour: int = 20
    stuck_checks_minutes: int = 30
    controller_job: str = ".*kueue.*"
    """regex of the scrape job of Kueue's metrics service (`up{job=~…}`)"""
