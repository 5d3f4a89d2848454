"""Run checks isolated and timed, then rank their findings into a Verdict.

A broken check never breaks the diagnosis: an exception becomes an *errored* CheckRun with its message.
A check whose declared inputs are missing *could not check* (naming the input); a check that needs a Workload
is *not applicable* to a target without one. What several checks say about one cause is merged into one
finding (kueuediag.merge), and the verdict carries a confidence that drops when relevant inputs were unseen.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Mapping, Sequence
from typing import Any

from kueuediag import __version__  # noqa: F401  (re-exported for renderers)
from kueuediag.causes import BY_SLUG, TIER_ORDER, Tier, owned_tiers, owners
from kueuediag.causes import cause as cause_of
from kueuediag.check import Check, CouldNotCheck, NotApplicable
from kueuediag.config import Settings
from kueuediag.errors import InputError, KueuediagError, MalformedObject
from kueuediag.fixes import first_fix, verify
from kueuediag.frozen import assemble
from kueuediag.merge import merge_runs
from kueuediag.models import (
    CheckResult,
    CheckRun,
    Confidence,
    Finding,
    Layer,
    ObjectRef,
    Outcome,
    RankedFinding,
    Verdict,
    WorkloadInfo,
    replaced,
)
from kueuediag.ranking import rank, sort_key, verdict_cause
from kueuediag.registry import is_builtin
from kueuediag.snapshot.k8s import meta
from kueuediag.snapshot.kueue import WorkloadState
from kueuediag.snapshot.model import Snapshot
from kueuediag.target import Target, resolve
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
    for cls in classes:
        try:
            cls.register_causes()  # a plugin class handed in directly (tests, kueuediag.testing)
        except ValueError as exc:
            raise InputError(str(exc)) from None
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


@functools.cache
def _run_fields(cls: type[Check]) -> dict[str, Any]:
    """The fields every run of a check class starts with (class-level metadata, worked out once per class)."""
    return {"code": cls.code, "check": cls.name, "family": cls.family()}


@functools.cache
def _assembles_runs(cls: type[Check]) -> bool:
    """Whether a run of `cls` that returned a CheckResult is assembled without validating it again: only for
    kueuediag's own checks, whose results (built by CheckResult's constructors) were validated when built, and
    whose class fields validate as a run's (checked here, once per class). A plugin's run is validated."""
    if not is_builtin(cls):
        return False
    CheckRun(**_run_fields(cls), outcome=Outcome.NOT_APPLICABLE)  # raises if the class fields do not validate
    return True


def run_check(check: Check, snap: Snapshot, target: Target) -> CheckRun:
    """Run one check isolated and timed, and turn whatever it returned or raised into an honest CheckRun."""
    base = _run_fields(type(check))
    for part in check.requires:
        why = snap.part_unavailable(part)
        if why:
            return CheckRun(**base, outcome=Outcome.COULD_NOT_CHECK, input=part.value, reason=why)
    if check.needs_workload and target.workload is None:
        if target.workload_unknown:  # its collection failed: unknown, not absent
            return CheckRun(**base, outcome=Outcome.COULD_NOT_CHECK, input="workloads",
                        reason=f"the target's Workload could not be read ({target.workload_unknown})")
        return CheckRun(**base, outcome=Outcome.NOT_APPLICABLE, reason="no Workload exists for this target")
    start = time.perf_counter()
    try:
        result = as_result(check.run(snap, target))
    except CouldNotCheck as exc:
        result = CheckResult.could_not_check(exc.input, exc.reason)
    except NotApplicable as exc:
        result = CheckResult.not_applicable(exc.reason)
    except MalformedObject as exc:
        if is_target_object(exc, target):
            raise  # the target itself is unreadable: the user's to fix, exit 2
        text = str(exc).removeprefix(f"{exc.source}: ") if exc.source else str(exc)  # the input names the object
        result = CheckResult.could_not_check(exc.ref, text.removeprefix(f"{exc.ref}: ") or text)
    except InputError as exc:  # another unreadable input (metrics file, Kueue configuration): this check only
        result = CheckResult.could_not_check("snapshot input", str(exc))
    except Exception as exc:  # isolation: one broken check must not break the diagnosis
        result = CheckResult(outcome=Outcome.ERRORED, reason=f"{type(exc).__name__}: {exc}")
    elapsed = (time.perf_counter() - start) * 1000
    # a CheckResult's fields are its __dict__ (no extras: the models forbid them), read without pydantic's iterator
    got = result.__dict__
    if type(result) is CheckResult and _assembles_runs(type(check)):
        return assemble(CheckRun, {  # CheckRun's fields in their order (tests/test_engine.py holds it)
            "code": base["code"], "check": base["check"], "family": base["family"], "outcome": got["outcome"],
            "reason": got["reason"], "duration_ms": round(elapsed, 2), "findings": got["findings"],
            "contributions": got["contributions"], "evidence": got["evidence"], "input": got["input"]})
    return CheckRun(**{**base, **got, "duration_ms": round(elapsed, 2)})


def is_target_object(exc: MalformedObject, target: Target) -> bool:
    """The malformed object is the target's own Workload or the job object that owns it."""
    objs = [target.owner] if target.owner is not None else []
    if target.workload is not None:
        objs.append(target.workload.obj)
    return any(
        str(o.get("kind")) == exc.kind and meta(o).get("name") == exc.name
        and (meta(o).get("namespace") or None) == exc.namespace
        for o in objs
    )


