"""The fleet-health checks: what `kueuediag health` looks at, each owned by one `why` check.

A health check is not a new diagnosis: it is a cluster-wide view of a signal a `why` check already owns. Each
entry names that owning check (its code selects and configures the health check too, so ``--select KD1``,
``--ignore KD201`` and ``[tool.kueuediag.checks.KD101] violation_minutes = 15`` mean the same in `why` and
`health`) and the cause slug its findings carry. The id is the health check's own stable name: the JUnit suite
name, the JSON ``check`` field and a selector for ``--select``/``--ignore``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from kueuediag.causes import BY_SLUG
from kueuediag.check import Check
from kueuediag.config import Settings
from kueuediag.engine import matches, select_checks
from kueuediag.errors import InputError
from kueuediag.records import dataclass


@dataclass(frozen=True)
class HealthCheck:
    id: str
    code: str
    """the owning `why` check (selection, options, severity overrides)"""
    cause: str
    title: str
    subject: str
    """the kind of object each test case is about: ClusterQueue, ResourceFlavor, Workload, Pod, Kueue"""
    section: str


HEALTH_CHECKS: tuple[HealthCheck, ...] = (
    HealthCheck("guarantee-violation", "KD101", "guarantee-violation",
                "pending demand fits unused nominal quota", "ClusterQueue", "queues"),
    HealthCheck("fair-sharing", "KD103", "fair-sharing-anomaly",
                "recomputed fair-sharing share vs reported weightedShare", "ClusterQueue", "queues"),
    HealthCheck("queue-inactive", "KD003", "clusterqueue-inactive",
                "ClusterQueue stopped or inactive", "ClusterQueue", "queues"),
    HealthCheck("fragmentation", "KD201", "fragmentation",
                "free accelerators exist but no node has a hole of a pending shape", "ResourceFlavor", "flavors"),
    HealthCheck("admission-trickle", "KD301", "slow-preemption",
                "admissions arrive at a regular trickle while work stays pending", "ClusterQueue", "rates"),
    HealthCheck("admission-stall", "KD301", "waiting-for-quota",
                "no admission for the stall window while work stays pending", "ClusterQueue", "rates"),
    HealthCheck("preemption-trickle", "KD302", "slow-preemption",
                "preemptions arrive at a regular trickle (victims hold quota through grace periods)",
                "ClusterQueue", "rates"),
    HealthCheck("admission-checks", "KD701", "admission-check-pending",
                "admission checks Pending or in Retry past the grace period", "Workload", "stuck"),
    HealthCheck("podsready-backoff", "KD701", "podsready-backoff",
                "workloads in PodsReady requeue backoff", "Workload", "stuck"),
    HealthCheck("deactivated", "KD006", "deactivated", "deactivated workloads", "Workload", "stuck"),
    HealthCheck("zombie-pods", "KD901", "zombie-pods", "pods terminating past their grace period", "Pod", "stuck"),
    HealthCheck("victims-holding-quota", "KD901", "stuck-preemption-target",
                "preemption victims still holding quota", "Workload", "stuck"),
    HealthCheck("gates-not-removed", "KD401", "gate-not-removed",
                "admitted workloads whose pods keep Kueue's scheduling gate", "Workload", "stuck"),
    HealthCheck("node-health", "KD901", "node-unhealthy", "nodes NotReady, cordoned or under pressure", "Node",
                "stuck"),
    HealthCheck("controller", "KD901", "controller-unhealthy", "Kueue controller health", "Kueue", "stuck"),
    HealthCheck("known-issues", "KD902", "known-issue", "known issues of the running Kueue version",
                "Kueue", "stuck"),
    HealthCheck("pending-heads", "KD002", "waiting-for-quota",
                "each ClusterQueue's pending head, diagnosed like `why`", "Workload", "heads"),
)
BY_ID: dict[str, HealthCheck] = {h.id: h for h in HEALTH_CHECKS}

HEALTH_OPTIONS: dict[str, dict[str, Any]] = {
    "admission-checks": {"minutes": 30.0},
}
"""Thresholds that belong to a health check itself (no `why` check has them), set like check options:
``[tool.kueuediag.checks.admission-checks] minutes = 10`` or ``--option admission-checks.minutes=10``."""


@dataclass(frozen=True)
class Selection:
    """The health checks to run, with the owning `why` check instances (configured options)."""

    checks: tuple[HealthCheck, ...]
    owners: Mapping[str, Check]
    classes: Mapping[str, type[Check]]
    own_options: Mapping[str, Mapping[str, Any]]
    why_settings: Settings
    """the settings as `why` understands them (health-only selectors and options removed), for the heads"""

    def enabled(self, check_id: str) -> bool:
        return any(h.id == check_id for h in self.checks)

    def option(self, check_id: str, name: str) -> Any:
        """A health check's own threshold (defaults merged with configuration and `--option`)."""
        return self.own_options[check_id][name]


def _hits(selector: str, h: HealthCheck, classes: Mapping[str, type[Check]]) -> bool:
    cls = classes.get(h.code)
    return selector in (h.id, h.cause) or (cls is not None and matches(selector, cls))


def select_health(classes: Sequence[type[Check]], settings: Settings) -> Selection:
    """Health checks chosen by ``select``/``ignore`` (code, family, check name, health-check id or cause).

    Options and unknown-selector errors go through the engine's own selection, so a typo fails the same way
    in `why` and `health`.
    """
    by_code = {c.code: c for c in classes}
    for sel in settings.select + settings.ignore:
        if sel in BY_ID or sel in BY_SLUG:
            continue
        if not any(matches(sel, c) for c in classes):
            raise InputError(f"unknown check, family, health check or cause {sel!r} in select/ignore")
    own: dict[str, dict[str, Any]] = {k: dict(v) for k, v in HEALTH_OPTIONS.items()}
    for key, values in settings.check_options.items():
        if key not in BY_ID:
            continue
        known = own.get(key, {})
        for name, value in values.items():
            if name not in known:
                raise InputError(f"{key}: unknown option {name!r} (known: {', '.join(sorted(known)) or 'none'})")
            try:
                known[name] = type(known[name])(value)
            except (TypeError, ValueError):
                raise InputError(f"{key}.{name}: expected a {type(known[name]).__name__}, got {value!r}") from None
    plain = replace(settings, select=[], ignore=[s for s in settings.ignore if s not in BY_ID],
                    check_options={k: v for k, v in settings.check_options.items() if k not in BY_ID})
    owners = {c.code: c for c in select_checks(classes, plain)}
    chosen = []
    for h in HEALTH_CHECKS:
        if settings.select and not any(_hits(s, h, by_code) for s in settings.select):
            continue
        if any(_hits(s, h, by_code) for s in settings.ignore):
            continue
        chosen.append(h)
    why = replace(plain, select=[s for s in settings.select if any(matches(s, c) for c in classes)])
    return Selection(checks=tuple(chosen), owners=owners, classes=by_code, own_options=own, why_settings=why)
