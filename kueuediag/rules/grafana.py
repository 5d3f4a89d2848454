"""The Grafana dashboard: one panel per alert signal, plus fragmentation and heads from `health -o openmetrics`."""

from __future__ import annotations

from typing import Any

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}

PANELS: tuple[tuple[str, str, str], ...] = (
    ("Guarantee violation: room in unused nominal quota (best flavor) with pending demand",
     "(kueuediag:kueue_cluster_queue_room:max > 0)"
     " and on (cluster_queue, resource) (kueuediag:kueue_cluster_queue_resource_pending:sum > 0)", "short"),
    ("Guarantee violation duration (kueuediag health)",
     "kueuediag_cluster_queue_guarantee_violation_seconds > 0", "s"),
    ("Admissions per hour", "kueuediag:kueue_admitted_workloads:increase1h", "short"),
    ("Preemptions per hour (by preempting ClusterQueue)", "kueuediag:kueue_preempted_workloads:increase1h", "short"),
    ("Pending workloads", "kueuediag:kueue_pending_workloads:sum", "short"),
    ("Quota reserved, not admitted (admission checks)", "kueuediag:kueue_quota_reserved_not_admitted:sum", "short"),
    ("Controller up", 'sum(up{job=~"$job"})', "short"),
    ("Fragmentation (share of free accelerators in holes smaller than the common shape)",
     "kueuediag_flavor_fragmentation_ratio", "percentunit"),
    ("Pods that fit now, by size", "kueuediag_flavor_slots", "short"),
    ("Pending heads by cause (kueuediag health)", "sum by (cause) (kueuediag_pending_heads)", "short"),
)


def dashboard(controller_job: str) -> dict[str, Any]:
    panels = []
    for n, (title, expr, unit) in enumerate(PANELS):
        panels.append({
            "id": n + 1, "type": "timeseries", "title": title, "datasource": DATASOURCE,
            "gridPos": {"h": 8, "w": 12, "x": (n % 2) * 12, "y": (n // 2) * 8},
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
            "targets": [{"refId": "A", "datasource": DATASOURCE, "expr": expr,
                         "legendFormat": "{{cluster_queue}}{{flavor}} {{resource}}{{cause}}{{pod_size}}"}],
        })
    return {
        "title": "Kueue health (kueuediag)", "uid": "kueuediag-health", "schemaVersion": 39, "version": 1,
        "tags": ["kueue", "kueuediag"], "time": {"from": "now-6h", "to": "now"}, "refresh": "1m",
        "templating": {"list": [
            {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Prometheus"},
            {"name": "job", "type": "constant", "query": controller_job, "hide": 2},
        ]},
        "panels": panels,
    }
