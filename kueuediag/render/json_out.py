"""`-o json`: the versioned machine contract (schema kueuediag/why/v1, docs/json-output.md)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from kueuediag import __version__
from kueuediag.models import Evidence, Verdict

SCHEMA = "kueuediag/why/v1"


def _default(o: Any) -> Any:
    if isinstance(o, Decimal):
        return int(o) if o == o.to_integral_value() else float(o)
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    if hasattr(o, "isoformat"):
        return o.isoformat()
    return str(o)


def _evidence(e: Evidence) -> dict[str, Any]:
    return {
        "source": e.source,
        "ref": e.ref.model_dump() if e.ref else None,
        "field": e.field,
        "observed": e.observed,
        "expected": e.expected,
    }


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
                    "confidence": v.confidence.label, "unseen": list(v.unseen)},
        "findings": [
            {
                "rank": r.rank,
                "code": r.finding.code,
                "check": r.finding.check,
                "cause": r.finding.cause,
                "layer": r.layer.value,
                "severity": r.finding.severity.label,
                "confidence": r.finding.confidence.label,
                "aboutTarget": r.finding.about_target,
                "title": r.finding.title,
                "message": r.finding.message,
                "evidence": [_evidence(e) for e in r.finding.evidence],
                "remediation": list(r.finding.remediation),
                "docs": r.finding.docs,
                "data": r.finding.data,
                "contributors": list(r.finding.contributors),
            }
            for r in v.findings
        ],
        "checks": [
            {
                "code": run.code,
                "check": run.check,
                "family": run.family,
                "outcome": run.outcome.v1,
                "result": run.outcome.value,
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
    return json.dumps(verdict_dict(v), indent=2, default=_default, ensure_ascii=False) + "\n"
