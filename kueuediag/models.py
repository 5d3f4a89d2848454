"""The result vocabulary: typed, frozen, shared by checks, engine and renderers.

Checks return :class:`Finding` objects; the engine wraps every check execution in a :class:`CheckRun` and ranks
findings into a :class:`Verdict`. Every class here is a :class:`kueuediag.frozen.Record`: values of their
fields' exact types are kept as they are, anything else is validated (converted or refused) by pydantic, so JSON
output stays validated and versioned.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from enum import Enum, IntEnum
from typing import Any, TypeVar

from kueuediag.frozen import Field, Record, assemble


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
    """A check's result: one of four honest outcomes, or errored (the check itself failed).

    * ``fired``           – it found its cause (findings) or contributed evidence to another check's cause;
    * ``ruled-out``       – it looked and the cause is not there; the run carries the evidence that rules it out;
    * ``could-not-check`` – an input it needs is missing, forbidden or unreadable; the run names the input;
    * ``not-applicable``  – the question does not arise for this target (e.g. the workload is not pending);
    * ``errored``         – the check raised; the rest of the diagnosis went on.

    ``CLEAR`` and ``SKIPPED`` are the v1 names kept as aliases (JSON ``checks[].outcome`` still carries the v1
    vocabulary, see :attr:`v1`).
    """

    FIRED = "fired"
    RULED_OUT = "ruled-out"
    COULD_NOT_CHECK = "could-not-check"
    NOT_APPLICABLE = "not-applicable"
    ERRORED = "errored"
    CLEAR = "ruled-out"
    SKIPPED = "could-not-check"

    @property
    def v1(self) -> str:
        """The v1 JSON outcome (fired / clear / skipped / errored) this outcome maps onto."""
        return _V1.get(self.value, self.value)

    @property
    def label(self) -> str:
        return self.value.replace("-", " ")


_V1 = {"ruled-out": "clear", "could-not-check": "skipped", "not-applicable": "skipped"}


class _Frozen(Record):
    """A result record: frozen, no fields beyond its own (kueuediag.frozen)."""


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


def ev(
    source: str,
    observed: str,
    *,
    kind: str | None = None,
    name: str | None = None,
    namespace: str | None = None,
    field: str | None = None,
    expected: str | None = None,
) -> Evidence:
    """Shorthand for an Evidence item.

    Checks build a few dozen of these per diagnosis (`health --all-pending`: per pending workload). When every
    argument already is a plain ``str`` (or None where None is allowed), validation would return them unchanged,
    so the records are assembled directly (:func:`kueuediag.frozen.assemble`: no per-field checks); any other
    value goes through the constructors, so a wrong type still fails the same way."""
    if (type(source) is str and type(observed) is str and (kind is None or type(kind) is str)
            and (name is None or type(name) is str) and (namespace is None or type(namespace) is str)
            and (field is None or type(field) is str) and (expected is None or type(expected) is str)):
        ref = _object_ref(kind, name, namespace) if kind and name else None
        return assemble(Evidence, {"source": source, "ref": ref, "field": field, "observed": observed,
                                    "expected": expected})
    ref = ObjectRef(kind=kind, name=name, namespace=namespace) if kind and name else None
    return Evidence(source=source, ref=ref, field=field, observed=observed, expected=expected)


@functools.lru_cache(maxsize=4096)
def _object_ref(kind: str, name: str, namespace: str | None) -> ObjectRef:
    """The ObjectRef of plain strings, one instance per distinct reference (a frozen record: sharing it is safe);
    a diagnosis's evidence names the same Workload, ClusterQueue or flavor many times."""
    return assemble(ObjectRef, {"kind": kind, "name": name, "namespace": namespace})


_M = TypeVar("_M", bound=Record)


def replaced(obj: _M, **update: Any) -> _M:
    """``obj.model_copy(update=update)``: a shallow copy of its fields with `update` applied unvalidated, the
    updated names added to its fields set (the engine copies a few findings per diagnosis: fixes labelled, ranks
    given)."""
    return obj.model_copy(update=update)


