"""`health --all-pending` on several cores: the ClusterQueues' heads shared among forked processes.

A fleet scan diagnoses every pending workload with `why`'s engine; each diagnosis reads the one shared,
read-only Snapshot and nothing else, so the work splits cleanly by ClusterQueue. After the snapshot is loaded
(and each queue's order worked out), `jobs - 1` children are forked: they share the loaded snapshot's pages
copy-on-write instead of loading it again. Each process takes the next ClusterQueue from a common ticket pipe
(so a slow queue does not leave a core idle), diagnoses its heads exactly as the serial scan does, and writes
their output and summaries to a file of its own in a private temporary directory. The main process runs the
report's other sections first, then takes tickets too, and prints the queues' output strictly in ClusterQueue
order as each becomes ready: the output is byte for byte the serial scan's, whatever the timing.

What a process memoises per ClusterQueue is worked out once, in the process that owns the queue; what is
memoised per snapshot (the cluster's violation pass, the controller log's signatures) is worked out in each
process that needs it, which is CPU time spent twice but not wall time. A child never writes to stdout, never
runs the parent's exit handlers, and is killed if the main process stops early (an error, Ctrl-C, a closed
pipe); a queue whose child died is diagnosed by the main process instead.
"""

from __future__ import annotations

import os
import pickle
import shutil
import signal
import struct
import sys
import tempfile
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from pathlib import Path

from kueuediag.errors import ExitCode, KueuediagError
from kueuediag.health.model import Head, Item
from kueuediag.models import Verdict
from kueuediag.records import dataclass

MAX_TICKETS = 4096
"""at most this many tickets (4 bytes each) are written into the pipe before forking: well under its 64 KiB"""
_TICKET = struct.Struct("<I")


@dataclass(frozen=True)
class HeadSink:
    """Where each head's own output goes as soon as it is diagnosed (`-o jsonl`)."""

    render: Callable[[Verdict], bytes]
    """the head's output, encoded as it is printed; called in whichever process diagnosed the head"""
    write: Callable[[bytes], object]
    """prints the output of a run of heads, in order; called in the main process only"""


class WorkerFailed(KueuediagError):
    """A head's diagnosis failed in a worker process: the same message and exit code the serial scan gives."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = ExitCode(exit_code)


Work = Callable[[str], Iterator[tuple[Head, Item, bytes]]]
"""diagnoses one ClusterQueue's heads: each head's summary (no verdict), its item and its output"""


class HeadPool:
    """`jobs` processes (this one and `jobs - 1` forked children) diagnosing `queues` with `work`."""

    def __init__(self, queues: Sequence[str], work: Work, jobs: int, sink: HeadSink | None) -> None:
        per = -(-len(queues) // MAX_TICKETS)  # ClusterQueues per ticket: one, unless there are thousands
        self.groups = [list(queues[i:i + per]) for i in range(0, len(queues), per)]
        self.work, self.sink = work, sink
        self.dir = Path(tempfile.mkdtemp(prefix="kueuediag-heads-"))
        self.children: list[int] = []
        # The first group is diagnosed before forking: it works out the cluster-wide analyses every head reads
        # (the violation pass, the controller log's signatures, the rate windows), which the children inherit
        # instead of each working them out again.
        self._do(0)
        read, write = os.pipe()
        os.write(write, b"".join(_TICKET.pack(i) for i in range(1, len(self.groups))))
        os.close(write)  # readers see end-of-file once every ticket is taken
        self.tickets = read
        sys.stdout.flush()
        sys.stderr.flush()
        for _ in range(max(jobs - 1, 0)):
            pid = os.fork()
            if pid == 0:
                self._child()
            self.children.append(pid)

    def _child(self) -> None:
        """A child's whole life: take tickets until there are none, then end without the parent's exit path."""
        code = 0
        try:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            while (k := self._ticket()) is not None:
                if not self._do(k):
                    break
        except BaseException:  # noqa: BLE001 - whatever happens, never return into the parent's code
            code = 1
        os._exit(code)

    def _ticket(self) -> int | None:
        data = os.read(self.tickets, _TICKET.size)  # a pipe read of 4 bytes written up front is whole
        return _TICKET.unpack(data)[0] if len(data) == _TICKET.size else None

    def _do(self, k: int) -> bool:
        """Diagnose group `k` into its files; False when a diagnosis failed (the failure is recorded)."""
        texts: list[bytes] = []
        results: list[tuple[Head, Item]] = []
        outcome: tuple[str, object] = ("ok", results)
        try:
            for cq in self.groups[k]:
                for head, item, text in self.work(cq):
                    texts.append(text)
                    results.append((head, item))
        except KueuediagError as exc:
            outcome = ("error", (str(exc), int(exc.exit_code)))
        except Exception as exc:  # noqa: BLE001 - reported in the main process as the serial scan reports it
            outcome = ("error", (f"internal error: {type(exc).__name__}: {exc}", int(ExitCode.USAGE)))
        (self.dir / f"{k}.txt").write_bytes(b"".join(texts))
        part = self.dir / f"{k}.part"
        part.write_bytes(pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(part, self.dir / f"{k}.done")  # the marker the main process waits for
        return outcome[0] == "ok"

    def run(self) -> Iterator[tuple[Head, Item]]:
        """Take tickets in this process too, then print every group's output in order as it becomes ready."""
        try:
            emitted = 0
            while (k := self._ticket()) is not None:
                self._do(k)
                emitted = yield from self._emit_ready(emitted)
            while emitted < len(self.groups):
                emitted = yield from self._emit_ready(emitted)
                if emitted < len(self.groups) and not (self.dir / f"{emitted}.done").exists():
                    if not self._reap():  # every child is gone and this group was never finished: do it here
                        self._do(emitted)
                    else:
                        time.sleep(0.002)
        finally:
            self.close()

    def _emit_ready(self, start: int) -> Generator[tuple[Head, Item], None, int]:
        """Print and hand out the finished groups from `start` on, in order; returns the first unfinished one."""
        k = start
        while k < len(self.groups) and (self.dir / f"{k}.done").exists():
            status, payload = pickle.loads((self.dir / f"{k}.done").read_bytes())
            text = (self.dir / f"{k}.txt").read_bytes()
            if text and self.sink is not None:
                self.sink.write(text)
            if status == "error":
                message, code = payload
                raise WorkerFailed(message, code)
            yield from payload
            for suffix in ("txt", "done"):
                (self.dir / f"{k}.{suffix}").unlink()
            k += 1
        return k

    def _reap(self) -> bool:
        """Collect the children that ended; True while any is still running."""
        running = []
        for pid in self.children:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done == 0:
                running.append(pid)
        self.children = running
        return bool(running)

    def close(self) -> None:
        """Stop the children that are still running (the scan ended early) and remove the temporary files."""
        for pid in self.children:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for pid in self.children:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        self.children = []
        try:
            os.close(self.tickets)
        except OSError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)
