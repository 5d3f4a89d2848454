"""Known upstream Kueue bugs: the table (kueuediag/data/known_issues.yaml) and how a snapshot matches it.

One owner for "does this snapshot show upstream bug X?". Each entry names the affected versions, the releases that
fixed it, and its *signature*: the configuration it needs (``requires``), the fingerprint it leaves in recorded
objects (``evidence`` clauses or a named ``detector``) and the log lines it writes (``logs``).

Confidence is graded by what the snapshot recorded, never by the version alone:

* object evidence (conditions, status, pods showing the fingerprint) → high;
* an affected version + a log signature + the required configuration, without object evidence → medium;
* an affected version with nothing else → no match at all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from decimal import Decimal
from functools import cache
from typing import Any

from kueuediag.analysis.fair_sharing import fair_sharing_config
from kueuediag.analysis.health import controller_pods, shares_quota_with, zombie_pods
from kueuediag.analysis.installation import installation
from kueuediag.analysis.messages import ReasonKind, parse_pending_message
from kueuediag.analysis.object_path import first_text, holds
from kueuediag.analysis.preemption_victims import quota_holding_victims, victim_blocks
from kueuediag.analysis.quota_tree import quota_tree
from kueuediag.analysis.signatures import BY_ID, Signature, SignatureHit, scan, signature_hits
from kueuediag.analysis.versions import Version, behaviour, gate_introduced, has_behaviour, parse_version, satisfies
from kueuediag.datafile import data_yaml
from kueuediag.models import Confidence, Evidence, Severity, ev
from kueuediag.quantity import ZERO, format_quantity
from kueuediag.records import dataclass
from kueuediag.snapshot.k8s import meta, required_node_terms
from kueuediag.snapshot.kueue import (
    ClusterQueueView,
    KueueIndex,
    WorkloadState,
    WorkloadView,
    active_workloads,
    cluster_queue_of,
    kueue_index,
    well_formed_workload,
    workload_of_object,
)
from kueuediag.snapshot.logs import LogLine, log_lines
from kueuediag.snapshot.model import Snapshot
from kueuediag.timeutil import format_rfc3339, human_duration

EFFECTS = ("blocks-admission", "holds-quota", "ordering", "message-only")
"""What the bug does to a pending workload: keeps it from being admitted, keeps quota held by others, changes the
queue order only, or only changes what a message/status says."""


# --- the table ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Clause:
    """One object the fingerprint needs: `kind` whose fields satisfy every `where` predicate (or the controller)."""

    kind: str
    where: dict[str, dict[str, Any]] = field(default_factory=dict)
    show: tuple[str, ...] = ()
    workload_holds_quota: bool = False
    """the object's Workload (owner chain / pod group) holds quota"""
    workload_state: str | None = None
    controller: str | None = None
    """``unhealthy``: the Kueue controller manager is not Ready, restarting or crash looping"""


@dataclass(frozen=True)
class LogSig:
    signature: str | None = None
    """id of a library signature (kueuediag.analysis.signatures.SIGNATURES)"""
    regex: str | None = None


@dataclass(frozen=True)
class KnownIssue:
    id: str
    title: str
    meaning: str
    issues: tuple[str, ...]
    prs: tuple[str, ...]
    effect: str
    workaround: str
    changelog: str = ""
    fixed_by: str | None = None
    """the row of data/versions.yaml whose releases contain the fix"""
    mitigated_by: str | None = None
    """the row whose feature gate only mitigates the bug"""
    introduced_by: str | None = None
    """the row of the feature the bug lives in (None: every release)"""
    introduced_with_gate: str | None = None
    """or the feature gate of that feature (affected from the gate's first release)"""
    gates: dict[str, bool] = field(default_factory=dict)
    config: dict[str, dict[str, Any]] = field(default_factory=dict)
    required_objects: tuple[Clause, ...] = ()
    evidence: tuple[tuple[Clause, ...], ...] = ()
    detector: str | None = None
    detector_args: dict[str, Any] = field(default_factory=dict)
    logs: tuple[LogSig, ...] = ()

    @property
    def fixed_in(self) -> tuple[str, ...]:
        """The releases with the fix (mainline + cherry-picks), from the version table; empty when only a gate
        mitigates the bug."""
        return behaviour(self.fixed_by).since if self.fixed_by else ()

    @property
    def mitigation_gate(self) -> str | None:
        return behaviour(self.mitigated_by).gate if self.mitigated_by else None

    @property
    def gate_since(self) -> str | None:
        return behaviour(self.mitigated_by).first if self.mitigated_by else None

    def gate_available(self, version: str | Version) -> bool:
        """Whether `version` has the mitigating feature gate at all."""
        return bool(self.mitigated_by and has_behaviour(version, self.mitigated_by))

    @property
    def introduced(self) -> str | None:
        """The first affected release, when the bug lives in a feature younger than v0.9."""
        if self.introduced_by:
            return behaviour(self.introduced_by).first
        if self.introduced_with_gate:
            return gate_introduced(self.introduced_with_gate)
        return None

    def affects(self, version: str | Version) -> bool:
        """Whether `version` has the bug (the feature exists, the fix is not on its release line)."""
        v = version if isinstance(version, Version) else parse_version(version)
        if v is None:
            return False
        first = self.introduced
        if first is not None and not satisfies(v, f">={first}"):
            return False
        if self.fixed_by:
            return not has_behaviour(v, self.fixed_by)
        return True

    @property
    def first_ref(self) -> str:
        return (self.issues or self.prs)[0]

    @property
    def refs(self) -> str:
        return ", ".join([f"issue {i}" for i in self.issues] + [f"PR {p}" for p in self.prs])


