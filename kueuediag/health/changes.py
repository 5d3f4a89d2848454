"""What changed between two watch cycles, in the words an on-call engineer scans for.

`health --watch`: a head's cause changed, a head was admitted (no longer pending), a guarantee violation
started or ended, a ClusterQueue stalled or resumed, an object started or stopped failing a check.
`why --watch`: the verdict's cause changed, the workload's state changed (admitted, finished).
"""

from __future__ import annotations

from kueuediag.health.model import HealthReport
from kueuediag.models import Verdict
from kueuediag.timeutil import human_duration


def report_changes(prev: HealthReport, cur: HealthReport) -> list[str]:
    out: list[str] = []
    old_heads = {(h.namespace, h.name): h for h in prev.heads}
    new_heads = {(h.namespace, h.name): h for h in cur.heads}
    for key, h in sorted(new_heads.items()):
        before = old_heads.get(key)
        if before is not None and before.cause != h.cause:
            out.append(f"cause changed: {key[0]}/{key[1]} {before.cause} → {h.cause}")
        elif before is None:
            out.append(f"new head of {h.cluster_queue}: {key[0]}/{key[1]} ({h.cause})")
    for key, h in sorted(old_heads.items()):
        if key not in new_heads:
            out.append(f"no longer pending (admitted or gone): {key[0]}/{key[1]} (was head of {h.cluster_queue})")
    old_q = {q.name: q for q in prev.queues}
    for q in cur.queues:
        was = old_q.get(q.name)
        if was is None:
            continue
        out += _edge(was.violation_seconds, q.violation_seconds,
                     f"guarantee violation started: ClusterQueue {q.name}",
                     f"guarantee violation ended: ClusterQueue {q.name}")
        if was.active and not q.active:
            out.append(f"ClusterQueue {q.name} became inactive ({q.inactive_reason})")
    old_r = {r.cluster_queue: r for r in prev.rates}
    for r in cur.rates:
        rate = old_r.get(r.cluster_queue)
        if rate is None:
            continue
        stalled_for = human_duration(r.stalled_seconds) if r.stalled_seconds is not None else ""
        started = f"ClusterQueue {r.cluster_queue} stalled: no admission for {stalled_for} while work is pending"
        out += _edge(rate.stalled_seconds, r.stalled_seconds, started, f"ClusterQueue {r.cluster_queue} admits again")
    old_fail = {(i.check, str(i.ref)) for i in prev.items if i.failed}
    new_fail = {(i.check, str(i.ref)) for i in cur.items if i.failed}
    out += [f"now failing: {check} {ref}" for check, ref in sorted(new_fail - old_fail)]
    out += [f"recovered: {check} {ref}" for check, ref in sorted(old_fail - new_fail)]
    return out


def _edge(before: float | None, now: float | None, started: str, ended: str) -> list[str]:
    """A condition measured as "seconds since it began, or None": the line for its start or its end, if any."""
    if before is None and now is not None:
        return [started]
    if before is not None and now is None:
        return [ended]
    return []


def verdict_changes(prev: Verdict, cur: Verdict) -> list[str]:
    out = []
    if prev.workload.state != cur.workload.state:
        what = "admitted" if cur.workload.state == "admitted" else f"now {cur.workload.state}"
        out.append(f"{what}: state {prev.workload.state} → {cur.workload.state}")
    if prev.cause != cur.cause:
        out.append(f"cause changed: {prev.cause} → {cur.cause}")
    return out
