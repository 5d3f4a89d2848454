"""Read what Kueue recorded: every condition message it writes, classified by the catalog (v0.9 – v0.19).

Kueue's conditions, admission-check states and queue conditions are primary evidence. This module is the one
place that turns their text into structure: `kueuediag/data/messages.yaml` lists every message template Kueue
writes (learned from its source at each release tag) with a regex, the versions that write it and the cause it
maps to; checks ask this module instead of matching strings themselves.

The QuotaReserved=False message is the scheduler's own explanation. `parse_pending_message` turns it into
structured reasons without splitting blindly on ", " (taint structs and TAS exclusion lists contain commas):
each catalogued template is matched by its own regex, and whatever no template matches is kept verbatim as an
unrecognised fragment — never dropped, never guessed at.
"""

from __future__ import annotations

import re
from dataclasses import field
from decimal import Decimal
from enum import StrEnum
from functools import cache, cached_property, lru_cache
from typing import Any

from kueuediag.analysis.signatures import leading_literal, literal_prefixes, top_level_alternatives
from kueuediag.analysis.versions import Version, parse_version
from kueuediag.datafile import data_yaml
from kueuediag.quantity import QuantityError, parse_quantity
from kueuediag.records import dataclass

CATALOG_SCHEMA = "kueuediag/messages/v1"

# Conditions whose text Kueue writes itself (others on a Workload belong to other controllers). Finished carries
# the job's own message for Succeeded/Failed, so only Kueue's reasons for it are read.
KUEUE_CONDITIONS = (
    "QuotaReserved",
    "Admitted",
    "Evicted",
    "Preempted",
    "Requeued",
    "PodsReady",
    "DeactivationTarget",
    "BlockedOnPreemptionGates",
)
KUEUE_FINISHED_REASONS = ("OutOfSync",)

# A condition may carry a message written for another one: QuotaReserved flips back to False with the eviction
# message, Requeued repeats the eviction (or the workload controller's) message.
_BORROWS: dict[str, tuple[str, ...]] = {
    "QuotaReserved": ("QuotaReserved", "Evicted", "Preempted"),
    "Requeued": ("Requeued", "Evicted", "Preempted", "QuotaReserved"),
    "Evicted": ("Evicted", "QuotaReserved"),
}


class ReasonKind(StrEnum):
    """What one catalogued message (or one reason inside a pending message) says: the `kind` of the catalog's
    entries (several entries may share one), plus `other` for text no template matches."""

    INSUFFICIENT_UNUSED_QUOTA = "insufficient-unused-quota"
    EXCEEDS_MAX_QUOTA = "exceeds-max-quota"
    RESOURCE_UNAVAILABLE = "resource-unavailable"
    FLAVOR_NOT_FOUND = "flavor-not-found"
    UNTOLERATED_TAINT = "untolerated-taint"
    NODE_AFFINITY = "node-affinity"
    FLAVOR_MISSING_RESOURCE = "flavor-missing-resource"
    TOPOLOGY_NO_FIT = "topology-no-fit"
    TOPOLOGY_PARTIAL_FIT = "topology-partial-fit"
    TAS_CONFIG = "tas-config"
    LQ_MISSING = "lq-missing"
    LQ_STOPPED = "lq-stopped"
    LQ_INACTIVE = "lq-inactive"
    CQ_MISSING = "cq-missing"
    CQ_STOPPED = "cq-stopped"
    CQ_INACTIVE = "cq-inactive"
    NAMESPACE_MISMATCH = "namespace-mismatch"
    ADMISSION_GATED = "admission-gated"
    FAILED_CHECKS = "failed-checks"
    OVERLAPPING_TARGETS = "overlapping-targets"
    NO_LONGER_FITS = "no-longer-fits"
    PREEMPTION_GATED = "preemption-gated"
    WAITING_PODSREADY = "waiting-podsready"
    VALIDATION = "validation"
    PENDING_EVALUATION = "pending-evaluation"
    BYPASSED = "bypassed"
    DEACTIVATED = "deactivated"
    DRA = "dra"
    NAMESPACE_MISSING = "namespace-missing"
    NOMINATED_FLAVOR = "nominated-flavor"
    FLAVOR_NOT_ALLOWED = "flavor-not-allowed"
    SLICE_FLAVOR_PINNED = "slice-flavor-pinned"
    INTERNAL_ERROR = "internal-error"
    TAS_REPLACEMENT = "tas-replacement"
    PREEMPTING = "preempting"
    PREEMPTION_FAILED = "preemption-failed"
    OVERLAPPING_DEFERRED = "overlapping-deferred"
    VARIANT_ADMITTED = "variant-admitted"
    ADMIT_FAILED = "admit-failed"
    QUOTA_RESERVED = "quota-reserved"
    ADMITTED = "admitted"
    NO_RESERVATION = "no-reservation"
    CHECKS_PENDING = "checks-pending"
    DELAYED_TOPOLOGY = "delayed-topology"
    PODS_READY = "pods-ready"
    PODS_NOT_READY = "pods-not-ready"
    PODS_RECOVERING = "pods-recovering"
    PODSREADY_TIMEOUT = "podsready-timeout"
    PREEMPTED = "preempted"
    CHECK_RETRY = "check-retry"
    NODE_FAILURE = "node-failure"
    MANAGER_EVICTION = "manager-eviction"
    REQUEUED = "requeued"
    DEACTIVATING = "deactivating"
    FINISHED = "finished"
    CHECK_INACTIVE = "check-inactive"
    CHECK_READY = "check-ready"
    CHECK_ERROR = "check-error"
    CHECK_REJECTED = "check-rejected"
    QUEUE_ACTIVE = "queue-active"
    LQ_CQ_INACTIVE = "lq-cq-inactive"
    CQ_TERMINATING = "cq-terminating"
    OTHER = "other"


