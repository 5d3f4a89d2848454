"""Load a snapshot from disk: read the bytes, index the objects, validate the metrics.

This sits above :mod:`kueuediag.snapshot.model` (the index) and :mod:`kueuediag.snapshot.metrics` (which
needs the index): keeping the loader in its own module means neither of those imports the other back.
"""

from __future__ import annotations

import gc
from datetime import datetime
from functools import partial

from kueuediag.snapshot.limits import DEFAULT_LIMITS, Limits
from kueuediag.snapshot.metrics import metric_store
from kueuediag.snapshot.model import Snapshot
from kueuediag.snapshot.reader import read_snapshot
from kueuediag.snapshot.split_load import parse_files


def load_snapshot(path: str, now: datetime | None = None, limits: Limits = DEFAULT_LIMITS,
                  jobs: int | None = None) -> Snapshot:
    """Read and index a snapshot from disk within `limits`; malformed input raises InputError (exit 2). `jobs`:
    processes that parse the object files (:mod:`kueuediag.snapshot.split_load`; None: two for a large snapshot
    on an idle CPU)."""
    # Loading creates millions of small objects and none of them form garbage cycles: the cyclic GC would
    # rescan the whole heap again and again (a third of the load time on a 200 MB snapshot). Pause it while
    # reading, then move the loaded objects out of its view.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        snap = Snapshot(read_snapshot(path, limits, partial(parse_files, jobs=jobs)), now=now, limits=limits)
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
    if snap.metrics_text:
        # Validate metrics at load so a malformed .om file is an input error (exit 2), not an errored check.
        metric_store(snap)
    return snap
