"""`kueuediag health` on the recipe scenarios: exactly the objects in trouble are flagged, heads equal `why`,
and every output format holds its contract (JSON Schema, JUnit XSD shape, promtool-valid OpenMetrics)."""

from __future__ import annotations

import json
import shutil
import subprocess
from functools import cache
from pathlib import Path
from xml.etree import ElementTree as ET

import jsonschema
import pytest
from typer.testing import CliRunner

from kueuediag.cli import build_app
from kueuediag.config import Settings
from kueuediag.engine import diagnose
from kueuediag.health.build import build_report
from kueuediag.health.model import HealthReport
from kueuediag.models import Severity
from kueuediag.registry import discover
from kueuediag.render.health_json import render_health_json
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.target import resolve

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "fixtures" / "scenarios"
SCHEMA = json.loads((ROOT / "docs" / "schema" / "health-v1.schema.json").read_text())
WHY_SCHEMA = json.loads((ROOT / "docs" / "schema" / "why-v1.schema.json").read_text())

# (health check, object) pairs each scenario must flag — and nothing else.
EXPECTED: dict[str, set[tuple[str, str]]] = {
    "healthy": set(),
    "guarantee-violation": {
        ("guarantee-violation", "ClusterQueue/bio-a100"),
        ("pending-heads", "Workload/team-bio/job-af3-inference-batch-12-89b09"),
    },
    "fair-sharing-anomaly": {
        # alignment's 8 free GPUs are lent to the cohort: KD101 reports a model disagreement, not a violation
        ("fair-sharing", "ClusterQueue/eval-burst"),
        ("known-issues", "KnownIssue/fair-sharing-rounding-zero"),
        ("pending-heads", "Workload/team-alignment/job-rlhf-ppo-70b-r3-ee925"),
    },
    "fragmentation-no-tas": {("fragmentation", "ResourceFlavor/h100")},
    # KD101 reads Kueue's record first: a head that waits for preemption or for a topology fit is not a
    # guarantee violation (the owner rules it out), so only guarantee-violation and healthy flag it.
    "fragmentation-tas": {
        ("fragmentation", "ResourceFlavor/h100"),
        ("pending-heads", "Workload/team-research/job-llama3-8b-sft-8g-r12-3464c"),
    },
    "slow-preemption": {
        ("admission-trickle", "ClusterQueue/nlp-h100"),
        ("preemption-trickle", "ClusterQueue/nlp-h100"),
        ("known-issues", "KnownIssue/serialized-pod-preemption"),
        ("pending-heads", "Workload/team-nlp/pod-nlp-sft-llama70b-r8-0e6f2"),
        ("pending-heads", "Workload/team-research/research-dpo-sweep-08"),
    },
    "stuck-preemption-target": {
        ("admission-stall", "ClusterQueue/nlp-a100"),
        ("admission-stall", "ClusterQueue/speech-a100"),
        ("admission-stall", "ClusterQueue/vision-a100"),
        ("zombie-pods", "Pod/ml-sweeps/sweep-lr-0917-g4-1"),
        ("victims-holding-quota", "Workload/ml-sweeps/sweep-lr-0917-g4"),
        ("node-health", "Node/gke-ml-train-euw4-a100-pool-e1a67f6c-zdlr"),
        ("known-issues", "KnownIssue/pod-group-terminating-quota"),
        ("pending-heads", "Workload/team-nlp/job-t5-xxl-sft-bs512-26360"),
        ("pending-heads", "Workload/team-speech/job-whisper-v3-ft-de-76f96"),
        ("pending-heads", "Workload/team-vision/job-vit-h14-finetune-e3-543dc"),
    },
}


@cache
def report_for(name: str) -> HealthReport:
    return build_report(load_snapshot(str(SCENARIOS / name)), discover(), Settings())


def flagged(report: HealthReport) -> set[tuple[str, str]]:
    return {(i.check, str(i.ref)) for i in report.items if i.finding is not None}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_flags_exactly_the_objects_in_trouble(name: str) -> None:
    report = report_for(name)
    assert flagged(report) == EXPECTED[name]
    assert not report.skipped, report.skipped


