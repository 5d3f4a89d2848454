"""Guarantee-violation analysis (kueuediag.analysis.guarantees) and KD101's thresholds."""

from __future__ import annotations

import copy
import dataclasses
from decimal import Decimal
from pathlib import Path
from typing import Any

from kueuediag_checks.guarantee_violation import GuaranteeViolation

from kueuediag.analysis.guarantees import (
    ViolationSet,
    guarantee_violations,
    nominal_fit,
    quota_table,
    violation_for,
)
from kueuediag.analysis.quota_fit import workload_fit
from kueuediag.models import Severity
from kueuediag.snapshot.kueue import finished_view, workload
from kueuediag.snapshot.model import Snapshot
from kueuediag.snapshot.reader import RawSnapshot, read_snapshot
from kueuediag.target import resolve
from kueuediag.testing import findings_of


def _load(fixtures_dir: Path, name: str, edit: Any = None) -> Snapshot:
    raw = read_snapshot(fixtures_dir / "snapshots" / name)
    if edit is not None:
        objects = copy.deepcopy(raw.objects)
        edit(objects)
        raw = RawSnapshot(source=raw.source, manifest=raw.manifest, objects=objects, metrics=raw.metrics,
                          logs=raw.logs)
    return Snapshot(raw)


def test_lent_quota_still_counts_as_unused_nominal(fixtures_dir: Path) -> None:
    # team-a: nominal 1024 GPUs, 1016 reserved; the 8 unused GPUs are borrowed by team-b/team-c, so Kueue's
    # available() is 0 and quota.py's fits_in_nominal is False — yet the guarantee is violated.
    snap = _load(fixtures_dir, "fair-sharing-rounding-bug")
    w = workload(snap, "team-a", "job-llm-pretrain-70b-1bfef")
    assert w is not None
    fit = workload_fit(snap, w)
    assert fit is not None and not fit.fits_in_nominal
    nf = nominal_fit(snap, w)
    assert nf is not None and nf.fits and nf.flavors == ["h100-sxm"]
    assert nf.requests()[("h100-sxm", "nvidia.com/gpu")] == Decimal(8)
    gpu = next(r for r in quota_table(snap, "team-a") if r.resource == "nvidia.com/gpu")
    assert (gpu.nominal, gpu.reserved, gpu.unused, gpu.lent, gpu.pending) == (1024, 1016, 8, 8, 8)


def test_untolerated_flavor_taint_means_no_fit(fixtures_dir: Path) -> None:
    def drop_tolerations(objects: list[dict[str, Any]]) -> None:
        for o in objects:
            if o["kind"] == "Workload" and o["metadata"]["name"].startswith("job-train-shard-6-"):
                for ps in o["spec"]["podSets"]:
                    ps["template"]["spec"].pop("tolerations", None)

    snap = _load(fixtures_dir, "guarantee-violation", drop_tolerations)
    w = workload(snap, "research", "job-train-shard-6-9ab02")
    assert w is not None
    nf = nominal_fit(snap, w)
    assert nf is not None and not nf.fits
    assert "no flavor it may use" in nf.shortfall
    assert violation_for(snap, w) is None
    # the other three pending shards still violate
    assert sorted(v.workload.name[:17] for v in guarantee_violations(snap)) == [
        "job-train-shard-4", "job-train-shard-5", "job-train-shard-7"]


def test_release_after_pending_dates_the_violation(fixtures_dir: Path) -> None:
    snap = _load(fixtures_dir, "guarantee-churn")
    w = workload(snap, "research", "job-train-shard-5-b7748")
    assert w is not None
    v = violation_for(snap, w)
    assert v is not None and v.pending_since is not None and v.since is not None
    assert v.since > v.pending_since
    assert v.released_by is not None and v.released_by.name == "job-eval-sweep-0-d4676"
    assert v.seconds == 153.0


def test_full_queue_has_no_violation(fixtures_dir: Path) -> None:
    snap = _load(fixtures_dir, "guarantee-clear")
    assert guarantee_violations(snap) == []
    pending = [x for x in quota_table(snap, "research") if x.resource == "nvidia.com/gpu"][0]
    assert (pending.reserved, pending.unused, pending.pending) == (8, 0, 4)