def _clause(raw: dict[str, Any]) -> Clause:
    known = {"kind", "where", "show", "workload_holds_quota", "workload_state", "controller"}
    extra = set(raw) - known
    if extra:
        raise ValueError(f"known-issue clause: unknown keys {sorted(extra)}")
    return Clause(kind=str(raw.get("kind") or "Controller"), where=dict(raw.get("where") or {}),
                  show=tuple(raw.get("show") or ()), workload_holds_quota=bool(raw.get("workload_holds_quota")),
                  workload_state=raw.get("workload_state"), controller=raw.get("controller"))


def _issue(raw: dict[str, Any]) -> KnownIssue:
    req = raw.get("requires") or {}
    issue = KnownIssue(
        id=raw["id"], title=raw["title"], meaning=" ".join(str(raw["meaning"]).split()),
        issues=tuple(raw.get("issues") or ()), prs=tuple(raw.get("prs") or ()),
        effect=raw["effect"], workaround=raw["workaround"], changelog=raw.get("changelog", ""),
        fixed_by=raw.get("fixed_by"), mitigated_by=raw.get("mitigated_by"), introduced_by=raw.get("introduced_by"),
        introduced_with_gate=raw.get("introduced_with_gate"),
        gates=dict(req.get("gates") or {}), config=dict(req.get("config") or {}),
        required_objects=tuple(_clause(c) for c in req.get("objects") or ()),
        evidence=tuple(tuple(_clause(c) for c in alt) for alt in raw.get("evidence") or ()),
        detector=raw.get("detector"), detector_args=dict(raw.get("detector_args") or {}),
        logs=tuple(LogSig(signature=s.get("signature"), regex=s.get("regex")) for s in raw.get("logs") or ()),
    )
    if issue.effect not in EFFECTS:
        raise ValueError(f"known issue {issue.id}: effect {issue.effect!r} not in {EFFECTS}")
    if issue.detector is not None and issue.detector not in DETECTORS:
        raise ValueError(f"known issue {issue.id}: unknown detector {issue.detector!r}")
    if not issue.fixed_by and not issue.mitigated_by:
        raise ValueError(f"known issue {issue.id}: neither fixed_by nor mitigated_by")
    for row in (issue.fixed_by, issue.mitigated_by, issue.introduced_by):
        if row is not None:
            behaviour(row)  # KeyError: a row missing from data/versions.yaml
    if issue.introduced_with_gate is not None and gate_introduced(issue.introduced_with_gate) is None:
        raise ValueError(f"known issue {issue.id}: unknown gate {issue.introduced_with_gate!r}")
    if not (issue.evidence or issue.detector or issue.logs):
        raise ValueError(f"known issue {issue.id}: no signature (evidence, detector or logs)")
    for s in issue.logs:
        if s.signature is not None and s.signature not in BY_ID:
            raise ValueError(f"known issue {issue.id}: unknown log signature {s.signature!r}")
    return issue


@cache
def known_issues() -> tuple[KnownIssue, ...]:
    """The table, loaded once (a malformed table is a bug in kueuediag: it raises)."""
    doc = data_yaml("known_issues.yaml")
    out = tuple(_issue(raw) for raw in doc["issues"])
    ids = [i.id for i in out]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        raise ValueError(f"duplicate known-issue ids: {sorted(dup)}")
    return out


def known_issue(issue_id: str) -> KnownIssue:
    for i in known_issues():
        if i.id == issue_id:
            return i
    raise KeyError(issue_id)


# --- matching ----------------------------------------------------------------------------------------------


@dataclass
class Context:
    """What a detector may look at: the snapshot, the version and the workload asked about."""

    snap: Snapshot
    idx: KueueIndex
    version: Version
    workload: WorkloadView | None
    cq: str | None

    @property
    def pending(self) -> bool:
        waiting = (WorkloadState.PENDING, WorkloadState.QUOTA_RESERVED)
        return self.workload is not None and self.workload.state in waiting


@dataclass
class Fingerprint:
    """What a detector found. `kind` "object": recorded state shows the bug; "config": only its preconditions."""

    summary: str
    evidence: list[Evidence]
    about_target: bool
    kind: str = "object"
    stopgap: list[str] = field(default_factory=list)


@dataclass
class Match:
    issue: KnownIssue
    confidence: Confidence
    summary: str
    evidence: list[Evidence]
    about_target: bool
    stopgap: list[str]


