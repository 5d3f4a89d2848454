"""Log signatures, as data.

``SIGNATURES`` is the library KD501 runs over the controller logs: each entry says which lines it matches
(a regex on the message and/or on fields), what such a line means, which cause it supports, the lowest
``--zap-log-level`` at which Kueue emits it (kueue-facts §10) and how many repetitions make it noteworthy.

The known upstream bugs these signatures corroborate live in kueuediag/data/known_issues.yaml
(kueuediag.analysis.known_issues, KD902).

The small semver helper (:func:`parse_version`, :func:`satisfies`, :func:`is_fixed`) understands ``v0.13.2``,
``0.13.2``, pre-releases (``v0.14.0-rc.1`` < ``v0.14.0``), ``v0.20.0-devel`` and ``git describe`` strings
(``v0.13.2-12-gabc1234`` counts as v0.13.2).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import field
from functools import cached_property, lru_cache

from kueuediag.analysis.versions import (  # noqa: F401 - the semver helpers used to live here
    Version,
    fixed_version_for,
    is_fixed,
    parse_version,
    satisfies,
)
from kueuediag.models import Severity
from kueuediag.records import dataclass
from kueuediag.snapshot.logs import LineIndex, LogLine, log_lines
from kueuediag.snapshot.model import Snapshot

# --- log signatures ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Signature:
    """One recognisable kind of Kueue log line.

    A line matches when every pattern given matches: `msg` against the message (``search``), each
    ``fields`` entry against that key's value as text, and `text` against the whole raw line (useful for
    plain-text lines, ``error`` values and stack traces). At least one pattern is given.
    """

    id: str
    title: str
    meaning: str
    cause: str
    """the cause slug (kueuediag.causes) a match supports"""
    severity: Severity
    min_verbosity: int = 0
    """lowest --zap-log-level at which Kueue writes the line (kueue-facts §10)"""
    msg: str | None = None
    fields: tuple[tuple[str, str], ...] = ()
    text: str | None = None
    repeat: int = 1
    """how many matching lines (per `per` key) make the signature noteworthy"""
    min_span_seconds: float = 0.0
    """and over at least this long (first to last matching line)"""
    per: str = ""
    """group repetitions by ``workload`` or ``clusterQueue`` (empty: all lines together)"""
    decisive: bool = False
    """a level-3 (or more verbose) why-line whose absence at level 2 is what `logging-insufficient` reports"""
    upstream: str = ""
    """issue/PR references for the reader"""
    escalate_after_seconds: float = 0.0
    """when the repetitions span at least this long (0: never), the hit supports `escalate_cause` instead"""
    escalate_cause: str = ""
    escalate_note: str = ""
    _compiled: tuple[re.Pattern[str] | None, tuple[tuple[str, re.Pattern[str]], ...], re.Pattern[str] | None] = \
        field(init=False, repr=False, compare=False, hash=False, default=(None, (), None))
    msg_prefixes: tuple[str, ...] | None = field(init=False, repr=False, compare=False, hash=False, default=None)
    """literal starts every message the `msg` pattern can match (None: any message may match), so `scan` can
    skip the signature with one ``str.startswith`` on most lines"""

    def __post_init__(self) -> None:
        if self.msg is None and self.text is None and not self.fields:
            raise ValueError(f"signature {self.id}: no pattern")
        # compile once, so a typo fails at import time and matching does not go through re's cache
        compiled = (
            re.compile(self.msg) if self.msg is not None else None,
            tuple((k, re.compile(p)) for k, p in self.fields),
            re.compile(self.text) if self.text is not None else None,
        )
        object.__setattr__(self, "_compiled", compiled)
        object.__setattr__(self, "msg_prefixes", literal_prefixes(self.msg) if self.msg is not None else None)

    def matches(self, line: LogLine) -> bool:
        return self.matches_message(line.msg) and self.matches_beyond_message(line)

    def matches_message(self, msg: str) -> bool:
        """The part of `matches` that depends on the message alone."""
        if self.msg_prefixes is not None and not msg.startswith(self.msg_prefixes):
            return False
        msg_re = self._compiled[0]
        return msg_re is None or msg_re.search(msg) is not None

    def matches_beyond_message(self, line: LogLine, read: dict[str, str] | None = None) -> bool:
        """The rest of `matches`: the field and text patterns. `read` keeps the fields already read from this
        line (`scan` passes one per line: two signatures may test the same field)."""
        _, fields, text_re = self._compiled
        for key, pattern in fields:
            known = read.get(key) if read is not None else None
            value = _field_text(line, key) if known is None else known
            if read is not None:
                read[key] = value
            if not pattern.search(value):
                return False
        if text_re is not None and not text_re.search(line.raw):
            return False
        return True

    def group_key(self, line: LogLine) -> str:
        if self.per == "workload":
            workloads = line.workloads
            if not workloads:
                return ""
            namespace, name = workloads[0]
            return f"{namespace}/{name}" if namespace else name
        if self.per == "clusterQueue":
            return line.cluster_queue or ""
        return ""


def _field_text(line: LogLine, key: str) -> str:
    return line.error if key == "error" else line.field_text(key)


_META = frozenset(".^$*+?{}[]\\|()")


def top_level_alternatives(pattern: str) -> list[str]:
    """`pattern` split at each ``|`` outside groups and character classes (``[|)]`` is one class)."""
    out: list[str] = []
    depth, start, i, n = 0, 0, 0, len(pattern)
    in_class = False
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            i += 1
            i += pattern.startswith("^", i)
            i += pattern.startswith("]", i)  # a ']' first in a class is one of its characters
            continue
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            out.append(pattern[start:i])
            start = i + 1
        i += 1
    out.append(pattern[start:])
    return out


def leading_literal(alternative: str) -> str:
    """The literal text every match of one alternative (without its ``^``) starts with; "" when none."""
    end = 0
    while end < len(alternative) and alternative[end] not in _META:
        end += 1
    literal = alternative[:end]
    if end < len(alternative) and alternative[end] in "*?{" and literal:
        literal = literal[:-1]  # the last character is optional or repeated
    return literal


def literal_prefixes(pattern: str) -> tuple[str, ...] | None:
    """The literal text every match of `pattern` starts with, one per top-level alternative, when each
    alternative is anchored (``^``); None when some alternative can start anywhere or with anything."""
    alternatives = top_level_alternatives(pattern)
    if not all(alt.startswith("^") for alt in alternatives):
        return None
    return tuple(leading_literal(alt[1:]) for alt in alternatives)


_S = Severity

SIGNATURES: tuple[Signature, ...] = (
    Signature(
        "overlapping-preemption-targets", "Overlapping preemption targets, repeatedly for the same head",
        "The scheduler skipped this head because its preemption targets overlap with those of a workload "
        "processed earlier in the cycle. Seen now and then in normal operation; seen for the same head for a "
        "long time it means a victim never goes away (typically a zombie pod past its grace period that "
        "heads of several ClusterQueues all target).",
        "stuck-preemption-target", _S.HIGH, min_verbosity=2,
        text=r"overlapping preemption targets|preemption targets overlap",
        repeat=5, min_span_seconds=1800, per="workload", upstream="#6489, PR #6872",
    ),
    Signature(
        "no-preemption-candidates", "Preemption needed, but no candidate workloads",
        "The workload only fits by preempting, yet the ClusterQueue's preemption policy allows no victim. "
        "With fair sharing on an affected Kueue, borrowing ClusterQueues whose share rounded to 0 look like "
        "non-borrowers and are never chosen (#6577).",
        "waiting-for-quota", _S.MEDIUM, min_verbosity=2,
        msg=r"^Workload requires preemption, but there are no candidate workloads allowed for preemption",
        per="workload", upstream="#6577",
    ),
    Signature(
        "requeue-loop-pending-preemption", "Re-queued again and again waiting for preemption",
        "The workload keeps being re-queued with requeueReason PendingPreemption: its victims are not "
        "releasing quota (long termination grace periods, pods stuck terminating).",
        "slow-preemption", _S.HIGH, min_verbosity=2,
        msg=r"^Workload re-queued$", fields=(("requeueReason", r"^PendingPreemption$"),),
        repeat=5, min_span_seconds=300, per="workload", upstream="#6143",
        escalate_after_seconds=3600, escalate_cause="stuck-preemption-target",
        escalate_note="Waiting for victims for more than an hour is longer than termination grace periods "
                      "usually last: a victim is probably stuck (a pod Terminating past its grace period).",
    ),
    Signature(
        "requeue-loop", "Re-queued many times",
        "The scheduler keeps trying the workload and putting it back (requeueReason tells why: NoFit, "
        "PreemptionNoCandidates, FailedAfterNomination, ...). Each attempt found no room.",
        "waiting-for-quota", _S.LOW, min_verbosity=2,
        msg=r"^Workload re-queued$", fields=(("requeueReason", r"^(?!PendingPreemption$)"),),
        repeat=10, per="workload",
    ),
    Signature(
        "couldnt-be-admitted", "Workload couldn't be admitted",
        "The ClusterQueue's queue manager recorded that the head could not be admitted this cycle "
        "(BestEffortFIFO then moves on to the next workload).",
        "waiting-for-quota", _S.LOW, min_verbosity=2,
        msg=r"^Workload couldn't be admitted\.", repeat=3, per="workload",
    ),
    Signature(
        "podsready-timeout-eviction", "Evicted for exceeding the PodsReady timeout",
        "waitForPodsReady evicted the workload because its pods were not ready in time; it waits for the "
        "requeue backoff before Kueue considers it again.",
        "podsready-backoff", _S.MEDIUM, min_verbosity=2,
        msg=r"^Start the eviction of the workload due to exceeding the PodsReady timeout", per="workload",
    ),
    Signature(
        "webhook-error", "Admission webhook calls fail",
        "An API write was rejected because calling a webhook failed (Kueue's own webhook service down, "
        "certificates not ready, or a third-party webhook): Kueue cannot update Workloads or jobs.",
        "controller-unhealthy", _S.HIGH,
        text=r"failed calling webhook|Internal error occurred: failed calling webhook",
    ),
    Signature(
        "api-conflict", "Many write conflicts",
        "Writes lost optimistic-concurrency races (`the object has been modified`). A few are normal; "
        "many mean contention with another controller or a hot object.",
        "controller-unhealthy", _S.LOW,
        text=r"the object has been modified|Operation cannot be fulfilled on",
        repeat=20,
    ),
    Signature(
        "api-not-found", "The API server does not know a resource",
        "`the server could not find the requested resource`: a CRD or API version Kueue needs is not served "
        "(CRDs older than the controller, a missing integration CRD).",
        "controller-unhealthy", _S.HIGH,
        text=r"the server could not find the requested resource",
    ),
    Signature(
        "api-timeout", "API calls time out",
        "Requests to the API server time out: an overloaded control plane slows every admission.",
        "controller-unhealthy", _S.MEDIUM,
        text=r"context deadline exceeded|i/o timeout|Client\.Timeout exceeded|TLS handshake timeout|"
             r"the server was unable to return a response in the time allotted",
        repeat=3,
    ),
    Signature(
        "api-connection-refused", "API server connection refused",
        "The controller cannot reach the API server (or a webhook endpoint): `connection refused`.",
        "controller-unhealthy", _S.HIGH, text=r"connection refused",
    ),
    Signature(
        "leader-election-lost", "Leader election lost",
        "The controller lost (or could not renew) its leader lease: while no replica leads, nothing is "
        "admitted; a replica that loses the lease exits and restarts.",
        "controller-unhealthy", _S.HIGH,
        text=r"leader election lost|failed to renew lease|error retrieving resource lock|stopped leading",
    ),
    Signature(
        "panic", "Controller panic",
        "The controller panicked (`Observed a panic` is a recovered panic in a reconciler; `panic:` on "
        "its own line is a crash that restarts the container).",
        "controller-unhealthy", _S.HIGH, text=r"Observed a panic|(^|[\s\"])panic: ",
    ),
    Signature(
        "evaluated-for-admission", "Workload evaluated for admission",
        "The scheduler's verdict on the workload in one cycle: `status` (nominated, skipped, assumed, "
        "...) and `reason`, the same text it writes into the QuotaReserved condition. The best single "
        "why-line.",
        "waiting-for-quota", _S.MEDIUM, min_verbosity=3,
        msg=r"^Workload evaluated for admission$", per="workload", decisive=True,
    ),
    Signature(
        "preempted", "Preempted a workload",
        "The scheduler issued a preemption: `targetWorkload` is evicted to make room for "
        "`preemptingWorkload`; the preemptor waits until the victim releases its quota.",
        "preemption-in-progress", _S.LOW, min_verbosity=3,
        msg=r"^Preempted$", decisive=True,
    ),
    Signature(
        "preemption-gated", "Preemption blocked by preemption gates",
        "The workload needs preemption but its preemption gates are not cleared.",
        "admission-gated", _S.MEDIUM, min_verbosity=3,
        msg=r"^Workload requires preemption, but it is gated", per="workload",
    ),
    Signature(
        "clusterqueue-missing", "ClusterQueue for the workload does not exist",
        "The workload's LocalQueue points at a ClusterQueue the controller does not know.",
        "clusterqueue-missing", _S.HIGH, min_verbosity=2,
        msg=r"^ClusterQueue for workload didn't exist; ignored for now|"
            r"^Workload is inadmissible because the ClusterQueue is terminating or missing",
    ),
    Signature(
        "localqueue-stopped", "LocalQueue stopped",
        "The workload's LocalQueue is stopped (spec.stopPolicy Hold or HoldAndDrain).",
        "localqueue-stopped", _S.HIGH, min_verbosity=3,
        msg=r"^Workload is inadmissible because the LocalQueue is stopped", per="workload",
    ),
    Signature(
        "clusterqueue-stopped", "ClusterQueue stopped",
        "The workload's ClusterQueue is stopped (spec.stopPolicy Hold or HoldAndDrain): it is inactive and admits "
        "nothing.",
        "clusterqueue-inactive", _S.HIGH, min_verbosity=3,
        msg=r"^Workload is (inadmissible|evicted) because the ClusterQueue is stopped", per="workload",
    ),
)

BY_ID: dict[str, Signature] = {s.id: s for s in SIGNATURES}

TEXT_HINTS: tuple[str, ...] = (
    # every alternative of every `text` pattern above contains one of these (a test checks it); `scan` skips
    # the text patterns of a line that contains none. Each is looked for in every log file: long ones are found
    # faster (str.find skips further), so each is as long as the alternatives it covers allow.
    "preemption targets", "failed calling webhook", "the object has been modified", "Operation cannot be fulfilled",
    "could not find the requested resource", "deadline exceeded", "i/o timeout", "Timeout exceeded",
    "handshake timeout", "unable to return a response", "connection refused", "leader election lost",
    "renew lease", "resource lock", "stopped leading", "panic",
)

DECISIVE_MIN_VERBOSITY = min(s.min_verbosity for s in SIGNATURES if s.decisive)
"""Logs below this level cannot contain the decisive why-lines (3)."""

REASON_CAUSES: tuple[tuple[str, str], ...] = (
    # `reason` of "Workload evaluated for admission" (= the QuotaReserved message, kueue-facts §2.4) → cause.
    (r"overlapping preemption targets", "stuck-preemption-target"),
    (r"Pending the preemption of \d+ workload", "preemption-in-progress"),
    (r"Preempting \d+ workload\(s\) failed", "preemption-in-progress"),
    (r"no longer fits after processing another workload", "queued-behind"),
    (r"> maximum capacity|request > maximum capacity", "exceeds-max-quota"),
    (r"namespace doesn't match ClusterQueue selector", "namespace-not-selected"),
    (r"ClusterQueue \S+ is inactive", "clusterqueue-inactive"),
    (r"ClusterQueue \S+ not found", "clusterqueue-missing"),
    (r"resource \S+ unavailable in ClusterQueue", "resource-not-covered"),
    (r"^topology |topology \"[^\"]+\" (doesn't|allows)|does not support TopologyAwareScheduling",
     "topology-no-fit"),
    (r"waiting for all admitted workloads to be in PodsReady condition", "waiting-for-podsready"),
    (r"Workload requires preemption, but it's gated", "admission-gated"),
    (r"insufficient unused quota", "waiting-for-quota"),
    (r"doesn't match node affinity|untolerated taint", "no-matching-flavor"),
)


@lru_cache(maxsize=4096)
def cause_for_reason(reason: str) -> str | None:
    """The cause a scheduler pending message points at (first matching rule), None when unknown. Cached: KD501
    asks it for every pending workload's last scheduling verdict, and a queue's workloads share a few texts."""
    for pattern, cause in REASON_CAUSES:
        if re.search(pattern, reason):
            return cause
    return None


@dataclass(frozen=True)
class SignatureHit:
    """All lines one signature matched, grouped by its `per` key."""

    signature: Signature
    key: str
    lines: tuple[LogLine, ...]

    @cached_property
    def index(self) -> LineIndex:
        """`lines` by the Workloads and ClusterQueues they name (built on first use, once per snapshot)."""
        return LineIndex(self.lines)

    @property
    def count(self) -> int:
        return len(self.lines)

    @property
    def span_seconds(self) -> float:
        times = [ln.ts for ln in self.lines if ln.ts is not None]
        return (max(times) - min(times)).total_seconds() if len(times) > 1 else 0.0

    @property
    def escalated(self) -> bool:
        sig = self.signature
        return bool(sig.escalate_cause) and 0 < sig.escalate_after_seconds <= self.span_seconds

    @property
    def cause(self) -> str:
        """The cause this hit supports (the signature's, or its escalation after a long period)."""
        return self.signature.escalate_cause if self.escalated else self.signature.cause

    @property
    def noteworthy(self) -> bool:
        """Repeated enough, over long enough, to mean something."""
        return self.count >= self.signature.repeat and self.span_seconds >= self.signature.min_span_seconds


def scan(lines: Iterable[LogLine], signatures: Sequence[Signature] = SIGNATURES) -> list[SignatureHit]:
    """Match every line against every signature; one hit per (signature, group key), library order.

    Whether a signature's message pattern matches depends on the message alone, and a controller writes a few
    dozen distinct messages: so the signatures a message can match are worked out once per message, and each
    line is tested only against those (for their field and text patterns). The text patterns need one of
    `TEXT_HINTS` in the line: the hints a whole file holds are found once (most files hold none of them), and a
    line is searched only for those."""
    groups: dict[tuple[str, str], list[LogLine]] = defaultdict(list)
    by_msg: dict[str, tuple[tuple[Signature, ...], tuple[Signature, ...], tuple[Signature, ...]]] = {}
    hints_in: dict[int, tuple[str, tuple[str, ...]]] = {}
    """id of a text → (the text, kept so that its id is not reused while the scan runs; the hints it holds)"""
    last_text: str | None = None
    hints: tuple[str, ...] = ()
    for line in lines:
        msg = line.msg
        candidates = by_msg.get(msg)
        if candidates is None:
            matching = [sig for sig in signatures if sig.matches_message(msg)]
            candidates = by_msg[msg] = (tuple(s for s in matching if s.text is None and not s.fields),
                                        tuple(s for s in matching if s.text is None and s.fields),
                                        tuple(s for s in matching if s.text is not None))
        by_message, others, text_sigs = candidates
        for sig in by_message:  # the message says it all
            groups[(sig.id, sig.group_key(line))].append(line)
        read: dict[str, str] = {}
        for sig in others:
            if sig.matches_beyond_message(line, read):
                groups[(sig.id, sig.group_key(line))].append(line)
        if not text_sigs:
            continue
        if line.text is not last_text:
            last_text = line.text
            known = hints_in.get(id(last_text))
            if known is None:  # the lines of a file share its text (`LogLine.text`): each hint is looked for once
                known = hints_in[id(last_text)] = (last_text, tuple(h for h in TEXT_HINTS if h in last_text))
            hints = known[1]
        if not hints:
            continue
        raw = line.raw
        if any(h in raw for h in hints):
            for sig in text_sigs:
                if sig.matches_beyond_message(line, read):
                    groups[(sig.id, sig.group_key(line))].append(line)
    order = {s.id: i for i, s in enumerate(signatures)}
    by_id = {s.id: s for s in signatures}
    hits = [SignatureHit(by_id[sid], key, tuple(lns)) for (sid, key), lns in groups.items()]
    hits.sort(key=lambda h: (order[h.signature.id], -h.count, h.key))
    return hits


def signature_hits(snap: Snapshot) -> list[SignatureHit]:
    """`scan` over the snapshot's logs (memoised)."""
    return snap.memo("log-signature-hits", lambda: scan(log_lines(snap)))


def hits_concerning_index(snap: Snapshot) -> tuple[dict[str, list[int]], dict[str, list[int]], list[int]]:
    """`signature_hits` by index: those grouped per Workload by the Workload names and by the ClusterQueues their
    lines name, and every other one (memoised; what `hits_concerning` picks from)."""

    def build() -> tuple[dict[str, list[int]], dict[str, list[int]], list[int]]:
        by_workload: dict[str, list[int]] = defaultdict(list)
        by_cq: dict[str, list[int]] = defaultdict(list)
        always: list[int] = []
        for i, hit in enumerate(signature_hits(snap)):
            if hit.signature.per != "workload" or any(not ln.workloads for ln in hit.lines):
                always.append(i)  # cluster-wide, or lines matched by the name as a word: always looked at
                continue
            for name in {n for ln in hit.lines for _, n in ln.workloads}:
                by_workload[name].append(i)
            for cq in {cq for ln in hit.lines for cq in ln.cluster_queues}:
                by_cq[cq].append(i)
        return dict(by_workload), dict(by_cq), always

    return snap.memo("log-signature-hits-by-name", build)


def hits_concerning(snap: Snapshot, workload: str, cluster_queue: str | None) -> list[SignatureHit]:
    """The hits (in `signature_hits` order) that may name a Workload called `workload` or `cluster_queue`, and
    every hit not grouped per workload; the other hits cannot be about the target or its ClusterQueue.

    Per-workload signatures give one hit per Workload: looking at this subset instead of all of them keeps a
    target's cost independent of how many other Workloads the logs mention (`health --all-pending`).
    """

    by_workload, by_cq, always = hits_concerning_index(snap)
    hits = signature_hits(snap)
    picked = set(always) | set(by_workload.get(workload, ()))
    if cluster_queue is not None:
        picked |= set(by_cq.get(cluster_queue, ()))
    return [hits[i] for i in sorted(picked)]
