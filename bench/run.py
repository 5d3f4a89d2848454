"""The scale benchmark: prints numbers, asserts nothing (CI machines are noisy; targets are checked by hand).

    python bench/run.py --scale 1                 # generates /tmp/kd-bench-1 once, then measures
    python bench/run.py --snapshot DIR            # measure an existing snapshot
    python bench/run.py --scale 0.05 --repeat 1 --quick   # the CI smoke run
    python bench/run.py --live-only --live-scales 0.25,0.5 --repeat 1   # live why and snapshot -A only

Every figure is the best of ``--repeat`` runs, each in a fresh interpreter, measured in one run of this script on
one machine. The floor is also run right before each run of `why`, `health` and `--all-pending`, and each ratio
is taken against the best floor of its own series ("of the floor beside it"): the development VM's speed drifts
by a third within minutes, which made ratios against a floor measured minutes earlier move by ±0.4.

  floor            read every file of the snapshot with orjson (JSON) or as bytes (logs, metrics), GC off —
                   the fastest honest way to read the snapshot
  why              ``kueuediag why workload/<pending target> --from DIR -o json``
  health           ``kueuediag health --from DIR -A -o json``                (when the command exists)
  all-pending      ``kueuediag health --from DIR -A --all-pending -o jsonl`` (when the command exists); it forks
                   workers on a multi-core machine, so the peak memory of its whole process tree is sampled too,
                   and it is run again with ``--jobs 1`` (one process; the documents must be the same)
  per target       ms per pending target inside one process (the snapshot loaded once), at several scales: the
                   first target is diagnosed first and reported apart (it pays for every cluster-wide analysis
                   `why` needs once); the figure is the cost of each further target, then split: the targets whose
                   ClusterQueue came before (the per-target cost, which must not grow with the cluster) and each
                   ClusterQueue's first target (which also pays for that queue's own analyses once; the more
                   ClusterQueues a cluster has, the more of them the same number of targets reaches)
  cold start       ``kueuediag --help``, ``why --help``, ``checks``, ``why`` on the smallest bundled example
                   (CPU user + sys, and wall)
  live             ``why`` and ``snapshot -A`` against the local test API server serving the snapshot
                   (requests, bytes transferred and live ``why``'s share of ``snapshot -A``'s, wall time, the pure
                   transfer time — the same GETs replayed by a bare HTTP client that reads and drops each body —
                   and ``snapshot -A``'s wall time over it, the client's time in requests), all uncompressed (the
                   kubeconfig's ``disable-compression: true``); then once more as kubectl and kube-apiserver do by
                   default (large answers gzipped: the bytes on the wire, and the ratio to a pure transfer that asks
                   for gzip too); ``--live-scales 0.25,0.5`` measures them at several scales and prints how each
                   grew; ``--live-only`` measures nothing else

Peak RSS is each process's own maximum resident set (``wait4``), not the maximum over all children. Each
command's CPU time (user + system, also from ``wait4``) is printed next to its wall time, with its ratio to the
floor's CPU time: on a shared machine the wall-time ratios mostly measure the other processes, the CPU ratios
much less.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from generate_large import GENERATOR_VERSION  # noqa: E402  (the generator beside this script)

FLOOR = """
import gc, os, sys, orjson
gc.disable()
for base, dirs, files in os.walk(sys.argv[1]):
    dirs.sort()
    for name in sorted(files):
        with open(os.path.join(base, name), "rb") as fh:
            data = fh.read()
        if name.endswith(".json"):
            orjson.loads(data)
"""

PER_TARGET = """
import gc, json, sys, time
gc.disable()
from kueuediag.config import Settings
from kueuediag.engine import diagnose
from kueuediag.registry import discover
from kueuediag.snapshot.kueue import cluster_queue_of, kueue_index, workloads
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.target import resolve
snap = load_snapshot(sys.argv[1])
classes = discover()
settings = Settings()
pending = [w for w in workloads(snap) if w.state == "pending"][: int(sys.argv[2]) + 1]
index = kueue_index(snap)
seen, times = set(), []
for w in pending:
    queue = cluster_queue_of(index, w)
    t0 = time.perf_counter()
    diagnose(snap, resolve(snap, f"workload/{w.name}", w.namespace), classes, settings)
    times.append((time.perf_counter() - t0, queue in seen))
    seen.add(queue)