def match_issue(ctx: Context, issue: KnownIssue) -> Match | None:
    """The graded match of one entry against the snapshot, None when the snapshot does not show it."""
    if not issue.affects(ctx.version):
        return None
    if issue.mitigation_gate and issue.gate_available(ctx.version) \
            and installation(ctx.snap).gates.enabled(issue.mitigation_gate):
        return None
    pre = _preconditions(ctx, issue)
    if pre is None:
        return None
    found: Fingerprint | None = None
    if issue.detector is not None:
        found = DETECTORS[issue.detector](ctx, issue.detector_args)
    else:
        for alt in issue.evidence:
            found = _evidence(ctx, alt)
            if found is not None:
                break
    logs = _log_hits(ctx, issue)
    log_ev = [ev("log", f"{ln.location}: {ln.msg}{': ' + ln.error if ln.error else ''} ({n}x)"[:400], field=sig)
              for sig, ln, n, _ in logs[:2]]
    if found is not None and found.kind == "object":
        return Match(issue, Confidence.HIGH, found.summary, pre + found.evidence + log_ev, found.about_target,
                     found.stopgap)
    logs = [h for h in logs if h[3]]  # only a repeated-enough line stands in for object evidence
    if not logs:
        return None  # version and configuration alone never fire
    if found is None and issue.detector is not None:
        return None  # a detector states the state the bug needs; without it the log line is not this bug
    about = ctx.pending and any(_mentions_target(ctx, ln) for _, ln, _, _ in logs)
    if found is not None:
        about = about or found.about_target
        summary = f"{found.summary}; the controller logged {logs[0][0]} ({logs[0][2]}x)"
        evidence = pre + found.evidence + log_ev
    else:
        summary = f"the controller logged {logs[0][0]} ({logs[0][2]}x)" + (
            " and the required configuration is present" if pre else "")
        evidence = pre + log_ev
    return Match(issue, Confidence.MEDIUM, summary, evidence, about, found.stopgap if found else [])


def match_all(ctx: Context) -> list[Match]:
    """Every entry the snapshot matches, table order."""
    out = []
    for issue in affecting(ctx.snap, ctx.version):
        m = match_issue(ctx, issue)
        if m is not None:
            out.append(m)
    return out


def affecting(snap: Snapshot, version: Version) -> list[KnownIssue]:
    """The entries of the table that `version` has, table order (memoised per version: asked for every
    target)."""
    return snap.memo(("known-issues:affecting", version), lambda: [i for i in known_issues() if i.affects(version)])


def context_for(snap: Snapshot, version: Version, workload: WorkloadView | None, cq: str | None) -> Context:
    return Context(snap, kueue_index(snap), version, workload, cq)


def _preconditions(ctx: Context, issue: KnownIssue) -> list[Evidence] | None:
    """Evidence that each precondition holds, or None when one does not (or cannot be confirmed)."""
    out: list[Evidence] = []
    gates = installation(ctx.snap).gates
    for gate, want in issue.gates.items():
        if gates.enabled(gate) is not want:
            return None
        out.append(ev("object", f"feature gate {gate}={'true' if want else 'false'}", field="featureGates"))
    if issue.config:
        cfg = installation(ctx.snap).config
        if not cfg.found:
            return None
        for path, pred in issue.config.items():
            if not holds(cfg.raw, path, pred):
                return None
            out.append(ev("object", f"{path} {_pred_text(pred)}", kind="ConfigMap",
                          name=cfg.source.rsplit("/", 1)[-1], namespace=cfg.namespace, field=path))
    for clause in issue.required_objects:
        objs = [o for o in ctx.snap.active(clause.kind) if all(holds(o, p, w) for p, w in clause.where.items())]
        if not objs:
            return None
        o = objs[0]
        m = meta(o)
        shown = "; ".join(f"{p} {_pred_text(w)}" for p, w in clause.where.items())
        out.append(ev("object", shown, kind=clause.kind, name=m.get("name"), namespace=m.get("namespace"),
                      field=next(iter(clause.where), None)))
    return out


def _pred_text(pred: dict[str, Any]) -> str:
    return ", ".join(f"{op} {v}" for op, v in pred.items())


def _workload_of(ctx: Context, obj: dict[str, Any]) -> WorkloadView | None:
    if obj.get("kind") == "Workload":
        m = meta(obj)
        return well_formed_workload(ctx.snap, str(m.get("namespace") or ""), str(m.get("name") or ""))
    return workload_of_object(ctx.snap, obj)


def _concerns_target(ctx: Context, obj: dict[str, Any], w: WorkloadView | None) -> bool:
    """The object is the target's, or holds quota the target needs, or (cluster-wide) stops the target."""
    if not ctx.pending or ctx.workload is None:
        return False
    if w is not None:
        if w.namespace == ctx.workload.namespace and w.name == ctx.workload.name:
            return True
        return w.holds_quota and shares_quota_with(ctx.idx, ctx.cq, cluster_queue_of(ctx.idx, w))
    kind = obj.get("kind")
    if kind == "ClusterQueue":
        return shares_quota_with(ctx.idx, ctx.cq, str(meta(obj).get("name")))
    if kind == "ResourceFlavor":
        cq = ctx.idx.cluster_queues.get(ctx.cq or "")
        return cq is not None and str(meta(obj).get("name")) in cq.flavor_names()
    return kind in ("Node", "Cohort", "Controller")


