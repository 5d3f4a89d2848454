"""Prometheus range queries for every Kueue metric the checks read, stored as OpenMetrics text.

Queries go through ``prometheus_api_client`` (imported only inside :func:`collect_metrics`), with its
transport replaced so that every answer is read within the run's one deadline and its bounds
(:data:`MAX_BODY_BYTES` per answer, :data:`MAX_SERIES` and :data:`MAX_SAMPLES` in all): left to itself the
client follows ``Retry-After: 3600`` and decodes a 20,000-series answer whatever it costs. 429 and 5xx answers are
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
from dataclasses import field
from datetime import datetime, timedelta
from typing import Any

from kueuediag.live.bounded import BodyTimeout, BodyTooLarge, backoff_delay, human_bytes, read_body, retry_after
from kueuediag.live.options import PROMETHEUS_TOKEN_ENV, LiveOptions
from kueuediag.records import dataclass

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
    """Range queries through ``prometheus_api_client.PrometheusConnect``, inside the run's bounds.

    The client's own retry adapter is replaced by :func:`_bounded_adapter`: no redirects, no retries of its own
    (a ``Retry-After: 3600`` is not slept through), and every body read in chunks against the deadline and
    :data:`MAX_BODY_BYTES` before the client decodes it. Retries of 429/5xx and connection failures happen
    here, capped by the time left.
    """

    def __init__(self, options: LiveOptions, url: str, deadline: float, sleep: Callable[[float], None],
                 clock: Callable[[], float]) -> None:
        import requests
        from prometheus_api_client import PrometheusConnect
        from prometheus_api_client.exceptions import PrometheusApiClientException

        self._requests: Any = requests
        self._api_error: type[Exception] = PrometheusApiClientException
        self.deadline = deadline
        self.request_timeout = options.request_timeout
        self.sleep = sleep
        self.clock = clock
        self.last_status = 0
        self.last_headers: dict[str, str] = {}
        # identity: a compressed body would be inflated after the size bound was checked
        headers = {"Accept": "application/json", "Accept-Encoding": "identity", **prometheus_headers(options)}
        session = requests.Session()
        session.max_redirects = 0
        if url.startswith("https://"):
            if options.prometheus_insecure:
                session.verify = False
                import urllib3

                urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
            elif options.prometheus_ca:
                session.verify = options.prometheus_ca
        self.prom: Any = PrometheusConnect(url=url, headers=headers, session=session)
        self.prom.last_body = b""
        session.mount(url, _bounded_adapter(self))  # replaces the client's retrying adapter for this URL

    def close(self) -> None:
        self.prom.close()

    def query_range(self, query: str, start: datetime, end: datetime, step: str) -> list[Any]:
        attempt = 0
        while True:
            attempt += 1
            left = self.deadline - self.clock()
            if left <= 0:
                raise PrometheusError("not collected: --timeout reached")
            per_request = min(self.request_timeout, left)
            self.last_status, self.last_headers = 0, {}
            try:
                data = self.prom.custom_query_range(query, start, end, step, timeout=per_request)
            except BodyTooLarge as exc:
                raise PrometheusError(f"an answer exceeded {human_bytes(exc.limit)} (the bound for one "
                                      "response)") from None
            except self._api_error:
                if self.last_status in RETRYABLE:
                    self._wait(attempt, self.last_headers, f"HTTP {self.last_status}")
                    continue
                raise PrometheusError(_error_text(self.last_status, self.prom.last_body)) from None
            except (BodyTimeout, self._requests.exceptions.ConnectionError, self._requests.exceptions.Timeout,
                    OSError) as exc:
                if attempt > CONNECT_RETRIES:
                    raise PrometheusError(f"cannot query Prometheus: {_short(exc)}") from None
                self._wait(attempt, None, _short(exc))
                continue
            except self._requests.exceptions.TooManyRedirects:
                raise PrometheusError(f"HTTP {self.last_status}: Prometheus answered with a redirect (give the "
                                      "final URL as --prometheus-url)") from None
            except self._requests.exceptions.RequestException as exc:
                raise PrometheusError(f"cannot query Prometheus: {_short(exc)}") from None
            except (ValueError, KeyError, TypeError):
                raise PrometheusError(f"HTTP {self.last_status}: the answer is not a Prometheus query result") \
                    from None
            return data if isinstance(data, list) else []

    def _wait(self, attempt: int, headers: dict[str, str] | None, why: str) -> None:
        asked = retry_after(headers)
        delay = backoff_delay(attempt, base=0.25, cap=8.0, asked=asked, left=self.deadline - self.clock())
        if delay is None:
            wait = f"; it asked to retry after {asked:g}s" if asked is not None else ""
            raise PrometheusError(f"not collected: --timeout reached while retrying ({why}{wait})")
        self.sleep(delay)


def _bounded_adapter(client: _Client) -> Any:
    """A requests transport adapter that reads every body within the deadline and the size bound."""
    from requests.adapters import HTTPAdapter

    class BoundedAdapter(HTTPAdapter):
        def send(self, request: Any, stream: bool = False, timeout: Any = None, verify: Any = True,
                 cert: Any = None, proxies: Any = None) -> Any:
            response = super().send(request, stream=True, timeout=timeout, verify=verify, cert=cert,
                                    proxies=proxies)
            client.last_status, client.last_headers = response.status_code, dict(response.headers)
            body = read_body(response.raw, deadline=client.clock() + min(client.request_timeout,
                                                                         client.deadline - client.clock()),
                             max_bytes=MAX_BODY_BYTES, clock=client.clock)
            response._content = body
            response._content_consumed = True
            client.prom.last_body = body
            return response

    return BoundedAdapter(max_retries=0)


def _error_text(status: int, body: bytes) -> str:
    """Prometheus' own error text from a failed answer (JSON ``error``), one line."""
    try:
        doc = json.loads(body)
    except ValueError:
        return f"HTTP {status}: the answer is not JSON"
    detail = (doc.get("error") or doc.get("errorType") if isinstance(doc, dict) else None) or "query failed"
    return f"HTTP {status}: {_short(Exception(str(detail)))}"


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