def test_findings_carry_the_owning_checks_words() -> None:
    report = report_for("stuck-preemption-target")
    zombie = next(i for i in report.items if i.check == "zombie-pods" and i.finding is not None)
    assert zombie.finding is not None and zombie.finding.code == "KD901"
    assert any("sweep-lr-0917-g4-1" in x.text for x in zombie.finding.fixes)  # KD901's own fix
    frag = next(i for i in report_for("fragmentation-no-tas").items if i.check == "fragmentation" and i.failed)
    assert frag.finding is not None and frag.finding.cause == "fragmentation"
    assert "4+2+1+1" in frag.finding.title


def test_healthy_items_say_what_was_ruled_out() -> None:
    report = report_for("healthy")
    gv = [i for i in report.items if i.check == "guarantee-violation"]
    assert {str(i.ref) for i in gv} == {f"ClusterQueue/{q.name}" for q in report.queues}
    assert all(i.note == "no pending workload fits the unused nominal quota" for i in gv)
    controller = next(i for i in report.items if i.check == "controller")
    assert "controller pod(s) ready" in controller.note


def test_queue_tree_and_flavor_numbers() -> None:
    report = report_for("guarantee-violation")
    bio = next(q for q in report.queues if q.name == "bio-a100")
    assert bio.cohort == "sci" and bio.path == ("sci",)
    gpu = next(c for c in bio.quota if c.resource == "nvidia.com/gpu")
    assert (gpu.nominal, gpu.reserved, gpu.pending) == ("16", "4", "4")
    assert bio.violation_seconds is not None and bio.violation_seconds > 15 * 60
    h100 = next(f for f in report_for("fragmentation-no-tas").flavors if f.name == "h100")
    assert (h100.total_free, h100.largest_hole) == ("8", "4")
    assert h100.histogram == {"0": 0, "1": 2, "2": 1, "3": 0, "4": 1}
    assert h100.slots == {"1": 8, "2": 3, "4": 1, "8": 0}
    assert h100.fragmentation == 0.25  # 1+1 of 8 free sit in holes smaller than the common 2-GPU shape
    tas = next(f for f in report_for("fragmentation-tas").flavors if f.name == "h100")
    assert tas.topology == "gke-default"
    # per level, for the common 2-GPU shape: the best host has 4 free (2 slots), no host could take 8
    assert tas.domains[-1] == {"level": "kubernetes.io/hostname", "domains": 4, "bestFree": "4", "bestSlots": 2}


def test_fair_sharing_columns_show_reported_and_recomputed() -> None:
    q = next(q for q in report_for("fair-sharing-anomaly").queues if q.name == "eval-burst")
    assert q.share_reported == 0
    assert q.share_recomputed == "0.625"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_heads_equal_why(name: str) -> None:
    """The heads' causes and headlines equal a separate `why workload/NAME -n NS` on a fresh snapshot."""
    report = report_for(name)
    for head in report.heads:
        snap = load_snapshot(str(SCENARIOS / name))
        alone = diagnose(snap, resolve(snap, f"workload/{head.name}", head.namespace), discover(), Settings())
        assert (head.verdict.cause, head.verdict.headline) == (alone.cause, alone.headline)
        assert [r.finding.cause for r in head.verdict.findings] == [r.finding.cause for r in alone.findings]


def test_json_validates_against_the_schema() -> None:
    for name in EXPECTED:
        doc = json.loads(render_health_json(report_for(name), Severity.HIGH))
        jsonschema.validate(doc, SCHEMA)
        for head in doc["heads"]:
            jsonschema.validate(head["why"], WHY_SCHEMA)
    doc = json.loads(render_health_json(report_for("guarantee-violation"), Severity.HIGH))
    assert doc["summary"]["failing"] == 2 and doc["summary"]["bySeverity"]["high"] == 2


def test_schema_stays_additive() -> None:
    """Objects where fields will be added must not forbid additional properties."""

    def walk(node: object, path: str) -> None:
        if isinstance(node, dict):
            assert node.get("additionalProperties") is not False, f"{path} forbids additional properties"
            for k, v in node.items():
                walk(v, f"{path}/{k}")
        elif isinstance(node, list):
            for n, v in enumerate(node):
                walk(v, f"{path}/{n}")

    walk(SCHEMA, "#")