def _evidence(ctx: Context, alt: tuple[Clause, ...]) -> Fingerprint | None:
    evidence: list[Evidence] = []
    about = False
    names: list[str] = []
    for clause in alt:
        if clause.controller is not None:
            bad = [p for p in controller_pods(ctx.snap) if not p.healthy or p.restarts > 0]
            if clause.controller != "unhealthy" or not bad:
                return None
            p = bad[0]
            evidence.append(ev("object", f"controller pod {'Ready' if p.ready else 'not Ready'}, "
                                         f"{p.restarts} restart(s) {p.waiting_reason}".rstrip(),
                               kind="Pod", name=p.name, namespace=p.namespace, field="status.containerStatuses"))
            names.append(f"the Kueue controller pod {p.name} is unhealthy")
            about = about or ctx.pending
            continue
        hit = None
        for obj in ctx.snap.active(clause.kind):  # settled objects (finished, terminated) stop nothing
            if not all(holds(obj, p, w) for p, w in clause.where.items()):
                continue
            w = _workload_of(ctx, obj)
            if clause.workload_holds_quota and (w is None or not w.holds_quota):
                continue
            if clause.workload_state is not None and (w is None or w.state != clause.workload_state):
                continue
            hit = (obj, w)
            if _concerns_target(ctx, obj, w):
                break
        if hit is None:
            return None
        obj, w = hit
        m = meta(obj)
        shown = "; ".join(t for t in (first_text(obj, p) for p in clause.show) if t) or \
            "; ".join(f"{p} {_pred_text(x)}" for p, x in clause.where.items())
        evidence.append(ev("object", shown[:400], kind=clause.kind, name=m.get("name"), namespace=m.get("namespace"),
                           field=clause.show[0] if clause.show else next(iter(clause.where), None)))
        if w is not None and clause.kind != "Workload":
            evidence.append(ev("condition", f"Workload state {w.state}", kind="Workload", name=w.name,
                               namespace=w.namespace, field="status.conditions"))
        ns = m.get("namespace")
        names.append(f"{clause.kind} {f'{ns}/' if ns else ''}{m.get('name')}")
        about = about or _concerns_target(ctx, obj, w)
    return Fingerprint(f"{', '.join(names)} show{'s' if len(names) == 1 else ''} the fingerprint", evidence, about)


def _log_hits(ctx: Context, issue: KnownIssue) -> list[tuple[str, LogLine, int, bool]]:
    """(signature name, last line, count, noteworthy) for every log signature of the entry in the snapshot's logs."""
    if not issue.logs or not ctx.snap.logs_text:
        return []
    out: list[tuple[str, LogLine, int, bool]] = []
    for s in issue.logs:
        hits: list[SignatureHit]
        if s.signature is not None:
            hits = _hits_by_signature(ctx.snap).get(s.signature, [])
        else:
            hits = _regex_hits(ctx.snap, s.regex or "")
        for h in hits:
            out.append((h.signature.id if s.signature else f"`{s.regex}`", h.lines[-1], h.count, h.noteworthy))
    return out


def _hits_by_signature(snap: Snapshot) -> dict[str, list[SignatureHit]]:
    """The snapshot's signature hits by signature id (memoised: every entry of every target asks)."""

    def build() -> dict[str, list[SignatureHit]]:
        out: dict[str, list[SignatureHit]] = {}
        for h in signature_hits(snap):
            out.setdefault(h.signature.id, []).append(h)
        return out

    return snap.memo("known-issues:hits-by-signature", build)


def _regex_hits(snap: Snapshot, regex: str) -> list[SignatureHit]:
    """Hits of an entry's own log regex (memoised per regex: a scan reads every log line)."""
    return snap.memo(("known-issues:regex-hits", regex), lambda: scan(log_lines(snap), _regex_signatures(regex)))


@cache
def _regex_signatures(regex: str) -> tuple[Signature, ...]:
    """A table regex as log signatures: on the message, or on the `error` value."""
    return (Signature("known-issue-log", "known issue log line", "", "known-issue", Severity.MEDIUM, msg=regex),
            Signature("known-issue-log-error", "known issue log line", "", "known-issue", Severity.MEDIUM,
                      fields=(("error", regex),)))


def _mentions_target(ctx: Context, line: LogLine) -> bool:
    w = ctx.workload
    if w is None:
        return False
    ref = line.workload
    return (ref is not None and ref[1] == w.name) or w.name in line.raw


# --- named detectors ---------------------------------------------------------------------------------------


def _fair_sharing_on(ctx: Context) -> bool:
    fs = fair_sharing_config(ctx.snap)
    if fs.enabled is not None:
        return fs.enabled
    return any((q.obj.get("status") or {}).get("fairSharing") is not None for q in ctx.idx.cluster_queues.values())


def _borrowed(q: ClusterQueueView) -> dict[str, Decimal]:
    out: dict[str, Decimal] = {}
    for (_flavor, res), (_total, borrowed) in q.reservation.items():
        if borrowed > 0:
            out[res] = out.get(res, Decimal(0)) + borrowed
    return out


