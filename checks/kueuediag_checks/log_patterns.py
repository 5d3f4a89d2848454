"""KD501 log-patterns: what the Kueue controller's own logs say about the workload."""

from __future__ import annotations

from datetime import datetime
from itertools import islice

from kueuediag.analysis.signatures import (
    BY_ID,
    DECISIVE_MIN_VERBOSITY,
    SignatureHit,
    cause_for_reason,
    hits_concerning,
)
from kueuediag.causes import BY_SLUG, CauseSlug
from kueuediag.check import Check
from kueuediag.models import CheckResult, Confidence, Evidence, Finding, Fix, Severity, ev
from kueuediag.snapshot.kueue import WorkloadState, WorkloadView
from kueuediag.snapshot.logs import LogLine, log_level_info, log_level_patch, log_lines
from kueuediag.snapshot.model import Part, Snapshot
from kueuediag.target import Target
from kueuediag.timeutil import format_rfc3339, human_duration

_TRIM = 360
_CAUSE_LABEL = {"controller-unhealthy": "controller errors"}


class LogPatterns(Check):
    """Matches the Kueue controller logs against a library of known log signatures.

    What it detects:
        Lines of the kueue-controller-manager log (zap JSON, console or plain text) that match a signature
        from `kueuediag.analysis.signatures`: the scheduler's verdict for the workload (`Workload evaluated
        for admission`, level 3), preemptions it issued (`Preempted`, level 3), the same head skipped again and again
        for overlapping preemption targets, `Workload requires preemption, but there are no candidate
        workloads allowed for preemption`, re-queue loops (`Workload re-queued` with `requeueReason`),
        PodsReady-timeout evictions, and controller trouble (webhook and API errors, leader election lost,
        panics). Lines naming the workload or its ClusterQueue come first.
        When the controller runs at the default `--zap-log-level=2`, the decisive level-3 lines cannot be in
        the logs: the check says so (`logging-insufficient`).

    Why the workload stays pending:
        Each signature supports one cause: the scheduler's own `reason` for the workload (quota, flavors,
        preemption in progress), a victim that never goes away (overlapping preemption targets for the same
        head over a long period), victims that take their grace period (re-queued with PendingPreemption),
        or a controller that cannot write (webhook/API errors, lost leadership, panics).

    Evidence:
        The matching log lines (`file:line`, trimmed), with the signature id as the evidence field, the
        number of repetitions and the period they cover; the `--zap-log-level` flag of the manager
        Deployment and the highest verbosity seen in the logs.

    How to fix:
        Follow the cause named by the finding. To get the decisive lines, raise the controller's log level
        while investigating: `kubectl -n kueue-system patch deployment kueue-controller-manager --type json
        -p '[{"op":"replace","path":"/spec/template/spec/containers/0/args/1","value":"--zap-log-level=5"}]'`
        (or `controllerManager.manager.logLevel: 5` in Helm), then collect the logs again.

    Example:
        `logs: Workload evaluated for admission 14 times, last: skipped — Workload has overlapping preemption
        targets with another workload [stuck-preemption-target]`
    """

    code = "KD501"
    name = "log-patterns"
    requires = (Part.LOGS,)
    default_severity = Severity.MEDIUM
    options = {"max_evidence_lines": 4}

    def run(self, snapshot: Snapshot, target: Target) -> CheckResult:
        w = target.workload
        assert w is not None
        cq = target.cluster_queue(snapshot)
        onset = w.queue_order_time
        pending = w.state in (WorkloadState.PENDING, WorkloadState.QUOTA_RESERVED)
        findings: list[Finding] = []
        cluster_wide: dict[str, list[SignatureHit]] = {}
        about_workload: dict[str, list[SignatureHit]] = {}
        for hit in hits_concerning(snapshot, w.name, None):
            sig = hit.signature
            names_target = hit.index.names_workload(w.namespace, w.name)
            if sig.id == "evaluated-for-admission":
                if names_target:
                    findings.append(self._evaluated(hit, target))
                continue
            if sig.id == "preempted":
                if names_target:
                    findings.append(self._preempted(hit, target))
                continue
            if not hit.noteworthy:
                continue
            if sig.per == "workload":
                if names_target:
                    about_workload.setdefault(hit.cause, []).append(hit)
                continue  # about another workload: context only when it names the ClusterQueue (below)
            cluster_wide.setdefault(hit.cause, []).append(hit)
        in_queue = queue_context(snapshot, w, cq)
        # per-workload signatures: one finding per cause for the target, then context from other heads of its
        # ClusterQueue
        for cause, hits in about_workload.items():
            findings.append(self._repeated(hits[0], target, about=True) if len(hits) == 1
                            else self._merged(cause, hits, target, True))
        for hits in in_queue.values():
            findings += [self._repeated(h, target, about=False) for h in hits]
        # cluster-wide signatures (controller errors), one finding per cause: about the target when they name
        # it or its ClusterQueue, or when they happened while it was pending.
        for cause, hits in cluster_wide.items():
            lines = [ln for h in hits for ln in h.lines]
            last = _last_ts(lines)
            about = any(h.index.names_workload(w.namespace, w.name) for h in hits) \
                or (cq is not None and any(h.index.names_cluster_queue(cq) for h in hits)) \
                or (pending and last is not None and (onset is None or last >= onset))
            findings.append(self._repeated(hits[0], target, about=about) if len(hits) == 1
                            else self._merged(cause, hits, target, about))
        insufficient = self._logging_insufficient(snapshot, target, findings)
        if insufficient is not None:
            findings.append(insufficient)
        scanned, span = _scanned(snapshot)
        return self.result(findings, ev(
            "log", f"{scanned} controller log line(s) scanned{span}: no known "
                   f"signature names workload {w.namespace}/{w.name}" + (f" or ClusterQueue {cq}" if cq else "")
                   + ", and no controller error while it waited", field="kueue-controller-manager logs"))

    # --- findings -------------------------------------------------------------------------------------------

    def _evaluated(self, hit: SignatureHit, target: Target) -> Finding:
        w = target.workload
        assert w is not None
        mine = hit.index.naming_workload(w.namespace, w.name)
        last = mine[-1]
        status = last.field_text("status") or "(no status)"
        reason = last.field_text("reason")
        cause = cause_for_reason(reason) if reason else None
        short = _clip(reason, 160) if reason else "no reason given"
        times = f"{len(mine)} time{'s' if len(mine) != 1 else ''}"
        span = _span(mine)
        return self.finding(
            cause or "waiting-for-quota",
            f"logs: Workload evaluated for admission {times}{span}, last: {status} — {short}",
            f"At log level 3 and above the scheduler logs its verdict for every workload it looks at. For "
            f"{w.namespace}/{w.name} the last verdict ({_when(last)}) was status `{status}` with reason: "
            f"{reason or '(empty)'}. This is the same text Kueue writes into the QuotaReserved condition, "
            "straight from the scheduling cycle.",
            severity=Severity.MEDIUM if cause else Severity.LOW,
            confidence=Confidence.HIGH if cause else Confidence.MEDIUM,
            evidence=self._evidence(mine, hit.signature.id, target),
            about_target=True,
            data={"signature": hit.signature.id, "count": len(mine), "status": status, "reason": reason},
        )

    def _preempted(self, hit: SignatureHit, target: Target) -> Finding:
        w = target.workload
        assert w is not None
        as_preemptor = [ln for ln in hit.lines if _ref_is(ln, "preemptingWorkload", w.namespace, w.name)]
        as_victim = [ln for ln in hit.lines if _ref_is(ln, "targetWorkload", w.namespace, w.name)]
        if as_preemptor:
            victims = sorted({v for v in (ln.field_text("targetWorkload") for ln in as_preemptor) if v})
            shown = ", ".join(victims[:5]) + (f" and {len(victims) - 5} more" if len(victims) > 5 else "")
            return self.finding(
                CauseSlug.PREEMPTION_IN_PROGRESS,
                f"logs: preempted {len(victims)} workload(s) to make room ({shown})",
                f"The scheduler issued preemptions for {w.namespace}/{w.name} ({_when(as_preemptor[-1])}): "
                f"{shown}. The workload is admitted only once every victim has released its quota; victims "
                "that take their whole termination grace period (or pods stuck terminating) keep it waiting.",
                severity=Severity.LOW, confidence=Confidence.HIGH,
                evidence=self._evidence(as_preemptor, hit.signature.id, target), about_target=True,
                data={"signature": hit.signature.id, "victims": victims},
            )
        lines = as_victim or list(hit.lines)
        by = sorted({v for v in (ln.field_text("preemptingWorkload") for ln in lines) if v})
        return self.finding(
            CauseSlug.PREEMPTION_IN_PROGRESS,
            f"logs: this workload was preempted by {', '.join(by[:3]) or 'another workload'}",
            f"The scheduler preempted {w.namespace}/{w.name} ({_when(lines[-1])}) to admit "
            f"{', '.join(by) or 'another workload'}; it went back to the queue and waits for quota again.",
            severity=Severity.LOW, confidence=Confidence.HIGH,
            evidence=self._evidence(lines, hit.signature.id, target), about_target=True,
            data={"signature": hit.signature.id, "preemptors": by},
        )

    def _repeated(self, hit: SignatureHit, target: Target, about: bool) -> Finding:
        sig = hit.signature
        w = target.workload
        assert w is not None
        lines = sorted(hit.lines, key=lambda ln: 0 if ln.names_workload(w.namespace, w.name) else 1)
        times = f"{hit.count} time{'s' if hit.count != 1 else ''}"
        who = ""
        if sig.per == "workload" and hit.key:
            who = " for this workload" if about else f" for {hit.key}"
        span = _span(list(hit.lines))
        extra = ""
        if sig.id.startswith("requeue-loop"):
            reasons = sorted({ln.field_text("requeueReason") or '""' for ln in hit.lines})
            extra = f" (requeueReason {', '.join(reasons)})"
        upstream = f" Upstream: {sig.upstream}." if sig.upstream else ""
        if hit.escalated:
            upstream = f" {sig.escalate_note}{upstream}"
        return self.finding(
            hit.cause,
            f"logs: {sig.title} — {times}{who}{span}{extra}",
            f"{sig.meaning} Seen {times}{who}{span} (last {_when(lines[-1])}).{upstream}",
            severity=sig.severity if about else min(sig.severity, Severity.MEDIUM),
            confidence=Confidence.MEDIUM if about else Confidence.LOW,
            evidence=self._evidence(lines, sig.id, target), about_target=about,
            data={"signature": sig.id, "count": hit.count, "span_seconds": round(hit.span_seconds, 1),
                  "key": hit.key},
        )

    def _merged(self, cause: str, hits: list[SignatureHit], target: Target, about: bool) -> Finding:
        w = target.workload
        assert w is not None
        hits = sorted(hits, key=lambda h: -int(h.signature.severity))
        short = ", ".join(f"{h.signature.id} {h.count}x" for h in hits)
        summary = "; ".join(f"{h.signature.title} ({h.count}x)" for h in hits)
        lines: list[LogLine] = []
        seen: set[str] = set()
        for h in hits:  # the last line of each signature first, then the rest
            for ln in (h.lines[-1], *h.lines[:-1]):
                if ln.location not in seen:
                    seen.add(ln.location)
                    lines.append(ln)
        lines.sort(key=lambda ln: 0 if ln.names_workload(w.namespace, w.name) else 1)
        severity = max(h.signature.severity for h in hits)
        all_lines = [ln for h in hits for ln in h.lines]
        meanings = " ".join(f"{h.signature.title}: {h.signature.meaning}" for h in hits[:3])
        evidence = []
        for h in hits[:6]:
            ln = h.lines[-1]
            mine = ln.names_workload(w.namespace, w.name)
            evidence.append(ev("log", f"{ln.location}: {_clip(ln.raw.strip(), _TRIM)}", field=h.signature.id,
                               kind="Workload" if mine else None, name=w.name if mine else None,
                               namespace=w.namespace if mine else None))
        return self.finding(
            cause, f"logs: {_CAUSE_LABEL.get(cause, _label(cause))} — {short}{_span(all_lines)}",
            f"The controller logs show: {summary}. {meanings}",
            severity=severity if about else min(severity, Severity.MEDIUM),
            confidence=Confidence.MEDIUM if about else Confidence.LOW,
            evidence=evidence, about_target=about,
            data={"signatures": [h.signature.id for h in hits], "count": len(lines)},
        )

    def _logging_insufficient(self, snap: Snapshot, target: Target,
                              findings: list[Finding]) -> Finding | None:
        w = target.workload
        assert w is not None
        if any(f.data.get("signature") in ("evaluated-for-admission", "preempted") for f in findings):
            return None
        if w.state not in (WorkloadState.PENDING, WorkloadState.QUOTA_RESERVED):
            return None
        info = log_level_info(snap)
        level = info.effective
        if level is None or level >= DECISIVE_MIN_VERBOSITY:
            return None
        structured = snap.memo("kd501-structured-lines",
                               lambda: sum(1 for ln in log_lines(snap) if ln.verbosity is not None))
        evidence: list[Evidence] = []
        if info.flag is not None and info.flag_source:
            kind, _, rest = info.flag_source.partition("/")
            ns, _, name = rest.partition("/")
            path = "spec.template.spec.containers[manager].args" if kind == "Deployment" \
                else "spec.containers[manager].args"
            evidence.append(ev("object", f"--zap-log-level={info.flag_raw}", kind=kind, name=name,
                               namespace=ns, field=path, expected="--zap-log-level=5"))
        evidence.append(ev("log", f"{structured} structured lines, most verbose level {info.max_seen}"
                           if info.max_seen is not None else "no structured log lines",
                           field="verbosity", expected=f"level {DECISIVE_MIN_VERBOSITY} or more"))
        names = " and ".join(f"`{(BY_ID[s].msg or '').strip('^$')}`"
                             for s in ("evaluated-for-admission", "preempted"))
        how = "the manager's --zap-log-level flag" if info.flag is not None else "the logs (no flag found)"
        patch = log_level_patch(snap, 5)  # the level the talk on instrumenting Kueue recommends
        return self.finding(
            CauseSlug.LOGGING_INSUFFICIENT,
            f"controller logs at level {level}: the level-3 lines that say why are not written",
            f"According to {how}, Kueue logs at level {level}, so {names} (level 3) never reach the logs, and the "
            f"logs cannot say why {w.namespace}/{w.name} is pending. Raise the manager to --zap-log-level=5 "
            "while investigating (the KubeCon talk on instrumenting Kueue recommends level 5), then collect the "
            "logs again.",
            severity=Severity.LOW, confidence=Confidence.HIGH if info.flag is not None else Confidence.MEDIUM,
            evidence=evidence,
            remediation=[] if patch is not None else [
                "Raise the Kueue manager container's --zap-log-level to 5 (its Deployment is not in this snapshot)."],
            fixes=[Fix(text=f"Raise the Kueue manager to --zap-log-level=5 while investigating (editing the "
                                  f"Deployment rolls the controller), then collect the logs again; revert to {level} "
                                  "afterwards (level 5 is verbose). Helm: --set controllerManager.manager.logLevel=5.",
                        patch=patch)] if patch is not None else [],
            about_target=False,
            data={"flag": info.flag, "max_seen": info.max_seen},
        )

    def _evidence(self, lines: list[LogLine], sig_id: str, target: Target) -> list[Evidence]:
        w = target.workload
        assert w is not None
        n = int(self.opts["max_evidence_lines"])
        picked = lines if len(lines) <= n else lines[: n - 1] + lines[-1:]
        out: list[Evidence] = []
        for ln in picked:
            mine = ln.names_workload(w.namespace, w.name)
            out.append(ev("log", f"{ln.location}: {_clip(ln.raw.strip(), _TRIM)}", field=sig_id,
                          kind="Workload" if mine else None, name=w.name if mine else None,
                          namespace=w.namespace if mine else None))
        return out


