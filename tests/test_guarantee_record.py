"""A guarantee violation is a stale Kueue record, never the fallback for "nothing else fired".

KD101 may only report `guarantee-violation` with positive evidence that capacity changed after Kueue wrote its
QuotaReserved=False record (a workload finished, metrics, a quota change) longer ago than Kueue's normal requeue
time. Every fixture in the repository is swept: any guarantee-violation finding it produces must carry that
evidence. The other readings of the record (fresh, explained, disagreement) are pinned on real fixtures.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kueuediag_checks.guarantee_violation import GuaranteeViolation

from kueuediag.analysis.guarantees import guarantee_violations, read_record
from kueuediag.engine import as_result
from kueuediag.models import Outcome
from kueuediag.snapshot.kueue import workloads
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.snapshot.model import Snapshot
from kueuediag.target import resolve

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CHURN_S = float(GuaranteeViolation.options["churn_minutes"]) * 60
SNAPSHOTS = sorted(
    [p for p in (FIXTURES / "snapshots").iterdir() if (p / "manifest.json").is_file()]
    + [p for p in (FIXTURES / "scenarios").iterdir() if (p / "manifest.json").is_file()]
)


def _snap(path: Path) -> Snapshot:
    return load_snapshot(str(path))


@pytest.mark.parametrize("path", SNAPSHOTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_guarantee_violation_in_the_fixtures_has_stale_record_evidence(path: Path) -> None:
    snap = _snap(path)
    pending = [w for w in workloads(snap) if w.state == "pending"]
    for w in pending:
        target = resolve(snap, f"workload/{w.name}", w.namespace)
        result = as_result(GuaranteeViolation().run(snap, target))
        for f in result.findings:
            if f.cause != "guarantee-violation":
                continue
            if f.about_target:
                record = f.data["record"]
                assert record["verdict"] == "stale", (w.name, record)
                assert record["change"] and record["change_at"], record
                assert any(e.observed.startswith("stale record: ") for e in f.evidence), f.evidence
                assert "Kueue's record is stale" in f.message
            else:
                # the cluster-wide finding lists only workloads whose own record is stale
                listed = {e.ref.name for e in f.evidence if e.ref is not None}
                for v in guarantee_violations(snap):
                    if v.workload.name in listed:
                        assert read_record(snap, v, CHURN_S).verdict == "stale", v.workload.name


def _reading(snapshot: str, target: str, namespace: str) -> tuple[str, str]:
    snap = _snap(FIXTURES / snapshot)
    t = resolve(snap, target, namespace)
    assert t.workload is not None
    v = next(v for v in guarantee_violations(snap) if v.workload.name == t.workload.name)
    r = read_record(snap, v, CHURN_S)
    return r.verdict, f"{r.change} {r.explanation} {r.record}"


@pytest.mark.parametrize(
    ("snapshot", "target", "namespace", "verdict", "text"),
    [
        ("scenarios/guarantee-violation", "job/af3-inference-batch-12", "team-bio", "stale",
         "job-af3-inference-batch-09-d9bfb finished at 2026-11-27T21:42:00Z"),
        ("snapshots/guarantee-violation", "job/train-shard-6", "research", "stale",
         "metrics: unused nominal quota covered the request since 2026-11-20T09:20:00Z"),
        ("snapshots/guarantee-churn", "job/train-shard-5", "research", "fresh", "job-eval-sweep-0-d4676 finished"),
        ("scenarios/slow-preemption", "pod/nlp-sft-llama70b-r8", "team-nlp", "explained",
         "Kueue is preempting to make room"),
        ("scenarios/stuck-preemption-target", "job/vit-h14-finetune-e3", "team-vision", "explained",
         "Workload has overlapping preemption targets with another workload"),
        ("scenarios/fragmentation-tas", "job/llama3-8b-sft-8g-r12", "team-research", "explained",
         "(topology-no-fit)"),
        ("scenarios/fair-sharing-anomaly", "job/rlhf-ppo-70b-r3", "team-alignment", "disagree",
         "insufficient unused quota for nvidia.com/gpu in flavor h100, 8 more needed"),
    ],
)
def test_reading_kueues_record(snapshot: str, target: str, namespace: str, verdict: str, text: str) -> None:
    got, detail = _reading(snapshot, target, namespace)
    assert got == verdict, detail
    assert text in detail, detail


def test_fresh_record_is_ruled_out_with_the_change_quoted() -> None:
    snap = _snap(FIXTURES / "snapshots" / "guarantee-churn")
    result = as_result(GuaranteeViolation().run(snap, resolve(snap, "job/train-shard-5", "research")))
    assert result.outcome is Outcome.RULED_OUT
    observed = " | ".join(e.observed for e in result.evidence)
    assert "capacity changed only 2m33s ago" in observed and "normal requeue time (5m)" in observed, observed