# --- JUnit: the Jenkins/Ant schema's shape ------------------------------------------------------------------

SUITE_REQUIRED = {"name", "tests", "failures", "errors", "skipped", "time", "timestamp", "hostname", "id", "package"}
CASE_CHILDREN = ("skipped", "error", "failure", "system-out", "system-err")


def assert_junit_shape(xml: str) -> ET.Element:
    root = ET.fromstring(xml)
    assert root.tag == "testsuites"
    for key in ("tests", "failures", "errors"):
        assert int(root.get(key, "x")) >= 0
    float(root.get("time", "x"))
    for suite in root:
        assert suite.tag == "testsuite"
        assert SUITE_REQUIRED <= set(suite.attrib), SUITE_REQUIRED - set(suite.attrib)
        assert suite.get("hostname")
        assert len(suite.get("timestamp", "")) == 19 and suite.get("timestamp", "")[10] == "T"
        children = [c.tag for c in suite]
        assert children[0] == "properties", "properties must come first"
        assert children[-2:] == ["system-out", "system-err"]
        assert set(children[1:-2]) <= {"testcase"}
        cases = suite.findall("testcase")
        assert int(suite.get("tests", "-1")) == len(cases)
        assert int(suite.get("failures", "-1")) == sum(1 for c in cases if c.find("failure") is not None)
        assert int(suite.get("skipped", "-1")) == sum(1 for c in cases if c.find("skipped") is not None)
        for prop in suite.find("properties") or []:
            assert prop.tag == "property" and {"name", "value"} <= set(prop.attrib)
        for case in cases:
            assert {"name", "classname", "time"} <= set(case.attrib)
            order = [CASE_CHILDREN.index(c.tag) for c in case]
            assert order == sorted(order), f"testcase children out of order: {[c.tag for c in case]}"
            fail = case.find("failure")
            if fail is not None:
                assert fail.get("message") and fail.get("type") and fail.text
    return root


def test_junit_one_suite_per_check_one_case_per_object() -> None:
    from kueuediag.render.health_junit import render_health_junit

    root = assert_junit_shape(render_health_junit(report_for("stuck-preemption-target"), Severity.HIGH))
    suites = {s.get("name"): s for s in root}
    gv = suites["guarantee-violation"]
    cases = {c.get("name"): c for c in gv.findall("testcase")}
    assert set(cases) == {"ClusterQueue/nlp-a100", "ClusterQueue/speech-a100", "ClusterQueue/vision-a100",
                          "ClusterQueue/preemptible-a100", "ClusterQueue/cpu-batch"}
    assert all(c.find("failure") is None for c in cases.values())
    heads = {c.get("name"): c for c in suites["pending-heads"].findall("testcase")}
    failure = heads["Workload/team-vision/job-vit-h14-finetune-e3-543dc"].find("failure")
    assert failure is not None and failure.get("type") == "stuck-preemption-target"
    assert "sweep-lr-0917-g4-1" in (failure.text or "")
    gv_root = assert_junit_shape(render_health_junit(report_for("guarantee-violation"), Severity.HIGH))
    bio = next(c for s in gv_root if s.get("name") == "guarantee-violation" for c in s.findall("testcase")
               if c.get("name") == "ClusterQueue/bio-a100")
    bio_failure = bio.find("failure")
    assert bio_failure is not None and bio_failure.get("type") == "guarantee-violation"
    assert "needs 4 nvidia.com/gpu" in (bio_failure.text or "")
    # below the gate (medium zombie finding with gate high): reported, not failed
    zombie = suites["zombie-pods"].find("testcase")
    assert zombie is not None and zombie.find("failure") is None
    assert "below high" in (zombie.findtext("system-out") or "")
    healthy = assert_junit_shape(render_health_junit(report_for("healthy"), Severity.HIGH))
    assert healthy.get("failures") == "0" and int(healthy.get("tests", "0")) > 10


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool (Debian package prometheus) not installed")
@pytest.mark.parametrize("name", ["stuck-preemption-target", "fragmentation-no-tas", "healthy"])
def test_openmetrics_passes_promtool(name: str) -> None:
    from kueuediag.render.health_openmetrics import render_health_openmetrics

    text = render_health_openmetrics(report_for(name))
    proc = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert text.endswith("# EOF\n")
    if name == "stuck-preemption-target":
        assert 'kueuediag_pending_heads{cluster_queue="nlp-a100",cause="stuck-preemption-target"} 1' in text
        assert 'kueuediag_cluster_queue_guarantee_violation_seconds{cluster_queue="cpu-batch"} 0' in text
    if name == "fragmentation-no-tas":
        assert 'kueuediag_flavor_fragmentation_ratio{flavor="h100",resource="nvidia.com/gpu"} 0.25' in text
        assert 'kueuediag_flavor_slots{flavor="h100",resource="nvidia.com/gpu",pod_size="8"} 0' in text