print(json.dumps({"first": times[0][0], "times": times[1:]}))
"""


@dataclass
class PerTarget:
    """`why` on pending targets in one process, the snapshot loaded once, each timed apart."""

    first: float
    """seconds of the first target: every cluster-wide analysis `why` needs is worked out then"""
    times: list[tuple[float, bool]]
    """seconds of each further target, and whether a target of its ClusterQueue came before it"""

    def ms(self, repeat_queue: bool | None = None) -> tuple[int, float]:
        """(targets, ms per target) of all further targets, or of those whose ClusterQueue was (True) or was not
        (False) diagnosed before: a ClusterQueue's first target also pays for that queue's own analyses once."""
        picked = [s for s, seen in self.times if repeat_queue is None or seen == repeat_queue]
        return len(picked), 1000 * sum(picked) / max(len(picked), 1)

    def detail(self) -> str:
        """What the figure `ms()` is made of, split by whether the target's ClusterQueue came before."""
        again, again_ms = self.ms(True)
        new, new_ms = self.ms(False)
        return (f"({len(self.times)} pending targets in one process after the first, which took {self.first:.2f} s: "
                f"{again_ms:.1f} ms for the {again} whose ClusterQueue came before, {new_ms:.1f} ms for the first "
                f"target of each of {new} more ClusterQueues)")


@dataclass
class Run:
    seconds: float
    rss_mib: float
    stdout: str
    cpu: float = 0.0
    """user + system CPU seconds of the process and of the children it waited for (wait4): on a busy machine
    wall time mostly measures the other processes, CPU time much less so"""
    stderr: str = ""
    tree_rss_mib: float = 0.0
    """peak of the summed RSS of the process and its descendants (sampled): counts pages a forked child shares
    copy-on-write with its parent once per process, so it overstates what the tree holds"""
    tree_pss_mib: float = 0.0
    """peak of the summed PSS (shared pages split among the processes sharing them): what the tree holds"""
    system: float = 0.0
    """the system part of `cpu`: mostly page faults for a process that builds a large object graph"""
    faults: int = 0
    """minor page faults (wait4): each is a page of memory the process touched for the first time"""


class TreeMemory(threading.Thread):
    """Samples the summed RSS and PSS of a process and all its descendants (Linux /proc).

    A command that forks workers after loading the snapshot (`health --all-pending`) is several processes: the
    peak RSS wait4 reports is the largest one's, not the tree's. Sampling must not compete with what it
    measures on a 2-core machine: RSS (statm) every 100 ms, the process tree every second, PSS (smaps_rollup,
    which walks the page tables) every half second."""

    INTERVAL = 0.1

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.rss_kib, self.pss_kib = pid, 0, 0
        self.done = threading.Event()
        self.pids = [pid]
        self.page_kib = os.sysconf("SC_PAGE_SIZE") // 1024

    def run(self) -> None:
        n = 0
        while not self.done.wait(self.INTERVAL):
            if n % 10 == 0:
                self.pids = self.tree()
            self.sample(pss=n % 5 == 0)
            n += 1

    def tree(self) -> list[int]:
        parents: dict[int, int] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat", "rb") as fh:
                        parents[int(entry)] = int(fh.read().rsplit(b")", 1)[1].split()[1])
                except (OSError, ValueError, IndexError):
                    pass
        out, todo = [], [self.pid]
        while todo:
            pid = todo.pop()
            out.append(pid)
            todo.extend(child for child, parent in parents.items() if parent == pid)
        return out

    def sample(self, pss: bool) -> None:
        rss = total_pss = 0
        for pid in self.pids:
            try:
                with open(f"/proc/{pid}/statm") as fh:
                    rss += int(fh.read().split()[1]) * self.page_kib
                if pss:
                    with open(f"/proc/{pid}/smaps_rollup") as fh:
                        total_pss += next((int(line.split()[1]) for line in fh if line.startswith("Pss:")), 0)
            except (OSError, ValueError):
                pass
        self.rss_kib = max(self.rss_kib, rss)
        self.pss_kib = max(self.pss_kib, total_pss)


