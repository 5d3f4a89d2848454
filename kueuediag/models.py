"""The result vocabulary: typed, frozen, shared by checks, engine and renderers.

Checks return :class:`Finding` objects; the engine wraps every check execution in a :class:`CheckRun` and ranks
findings into a :class:`Verdict`. Everything here is pydantic so JSON output is validated and versioned.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Iterable
from enum import Enum, IntEnum
from typing import Any, TypeVar, get_args, get_origin

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


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


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
    so the models are assembled directly (:func:`assemble`: about a third of the cost); any other value goes
    through :func:`make` (validated unless validation would keep it), so a wrong type still fails the same way."""
    if (type(source) is str and type(observed) is str and (kind is None or type(kind) is str)
            and (name is None or type(name) is str) and (namespace is None or type(namespace) is str)
            and (field is None or type(field) is str) and (expected is None or type(expected) is str)):
        ref = _object_ref(kind, name, namespace) if kind and name else None
        return assemble(Evidence, {"source": source, "ref": ref, "field": field, "observed": observed,
                                    "expected": expected})
    ref = make(ObjectRef, kind=kind, name=name, namespace=namespace) if kind and name else None
    return make(Evidence, source=source, ref=ref, field=field, observed=observed, expected=expected)


_M = TypeVar("_M", bound=BaseModel)


@functools.lru_cache(maxsize=4096)
def _object_ref(kind: str, name: str, namespace: str | None) -> ObjectRef:
    """The ObjectRef of plain strings, one instance per distinct reference (a frozen model: sharing it is safe);
    a diagnosis's evidence names the same Workload, ClusterQueue or flavor many times."""
    return assemble(ObjectRef, {"kind": kind, "name": name, "namespace": namespace})


def assemble(cls: type[_M], values: dict[str, Any], given: Iterable[str] | None = None) -> _M:
    """An instance of the frozen model `cls` holding `values`: every field of `cls`, in field order, each value
    exactly what validating it would keep. The same instance validation builds (equal, same dump, same hash),
    without running the validator: only for values the caller knows are already of their fields' types (plain
    strings, or models that were validated when they were built), never for a plugin's or the user's input.
    `given`: the fields the equivalent constructor call names (its `model_fields_set`), default all."""
    obj = _new(cls)
    _set(obj, "__dict__", values)
    _set_fields_set(obj, set(values if given is None else given))
    _set_extra(obj, None)
    _set_private(obj, None)
    return obj


def replaced(obj: _M, **update: Any) -> _M:
    """``obj.model_copy(update=update)`` for a frozen result model of this module: the same instance (a shallow
    copy of its fields with `update` applied unvalidated, the updated names added to its fields set), without
    pydantic's generic copy (the engine copies a few findings per diagnosis: fixes labelled, ranks given)."""
    cls = type(obj)
    if cls.__module__ != __name__ or cls.model_config.get("extra") != "forbid" or obj.__pydantic_private__ is not None:
        return obj.model_copy(update=update)
    return assemble(cls, {**obj.__dict__, **update}, obj.__pydantic_fields_set__ | update.keys())


_new = object.__new__
_set = object.__setattr__
# BaseModel keeps these three in slots: setting them through their slot descriptors skips the attribute lookup
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


def make(cls: type[_M], /, **values: Any) -> _M:
    """``cls(**values)`` for a result model: the same instance, assembled (:func:`assemble`) when every value
    already has its field's exact type — a ``str`` for a ``str`` field, the enum's member for an enum field, an
    instance of the field's model class, a tuple of those, a dict with ``str`` keys (copied, as validation copies
    it) — and validated as before otherwise, so a wrong value, a missing field or an unknown one fails exactly as
    the constructor fails. Fields not given take their defaults, as validation gives them.

    kueuediag's own code builds its results through here: a diagnosis whose values are all well typed then builds
    no pydantic validator at all — neither the models' core schemas (deferred, ``defer_build``) nor pydantic's
    plugin loader, which imports :mod:`importlib.metadata` and scans every installed distribution when the first
    validator is built (together ~50 ms of a small ``why`` on the VM that measures issue 11). A pydantic plugin
    observes validations; an assembled instance is not one, as for :func:`assemble` and :func:`ev`.

    Only the first :data:`ASSEMBLED_PER_CLASS` instances of a class are assembled: a validator, once built,
    validates in a third to a half of the time these tests take, so a long run (a fleet scan) validates.
    """
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = _plan(cls)
    made = _MADE.get(cls, 0)
    if plan and made < ASSEMBLED_PER_CLASS:
        _MADE[cls] = made + 1
        out: dict[str, Any] = {}
        for name, keep, default, factory in plan:
            if name in values:
                kept = keep(values[name])
                if kept is _NO:
                    return cls(**values)
                out[name] = kept
            elif factory is not None:
                out[name] = factory()
            elif default is _NO:
                return cls(**values)  # a required field is missing: the constructor says so
            else:
                out[name] = default
        if all(name in out for name in values):
            return assemble(cls, out, values)
    return cls(**values)