# --- the command line ------------------------------------------------------------------------------------------


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(build_app(), list(args))
    return result.exit_code, result.stdout, result.stderr


def test_exit_codes() -> None:
    assert run("health", "--from", str(SCENARIOS / "healthy"), "--no-color")[0] == 0
    code, out, _ = run("health", "--from", str(SCENARIOS / "guarantee-violation"), "--no-color")
    assert code == 1 and "guarantee-violation ClusterQueue/bio-a100" in out
    assert run("health", "--from", str(SCENARIOS / "guarantee-violation"), "--exit-zero")[0] == 0
    assert run("health", "--from", str(SCENARIOS / "stuck-preemption-target"), "--fail-on", "critical")[0] == 0
    code, _, err = run("health", "--from", str(SCENARIOS / "healthy"), "-o", "yaml")
    assert code == 2 and "'yaml' is not one of" in err and "openmetrics" in err
    code, _, err = run("health", "--from", str(SCENARIOS / "healthy"), "--option", "KD101.nope=1")
    assert code == 2 and "unknown option 'nope'" in err
    code, _, err = run("health", "--from", str(SCENARIOS / "healthy"), "--watch", "5")
    assert code == 2 and "--watch needs live mode" in err


def test_threshold_from_flag_and_config(tmp_path: Path) -> None:
    """The CI gate of the issue: fail only when a guarantee is violated for more than N minutes."""
    gv = str(SCENARIOS / "guarantee-violation")  # af3 fits unused quota for ~48 minutes
    assert run("health", "--from", gv, "--select", "guarantee-violation", "--option",
               "KD101.violation_minutes=15")[0] == 1
    assert run("health", "--from", gv, "--select", "guarantee-violation", "--option",
               "KD101.violation_minutes=60")[0] == 0
    cfg = tmp_path / ".kueuediag.yaml"
    cfg.write_text("checks:\n  KD101:\n    violation_minutes: 60\n")
    assert run("health", "--from", gv, "--select", "KD1", "--config", str(cfg))[0] == 0
    code, out, _ = run("health", "--from", gv, "--select", "KD1", "--config", str(cfg), "--option",
                       "KD101.violation_minutes=15", "-o", "json")
    assert code == 1  # flags win over the config file
    doc = json.loads(out)
    assert {i["check"] for i in doc["items"]} == {"guarantee-violation"}  # KD103: no reported shares here
    assert doc["summary"]["checksRun"] == ["guarantee-violation", "fair-sharing"]


def test_ignore_by_health_check_and_by_cause() -> None:
    stuck = str(SCENARIOS / "stuck-preemption-target")
    _, out, _ = run("health", "--from", stuck, "-o", "json", "--ignore", "zombie-pods,KD2,admission-stall")
    doc = json.loads(out)
    checks = {i["check"] for i in doc["items"]}
    assert "zombie-pods" not in checks and "fragmentation" not in checks and "admission-stall" not in checks
    assert "victims-holding-quota" in checks
    code, _, err = run("health", "--from", stuck, "--select", "no-such-thing")
    assert code == 2 and "no-such-thing" in err