def run_once(cmd: Sequence[str], env: dict[str, str] | None = None, ok: Sequence[int] = (0, 1),
             tree: bool = False) -> Run:
    """One process, its wall time and its own peak RSS (from wait4, not the children's running maximum); with
    `tree`, also the sampled peak RSS and PSS of the whole process tree."""
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(list(cmd), stdout=out, stderr=subprocess.PIPE, env=env, cwd=ROOT)
        sampler = TreeMemory(proc.pid) if tree and os.path.exists("/proc/self/smaps_rollup") else None
        if sampler is not None:
            sampler.start()
        assert proc.stderr is not None
        err = proc.stderr.read()
        if sampler is not None:
            sampler.done.set()
            sampler.join()
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in ok:
            sys.exit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{err.decode(errors='replace')[-2000:]}")
        out.seek(0)
        return Run(elapsed, usage.ru_maxrss / 1024, out.read().decode(), usage.ru_utime + usage.ru_stime,
                   err.decode(errors="replace"), (sampler.rss_kib / 1024) if sampler else 0.0,
                   (sampler.pss_kib / 1024) if sampler else 0.0, usage.ru_stime, usage.ru_minflt)


def best(cmd: Sequence[str], repeat: int, env: dict[str, str] | None = None, tree: bool = False) -> Run:
    return best_of([run_once(cmd, env, tree=tree) for _ in range(repeat)])


def best_of(runs: Sequence[Run]) -> Run:
    """The fastest wall and CPU time of `runs`, the largest memory, the last output."""
    return Run(min(r.seconds for r in runs), max(r.rss_mib for r in runs), runs[-1].stdout, min(r.cpu for r in runs),
               tree_rss_mib=max(r.tree_rss_mib for r in runs), tree_pss_mib=max(r.tree_pss_mib for r in runs))


def paired(cmd: Sequence[str], floor_cmd: Sequence[str], repeat: int, tree: bool = False) -> tuple[float, Run]:
    """`best` of `cmd`, each run right after a run of the floor: (the best floor of the series, the best run).

    The development VM's speed drifts by a third within minutes, so a ratio is taken against the floor measured
    beside the command, not against one measured minutes earlier."""
    floors: list[float] = []
    runs: list[Run] = []
    for _ in range(repeat):
        floors.append(run_once(floor_cmd).seconds)
        runs.append(run_once(cmd, tree=tree))
    return min(floors), best_of(runs)


def beside(value: float, floor: float, target: float) -> str:
    """The ratio to the floor measured beside the command (see `paired`)."""
    return f"{ratio(value, floor, target)} of the floor beside it ({floor:.2f} s)"


def snapshot_bytes(snap: Path) -> int:
    return sum(p.stat().st_size for p in snap.rglob("*") if p.is_file())


def generate(scale: float) -> Path:
    out = Path(tempfile.gettempdir()) / f"kd-bench-{scale:g}"
    manifest = out / "manifest.json"
    if not manifest.exists() or json.loads(manifest.read_text()).get("benchGenerator") != GENERATOR_VERSION:
        shutil.rmtree(out, ignore_errors=True)
        subprocess.run([sys.executable, str(ROOT / "bench" / "generate_large.py"), str(out), "--scale", str(scale)],
                       check=True, stdout=subprocess.DEVNULL)
    return out


def has_command(name: str) -> bool:
    proc = subprocess.run([sys.executable, "-m", "kueuediag", name, "--help"], capture_output=True, cwd=ROOT)
    return proc.returncode == 0


def ratio(value: float, floor: float, target: float | None) -> str:
    text = f"{value / floor:5.2f}×"
    return text + (f" (target ≤ {target:.1f}×)" if target is not None else "")


def cpu(run: Run, floor: Run) -> str:
    return f"cpu {run.cpu:6.2f} s = {run.cpu / max(floor.cpu, 1e-9):5.2f}× the floor's"


def kd(*args: str) -> list[str]:
    return [sys.executable, "-m", "kueuediag", *args]


