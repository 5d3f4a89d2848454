"""One diagnosis's checks in two processes: the checks that read the controller logs beside all the others.

On a large cluster the controller logs are the one big input that only a few checks read (KD501 parses and
matches every line; KD902, KD003, KD301 and KD401 read them in some cases: each declares it in `requires` or
`reads`). Their work does not depend on the rest of the diagnosis, and a diagnosis is pure: every check reads
the one loaded Snapshot and nothing else. So, once the snapshot is loaded, a child is forked that runs the
log readers (sharing the snapshot's pages copy-on-write) while this process runs the others
(:func:`kueuediag.forked.in_two`); the runs are put back in check order. The verdict is the serial one: the
same runs in the same order, ranked by the same code (`tests/test_split_runs.py` compares them on every
fixture case). What the serial run does when a check raises (the target's own objects are unreadable: exit 2)
is kept too: the earliest check in order that raises is the one whose error is raised, and a child that dies
has its checks run here instead.

Worth it only when the logs are large enough to outweigh the fork and the analyses both processes work out
(`worth_splitting`); `why --jobs 1` never forks, and `auto_jobs` forks only onto idle CPUs.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from kueuediag.check import Check
from kueuediag.config import Settings
from kueuediag.cores import auto_jobs, can_fork
from kueuediag.engine import run_configured
from kueuediag.forked import in_two
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
    return list(in_two([partial(run_configured, c, snap, target, settings) for c in checks], side))
