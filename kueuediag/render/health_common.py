"""Plain-text pieces of the health report shared by the terminal and Markdown renderers (no third-party imports).

Sections in reading order for on-call: ClusterQueues (as the cohort tree), flavors, rates, stuck things,
heads. A section whose checks all passed is one summary line.
"""

from __future__ import annotations

from kueuediag.health.catalog import HEALTH_CHECKS
from kueuediag.health.model import HealthReport, Item, QueueRow
from kueuediag.records import dataclass
from kueuediag.timeutil import human_duration

SECTIONS = (("queues", "ClusterQueues and cohorts"), ("flavors", "Flavors"), ("rates", "Rates"),
            ("stuck", "Stuck things"), ("heads", "Pending heads"))


@dataclass(frozen=True)
class SectionView:
    key: str
    title: str
    failing: list[Item]
    passing: list[Item]
    lines: list[str]
    """the section's table lines (tree, histograms, sparklines)"""
    summary: str


def _checks_of(section: str) -> set[str]:
    return {h.id for h in HEALTH_CHECKS if h.section == section}


def queue_line(q: QueueRow) -> str:
    bits = [f"pending {q.pending_workloads}", f"holding quota {q.admitted_workloads}"]
    if q.violation_seconds is not None:
        bits.append(f"guarantee violated {human_duration(q.violation_seconds)} ({q.violating_workloads} wl)")
    if q.inactive_reason:
        bits.append(f"INACTIVE {q.inactive_reason}")
    if q.share_reported is not None or q.share_recomputed is not None:
        bits.append(f"share reported {q.share_reported if q.share_reported is not None else '-'} / "
                    f"recomputed {q.share_recomputed or '-'}")
    return f"{q.name}: " + ", ".join(bits)


def queue_tree(report: HealthReport) -> list[str]:
    """Cohort tree, ClusterQueues under their cohort, quota cells under each queue."""
    lines: list[str] = []
    by_cohort: dict[str | None, list[QueueRow]] = {}
    for q in report.queues:
        by_cohort.setdefault(q.cohort, []).append(q)
    cohorts = {c.name: c for c in report.cohorts}

    def emit_queue(q: QueueRow, indent: str) -> None:
        lines.append(f"{indent}{queue_line(q)}")
        for c in q.quota:
            lines.append(f"{indent}    {c.flavor}/{c.resource}: nominal {c.nominal} reserved {c.reserved} "
                         f"borrowed {c.borrowed} lent {c.lent} unused {c.unused} pending {c.pending}")

    def emit_cohort(name: str, indent: str, seen: set[str]) -> None:
        if name in seen:
            return
        seen.add(name)
        lines.append(f"{indent}cohort {name}")
        for child in sorted(c.name for c in report.cohorts if c.parent == name):
            emit_cohort(child, indent + "  ", seen)
        for q in by_cohort.get(name, []):
            emit_queue(q, indent + "  ")

    seen: set[str] = set()
    for name in sorted(n for n, c in cohorts.items() if c.parent is None or c.parent not in cohorts):
        emit_cohort(name, "", seen)
    for q in by_cohort.get(None, []):
        emit_queue(q, "")
    return lines


def flavor_lines(report: HealthReport) -> list[str]:
    lines = []
    for f in report.flavors:
        frag = f"{f.fragmentation:.0%}" if f.fragmentation is not None else "-"
        lines.append(f"{f.name} ({f.resource}): {f.usable_nodes}/{f.nodes} nodes usable, {f.total_free} free, "
                     f"largest hole {f.largest_hole}, fragmentation {frag} (common shape {f.common_shape or '-'})")
        if f.resource != "cpu":
            lines.append("    holes " + "  ".join(f"{k}:{n}" for k, n in f.histogram.items() if n)
                         + "   slots " + "  ".join(f"{k}-pod:{n}" for k, n in f.slots.items()))
        for d in f.domains:
            lines.append(f"    TAS {f.topology} level {d['level']}: {d['domains']} domains, best "
                         f"{d['bestFree']} free / {d['bestSlots']} slots")
    return lines


def rate_lines(report: HealthReport) -> list[str]:
    lines = []
    for r in report.rates:
        flags = []
        if r.trickle_gap_seconds is not None:
            flags.append(f"admission trickle every {human_duration(r.trickle_gap_seconds)}")
        if r.preemption_gap_seconds is not None:
            flags.append(f"preemption trickle every {human_duration(r.preemption_gap_seconds)}")
        if r.stalled_seconds is not None:
            flags.append(f"STALLED {human_duration(r.stalled_seconds)}")
        lines.append(f"{r.cluster_queue}: admissions {r.admission_sparkline or '-'} ({r.admissions})  "
                     f"preemptions {r.preemption_sparkline or '-'} ({r.preemptions})  pending {r.pending:g}"
                     + (f"  [{'; '.join(flags)}]" if flags else ""))
    return lines


def head_lines(report: HealthReport) -> list[str]:
    return [f"{h.cluster_queue} #{h.position} {h.namespace}/{h.name}: {h.cause} — {h.headline}"
            for h in report.heads]


def sections(report: HealthReport) -> list[SectionView]:
    out = []
    for key, title in SECTIONS:
        checks = _checks_of(key)
        items = [i for i in report.items if i.check in checks]
        failing = [i for i in items if i.failed]
        passing = [i for i in items if not i.failed]
        lines = {"queues": queue_tree, "flavors": flavor_lines, "rates": rate_lines,
                 "heads": head_lines}.get(key, lambda r: [])(report)
        n_obj = {"queues": f"{len(report.queues)} ClusterQueue(s)", "flavors": f"{len(report.flavors)} flavor(s)",
                 "rates": f"{len(report.rates)} ClusterQueue(s)", "heads": f"{len(report.heads)} head(s)"}.get(
            key, f"{len(items)} check(s)")
        summary = (f"{len(failing)} problem(s) in {n_obj}" if failing else f"healthy: {n_obj} checked")
        out.append(SectionView(key, title, failing, passing, lines, summary))
    return out
