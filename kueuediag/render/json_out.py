"""`-o json`: the versioned machine contract (schema kueuediag/why/v1, docs/json-output.md)."""

from __future__ import annotations

from typing import Any

from kueuediag import __version__
from kueuediag.models import Evidence, Finding, Fix, Outcome, Verdict
from kueuediag.render.jsondump import dumps

SCHEMA = "kueuediag/why/v1"


def _evidence(e: Evidence) -> dict[str, Any]:
    """An evidence item as JSON: its fields (source, ref, field, observed, expected) and its ref's (kind, name,
    namespace), in field order. A model's ``__dict__`` holds exactly its fields in that order (the models forbid
    extras; :func:`kueuediag.models.assemble` keeps the order too), so it is copied as it is rather than read
    field by field: a fleet scan writes ~38 of these per pending workload. tests/test_json_output.py holds it to
    the field-by-field dict."""
    out = e.__dict__.copy()
    ref = out["ref"]
    if ref is not None:
        out["ref"] = ref.__dict__.copy()
    return out


_OUTCOME_JSON = {o: (o.v1, o.value) for o in Outcome}
"""each outcome's v1 name (`checks[].outcome`) and its value (`checks[].result`), read once"""


def fix_dict(x: Fix) -> dict[str, Any]:
    """A fix as JSON: status says what re-evaluating the snapshot showed (docs/json-output.md)."""
    p = x.patch
    return {
        "text": x.text,
        "command": x.command,
        "status": x.status.value,
        "stopGap": x.stop_gap,
        "note": x.note or None,
        "reason": x.reason or None,
        "patch": None if p is None else {
            "kind": p.kind, "name": p.name, "namespace": p.namespace,
            "type": "create" if p.create else "delete" if p.delete else ("json" if p.json_ops else "merge"),
            "patch": p.create or (list(p.json_ops) if p.json_ops else (p.merge or None)),
            **({"assumed": p.assumed} if p.assumed else {}),
        },
    }


def finding_dict(f: Finding, *, layer: str | None = None) -> dict[str, Any]:
    """One finding as `why -o json` prints it (also used by `health -o json`)."""
    out: dict[str, Any] = {"code": f.code, "check": f.check, "cause": f.cause}
    if layer is not None:
        out["layer"] = layer
    out.update({
        "severity": f.severity.label, "confidence": f.confidence.label, "aboutTarget": f.about_target,
        "title": f.title, "message": f.message, "evidence": [_evidence(e) for e in f.evidence],
        "remediation": list(f.remediation), "docs": f.docs, "data": f.data,
        "contributors": list(f.contributors), "fixes": [fix_dict(x) for x in f.fixes],
    })
    return out


def verdict_dict(v: Verdict) -> dict[str, Any]:
    w = v.workload
    return {
        "schema": SCHEMA,
        "tool": {"name": "kueuediag", "version": __version__},
        "capturedAt": v.captured_at,
        "workload": {
            "namespace": w.namespace,
            "name": w.name,
            "owner": {"kind": w.owner.kind, "name": w.owner.name} if w.owner else None,
            "localQueue": w.local_queue,
            "clusterQueue": w.cluster_queue,
            "state": w.state,
            "pendingSeconds": w.pending_seconds,
            "priority": w.priority,
        },
        "verdict": {"cause": v.cause, "layer": v.layer.value, "headline": v.headline,
                    "confidence": v.confidence.label, "unseen": list(v.unseen),
                    "firstFix": fix_dict(v.first_fix) if v.first_fix else None},
        "findings": [
            {"rank": r.rank, **finding_dict(r.finding, layer=r.layer.value)}
            for r in v.findings
        ],
        "checks": [
            {
                "code": run.code,
                "check": run.check,
                "family": run.family,
                "outcome": (names := _OUTCOME_JSON[run.outcome])[0],
                "result": names[1],
                "reason": run.reason,
                "input": run.input,
                "evidence": [_evidence(e) for e in run.evidence],
                "durationMs": run.duration_ms,
            }
            for run in v.runs
        ],
        "snapshotErrors": list(v.snapshot_errors),
        "snapshotWarnings": list(v.snapshot_warnings),
    }


def render_json(v: Verdict) -> str:
    return dumps(verdict_dict(v))