class Patch(_Frozen):
    """A machine-applicable change to one named snapshot object: a JSON merge patch (RFC 7386), a JSON patch, a
    delete, or the creation of a whole object (`create`).

    The verifier applies it to a copy of the snapshot and re-diagnoses; the printed command is generated from it
    (:func:`kueuediag.fixes.command`), so what is printed and what was checked cannot disagree.
    """

    kind: str
    name: str
    namespace: str | None = None
    delete: bool = False
    merge: dict[str, Any] = Field(default_factory=dict, description="JSON merge patch; empty for a delete")
    json_ops: tuple[dict[str, Any], ...] = Field(
        default=(), description="JSON patch (RFC 6902: replace/add/remove) when a merge patch would replace a list")
    flags: tuple[str, ...] = Field(default=(), description="extra kubectl flags, e.g. --force --grace-period=0")
    create: dict[str, Any] = Field(
        default_factory=dict, description="the whole object to create (`kubectl create`); empty for a change")
    assumed: dict[str, Any] = Field(
        default_factory=dict,
        description="the object as Kueue's record describes it, used when a partial snapshot (a loose kubectl "
                    "dump) lacks it: inserted into the copy before the change is applied")


class FixStatus(str, Enum):
    """What re-evaluating the snapshot said about a fix (see kueuediag.fixes)."""

    VERIFIED = "verified"
    """the patch was applied to a copy of the snapshot and the cause went away"""
    STOP_GAP = "stop-gap"
    """relieves the symptom now (declared by the check, or the patch did not remove the cause on its own)"""
    ADVICE = "advice"
    """not a change kueuediag can apply to a snapshot (upgrade, investigate, escalate): printed as a next step"""
    UNVERIFIED = "unverified"
    """a cluster change written as text only: printed as not checked"""


class Fix(_Frozen):
    """One remediation: plain words, and a patch or command when there is one."""

    text: str
    patch: Patch | None = None
    command: str | None = None
    """a command that is not a patch (kubectl cordon, helm …); generated from `patch` when there is one"""
    status: FixStatus = FixStatus.UNVERIFIED
    stop_gap: bool = Field(default=False, description="the check calls it a stop-gap (relief, not a cure)")
    note: str = Field(default="", description="e.g. it undoes an administrator's choice, and whom to ask")
    reason: str = Field(default="", description="for a stop-gap: why it is not a cure, or why the model cannot "
                                                "simulate it")


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
    contributors: tuple[str, ...] = Field(
        default=(), description="codes of other checks whose evidence was merged into this finding"
    )
    fixes: tuple[Fix, ...] = Field(
        default=(), description="structured remediations (patches the engine verifies); see kueuediag.fixes"
    )


class Contribution(_Frozen):
    """Evidence a check adds to a cause another check owns (see docs/ranking.md, "One finding per cause").

    The engine folds it into the owner's finding; when the owner did not fire, the contribution becomes the
    finding for its cause at its own severity and confidence, stamped with the contributing check's code.
    """

    cause: str
    title: str
    message: str
    severity: Severity
    confidence: Confidence = Confidence.MEDIUM
    evidence: tuple[Evidence, ...] = ()
    remediation: tuple[str, ...] = ()
    about_target: bool = True
    data: dict[str, Any] = Field(default_factory=dict)


