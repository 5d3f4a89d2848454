"""Error isolation: a malformed object the target does not depend on must not change the diagnosis.

List views leave malformed objects out and record them; only the analyses whose scope holds one (the target's
cohort tree for quota, its ClusterQueue for queue order) could not check, naming object and field. Junk in the
target's own Workload stays an input error (exit 2).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from kueuediag.cli import build_app
from kueuediag.errors import ExitCode

from .case_runner import FIXTURES

TARGET = ["job/af3-inference-batch-12", "-n", "team-bio"]
JUNK = "cpu: invalid quantity 'lots'"


def _junk_copy(tmp_path: Path, workload: str) -> Path:
    """guarantee-violation with `cpu: lots` in the first container of Workload `workload` (namespace/name)."""
    root = tmp_path / "snap"
    shutil.copytree(FIXTURES / "scenarios" / "guarantee-violation", root)
    path = root / "objects" / "kueue" / "workloads.yaml"
    docs = list(yaml.safe_load_all(path.read_text()))
    objs: list[dict[str, Any]] = [o for d in docs if d for o in (d.get("items") or [d])]
    ns, name = workload.split("/")
    [wl] = [o for o in objs if o["metadata"]["namespace"] == ns and o["metadata"]["name"] == name]
    wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    path.write_text(yaml.safe_dump_all(docs))
    return root


def _why(args: list[str]) -> tuple[int, dict[str, Any], str]:
    result = CliRunner().invoke(build_app(), ["why", *args, "-o", "json"])
    return result.exit_code, json.loads(result.stdout) if result.stdout else {}, result.stderr


def test_junk_outside_the_cohort_tree_leaves_the_verdict_intact(tmp_path: Path) -> None:
    clean_code, clean, _ = _why([*TARGET, "--from", str(FIXTURES / "scenarios" / "guarantee-violation")])
    assert clean_code == ExitCode.OK and clean["verdict"]["cause"] == "guarantee-violation"
    root = _junk_copy(tmp_path, "ml-platform/job-featurize-pdb-chunk-5114-1242a")  # cpu-batch: no cohort
    code, doc, err = _why([*TARGET, "--from", str(root)])
    assert code == ExitCode.OK, err
    assert doc["verdict"]["cause"] == clean["verdict"]["cause"]
    assert doc["verdict"]["headline"] == clean["verdict"]["headline"]
    runs = {c["code"]: c for c in doc["checks"]}
    clean_runs = {c["code"]: c for c in clean["checks"]}
    for code_ in ("KD101", "KD102", "KD601"):
        assert runs[code_]["result"] == clean_runs[code_]["result"] != "could-not-check", runs[code_]
    assert not [c for c in doc["checks"] if "5114" in (c.get("input") or "")]
    # a bare name that scans every Workload still resolves the target
    code, bare, err = _why(["af3-inference-batch-12", "--from", str(root)])
    assert code == ExitCode.OK and bare["verdict"]["cause"] == "guarantee-violation", err


def test_junk_in_a_finished_workload_of_the_target_cluster_queue_is_never_read(tmp_path: Path) -> None:
    """A Finished Workload holds no quota: only its status.admission (what it released, and when) is read, so
    junk in its pod spec blinds nothing."""
    clean_code, clean, _ = _why([*TARGET, "--from", str(FIXTURES / "scenarios" / "guarantee-violation")])
    root = _junk_copy(tmp_path, "team-bio/job-af3-inference-batch-11-aa23d")  # finished, admitted in bio-a100
    code, doc, err = _why([*TARGET, "--from", str(root)])
    assert code == ExitCode.OK, err
    assert doc["verdict"]["cause"] == clean["verdict"]["cause"] == "guarantee-violation"
    assert doc["verdict"]["headline"] == clean["verdict"]["headline"]
    runs = {c["code"]: c for c in doc["checks"]}
    clean_runs = {c["code"]: c for c in clean["checks"]}
    for code_ in ("KD101", "KD102", "KD601"):
        assert runs[code_]["result"] == clean_runs[code_]["result"] != "could-not-check", runs[code_]


def test_junk_in_the_target_cluster_queue_blinds_the_quota_checks(tmp_path: Path) -> None:
    bad = "Workload team-bio/job-esm3-embed-uniref-07-13d3c"  # holds quota in bio-a100, the target's ClusterQueue
    root = _junk_copy(tmp_path, bad.split()[1])
    code, doc, err = _why([*TARGET, "--from", str(root)])
    assert code == ExitCode.OK, err
    runs = {c["code"]: c for c in doc["checks"]}
    for code_ in ("KD101", "KD102", "KD601"):
        run = runs[code_]
        assert run["result"] == "could-not-check" and run["input"] == bad, run
        assert JUNK in run["reason"] and "bio-a100" in run["reason"], run
    verdict = doc["verdict"]
    assert verdict["cause"] == "unknown" and verdict["confidence"] == "low"  # logging-insufficient is no answer
    assert [f["cause"] for f in doc["findings"]][:1] == ["logging-insufficient"]
    assert any(line.startswith("KD101 guarantee-violation could not check — " + bad) for line in verdict["unseen"])
    assert "diagnosis incomplete" in verdict["headline"] and "KD101 guarantee-violation" in verdict["headline"]
    assert bad in verdict["headline"]
    text = CliRunner().invoke(build_app(), ["why", *TARGET, "--from", str(root)]).stdout
    assert "VERDICT diagnosis incomplete  (unknown)" in text and "diagnosis incomplete — could not check" in text


def test_junk_in_the_target_workload_is_exit_2_however_it_is_named(tmp_path: Path) -> None:
    root = _junk_copy(tmp_path, "team-bio/job-af3-inference-batch-12-89b09")
    for args in (TARGET, ["job-af3-inference-batch-12-89b09"], ["af3-inference-batch-12"]):
        result = CliRunner().invoke(build_app(), ["why", *args, "--from", str(root)])
        assert result.exit_code == ExitCode.USAGE, (args, result.stdout, result.stderr)
        assert result.stdout == "" and result.stderr.count("\n") == 1, result.stderr
        assert "Workload team-bio/job-af3-inference-batch-12-89b09" in result.stderr and JUNK in result.stderr
