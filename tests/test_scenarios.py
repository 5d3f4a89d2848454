"""End-to-end: the whole tool on each seed-incident scenario (fixtures/scenarios/<name>/, see their README.md).

Every scenario runs the full engine — all discovered checks, default Settings, the target resolved like the CLI
does — and must produce the verdict the issue specifies: the primary cause and its layer, the key evidence
(numbers and object references, not counts), and the recipe steps that are ruled out as CLEAR runs.

The bundled demo snapshots (kueuediag/data/examples/*.tar.gz, packed from these folders) are checked the same
way through their index.json.
"""

from __future__ import annotations

import json
import re
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cache
from pathlib import Path

import pytest
import yaml

from kueuediag.config import Settings
from kueuediag.engine import diagnose
from kueuediag.models import Contribution, Finding, Layer, Outcome, Verdict
from kueuediag.registry import builtin
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.target import resolve

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "fixtures" / "scenarios"
EXAMPLES = ROOT / "kueuediag" / "data" / "examples"


@cache
def verdict_for(path: str, target: str, namespace: str) -> Verdict:
    snap = load_snapshot(path)
    t = resolve(snap, target, namespace)
    return diagnose(snap, t, builtin(), Settings())


def contributions(v: Verdict, code: str) -> list[Contribution]:
    """What check `code` contributed to causes other checks own."""
    return [c for r in v.runs if r.code == code for c in r.contributions]


def text_of(f: Finding | Contribution) -> str:
    """Everything a reader sees of a finding: title, message, evidence, remediation."""
    parts = [f.title, f.message]
    parts += [f"{e.field or ''} {e.observed} {e.expected or ''}" for e in f.evidence]
    parts += list(f.remediation)
    return "\n".join(parts)


def refs_of(f: Finding) -> set[str]:
    out = set()
    for e in f.evidence:
        if e.ref is not None:
            out.add(f"{e.ref.kind}/{e.ref.name}")
            if e.ref.namespace:
                out.add(f"{e.ref.kind}/{e.ref.namespace}/{e.ref.name}")
    return out


def findings(v: Verdict, cause: str | None = None, code: str | None = None) -> list[Finding]:
    """Findings of `cause` that check `code` emitted or contributed evidence to (one finding per cause)."""
    return [
        r.finding
        for r in v.findings
        if (cause is None or r.finding.cause == cause)
        and (code is None or r.finding.code == code or code in r.finding.contributors)
    ]


def run_of(v: Verdict, code: str) -> Outcome:
    runs = [r for r in v.runs if r.code == code]
    assert runs, f"check {code} did not run at all (is it registered?); ran: {sorted(r.code for r in v.runs)}"
    return runs[0].outcome


def describe(v: Verdict) -> str:
    lines = [f"verdict {v.cause} ({v.layer.value}): {v.headline}"]
    lines += [
        f"  #{r.rank} {r.finding.code} {r.finding.cause} [{r.finding.severity.label}]: {r.finding.title}"
        for r in v.findings
    ]
    lines += [f"  run {r.code} {r.outcome.value} {r.reason[:160]}" for r in v.runs]
    return "\n".join(lines)


@dataclass(frozen=True)
class Scenario:
    name: str
    target: str
    namespace: str
    cause: str
    layer: Layer
    clear: tuple[str, ...]
    """recipe steps (check codes) that must be ruled out (with evidence)"""
    fired: dict[str, str] = field(default_factory=dict)
    """check code → cause it must report (the recipe evidence besides the primary)"""
    evidence: Callable[[Verdict], None] | None = None
    not_applicable: tuple[str, ...] = ()
    """recipe steps that do not arise for this target (with the reason)"""
    symptom_only: tuple[str, ...] = ()
    """steps that may restate the guarantee violation (e.g. "no admission in the ClusterQueue while it waits")
    but must not name any other cause: no trickle, no cross-ClusterQueue stall, no root cause"""

    @property
    def path(self) -> str:
        return str(SCENARIOS / self.name)


# --- key evidence per scenario -----------------------------------------------------------------------------------