def measure_snapshot(snap: Path, repeat: int, quick: bool) -> None:
    manifest = json.loads((snap / "manifest.json").read_text())
    target = manifest["benchTarget"]
    size = snapshot_bytes(snap)
    size_mib = size / 2**20
    floor_cmd = [sys.executable, "-c", FLOOR, str(snap)]
    floor = best(floor_cmd, repeat)
    why_args = ("why", f"workload/{target['workload']}", "-n", target["namespace"], "--from", str(snap), "-o", "json")
    why_floor, why = paired(kd(*why_args), floor_cmd, repeat, tree=True)
    verdict = json.loads(why.stdout)
    print(f"snapshot        {size_mib:9.1f} MiB  {snap}")
    print(f"floor           {floor.seconds:9.2f} s    orjson + bytes, GC off   peak RSS {floor.rss_mib:7.0f} MiB   "
          f"cpu {floor.cpu:6.2f} s")
    print(f"why             {why.seconds:9.2f} s    {beside(why.seconds, why_floor, 2.0)}   "
          f"peak RSS {why.rss_mib:7.0f} MiB = {why.rss_mib / size_mib:4.2f}× the snapshot (target ≤ 2.0×)   "
          f"{cpu(why, floor)}   verdict {verdict['verdict']['cause']}")
    print(f"  whole tree      {why.tree_rss_mib:7.0f} MiB RSS / {why.tree_pss_mib:7.0f} MiB PSS = "
          f"{why.tree_pss_mib / size_mib:4.2f}× the snapshot (the log checks run in a second process by default "
          "on an idle machine)")
    checks = sorted(verdict.get("checks", []), key=lambda c: -c.get("durationMs", 0))[:4]
    print("  slowest checks  " + ", ".join(f"{c['code']} {c.get('durationMs', 0):.0f} ms" for c in checks))
    serial_floor, serial = paired(kd(*why_args, "--jobs", "1"), floor_cmd, repeat)
    print(f"  in one process {serial.seconds:8.2f} s    {beside(serial.seconds, serial_floor, 2.0)}   "
          f"peak RSS {serial.rss_mib:7.0f} MiB = {serial.rss_mib / size_mib:4.2f}× the snapshot   {cpu(serial, floor)}"
          "   (--jobs 1; the same verdict)")
    if _without_timings(serial.stdout) != _without_timings(why.stdout):
        sys.exit("why printed a different document with --jobs 1")
    if has_command("health"):
        health_floor, health = paired(kd("health", "--from", str(snap), "-A", "-o", "json", "--exit-zero"),
                                      floor_cmd, repeat)
        print(f"health          {health.seconds:9.2f} s    {beside(health.seconds, health_floor, 3.0)}   "
              f"peak RSS {health.rss_mib:7.0f} MiB = {health.rss_mib / size_mib:4.2f}× the snapshot (target ≤ 3.0×)   "
              f"{cpu(health, floor)}")
        allp_floor, allp = paired(kd("health", "--from", str(snap), "-A", "--all-pending", "-o", "jsonl",
                                     "--exit-zero"), floor_cmd, repeat, tree=True)
        lines = sum(1 for line in allp.stdout.splitlines() if line.strip())
        print(f"all-pending     {allp.seconds:9.2f} s    {beside(allp.seconds, allp_floor, 4.0)}   "
              f"{lines} results   peak RSS {allp.rss_mib:7.0f} MiB (largest process), whole tree "
              f"{allp.tree_rss_mib:7.0f} MiB RSS / {allp.tree_pss_mib:7.0f} MiB PSS   {cpu(allp, floor)}")
        one_floor, one = paired(kd("health", "--from", str(snap), "-A", "--all-pending", "-o", "jsonl", "--exit-zero",
                                   "-j", "1"), floor_cmd, repeat, tree=True)
        print(f"  in one process {one.seconds:8.2f} s    {beside(one.seconds, one_floor, 4.0)}   "
              f"peak RSS {one.rss_mib:7.0f} MiB   {cpu(one, floor)}   (--jobs 1; the same output)")
        if one.stdout != allp.stdout and _without_timings(one.stdout) != _without_timings(allp.stdout):
            sys.exit("all-pending printed different documents with --jobs 1")
    else:
        print("health          (no `health` command in this build)")
    if not quick:
        measure_live(snap, repeat)


