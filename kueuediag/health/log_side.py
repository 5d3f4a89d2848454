"""The controller log's analyses worked out in a forked child, handed back in a compact form.

`health --all-pending` on a large cluster starts with one process busy: its first ClusterQueue works out the
cluster-wide analyses every head reads before the workers are forked to inherit them. The largest of those is
the controller log's parse and signature scan (100,000 lines at the benchmark's scale 1: ~1 s and ~0.5 s), and
it reads nothing else of the snapshot, so a child forked beside this process does it while this process works
out what does not read the log (the violation pass, the report's quota and flavor sections).

What makes the hand-over pay is its form. Pickling the parsed lines themselves costs about as much as parsing
them (each line is reduced on its own, its time an object of its own). The lines are instead sent column by
column, one list per field, so the pickle sends each distinct text (a logger, a message, what a line names)
once and refers to it after; a time in UTC goes as microseconds since the epoch (exact), and a line's `text`
(its whole file's text) not at all: this process reads it back from its own copy. A hit is its signature's id,
its key and its lines' indices. Sending and rebuilding cost about a third of parsing and scanning; the lines and
hits are equal to the ones this process would have worked out, field for field (`tests/test_log_side.py`).

Nothing is installed when anything is off: no reply (the child died or raised), a line that does not sit in
its file's text as parsing leaves it, a signature id this process does not know, or the log already analysed
here. The analyses are then worked out here, when first asked, as before.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from operator import attrgetter
from typing import Any

from kueuediag.analysis.signatures import SIGNATURES, SignatureHit, hits_concerning_index, signature_hits
from kueuediag.forked import Forked
from kueuediag.snapshot.logs import LogLine, log_lines
from kueuediag.snapshot.model import Snapshot

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)

_COLUMNS = ("file", "lineno", "format", "ts", "level", "verbosity", "severity", "logger", "caller", "msg", "error",
            "stacktrace", "kept_fields", "_refs", "start", "stop")
"""the LogLine fields sent, one list each in line order (`text` is read back here); `ts` as described below"""
FIELDS = ("file", "lineno", "text", *_COLUMNS[2:])
"""LogLine's fields in order, as `rebuild` passes them"""
_TS = _COLUMNS.index("ts")

Handover = tuple[list[list[Any]], list[tuple[str, str, list[int]]], Any]
"""(the lines' columns, the hits as (signature id, key, line indices), the hits' index by name), as sent"""

_KEYS = ("log-lines", "log-signature-hits", "log-signature-hits-by-name")
"""the memo entries the hand-over fills (`log_lines`, `signature_hits`, `hits_concerning`'s index)"""


def start(snap: Snapshot) -> Forked[Handover | None] | None:
    """Fork the child that parses and scans `snap`'s logs; None when this platform cannot fork."""
    return Forked.start(lambda: handover(snap))


def handover(snap: Snapshot) -> Handover | None:
    """The log's lines, signature hits and their index by name in the compact form (see the module doc); None
    when a line is not a slice of its file's text (this process could not read it back)."""
    lines = log_lines(snap)
    hits = signature_hits(snap)
    index = hits_concerning_index(snap)
    texts = snap.logs_text
    if any(ln.text is not texts.get(ln.file) for ln in lines):
        return None
    # Column by column: the pickle sends each distinct text (a logger, a message...) once and refers to it after.
    columns = [list(map(attrgetter(name), lines)) for name in _COLUMNS]
    columns[_TS] = [(ts - _EPOCH) // _MICROSECOND if ts is not None and ts.tzinfo is UTC else ts
                    for ts in columns[_TS]]  # a time in UTC as microseconds since the epoch: exact, and small
    position = dict(zip(map(id, lines), range(len(lines)), strict=True)).__getitem__
    sent_hits = [(h.signature.id, h.key, list(map(position, map(id, h.lines)))) for h in hits]
    return columns, sent_hits, index


def install(snap: Snapshot, sent: Handover | None) -> bool:
    """Put the child's lines, hits and index into `snap`'s memo as if worked out here; False (nothing installed)
    when there is nothing usable or one of them is already worked out."""
    if sent is None or any(snap.has_memo(key) for key in _KEYS):
        return False
    rebuilt = rebuild(snap, sent)
    if rebuilt is None:
        return False
    lines, hits = rebuilt
    snap.memo("log-lines", lambda: lines)
    snap.memo("log-signature-hits", lambda: hits)
    snap.memo("log-signature-hits-by-name", lambda: sent[2])
    return True


def rebuild(snap: Snapshot, sent: Handover) -> tuple[list[LogLine], list[SignatureHit]] | None:
    """The lines and hits `handover` describes, read back against this process's copy of the log texts; None
    when a file or a signature id is not this process's."""
    columns, sent_hits, _ = sent
    texts = snap.logs_text
    files = columns[0]
    if len(columns) != len(_COLUMNS) or not set(files) <= texts.keys():
        return None
    by_id = {s.id: s for s in SIGNATURES}
    if any(sid not in by_id for sid, _, _ in sent_hits):
        return None
    times = [_EPOCH + ts * _MICROSECOND if type(ts) is int else ts for ts in columns[_TS]]
    lines = list(map(LogLine, files, columns[1], [texts[f] for f in files], columns[2], times, *columns[_TS + 1:]))
    hits = [SignatureHit(by_id[sid], key, tuple(lines[i] for i in at)) for sid, key, at in sent_hits]
    return lines, hits
