"""Prometheus range queries for every Kueue metric the checks read, stored as OpenMetrics text.

The HTTP API (``/api/v1/query_range``) is spoken directly over urllib3, imported only inside
:func:`collect_metrics`, so that every answer is read within the run's one deadline and its bounds
(:data:`MAX_BODY_BYTES` per answer, :data:`MAX_SERIES` and :data:`MAX_SAMPLES` in all): a generic client
follows ``Retry-After: 3600`` and decodes a 20,000-series answer whatever it costs. 429 and 5xx answers are
retried until the deadline, a ``Retry-After`` longer than the time left ends the collection at once, and
connection failures are retried twice. Queries cover ``[end - since, end]``
at a fixed step (default ``since/120``, at least 30 s); several metric names go into one query
(``{__name__=~"kueue_a|kueue_b"}``) to keep the request count small. A metric that returns no series is
*missing* (e.g. ``metrics.enableClusterQueueResources`` is off, or the Kueue release predates it): that is
a manifest note, not an error. Connection, auth and query failures are manifest errors on "Prometheus
metrics", which marks the metrics part unavailable for the checks that need it.

Stored under ``metrics/prometheus.om``: OpenMetrics text, sample timestamps in seconds, ending with
``# EOF`` — the format ``promtool tsdb create-blocks-from openmetrics`` reads.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from kueuediag.live.bounded import BodyTimeout, BodyTooLarge, backoff_delay, human_bytes, read_body, retry_after
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
MAX_BODY_BYTES = 16 * 1024 * 1024
"""one query_range answer; the live fixture's whole window is ~200 KiB"""
MAX_SERIES = 10_000
"""series kept over all queries (a 1,250-node cluster with 500 queues stays far below)"""
MAX_SAMPLES = 1_000_000
"""samples kept over all queries (≈ 8,000 series at the default 120 steps)"""
CONNECT_RETRIES = 2
RETRYABLE = frozenset({429, 500, 502, 503, 504})


class PrometheusError(Exception):
    """A query that failed for good: the message is the manifest error text."""


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
                    names: Sequence[str] | None = None, *, sleep: Callable[[float], None] = time.sleep,
                    clock: Callable[[], float] = time.monotonic) -> MetricsResult:
    """Range-query `names` (default: every kueue_* metric the checks use) over [start, end] within
    `deadline_seconds` and the size bounds."""
    result = MetricsResult()
    url = (options.prometheus_url or "").rstrip("/")
    if not url.startswith(("http://", "https://")):
        result.errors.append(("Prometheus metrics", f"invalid --prometheus-url {url!r} (use http:// or https://)"))
        return result
    client = _Client(options, url, clock() + deadline_seconds, sleep, clock)
    step = f"{int(step_for(options).total_seconds())}s"
    wanted = list(names or metric_names())
    series: list[RangeSeries] = []
    found: set[str] = set()
    samples = 0
    try:
        for i in range(0, len(wanted), BATCH):
            batch = wanted[i:i + BATCH]
            query = '{__name__=~"' + "|".join(batch) + '"}'
            result.queries += 1
            try:
                data = client.query_range(query, start, end, step)
            except PrometheusError as exc:
                result.errors.append(("Prometheus metrics", str(exc) if not series else f"partly collected: {exc}"))
                wanted = wanted[:i]
                break
            for s in data:
                if not isinstance(s, dict):
                    continue
                labels = {str(k): str(v) for k, v in (s.get("metric") or {}).items()}
                name = labels.pop("__name__", "")
                values = [(float(t), _float(v)) for t, v in s.get("values") or ()]
                if not (name and values):
                    continue
                if len(series) >= MAX_SERIES or samples + len(values) > MAX_SAMPLES:
                    result.errors.append(("Prometheus metrics", f"partly collected: more than {MAX_SERIES:,} series "
                                          f"or {MAX_SAMPLES:,} samples (the bounds for one snapshot)"))
                    raise _Stop
                samples += len(values)
                series.append((name, labels, values))
                found.add(name)
    except _Stop:
        wanted = []
    except (ValueError, TypeError) as exc:
        result.errors.append(("Prometheus metrics", f"unexpected answer: {_short(exc)}"))
        return result
    finally:
        client.close()
    for name in wanted:
        if name not in found:
            result.missing.append(name)
            why = GATED.get(name.removesuffix("_sum").removesuffix("_count"), "not exported by this Kueue")
            result.notes.append(f"metric {name} not found in Prometheus ({why})")
    result.files["metrics/prometheus.om"] = to_openmetrics(series)
    return result