def _without_timings(text: str) -> list[Any]:
    """The JSON documents of `text` (one, or one per line) without their check timings."""
    try:
        docs = [json.loads(text)]
    except json.JSONDecodeError:
        docs = [json.loads(line) for line in text.splitlines()]
    for doc in docs:
        for check in doc["checks"]:
            check.pop("durationMs", None)
    return docs


def per_target(snap: Path, count: int) -> PerTarget:
    """`count` pending targets of `snap` after the first, each timed apart in one process (`PER_TARGET`)."""
    run = run_once([sys.executable, "-c", PER_TARGET, str(snap), str(count)])
    doc = json.loads(run.stdout)
    return PerTarget(doc["first"], [(float(s), bool(seen)) for s, seen in doc["times"]])


COLD_START_TARGET = 0.3
"""seconds, for each cold-start command (issue 11)"""


def cold_start(repeat: int) -> None:
    """A fresh process per run, best of at least 5 (`--repeat` or more; a run takes a fraction of a second, and one
    sample says more about the machine's minute than about the command): CPU (user + sys, the figure the targets are
    judged on) and wall.

    Byte-code caching is forced on (a warm-up run writes the caches), as in an installed package: with
    PYTHONDONTWRITEBYTECODE set, every run would compile every module it imports.
    """
    from kueuediag.examples import list_examples  # noqa: PLC0415 - only the bench needs it

    smallest = min(list_examples(), key=lambda e: e.path.stat().st_size)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["NO_COLOR"] = "1"
    commands = {
        "python -c pass (the interpreter alone: how loaded the machine is)": [sys.executable, "-c", "pass"],
        "--help": kd("--help"),
        "why --help": kd("why", "--help"),
        "checks": kd("checks"),
        f"why on example {smallest.name}": kd("why", smallest.target, *(["-n", smallest.namespace]
                                                                           if smallest.namespace else []),
                                               "--from", f"example:{smallest.name}", "-o", "json"),
    }
    for label, cmd in commands.items():
        run_once(cmd, env)  # warm-up: writes the byte-code caches
        run = best(cmd, max(repeat, 5), env)
        verdict = "" if label.startswith("python") else \
            f"  (target ≤ {COLD_START_TARGET:.3f} s: {'ok' if run.cpu <= COLD_START_TARGET else 'OVER'})"
        print(f"cold start      {run.cpu:9.3f} s CPU {run.seconds:6.3f} s wall   {label}{verdict}")


LIVE_DEADLINE = "900"
"""seconds: `--timeout` for the live runs, so that a slow (loaded) machine measures whole collections"""
_SUMMARY = re.compile(r"kueuediag: (\d+) requests, (\d+) bytes(?: \((\d+) on the wire\))?, .*?([\d.]+) s transferring")


REPLAY = """
import http.client, json, sys, time
from urllib.parse import urlencode, urlsplit
url, token, requests = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3]))
headers = {"Authorization": "Bearer " + token}
if sys.argv[4] == "gzip":
    headers["Accept-Encoding"] = "gzip"
u = urlsplit(url)
conn = http.client.HTTPConnection(u.hostname, u.port)
t0 = time.perf_counter()
for path, query in requests:
    conn.request("GET", path + ("?" + urlencode(query) if query else ""), headers=headers)
    conn.getresponse().read()
print(time.perf_counter() - t0)
"""
"""the pure transfer: the same GETs, in the same order, asking for the same encoding, each body read and dropped (no
decoding, no decompressing)"""


@dataclass
class LiveRun:
    wall: float
    cpu: float
    requests: int
    sent: int
    """bytes the API server sent"""
    transfer: float
    """seconds the client spent in requests (its `-v` summary; with pages processed while the next one travels,
    this includes waiting for the interpreter)"""
    replay: float = float("nan")
    """seconds to GET the same requests again with a bare HTTP client, reading and dropping each body"""
    system: float = 0.0
    """the system part of `cpu`"""
    faults: int = 0
    """minor page faults: the system time they cost moves with the VM's host (see docs/performance.md)"""