ASSEMBLED_PER_CLASS = 500
"""instances of one class `make` assembles before it validates: the validator's one-time build (~2 ms a class, and
pydantic's plugin scan once) is paid back after a few hundred validations"""
_MADE: dict[type[BaseModel], int] = {}
_NO: Any = object()
"""what a converter returns for a value validation would change or refuse (and a required field's default)"""
_Keep = Callable[[Any], Any]
_Plan = tuple[tuple[str, _Keep, Any, Callable[[], Any] | None], ...]
_PLANS: dict[type[BaseModel], _Plan] = {}
_SCALARS = (str, bool, int, float)
_IMMUTABLE = (str, bool, int, float, Enum, type(None))


def _plan(cls: type[BaseModel]) -> _Plan:
    """For each field of `cls`, in order: its name, its converter (:func:`_keeper`), its default (``_NO`` when it is
    required) and its default factory. Empty when a field's type or default is not covered, and for a class not
    defined here (a plugin's subclass may add validators or configuration these tests know nothing of): `make`
    then always validates."""
    if cls.__module__ != __name__:
        return ()
    plan: list[tuple[str, _Keep, Any, Callable[[], Any] | None]] = []
    for name, info in cls.model_fields.items():
        keep = _keeper(info.annotation)
        factory: Any = info.default_factory
        default = _NO if info.is_required() else info.default
        if keep is None or (factory is not None and factory not in (dict, tuple)) or (
                default is not _NO and factory is None and not (isinstance(default, _IMMUTABLE) or default == ())):
            return ()
        plan.append((name, keep, default, factory))
    return tuple(plan)


def _keeper(annotation: Any) -> _Keep | None:
    """What pydantic's (lax) validation makes of a value of exactly `annotation`'s type: the value itself (a
    scalar, an enum member, a model instance), the plain text of a ``str`` subclass, a new tuple of the kept items,
    a shallow copy of a dict with ``str`` keys (its values are ``Any``: kept as they are); ``_NO`` for any other
    value. None when `annotation`
    has no such simple reading (the field is then always validated)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is types.UnionType and len(args) == 2 and type(None) in args:
        inner = _keeper(next(a for a in args if a is not type(None)))
        return None if inner is None else (lambda v: v if v is None else inner(v))
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item = _keeper(args[0])
        if item is None:
            return None

        def keep_tuple(v: Any) -> Any:
            if type(v) is not tuple:
                return _NO
            kept = tuple(item(x) for x in v)
            return _NO if any(x is _NO for x in kept) else kept

        return keep_tuple
    if origin is dict and args == (str, Any):
        return lambda v: dict(v) if type(v) is dict and all(type(k) is str for k in v) else _NO
    if annotation is str:  # validation keeps a str subclass's (a StrEnum member's) text, as a plain str
        return lambda v: v if type(v) is str else str.__str__(v) if isinstance(v, str) else _NO
    if isinstance(annotation, type) and (annotation in _SCALARS or issubclass(annotation, (Enum, _Frozen))):
        return lambda v: v if type(v) is annotation else _NO
    return None


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
        return make(cls, outcome=Outcome.FIRED, findings=fs, contributions=cs)

    # The constructors below assemble the result when every value already has its field's exact type (Evidence
    # items, plain strings), which is what validating them would keep; other values are validated as before.
    # Every check returns one of these for every pending workload of a fleet scan.

    @classmethod
    def ruled_out(cls, *evidence: Evidence, reason: str = "") -> CheckResult:
        if not evidence:
            raise ValueError("ruled out needs the evidence that rules the cause out")
        if cls is CheckResult and type(reason) is str and all(type(e) is Evidence for e in evidence):
            return _result(Outcome.RULED_OUT, reason, evidence=evidence)
        return make(cls, outcome=Outcome.RULED_OUT, evidence=evidence, reason=reason)

    @classmethod
    def could_not_check(cls, input: str, reason: str) -> CheckResult:  # noqa: A002 - the input's name
        if cls is CheckResult and type(input) is str and type(reason) is str:
            return _result(Outcome.COULD_NOT_CHECK, reason, input=input)
        return make(cls, outcome=Outcome.COULD_NOT_CHECK, input=input, reason=reason)

    @classmethod
    def not_applicable(cls, reason: str) -> CheckResult:
        if cls is CheckResult and type(reason) is str:
            return _result(Outcome.NOT_APPLICABLE, reason)
        return make(cls, outcome=Outcome.NOT_APPLICABLE, reason=reason)

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