@dataclass(frozen=True)
class CatalogEntry:
    """One message template Kueue writes (see the header of kueuediag/data/messages.yaml)."""

    id: str
    condition: str
    status: str
    reasons: tuple[str, ...]
    part: str
    kind: ReasonKind
    cause: str
    template: str
    regex: str
    """the pattern's source text; `pattern` compiles it on first use"""
    example: str
    source: str
    since: str
    until: str
    absent: tuple[str, ...] = ()
    note: str = ""

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        """The compiled pattern, compiled on first use: a run matches messages against a few of the ~130
        templates, and compiling all of them was ~10 ms of a small `why` (issue 11, cold start)."""
        return re.compile(self.regex)

    @cached_property
    def _needle(self) -> tuple[str, ...] | str:
        """What every match starts with: the prefixes of an anchored pattern (a tuple), else a literal every
        match starts with ("" when none is known)."""
        starts = literal_prefixes(self.regex)
        if starts is not None:
            return starts
        alternatives = top_level_alternatives(self.regex)
        return leading_literal(alternatives[0]) if len(alternatives) == 1 else ""

    def may_match(self, text: str) -> bool:
        """False when no match is possible: `text` lacks the literal text every match starts with (so is true of
        most templates, for any one message), and the pattern need not be compiled or run."""
        needle = self._needle
        return text.startswith(needle) if isinstance(needle, tuple) else needle in text

    def search(self, text: str) -> re.Match[str] | None:
        """`pattern.search(text)`, the pattern compiled and run only when `may_match`."""
        return self.pattern.search(text) if self.may_match(text) else None

    def exists_in(self, version: str | Version | None) -> bool | None:
        """Whether Kueue `version` (``v0.15.2``, ``v0.15``) writes this message; None when the version is unknown."""
        v = version if isinstance(version, Version) else parse_version(version)
        lo, hi = parse_version(self.since), parse_version(self.until)
        if v is None or lo is None or hi is None:
            return None
        return lo.line <= v.line <= hi.line and f"v{v.major}.{v.minor}" not in self.absent

    @property
    def versions(self) -> str:
        text = self.since if self.since == self.until else f"{self.since} - {self.until}"
        return text + (f" (not {', '.join(self.absent)})" if self.absent else "")


def _entry(raw: dict[str, Any]) -> CatalogEntry:
    versions = raw.get("versions") or {}
    return CatalogEntry(
        id=str(raw["id"]),
        condition=str(raw["condition"]),
        status=str(raw["status"]),
        reasons=tuple(str(r) for r in raw.get("reasons") or ()),
        part=str(raw["part"]),
        kind=ReasonKind(str(raw["kind"])),
        cause=str(raw["cause"]),
        template=str(raw["template"]),
        regex=str(raw["pattern"]),
        example=str(raw["example"]),
        source=str(raw["source"]),
        since=str(versions["since"]),
        until=str(versions["until"]),
        absent=tuple(str(a) for a in versions.get("absent") or ()),
        note=str(raw.get("note") or ""),
    )