def _borrowing_zero_share(ctx: Context, _args: dict[str, Any]) -> Fingerprint | None:
    if not _fair_sharing_on(ctx):
        return None
    bad = [q for q in ctx.idx.cluster_queues.values() if _borrowed(q) and q.weighted_share == 0]
    if not bad:
        return None
    about = ctx.pending and any(shares_quota_with(ctx.idx, ctx.cq, q.name) for q in bad)
    evidence = [ev("object", f"weightedShare 0 while borrowing "
                             f"{', '.join(f'{format_quantity(v, r)} {r}' for r, v in sorted(_borrowed(q).items()))}",
                   kind="ClusterQueue", name=q.name, field="status.fairSharing.weightedShare",
                   expected="> 0 for a borrowing ClusterQueue") for q in bad[:4]]
    names = ", ".join(q.name for q in bad)
    return Fingerprint(
        f"ClusterQueue {names} borrow{'s' if len(bad) == 1 else ''} quota but "
        f"report{'s' if len(bad) == 1 else ''} weightedShare 0, so "
        f"fair-sharing preemption never picks {'it' if len(bad) == 1 else 'them'}"
        + (f" and ClusterQueue {ctx.cq} cannot reclaim its nominal quota" if about else ""),
        evidence, about,
        stopgap=[f"Stop-gap: evict the borrowing workloads of {names} by hand "
                 "(`kubectl kueue stop workload <wl>` / delete their jobs), or lower fairSharing weights."],
    )


def _fair_sharing_borrowing(ctx: Context, _args: dict[str, Any]) -> Fingerprint | None:
    if not _fair_sharing_on(ctx):
        return None
    borrowing = [q for q in ctx.idx.cluster_queues.values() if _borrowed(q)]
    if not borrowing:
        return None
    about = ctx.pending and any(shares_quota_with(ctx.idx, ctx.cq, q.name) for q in borrowing)
    evidence = [ev("object", f"weightedShare {q.weighted_share}", kind="ClusterQueue", name=q.name,
                   field="status.fairSharing.weightedShare") for q in borrowing[:4]]
    return Fingerprint(f"fair sharing is on and {len(borrowing)} ClusterQueue(s) borrow, so shares are compared "
                       "after rounding", evidence, about, kind="config")


def _zombies_in_pod_groups(ctx: Context, _args: dict[str, Any]) -> Fingerprint | None:
    # the bug: Kueue still counts a pod-group pod past deletionTimestamp + grace as active
    zs = [z for z in zombie_pods(ctx.snap) if z.in_pod_group and z.workload is not None and z.activity.active]
    if not zs:
        return None
    about = ctx.pending and any(shares_quota_with(ctx.idx, ctx.cq, z.cluster_queue) for z in zs)
    evidence: list[Evidence] = []
    for z in zs[:3]:
        evidence.append(ev("object", f"pod-group pod Terminating {human_duration(z.overdue_seconds)} past its "
                                     f"grace period (deletionTimestamp "
                                     f"{format_rfc3339(z.pod.deletion) if z.pod.deletion else '?'})",
                           kind="Pod", name=z.pod.name, namespace=z.pod.namespace,
                           field="metadata.deletionTimestamp"))
        if z.workload is not None:
            evidence.append(ev("condition", "QuotaReserved=True", kind="Workload", name=z.workload.name,
                               namespace=z.workload.namespace, field="status.conditions[type=QuotaReserved]"))
    groups = sorted({z.workload.ref() for z in zs if z.workload is not None})
    return Fingerprint(
        f"{len(zs)} pod(s) of pod group(s) {', '.join(groups)} are stuck terminating and their Workloads still "
        "hold quota", evidence, about,
        stopgap=[f"Stop-gap: kubectl delete pod {z.pod.name} -n {z.pod.namespace} --force --grace-period=0"
                 for z in zs[:2]],
    )


def _pod_victims_terminating(ctx: Context, args: dict[str, Any]) -> Fingerprint | None:
    # the signature is a plain-pod victim that keeps quota through a *long* termination: with a short grace
    # period the preemption is merely in progress and the serialisation is invisible
    min_grace = int(args.get("min_grace_seconds", 0))
    victims = [v for v in quota_holding_victims(ctx.snap)
               if v.pod_integration and not v.zombie_pods and v.terminating_pods
               and any(p.grace_seconds > min_grace for p in v.terminating_pods)]
    if not victims:
        return None
    about = ctx.pending and any(victim_blocks(ctx.snap, ctx.workload, ctx.cq, v) for v in victims)
    evidence = []
    for v in victims[:3]:
        grace = max((p.grace_seconds for p in v.terminating_pods), default=0)
        evidence.append(ev("condition", f"Evicted=True (Preempted) {human_duration(v.held_seconds)} ago, "
                                        f"QuotaReserved=True; pods terminating with grace {grace}s",
                           kind="Workload", name=v.workload.name, namespace=v.workload.namespace,
                           field="status.conditions[type=Evicted]"))
    return Fingerprint(f"{len(victims)} plain-pod preemption victim(s) keep quota while their pods terminate",
                       evidence, about)


