"""Run the real CLI on one input in a forked child, with a time and a memory bound, and judge the outcome.

Forking from a process that has already imported kueuediag keeps each run cheap and isolated (memo caches,
the frozen GC generation and module-level caches die with the child). The child gets an address-space limit,
so a decompression or alias bomb shows up as a failure instead of taking the machine down.
"""

from __future__ import annotations

import atexit
import io
import json
import os
import resource
import signal
import sys
import tarfile
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from tests.fuzz.mutate import Files, Mutant

ALLOWED_EXIT = (0, 2, 3)
ERROR_PREFIX = "kueuediag: error: "


@dataclass(frozen=True)
class Outcome:
    code: int | None
    """exit code, None when killed (timeout) or dead by a signal"""
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    signal: int | None = None

    def problem(self, output: str = "json") -> str | None:
        """Why this outcome breaks the input contract, or None when it is acceptable."""
        if self.timed_out:
            return f"hang (no result after {self.seconds:.1f}s)"
        if self.signal is not None:
            return f"killed by signal {self.signal}"
        if self.code not in ALLOWED_EXIT:
            return f"exit code {self.code}: {self.stderr.strip()[:300]}"
        if "Traceback" in self.stderr or "internal error" in self.stderr:
            return f"internal error: {self.stderr.strip()[:300]}"
        lines = self.stderr.splitlines()
        if self.code == 2 and (len(lines) != 1 or not lines[0].startswith(ERROR_PREFIX)):
            return f"exit 2 without exactly one error line: {self.stderr[:300]!r}"
        if self.code == 3 and (not lines or not lines[0].startswith(ERROR_PREFIX) or len(lines) > 2
                               or (len(lines) == 2 and not lines[1].startswith("  did you mean: "))):
            return f"exit 3 with a malformed message: {self.stderr[:300]!r}"
        if self.code == 0 and output == "json":
            try:
                json.loads(self.stdout)
            except ValueError as exc:
                return f"exit 0 but stdout is not JSON ({exc})"
        return None


def materialise(m: Mutant, into: Path) -> Path:
    """Write the mutant as a snapshot directory or .tar.gz under ``into``; returns the path to pass to --from."""
    if m.container == "tar.gz":
        path = into / "snap.tar.gz"
        with tarfile.open(path, "w:gz") as tf:
            for rel, data in sorted(m.files.items()):
                info = tarfile.TarInfo(f"snap/{rel}")
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
        return path
    root = into / "snap"
    for rel, data in m.files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return root


def _address_space_bytes() -> int:
    """This process's current virtual address space (VmSize), 0 when /proc is not there."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _child(argv: list[str], out_fd: int, err_fd: int, mem_bytes: int, timeout: float, encoding: str) -> None:
    code = 70
    try:
        # bound the growth, not the total: the child inherits the parent's address space (a long pytest run
        # that has loaded hundreds of snapshots can be past any fixed limit before the child does anything)
        limit = _address_space_bytes() + mem_bytes
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        signal.alarm(int(timeout) + 5)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        sys.stdout = open(1, "w", encoding=encoding, closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding=encoding, closefd=False)  # noqa: SIM115
        sys.argv = ["kueuediag", *argv]
        atexit._clear()  # the parent's handlers (pytest's) are not the child's to run; main() runs its own
        from kueuediag.cli import main

        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - report anything that escaped the CLI as a failure
        traceback.print_exc()
        code = 70
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _exited_within(pid: int, timeout: float) -> bool:
    """Wait for the child without polling: a pidfd (Linux 5.3+) becomes readable when the child exits. A parent
    that sleeps and wakes 200 times a second competes with its child for the CPU on a loaded machine."""
    import select

    fd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
        return bool(ready)
    finally:
        os.close(fd)


def run_cli(argv: list[str], timeout: float = 20.0, mem_bytes: int = 2 << 30, encoding: str = "utf-8") -> Outcome:
    """Run ``kueuediag ARGV`` in a forked child; kill it after ``timeout`` seconds or when it grows by more
    than ``mem_bytes`` of address space."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            _child(argv, out.fileno(), err.fileno(), mem_bytes, timeout, encoding)
        timed_out = not _exited_within(pid, timeout)
        if timed_out:
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        seconds = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(encoding, "replace")
        stderr = err.read().decode(encoding, "replace")
    if timed_out:
        return Outcome(None, stdout, stderr, seconds, timed_out=True)
    if os.WIFSIGNALED(status):
        return Outcome(None, stdout, stderr, seconds, signal=os.WTERMSIG(status))
    return Outcome(os.WEXITSTATUS(status), stdout, stderr, seconds)


def why_argv(path: Path, target: str, namespace: str | None, output: str = "json") -> list[str]:
    argv = ["why", target, "--from", str(path), "-o", output]
    return argv + (["-n", namespace] if namespace else [])


def run_files(files: Files, target: str, namespace: str | None, container: str = "dir", output: str = "json",
              timeout: float = 20.0) -> Outcome:
    """Materialise a snapshot and run `why` on it."""
    with tempfile.TemporaryDirectory(prefix="kdfuzz-") as tmp:
        path = materialise(Mutant(files=files, container=container), Path(tmp))
        return run_cli(why_argv(path, target, namespace, output), timeout=timeout)


def preload(warm_up: Files | None = None, target: str = "", namespace: str | None = None) -> None:
    """Make the parent a warm fork server: forked children then skip the first run's costs.

    Importing the CLI is not enough: a first `why` imports the engine, config and rich lazily, reads the data
    tables and compiles the result records' checks (about 0.25 s of CPU, twice what a warm diagnosis costs). With
    ``warm_up`` (a seed snapshot) one diagnosis per output format runs here, in-process, its output thrown
    away; then the heap is frozen so the children's garbage collector does not touch (and copy) the parent's
    pages. What stays warm is code and data tables, never anything about a fuzzed input.
    """
    import contextlib
    import gc

    from kueuediag.cli import build_app
    from kueuediag.registry import discover
    from kueuediag.render import terminal  # noqa: F401

    app = build_app()
    discover()
    if warm_up is not None:
        with tempfile.TemporaryDirectory(prefix="kdfuzz-warm-") as tmp:
            path = materialise(Mutant(files=warm_up), Path(tmp))
            for output in ("json", "terminal", "markdown"):
                sink = io.StringIO()
                with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink), \
                        contextlib.suppress(SystemExit, Exception):
                    app(args=why_argv(path, target, namespace, output), prog_name="kueuediag",
                        standalone_mode=False)
    gc.collect()
    gc.freeze()
