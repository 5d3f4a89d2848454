"""`python -m tests.fuzz --count 10000`: the long mutation campaign; prints inputs tried and failures."""

from __future__ import annotations

import argparse
import random
import signal
import sys
import time
from collections import Counter
from pathlib import Path

from tests.fuzz.campaign import campaign


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    ap.add_argument("--count", type=int, default=1000, help="number of mutated inputs to try")
    ap.add_argument("--seed", type=int, default=None, help="random seed (default: time based, printed)")
    ap.add_argument("--timeout", type=float, default=20.0, help="per-input time bound in seconds")
    ap.add_argument("--save", type=Path, default=None, help="write failing inputs (as .tar.gz) into this folder")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else int(time.time())
    print(f"fuzz: seed {seed}, {args.count} inputs, {args.timeout:.0f}s per input", flush=True)
    start = time.monotonic()
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # `kill PID` stops and still prints the totals
    failures_seen: list[int] = []

    def progress(n: int) -> None:
        if n < 0:
            failures_seen.append(1)
            print(f"fuzz: failure #{len(failures_seen)}", flush=True)
        else:
            print(f"fuzz: {n} inputs tried, {len(failures_seen)} failures", flush=True)

    result = campaign(random.Random(seed), args.count, timeout=args.timeout, save=args.save, progress=progress)
    exits = Counter(result.exit_codes)
    print(f"fuzz: {result.tried} inputs tried in {time.monotonic() - start:.0f}s; exit codes "
          + ", ".join(f"{k}: {v}" for k, v in sorted(exits.items(), key=lambda kv: str(kv[0])))
          + f"; slowest {result.slowest:.2f}s")
    print(f"fuzz: {len(result.failures)} failures")
    for f in result.failures[:50]:
        print(f"  - {f}")
    return 1 if result.failures else 0


if __name__ == "__main__":
    sys.exit(main())
