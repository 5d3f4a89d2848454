"""`snapshot -A` of two kueuediag builds, alternated against one test API server, each run followed by the pure
transfer of its own requests (as ``bench/run.py --live-only`` measures one build).

    git worktree add /tmp/kd-before main && python3 -m venv /tmp/kd-before/.venv && \
        /tmp/kd-before/.venv/bin/pip install -q -e /tmp/kd-before
    python bench/ab_live.py --scale 0.25 --rounds 6 before=/tmp/kd-before/.venv/bin/python after=.venv/bin/python

The development VM's speed drifts by a third within minutes and other sessions share its two cores: a figure
measured minutes before another says little about a change. Here the builds take turns (the order flips every
round) in the same minutes against the same server, and every line carries the load average when it started;
the medians and the pairs are what to compare. Each build runs with ``-P`` from its own installation (it prints
where each build's ``kueuediag`` is, and refuses two that are the same). Prints nothing else and asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import run as bench  # noqa: E402  (bench/run.py: generate, run_once, REPLAY)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=0.25)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("builds", nargs=2, metavar="LABEL=PYTHON", help="a label and the interpreter of a build")
    args = ap.parse_args()
    builds = dict(b.split("=", 1) for b in args.builds)
    # `python -m` puts the working directory (this tree, where run_once starts every command) first on sys.path, so
    # without -P every build would run this tree's kueuediag: each build runs with -P, from its own installation.
    where = {label: bench.run_once([py, "-P", "-c", "import kueuediag; print(kueuediag.__file__)"], ok=(0,))
             .stdout.strip() for label, py in builds.items()}
    for label, path in where.items():
        print(f"{label}: {path}")
    if len(set(where.values())) < len(where):
        sys.exit("the builds import the same kueuediag: nothing to compare")

    from tests.live.apiserver import TOKEN, ApiServer, FakeCluster  # noqa: PLC0415

    snap = bench.generate(args.scale)
    objects, logs = bench.served(snap)
    cluster = FakeCluster(objects, logs=logs)
    ratios: dict[str, list[tuple[float, float, float]]] = {label: [] for label in builds}
    with ApiServer(cluster) as server, tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, KUBECONFIG=str(server.kubeconfig(Path(tmp))))
        labels = list(builds)
        for r in range(args.rounds):
            for label in labels if r % 2 == 0 else labels[::-1]:
                cluster.requests.clear()
                out = Path(tmp) / "snap.tar.gz"
                load = os.getloadavg()[0]
                run = bench.run_once([builds[label], "-P", "-m", "kueuediag", "snapshot", "-A", "-o", str(out),
                                      "--timeout", bench.LIVE_DEADLINE, "-v"], env)
                asked = list(cluster.requests)
                listing = Path(tmp) / "requests.json"
                listing.write_text(json.dumps([[q.path, q.query] for q in asked]))
                replay = float(bench.run_once([sys.executable, "-c", bench.REPLAY, server.url, TOKEN, str(listing)],
                                              ok=(0,)).stdout)
                ratios[label].append((run.seconds, run.cpu, replay))
                print(f"round {r} {label:8s} load {load:4.2f}  wall {run.seconds:6.2f} s  cpu {run.cpu:5.2f} s  "
                      f"transfer {replay:5.2f} s  ratio {run.seconds / replay:4.2f}  "
                      f"{len(asked)} requests, archive {out.stat().st_size} bytes", flush=True)
                out.unlink()
    for label, rs in ratios.items():
        print(f"{label:8s} medians: wall {statistics.median(w for w, _, _ in rs):.2f} s, "
              f"cpu {statistics.median(c for _, c, _ in rs):.2f} s, "
              f"transfer {statistics.median(t for _, _, t in rs):.2f} s, "
              f"ratio {statistics.median(w / t for w, _, t in rs):.2f} (best {min(w / t for w, _, t in rs):.2f})")


if __name__ == "__main__":
    main()