@cache
def catalog() -> tuple[CatalogEntry, ...]:
    """Every catalogued message, in file order (loaded once)."""
    doc = data_yaml("messages.yaml")
    if not isinstance(doc, dict) or doc.get("schema") != CATALOG_SCHEMA:
        raise ValueError(f"kueuediag/data/messages.yaml: schema is not {CATALOG_SCHEMA}")
    return tuple(_entry(raw) for raw in doc["entries"])


@cache
def catalog_versions() -> tuple[str, ...]:
    return tuple(str(v) for v in data_yaml("messages.yaml")["versions"])


def entry(entry_id: str) -> CatalogEntry:
    for e in catalog():
        if e.id == entry_id:
            return e
    raise KeyError(entry_id)


def _entries(part: str, conditions: tuple[str, ...] = ("QuotaReserved",)) -> tuple[CatalogEntry, ...]:
    return tuple(e for e in catalog() if e.part == part and e.condition in conditions)


# --- the QuotaReserved=False message -------------------------------------------------------------------------


@dataclass(frozen=True)
class Reason:
    """One reason from a pending message."""

    kind: ReasonKind
    """the catalog entry's kind (insufficient-unused-quota, exceeds-max-quota, resource-unavailable, lq-missing,
    cq-inactive, namespace-mismatch, admission-gated, topology-no-fit, tas-config, validation, dra, ...), or
    `other` for text no catalogued template matches"""
    text: str
    pod_set: str | None = None
    resource: str | None = None
    flavor: str | None = None
    amount: Decimal | None = None
    """'N more needed' / the request"""
    capacity: Decimal | None = None
    """maximum capacity in exceeds-max-quota"""
    name: str | None = None
    """the queue/topology/taint/gate the reason names"""
    extra: dict[str, str] = field(default_factory=dict)
    entry_id: str | None = None
    """the catalog entry that matched (None for `other`)"""
    cause: str | None = None
    """the cause the catalog maps the entry to"""

    @property
    def recognised(self) -> bool:
        return self.entry_id is not None


@dataclass(frozen=True)
class PendingMessage:
    raw: str
    reasons: tuple[Reason, ...]
    preempting: int | None = None
    """N in 'Pending the preemption of N workload(s)'"""
    preemption_failed: int | None = None

    def of(self, *kinds: ReasonKind) -> list[Reason]:
        return [r for r in self.reasons if r.kind in kinds]

    def has(self, *kinds: ReasonKind) -> bool:
        return any(r.kind in kinds for r in self.reasons)

    @property
    def unrecognised(self) -> list[Reason]:
        """Fragments no catalogued template matches, verbatim."""
        return [r for r in self.reasons if not r.recognised]


def _q(text: str) -> Decimal | None:
    try:
        return parse_quantity(text.strip())
    except QuantityError:
        return None


_PODSET = re.compile(r"couldn't assign flavors to pod set (?P<ps>[^:]+): ")
_EXTRA_GROUPS = ("previous", "unit", "total", "excluded", "fit", "level")


def _reason(e: CatalogEntry, m: re.Match[str], pod_set: str | None) -> Reason:
    gd = m.groupdict()
    return Reason(
        kind=e.kind,
        text=m.group(0),
        pod_set=gd.get("pod_set") or pod_set,
        resource=gd.get("resource"),
        flavor=gd.get("flavor"),
        amount=_q(gd["amount"]) if gd.get("amount") else None,
        capacity=_q(gd["capacity"]) if gd.get("capacity") else None,
        name=gd.get("name"),
        extra={k: v for k, v in gd.items() if k in _EXTRA_GROUPS and v is not None},
        entry_id=e.id,
        cause=e.cause,
    )