def test_namespace_scope() -> None:
    code, out, _ = run("health", "--from", str(SCENARIOS / "stuck-preemption-target"), "-n", "team-speech",
                       "-o", "json")
    doc = json.loads(out)
    assert doc["namespaces"] == ["team-speech"]
    assert [q["name"] for q in doc["clusterQueues"]] == ["speech-a100"]
    assert [h["name"] for h in doc["heads"]] == ["job-whisper-v3-ft-de-76f96"]
    assert not any(i["object"].get("namespace") == "ml-sweeps" for i in doc["items"])


def test_markdown_and_terminal() -> None:
    code, out, _ = run("health", "--from", str(SCENARIOS / "fragmentation-no-tas"), "-o", "markdown")
    assert code == 1
    assert "## kueuediag health: 1 problem(s), 1 at or above high" in out
    assert "| high | fragmentation | `ResourceFlavor/h100` |" in out
    _, out, _ = run("health", "--from", str(SCENARIOS / "healthy"), "--no-color")
    assert "healthy: nothing in trouble" in out
    assert "✓ Flavors — healthy: 2 flavor(s) checked" in out  # a healthy section is one line
    assert "nominal" not in out


def test_jsonl_lines_are_why_documents() -> None:
    code, out, _ = run("health", "--from", str(SCENARIOS / "slow-preemption"), "--all-pending", "-o", "jsonl")
    lines = [json.loads(x) for x in out.splitlines()]
    snap = load_snapshot(str(SCENARIOS / "slow-preemption"))
    from kueuediag.analysis.queue_order import is_pending
    from kueuediag.snapshot.kueue import workloads

    pending = {(w.namespace, w.name) for w in workloads(snap) if is_pending(w)}
    assert {(d["workload"]["namespace"], d["workload"]["name"]) for d in lines} == pending
    for doc in lines:
        jsonschema.validate(doc, WHY_SCHEMA)
    first = lines[0]
    _, why_out, _ = run("why", f"workload/{first['workload']['name']}", "-n", first["workload"]["namespace"],
                        "--from", str(SCENARIOS / "slow-preemption"), "-o", "json")
    alone = json.loads(why_out)
    for doc in (first, alone):
        for c in doc["checks"]:
            c.pop("durationMs")
    assert first == alone


def test_all_pending_on_the_benchmark_snapshot(bench_dir: Path) -> None:
    """bench/generate_large.py --scale small: every pending workload is diagnosed, one `why` document each."""
    from kueuediag.analysis.queue_order import is_pending
    from kueuediag.snapshot.kueue import workloads

    out = bench_dir
    code, text, err = run("health", "--from", str(out), "--all-pending", "-o", "jsonl", "--exit-zero")
    assert code == 0, err
    docs = [json.loads(x) for x in text.splitlines()]
    snap = load_snapshot(str(out))
    pending = {(w.namespace, w.name) for w in workloads(snap) if is_pending(w)}
    assert len(pending) >= 10
    assert {(d["workload"]["namespace"], d["workload"]["name"]) for d in docs} == pending
    assert len(docs) == len(pending)
    assert all(d["schema"] == "kueuediag/why/v1" and d["verdict"]["cause"] for d in docs)
    # every check ran to an honest outcome for every workload: none broke on the benchmark's shapes
    errored = [(d["workload"]["name"], c["code"], c["reason"]) for d in docs for c in d["checks"]
               if c["outcome"] == "errored"]
    assert errored == []


