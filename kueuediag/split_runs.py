"""One diagnosis's checks in two processes: the checks that read the controller logs beside all the others.

On a large cluster the controller logs are the one big input that only a few checks read (KD501 parses and
matches every line; KD902, KD003, KD301 and KD401 read them in some cases: each declares it in `requires` or
`reads`). Their work does not depend on the rest of the diagnosis, and a diagnosis is pure: every check reads
the one loaded Snapshot and nothing else. So, once the snapshot is loaded, a child is forked that runs the
log readers (sharing the snapshot's pages copy-on-write) while this process runs the others; the child sends
its CheckRuns back through a pipe and the runs are put back in check order. The verdict is the serial one: the
same runs in the same order, ranked by the same code (`tests/test_split_runs.py` compares them on every
fixture case).

What the serial run does when a check raises (the target's own objects are unreadable: exit 2) is kept too:
the earliest check in order that raises is the one whose error is raised — a log reader that raised in the
child is run again here, where it raises the same error. A child that dies, or sends something unreadable, has
its checks run here instead. The child never writes to stdout, never runs the parent's exit handlers, is
killed if this process stops first, and stops between two checks when this process was killed.

Worth it only when the logs are large enough to outweigh the fork and the analyses both processes work out
(`worth_splitting`); `why --jobs 1` never forks, and `auto_jobs` forks only onto idle CPUs.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from kueuediag.check import Check
from kueuediag.config import Settings
from kueuediag.cores import auto_jobs, can_fork
from kueuediag.engine import run_configured
from kueuediag.forked import Forked, parent_gone
from kueuediag.models import CheckRun
from kueuediag.snapshot.model import Part, Snapshot
from kueuediag.target import Target

MIN_LOG_CHARS = 4_000_000
"""below this much controller log text (~10,000 lines, ~0.1 s to parse and match) a fork costs more than it
saves; `--jobs 2` forks whatever the size"""


def split_jobs(snap: Snapshot, requested: int | None) -> int:
    """The processes a diagnosis of `snap` uses: what was asked for (`--jobs`), else two when the logs are worth
    it (`worth_splitting`) and a CPU is idle (`auto_jobs`), else one."""
    if not can_fork():
        return 1
    if requested is not None:
        return requested
    return auto_jobs() if worth_splitting(snap) else 1


def reads_logs(check: Check) -> bool:
    return Part.LOGS in check.requires or Part.LOGS in check.reads


def worth_splitting(snap: Snapshot) -> bool:
    """The snapshot holds enough controller log text for a second process to pay for itself."""
    return sum(len(text) for text in snap.logs_text.values()) >= MIN_LOG_CHARS


def run_split(checks: Sequence[Check], snap: Snapshot, target: Target, settings: Settings) -> list[CheckRun]:
    """`run_configured` of every check, in order, the log readers in a forked child (see the module doc); the
    serial loop when nothing splits (no log reader, or nothing else)."""
    side = [i for i, c in enumerate(checks) if reads_logs(c)]
    theirs_at = set(side)
    if not side or len(side) == len(checks):
        return [run_configured(c, snap, target, settings) for c in checks]
    theirs: dict[int, CheckRun] = {}
    raised: tuple[int, BaseException] | None = None
    child = Forked.start(lambda: _run_side([checks[i] for i in side], snap, target, settings))
    if child is None:
        return [run_configured(c, snap, target, settings) for c in checks]
    with child:
        mine: dict[int, CheckRun] = {}
        for i, check in enumerate(checks):
            if i in theirs_at:
                continue
            try:
                mine[i] = run_configured(check, snap, target, settings)
            except Exception as exc:  # noqa: BLE001 - raised below, unless an earlier log reader raises first
                raised = (i, exc)
                break
        runs = child.result()
        if isinstance(runs, list):  # else it died or sent nothing readable: the parent runs those checks itself
            theirs = {i: run for i, run in zip(side, runs, strict=False) if isinstance(run, CheckRun)}
    out: list[CheckRun] = []
    for i, check in enumerate(checks):
        if raised is not None and i == raised[0]:
            raise raised[1]
        run = theirs.get(i) if i in theirs_at else mine.get(i)
        # a log reader the child did not run (it raised there, or the child died): run here, as the serial loop
        out.append(run if run is not None else run_configured(check, snap, target, settings))
    return out


def _run_side(checks: list[Check], snap: Snapshot, target: Target, settings: Settings) -> list[CheckRun]:
    """In the child: its checks' runs, in order, up to the first that raises (the parent runs that one again
    and raises what the serial loop raises) or until the parent is gone."""
    parent = os.getppid()
    runs: list[CheckRun] = []
    for check in checks:
        if parent_gone(parent):  # the main process was killed: nobody will read the runs
            break
        try:
            runs.append(run_configured(check, snap, target, settings))
        except Exception:  # noqa: BLE001 - not sent: the parent runs it again
            break
    return runs
