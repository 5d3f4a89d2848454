"""Run checks isolated and timed, then rank their findings into a Verdict.

A broken check never breaks the diagnosis: an exception becomes an *errored* CheckRun with its message.
A check whose declared inputs are missing is *skipped* with the reason.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from kueuediag import __version__  # noqa: F401  (re-exported for renderers)
from kueuediag.causes import BY_SLUG, Tier
from kueuediag.check import Check
from kueuediag.config import Settings
from kueuediag.errors import InputError
from kueuediag.models import CheckRun, Finding, Layer, ObjectRef, Outcome, Verdict, WorkloadInfo
from kueuediag.ranking import rank, verdict_cause
from kueuediag.snapshot.k8s import meta
from kueuediag.snapshot.model import Snapshot
from kueuediag.target import Target
from kueuediag.timeutil import human_duration


def matches(selector: str, cls: type[Check]) -> bool:
    s = selector.strip()
    if not s:
        return False
    up = s.upper()
    if up == cls.code:
        return True
    if up.startswith("KD") and len(up) in (3, 5) and (len(up) == 3 or up.endswith("XX")):
        return cls.code[:3] == up[:3]
    return s.lower() in (cls.name, cls.family())


def select_checks(classes: Sequence[type[Check]], settings: Settings) -> list[Check]:
    chosen = []
    known = {c.code for c in classes}
    for sel in settings.select + settings.ignore + list(settings.severity):
        if not any(matches(sel, c) for c in classes) and sel not in BY_SLUG:
            raise InputError(f"unknown check, family or cause {sel!r} in select/ignore/severity")
    for code in settings.check_options:
        if code not in known:
            raise InputError(f"options given for unknown check {code}")
    for cls in classes:
        if settings.select and not any(matches(s, cls) for s in settings.select):
            continue
        if any(matches(s, cls) for s in settings.ignore):
            continue
        try:
            chosen.append(cls(settings.check_options.get(cls.code)))
        except (ValueError, TypeError) as exc:
            raise InputError(str(exc)) from None
    return chosen


def run_check(check: Check, snap: Snapshot, target: Target) -> CheckRun:
    base: dict[str, Any] = {"code": check.code, "check": check.name, "family": check.family()}
    for part in check.requires:
        why = snap.part_unavailable(part)
        if why:
            return CheckRun(**base, outcome=Outcome.SKIPPED, reason=why)
    if check.needs_workload and target.workload is None:
        why = (f"the target's Workload could not be read ({target.workload_unknown})" if target.workload_unknown
               else "no Workload exists for this target")
        return CheckRun(**base, outcome=Outcome.SKIPPED, reason=why)
    start = time.perf_counter()
    try:
        findings = check.run(snap, target)
    except InputError:
        raise  # bad input (a junk quantity in an object the check read) is the user's to fix: exit 2
    except Exception as exc:  # isolation: one broken check must not break the diagnosis
        elapsed = (time.perf_counter() - start) * 1000
        return CheckRun(**base, outcome=Outcome.ERRORED, reason=f"{type(exc).__name__}: {exc}",
                        duration_ms=round(elapsed, 2))
    elapsed = (time.perf_counter() - start) * 1000
    outcome = Outcome.FIRED if findings else Outcome.CLEAR
    return CheckRun(**base, outcome=outcome, findings=tuple(findings), duration_ms=round(elapsed, 2))


def _override(f: Finding, settings: Settings, cls_map: dict[str, type[Check]]) -> Finding | None:
    if f.cause in settings.ignore:
        return None
    cls = cls_map.get(f.code)
    for key, sev in settings.severity.items():
        if key == f.cause or (cls is not None and matches(key, cls)):
            return f.model_copy(update={"severity": sev})
    return f


def workload_info(snap: Snapshot, target: Target) -> WorkloadInfo:
    w = target.workload
    owner = None
    if target.owner is not None:
        owner = ObjectRef(kind=target.owner.get("kind", "?"), name=meta(target.owner).get("name", "?"),
                          namespace=meta(target.owner).get("namespace"))
    if w is None:
        return WorkloadInfo(namespace=target.namespace, name=None, owner=owner, local_queue=target.local_queue,
                            cluster_queue=None, state="unknown" if target.workload_unknown else "not-managed")
    pending = None
    if w.state in ("pending", "quota-reserved"):
        since = w.queue_order_time
        pending = snap.age_seconds(since)
    return WorkloadInfo(
        namespace=w.namespace, name=w.name, owner=owner, local_queue=w.queue_name,
        cluster_queue=target.cluster_queue(snap), state=w.state,
        pending_seconds=round(pending, 1) if pending is not None else None, priority=w.priority,
    )


def diagnose(snap: Snapshot, target: Target, classes: Sequence[type[Check]], settings: Settings) -> Verdict:
    checks = select_checks(classes, settings)
    cls_map = {c.code: type(c) for c in checks}
    runs: list[CheckRun] = []
    findings: list[Finding] = []
    for check in checks:
        run = run_check(check, snap, target)
        kept = tuple(f for f in (_override(f, settings, cls_map) for f in run.findings) if f is not None)
        if run.outcome is Outcome.FIRED and not kept:
            run = run.model_copy(update={"outcome": Outcome.CLEAR, "findings": (),
                                         "reason": "all findings ignored by configuration"})
        else:
            run = run.model_copy(update={"findings": kept})
        runs.append(run)
        findings.extend(kept)
    info = workload_info(snap, target)
    ranked = rank(findings)
    cause, layer = verdict_cause(ranked)
    return Verdict(
        workload=info, cause=cause, layer=layer, headline=headline(ranked, info),
        findings=tuple(ranked), runs=tuple(runs),
        captured_at=snap.now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        snapshot_errors=tuple(f"{what}: {err}" for what, err in snap.manifest.errors),
    )


def headline(ranked: Sequence[object], info: WorkloadInfo) -> str:
    from kueuediag.models import RankedFinding

    items = [r for r in ranked if isinstance(r, RankedFinding)]
    who = f"{info.owner.kind.lower()}/{info.owner.name}" if info.owner else f"workload/{info.name}"
    if not items:
        return f"{who}: no check found a cause ({info.state}); see the checks that were skipped or errored."
    top = items[0].finding
    c = BY_SLUG[top.cause]
    waited = f" after {human_duration(info.pending_seconds)}" if info.pending_seconds else ""
    text = f"{who} is {info.state}{waited}: {top.title} [{top.cause}, {c.layer.value} layer]"
    if top.cause == "not-pending":
        text = f"{who} is {info.state}: {top.title}"
    explains = any(r.finding.cause == "guarantee-violation" and r.finding.about_target for r in items[1:])
    if explains and c.tier is Tier.ROOT:
        text += " — this explains the guarantee violation"
    return text


__all__ = ["diagnose", "run_check", "select_checks", "workload_info", "Layer"]