def as_result(returned: CheckResult | list[Finding]) -> CheckResult:
    """Accept the v1 return shape (a list of findings) next to CheckResult.

    A non-empty list fired. An empty list says nothing about what was looked at, so it is never taken as
    "ruled out": the run is errored with a message that tells the check's author what to return instead.
    """
    if isinstance(returned, CheckResult):
        return returned
    if returned:
        return CheckResult.fired(returned)
    return CheckResult(outcome=Outcome.ERRORED, reason=EMPTY_LIST)


EMPTY_LIST = ("returned an empty list, which says nothing about what was looked at: return "
              "CheckResult.ruled_out(evidence), could_not_check(input, reason) or not_applicable(reason)")


def override_finding(f: Finding, settings: Settings, classes: Mapping[str, type[Check]]) -> Finding | None:
    """The finding as the configuration wants it shown: None when its cause is ignored, else with a configured
    severity override (`severity: {KD101: high}` by code, family or cause slug) applied.

    Public so every caller that shows a check's finding (`why` through :func:`diagnose`, `health`'s queue tree
    and owner questions) applies the configuration the same way. ``classes`` maps check codes to classes.
    """
    if f.cause in settings.ignore:
        return None
    cls = classes.get(f.code)
    for key, sev in settings.severity.items():
        if key == f.cause or (cls is not None and matches(key, cls)):
            return replaced(f, severity=sev)
    return f


def drop_ignored(run: CheckRun, settings: Settings) -> CheckRun:
    """The run without the findings and contributions of ignored causes; a run left with nothing is not
    applicable, with the ignored causes named (public for the same reason as :func:`override_finding`)."""
    if run.outcome is not Outcome.FIRED:
        return run
    ignore = settings.ignore
    if not ignore or not any(f.cause in ignore for f in run.findings) \
            and not any(c.cause in ignore for c in run.contributions):
        return run  # nothing to drop: the run as it is (a copy per fired run was most of this function's cost)
    findings = tuple(f for f in run.findings if f.cause not in settings.ignore)
    contributions = tuple(c for c in run.contributions if c.cause not in settings.ignore)
    if findings or contributions:
        return replaced(run, findings=findings, contributions=contributions)
    causes = sorted({f.cause for f in run.findings} | {c.cause for c in run.contributions})
    return replaced(run, outcome=Outcome.NOT_APPLICABLE, findings=(), contributions=(),
                    reason=f"all findings ({', '.join(causes)}) ignored by configuration")


def run_configured(check: Check, snap: Snapshot, target: Target, settings: Settings) -> CheckRun:
    """One check run isolated (:func:`run_check`) with the configuration's ignore list applied: what
    :func:`diagnose` does for each selected check, and what `health` does when it asks a cause's owner."""
    return drop_ignored(run_check(check, snap, target), settings)


