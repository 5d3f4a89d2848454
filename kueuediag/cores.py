"""How many processes a run may use: the one rule `health --all-pending` and `why` share.

Both fork after the snapshot is loaded, so the children read its pages copy-on-write instead of loading it
again. A second process pays for itself only on an idle CPU: forked work costs 10-15 % more CPU in all (pages
copied on write, analyses each process works out for itself), and on a 2-core machine already running 3-6
other processes the forked run measured slower than the serial one (docs/performance.md).
"""

from __future__ import annotations

import os
import sys


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def auto_jobs() -> int:
    """One process per usable CPU while the CPUs have room, else one: like `make -l`, nothing is forked while
    the 1-minute load average is at or above the usable CPUs."""
    cpus = usable_cpus()
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return 1
    return cpus if load < cpus else 1


def can_fork() -> bool:
    return hasattr(os, "fork") and sys.platform != "win32"
