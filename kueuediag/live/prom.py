"""Prometheus range queries for every Kueue metric the checks read, stored as OpenMetrics text.

`prometheus_api_client` is imported only inside :func:`collect_metrics`. Queries cover ``[end - since, end]``
at a fixed step (default ``since/120``, at least 30 s); several metric names go into one query
(``{__name__=~"kueue_a|kueue_b"}``) to keep the request count small. A metric that returns no series is
*missing* (e.g. ``metrics.enableClusterQueueResources`` is off, or the Kueue release predates it): that is
a manifest note, not an error. Connection, auth and query failures are manifest errors on "Prometheus
metrics", which marks the metrics part unavailable for the checks that need it.

Stored under ``metrics/prometheus.om``: OpenMetrics text, sample timestamps in seconds, ending with
``# EOF`` — the format ``promtool tsdb create-blocks-from openmetrics`` reads.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from kueuediag.live.options import PROMETHEUS_TOKEN_ENV, LiveOptions

# kueue-facts §5 (v0.19.2). Histograms are collected as _sum and _count (buckets are not needed by checks).
GAUGES_AND_COUNTERS: tuple[str, ...] = (
    "kueue_admission_attempts_total",
    "kueue_admission_cycle_preemption_skips",
    "kueue_build_info",
    "kueue_pending_workloads",
    "kueue_finished_workloads",
    "kueue_quota_reserved_workloads_total",
    "kueue_admitted_workloads_total",
    "kueue_evicted_workloads_total",
    "kueue_evicted_workloads_once_total",
    "kueue_preempted_workloads_total",
    "kueue_reserving_active_workloads",
    "kueue_admitted_active_workloads",
    "kueue_cluster_queue_status",
    "kueue_unadmitted_workloads",
    "kueue_cluster_queue_resource_reservation",
    "kueue_cluster_queue_resource_usage",
    "kueue_cluster_queue_resource_pending",
    "kueue_cluster_queue_nominal_quota",
    "kueue_cluster_queue_borrowing_limit",
    "kueue_cluster_queue_lending_limit",
    "kueue_cluster_queue_weighted_share",
    "kueue_cohort_weighted_share",
    "kueue_cohort_subtree_quota",
    "kueue_cohort_subtree_resource_reservations",
    "kueue_cohort_subtree_admitted_active_workloads",
    "kueue_cohort_info",
    "kueue_cluster_queue_info",
    "kueue_local_queue_pending_workloads",
    "kueue_local_queue_reserving_active_workloads",
    "kueue_local_queue_admitted_active_workloads",
    "kueue_local_queue_status",
    "kueue_local_queue_resource_reservation",
    "kueue_local_queue_resource_usage",
    "kueue_local_queue_unadmitted_workloads",
)
HISTOGRAMS: tuple[str, ...] = (
    "kueue_admission_attempt_duration_seconds",
    "kueue_quota_reserved_wait_time_seconds",
    "kueue_admission_wait_time_seconds",
    "kueue_admission_checks_wait_time_seconds",
    "kueue_workload_eviction_latency_seconds",
)
GATED: dict[str, str] = {
    "kueue_cluster_queue_resource_reservation": "needs metrics.enableClusterQueueResources: true",
    "kueue_cluster_queue_resource_usage": "needs metrics.enableClusterQueueResources: true",
    "kueue_cluster_queue_resource_pending": "needs metrics.enableClusterQueueResources: true (Kueue v0.18+)",
    "kueue_cluster_queue_nominal_quota": "needs metrics.enableClusterQueueResources: true",
    "kueue_cluster_queue_borrowing_limit": "needs metrics.enableClusterQueueResources: true",
    "kueue_cluster_queue_lending_limit": "needs metrics.enableClusterQueueResources: true",
    "kueue_cluster_queue_weighted_share": "needs fair sharing and metrics.enableClusterQueueResources: true",
    "kueue_cohort_weighted_share": "needs fair sharing",
    "kueue_unadmitted_workloads": "needs the UnadmittedWorkloadsObservability feature gate",
    "kueue_local_queue_unadmitted_workloads": "needs the UnadmittedWorkloadsObservability feature gate",
    "kueue_cohort_info": "needs the MetricsForCohorts feature gate (v0.18+)",
    "kueue_cluster_queue_info": "needs the MetricsForCohorts feature gate (v0.18+)",
}
BATCH = 8


def metric_names() -> list[str]:
    names = list(GAUGES_AND_COUNTERS)
    for h in HISTOGRAMS:
        names += [f"{h}_sum", f"{h}_count"]
    return names


@dataclass
class MetricsResult:
    files: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    queries: int = 0


RangeSeries = tuple[str, dict[str, str], list[tuple[float, float]]]


def step_for(options: LiveOptions) -> timedelta:
    if options.prometheus_step is not None:
        return options.prometheus_step
    return max(timedelta(seconds=30), options.since / 120)


def prometheus_headers(options: LiveOptions) -> dict[str, str]:
    headers = dict(options.prometheus_headers)
    token = os.environ.get(PROMETHEUS_TOKEN_ENV)
    if token and not any(k.lower() == "authorization" for k in headers):
        headers["Authorization"] = f"Bearer {token}"
    return headers


def collect_metrics(options: LiveOptions, start: datetime, end: datetime, deadline_seconds: float = 60.0,
                    names: Sequence[str] | None = None) -> MetricsResult:
    """Range-query `names` (default: every kueue_* metric the checks use) over [start, end]."""
    from prometheus_api_client import PrometheusConnect
    from prometheus_api_client.exceptions import PrometheusApiClientException
    from requests.exceptions import RequestException

    result = MetricsResult()
    url = (options.prometheus_url or "").rstrip("/")
    timeout = max(1, int(min(options.request_timeout, deadline_seconds)))
    try:
        prom = PrometheusConnect(url=url, headers=prometheus_headers(options) or None,
                                 disable_ssl=options.prometheus_insecure, timeout=timeout)
    except (TypeError, ValueError) as exc:
        result.errors.append(("Prometheus metrics", f"invalid --prometheus-url: {exc}"))
        return result
    if options.prometheus_ca and not options.prometheus_insecure:
        prom._session.verify = options.prometheus_ca
    step = f"{int(step_for(options).total_seconds())}s"
    wanted = list(names or metric_names())
    series: list[RangeSeries] = []
    found: set[str] = set()
    started = time.monotonic()
    try:
        for i in range(0, len(wanted), BATCH):
            if time.monotonic() - started > deadline_seconds:
                result.errors.append(("Prometheus metrics", "partly collected: --timeout reached"))
                wanted = wanted[:i]
                break
            batch = wanted[i:i + BATCH]
            query = '{__name__=~"' + "|".join(batch) + '"}'
            result.queries += 1
            data = prom.custom_query_range(query, start_time=start, end_time=end, step=step)
            for s in data or ():
                labels = {str(k): str(v) for k, v in (s.get("metric") or {}).items()}
                name = labels.pop("__name__", "")
                values = [(float(t), _float(v)) for t, v in s.get("values") or ()]
                if name and values:
                    series.append((name, labels, values))
                    found.add(name)
    except (PrometheusApiClientException, RequestException, ValueError, KeyError) as exc:
        result.errors.append(("Prometheus metrics", _short(exc)))
        return result
    finally:
        prom.close()
    for name in wanted:
        if name not in found:
            result.missing.append(name)
            why = GATED.get(name.removesuffix("_sum").removesuffix("_count"), "not exported by this Kueue")
            result.notes.append(f"metric {name} not found in Prometheus ({why})")
    result.files["metrics/prometheus.om"] = to_openmetrics(series)
    return result


def _float(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:300]


def to_openmetrics(series: Iterable[RangeSeries]) -> str:
    """OpenMetrics text via the snapshot's own writer (kueuediag.snapshot.metrics.to_openmetrics):
    families contiguous, timestamps in seconds, ending with ``# EOF``."""
    from kueuediag.snapshot.metrics import Series
    from kueuediag.snapshot.metrics import to_openmetrics as write

    types = {f"{h}_sum": "gauge" for h in HISTOGRAMS} | {f"{h}_count": "gauge" for h in HISTOGRAMS}
    return write([Series(name, tuple(sorted(labels.items())), tuple(sorted(values)))
                  for name, labels, values in series], types=types)
