"""`kueuediag rules`: the real `promtool check rules` and `promtool test rules` — for every alert, input series
that must fire and series that must not — and a structural check of the Grafana dashboard."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from kueuediag.cli import build_app
from kueuediag.render.health_openmetrics import METRICS as HEALTH_GAUGES
from kueuediag.rules import KUEUE_METRICS, Thresholds
from kueuediag.rules.grafana import dashboard
from kueuediag.rules.prometheus import RECORDING, alerts, rule_file

pytestmark = pytest.mark.skipif(shutil.which("promtool") is None,
                                reason="promtool (Debian package prometheus) not installed")

LEADER = {"replica_role": "leader"}


def series(name: str, values: str, **labels: str) -> dict[str, str]:
    body = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return {"series": f"{name}{{{body}}}", "values": values}


def write_rules(tmp_path: Path) -> Path:
    code = CliRunner().invoke(build_app(), ["rules", "-o", str(tmp_path)]).exit_code
    assert code == 0
    return tmp_path / "kueuediag-rules.yaml"


def _annotations(alert: str, labels: dict[str, str], value: str) -> dict[str, str]:
    rule = next(r for r in alerts(Thresholds()) if r["alert"] == alert)
    out = {}
    for key, text in rule["annotations"].items():
        text = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels[m.group(1)], text)
        out[key] = text.replace("{{ $value | humanize }}", value)
    return out


def expect(alert: str, value: str, **labels: str) -> dict[str, Any]:
    rule = next(r for r in alerts(Thresholds()) if r["alert"] == alert)
    full = {**labels, **rule["labels"]}
    return {"exp_labels": full, "exp_annotations": _annotations(alert, labels, value)}


def run_promtool_tests(tmp_path: Path, tests: list[dict[str, Any]]) -> None:
    rules = write_rules(tmp_path)
    doc = {"rule_files": [rules.name], "evaluation_interval": "1m", "tests": tests}
    test_file = tmp_path / "kueuediag-rules.test.yaml"
    test_file.write_text(yaml.safe_dump(doc, sort_keys=False))
    proc = subprocess.run(["promtool", "test", "rules", test_file.name], cwd=tmp_path, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_promtool_check_rules(tmp_path: Path) -> None:
    rules = write_rules(tmp_path)
    proc = subprocess.run(["promtool", "check", "rules", str(rules)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"SUCCESS: {len(RECORDING) + len(alerts(Thresholds()))} rules found" in proc.stdout
    names = {r["alert"] for r in rule_file(Thresholds())["groups"][1]["rules"]}
    assert names == {"KueueGuaranteeViolation", "KueueAdmissionTrickle", "KueueAdmissionStall",
                     "KueuePreemptionTrickle", "KueuePendingGrowth", "KueueControllerDown",
                     "KueueAdmissionChecksStuck"}


def test_guarantee_violation_fires_and_stays_quiet(tmp_path: Path) -> None:
    gpu = {"flavor": "h100", "resource": "nvidia.com/gpu"}
    inputs = [
        # a (v0.18+): 12 of 16 nominal unused, 4 GPUs pending -> fires
        series("kueue_cluster_queue_nominal_quota", "16x40", cluster_queue="a", **gpu, **LEADER),
        series("kueue_cluster_queue_resource_reservation", "4x40", cluster_queue="a", **gpu, **LEADER),
        series("kueue_cluster_queue_resource_pending", "4x40", cluster_queue="a", resource="nvidia.com/gpu",
               **LEADER),
        series("kueue_pending_workloads", "1x40", cluster_queue="a", status="inadmissible", **LEADER),
        # b: nominal fully used, work pending -> quiet; a follower replica's stale zero must be ignored
        series("kueue_cluster_queue_nominal_quota", "16x40", cluster_queue="b", **gpu, **LEADER),
        series("kueue_cluster_queue_resource_reservation", "16x40", cluster_queue="b", **gpu, **LEADER),
        series("kueue_cluster_queue_resource_reservation", "0x40", cluster_queue="b", **gpu,
               replica_role="follower"),
        series("kueue_cluster_queue_resource_pending", "8x40", cluster_queue="b", resource="nvidia.com/gpu",
               **LEADER),
        # c (v0.15: no replica_role, no resource_pending): unused quota and pending workloads -> fires
        series("kueue_cluster_queue_nominal_quota", "8x40", cluster_queue="c", **gpu),
        series("kueue_cluster_queue_resource_reservation", "0x40", cluster_queue="c", **gpu),
        series("kueue_pending_workloads", "2x40", cluster_queue="c", status="inadmissible"),
        # d (old): unused quota, nothing pending -> quiet
        series("kueue_cluster_queue_nominal_quota", "8x40", cluster_queue="d", **gpu),
        series("kueue_pending_workloads", "0x40", cluster_queue="d", status="active"),
        # e: kueuediag health's exact gauge: 20 minutes -> fires
        series("kueuediag_cluster_queue_guarantee_violation_seconds", "1200x40", cluster_queue="e"),
        series("kueuediag_cluster_queue_guarantee_violation_seconds", "0x40", cluster_queue="f"),
    ]
    run_promtool_tests(tmp_path, [{
        "interval": "1m", "input_series": inputs,
        "alert_rule_test": [
            {"eval_time": "10m", "alertname": "KueueGuaranteeViolation", "exp_alerts": []},  # not yet 15m
            {"eval_time": "20m", "alertname": "KueueGuaranteeViolation", "exp_alerts": [
                expect("KueueGuaranteeViolation", "12", cluster_queue="a", resource="nvidia.com/gpu"),
                expect("KueueGuaranteeViolation", "8", cluster_queue="c"),
                expect("KueueGuaranteeViolation", "1200", cluster_queue="e"),
            ]},
        ],
    }])


def _queue(name: str, quota: dict[tuple[str, str], tuple[int, int]], demand: dict[str, int],
           pending: int, **extra: str) -> list[dict[str, str]]:
    """Series of one ClusterQueue: (flavor, resource) → (nominal, reserved), resource → pending requests."""
    out = []
    for (flavor, resource), (nominal, reserved) in quota.items():
        labels = {"cluster_queue": name, "flavor": flavor, "resource": resource, **LEADER, **extra}
        out.append(series("kueue_cluster_queue_nominal_quota", f"{nominal}x40", **labels))
        out.append(series("kueue_cluster_queue_resource_reservation", f"{reserved}x40", **labels))
    for resource, amount in demand.items():
        out.append(series("kueue_cluster_queue_resource_pending", f"{amount}x40", cluster_queue=name,
                          resource=resource, **LEADER))
    out.append(series("kueue_pending_workloads", f"{pending}x40", cluster_queue=name, status="inadmissible",
                      **LEADER))
    return out


def test_guarantee_violation_edge_cases(tmp_path: Path) -> None:
    """Where the old per-resource sum misled: every requested resource must have room, per flavor (not summed
    over flavors), a lone pending workload's request must fit, and kueuediag's gauge (KD101) overrides."""
    gpu, cpu = "nvidia.com/gpu", "cpu"
    inputs = [
        # cpu-room: 10 cpu free and 2 pending, but the pending workloads also want GPUs and none is free -> quiet
        *_queue("cpu-room", {("h100", gpu): (8, 8), ("std", cpu): (32, 22)}, {gpu: 4, cpu: 2}, 2),
        # borrow: h100 has 4 unused, a100 is 4 above nominal (borrowing); a sum over flavors is 0 -> fires (4)
        *_queue("borrow", {("h100", gpu): (8, 4), ("a100", gpu): (4, 8)}, {gpu: 2}, 3),
        # lone-big: the only pending workload asks 8 GPUs, 4 are free -> quiet (it does not fit)
        *_queue("lone-big", {("h100", gpu): (8, 4)}, {gpu: 8}, 1),
        # two-big: two pending workloads ask 8 in all, 4 free: one of them may fit -> fires (4); KD101 decides
        *_queue("two-big", {("h100", gpu): (8, 4)}, {gpu: 8}, 2),
        # uncovered: pending demand for a resource the ClusterQueue has no quota for -> quiet
        *_queue("uncovered", {("h100", gpu): (8, 0)}, {gpu: 1, "example.com/fpga": 1}, 1),
        # ruled-out: the metrics say room and demand, but kueuediag's gauge (KD101's ruling) says 0 -> quiet
        *_queue("ruled-out", {("h100", gpu): (8, 0)}, {gpu: 2}, 1),
        series("kueuediag_cluster_queue_guarantee_violation_seconds", "0x40", cluster_queue="ruled-out"),
        # single-fits: one pending workload asking 2 of 4 free GPUs and 1 of 10 free cpu -> fires on both
        *_queue("single-fits", {("h100", gpu): (8, 4), ("std", cpu): (16, 6)}, {gpu: 2, cpu: 1}, 1),
    ]
    run_promtool_tests(tmp_path, [{
        "interval": "1m", "input_series": inputs,
        "alert_rule_test": [
            {"eval_time": "20m", "alertname": "KueueGuaranteeViolation", "exp_alerts": [
                expect("KueueGuaranteeViolation", "4", cluster_queue="borrow", resource=gpu),
                expect("KueueGuaranteeViolation", "10", cluster_queue="single-fits", resource=cpu),
                expect("KueueGuaranteeViolation", "4", cluster_queue="single-fits", resource=gpu),
                expect("KueueGuaranteeViolation", "4", cluster_queue="two-big", resource=gpu),
            ]},
        ],
    }])


def test_admission_trickle_and_stall(tmp_path: Path) -> None:
    inputs = [
        # t: one admission every 20 minutes while 5 wait -> trickle
        series("kueue_admitted_workloads_total", "0+0.05x200", cluster_queue="t", priority_class="", **LEADER),
        series("kueue_pending_workloads", "5x200", cluster_queue="t", status="inadmissible", **LEADER),
        # fast: 60 admissions an hour -> neither
        series("kueue_admitted_workloads_total", "0+1x200", cluster_queue="fast", priority_class="", **LEADER),
        series("kueue_pending_workloads", "5x200", cluster_queue="fast", status="active", **LEADER),
        # idle: a trickle, but nothing pending -> neither
        series("kueue_admitted_workloads_total", "0+0.05x200", cluster_queue="idle", priority_class="", **LEADER),
        series("kueue_pending_workloads", "0x200", cluster_queue="idle", status="active", **LEADER),
        # s: admitted nothing for hours while 3 wait -> stall; new: never admitted anything, 2 wait -> stall
        series("kueue_admitted_workloads_total", "10x200", cluster_queue="s", priority_class="", **LEADER),
        series("kueue_pending_workloads", "3x200", cluster_queue="s", status="inadmissible", **LEADER),
        series("kueue_pending_workloads", "2x200", cluster_queue="new", status="inadmissible", **LEADER),
    ]
    run_promtool_tests(tmp_path, [{
        "interval": "1m", "input_series": inputs,
        "alert_rule_test": [
            {"eval_time": "150m", "alertname": "KueueAdmissionTrickle",
             "exp_alerts": [expect("KueueAdmissionTrickle", "3", cluster_queue="t")]},
            {"eval_time": "150m", "alertname": "KueueAdmissionStall",
             "exp_alerts": [expect("KueueAdmissionStall", "0", cluster_queue="new"),
                            expect("KueueAdmissionStall", "0", cluster_queue="s")]},
            {"eval_time": "20m", "alertname": "KueueAdmissionStall", "exp_alerts": []},  # not for 30m yet
        ],
    }])


def test_preemption_trickle(tmp_path: Path) -> None:
    inputs = [
        series("kueue_preempted_workloads_total", "0+0.0625x200", preempting_cluster_queue="p",
               reason="InCohortReclamation", **LEADER),  # 3.75/h
        series("kueue_pending_workloads", "1x200", cluster_queue="p", status="inadmissible", **LEADER),
        series("kueue_preempted_workloads_total", "0+0.5x200", preempting_cluster_queue="q",
               reason="InClusterQueue", **LEADER),  # 30/h: preemption works
        series("kueue_pending_workloads", "1x200", cluster_queue="q", status="inadmissible", **LEADER),
    ]
    run_promtool_tests(tmp_path, [{
        "interval": "1m", "input_series": inputs,
        "alert_rule_test": [
            {"eval_time": "150m", "alertname": "KueuePreemptionTrickle",
             "exp_alerts": [expect("KueuePreemptionTrickle", "3.75", cluster_queue="p")]},
        ],
    }])


def test_pending_growth_controller_down_and_stuck_checks(tmp_path: Path) -> None:
    job = "kueue-controller-manager-metrics-service"
    inputs = [
        series("kueue_pending_workloads", "0+1x120", cluster_queue="g", status="active", **LEADER),
        series("kueue_pending_workloads", "7x120", cluster_queue="h", status="active", **LEADER),
        series("up", "1x30 0x90", job=job, instance="10.0.0.1:8443"),
        series("kueue_reserving_active_workloads", "3x120", cluster_queue="x", **LEADER),
        series("kueue_admitted_active_workloads", "1x120", cluster_queue="x", **LEADER),
        series("kueue_reserving_active_workloads", "2x120", cluster_queue="y", **LEADER),
        series("kueue_admitted_active_workloads", "2x120", cluster_queue="y", **LEADER),
    ]
    run_promtool_tests(tmp_path, [
        {"interval": "1m", "input_series": inputs,
         "alert_rule_test": [
             {"eval_time": "100m", "alertname": "KueuePendingGrowth",
              "exp_alerts": [expect("KueuePendingGrowth", "60", cluster_queue="g")]},
             {"eval_time": "20m", "alertname": "KueueControllerDown", "exp_alerts": []},
             {"eval_time": "100m", "alertname": "KueueControllerDown",
              "exp_alerts": [expect("KueueControllerDown", "0")]},
             {"eval_time": "20m", "alertname": "KueueAdmissionChecksStuck", "exp_alerts": []},
             {"eval_time": "100m", "alertname": "KueueAdmissionChecksStuck",
              "exp_alerts": [expect("KueueAdmissionChecksStuck", "2", cluster_queue="x")]},
         ]},
        # no scrape target at all: absent() fires too
        {"interval": "1m", "input_series": [series("kueue_pending_workloads", "0x30", cluster_queue="z")],
         "alert_rule_test": [{"eval_time": "20m", "alertname": "KueueControllerDown",
                              "exp_alerts": [expect("KueueControllerDown", "1")]}]},
    ])


# --- the dashboard ------------------------------------------------------------------------------------------

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_FUNCS_AND_WORDS = {"sum", "max", "by", "on", "and", "or", "unless", "min_over_time", "increase", "delta", "absent",
                    "label_replace", "job", "cluster_queue", "resource", "flavor", "cause", "replica_role",
                    "preempting_cluster_queue"}


def referenced_metrics(expr: str) -> set[str]:
    stripped = re.sub(r'"[^"]*"', '""', expr)
    stripped = re.sub(r"\{[^}]*\}", "", stripped)
    stripped = re.sub(r"\[[^\]]*\]", "", stripped)
    return {n for n in _NAME.findall(stripped) if n not in _FUNCS_AND_WORDS and not n[0].isdigit()}


def test_every_expression_references_known_metrics() -> None:
    known = set(KUEUE_METRICS) | set(RECORDING) | set(HEALTH_GAUGES)
    exprs = list(RECORDING.values()) + [a["expr"] for a in alerts(Thresholds())]
    exprs += [t["expr"] for p in dashboard(".*kueue.*")["panels"] for t in p["targets"]]
    for expr in exprs:
        unknown = referenced_metrics(expr) - known
        assert not unknown, f"{expr}: unknown metric(s) {unknown}"


def test_dashboard_structure_and_exprs_parse(tmp_path: Path) -> None:
    assert CliRunner().invoke(build_app(), ["rules", "-o", str(tmp_path)]).exit_code == 0
    board = json.loads((tmp_path / "kueuediag-dashboard.json").read_text())
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    titles = " ".join(p["title"] for p in board["panels"])
    assert "Fragmentation" in titles and "Guarantee violation" in titles
    exprs = []
    for p in board["panels"]:
        for ds in [p["datasource"]] + [t["datasource"] for t in p["targets"]]:
            assert ds["type"] == "prometheus"
            assert ds["uid"].startswith("${") and ds["uid"][2:-1] in variables
        for t in p["targets"]:
            for var in re.findall(r"\$(\w+)", t["expr"]):
                assert var in variables, f"panel {p['title']!r} uses undefined variable ${var}"
            exprs.append(t["expr"].replace("$job", variables["job"]["query"]))
    check = tmp_path / "panels.rules.yaml"
    check.write_text(yaml.safe_dump({"groups": [{"name": "panels", "rules": [
        {"record": f"kueuediag:panel_{n}", "expr": e} for n, e in enumerate(exprs)]}]}))
    proc = subprocess.run(["promtool", "check", "rules", str(check)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_rules_to_stdout_and_bad_directory(tmp_path: Path) -> None:
    result = CliRunner().invoke(build_app(), ["rules", "--guarantee-minutes", "45"])
    assert result.exit_code == 0
    doc = yaml.safe_load(result.stdout)
    gv = next(r for r in doc["groups"][1]["rules"] if r["alert"] == "KueueGuaranteeViolation")
    assert gv["for"] == "45m" and "> 2700" in gv["expr"]
    f = tmp_path / "file"
    f.write_text("x")
    bad = CliRunner().invoke(build_app(), ["rules", "-o", str(f)])
    assert bad.exit_code == 2 and "not a directory" in bad.stderr