def slow_preemption_evidence(v: Verdict) -> None:
    top = v.findings[0].finding
    # the 900 s grace period (and preStop hook) of the victims is the explanation
    assert re.search(r"\b900 ?s\b|15m|15 min", text_of(top)), text_of(top)
    assert "Workload/team-research/research-dpo-sweep-07" in refs_of(top) or "research-dpo-sweep-07" in text_of(top)
    assert "FastQuotaReleaseInPodIntegration" in "\n".join(top.remediation), top.remediation
    # step 3: admissions trickle at the grace interval (one every 15 minutes) in nlp-h100
    rate = contributions(v, "KD301")
    assert rate, "KD301 found no trickle"
    assert findings(v, rate[0].cause, code="KD301"), "KD301's evidence is not folded into the owner's finding"
    assert rate[0].cause == "slow-preemption", rate[0]
    assert "nlp-h100" in text_of(rate[0]) and re.search(r"every 1[45]m", rate[0].title), rate[0].title
    assert "900" in text_of(rate[0]), "the trickle is not matched against the victims' 900 s grace period"
    # step 1: it fits in unused nominal quota, but Kueue's record says it is preempting to make room: the record
    # is not stale, so this is not a guarantee violation (KD101 rules it out, quoting the record)
    assert not findings(v, cause="guarantee-violation")
    assert "Kueue is preempting to make room" in record_reading(v), record_reading(v)
    assert "Pending the preemption of 1 workload(s)" in record_reading(v)


def stuck_target_evidence(v: Verdict) -> None:
    top = v.findings[0].finding
    txt = text_of(top)
    assert "sweep-lr-0917-g4-1" in txt, "the zombie pod is not named"
    assert "sweep-lr-0917-g4" in txt and (
        "3 ClusterQueue" in txt or all(cq in txt for cq in ("nlp-a100", "vision-a100", "speech-a100"))
    ), txt
    # step 5: the log signature repeated for the same heads over hours
    logs = findings(v, code="KD501")
    assert any(
        "overlapping preemption targets" in text_of(f).lower() and f.cause == "stuck-preemption-target" for f in logs
    ), [f.title for f in logs]
    # step 6: the zombie on a NotReady node
    zombies = findings(v, cause="zombie-pods")
    assert zombies and "Pod/ml-sweeps/sweep-lr-0917-g4-1" in refs_of(zombies[0]), zombies
    assert "NotReady" in text_of(zombies[0])
    # step 3: admissions stalled across ClusterQueues
    rate = contributions(v, "KD301")
    assert rate and rate[0].cause == "stuck-preemption-target", rate
    # one finding per cause: KD302 owns it, the rate stall is part of its evidence
    [stuck] = findings(v, "stuck-preemption-target")
    assert stuck.code == "KD302" and {"KD301", "KD901"} <= set(stuck.contributors), stuck.contributors
    assert all(e in stuck.evidence for e in rate[0].evidence)
    assert "ClusterQueues stalled" in rate[0].title or "across ClusterQueues" in rate[0].message, rate[0].title
    # version-aware remediation: fixed in v0.13.5 / v0.14.0
    assert re.search(r"v0\.1(3\.5|4\.0)", "\n".join(text_of(f) for f in findings(v, code="KD902"))), (
        "known-issues does not name the fixed Kueue version"
    )


def fair_sharing_evidence(v: Verdict) -> None:
    top = v.findings[0].finding
    assert top.code == "KD103", top
    assert "eval-burst" in top.title and "v0.13.2" in text_of(top), top.title
    reported = [
        e
        for e in top.evidence
        if e.ref is not None and e.ref.name == "eval-burst" and "weightedShare" in (e.field or "")
    ]
    assert reported and re.search(r"weightedShare 0\b", reported[0].observed), top.evidence
    node = next(n for n in top.data["nodes"] if n["name"] == "eval-burst")
    assert int(node["reported"]) == 0 and Decimal(str(node["precise_share"])) > 0, node
    assert Decimal(str(node["precise_share"])) == Decimal("0.625"), node
    # the log line of upstream issue #6577, and fair sharing enabled near the onset
    logs = findings(v, code="KD501")
    assert any("no candidate" in text_of(f).lower() for f in logs), [f.title for f in logs]
    changes = findings(v, cause="config-change")
    assert changes and "ConfigMap/kueue-system/kueue-manager-config" in refs_of(changes[0]), changes


