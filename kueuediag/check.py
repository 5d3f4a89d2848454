"""The check plugin contract.

A check is one class in one module with class-level metadata and a pure `run(snapshot, target)`:

* ``code``      – stable ``KD`` + 3 digits, never reused; the hundreds digit names the family;
* ``name``      – a slug (``queue-existence``);
* ``requires``  – snapshot parts it reads; the engine skips the check with a reason when one is missing;
* ``reads``     – parts it also reads when the snapshot has them, without needing them (KD902 reads the
  controller logs when there are any): `why` runs the checks that read the logs in a second process
  (kueuediag.split_runs), so a plugin that reads them should say so — it is correct either way, only slower;
* ``needs_workload`` – whether it needs a resolved Workload (False for cluster-wide checks);
* ``default_severity`` and ``options`` (defaults of its tunables, overridable by configuration);
* ``causes``    – a plugin's own catalog entries (this check becomes their owner) and ``docs_url``, where its
  documentation lives (built-ins are documented under docs/checks/).

Codes are a prefix of 2-4 capital letters and 3 digits. ``KD`` belongs to kueuediag's built-in checks; a
third-party package picks its own prefix (``XY123``) and the registry rejects clashes.

The class docstring *is* the documentation page, with the sections listed in ``DOC_SECTIONS``.
"""

from __future__ import annotations

import inspect
import re
import textwrap
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any, ClassVar

from kueuediag.causes import Cause, register_cause
from kueuediag.causes import cause as lookup_cause
from kueuediag.models import CheckResult, Confidence, Contribution, Evidence, Finding, Fix, Severity
from kueuediag.snapshot.model import Part, Snapshot
from kueuediag.target import Target

DOC_SECTIONS = ("What it detects", "Why the workload stays pending", "Evidence", "How to fix", "Example")

FAMILIES: dict[str, str] = {
    "0": "submission",
    "1": "quota",
    "2": "placement",
    "3": "rates",
    "4": "release",
    "5": "logs",
    "6": "ordering",
    "7": "admission",
    "8": "record",
    "9": "health",
}

DOCS_BASE = "docs/checks"


class Check(ABC):
    """Base class of every check plugin (built-in or third-party)."""

    code: ClassVar[str]
    name: ClassVar[str]
    requires: ClassVar[tuple[Part, ...]] = ()
    reads: ClassVar[tuple[Part, ...]] = ()
    needs_workload: ClassVar[bool] = True
    default_severity: ClassVar[Severity] = Severity.MEDIUM
    options: ClassVar[Mapping[str, Any]] = {}
    causes: ClassVar[tuple[Cause, ...]] = ()
    docs_url: ClassVar[str | None] = None

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        merged = dict(self.options)
        for key, value in (options or {}).items():
            if key not in merged:
                raise ValueError(f"{self.code}: unknown option {key!r} (known: {', '.join(sorted(merged)) or 'none'})")
            merged[key] = type(merged[key])(value) if merged[key] is not None else value
        self.opts: dict[str, Any] = merged

    @classmethod
    def family(cls) -> str:
        if cls.prefix() != BUILTIN_PREFIX:
            return cls.prefix().lower()
        return FAMILIES.get(cls.code[2:3], "other")

    @classmethod
    def register_causes(cls) -> None:
        """Add this check's own causes (a plugin's catalog entries) to the catalog, owned by this check."""
        for c in cls.causes:
            if c.owner and c.owner != cls.code:
                raise ValueError(f"{cls.code}: cause {c.slug!r} names another owner ({c.owner})")
            register_cause(replace(c, owner=cls.code))

    @classmethod
    def prefix(cls) -> str:
        """The code's letters: ``KD`` for built-ins, a plugin's own otherwise."""
        return cls.code.rstrip("0123456789")

    @abstractmethod
    def run(self, snapshot: Snapshot, target: Target) -> CheckResult | list[Finding]:
        """Return the check's honest outcome for `target`. Pure: read only `snapshot`.

        Return :meth:`CheckResult.fired` (findings for the causes this check owns, contributions for causes other
        checks own), :meth:`CheckResult.ruled_out` with the evidence of what was looked at and found fine,
        :meth:`CheckResult.could_not_check` naming the missing input, or :meth:`CheckResult.not_applicable`
        with the reason — or raise :class:`CouldNotCheck` / :class:`NotApplicable` from deep inside.
        A bare list of findings is accepted when non-empty; an empty list is never taken as "ruled out".
        """

    # --- helpers for subclasses ------------------------------------------------------------------------
    def finding(
        self,
        cause: str,
        title: str,
        message: str,
        *,
        severity: Severity | None = None,
        confidence: Confidence = Confidence.HIGH,
        evidence: Iterable[Evidence] = (),
        remediation: Iterable[str] | None = None,
        about_target: bool = True,
        data: Mapping[str, Any] | None = None,
        fixes: Iterable[Fix] = (),
    ) -> Finding:
        """Build a Finding stamped with this check's code; remediation defaults to the cause catalog's."""
        c = lookup_cause(cause)
        return Finding(code=self.code,
            check=self.name,
            cause=cause,
            title=title,
            message=message,
            severity=self.default_severity if severity is None else severity,
            confidence=confidence,
            evidence=tuple(evidence),
            remediation=tuple(remediation) if remediation is not None else (() if fixes else (c.remediation,)),
            fixes=tuple(fixes),
            docs=self.docs_url or f"{DOCS_BASE}/{self.code}.md",
            about_target=about_target,
            data=dict(data or {}),
        )

    def result(self, findings: Iterable[Finding], *evidence: Evidence, reason: str = "") -> CheckResult:
        """Fired with `findings`, or ruled out by `evidence` when there are none.

        A finding for a cause another check owns (`Cause.owner`) is turned into a contribution to that cause, so
        the engine folds it into the owner's finding: one finding per cause.
        """
        own: list[Finding] = []
        contributions: list[Contribution] = []
        for f in findings:
            if lookup_cause(f.cause).owner in ("", self.code):
                own.append(f)
            else:
                contributions.append(as_contribution(f))
        return CheckResult.of(own, *evidence, contributions=contributions, reason=reason)

    def contribute(
        self,
        cause: str,
        title: str,
        message: str,
        *,
        severity: Severity | None = None,
        confidence: Confidence = Confidence.MEDIUM,
        evidence: Iterable[Evidence] = (),
        remediation: Iterable[str] = (),
        about_target: bool = True,
        data: Mapping[str, Any] | None = None,
    ) -> Contribution:
        """Evidence for a cause another check owns: the engine folds it into the owner's finding."""
        lookup_cause(cause)
        return Contribution(cause=cause, title=title, message=message,
            severity=self.default_severity if severity is None else severity, confidence=confidence,
            evidence=tuple(evidence), remediation=tuple(remediation), about_target=about_target,
            data=dict(data or {}),
        )

    @classmethod
    def doc(cls) -> dict[str, str]:
        """The docstring split into its fixed sections (plus 'summary')."""
        return parse_doc(inspect.getdoc(cls) or "")


