"""The benchmark's CI smoke run: generate a 5 % cluster and run bench/run.py --quick on it.

It asserts that the benchmark runs and reports every figure with a sane verdict — never anything about time
(CI machines are noisy; the targets are checked by hand, see docs/performance.md).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from generate_large import CONTROLLER_POD, LOG_FILE  # noqa: E402


def test_generator_is_deterministic_and_scales(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for out in (a, b):
        subprocess.run([sys.executable, str(ROOT / "bench" / "generate_large.py"), str(out), "--scale", "0.02"],
                       check=True, capture_output=True)
    for rel in ("objects/workloads.json", "metrics/kueue.om", LOG_FILE, "objects/controller.json"):
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel
    # Kueue's controller is there, as on every cluster running Kueue, and its log is where a snapshot keeps it
    controller = json.loads((a / "objects" / "controller.json").read_text())["items"]
    assert {(o["kind"], o["metadata"]["name"]) for o in controller} >= {("Pod", CONTROLLER_POD),
                                                                        ("Deployment", "kueue-controller-manager")}
    assert LOG_FILE == f"logs/kueue-system/{CONTROLLER_POD}/manager.log"
    kueue = json.loads((a / "objects" / "kueue.json").read_text())["items"]
    parents = {o["metadata"]["name"]: o["spec"].get("parentName") for o in kueue if o["kind"] == "Cohort"}
    # three cohort levels: org → division → root
    org = next(n for n in parents if n.startswith("org-"))
    assert parents[parents[org]] == "root" and parents["root"] is None
    wls = json.loads((a / "objects" / "workloads.json").read_text())["items"]
    pending = [w for w in wls if w["status"]["conditions"][0]["status"] == "False"]
    assert 0.05 < len(pending) / len(wls) < 0.15
    manifest = json.loads((a / "manifest.json").read_text())
    assert manifest["benchTarget"]["workload"] in {w["metadata"]["name"] for w in pending}


def test_bench_smoke_run_reports_every_figure(tmp_path: Path) -> None:
    snap = tmp_path / "snap"
    subprocess.run([sys.executable, str(ROOT / "bench" / "generate_large.py"), str(snap), "--scale", "0.05"],
                   check=True, capture_output=True)
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "run.py"), "--snapshot", str(snap), "--repeat", "1",
                           "--quick"], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert re.search(r"^floor +\d+\.\d+ s", out, re.M), out
    why = re.search(r"^why +\d+\.\d+ s +(\d+\.\d+)× .*peak RSS +\d+ MiB .*verdict (\S+)", out, re.M)
    assert why, out
    assert why.group(2) not in ("unknown", "not-pending"), out  # the bench target is a pending workload
    cold = dict((label, float(cpu)) for cpu, label in
                re.findall(r"^cold start +(\d+\.\d+) s CPU +\d+\.\d+ s wall +(.+?)  \(target", out, re.M))
    assert set(cold) == {"--help", "why --help", "checks", "why on example fair-sharing-anomaly"}, out
    assert all(cpu > 0 for cpu in cold.values()), out
    assert re.search(r"^cold start +\d+\.\d+ s CPU +\d+\.\d+ s wall +python -c pass ", out, re.M), out
    per = re.search(r"^per target +(\d+\.\d) ms +\((\d+) pending targets in one process after the first, which "
                    r"took \d+\.\d\d s: (\d+\.\d) ms for the (\d+) whose ClusterQueue came before, (\d+\.\d) ms for "
                    r"the first target of each of (\d+) more ClusterQueues\)$", out, re.M)
    assert per, out
    assert int(per.group(2)) == int(per.group(4)) + int(per.group(6)) > 0, per.group(0)  # every target in one group


def test_per_target_split_separates_each_queues_first_target() -> None:
    from run import PerTarget  # bench/run.py

    timed = PerTarget(first=2.0, times=[(0.010, True), (0.050, False), (0.020, True), (0.070, False)])
    assert timed.ms() == (4, pytest.approx(37.5))
    assert timed.ms(True) == (2, pytest.approx(15.0))  # the per-target cost: the queue's analyses were done before
    assert timed.ms(False) == (2, pytest.approx(60.0))  # each ClusterQueue's first target pays for them once
    assert PerTarget(first=1.0, times=[(0.004, True)]).ms(False) == (0, 0.0)
    assert "15.0 ms for the 2 whose ClusterQueue came before, 60.0 ms for the first target of each of 2 more" \
        in timed.detail()
