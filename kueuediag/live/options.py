"""Options shared by live `why` and `kueuediag snapshot` (no CLI imports: the CLI fills this in)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import field
from datetime import datetime, timedelta
from typing import Any

from kueuediag.errors import InputError
from kueuediag.records import dataclass
from kueuediag.timeutil import parse_duration

PROMETHEUS_TOKEN_ENV = "KUEUEDIAG_PROMETHEUS_TOKEN"


@dataclass
class LiveOptions:
    """How to reach the cluster and Prometheus, and how much to collect.

    `since` bounds controller logs and Prometheus range queries; `timeout` is the one overall deadline for
    the whole collection (past it, the diagnosis runs on what was collected and the manifest says what was
    not). `progress` receives short status lines (the CLI shows them in a rich status on stderr); `report`
    receives the `--verbose` request log and summary (defaults to stderr).
    """

    kubeconfig: str | None = None
    context: str | None = None
    as_user: str | None = None
    """kubectl's --as: impersonate this user"""
    as_groups: list[str] = field(default_factory=list)
    """kubectl's --as-group (repeatable)"""
    namespace: str | None = None
    kueue_namespace: str = "kueue-system"
    since: timedelta = timedelta(hours=2)
    """a timedelta, or a duration string such as "2h" / "90m" (normalised on construction)"""
    timeout: float = 60.0
    prometheus_url: str | None = None
    prometheus_headers: dict[str, str] = field(default_factory=dict)
    """NAME → VALUE; a list of "NAME=VALUE" strings (as given on the command line) is accepted too"""
    prometheus_ca: str | None = None
    prometheus_insecure: bool = False
    verbose: bool = False
    request_timeout: float = 15.0
    metrics_end: datetime | None = None
    """end of the Prometheus window (default: the capture time); set it to replay an earlier incident"""
    prometheus_step: timedelta | None = None
    """range-query step; default: since/120, at least 30s"""
    save: str | None = None
    """live `why --save PATH`: also write what was collected (directory or .tar.gz)"""
    pending_positions: bool = False
    """`snapshot --pending-positions`: also ask the visibility API for the pending positions of every queue that
    reports pending work (one request per queue); live `why` always asks about the target's two queues"""
    progress: Callable[[str], None] | None = None
    report: Callable[[str], None] | None = None
    started: float = field(default_factory=time.monotonic)
    """monotonic start of the run: `timeout` counts from here, so loading credentials and importing the
    Kubernetes client spend the same budget as the requests"""

    def __post_init__(self) -> None:
        if isinstance(self.since, str):
            self.since = parse_duration(self.since)
        if isinstance(self.prometheus_step, str):
            self.prometheus_step = parse_duration(self.prometheus_step)
        headers: Any = self.prometheus_headers
        if isinstance(headers, (list, tuple)):
            parsed: dict[str, str] = {}
            for item in headers:
                name, sep, value = str(item).partition("=")
                if not sep or not name.strip():
                    raise InputError(f"--prometheus-header takes NAME=VALUE, got {item!r}")
                parsed[name.strip()] = value.strip()
            self.prometheus_headers = parsed
        elif headers is None:
            self.prometheus_headers = {}
        if self.timeout <= 0:
            raise InputError(f"--timeout must be positive, got {self.timeout}")

    def remaining(self) -> float:
        """Seconds left of `timeout` (negative once it has passed)."""
        return self.started + self.timeout - time.monotonic()

    def say(self, text: str) -> None:
        if self.progress is not None:
            self.progress(text)

    def verbose_line(self, text: str) -> None:
        if not self.verbose:
            return
        if self.report is not None:
            self.report(text)
        else:
            print(text, file=sys.stderr)