class _Stop(Exception):
    """The series/sample bound was reached: keep what was read, ask no more."""


class _Client:
    """GET /api/v1/query_range with bounded reads, deadline-capped retries and no redirects to follow."""

    def __init__(self, options: LiveOptions, url: str, deadline: float, sleep: Callable[[float], None],
                 clock: Callable[[], float]) -> None:
        import urllib3

        self._urllib3: Any = urllib3
        self.url = url
        self.deadline = deadline
        self.request_timeout = options.request_timeout
        self.sleep = sleep
        self.clock = clock
        self.headers = {"Accept": "application/json", **prometheus_headers(options)}
        kw: dict[str, Any] = {"retries": False}
        if url.startswith("https://"):
            if options.prometheus_insecure:
                kw["cert_reqs"] = "CERT_NONE"
                urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
            elif options.prometheus_ca:
                kw["ca_certs"] = options.prometheus_ca
        self.pool: Any = urllib3.PoolManager(**kw)

    def close(self) -> None:
        self.pool.clear()

    def query_range(self, query: str, start: datetime, end: datetime, step: str) -> list[Any]:
        params = urlencode({"query": query, "start": f"{start.timestamp():.3f}", "end": f"{end.timestamp():.3f}",
                            "step": step})
        full = f"{self.url}/api/v1/query_range?{params}"
        attempt = 0
        while True:
            attempt += 1
            left = self.deadline - self.clock()
            if left <= 0:
                raise PrometheusError("not collected: --timeout reached")
            per_request = min(self.request_timeout, left)
            try:
                resp = self.pool.request("GET", full, headers=self.headers, preload_content=False,
                                         redirect=False, timeout=self._urllib3.Timeout(total=per_request))
                body = read_body(resp, deadline=self.clock() + min(per_request, self.deadline - self.clock()),
                                 max_bytes=MAX_BODY_BYTES, clock=self.clock)
            except BodyTooLarge as exc:
                raise PrometheusError(f"an answer exceeded {human_bytes(exc.limit)} (the bound for one "
                                      "response)") from None
            except (BodyTimeout, self._urllib3.exceptions.HTTPError, OSError) as exc:
                if attempt > CONNECT_RETRIES:
                    raise PrometheusError(f"cannot query Prometheus: {_short(exc)}") from None
                self._wait(attempt, None, _short(exc))
                continue
            if resp.status in RETRYABLE:
                self._wait(attempt, dict(resp.headers), f"HTTP {resp.status}")
                continue
            return _matrix(resp.status, body)

    def _wait(self, attempt: int, headers: dict[str, str] | None, why: str) -> None:
        asked = retry_after(headers)
        delay = backoff_delay(attempt, base=0.25, cap=8.0, asked=asked, left=self.deadline - self.clock())
        if delay is None:
            wait = f"; it asked to retry after {asked:g}s" if asked is not None else ""
            raise PrometheusError(f"not collected: --timeout reached while retrying ({why}{wait})")
        self.sleep(delay)


def _matrix(status: int, body: bytes) -> list[Any]:
    try:
        doc = json.loads(body)
    except ValueError:
        raise PrometheusError(f"HTTP {status}: the answer is not JSON") from None
    if not isinstance(doc, dict):
        raise PrometheusError(f"HTTP {status}: the answer is not a JSON object")
    if status != 200 or doc.get("status") != "success":
        detail = doc.get("error") or doc.get("errorType") or "query failed"
        raise PrometheusError(f"HTTP {status}: {_short(Exception(str(detail)))}")
    data = doc.get("data") or {}
    result = data.get("result") if isinstance(data, dict) else None
    return result if isinstance(result, list) else []


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