@pytest.mark.parametrize("fixture", ["guarantee-churn", "kueue-record", "queue-problems"])
def test_queue_tree_violation_column_is_kd101s_ruling(fixture: str) -> None:
    """The recomputation flags waits that fit unused nominal quota; KD101 rules them out (a record too recent
    to be stale, a record that explains the wait). The tree and its gauge show KD101's ruling, not the raw
    recomputation: no ClusterQueue is "guarantee violated" where `why` on its workloads says it is not."""
    from kueuediag.analysis.guarantees import guarantee_violations
    from kueuediag.render.health_openmetrics import render_health_openmetrics

    snap = load_snapshot(str(ROOT / "fixtures" / "snapshots" / fixture))
    raw = guarantee_violations(snap)
    assert raw, "the fixture must have waits the recomputation flags"
    report = build_report(snap, discover(), Settings())
    rows = {q.name: q for q in report.queues}
    items = {i.ref.name: i for i in report.items if i.check == "guarantee-violation"}
    for v in raw:
        verdict = diagnose(snap, resolve(snap, f"workload/{v.workload.name}", v.workload.namespace), discover(),
                           Settings(), verify_fixes=False)
        kd101 = [r.finding for r in verdict.findings if r.finding.cause == "guarantee-violation"
                 and r.finding.about_target]
        assert kd101 == [], f"{v.workload.name}: KD101 confirms it; pick a fixture where it rules the wait out"
        row = rows[v.cluster_queue]
        assert row.violation_seconds is None and row.violating_workloads == 0, row
        item = items[v.cluster_queue]
        assert item.finding is None and "KD101 rules it out" in item.note, item.note
    text = render_health_openmetrics(report)
    for cq in {v.cluster_queue for v in raw}:
        assert f'kueuediag_cluster_queue_guarantee_violation_seconds{{cluster_queue="{cq}"}} 0' in text


def test_queue_tree_violation_column_agrees_with_kd101_when_it_fires() -> None:
    snap = load_snapshot(str(SCENARIOS / "guarantee-violation"))
    report = build_report(snap, discover(), Settings())
    bio = next(q for q in report.queues if q.name == "bio-a100")
    item = next(i for i in report.items if i.check == "guarantee-violation" and i.ref.name == "bio-a100")
    assert item.finding is not None and item.finding.code == "KD101"
    minutes = item.finding.data["violation_minutes"]
    assert bio.violation_seconds is not None and abs(bio.violation_seconds / 60 - minutes) < 0.1
    assert bio.violating_workloads >= 1


@pytest.mark.parametrize("encoding", ["utf-8", "UTF_8", "latin-1", "ascii"])
def test_jsonl_line_written_as_the_stream_can_carry_it(encoding: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `-o jsonl` line orjson wrote is valid UTF-8 and goes to a UTF-8 stream as it is, non-ASCII text
    included; a line holding a lone surrogate (which orjson refuses, so json wrote it) or characters a narrow
    stream lacks is re-escaped to ASCII. Either way the line reads back as the `why -o json` document."""
    import io
    import sys

    from kueuediag.cli.health_cmd import jsonl_line
    from kueuediag.models import replaced
    from kueuediag.render.json_out import verdict_dict

    snap = load_snapshot(str(SCENARIOS / "slow-preemption"))
    from kueuediag.snapshot.kueue import workloads

    w = workloads(snap)[0]
    verdict = diagnose(snap, resolve(snap, f"workload/{w.name}", w.namespace), discover(), Settings())
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BytesIO(), encoding=encoding))
    for headline, kept_as_is in (("waits — behind 3 \u2192 here", encoding.lower().startswith("utf")),
                                 ("bad \ud800 surrogate", False), ("plain ascii", True)):
        v = replaced(verdict, headline=headline)
        data = jsonl_line(v)
        line = data.decode(encoding)  # the stream can carry it: these are the bytes it is given
        assert line.endswith("\n") and "\n" not in line[:-1]
        assert (not line.isascii()) == (kept_as_is and not headline.isascii())
        doc = json.loads(line)
        assert doc["verdict"]["headline"] == headline
        assert doc == json.loads(json.dumps(verdict_dict(v), default=str))


def test_jsonl_bytes_follow_the_text_already_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """`-o jsonl` writes its encoded lines to stdout's byte buffer: text printed before them through the text layer
    comes first, and a stream without a byte buffer gets the same text."""
    import io
    import sys

    from kueuediag.cli.health_cmd import write_stdout_bytes

    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="utf-8")
    monkeypatch.setattr(sys, "stdout", stream)
    stream.write("before ")
    write_stdout_bytes('{"a":"—"}\n'.encode())
    stream.write("after\n")
    stream.flush()
    assert raw.getvalue().decode() == 'before {"a":"—"}\nafter\n'
    text = io.StringIO()
    monkeypatch.setattr(sys, "stdout", text)
    write_stdout_bytes('{"a":"—"}\n'.encode())
    assert text.getvalue() == '{"a":"—"}\n'
