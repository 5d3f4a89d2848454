"""The rule groups: recording rules that normalise Kueue's series across versions, and one alert per signal."""

from __future__ import annotations

from typing import Any

from kueuediag.rules import Thresholds

LEADER = 'replica_role!="follower"'

RECORDING: dict[str, str] = {
    "kueuediag:kueue_pending_workloads:sum":
        f"sum by (cluster_queue) (kueue_pending_workloads{{{LEADER}}})",
    "kueuediag:kueue_admitted_workloads:increase1h":
        f"sum by (cluster_queue) (increase(kueue_admitted_workloads_total{{{LEADER}}}[1h]))"
        f" or (sum by (cluster_queue) (kueue_pending_workloads{{{LEADER}}}) * 0)",
    "kueuediag:kueue_preempted_workloads:increase1h":
        f'sum by (cluster_queue) (label_replace(increase(kueue_preempted_workloads_total{{{LEADER}}}[1h]),'
        f' "cluster_queue", "$1", "preempting_cluster_queue", "(.+)"))',
    "kueuediag:kueue_cluster_queue_unused_nominal_quota":
        f"sum by (cluster_queue, flavor, resource) (kueue_cluster_queue_nominal_quota{{{LEADER}}})"
        f" - (sum by (cluster_queue, flavor, resource) (kueue_cluster_queue_resource_reservation{{{LEADER}}})"
        f" or sum by (cluster_queue, flavor, resource) (kueue_cluster_queue_nominal_quota{{{LEADER}}}) * 0)",
    "kueuediag:kueue_cluster_queue_room:max":
        "max by (cluster_queue, resource) (kueuediag:kueue_cluster_queue_unused_nominal_quota)",
    "kueuediag:kueue_cluster_queue_resource_pending:sum":
        f"sum by (cluster_queue, resource) (kueue_cluster_queue_resource_pending{{{LEADER}}})",
    "kueuediag:kueue_quota_reserved_not_admitted:sum":
        f"sum by (cluster_queue) (kueue_reserving_active_workloads{{{LEADER}}})"
        f" - sum by (cluster_queue) (kueue_admitted_active_workloads{{{LEADER}}})",
}


GAUGE = "kueuediag_cluster_queue_guarantee_violation_seconds"
"""`kueuediag health -o openmetrics`: KD101's ruling per ClusterQueue (0 when KD101 rules every wait out)"""


def guarantee_expr(t: Thresholds) -> str:
    """The KueueGuaranteeViolation expression: as exact as Kueue's metrics allow, KD101's gauge where scraped.

    With ``kueue_cluster_queue_resource_pending`` (v0.18+), per (ClusterQueue, resource), ``room`` being the
    largest unused nominal quota of any flavor (nominal − reservation; quota lent to the cohort counts as
    unused, as in KD101):

    1. the resource has pending demand and room;
    2. unless some resource the pending workloads request has no room in any flavor (nothing can fit: the
       wait is not a guarantee violation, whatever the other resources show);
    3. unless exactly one workload is pending and its request (then ``resource_pending`` exactly) exceeds the
       room of some resource.

    Before v0.18 (no ``resource_pending``): pending workloads in a ClusterQueue with room in some flavor and
    resource. A ClusterQueue whose ``kueuediag_cluster_queue_guarantee_violation_seconds`` is scraped is
    decided by that gauge alone (KD101's ruling: per workload fit, flavor eligibility, Kueue's record), above
    ``guarantee_minutes``. docs/health.md lists where the metrics-only expression can differ from the gauge.
    """
    room = "kueuediag:kueue_cluster_queue_room:max"
    demand = "kueuediag:kueue_cluster_queue_resource_pending:sum"
    pending = "kueuediag:kueue_pending_workloads:sum"
    on_cq, on_res = "on (cluster_queue)", "on (cluster_queue, resource)"
    per_resource = (f"(({room} > 0) and {on_res} ({demand} > 0))"
                    f" unless {on_cq} (({demand} > 0) unless {on_res} ({room} > 0))"
                    f" unless {on_cq} (({demand} > {on_res} {room}) and {on_cq} ({pending} == 1))")
    before_v018 = f"((max by (cluster_queue) ({room}) > 0) and {on_cq} ({pending} > 0)) unless {on_cq} {demand}"
    return (f"(({per_resource}) or ({before_v018})) unless {on_cq} {GAUGE}"
            f" or (max by (cluster_queue) ({GAUGE}) > {t.guarantee_minutes * 60})")