def fragmentation_evidence(v: Verdict) -> None:
    top = v.findings[0].finding
    assert top.code in ("KD201", "KD401"), top
    frag = findings(v, code="KD201")
    assert frag and frag[0].cause == "fragmentation", frag
    f = frag[0]
    holes = sorted(int(x) for x in str(f.data["layout"]).split("+"))
    assert holes == [1, 1, 2, 4], f.data  # the 1+1+4+2 case
    assert str(f.data["largest_hole"]) == "4" and int(f.data["slots"]) == 0, f.data
    assert "largest hole 4" in f.title, f.title
    # step 4: released to Kubernetes; the scheduler's FailedScheduling names 4 nodes short of GPUs
    rel = findings(v, code="KD401")
    assert rel and rel[0].cause == "fragmentation", rel
    assert "4 Insufficient nvidia.com/gpu" in text_of(rel[0]), text_of(rel[0])


def tas_evidence(v: Verdict) -> None:
    top = v.findings[0].finding
    assert top.code == "KD201", top
    assert 'topology "gke-default"' in top.title and "largest hole 4" in top.title, top.title
    assert 'resource "nvidia.com/gpu": 4' in text_of(top) or "excluded" in text_of(top), text_of(top)
    # Kueue's record names the topology, not quota: KD101 rules the guarantee violation out with that record
    assert not findings(v, cause="guarantee-violation")
    assert "Kueue records a reason that is not quota" in record_reading(v), record_reading(v)
    assert "topology-no-fit" in record_reading(v)


def record_reading(v: Verdict) -> str:
    """What KD101 observed when it ruled the guarantee violation out (its ruled-out evidence)."""
    run = next(r for r in v.runs if r.code == "KD101")
    assert run.outcome is Outcome.RULED_OUT, run
    return " | ".join(e.observed for e in run.evidence)


def guarantee_evidence(v: Verdict) -> None:
    top = v.findings[0].finding
    assert top.code == "KD101", top
    assert top.severity.label == "high", "over 30 minutes is a violation on-call should act on"
    assert "4 nvidia.com/gpu" in top.title and "12 unused" in top.title and "bio-a100" in top.title, top.title
    minutes = re.search(r"pending for (?:(\d+)h)?(\d+)m", top.title)
    assert minutes, top.title
    assert int(minutes.group(1) or 0) * 60 + int(minutes.group(2)) >= 30, top.title
    assert "ClusterQueue/bio-a100" in refs_of(top)
    # the record is stale: a workload of bio-a100 finished after Kueue wrote "insufficient unused quota"
    assert "Kueue's record is stale" in top.message, top.message
    assert top.data["record"]["verdict"] == "stale" and "finished at" in top.data["record"]["change"], top.data
    # nothing else explains it: every other finding about the target only restates the violation
    others = [r.finding for r in v.findings[1:] if r.finding.about_target and r.finding.cause != "guarantee-violation"]
    assert not others, [f"{f.code} {f.cause}: {f.title}" for f in others]


def healthy_evidence(v: Verdict) -> None:
    top = v.findings[0].finding
    assert top.code == "KD002" and "bio-a100" in top.title, top
    assert len(v.findings) == 1, [f"{r.finding.code} {r.finding.cause}: {r.finding.title}" for r in v.findings]
    not_clear = [
        f"{r.code} {r.outcome.value} {r.reason}" for r in v.runs
        if r.code != "KD002" and r.outcome not in (Outcome.RULED_OUT, Outcome.NOT_APPLICABLE)
    ]
    assert not not_clear, f"everything should be ruled out or not applicable: {not_clear}"


SUBMISSION = ("KD001", "KD003", "KD004", "KD005", "KD006")  # the former KD001 queue-configuration

ALL_RECIPE = (
    "KD001",
    "KD003",
    "KD004",
    "KD005",
    "KD006",
    "KD101",
    "KD102",
    "KD103",
    "KD201",
    "KD301",
    "KD302",
    "KD401",
    "KD501",
    "KD601",
    "KD701",
    "KD901",
    "KD902",
)