def as_contribution(f: Finding) -> Contribution:
    """The contribution a finding stands for when its cause belongs to another check."""
    return Contribution(cause=f.cause, title=f.title, message=f.message, severity=f.severity,
                confidence=f.confidence, evidence=f.evidence, remediation=f.remediation,
                about_target=f.about_target, data=dict(f.data))


class CouldNotCheck(Exception):  # noqa: N818 - it names an outcome, not an error
    """Raised by a check (or a helper it calls) when an input it needs is missing, forbidden or unreadable."""

    def __init__(self, input: str, reason: str) -> None:  # noqa: A002 - the input's name
        super().__init__(f"{input}: {reason}")
        self.input = input
        self.reason = reason


class NotApplicable(Exception):  # noqa: N818 - it names an outcome, not an error
    """Raised by a check when its question does not arise for this target (e.g. the workload is not pending)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def parse_doc(text: str) -> dict[str, str]:
    sections: dict[str, str] = {}
    current = "summary"
    buf: list[str] = []
    for line in text.splitlines():
        header = line.strip().rstrip(":")
        if header in DOC_SECTIONS and line.strip().endswith(":"):
            sections[current] = textwrap.dedent("\n".join(buf)).strip()
            current, buf = header, []
        else:
            buf.append(line)
    sections[current] = textwrap.dedent("\n".join(buf)).strip()
    return sections


_CODE = re.compile(r"^[A-Z]{2,4}\d{3}$")
BUILTIN_PREFIX = "KD"


def validate_check_class(cls: type[Check]) -> None:
    """Raise ValueError when a plugin class breaks the contract (used by the registry)."""
    for attr in ("code", "name"):
        if not isinstance(getattr(cls, attr, None), str):
            raise ValueError(f"{cls.__module__}.{cls.__name__}: missing class attribute {attr!r}")
    if not _CODE.match(cls.code):
        raise ValueError(f"{cls.__name__}: code {cls.code!r} is not 2-4 capital letters + 3 digits (e.g. XY123)")
    if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", cls.name):
        raise ValueError(f"{cls.__name__}: name {cls.name!r} is not a slug")
    for attr in ("requires", "reads"):
        parts = getattr(cls, attr)
        if not isinstance(parts, tuple) or not all(isinstance(p, Part) for p in parts):
            raise ValueError(f"{cls.code} {cls.name}: {attr} must be a tuple of Part values, got {parts!r}")
    doc = cls.doc()  # parsed once: every run validates every check (it was parsed once per section)
    missing = [s for s in DOC_SECTIONS if s not in doc]
    if missing:
        raise ValueError(f"{cls.code} {cls.name}: docstring lacks section(s): {', '.join(missing)}")