def workload_info(snap: Snapshot, target: Target) -> WorkloadInfo:
    w = target.workload
    owner = None
    if target.owner is not None:
        owner = ObjectRef(kind=target.owner.get("kind", "?"), name=meta(target.owner).get("name", "?"),
                     namespace=meta(target.owner).get("namespace"))
    if w is None:
        return WorkloadInfo(namespace=target.namespace, name=None, owner=owner,
                    local_queue=target.local_queue, cluster_queue=None,
                    state=WorkloadState.UNKNOWN if target.workload_unknown else WorkloadState.NOT_MANAGED)
    pending = None
    if w.state in (WorkloadState.PENDING, WorkloadState.QUOTA_RESERVED):
        since = w.queue_order_time
        pending = snap.age_seconds(since)
    return WorkloadInfo(namespace=w.namespace, name=w.name, owner=owner, local_queue=w.queue_name,
        cluster_queue=target.cluster_queue(snap), state=w.state,
        pending_seconds=round(pending, 1) if pending is not None else None, priority=w.priority,
    )


def diagnose(snap: Snapshot, target: Target, classes: Sequence[type[Check]], settings: Settings,
             verify_fixes: bool = True, checks: Sequence[Check] | None = None, jobs: int = 1) -> Verdict:
    """Run the checks, merge and rank the findings, and check every patch-backed fix against a patched copy of
    the snapshot (kueuediag.fixes) so that only fixes that help are printed.

    `checks` is `select_checks(classes, settings)` when the caller diagnoses many targets with the same
    settings (`health`): checks keep nothing between runs, so one selection serves every target. With `jobs`
    above 1 the checks that read the controller logs run in a forked child beside the others
    (kueuediag.split_runs); the verdict is the same."""
    if checks is None:
        checks = select_checks(classes, settings)
    cls_map = {c.code: type(c) for c in checks}
    if jobs > 1:
        from kueuediag.split_runs import run_split

        runs = run_split(checks, snap, target, settings)
    else:
        runs = [run_configured(check, snap, target, settings) for check in checks]
    merged = merge_runs(runs, owners())
    findings = [f for f in (override_finding(f, settings, cls_map) for f in merged) if f is not None]
    info = workload_info(snap, target)
    ranked = rank(findings)
    if verify_fixes:
        ranked = _with_verified_fixes(snap, target, classes, settings, ranked)
    cause, layer = verdict_cause(ranked)
    confidence, unseen = verdict_confidence(ranked, runs)
    blind = blind_spots(ranked, runs)
    if is_incomplete(ranked, blind):  # a context finding is never the answer while relevant checks were blind
        cause, layer = "unknown", Layer.NONE
    return Verdict(workload=info, cause=cause, layer=layer, headline=headline(ranked, info, blind),
        findings=tuple(ranked), runs=tuple(runs),
        captured_at=snap.memo(("captured-at", snap.now), lambda: snap.now.strftime("%Y-%m-%dT%H:%M:%SZ")),
        snapshot_errors=tuple(f"{what}: {err}" for what, err in snap.manifest.errors),
        snapshot_warnings=tuple(snap.warnings),
        confidence=confidence, unseen=tuple(unseen), first_fix=first_fix(r.finding for r in ranked),
    )


def _with_verified_fixes(snap: Snapshot, target: Target, classes: Sequence[type[Check]], settings: Settings,
                         ranked: Sequence[RankedFinding]) -> list[RankedFinding]:
    # Only the check that found a cause decides whether a fix removes it, so only that check is run again (with
    # no select/ignore: a filtered-out check would look like a cured cause).
    def again(patched: Snapshot, code: str) -> list[Finding]:
        try:
            moved = resolve(patched, target.query, target.namespace)
        except KueuediagError:  # the fix removed the target itself: nothing left to be pending
            return []
        owner = [c for c in classes if c.code == code]
        plain = dataclasses.replace(settings, select=[], ignore=[])
        verdict = diagnose(patched, moved, owner, plain, verify_fixes=False)
        return [r.finding for r in verdict.findings]

    w = target.workload
    checked = verify(snap, [r.finding for r in ranked], again, pending=(w.namespace, w.name) if w else None)
    return [r if f is r.finding else replaced(r, finding=f) for r, f in zip(ranked, checked, strict=True)]


