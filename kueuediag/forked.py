"""Work done in a forked child beside this process, its return value sent back through a pipe.

kueuediag is pure over one loaded snapshot, so a child forked from this process sees every page it needs
copy-on-write and can do a share of the work while this process does the rest: loading a large snapshot's
object files (:mod:`kueuediag.snapshot.split_load`) and a diagnosis's log readers (:mod:`kueuediag.split_runs`)
both do. This module owns how: the fork, the pipe, the child's life and its end.

- The child runs one function, pickles what it returns and ends with ``os._exit``: it never writes to stdout,
  never returns into this process's code and never runs its exit handlers.
- :meth:`Forked.result` is that value, or None when the child died, raised or sent something unreadable: the
  caller then does the child's share itself, so a failed child costs time, never a verdict.
- A child still running when this process is done with it (an error or Ctrl-C here) is killed and reaped.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Collection, Iterator, Sequence
from types import TracebackType
from typing import Generic, TypeVar

from kueuediag.cores import can_fork

T = TypeVar("T")


class Forked(Generic[T]):
    """One child running one function (see the module doc); use it as a context manager so that the child is
    always reaped."""

    def __init__(self, pid: int, fd: int) -> None:
        self._pid: int | None = pid
        self._fd: int | None = fd

    @classmethod
    def start(cls, work: Callable[[], T]) -> Forked[T] | None:
        """Fork a child that runs `work`; None where this platform cannot fork."""
        if not can_fork():
            return None
        read_end, write_end = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child's coverage is not collected; callers' tests compare what it sends
            os.close(read_end)
            _serve(write_end, work)
        os.close(write_end)
        return cls(pid, read_end)

    def result(self) -> T | None:
        """What the child's function returned (waiting for it), or None when it sent nothing readable."""
        fd = self._fd
        if fd is None:
            return None
        chunks = []
        try:
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
        finally:
            self.stop()
        try:
            import pickle  # noqa: PLC0415 - only a forked run needs it (a small `why` starts without it)

            value: T = pickle.loads(b"".join(chunks))
        except Exception:  # noqa: BLE001 - nothing sent (it died or raised) or a truncated reply: the caller redoes it
            return None
        return value

    def stop(self) -> None:
        """Close the pipe and reap the child, killing it first if it is still running (idempotent)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        pid, self._pid = self._pid, None
        if pid is None:
            return
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done == 0:
                os.kill(pid, signal.SIGTERM)
                os.waitpid(pid, 0)
        except (ChildProcessError, ProcessLookupError):
            pass

    def __enter__(self) -> Forked[T]:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def in_two(tasks: Sequence[Callable[[], T]], side: Collection[int]) -> Iterator[T]:
    """Every task's value, in order, the tasks at the indices `side` run in a forked child beside the others; what
    the serial loop ``for task in tasks: yield task()`` yields or raises, as long as the tasks are pure (each reads
    only what was there before the fork).

    - The child runs its tasks in order until one raises (or this process is gone) and sends their values.
    - This process runs the others in order until one raises; the child is reaped before the first value is
      yielded (a caller that stops early leaves no child behind).
    - The earliest task that raises, by index, is the one raised, at its turn, whichever process ran it: a task
      the child did not send (it raised there, the child died, or its values could not be sent) is run here.

    Serial where the child cannot help: nothing on the side, nothing beside it, or no fork on this platform."""
    theirs_at = set(side)
    child = None
    order = sorted(theirs_at)
    if theirs_at and len(theirs_at) < len(tasks):
        child = Forked.start(lambda: _run_until_raised([tasks[i] for i in order]))
    if child is None:
        yield from (task() for task in tasks)
        return
    mine: dict[int, T] = {}
    raised: tuple[int, BaseException] | None = None
    theirs: dict[int, T] = {}
    with child:
        for i, task in enumerate(tasks):
            if i in theirs_at:
                continue
            try:
                mine[i] = task()
            except Exception as exc:  # noqa: BLE001 - raised at its turn below, unless an earlier task raises first
                raised = (i, exc)
                break
        values = child.result()
        if isinstance(values, list):
            theirs = dict(zip(order, values, strict=False))
    for i, task in enumerate(tasks):
        if raised is not None and i == raised[0]:
            raise raised[1]
        if i in theirs_at:
            yield theirs.pop(i) if i in theirs else task()
        else:
            yield mine.pop(i)


def _run_until_raised(tasks: Sequence[Callable[[], T]]) -> list[T]:
    """In the child: its tasks' values, in order, up to the first that raises (the parent runs that one again
    and raises what the serial loop raises) or until the parent is gone."""
    parent = os.getppid()
    values: list[T] = []
    for task in tasks:
        if parent_gone(parent):  # nobody will read the values
            break
        try:
            values.append(task())
        except Exception:  # noqa: BLE001 - not sent: the parent runs it again
            break
    return values


def parent_gone(parent: int) -> bool:
    """In a child: the process that forked it (`parent`, read right after the fork) has ended, so nobody will
    read what the child would send."""
    return os.getppid() != parent


def _serve(out: int, work: Callable[[], object]) -> None:  # pragma: no cover - runs in the child
    """The child's whole life: run `work`, send its pickled value, end without the parent's exit path. A raising
    `work` sends nothing (the parent's `result` is None)."""
    code = 0
    try:
        import pickle  # noqa: PLC0415

        signal.signal(signal.SIGINT, signal.SIG_DFL)
        data = memoryview(pickle.dumps(work(), protocol=pickle.HIGHEST_PROTOCOL))
        while data:
            data = data[os.write(out, data):]
    except BaseException:  # noqa: BLE001 - whatever happens, never return into the parent's code
        code = 1
    os._exit(code)