@lru_cache(maxsize=8192)
def parse_pending_message(message: str) -> PendingMessage:
    """Structured reasons from a QuotaReserved=False (or Pending event) message. Cached (the result is frozen):
    several checks read the same Workload's message, and a big cluster repeats few distinct messages."""
    raw = message or ""
    text = raw.strip()
    counts: dict[str, int] = {}
    for e in _entries("suffix"):
        m = e.search(text)
        if m:
            counts[e.kind] = int(m.group("amount"))
            text = text[: m.start()] + text[m.end() :]
    reasons: list[Reason] = []
    for e in _entries("whole"):
        wm = e.search(text)
        if wm:
            reasons.append(_reason(e, wm, None))
    # eviction messages: QuotaReserved flips back to False carrying the Evicted message
    if not reasons:
        for e in (*_entries("condition", ("Evicted", "Preempted")),):
            em = e.search(text)
            if em:
                reasons.append(_reason(e, em, None))
                break
    # pod-set sections: "couldn't assign flavors to pod set main: r1, r2; couldn't assign flavors to pod set w: r3"
    starts = list(_PODSET.finditer(text))
    sections: list[tuple[str | None, str]] = []
    if starts:
        for i, sm in enumerate(starts):
            end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
            sections.append((sm.group("ps").strip(), text[sm.end() : end].rstrip("; ")))
    elif not reasons:
        sections.append((None, text))
    flavor_entries = _entries("flavor")
    for ps, body in sections:
        spans: list[tuple[int, int]] = []
        found: list[tuple[int, Reason]] = []
        for e in flavor_entries:
            if not e.may_match(body):
                continue
            for fm in e.pattern.finditer(body):
                if any(s <= fm.start() < t for s, t in spans):
                    continue  # an earlier (more specific) template already explains this text
                found.append((fm.start(), _reason(e, fm, ps)))
                spans.append((fm.start(), fm.end()))
        reasons += [r for _, r in sorted(found, key=lambda x: x[0])]  # in the order Kueue wrote them
        leftover = _leftover(body, spans)
        if leftover:
            reasons.append(Reason(kind=ReasonKind.OTHER, text=leftover, pod_set=ps))
    return PendingMessage(
        raw=raw,
        reasons=tuple(reasons),
        preempting=counts.get("preempting"),
        preemption_failed=counts.get("preemption-failed"),
    )


def _leftover(body: str, spans: list[tuple[int, int]]) -> str:
    """What of a pod set's reason list no template matched (separators and whitespace removed)."""
    keep = [ch if not any(s <= i < t for s, t in spans) else "\0" for i, ch in enumerate(body)]
    pieces = [p.strip(" ,;.") for p in "".join(keep).split("\0")]
    return ", ".join(p for p in pieces if p)


# --- any condition Kueue writes --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Classified:
    """One recorded condition (or check state) read against the catalog."""

    condition: str
    status: str
    reason: str
    message: str
    entries: tuple[CatalogEntry, ...]
    unrecognised: tuple[str, ...]
    """fragments of the message no catalogued template explains, verbatim"""

    @property
    def recognised(self) -> bool:
        return not self.unrecognised

    @property
    def causes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(e.cause for e in self.entries))

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(e.kind for e in self.entries))


def classify(condition: str, message: str, *, reason: str = "", status: str = "") -> Classified:
    """Read one recorded message: the catalog entries it matches and the fragments it does not.

    `condition` is a Workload condition type, ``AdmissionCheck`` for `status.admissionChecks[].message`, or
    ``LocalQueue.Active`` / ``ClusterQueue.Active``. An empty message is trivially recognised; text Kueue does
    not write itself (see `is_kueue_text`) is matched when it can be, but never reported as unrecognised.
    """
    text = (message or "").strip()
    if not text:
        return Classified(condition, status, reason, message or "", (), ())
    if condition == "QuotaReserved" and status != "True":
        pm = parse_pending_message(text)
        found = tuple(entry(r.entry_id) for r in pm.reasons if r.entry_id is not None)
        found += tuple(e for e in _entries("suffix") if e.kind in _suffix_kinds(pm))
        return Classified(condition, status, reason, message, tuple(dict.fromkeys(found)),
                          tuple(r.text for r in pm.unrecognised))
    pool = [e for e in catalog() if e.condition in _BORROWS.get(condition, (condition,)) and e.part != "suffix"]
    same = [e for e in pool if e.condition == condition and (not status or e.status == status)]
    for candidates in (same, pool):
        for e in candidates:
            if e.part != "fragment" and e.search(text):
                parts = tuple(f for f in pool if f.part == "fragment" and f.search(text))
                return Classified(condition, status, reason, message, (e, *parts), ())
    if condition in ("Requeued", "Evicted"):
        pm = parse_pending_message(text)
        if pm.reasons and not pm.unrecognised:
            found = tuple(entry(r.entry_id) for r in pm.reasons if r.entry_id is not None)
            return Classified(condition, status, reason, message, tuple(dict.fromkeys(found)), ())
    unknown = (text,) if is_kueue_text(condition, reason) else ()
    return Classified(condition, status, reason, message, (), unknown)


