"""`health -o openmetrics`: gauges for node-exporter's textfile collector or a Pushgateway.

A cron job runs `kueuediag health -o openmetrics > /var/lib/node_exporter/kueuediag.prom` and the alert
rules of `kueuediag rules` (and the Grafana dashboard) pick the `kueuediag_*` series up next to Kueue's own
metrics. Label names follow Kueue's (`cluster_queue`, `flavor`, `resource`). Every gauge is written for
every object in scope (0 when fine), so an alert resolves when the problem goes away.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from kueuediag import __version__
from kueuediag.health.catalog import HEALTH_CHECKS
from kueuediag.health.model import HealthReport
from kueuediag.models import Severity
from kueuediag.timeutil import parse_time

METRICS: dict[str, str] = {
    "kueuediag_health_info": "kueuediag run that produced these series (value 1)",
    "kueuediag_health_snapshot_timestamp_seconds": "capture time of the snapshot the report was computed from",
    "kueuediag_health_problems": "objects in trouble per health check and severity",
    "kueuediag_cluster_queue_guarantee_violation_seconds":
        "longest time a pending workload has fit the ClusterQueue's unused nominal quota (0: none)",
    "kueuediag_cluster_queue_pending_workloads": "pending workloads in the ClusterQueue (kueuediag's count)",
    "kueuediag_cluster_queue_active": "1 when the ClusterQueue is active and not stopped",
    "kueuediag_cluster_queue_admission_stalled_seconds":
        "seconds without an admission while work is pending (0: not stalled)",
    "kueuediag_pending_heads": "pending heads (every pending workload with --all-pending) by `why` cause",
    "kueuediag_flavor_fragmentation_ratio":
        "share of free accelerators sitting in holes smaller than the most common pod shape",
    "kueuediag_flavor_free": "free units of the flavor's accelerator on usable nodes",
    "kueuediag_flavor_largest_hole": "largest free amount of the accelerator on one node",
    "kueuediag_flavor_slots": "pods of `pod_size` accelerators that fit at once",
}


def _esc(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(**kw: str) -> str:
    if not kw:
        return ""
    return "{" + ",".join(f'{k}="{_esc(v)}"' for k, v in kw.items()) + "}"


def _num(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0


def _samples(report: HealthReport) -> Iterable[tuple[str, str, float]]:
    yield "kueuediag_health_info", _labels(version=__version__, kueue_version=report.kueue_version or ""), 1
    captured = parse_time(report.captured_at)
    if captured is not None:
        yield "kueuediag_health_snapshot_timestamp_seconds", "", captured.timestamp()
    problems = Counter((i.check, i.finding.severity.label) for i in report.items if i.finding is not None)
    for h in HEALTH_CHECKS:
        if h.id in report.checks_run:
            for sev in Severity:
                yield "kueuediag_health_problems", _labels(check=h.id, severity=sev.label), problems[(h.id, sev.label)]
    for q in report.queues:
        cq = _labels(cluster_queue=q.name)
        yield "kueuediag_cluster_queue_guarantee_violation_seconds", cq, round(q.violation_seconds or 0.0, 1)
        yield "kueuediag_cluster_queue_pending_workloads", cq, q.pending_workloads
        yield "kueuediag_cluster_queue_active", cq, 1 if not q.inactive_reason else 0
    for r in report.rates:
        yield ("kueuediag_cluster_queue_admission_stalled_seconds", _labels(cluster_queue=r.cluster_queue),
               r.stalled_seconds or 0)
    heads = Counter((h.cluster_queue, h.cause) for h in report.heads)
    for (cq_name, cause), n in sorted(heads.items()):
        yield "kueuediag_pending_heads", _labels(cluster_queue=cq_name, cause=cause), n
    for f in report.flavors:
        fl = _labels(flavor=f.name, resource=f.resource)
        if f.fragmentation is not None:
            yield "kueuediag_flavor_fragmentation_ratio", fl, f.fragmentation
        yield "kueuediag_flavor_free", fl, _num(f.total_free)
        yield "kueuediag_flavor_largest_hole", fl, _num(f.largest_hole)
        for size, n in f.slots.items():
            yield "kueuediag_flavor_slots", _labels(flavor=f.name, resource=f.resource, pod_size=size), n


def _value(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def render_health_openmetrics(report: HealthReport) -> str:
    by_name: dict[str, list[str]] = {name: [] for name in METRICS}
    for name, labels, value in _samples(report):
        by_name[name].append(f"{name}{labels} {_value(value)}")
    out: list[str] = []
    for name, lines in by_name.items():
        if not lines:
            continue
        out += [f"# HELP {name} {METRICS[name]}", f"# TYPE {name} gauge", *lines]
    out.append("# EOF")
    return "\n".join(out) + "\n"