def test_thresholds_are_options(fixtures_dir: Path) -> None:
    snap = _load(fixtures_dir, "guarantee-churn")
    target = resolve(snap, "job/train-shard-5", "research")
    # quota freed 2m33s ago: within the default 5m requeue time Kueue's record is not stale yet
    assert findings_of(GuaranteeViolation().run(snap, target)) == []
    strict = findings_of(GuaranteeViolation({"churn_minutes": 1, "violation_minutes": 2}).run(snap, target))
    assert [f.severity for f in strict] == [Severity.HIGH]
    medium = findings_of(GuaranteeViolation({"churn_minutes": "1", "violation_minutes": "10"}).run(snap, target))
    assert [f.severity for f in medium] == [Severity.MEDIUM]
    assert medium[0].data["quota_table"][2] == {
        "flavor": "h100", "resource": "nvidia.com/gpu", "nominal": "8", "reserved": "4", "borrowed": "0",
        "lent": "0", "unused": "4", "pending": "4"}


def test_other_violations_match_the_list_without_the_target(fixtures_dir: Path) -> None:
    # KD101 asks, per target, about every *other* violation; the memoised set must answer exactly what
    # filtering the cluster's list would (count, the longest few, and the count per ClusterQueue in order of
    # each queue's longest violation) — including when the left-out one was its ClusterQueue's longest.
    snap = _load(fixtures_dir, "guarantee-violation")
    real = guarantee_violations(snap)[0]
    items = [dataclasses.replace(real, cluster_queue=cq) for cq in ("a", "b", "a", "c", "b", "a")]
    whole = ViolationSet.of(items)
    stranger = dataclasses.replace(real, cluster_queue="z")
    for mine in [*items, None, stranger]:
        naive = [v for v in items if v is not mine]
        naive_by_cq: dict[str, int] = {}
        for v in naive:
            naive_by_cq[v.cluster_queue] = naive_by_cq.get(v.cluster_queue, 0) + 1
        others = whole.without(mine)
        assert len(others) == len(naive)
        assert all(a is b for a, b in zip(others.top(3), naive[:3], strict=True))
        assert all(a is b for a, b in zip(others.top(10), naive, strict=True))
        assert list(others.by_cluster_queue().items()) == list(naive_by_cq.items())
    assert ViolationSet.of([real]).without(real).by_cluster_queue() == {}
    assert not ViolationSet.of([real]).without(real)


def test_the_release_that_dated_a_violation_is_named_even_when_the_rest_of_it_is_malformed(
        fixtures_dir: Path) -> None:
    """The Finished Workload whose release dated the violation is named from its record (its admission and
    Finished time, which read fine): junk elsewhere in it only leaves its Finished condition out of KD101's
    evidence, and the violation, its start and the record reading stay the same."""

    def junk(objects: list[Any]) -> None:
        for o in objects:
            o = o.obj() if hasattr(o, "obj") else o
            if o.get("kind") == "Workload" and o["metadata"]["name"] == "job-eval-sweep-0-d4676":
                o["spec"]["podSets"] = "not a list"

    clean, broken = _load(fixtures_dir, "guarantee-churn"), _load(fixtures_dir, "guarantee-churn", junk)
    views = []
    for snap in (clean, broken):
        w = workload(snap, "research", "job-train-shard-5-b7748")
        assert w is not None
        v = violation_for(snap, w)
        assert v is not None and v.released_by is not None and v.released_by.name == "job-eval-sweep-0-d4676"
        views.append(v)
    assert (views[0].since, views[0].since_source, views[0].seconds) == \
        (views[1].since, views[1].since_source, views[1].seconds)
    assert views[0].released_by is not None and views[1].released_by is not None
    assert finished_view(clean, views[0].released_by) is not None
    assert finished_view(broken, views[1].released_by) is None  # malformed: it has no view, and blinds nothing
    results = [GuaranteeViolation().run(snap, resolve(snap, "workload/job-train-shard-5-b7748", "research"))
               for snap in (clean, broken)]
    assert results[0].outcome == results[1].outcome
    # the record reading names the release in both (a fresh record here: capacity changed 2m33s before capture)
    observed = [[e.observed for e in r.evidence] for r in results]
    assert observed[0] == observed[1]
    assert "Workload research/job-eval-sweep-0-d4676 finished at 2026-11-20T09:57:27Z" in observed[1][0]
