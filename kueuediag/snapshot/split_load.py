"""A large snapshot's object files parsed in two processes.

Reading a 10,000-GPU snapshot is mostly splitting its three bulk List files (Workloads, Jobs, Pods: 210 MB of
JSON) into held items (:mod:`kueuediag.snapshot.held`), ~15 µs of Python per item, one file after another. The
files are independent, so once they are mapped a forked child (:mod:`kueuediag.forked`) parses a share of them
while this process parses the rest. The child sends each of its files' items back: a held item as its
:meth:`~kueuediag.snapshot.held.Held.state` (identity, index keys and where it sits in the file, which this
process reads back from its own copy of the same bytes), a decoded object as itself. Rebuilding a record costs
~2 µs against ~15 µs to split it.

Nothing changes in what is read: the items, their order and every error are the serial reader's.

- The child's files are handed over in file order, interleaved with this process's own.
- A file the child could not send (it raised there, or an item was not read by offset) is parsed here, at its
  turn, so its error is raised exactly where the serial reader raises it; a child that dies has all its files
  parsed here.
- An error in one of this process's files is raised at that file's turn, after the earlier files are handed
  over (the caller may stop at one of those first, as the serial reader does).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any

from kueuediag.cores import auto_jobs
from kueuediag.forked import in_two
from kueuediag.snapshot.held import Held, InMemory, Source
from kueuediag.snapshot.limits import Limits
from kueuediag.snapshot.reader import FileData, Mapped, parse_objects, unmap

MIN_BYTES = 48 << 20
"""object files smaller than this in all (~1 s to split) are parsed in one process: a fork, the child's reply and
rebuilding its records cost more than they save; `--jobs 2` splits whatever the size"""

Item = dict[str, Any] | Held
Sent = list[tuple[Any, ...] | dict[str, Any]] | None
"""what the child sends of one file: a held item's state or a decoded object, each in order; None: parse it here"""


def parse_files(files: Sequence[tuple[str, FileData]], limits: Limits,
                jobs: int | None = None) -> Iterator[list[Item]]:
    """`parse_objects` of each file, in file order, in two processes when it pays (see the module doc;
    :func:`kueuediag.forked.in_two` keeps the serial order of values and errors). `jobs`: None decides (two on an
    idle CPU for large files), 1 never forks, 2 or more always does."""
    theirs = child_share([_size(data) for _, data in files], jobs)
    tasks: list[Callable[[], Any]] = [  # the child's files: what it sends (`Sent`); this process's: their items
        partial(_sendable, rel, data, limits) if i in theirs else partial(parse_objects, rel, data, limits)
        for i, (rel, data) in enumerate(files)]
    for i, value in enumerate(in_two(tasks, theirs)):
        if i not in theirs:
            yield value
            continue
        rel, data = files[i]
        sent: Sent = value
        yield _rebuilt(sent, data) if sent is not None else parse_objects(rel, data, limits)


def child_share(sizes: Sequence[int], jobs: int | None) -> set[int]:
    """The files the child parses (empty: no child): balanced by bytes, the largest file staying here and each
    next one, largest first, going to the side with fewer bytes so far."""
    if jobs == 1 or len(sizes) < 2:
        return set()
    if jobs is None and (sum(sizes) < MIN_BYTES or auto_jobs() < 2):
        return set()
    here = there = 0
    theirs: set[int] = set()
    for i in sorted(range(len(sizes)), key=lambda k: -sizes[k]):
        if there < here:
            theirs.add(i)
            there += sizes[i]
        else:
            here += sizes[i]
    return theirs


def _sendable(rel: str, data: FileData, limits: Limits) -> Sent:
    """The child's reply for one of its files: each item a held item's state or a decoded object, in order; None
    when an item is held as a slice of the bytes (not split by offset): the parent parses the file."""
    sent: list[tuple[Any, ...] | dict[str, Any]] = []
    for item in parse_objects(rel, data, limits, by_offset=True):
        if isinstance(item, Held):
            state = item.state()
            if state is None:
                return None
            sent.append(state)
        else:
            sent.append(item)
    return sent


def _rebuilt(sent: list[tuple[Any, ...] | dict[str, Any]], data: FileData) -> list[Item]:
    """The items the child sent, held items read back from this process's copy of the file."""
    source: Source = data.file if isinstance(data, Mapped) else InMemory(data)
    items: list[Item] = [Held.from_state(x, source) if isinstance(x, tuple) else x for x in sent]
    if isinstance(data, Mapped):
        unmap(data)
    return items


def _size(data: FileData) -> int:
    return len(data.map) if isinstance(data, Mapped) else len(data)