CASES = [
    Scenario(
        "slow-preemption",
        "pod/nlp-sft-llama70b-r8",
        "team-nlp",
        "slow-preemption",
        Layer.KUEUE,
        clear=(*SUBMISSION, "KD101", "KD201", "KD701", "KD901"),
        not_applicable=("KD103", "KD401"),
        fired={"KD301": "slow-preemption", "KD302": "slow-preemption"},
        evidence=slow_preemption_evidence,
    ),
    Scenario(
        "stuck-preemption-target",
        "job/vit-h14-finetune-e3",
        "team-vision",
        "stuck-preemption-target",
        Layer.KUEUE,
        clear=(*SUBMISSION, "KD101", "KD201", "KD701"),
        not_applicable=("KD103", "KD401"),
        fired={
            "KD301": "stuck-preemption-target",
            "KD302": "stuck-preemption-target",
            "KD902": "known-issue",
        },
        evidence=stuck_target_evidence,
    ),
    Scenario(
        "fair-sharing-anomaly",
        "job/rlhf-ppo-70b-r3",
        "team-alignment",
        "fair-sharing-anomaly",
        Layer.KUEUE,
        clear=(*SUBMISSION, "KD201", "KD302", "KD701"),
        not_applicable=("KD401",),
        symptom_only=("KD301",),
        fired={"KD101": "model-disagreement", "KD103": "fair-sharing-anomaly", "KD902": "known-issue"},
        evidence=fair_sharing_evidence,
    ),
    Scenario(
        "fragmentation-no-tas",
        "job/llama3-8b-sft-8g-r12",
        "team-research",
        "fragmentation",
        Layer.KUBERNETES,
        clear=("KD006", "KD501", "KD901", "KD902"),
        not_applicable=("KD001", "KD003", "KD004", "KD005", "KD101", "KD102", "KD103", "KD301", "KD302", "KD701"),
        fired={"KD201": "fragmentation", "KD401": "fragmentation", "KD002": "not-pending"},
        evidence=fragmentation_evidence,
    ),
    Scenario(
        "fragmentation-tas",
        "job/llama3-8b-sft-8g-r12",
        "team-research",
        "topology-no-fit",
        Layer.KUEUE,
        clear=(*SUBMISSION, "KD101", "KD102", "KD302", "KD701", "KD901", "KD902"),
        not_applicable=("KD103", "KD401"),
        symptom_only=("KD301",),
        fired={"KD201": "topology-no-fit"},
        evidence=tas_evidence,
    ),
    Scenario(
        "guarantee-violation",
        "job/af3-inference-batch-12",
        "team-bio",
        "guarantee-violation",
        Layer.KUEUE,
        clear=(*SUBMISSION, "KD102", "KD201", "KD302", "KD601", "KD701", "KD901", "KD902"),
        not_applicable=("KD103", "KD401"),
        symptom_only=("KD301",),
        fired={"KD101": "guarantee-violation"},
        evidence=guarantee_evidence,
    ),
    Scenario(
        "healthy",
        "job/esm-finetune-r4",
        "team-bio",
        "not-pending",
        Layer.NONE,
        clear=("KD006", "KD401", "KD501", "KD901", "KD902"),
        not_applicable=tuple(c for c in ALL_RECIPE if c not in ("KD006", "KD401", "KD501", "KD901", "KD902")),
        fired={"KD002": "not-pending"},
        evidence=healthy_evidence,
    ),
]
IDS = [c.name for c in CASES]


@pytest.mark.parametrize("sc", CASES, ids=IDS)
def test_verdict_cause_and_layer(sc: Scenario) -> None:
    v = verdict_for(sc.path, sc.target, sc.namespace)
    assert (v.cause, v.layer) == (sc.cause, sc.layer), describe(v)
    assert v.findings and v.findings[0].finding.about_target, describe(v)


@pytest.mark.parametrize("sc", CASES, ids=IDS)
def test_no_check_errors(sc: Scenario) -> None:
    v = verdict_for(sc.path, sc.target, sc.namespace)
    errored = [f"{r.code}: {r.reason}" for r in v.runs if r.outcome is Outcome.ERRORED]
    assert not errored, errored


