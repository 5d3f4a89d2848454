"""`health -o json` (schema kueuediag/health/v1, docs/health.md, docs/schema/health-v1.json) and `-o jsonl`.

Additive contract: fields may be added in v1, never renamed or removed. Findings are serialised exactly like
`why -o json`'s, and each head carries the full `why` document of its workload.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

from kueuediag import __version__
from kueuediag.health.catalog import BY_ID
from kueuediag.health.model import Head, HealthReport, Item
from kueuediag.models import Severity, Verdict
from kueuediag.render.json_out import finding_dict, verdict_dict
from kueuediag.render.jsondump import dumps, dumps_line

SCHEMA = "kueuediag/health/v1"


def item_dict(i: Item) -> dict[str, Any]:
    h = BY_ID[i.check]
    return {
        "check": i.check,
        "code": i.finding.code if i.finding is not None else h.code,
        "object": i.ref.model_dump(),
        "status": "fail" if i.finding is not None else "pass",
        "severity": i.finding.severity.label if i.finding is not None else None,
        "note": i.note,
        "finding": finding_dict(i.finding) if i.finding is not None else None,
    }


def summary_dict(report: HealthReport, gate: Severity | None) -> dict[str, Any]:
    by_sev: dict[str, int] = {s.label: 0 for s in Severity}
    for i in report.failures():
        assert i.finding is not None
        by_sev[i.finding.severity.label] += 1
    return {
        "failOn": gate.label if gate is not None else None,
        "failing": len(report.failures(gate)) if gate is not None else None,
        "bySeverity": by_sev,
        "checksRun": list(report.checks_run),
        "notChecked": dict(report.skipped),
    }


def report_dict(report: HealthReport, gate: Severity | None = None) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "tool": {"name": "kueuediag", "version": __version__},
        "capturedAt": report.captured_at,
        "source": report.source,
        "namespaces": list(report.namespaces) if report.namespaces is not None else None,
        "kueueVersion": report.kueue_version,
        "summary": summary_dict(report, gate),
        "clusterQueues": [
            {**{k: v for k, v in asdict(q).items() if k != "quota"}, "path": list(q.path),
             "quota": [asdict(c) for c in q.quota]}
            for q in report.queues
        ],
        "cohorts": [asdict(c) for c in report.cohorts],
        "flavors": [asdict(f) for f in report.flavors],
        "rates": [asdict(r) for r in report.rates],
        "heads": [
            {"clusterQueue": h.cluster_queue, "position": h.position, "namespace": h.namespace, "name": h.name,
             "cause": h.cause, "layer": h.layer.value, "headline": h.headline, "why": verdict_dict(kept(h))}
            for h in report.heads
        ],
        "items": [item_dict(i) for i in report.items],
        "timingsMs": dict(report.timings_ms),
        "snapshotErrors": list(report.snapshot_errors),
    }


def kept(head: Head) -> Verdict:
    """The head's verdict, which a report built for JSON keeps (`build_report(keep_verdicts=True)`)."""
    if head.verdict is None:
        raise ValueError(f"the report kept no verdict for {head.namespace}/{head.name}: build it with keep_verdicts")
    return head.verdict


def render_health_json(report: HealthReport, gate: Severity | None = None) -> str:
    return dumps(report_dict(report, gate))


def verdict_lines(verdicts: Iterable[Verdict]) -> Iterable[str]:
    """`-o jsonl`: one `why -o json` document per line."""
    for v in verdicts:
        line = verdict_line(v)
        yield line.decode() if isinstance(line, bytes) else line


def verdict_line(verdict: Verdict) -> bytes | str:
    """One `-o jsonl` line: UTF-8 bytes, or text that may hold a lone surrogate (:func:`dumps_line`)."""
    return dumps_line(verdict_dict(verdict))