def _priority_class_drift(ctx: Context, _args: dict[str, Any]) -> Fingerprint | None:
    drift = []
    for w in active_workloads(ctx.snap):
        if w.state == WorkloadState.FINISHED or w.priority_class_kind != "WorkloadPriorityClass" \
                or not w.priority_class:
            continue
        value = ctx.idx.priority_classes.get(w.priority_class)
        if value is not None and value != w.priority:
            drift.append((w, value))
    if not drift:
        return None
    w, value = next(((w, v) for w, v in drift if ctx.workload is not None and w.name == ctx.workload.name
                     and w.namespace == ctx.workload.namespace), drift[0])
    about = ctx.pending and ctx.workload is not None and w.name == ctx.workload.name
    return Fingerprint(
        f"Workload {w.ref()} still has priority {w.priority} while WorkloadPriorityClass {w.priority_class} is "
        f"now {value}",
        [ev("object", f"spec.priority {w.priority}", kind="Workload", name=w.name, namespace=w.namespace,
            field="spec.priority", expected=f"{value} (WorkloadPriorityClass {w.priority_class})"),
         ev("object", f"value {value}", kind="WorkloadPriorityClass", name=w.priority_class, field="value")],
        about)


def _pending_message(w: WorkloadView) -> str:
    c = w.cond("QuotaReserved")
    return c.message if c is not None and not c.true else ""


def _pending_workloads(ctx: Context) -> list[WorkloadView]:
    """Pending workloads with a recorded message, the target first."""
    ws = [w for w in active_workloads(ctx.snap) if w.state == WorkloadState.PENDING and _pending_message(w)]
    return sorted(ws, key=lambda w: 0 if ctx.workload is not None and w.name == ctx.workload.name
                  and w.namespace == ctx.workload.namespace else 1)


def _is_target(ctx: Context, w: WorkloadView) -> bool:
    return ctx.pending and ctx.workload is not None and w.name == ctx.workload.name \
        and w.namespace == ctx.workload.namespace


def _node_selector_other_flavor(ctx: Context, _args: dict[str, Any]) -> Fingerprint | None:
    for w in _pending_workloads(ctx):
        cq = ctx.idx.cluster_queues.get(cluster_queue_of(ctx.idx, w) or "")
        if cq is None or "doesn't match node affinity" not in _pending_message(w):
            continue
        for ps in w.pod_sets:
            selector = ps.spec.get("nodeSelector") or {}
            for group in cq.resource_groups:
                names = [f for f, _ in group.flavors]
                labels = {f: (ctx.idx.flavors[f].node_labels if f in ctx.idx.flavors else {}) for f in names}
                for key in selector:
                    declaring = [f for f, lb in labels.items() if key in lb]
                    # a flavor that does not declare the key cannot be excluded by it, yet the message says so
                    others = [f for f in names if f not in declaring
                              and f"flavor {f} doesn't match node affinity" in _pending_message(w)]
                    if declaring and others:
                        return Fingerprint(
                            f"pod set {ps.name} of {w.ref()} selects {key}, a label key only flavor(s) "
                            f"{', '.join(declaring)} declare in resource group {', '.join(names)}",
                            [ev("condition", _pending_message(w)[:300], kind="Workload", name=w.name,
                                namespace=w.namespace, field="status.conditions[type=QuotaReserved].message"),
                             ev("object", f"nodeLabels {key}={labels[declaring[0]][key]}", kind="ResourceFlavor",
                                name=declaring[0], field="spec.nodeLabels")],
                            _is_target(ctx, w))
    return None


def _go_taint(taint: dict[str, Any]) -> str:
    """A taint as Kueue's message prints it (a Go struct: `{key value effect <nil>}`)."""
    return f"{{{taint.get('key') or ''} {taint.get('value') or ''} {taint.get('effect') or ''} <nil>}}"


def _stale_taint(ctx: Context, args: dict[str, Any]) -> Fingerprint | None:
    tas = bool(args.get("tas"))
    for w in _pending_workloads(ctx):
        msg = _pending_message(w)
        for name, flavor in ctx.idx.flavors.items():
            if bool(flavor.topology_name) != tas:
                continue
            marker = f" in flavor {name}"
            if "untolerated taint {" not in msg or marker not in msg:
                continue
            recorded = [part for part in msg.split("untolerated taint ")[1:] if part.split("}")[0] and
                        part.partition("}")[2].startswith(marker)]
            if not recorded:
                continue
            now = {_go_taint(t) for t in flavor.node_taints}
            stale = [r.split("}")[0] + "}" for r in recorded if (r.split("}")[0] + "}") not in now]
            if not stale:
                continue
            return Fingerprint(
                f"{w.ref()} is pending for taint {stale[0]} that ResourceFlavor {name} no longer has",
                [ev("condition", msg[:300], kind="Workload", name=w.name, namespace=w.namespace,
                    field="status.conditions[type=QuotaReserved].message"),
                 ev("object", f"nodeTaints now: {', '.join(sorted(now)) or 'none'}", kind="ResourceFlavor",
                    name=name, field="spec.nodeTaints", expected=f"still {stale[0]} for the message to hold")],
                _is_target(ctx, w))
    return None


