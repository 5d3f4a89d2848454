"""Small formatting helpers shared by renderers (no third-party imports)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from kueuediag.models import CheckRun, Evidence, FixStatus, Outcome, Verdict
from kueuediag.timeutil import human_duration

_LOG_PREFIX = re.compile(r"^(?P<where>\S+:\d+): (?P<json>\{.*)$", re.S)
_ZAP_LEVEL = re.compile(r"^Level\((-?\d+)\)$")
_JSON_SCALAR = re.compile(r'"(\w+)":("([^"]*)"|-?\d+(?:\.\d+)?|true|false|null)')
_SKIP_KEYS = frozenset({"level", "ts", "time", "msg", "message", "logger", "caller", "stacktrace"})


FIX_LABELS = {
    FixStatus.VERIFIED: "fix, checked",
    FixStatus.STOP_GAP: "stop-gap",
    FixStatus.UNVERIFIED: "fix, not checked",
    FixStatus.ADVICE: "next step",
}
"""how every renderer names a fix's status (what re-evaluating the snapshot said, see kueuediag.fixes)"""

NO_CHECKED_FIX = ("none of the suggested changes could be confirmed on this snapshot (an object they name is not "
                  "in it); see the evidence below.")

NO_CAUSE = "no check found a cause; record what was seen and attach it to a ticket:"


def snapshot_command(v: Verdict) -> str:
    """The `kueuediag snapshot` command that records what this diagnosis saw (the next step when no check fired)."""
    w = v.workload
    who = f"{w.owner.kind.lower()}/{w.owner.name}" if w.owner else f"workload/{w.name}"
    return f"kueuediag snapshot --for {who}" + (f" -n {w.namespace}" if w.namespace else "") + " --redact"


def _log_value(value: Any) -> str:
    if isinstance(value, dict) and set(value) >= {"name"} and set(value) <= {"name", "namespace", "kind"}:
        return "/".join(str(value[k]) for k in ("kind", "namespace", "name") if value.get(k))
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))[:80]
    return str(value)


def log_line(text: str) -> str:
    """A structured (JSON) controller log line as `time level message key=value …` instead of raw JSON.

    zap's `Level(-3)` is verbosity 3, written `level-3`; `ts` becomes an RFC 3339 second; the caller and logger
    are dropped (they locate code, not the problem). Text that is not a JSON log line is returned unchanged.
    """
    m = _LOG_PREFIX.match(text.strip())
    raw = m.group("json") if m else text.strip()
    if not raw.startswith("{"):
        return text
    truncated = False
    try:
        doc = json.loads(raw)
    except ValueError:  # evidence lines are cut to a length: read the scalar fields that survived
        doc = {m.group(1): m.group(3) if m.group(3) is not None else m.group(2)
               for m in _JSON_SCALAR.finditer(raw)}
        truncated = True
    if not isinstance(doc, dict) or not doc:
        return text
    ts = str(doc.get("ts") or doc.get("time") or "")
    if re.match(r"^\d+(\.\d+)?$", ts):
        ts = datetime.fromtimestamp(float(ts), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    elif len(ts) > 19 and ts[10] == "T":
        ts = ts[:19] + "Z"
    level = str(doc.get("level") or "")
    zap = _ZAP_LEVEL.match(level)
    level = f"level-{-int(zap.group(1))}" if zap else level
    msg = str(doc.get("msg") or doc.get("message") or "")
    pairs = " ".join(f"{k}={_log_value(v)}" for k, v in doc.items() if k not in _SKIP_KEYS)
    return " ".join(x for x in (ts, level, msg, pairs) if x) + (" …" if truncated else "")


def evidence_line(e: Evidence) -> str:
    if e.source == "log":
        e = e.model_copy(update={"observed": log_line(e.observed)})
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