@pytest.mark.parametrize("sc", CASES, ids=IDS)
def test_ruled_out_steps_are_clear(sc: Scenario) -> None:
    v = verdict_for(sc.path, sc.target, sc.namespace)
    wrong = [
        f"{code}: {run_of(v, code).value} — "
        + "; ".join(f"{f.cause}: {f.title}" for r in v.runs if r.code == code for f in r.findings)
        + next((r.reason for r in v.runs if r.code == code), "")
        for code in sc.clear
        if run_of(v, code) is not Outcome.RULED_OUT
    ]
    assert not wrong, "recipe steps that should be ruled out are not:\n" + "\n".join(wrong)
    runs = {r.code: r for r in v.runs}
    assert all(runs[code].evidence for code in sc.clear), "a ruled-out step carries no evidence"
    wrong = [f"{code}: {runs[code].outcome.value} {runs[code].reason}" for code in sc.not_applicable
             if runs[code].outcome is not Outcome.NOT_APPLICABLE or not runs[code].reason]
    assert not wrong, "steps that should be not applicable (with a reason) are not:\n" + "\n".join(wrong)


@pytest.mark.parametrize("sc", [c for c in CASES if c.symptom_only], ids=[c.name for c in CASES if c.symptom_only])
def test_symptom_only_steps_name_no_other_cause(sc: Scenario) -> None:
    v = verdict_for(sc.path, sc.target, sc.namespace)
    wrong = [
        f"{f.code} {f.cause}: {f.title}"
        for code in sc.symptom_only
        for f in findings(v, code=code)
        if f.cause != "guarantee-violation"
    ]
    assert not wrong, wrong


@pytest.mark.parametrize("sc", CASES, ids=IDS)
def test_recipe_steps_report_their_cause(sc: Scenario) -> None:
    v = verdict_for(sc.path, sc.target, sc.namespace)
    missing = []
    for code, cause in sc.fired.items():
        got = findings(v, code=code)
        if not any(f.cause == cause for f in got):
            missing.append(
                f"{code} should report {cause}; got {[(f.cause, f.title) for f in got]} ({run_of(v, code).value})"
            )
    assert not missing, "\n".join(missing)


@pytest.mark.parametrize("sc", CASES, ids=IDS)
def test_key_evidence(sc: Scenario) -> None:
    assert sc.evidence is not None
    v = verdict_for(sc.path, sc.target, sc.namespace)
    assert v.cause == sc.cause, describe(v)
    sc.evidence(v)


def test_every_scenario_has_a_readme_and_manifest() -> None:
    for sc in CASES:
        root = SCENARIOS / sc.name
        readme = (root / "README.md").read_text()
        assert sc.target in readme and sc.cause in readme, sc.name
        manifest = json.loads((root / "manifest.json").read_text())
        assert manifest["format"] == "kueuediag-snapshot/v1" and manifest["kueueVersion"].startswith("v0.")
        assert list((root / "metrics").glob("*.om")) and list((root / "logs").glob("*.log")), sc.name
        assert (root / "metrics" / "kueue.om").read_text().endswith("# EOF\n")


def test_scenario_metrics_are_minutely_hours_long() -> None:
    """Metrics span hours at a 60 s step with timestamps in seconds (not milliseconds)."""
    for sc in CASES:
        stamps = sorted(
            {
                int(line.rsplit(" ", 1)[1])
                for line in (SCENARIOS / sc.name / "metrics" / "kueue.om").read_text().splitlines()
                if line.startswith("kueue_admitted_workloads_total{")
            }
        )
        assert stamps[0] > 1_600_000_000 and stamps[-1] < 2_000_000_000, f"{sc.name}: timestamps not in seconds"
        assert stamps[-1] - stamps[0] >= 3 * 3600, f"{sc.name}: metrics span less than 3 hours"
        assert {b - a for a, b in zip(stamps, stamps[1:], strict=False)} <= {60, 120}, sc.name


def test_logs_are_zap_json() -> None:
    for sc in CASES:
        for line in (SCENARIOS / sc.name / "logs" / "kueue-controller-manager.log").read_text().splitlines():
            entry = json.loads(line)
            assert {"level", "ts", "caller", "msg"} <= set(entry), (sc.name, line)
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z", entry["ts"]), (sc.name, entry["ts"])


# --- bundled demo snapshots ------------------------------------------------------------------------------------


def _index() -> list[dict[str, str]]:
    path = EXAMPLES / "index.json"
    return json.loads(path.read_text()) if path.is_file() else []