_UNSEEN = (Outcome.COULD_NOT_CHECK, Outcome.ERRORED)


def verdict_confidence(ranked: Sequence[RankedFinding], runs: Sequence[CheckRun]) -> tuple[Confidence, list[str]]:
    """How far to trust the verdict, and what the diagnosis could not see that bears on it.

    A run that could not check (or errored) is relevant when its check owns a cause at the top cause's tier or
    above (it might have found something that outranks the verdict), or when it owns the top cause itself. The
    verdict starts at the top finding's confidence and drops one level for one or two relevant blind spots, to
    low for three or more. With no finding at all the verdict is low confidence.
    """
    relevant = blind_spots(ranked, runs)
    if not ranked:
        return Confidence.LOW, [_unseen_line(r) for r in relevant]
    level = int(ranked[0].finding.confidence)
    if relevant:
        level = level - 1 if len(relevant) < 3 else int(Confidence.LOW)
    return Confidence(max(level, int(Confidence.LOW))), [_unseen_line(r) for r in relevant]


def blind_spots(ranked: Sequence[RankedFinding], runs: Sequence[CheckRun]) -> list[CheckRun]:
    """The runs that could not check (or errored) and bear on the verdict (see verdict_confidence); every such
    run when nothing was found."""
    if not ranked:
        return [r for r in runs if r.outcome in _UNSEEN]
    unseen = [r for r in runs if r.outcome in _UNSEEN]
    if not unseen:
        return []
    top = ranked[0].finding
    top_tier = TIER_ORDER[cause_of(top.cause).tier]
    owned = owned_tiers()
    return [r for r in unseen if r.code == top.code or any(t <= top_tier for t in owned.get(r.code, ()))]


def is_incomplete(ranked: Sequence[RankedFinding], blind: Sequence[CheckRun]) -> bool:
    """Only context was found (the top finding ranks as context) while checks that bear on it were blind."""
    return bool(ranked and blind) and sort_key(ranked[0].finding)[1] == TIER_ORDER[Tier.CONTEXT]


def _unseen_line(run: CheckRun) -> str:
    what = f"{run.input}: " if run.input else ""
    state = "errored" if run.outcome is Outcome.ERRORED else "could not check"
    return f"{run.code} {run.check} {state} — {what}{run.reason}"


def headline(ranked: Sequence[object], info: WorkloadInfo, blind: Sequence[CheckRun] = ()) -> str:
    """One line: the verdict — or, when only context was found and relevant checks were blind, that the
    diagnosis is incomplete and what could not be checked (a context finding is never presented as the answer).
    """
    items = [r for r in ranked if isinstance(r, RankedFinding)]
    who = f"{info.owner.kind.lower()}/{info.owner.name}" if info.owner else f"workload/{info.name}"
    if not items:
        return f"{who}: no check found a cause ({info.state}); see the checks that were skipped or errored."
    top = items[0].finding
    c = BY_SLUG[top.cause]
    waited = f" after {human_duration(info.pending_seconds)}" if info.pending_seconds else ""
    text = f"{who} is {info.state}{waited}: {top.title} [{top.cause}, {c.layer.value} layer]"
    if is_incomplete(items, blind):
        checks = ", ".join(f"{r.code} {r.check}" for r in blind)
        unread = (r.input or "its inputs" for r in blind if r.outcome is Outcome.COULD_NOT_CHECK)
        inputs = ", ".join(dict.fromkeys(unread))
        text = (f"{who} is {info.state}{waited}: diagnosis incomplete — could not check {checks}"
                + (f" (unreadable: {inputs})" if inputs else "")
                + f"; only context was found: {top.title} [{top.cause}]")
    if top.cause == "not-pending":
        text = f"{who} is {info.state}: {top.title}"
    explains = any(r.finding.cause == "guarantee-violation" and r.finding.about_target for r in items[1:])
    if explains and c.tier is Tier.ROOT:
        text += " — this explains the guarantee violation"
    return text


__all__ = ["diagnose", "run_check", "select_checks", "workload_info", "Layer"]