def served(snap: Path) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """What the test API server serves for a generated snapshot: its objects, with the ClusterQueue usage Kueue's
    controller would have written (tests/live/kueue_status.py), and its logs under their snapshot paths (the
    server answers a pod's log request from `logs/<namespace>/<pod>/<container>.log`)."""
    sys.path.insert(0, str(ROOT))
    from tests.live.kueue_status import with_queue_status  # noqa: PLC0415

    objects = [item for p in sorted((snap / "objects").glob("*.json")) for item in json.loads(p.read_bytes())["items"]]
    logs = {str(p.relative_to(snap)): p.read_text() for p in sorted(snap.glob("logs/**/*.log"))}
    return with_queue_status(objects), logs


def measure_live(snap: Path, repeat: int, gzip: bool = False) -> dict[str, LiveRun]:
    """`why` and `snapshot -A` against the local test API server serving the snapshot's objects.

    The generated snapshots carry no ClusterQueue usage record; every real ClusterQueue does (Kueue's
    controller writes it), so the server serves the cluster with it filled in from the Workloads
    (tests/live/kueue_status.py), as live `why` would find it on a real cluster.

    Without `gzip` (the targets' measurement, as every figure before compressed answers): the kubeconfig says
    ``disable-compression: true``, so the client asks for none and the server sends every body as it is. With
    `gzip`: kubectl's default against kube-apiserver's (API answers of 128 KiB or more gzipped at level 1; the
    controller's log is not); the bytes are then those on the wire, and the pure transfer asks for gzip too.
    """
    sys.path.insert(0, str(ROOT))
    from tests.live.apiserver import TOKEN, ApiServer, FakeCluster  # noqa: PLC0415

    class CountingCluster(FakeCluster):
        def __init__(self, objects: list[dict[str, Any]], logs: dict[str, str]) -> None:
            super().__init__(objects, logs=logs)
            self.sent = 0
            self.count_lock = threading.Lock()

        def handle(self, method: str, raw_path: str, headers: dict[str, str]) -> Any:
            status, hdrs, body, *delivery = super().handle(method, raw_path, headers)
            with self.count_lock:
                self.sent += len(body)
            return (status, hdrs, body, *delivery)

    objects, logs = served(snap)
    cluster = CountingCluster(objects, logs)
    target = json.loads((snap / "manifest.json").read_text())["benchTarget"]
    results: dict[str, LiveRun] = {}
    with ApiServer(cluster) as server, tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, KUBECONFIG=str(server.kubeconfig(Path(tmp), disable_compression=not gzip)))
        for label, cmd in (
            # a deadline far beyond the targets: a collection cut at the default 60 s would under-report both
            ("live why", kd("why", f"workload/{target['workload']}", "-n", target["namespace"], "-o", "json",
                            "--timeout", LIVE_DEADLINE, "-v")),
            ("snapshot -A", kd("snapshot", "-A", "-o", str(Path(tmp) / "snap.tar.gz"), "--timeout", LIVE_DEADLINE,
                               "-v")),
        ):
            runs = []
            for _ in range(repeat):
                cluster.requests.clear()
                cluster.sent = 0
                run = run_once(cmd, env)
                m = _SUMMARY.findall(run.stderr)
                transfer = float(m[-1][3]) if m else float("nan")
                asked, sent = list(cluster.requests), cluster.sent
                listing = Path(tmp) / "requests.json"
                listing.write_text(json.dumps([[r.path, r.query] for r in asked]))
                replay = run_once([sys.executable, "-c", REPLAY, server.url, TOKEN, str(listing),
                                   "gzip" if gzip else "identity"], ok=(0,))
                runs.append(LiveRun(run.seconds, run.cpu, len(asked), sent, transfer, float(replay.stdout),
                                    run.system, run.faults))
                (Path(tmp) / "snap.tar.gz").unlink(missing_ok=True)
            results[label] = min(runs, key=lambda r: r.wall)
    why, full = results["live why"], results["snapshot -A"]
    if gzip:
        print(f"  with gzip     live why {why.wall:.2f} s, {why.sent / 2**20:.1f} MiB on the wire = "
              f"{100 * why.sent / max(full.sent, 1):.1f} % of snapshot -A's (the controller's log travels as it is); "
              f"snapshot -A {full.wall:.2f} s, {full.sent / 2**20:.1f} MiB on the wire, "
              f"pure transfer {full.replay:.2f} s: "
              f"wall = {full.wall / max(full.replay, 1e-9):.2f}× the transfer, cpu {full.cpu:.2f} s (system "
              f"{full.system:.2f} s)")
        return results
    print(f"live why        {why.wall:9.2f} s    {why.requests} requests, {why.sent / 2**20:.1f} MiB = "
          f"{100 * why.sent / max(full.sent, 1):.1f} % of snapshot -A's bytes, pure transfer {why.replay:.2f} s, "
          f"in requests {why.transfer:.2f} s, cpu {why.cpu:.2f} s (targets ≤ 60 requests, ≤ 25 %, ≤ 10 s)")
    print(f"snapshot -A     {full.wall:9.2f} s    {full.requests} requests, {full.sent / 2**20:.1f} MiB, "
          f"pure transfer {full.replay:.2f} s: wall = {full.wall / max(full.replay, 1e-9):.2f}× the transfer "
          f"(target ≤ 2×), in requests {full.transfer:.2f} s, cpu {full.cpu:.2f} s (system {full.system:.2f} s for "
          f"{full.faults:,} page faults)")
    return results