def test_examples_bundle_the_required_scenarios() -> None:
    names = {e["name"] for e in _index()}
    assert {"slow-preemption", "fragmentation-no-tas", "healthy", "guarantee-violation"} <= names, names
    for e in _index():
        assert set(e) >= {"name", "title", "target", "namespace", "expected_cause"}, e
        tarball = EXAMPLES / f"{e['name']}.tar.gz"
        assert tarball.is_file() and tarball.stat().st_size < 300 * 1024, tarball


@pytest.mark.parametrize("example", _index(), ids=[e["name"] for e in _index()])
def test_example_tarball_gives_its_expected_cause(example: dict[str, str]) -> None:
    v = verdict_for(str(EXAMPLES / f"{example['name']}.tar.gz"), example["target"], example["namespace"])
    assert v.cause == example["expected_cause"], describe(v)


def _objects_in(rel: str, data: bytes) -> list[dict[str, object]]:
    """The objects of one object file, Lists unwrapped (JSON or multi-document YAML)."""
    docs = [json.loads(data)] if rel.endswith(".json") else list(yaml.load_all(data, Loader=yaml.CSafeLoader))
    return [item for d in docs if d is not None for item in (d["items"] if d["kind"].endswith("List") else [d])]


@pytest.mark.parametrize("example", _index(), ids=[e["name"] for e in _index()])
def test_example_tarball_holds_its_scenario_as_kubectl_json(example: dict[str, str]) -> None:
    """Each bundled example is its scenario folder with the object files in kubectl's JSON layout (they read
    several times faster than YAML, which a small `why --from example:NAME` spent most of its time on): the
    same objects in the same order, every other file byte for byte."""
    folder = SCENARIOS / example["name"]
    scenario = {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
    with tarfile.open(EXAMPLES / f"{example['name']}.tar.gz") as tf:
        packed = {m.name.split("/", 1)[1]: tf.extractfile(m).read()  # type: ignore[union-attr]
                  for m in tf.getmembers() if m.isfile()}
    assert [r for r in packed if r.startswith("objects/") and not r.endswith(".json")] == []
    yaml_files = [r for r in scenario if r.startswith("objects/") and r.endswith(".yaml")]
    assert yaml_files, "the scenario has no YAML object file to convert"
    for rel, data in scenario.items():
        json_rel = rel.rsplit(".", 1)[0] + ".json" if rel in yaml_files else rel
        assert json_rel in packed, (example["name"], rel)
        if rel.startswith("objects/"):
            assert _objects_in(json_rel, packed[json_rel]) == _objects_in(rel, data), (example["name"], rel)
        else:
            assert packed[rel] == data, (example["name"], rel)
    assert len(packed) == len(scenario)


def test_committed_scenarios_match_the_generator(tmp_path: Path) -> None:
    """fixtures/scenarios/generate.py is deterministic and the committed files are what it writes."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("scenario_generate", SCENARIOS / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(SCENARIOS))
    try:
        spec.loader.exec_module(module)
        assert module.main(["--out", str(tmp_path)]) == 0
    finally:
        sys.path.remove(str(SCENARIOS))
    for sc in CASES:
        fresh = {
            p.relative_to(tmp_path / sc.name).as_posix(): p for p in (tmp_path / sc.name).rglob("*") if p.is_file()
        }
        committed = {
            p.relative_to(SCENARIOS / sc.name).as_posix(): p for p in (SCENARIOS / sc.name).rglob("*") if p.is_file()
        }
        assert sorted(fresh) == sorted(committed), sc.name
        stale = [rel for rel, p in fresh.items() if p.read_bytes() != committed[rel].read_bytes()]
        assert not stale, f"{sc.name}: regenerate with `python fixtures/scenarios/generate.py --examples`: {stale}"


def _version(v: str) -> tuple[int, int, int]:
    major, minor, patch = v.lstrip("v").split(".")[:3]
    return int(major), int(minor), int(patch.split("-")[0])


@pytest.mark.parametrize("sc", CASES, ids=IDS)
def test_scenario_is_consistent_with_its_kueue_version(sc: Scenario) -> None:
    """API versions, metric labels, build info and controller image all match the manifest's Kueue version."""
    snap = load_snapshot(sc.path)
    version = snap.manifest.kueue_version
    assert version is not None
    kueue_apis = {
        o["apiVersion"] for k in snap.kinds() for o in snap.of_kind(k) if o["apiVersion"].startswith("kueue.x-k8s.io/")
    }
    if _version(version) < (0, 15, 0):
        assert kueue_apis == {"kueue.x-k8s.io/v1beta1"}, f"v1beta2 did not exist before v0.15: {kueue_apis}"
    else:
        assert "kueue.x-k8s.io/v1beta2" in kueue_apis, kueue_apis
    om = (SCENARIOS / sc.name / "metrics" / "kueue.om").read_text()
    assert f'git_version="{version}"' in om, "kueue_build_info does not match the manifest"
    has_role = 'replica_role="' in om
    assert has_role == (_version(version) >= (0, 16, 0)), "replica_role exists on Kueue metrics since v0.16.0"
    images = {
        c["image"]
        for p in snap.of_kind("Pod")
        if p["metadata"].get("namespace") == "kueue-system"
        for c in p["spec"]["containers"]
    }
    assert images == {f"registry.k8s.io/kueue/kueue:{version}"}, images


# --- other teams' workloads in the same snapshots get their own, different verdicts ------------------------------

BYSTANDERS = [
    # a preempted borrower of research-h100, back in the queue above its nominal quota: it waits for quota; the
    # serialized-preemption bug slows the *preemptor*, not it, and the violation belongs to nlp-h100
    ("slow-preemption", "pod/research-dpo-sweep-08-0", "team-research", "waiting-for-quota", Layer.KUEUE),
    # the head that issued the preemption of the zombie's group
    ("stuck-preemption-target", "job/t5-xxl-sft-bs512", "team-nlp", "stuck-preemption-target", Layer.KUEUE),
    # the borrower itself is admitted and running
    ("fair-sharing-anomaly", "job/mmlu-pro-sweep-01", "team-eval", "not-pending", Layer.NONE),
    ("fragmentation-no-tas", "job/llama3-70b-sft-tulu3", "team-nlp", "not-pending", Layer.NONE),
    ("guarantee-violation", "job/af3-inference-batch-10", "team-bio", "not-pending", Layer.NONE),
]


@pytest.mark.parametrize(
    ("name", "target", "namespace", "cause", "layer"), BYSTANDERS, ids=[f"{b[0]}:{b[1]}" for b in BYSTANDERS]
)
def test_bystander_verdicts(name: str, target: str, namespace: str, cause: str, layer: Layer) -> None:
    v = verdict_for(str(SCENARIOS / name), target, namespace)
    assert (v.cause, v.layer) == (cause, layer), describe(v)
    if not any(r.finding.cause == "guarantee-violation" and r.finding.about_target for r in v.findings):
        assert "explains the guarantee violation" not in v.headline, v.headline


def test_stall_is_found_after_a_regular_admission_period() -> None:
    """The stuck-preemption-target story with perfectly regular admissions (one every 23 min) before the zombie
    appeared: admission-rate must still report the 4-hour stall across ClusterQueues afterwards."""
    from kueuediag.snapshot.model import Snapshot
    from kueuediag.snapshot.reader import read_snapshot

    raw = read_snapshot(str(SCENARIOS / "stuck-preemption-target"))
    capture = 1757992200  # 2025-09-16T03:10:00Z
    start, stop = capture - 6 * 3600, capture - (4 * 3600 + 11 * 60) - 360
    ticks = list(range(start + 300, stop, 23 * 60))
    out = []
    for line in raw.metrics["metrics/kueue.om"].splitlines():
        m = re.match(
            r'(kueue_(?:admitted|quota_reserved)_workloads_total\{cluster_queue="vision-a100".*\}) (\d+) (\d+)$', line
        )
        if m:
            t = int(m.group(3))
            line = f"{m.group(1)} {412 + sum(1 for k in ticks if k <= t)} {t}"
        out.append(line)
    raw.metrics["metrics/kueue.om"] = "\n".join(out) + "\n"
    snap = Snapshot(raw)
    v = diagnose(snap, resolve(snap, "job/vit-h14-finetune-e3", "team-vision"), builtin(), Settings())
    rate = findings(v, code="KD301")
    assert rate and rate[0].cause == "stuck-preemption-target", describe(v)
