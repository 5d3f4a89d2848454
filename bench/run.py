"""Benchmarks (print numbers; no pass/fail in unit tests — CI machines are noisy).

    python bench/generate_large.py /tmp/kd-large
    python bench/run.py /tmp/kd-large

Measures, each as the best of --repeat runs in a fresh interpreter:
  parse      json.load of every object file (the floor: merely parsing the JSON), with the default GC and
             with the GC off (kueuediag pauses the cyclic GC while it loads)
  why        `kueuediag why workload/<target> --from DIR -o json` end to end
  help       `kueuediag --help`
  health     `kueuediag health --from DIR --all-pending -o jsonl` (every pending workload diagnosed)
and the peak RSS of `why`. Targets: why ≤ 1.5 × parse; --help ≤ 0.3 s.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

PARSE = """
import gc, json, pathlib, sys
if sys.argv[2] == "nogc":
    gc.disable()
for p in sorted(pathlib.Path(sys.argv[1], "objects").glob("*.json")):
    with open(p, "rb") as fh:
        json.load(fh)
"""


def timed(cmd: list[str]) -> tuple[float, int]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        sys.exit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr}")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return elapsed, usage.ru_maxrss


def best(cmd: list[str], repeat: int) -> tuple[float, int]:
    results = [timed(cmd) for _ in range(repeat)]
    return min(r[0] for r in results), max(r[1] for r in results)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("snapshot")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    snap = Path(args.snapshot)
    manifest = json.loads((snap / "manifest.json").read_text())
    target = manifest.get("benchTarget", {})
    size_mb = sum(p.stat().st_size for p in (snap / "objects").glob("*.json")) / 1e6
    parse_s, _ = best([sys.executable, "-c", PARSE, str(snap), "gc"], args.repeat)
    parse_nogc_s, _ = best([sys.executable, "-c", PARSE, str(snap), "nogc"], args.repeat)
    why_cmd = [sys.executable, "-m", "kueuediag", "why", f"workload/{target['workload']}", "-n",
               target["namespace"], "--from", str(snap), "-o", "json"]
    why_s, rss_kb = best(why_cmd, args.repeat)
    help_s, _ = best([sys.executable, "-m", "kueuediag", "--help"], max(args.repeat, 5))
    health_cmd = [sys.executable, "-m", "kueuediag", "health", "--from", str(snap), "--all-pending", "-o", "jsonl",
                  "--exit-zero"]
    health_s, health_rss = best(health_cmd, 1)
    lines = subprocess.run(health_cmd, capture_output=True, text=True).stdout.splitlines()
    proc = subprocess.run(why_cmd, capture_output=True, text=True)
    verdict = json.loads(proc.stdout)
    slowest = sorted(verdict["checks"], key=lambda c: -c.get("durationMs", 0))[:3]
    print(f"snapshot        {size_mb:8.1f} MB JSON")
    print(f"parse (floor)   {parse_s:8.2f} s")
    print(f"parse, GC off   {parse_nogc_s:8.2f} s   (the strictest floor)")
    print(f"why end-to-end  {why_s:8.2f} s   ratio {why_s / parse_s:.2f}× (target ≤ 1.50×), "
          f"{why_s / parse_nogc_s:.2f}× the GC-off floor")
    print(f"why peak RSS    {rss_kb / 1024:8.0f} MiB")
    print(f"--help          {help_s:8.3f} s   (target ≤ 0.300 s)")
    print(f"verdict         {verdict['verdict']['cause']}")
    print(f"health --all-pending -o jsonl {health_s:8.2f} s   {len(lines)} pending workloads diagnosed "
          f"({health_s / max(len(lines), 1) * 1000:.1f} ms each), peak RSS {health_rss / 1024:.0f} MiB")
    print("slowest checks  " + ", ".join(f"{c['code']} {c['durationMs']:.0f} ms" for c in slowest))


if __name__ == "__main__":
    main()