def _suffix_kinds(pm: PendingMessage) -> set[str]:
    kinds = set()
    if pm.preempting is not None:
        kinds.add("preempting")
    if pm.preemption_failed is not None:
        kinds.add("preemption-failed")
    return kinds


def is_kueue_text(condition: str, reason: str = "") -> bool:
    """Whether Kueue writes the message of this condition (so an unmatched one is news, not noise).

    Admission-check messages are not: third-party check controllers write them, and Kueue's own
    ProvisioningRequest controller copies the cluster autoscaler's text into them.
    """
    if condition in KUEUE_CONDITIONS or condition in ("LocalQueue.Active", "ClusterQueue.Active"):
        return True
    return condition == "Finished" and reason in KUEUE_FINISHED_REASONS


def first_of(condition: str, message: str, *kinds: str) -> re.Match[str] | None:
    """The first match of a catalogued `condition` template of one of `kinds` in `message` (named groups)."""
    for e in catalog():
        if e.condition == condition and e.kind in kinds:
            m = e.search(message or "")
            if m:
                return m
    return None


# --- helpers the checks share -------------------------------------------------------------------------------------

_CHECK_NAME = re.compile(r"\"(?P<name>[^\"]+)\"(?: \([^)]*\))?|(?P<bare>[A-Za-z0-9][A-Za-z0-9.\-]*)")


def rejected_checks(message: str) -> list[str]:
    """AdmissionCheck names a deactivation or eviction message says rejected the workload.

    v0.19 writes `AdmissionCheck(s) in Rejected state: "a" (msg); "b"`; v0.9 - v0.17 wrote
    `Admission check(s): [a b], were rejected`; both may follow `The workload is deactivated due to `.
    """
    return checks_in_state(message, "Rejected")


def checks_in_state(message: str, state: str) -> list[str]:
    """AdmissionCheck names an eviction or deactivation message lists in `state` (Rejected or Retry)."""
    text = message or ""
    m = re.search(r"AdmissionChecks? in " + re.escape(state) + r" state: (?P<checks>.*)$", text)
    if m:
        return [n.group("name") or n.group("bare") or "" for n in _CHECK_NAME.finditer(m.group("checks"))
                if n.group("name") or (n.group("bare") and not n.start())]
    m = re.search(r"Admission check\(s\): \[?(?P<checks>[^\]]*?)\]?, were rejected", text) if state == "Rejected" \
        else None
    if m:
        return [n for n in re.split(r"[\s,]+", m.group("checks")) if n]
    return []


def waits_for_preemption(message: str) -> bool:
    """Whether a QuotaReserved=False message says the workload waits for victims to go (or overlaps another
    workload's victims)."""
    pm = parse_pending_message(message)
    return pm.preempting is not None or pm.has(ReasonKind.OVERLAPPING_TARGETS, ReasonKind.OVERLAPPING_DEFERRED)


def exceeds_max_form(message: str) -> str | None:
    """Which exceeds-max-quota wording a message uses: the catalog entry id (the wording changed in v0.13)."""
    for r in parse_pending_message(message).of(ReasonKind.EXCEEDS_MAX_QUOTA):
        return r.entry_id
    return None


# --- the ClusterQueue Active=False message ------------------------------------------------------------------------

# the piece of `Can't admit new workloads; clusterQueue is terminating`, which is not a list of problems
_TERMINATING = "cq-terminating-condition"