def live_scales(scales: list[float], repeat: int) -> None:
    """Live figures at several scales, and how each grew from one scale to the next (issue 11: doubling the
    cluster at most doubles each figure)."""
    previous: tuple[float, dict[str, LiveRun]] | None = None
    for scale in scales:
        print(f"live at scale {scale:g}")
        got = measure_live(generate(scale), repeat)
        measure_live(generate(scale), repeat, gzip=True)
        if previous is not None:
            grew = scale / previous[0]
            for label, run in got.items():
                before = previous[1][label]
                print(f"  {label:12s} × {grew:g} cluster: requests × {run.requests / max(before.requests, 1):.2f}, "
                      f"bytes × {run.sent / max(before.sent, 1):.2f}, wall × {run.wall / max(before.wall, 1e-9):.2f}")
        previous = (scale, got)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--snapshot", type=Path, help="measure this snapshot instead of generating one")
    ap.add_argument("--scale", type=float, default=1.0, help="generate the benchmark snapshot at this scale")
    ap.add_argument("--per-target-scales", default="0.25,0.5,1,2",
                    help="scales at which to print ms per pending target (comma-separated; '' to skip)")
    ap.add_argument("--per-target-count", type=int, default=200, help="pending targets timed per scale")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="skip the live and per-scale measurements (CI smoke)")
    ap.add_argument("--live-scales", default="",
                    help="also measure live `why` and `snapshot -A` at these scales (comma-separated, e.g. 0.25,0.5)"
                         " and print how each figure grew")
    ap.add_argument("--live-only", action="store_true",
                    help="measure only the live figures (at --live-scales, else at --scale)")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    if args.live_only:
        scales = [float(x) for x in args.live_scales.split(",") if x.strip()]
        if scales:
            live_scales(scales, args.repeat)
        else:
            measure_live(args.snapshot or generate(args.scale), args.repeat)
            measure_live(args.snapshot or generate(args.scale), args.repeat, gzip=True)
        return
    snap = args.snapshot or generate(args.scale)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"machine         {os.cpu_count()} cores, Python {sys.version.split()[0]}, best of {args.repeat}, "
          f"load average {load} at the start")
    measure_snapshot(snap, args.repeat, args.quick)
    cold_start(args.repeat)
    scales = [float(s) for s in args.per_target_scales.split(",") if s.strip()] if not args.quick else []
    if args.quick:
        timed = per_target(snap, min(args.per_target_count, 20))
        print(f"per target      {timed.ms()[1]:9.1f} ms   {timed.detail()}")
    live = [float(x) for x in args.live_scales.split(",") if x.strip()]
    if live and not args.quick:
        live_scales(live, args.repeat)
    for scale in scales:
        timed = per_target(generate(scale), args.per_target_count)
        print(f"per target at scale {scale:g}: {timed.ms()[1]:.1f} ms   {timed.detail()}")


if __name__ == "__main__":
    main()
