"""Small formatting helpers shared by renderers (no third-party imports)."""

from __future__ import annotations

from typing import Any

from kueuediag.models import CheckRun, Evidence, Outcome, Verdict
from kueuediag.timeutil import human_duration


def evidence_line(e: Evidence) -> str:
    parts = []
    if e.ref:
        parts.append(str(e.ref))
    if e.field:
        parts.append(e.field)
    where = " ".join(parts)
    text = f"{where}: {e.observed}" if where else e.observed
    if e.expected:
        text += f" (expected {e.expected})"
    return f"[{e.source}] {text}"


def workload_line(v: Verdict) -> str:
    w = v.workload
    bits = []
    if w.name:
        bits.append(f"Workload {w.namespace}/{w.name}")
    elif w.owner:
        bits.append(f"{w.owner.kind} {w.owner.namespace}/{w.owner.name} (no Workload)")
    if w.owner and w.name:
        bits.append(f"owner {w.owner.kind}/{w.owner.name}")
    if w.local_queue:
        bits.append(f"LocalQueue {w.local_queue}")
    if w.cluster_queue:
        bits.append(f"ClusterQueue {w.cluster_queue}")
    if w.priority:
        bits.append(f"priority {w.priority}")
    bits.append(f"state {w.state}")
    if w.pending_seconds is not None:
        bits.append(f"waiting {human_duration(w.pending_seconds)}")
    return " · ".join(bits)


def data_lines(data: dict[str, Any], limit: int = 12, already_shown: str = "") -> list[str]:
    """Readable lines for a finding's structured data (sparklines, histograms, tables).

    Items whose text the message already contains (`already_shown`) are not repeated.
    """
    lines: list[str] = []
    spark = data.get("sparklines")
    if isinstance(spark, dict):
        for name, line in spark.items():
            if str(line) not in already_shown:
                lines.append(f"{name:<12} {line}")
    for key in ("histogram", "hole_histogram"):
        hist = data.get(key)
        if isinstance(hist, dict) and hist:
            lines.append("free holes: " + "  ".join(f"{k} free×{v}" for k, v in hist.items()))
        elif isinstance(hist, str) and hist not in already_shown:
            lines.append(f"free holes: {hist}")
    table = data.get("table")
    if isinstance(table, list):
        for row in table[:limit]:
            if isinstance(row, dict):
                lines.append("  ".join(f"{k}={v}" for k, v in row.items()))
            else:
                lines.append(str(row))
    return lines


def run_note(run: CheckRun) -> str:
    """One line that backs a run's outcome: the ruling-out evidence, the missing input, or the reason."""
    if run.outcome is Outcome.FIRED:
        causes = sorted({f.cause for f in run.findings} | {c.cause for c in run.contributions})
        return ", ".join(causes)
    if run.outcome is Outcome.RULED_OUT:
        if run.evidence:
            more = f" (+{len(run.evidence) - 1} more)" if len(run.evidence) > 1 else ""
            return evidence_line(run.evidence[0]) + more
        return run.reason or "no evidence given"
    if run.outcome is Outcome.COULD_NOT_CHECK and run.input:
        return f"{run.input}: {run.reason}"
    return run.reason


def confidence_line(v: Verdict) -> str:
    """The verdict-level confidence, and what lowered it."""
    text = f"verdict confidence {v.confidence.label}"
    if v.unseen:
        text += f" — could not see {len(v.unseen)} input(s) that bear on it"
    return text