def _label(cause: str) -> str:
    title = BY_SLUG[cause].title
    return title[:1].lower() + title[1:]


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _last_ts(lines: tuple[LogLine, ...] | list[LogLine]) -> datetime | None:
    times = [ln.ts for ln in lines if ln.ts is not None]
    return max(times) if times else None


def queue_context(snap: Snapshot, w: WorkloadView, cq: str | None, limit: int = 3) -> dict[str, list[SignatureHit]]:
    """The first `limit` hits per cause about other workloads of ClusterQueue `cq` (noteworthy, per workload, at
    least medium severity): the context KD501 adds for `w`, a lookup in what `_queue_hits` read once per queue."""
    out: dict[str, list[SignatureHit]] = {}
    for cause, hits in (_queue_hits(snap, cq) if cq is not None else {}).items():
        others = list(islice((h for h in hits if not h.index.names_workload(w.namespace, w.name)), limit))
        if others:
            out[cause] = others
    return out


def _queue_hits(snap: Snapshot, cq: str) -> dict[str, list[SignatureHit]]:
    """Noteworthy per-workload hits of at least medium severity that name ClusterQueue `cq`, by cause (in
    `signature_hits` order): the context a pending workload of the queue gets about the others. The same for every
    workload of the queue, so read once per ClusterQueue; each target only leaves out the hits naming itself."""

    def build() -> dict[str, list[SignatureHit]]:
        out: dict[str, list[SignatureHit]] = {}
        for hit in hits_concerning(snap, "", cq):
            sig = hit.signature
            if sig.id in ("evaluated-for-admission", "preempted") or sig.per != "workload" or not hit.noteworthy \
                    or sig.severity < Severity.MEDIUM or not hit.index.names_cluster_queue(cq):
                continue
            out.setdefault(hit.cause, []).append(hit)
        return out

    return snap.memo(("KD501:queue-hits", cq), build)


def _scanned(snap: Snapshot) -> tuple[int, str]:
    """How many log lines there are and the period they cover (once per snapshot, not once per target)."""

    def build() -> tuple[int, str]:
        lines = log_lines(snap)
        return len(lines), _span(lines) if lines else ""

    return snap.memo("kd501-scanned", build)


def _span(lines: list[LogLine]) -> str:
    times = [ln.ts for ln in lines if ln.ts is not None]
    if len(times) < 2:
        return ""
    seconds = (max(times) - min(times)).total_seconds()
    return f" over {human_duration(seconds)}" if seconds >= 1 else ""


def _when(line: LogLine) -> str:
    return f"at {format_rfc3339(line.ts)}" if line.ts is not None else f"at {line.location}"


def _ref_is(line: LogLine, key: str, namespace: str, name: str) -> bool:
    return line.field_text(key) in (f"{namespace}/{name}", name)