class CheckResult(_Frozen):
    """What `Check.run` returns: one of the four honest outcomes with what backs it.

    Build it with the class methods so the invariants hold: a ruled-out result carries evidence (what was looked
    at and found fine), could-not-check names the missing input, not-applicable says why.
    """

    outcome: Outcome
    findings: tuple[Finding, ...] = ()
    contributions: tuple[Contribution, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    reason: str = ""
    input: str | None = None

    @classmethod
    def fired(cls, findings: Iterable[Finding] = (), contributions: Iterable[Contribution] = ()) -> CheckResult:
        fs, cs = tuple(findings), tuple(contributions)
        if not fs and not cs:
            raise ValueError("a fired result needs at least one finding or contribution")
        return cls(outcome=Outcome.FIRED, findings=fs, contributions=cs)

    # The constructors below assemble the result when every value already has its field's exact type (Evidence
    # items, plain strings), which is what validating them would keep; other values are validated as before.
    # Every check returns one of these for every pending workload of a fleet scan.

    @classmethod
    def ruled_out(cls, *evidence: Evidence, reason: str = "") -> CheckResult:
        if not evidence:
            raise ValueError("ruled out needs the evidence that rules the cause out")
        if cls is CheckResult and type(reason) is str and all(type(e) is Evidence for e in evidence):
            return _result(Outcome.RULED_OUT, reason, evidence=evidence)
        return cls(outcome=Outcome.RULED_OUT, evidence=evidence, reason=reason)

    @classmethod
    def could_not_check(cls, input: str, reason: str) -> CheckResult:  # noqa: A002 - the input's name
        if cls is CheckResult and type(input) is str and type(reason) is str:
            return _result(Outcome.COULD_NOT_CHECK, reason, input=input)
        return cls(outcome=Outcome.COULD_NOT_CHECK, input=input, reason=reason)

    @classmethod
    def not_applicable(cls, reason: str) -> CheckResult:
        if cls is CheckResult and type(reason) is str:
            return _result(Outcome.NOT_APPLICABLE, reason)
        return cls(outcome=Outcome.NOT_APPLICABLE, reason=reason)

    @classmethod
    def of(cls, findings: Iterable[Finding], *evidence: Evidence, contributions: Iterable[Contribution] = (),
           reason: str = "") -> CheckResult:
        """Fired when there are findings or contributions, else ruled out by `evidence`."""
        fs, cs = tuple(findings), tuple(contributions)
        if fs or cs:
            return cls.fired(fs, cs)
        return cls.ruled_out(*evidence, reason=reason)


def _result(outcome: Outcome, reason: str, evidence: tuple[Evidence, ...] = (), input: str | None = None  # noqa: A002
            ) -> CheckResult:
    """A CheckResult assembled from already-typed values, with the fields its constructor call would name."""
    given = ("outcome", "evidence", "reason") if evidence else ("outcome", "input", "reason") if input is not None \
        else ("outcome", "reason")
    return assemble(CheckResult, {"outcome": outcome, "findings": (), "contributions": (), "evidence": evidence,
                                  "reason": reason, "input": input}, given)


class CheckRun(_Frozen):
    """One check's execution: its outcome, the findings it owns, and what backs a non-fired outcome."""

    code: str
    check: str
    family: str
    outcome: Outcome
    reason: str = ""
    duration_ms: float = 0.0
    findings: tuple[Finding, ...] = ()
    contributions: tuple[Contribution, ...] = ()
    evidence: tuple[Evidence, ...] = Field(default=(), description="ruled out: what was looked at and found fine")
    input: str | None = Field(default=None, description="could not check: the input that was missing or forbidden")


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
    snapshot_warnings: tuple[str, ...] = ()
    """input read in a degraded way: bytes replaced, files skipped, logs cut to their newest lines"""
    confidence: Confidence = Field(
        default=Confidence.HIGH,
        description="how far to trust the verdict: lowered when inputs relevant to the top cause were not seen",
    )
    unseen: tuple[str, ...] = Field(
        default=(), description="what the diagnosis could not see that matters for the verdict (one line each)"
    )
    first_fix: Fix | None = Field(default=None, description="what the verdict box tells the reader to do first")

    @property
    def primary(self) -> RankedFinding | None:
        return self.findings[0] if self.findings else None

    @property
    def ruled_out(self) -> list[CheckRun]:
        return [r for r in self.runs if r.outcome is Outcome.RULED_OUT]

    def runs_with(self, outcome: Outcome) -> list[CheckRun]:
        return [r for r in self.runs if r.outcome is outcome]