def cq_inactive_parts(message: str) -> dict[str, list[str]]:
    """The problems a ClusterQueue Active=False message lists, by catalog entry (`cq-part-*` without the prefix):
    `Can't admit new workloads: references missing ResourceFlavor(s): a,b.` → {'missing-flavors': ['a', 'b']}.

    Names are split from both list forms Kueue printed: a Go slice `[a b]` (v0.9 - v0.11) and `a,b` (v0.12+).
    """
    text = message or ""
    out: dict[str, list[str]] = {}
    if entry(_TERMINATING).search(text):
        out["terminating"] = []
    for e in _entries("fragment", ("ClusterQueue.Active",)):
        m = e.search(text)
        if m:
            names = m.groupdict().get("name") or ""
            out[e.id.removeprefix("cq-part-")] = [n for n in re.split(r"[\s,]+", names.strip("[]")) if n]
    return out


# --- what Kueue writes in the status of the queue objects ------------------------------------------------------


@dataclass(frozen=True)
class _Span:
    """The Kueue minors (inclusive) that write something, and the source file that writes it."""

    since: str
    until: str
    source: str


@dataclass(frozen=True)
class StatusCondition(_Span):
    """A condition type Kueue writes on a queue object."""

    type: str


@dataclass(frozen=True)
class StatusField(_Span):
    field: str
    note: str = ""


@dataclass(frozen=True)
class Signal(_Span):
    """How Kueue reports a problem of an object that carries no condition for it (a Cohort's cycle)."""

    id: str
    problem: str
    cause: str
    workload_entry: str
    """the catalog entry of the message Kueue writes on the affected workloads"""
    log: str
    error: str
    note: str = ""


@dataclass(frozen=True)
class QueueStatus:
    """What Kueue writes in the status of one queue kind (LocalQueue, ClusterQueue, Cohort), v0.9 - v0.19."""

    kind: str
    conditions: tuple[StatusCondition, ...]
    fields: tuple[StatusField, ...]
    signals: tuple[Signal, ...]


@cache
def queue_status() -> dict[str, QueueStatus]:
    """The catalog's `queue_status` section, by kind."""
    out: dict[str, QueueStatus] = {}
    for raw in data_yaml("messages.yaml")["queue_status"]:
        out[str(raw["kind"])] = QueueStatus(
            kind=str(raw["kind"]),
            conditions=tuple(StatusCondition(**{k: str(v) for k, v in c.items()}) for c in raw["conditions"]),
            fields=tuple(StatusField(**{k: str(v) for k, v in f.items()}) for f in raw["fields"]),
            signals=tuple(Signal(**{k: str(v) for k, v in g.items()}) for g in raw["signals"]),
        )
    return out


def signal(signal_id: str) -> Signal:
    for qs in queue_status().values():
        for g in qs.signals:
            if g.id == signal_id:
                return g
    raise KeyError(signal_id)


# --- the API server refusing Kueue's own writes ---------------------------------------------------------------

_REJECTIONS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("admission webhook", re.compile(r"admission webhook \"(?P<name>[^\"]+)\" denied the request(?::\s*(?P<why>.*))?")),
    ("admission policy", re.compile(
        r"ValidatingAdmissionPolicy '(?P<name>[^']+)'[^:]*denied request(?::\s*(?P<why>.*))?")),
    ("PodSecurity", re.compile(r"(?P<name>violates PodSecurity \"[^\"]+\")(?::\s*(?P<why>.*))?")),
    ("SecurityContextConstraints", re.compile(
        r"(?P<name>unable to validate against any security context constraint)(?::\s*(?P<why>.*))?")),
    ("immutable field", re.compile(r"(?P<name>field is immutable)")),
    ("RBAC", re.compile(r"(?P<name>is forbidden: User \"[^\"]+\" cannot [a-z]+ resource \"[^\"]+\")")),
)


@dataclass(frozen=True)
class Rejection:
    """The API server refused a write: who refused it and why, as the error text says."""

    kind: str
    """admission webhook | admission policy | PodSecurity | SecurityContextConstraints | immutable field | RBAC"""
    name: str
    why: str


def api_rejection(text: str) -> Rejection | None:
    """Recognise an API-server refusal in an error or event message (None when the text is something else)."""
    for kind, pattern in _REJECTIONS:
        m = pattern.search(text or "")
        if m:
            gd = m.groupdict()
            return Rejection(kind, gd.get("name") or "", (gd.get("why") or "").strip())
    return None