def _stale_affinity(ctx: Context, _args: dict[str, Any]) -> Fingerprint | None:
    from kueuediag.analysis.flavor_match import restricted_selector_matches

    for w in _pending_workloads(ctx):
        msg = _pending_message(w)
        for name, flavor in ctx.idx.flavors.items():
            if f"flavor {name} doesn't match node affinity" not in msg or not flavor.node_labels:
                continue
            # the flavor's own label keys must be constrained: otherwise the rejection came from another
            # flavor's key (node-selector-other-flavor-label), not from a since-edited nodeLabels
            constrained = any(set(_selector_keys(ps.spec)) & set(flavor.node_labels) for ps in w.pod_sets)
            if constrained and all(restricted_selector_matches(ps.spec, flavor.node_labels)[0] for ps in w.pod_sets):
                return Fingerprint(
                    f"{w.ref()} is pending because flavor {name} did not match its node affinity, but the flavor's "
                    "nodeLabels match it now",
                    [ev("condition", msg[:300], kind="Workload", name=w.name, namespace=w.namespace,
                        field="status.conditions[type=QuotaReserved].message"),
                     ev("object", "nodeLabels " + ", ".join(f"{k}={v}" for k, v in sorted(flavor.node_labels.items())),
                        kind="ResourceFlavor", name=name, field="spec.nodeLabels")],
                    _is_target(ctx, w))
    return None


def _selector_keys(pod_spec: dict[str, Any]) -> list[str]:
    keys = [str(k) for k in (pod_spec.get("nodeSelector") or {})]
    for term in required_node_terms(pod_spec):
        keys += [str(e.get("key")) for e in term.get("matchExpressions") or () if isinstance(e, dict)]
    return keys


def _pending_preemption_without_victims(ctx: Context, _args: dict[str, Any]) -> Fingerprint | None:
    victims = quota_holding_victims(ctx.snap)
    evicting = [w for w in active_workloads(ctx.snap) if w.is_true("Evicted") and w.holds_quota]
    if victims or evicting:
        return None
    for w in _pending_workloads(ctx):
        msg = _pending_message(w)
        if "Pending the preemption of" not in msg:
            continue
        return Fingerprint(
            f"{w.ref()} waits for the preemption of workloads, but no Workload in the snapshot is being evicted",
            [ev("condition", msg[:300], kind="Workload", name=w.name, namespace=w.namespace,
                field="status.conditions[type=QuotaReserved].message",
                expected="a victim with Evicted=True still holding quota")],
            _is_target(ctx, w))
    return None


def _hostname_top_level(ctx: Context, _args: dict[str, Any]) -> Fingerprint | None:
    tas_pending = [w for w in _pending_workloads(ctx) if any(ps.topology_request for ps in w.pod_sets)]
    if not tas_pending:
        return None
    for topo, levels in ctx.idx.topologies.items():
        if not levels or levels[0] == "kubernetes.io/hostname":
            continue
        for node in ctx.snap.of_kind("Node"):
            lb = meta(node).get("labels") or {}
            host = lb.get("kubernetes.io/hostname")
            if host and lb.get(levels[0]) == host:
                w = tas_pending[0]
                return Fingerprint(
                    f"Node {meta(node).get('name')} has {levels[0]}={host}, its own hostname, so topology {topo} "
                    f"never places pods on it while {w.ref()} waits for topology capacity",
                    [ev("object", f"labels {levels[0]}={host}, kubernetes.io/hostname={host}", kind="Node",
                        name=meta(node).get("name"), field=f"metadata.labels[{levels[0]}]"),
                     ev("condition", _pending_message(w)[:300], kind="Workload", name=w.name, namespace=w.namespace,
                        field="status.conditions[type=QuotaReserved].message")],
                    _is_target(ctx, w))
    return None


def _queue_name_not_propagated(ctx: Context, _args: dict[str, Any]) -> Fingerprint | None:
    for w in active_workloads(ctx.snap):
        if w.queue_name or w.state == WorkloadState.FINISHED:
            continue
        for ref in meta(w.obj).get("ownerReferences") or ():
            owner = ctx.snap.by_uid(str(ref.get("uid"))) if isinstance(ref, dict) else None
            queue = (meta(owner).get("labels") or {}).get("kueue.x-k8s.io/queue-name") if owner else None
            if owner is not None and queue:
                return Fingerprint(
                    f"{owner.get('kind')} {w.namespace}/{meta(owner).get('name')} has queue-name {queue} but its "
                    f"Workload {w.name} has no queueName",
                    [ev("object", f"label kueue.x-k8s.io/queue-name={queue}", kind=str(owner.get("kind")),
                        name=meta(owner).get("name"), namespace=w.namespace, field="metadata.labels"),
                     ev("object", "spec.queueName empty", kind="Workload", name=w.name, namespace=w.namespace,
                        field="spec.queueName", expected=queue)],
                    ctx.workload is not None and w.name == ctx.workload.name)
    return None


