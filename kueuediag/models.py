"""The result vocabulary: typed, frozen, shared by checks, engine and renderers.

Checks return :class:`Finding` objects; the engine wraps every check execution in a :class:`CheckRun` and ranks
findings into a :class:`Verdict`. Everything here is pydantic so JSON output is validated and versioned.
"""

from __future__ import annotations

from enum import Enum, IntEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Severity(IntEnum):
    """How much a finding matters for the pending workload (ordered)."""

    INFO = 0
    LOW = 1
    MEDIUM = 2
    HIGH = 3
    CRITICAL = 4

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown severity {text!r} (use {', '.join(s.label for s in cls)})") from None


class Confidence(IntEnum):
    """How sure the check is that the finding explains the workload (ordered)."""

    LOW = 1
    MEDIUM = 2
    HIGH = 3

    @property
    def label(self) -> str:
        return self.name.lower()


class Layer(str, Enum):
    """Where the cause sits: what the user submitted, Kueue's queueing, or Kubernetes placement."""

    SUBMISSION = "submission"
    KUEUE = "kueue"
    KUBERNETES = "kubernetes"
    NONE = "none"


class Outcome(str, Enum):
    FIRED = "fired"
    CLEAR = "clear"
    SKIPPED = "skipped"
    ERRORED = "errored"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ObjectRef(_Frozen):
    kind: str
    name: str
    namespace: str | None = None

    def __str__(self) -> str:
        return f"{self.kind}/{self.namespace + '/' if self.namespace else ''}{self.name}"


class Evidence(_Frozen):
    """One observation that supports a finding: where it came from and what was seen vs expected."""

    source: str = Field(description="object | condition | event | metric | log | derived | manifest")
    ref: ObjectRef | None = None
    field: str | None = Field(default=None, description="field path, PromQL/metric name, or log signature")
    observed: str
    expected: str | None = None


class Finding(_Frozen):
    """A cause a check found, with evidence and what to do about it."""

    code: str
    check: str
    cause: str
    title: str
    message: str
    severity: Severity
    confidence: Confidence = Confidence.HIGH
    evidence: tuple[Evidence, ...] = ()
    remediation: tuple[str, ...] = ()
    docs: str | None = None
    about_target: bool = Field(
        default=True, description="False for cluster-wide observations that do not name the target"
    )
    data: dict[str, Any] = Field(default_factory=dict, description="structured extras (histograms, series)")


class CheckRun(_Frozen):
    """One check's execution: fired (with findings), clear, skipped (with reason) or errored."""

    code: str
    check: str
    family: str
    outcome: Outcome
    reason: str = ""
    duration_ms: float = 0.0
    findings: tuple[Finding, ...] = ()


class RankedFinding(_Frozen):
    rank: int
    layer: Layer
    finding: Finding


class WorkloadInfo(_Frozen):
    namespace: str | None
    name: str | None
    owner: ObjectRef | None = None
    local_queue: str | None = None
    cluster_queue: str | None = None
    state: str
    pending_seconds: float | None = None
    priority: int | None = None


class Verdict(_Frozen):
    workload: WorkloadInfo
    cause: str
    layer: Layer
    headline: str
    findings: tuple[RankedFinding, ...]
    runs: tuple[CheckRun, ...]
    captured_at: str | None = None
    snapshot_errors: tuple[str, ...] = ()

    @property
    def primary(self) -> RankedFinding | None:
        return self.findings[0] if self.findings else None

    @property
    def ruled_out(self) -> list[CheckRun]:
        return [r for r in self.runs if r.outcome is Outcome.CLEAR]