def alerts(t: Thresholds) -> list[dict[str, Any]]:
    pending = "kueuediag:kueue_pending_workloads:sum"
    adm = "kueuediag:kueue_admitted_workloads:increase1h"
    pre = "kueuediag:kueue_preempted_workloads:increase1h"
    waited = f"min_over_time({pending}[1h]) > 0"
    return [
        {
            "alert": "KueueGuaranteeViolation",
            "expr": guarantee_expr(t),
            "for": f"{t.guarantee_minutes}m",
            "labels": {"severity": "warning", "signal": "guarantee-violation"},
            "annotations": {
                "summary": "ClusterQueue {{ $labels.cluster_queue }} has pending demand while nominal quota is unused",
                "description": (f"Pending demand with room in unused nominal quota for every requested resource "
                                f"for more than {t.guarantee_minutes}m (Kueue metrics; KD101's ruling from "
                                "kueuediag health where its gauge is scraped). "
                                "Run `kueuediag health` and `kueuediag why` on the queue's head."),
            },
        },
        {
            "alert": "KueueAdmissionTrickle",
            "expr": f"({adm} > 0) and ({adm} <= {t.trickle_max_per_hour}) and on (cluster_queue) ({waited})",
            "for": "30m",
            "labels": {"severity": "warning", "signal": "admission-trickle"},
            "annotations": {
                "summary": "ClusterQueue {{ $labels.cluster_queue }} admits only {{ $value | humanize }} workload(s)/h "
                           "while work stays pending",
                "description": "A regular trickle of admissions with a queue that never drains: slow preemption "
                               "(victims' grace periods) or a cohort kept full. See KD301 / KD302.",
            },
        },
        {
            "alert": "KueueAdmissionStall",
            "expr": f"({adm} == 0) and on (cluster_queue) ({waited})",
            "for": "30m",
            "labels": {"severity": "critical", "signal": "admission-stall"},
            "annotations": {
                "summary": "ClusterQueue {{ $labels.cluster_queue }} admitted nothing for an hour while work "
                           "is pending",
                "description": "A stuck preemption target, an unhealthy controller or an inactive queue. "
                               "See KD301, KD302, KD901.",
            },
        },
        {
            "alert": "KueuePreemptionTrickle",
            "expr": f"({pre} > 0) and ({pre} <= {t.trickle_max_per_hour}) and on (cluster_queue) ({waited})",
            "for": "30m",
            "labels": {"severity": "warning", "signal": "preemption-trickle"},
            "annotations": {
                "summary": "ClusterQueue {{ $labels.cluster_queue }} preempts only {{ $value | humanize }} "
                           "workload(s)/h "
                           "while its own work waits",
                "description": "Preemptions serialised by victims' termination grace periods (pod integration "
                               "before FastQuotaReleaseInPodIntegration). See KD302.",
            },
        },
        {
            "alert": "KueuePendingGrowth",
            "expr": f"delta({pending}[1h]) > {t.pending_growth_per_hour}",
            "for": "15m",
            "labels": {"severity": "warning", "signal": "pending-growth"},
            "annotations": {
                "summary": "Pending workloads in ClusterQueue {{ $labels.cluster_queue }} grew by "
                           "{{ $value | humanize }} "
                           "in an hour",
                "description": "Demand outruns admissions; check quota, guarantee violations and rates.",
            },
        },
        {
            "alert": "KueueControllerDown",
            "expr": f'sum(up{{job=~"{t.controller_job}"}}) == 0 or absent(up{{job=~"{t.controller_job}"}})',
            "for": "5m",
            "labels": {"severity": "critical", "signal": "controller-down"},
            "annotations": {
                "summary": "No Kueue controller-manager metrics endpoint is up",
                "description": "Nothing is admitted while the controller is down. See KD901.",
            },
        },
        {
            "alert": "KueueAdmissionChecksStuck",
            "expr": "kueuediag:kueue_quota_reserved_not_admitted:sum > 0",
            "for": f"{t.stuck_checks_minutes}m",
            "labels": {"severity": "warning", "signal": "admission-checks-stuck"},
            "annotations": {
                "summary": "{{ $value | humanize }} workload(s) in ClusterQueue {{ $labels.cluster_queue }} "
                           "hold quota but "
                           "are not admitted",
                "description": (f"Quota reserved without admission for {t.stuck_checks_minutes}m: admission checks "
                                "Pending or in Retry (ProvisioningRequests, MultiKueue). See KD701."),
            },
        },
    ]


def rule_file(t: Thresholds) -> dict[str, Any]:
    return {"groups": [
        {"name": "kueuediag.recording", "interval": "1m",
         "rules": [{"record": name, "expr": expr} for name, expr in RECORDING.items()]},
        {"name": "kueuediag.alerts", "rules": alerts(t)},
    ]}