def _preemption_over_borrowing(ctx: Context, _args: dict[str, Any]) -> Fingerprint | None:
    for w in _pending_workloads(ctx):
        cq = ctx.idx.cluster_queues.get(cluster_queue_of(ctx.idx, w) or "")
        if cq is None or cq.flavor_fungibility.get("preference") != "PreemptionOverBorrowing":
            continue
        return Fingerprint(
            f"ClusterQueue {cq.name} prefers PreemptionOverBorrowing and {w.ref()} is pending",
            [ev("object", "flavorFungibility.preference PreemptionOverBorrowing", kind="ClusterQueue", name=cq.name,
                field="spec.flavorFungibility.preference")],
            _is_target(ctx, w), kind="config")
    return None


def _cohort_quota_not_reclaimed(ctx: Context, _args: dict[str, Any]) -> Fingerprint | None:
    """A pending workload that fits in the unused quota of a non-root Cohort above its ClusterQueue, while that
    quota is borrowed by ClusterQueues outside the Cohort and the ClusterQueue may reclaim: before the fix Kueue
    counted the request as borrowing (it exceeds the ClusterQueue's own nominal quota) and found no candidates.
    Without that state, a reclaiming ClusterQueue in a Cohort tree is the bug's configuration only."""
    tree = quota_tree(ctx.snap)
    config: Fingerprint | None = None
    for w in _pending_workloads(ctx):
        cq_name = cluster_queue_of(ctx.idx, w) or ""
        cq, node = ctx.idx.cluster_queues.get(cq_name), tree.cluster_queues.get(cq_name)
        policy = str((cq.preemption if cq else {}).get("reclaimWithinCohort") or "Never")
        if cq is None or node is None or policy == "Never":
            continue
        path = tree.path(cq_name)
        if config is None and len(path) > 1:
            config = Fingerprint(
                f"{w.ref()} is pending in ClusterQueue {cq_name} (reclaimWithinCohort {policy}) under the Cohort "
                f"tree {' → '.join(path)}",
                [ev("object", f"reclaimWithinCohort {policy}", kind="ClusterQueue", name=cq_name,
                    field="spec.preemption.reclaimWithinCohort")], _is_target(ctx, w), kind="config")
        for r in parse_pending_message(_pending_message(w)).of(ReasonKind.INSUFFICIENT_UNUSED_QUOTA):
            if not r.flavor or not r.resource:
                continue
            fr, res = (r.flavor, r.resource), r.resource
            need = sum((ps.total().get(res, ZERO) for ps in w.pod_sets), ZERO)
            own = node.quotas[fr].nominal if fr in node.quotas else ZERO
            if need <= own:
                continue
            for name in path[:-1]:
                co = tree.cohorts[name]
                owned = co.subtree_quota.get(fr, ZERO)
                room = owned - co.usage.get(fr, ZERO)
                inside = set(tree.cluster_queues_under(name))
                borrowers = [(n, q) for n, q in sorted(tree.cluster_queues.items()) if n not in inside
                             and q.usage.get(fr, ZERO) > q.subtree_quota.get(fr, ZERO)]
                if room < need or not borrowers:
                    continue
                return Fingerprint(
                    f"{w.ref()} needs {format_quantity(need, res)} {res} in flavor {r.flavor}: Cohort {name} owns "
                    f"{format_quantity(owned, res)} and has {format_quantity(room, res)} of it unused by its own "
                    f"ClusterQueues, while {', '.join(n for n, _ in borrowers)} outside it borrow; ClusterQueue "
                    f"{cq_name} may reclaim (reclaimWithinCohort {policy}) but its own nominal quota is "
                    f"{format_quantity(own, res)}",
                    [ev("condition", _pending_message(w)[:300], kind="Workload", name=w.name,
                        namespace=w.namespace, field="status.conditions[type=QuotaReserved].message"),
                     ev("object", f"{format_quantity(owned, res)} {res} in {r.flavor} under Cohort {name} "
                                  f"(parent {co.parent})", kind="Cohort", name=name, field="spec.resourceGroups"),
                     *(ev("derived", f"uses {format_quantity(q.usage.get(fr, ZERO), res)} {res} in {r.flavor} "
                                     f"with {format_quantity(q.subtree_quota.get(fr, ZERO), res)} of its own: "
                                     "borrowing", kind="ClusterQueue", name=n, field="status")
                       for n, q in borrowers)],
                    _is_target(ctx, w))
    return config


DETECTORS: dict[str, Callable[[Context, dict[str, Any]], Fingerprint | None]] = {
    "borrowing-cq-zero-share": _borrowing_zero_share,
    "fair-sharing-borrowing": _fair_sharing_borrowing,
    "zombie-pods-in-pod-group": _zombies_in_pod_groups,
    "pod-preemption-victim-terminating": _pod_victims_terminating,
    "workload-priority-class-drift": _priority_class_drift,
    "node-selector-other-flavor-label": _node_selector_other_flavor,
    "stale-taint-message": _stale_taint,
    "stale-affinity-message": _stale_affinity,
    "pending-preemption-without-victims": _pending_preemption_without_victims,
    "tas-hostname-equals-top-level": _hostname_top_level,
    "queue-name-not-propagated": _queue_name_not_propagated,
    "preemption-over-borrowing": _preemption_over_borrowing,
    "cohort-quota-not-reclaimed": _cohort_quota_not_reclaimed,
}
