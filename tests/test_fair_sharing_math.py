"""The DRS / weightedShare arithmetic of kueuediag.analysis.fair_sharing against kueue-facts §4 and §4.1."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest

from kueuediag.analysis.fair_sharing import (
    MAX_INT64,
    FairShareTree,
    QuotaAmounts,
    ShareRounding,
    fair_sharing_config,
    fair_sharing_tree,
    kueue_amount,
    share_rounding,
)
from kueuediag.analysis.installation import kueue_version
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.snapshot.model import Snapshot
from kueuediag.snapshot.reader import RawSnapshot

GPU = ("h100", "nvidia.com/gpu")
CPU = ("default", "cpu")


def two_queue_cohort(nominal_a: int, reserved_a: int, nominal_b: int, weight_a: str = "1",
                     fr: tuple[str, str] = CPU) -> FairShareTree:
    tree = FairShareTree()
    tree.add_cohort("root")
    tree.add_cluster_queue("a", "root", {fr: QuotaAmounts(nominal_a)}, {fr: reserved_a}, weight=Decimal(weight_a))
    tree.add_cluster_queue("b", "root", {fr: QuotaAmounts(nominal_b)}, {fr: 0})
    return tree.finalize()


def test_worked_example_from_kueue_facts() -> None:
    # CQ nominal cpu 10, reserved 14, parent cohort lendable 40 → borrowed 4 → 4×1000/40 = 100.
    tree = two_queue_cohort(10_000, 14_000, 30_000)  # Kueue amounts: millicores
    drs = tree.drs("ClusterQueue", "a")
    assert drs.borrowing
    assert drs.borrowed == {"cpu": 4_000}
    assert drs.lendable == {"cpu": 40_000}
    assert drs.ratio == Fraction(100)
    assert drs.dominant_resource == "cpu"
    assert drs.status_value() == 100
    assert drs.explain() == "borrows 4 cpu of 40 lendable → 100‰"


def test_worked_example_weight_two_halves_the_share() -> None:
    drs = two_queue_cohort(10_000, 14_000, 30_000, weight_a="2").drs("ClusterQueue", "a")
    assert drs.weighted_share == Fraction(50)
    assert drs.status_value(ShareRounding.PRECISE) == 50
    assert drs.status_value(ShareRounding.INTEGER) == 50  # exact division: old and new agree


def test_rounding_bug_huge_lendable_tiny_borrow() -> None:
    # 1 GPU borrowed out of 10,000 lendable: 0.1 per mille. Precise (>= v0.13.5/v0.14.0) ceil → 1;
    # integer arithmetic of <= v0.13.2 truncates to 0 (issue #6577); #6617 (v0.13.3) clamps to 1.
    drs = two_queue_cohort(5_000, 5_001, 5_000, fr=GPU).drs("ClusterQueue", "a")
    assert drs.borrowing
    assert drs.lendable == {"nvidia.com/gpu": 10_000}
    assert drs.ratio == Fraction(1, 10)
    assert drs.status_value(ShareRounding.PRECISE) == 1
    assert drs.status_value(ShareRounding.INTEGER) == 0
    assert drs.status_value(ShareRounding.INTEGER_MIN1) == 1
    assert drs.legacy_ratio == 0


def test_high_weight_truncates_in_integer_arithmetic() -> None:
    # borrowed 3 of 1000 → ratio 3; weight 2: precise 1.5 → ceil 2, integer 3*1000/2000 = 1.
    drs = two_queue_cohort(500, 503, 500, weight_a="2", fr=GPU).drs("ClusterQueue", "a")
    assert drs.ratio == Fraction(3)
    assert drs.status_value(ShareRounding.PRECISE) == 2
    assert drs.status_value(ShareRounding.INTEGER) == 1
    # weight 1000: precise 0.003 → 1; integer 3*1000/1000000 = 0
    heavy = two_queue_cohort(500, 503, 500, weight_a="1000", fr=GPU).drs("ClusterQueue", "a")
    assert heavy.status_value(ShareRounding.PRECISE) == 1
    assert heavy.status_value(ShareRounding.INTEGER) == 0


def test_zero_weight_while_borrowing_is_max_int64_and_zero_otherwise() -> None:
    borrowing = two_queue_cohort(10, 11, 10, weight_a="0", fr=GPU).drs("ClusterQueue", "a")
    assert borrowing.weighted_share is None
    assert borrowing.status_value() == MAX_INT64
    assert borrowing.status_value(ShareRounding.INTEGER) == MAX_INT64
    idle = two_queue_cohort(10, 9, 10, weight_a="0", fr=GPU).drs("ClusterQueue", "a")
    assert not idle.borrowing
    assert idle.status_value() == 0


def test_no_parent_means_share_zero_even_above_nominal() -> None:
    tree = FairShareTree()
    tree.add_cluster_queue("solo", None, {GPU: QuotaAmounts(4)}, {GPU: 9})
    drs = tree.finalize().drs("ClusterQueue", "solo")
    assert not drs.has_parent and not drs.borrowing
    assert drs.status_value() == 0


def test_borrowed_is_summed_across_flavors_and_max_over_resources() -> None:
    tree = FairShareTree()
    tree.add_cohort("root")
    quotas = {("a100", "nvidia.com/gpu"): QuotaAmounts(4), ("h100", "nvidia.com/gpu"): QuotaAmounts(4),
              ("h100", "cpu"): QuotaAmounts(64_000)}
    tree.add_cluster_queue("a", "root", quotas,
                           {("a100", "nvidia.com/gpu"): 5, ("h100", "nvidia.com/gpu"): 6, ("h100", "cpu"): 70_000})
    tree.add_cluster_queue("b", "root", {("a100", "nvidia.com/gpu"): QuotaAmounts(16),
                                         ("h100", "nvidia.com/gpu"): QuotaAmounts(16),
                                         ("h100", "cpu"): QuotaAmounts(256_000)}, {})
    drs = tree.finalize().drs("ClusterQueue", "a")
    assert drs.borrowed == {"nvidia.com/gpu": 3, "cpu": 6_000}
    assert drs.lendable == {"nvidia.com/gpu": 40, "cpu": 320_000}
    # gpu: 3000/40 = 75; cpu: 6000000/320000 = 18.75 → GPU dominates
    assert drs.dominant_resource == "nvidia.com/gpu"
    assert drs.status_value() == 75


def test_ties_pick_the_alphabetically_first_resource() -> None:
    tree = FairShareTree()
    tree.add_cohort("root")
    tree.add_cluster_queue("a", "root", {("f", "cpu"): QuotaAmounts(10), ("f", "memory"): QuotaAmounts(10)},
                           {("f", "cpu"): 11, ("f", "memory"): 11})
    tree.add_cluster_queue("b", "root", {("f", "cpu"): QuotaAmounts(10), ("f", "memory"): QuotaAmounts(10)}, {})
    assert tree.finalize().drs("ClusterQueue", "a").dominant_resource == "cpu"


def test_lending_limit_caps_what_a_child_contributes() -> None:
    # b lends at most 10 of its 30: root SubtreeQuota = 10 (a) + 10 (b's lendable part) = 20.
    tree = FairShareTree()
    tree.add_cohort("root")
    tree.add_cluster_queue("a", "root", {GPU: QuotaAmounts(10)}, {GPU: 14})
    tree.add_cluster_queue("b", "root", {GPU: QuotaAmounts(30, lending_limit=10)}, {GPU: 25})
    tree.finalize()
    b = tree.nodes[("ClusterQueue", "b")]
    assert b.local_quota(GPU) == 20
    root = tree.nodes[("Cohort", "root")]
    assert root.subtree_quota[GPU] == 20
    # cohort usage: a's 14 + b's usage above its local quota (25 − 20 = 5)
    assert root.usage[GPU] == 19
    drs = tree.drs("ClusterQueue", "a")
    assert drs.lendable == {"nvidia.com/gpu": 20}
    assert drs.status_value() == 200  # 4 × 1000 / 20
    assert not tree.drs("ClusterQueue", "b").borrowing  # 25 <= 30


def test_hierarchical_lendable_walks_up_with_borrowing_limit() -> None:
    # root ─ org (borrowingLimit 5 GPUs) ─ team-x, team-y ; root also holds other-org.
    tree = FairShareTree()
    tree.add_cohort("root")
    tree.add_cohort("org", "root", {GPU: QuotaAmounts(0, borrowing_limit=5)})
    tree.add_cluster_queue("team-x", "org", {GPU: QuotaAmounts(8)}, {GPU: 12})
    tree.add_cluster_queue("team-y", "org", {GPU: QuotaAmounts(8)}, {GPU: 2})
    tree.add_cluster_queue("other", "root", {GPU: QuotaAmounts(100)}, {GPU: 10})
    tree.finalize()
    org = tree.nodes[("Cohort", "org")]
    assert org.subtree_quota[GPU] == 16
    # potentialAvailable(org) = min(SubtreeQuota 16 + borrowingLimit 5, 0 + potentialAvailable(root) 116) = 21
    assert tree.potential_available(org, GPU) == 21
    x = tree.drs("ClusterQueue", "team-x")
    assert x.lendable == {"nvidia.com/gpu": 21}
    assert x.status_value() == 191  # ceil(4000 / 21) = ceil(190.47)
    # the org cohort itself: usage 14 <= 16 → not borrowing
    assert not tree.drs("Cohort", "org").borrowing


def test_borrowing_only_unlendable_resources_has_ratio_zero() -> None:
    tree = FairShareTree()
    tree.add_cohort("root")
    tree.add_cluster_queue("a", "root", {("f", "example.com/fpga"): QuotaAmounts(0)}, {("f", "example.com/fpga"): 1})
    drs = tree.finalize().drs("ClusterQueue", "a")
    assert drs.borrowing and drs.ratio == 0 and drs.dominant_resource is None
    assert drs.status_value() == 0
    assert drs.legacy_ratio == -1  # Kueue <= v0.13.2 left drs at its -1 start value


def test_cohort_cycle_does_not_crash_and_has_no_share() -> None:
    tree = FairShareTree()
    tree.add_cohort("x", "y")
    tree.add_cohort("y", "x")
    tree.add_cluster_queue("a", "x", {GPU: QuotaAmounts(1)}, {GPU: 5})
    tree.finalize()
    assert tree.nodes[("Cohort", "x")].in_cycle
    assert tree.drs("ClusterQueue", "a").status_value() == 0


@pytest.mark.parametrize("resource,quantity,amount", [
    ("cpu", "500m", 500), ("cpu", "2", 2000), ("memory", "1Gi", 1024**3), ("nvidia.com/gpu", "3", 3),
    ("memory", "1.5", 2),
])
def test_kueue_amounts(resource: str, quantity: str, amount: int) -> None:
    from kueuediag.quantity import parse_quantity

    assert kueue_amount(resource, parse_quantity(quantity)) == amount


@pytest.mark.parametrize("version,mode", [
    ("v0.12.7", ShareRounding.INTEGER), ("v0.12.8", ShareRounding.INTEGER_MIN1),
    ("v0.13.0", ShareRounding.INTEGER), ("v0.13.2", ShareRounding.INTEGER),
    ("v0.13.3", ShareRounding.INTEGER_MIN1), ("v0.13.4", ShareRounding.INTEGER_MIN1),
    ("v0.13.5", ShareRounding.PRECISE), ("v0.14.0", ShareRounding.PRECISE), ("v0.19.2", ShareRounding.PRECISE),
    (None, ShareRounding.UNKNOWN), ("latest", ShareRounding.UNKNOWN),
])
def test_share_rounding_by_release(version: str | None, mode: ShareRounding) -> None:
    assert share_rounding(version) is mode


# --- from snapshots ---------------------------------------------------------------------------------------


def _snap(objects: list[dict[str, Any]], manifest: dict[str, Any] | None = None,
          metrics: dict[str, str] | None = None) -> Snapshot:
    raw = RawSnapshot(source="test", manifest=manifest or {"capturedAt": "2026-11-24T03:40:00Z"},
                      objects=objects, metrics=metrics or {})
    return Snapshot(raw)


def _config_map(text: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
            "data": {"controller_manager_config.yaml": text}}


def test_fair_sharing_config_v1beta2_present_means_enabled() -> None:
    cfg = fair_sharing_config(_snap([_config_map(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nfairSharing:\n"
        "  preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]\n")]))
    assert cfg.enabled is True
    assert cfg.preemption_strategies == ("LessThanOrEqualToFinalShare", "LessThanInitialShare")


def test_fair_sharing_config_v1beta1_enable_false_and_absent() -> None:
    off = fair_sharing_config(_snap([_config_map(
        "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\nfairSharing:\n  enable: false\n")]))
    assert off.enabled is False and "fairSharing.enable: false" in off.source
    none = fair_sharing_config(_snap([_config_map(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n")]))
    assert none.enabled is False
    unknown = fair_sharing_config(_snap([{"apiVersion": "v1", "kind": "Namespace",
                                          "metadata": {"name": "team-a"}}]))
    assert unknown.enabled is None


def test_kueue_version_from_image_then_build_info() -> None:
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment",
              "metadata": {"name": "kueue-controller-manager", "namespace": "kueue-system"},
              "spec": {"template": {"spec": {"containers": [
                  {"name": "manager", "image": "registry.k8s.io/kueue/kueue:v0.13.2"}]}}}}
    v = kueue_version(_snap([deploy]))
    assert v.version == "v0.13.2" and "image registry.k8s.io/kueue/kueue:v0.13.2" in v.source
    om = ('# TYPE kueue_build_info gauge\nkueue_build_info{git_version="v0.12.4",git_commit="abc"} 1\n# EOF\n')
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}
    v2 = kueue_version(_snap([ns], metrics={"metrics/kueue.om": om}))
    assert v2.version == "v0.12.4" and v2.source.startswith("metric kueue_build_info")
    assert kueue_version(_snap([ns])).version is None


def test_fixture_tree_matches_what_kueue_v0_14_reports(fixtures_dir: Any) -> None:
    snap = load_snapshot(str(fixtures_dir / "snapshots" / "fair-sharing-fixed"))
    tree = fair_sharing_tree(snap)
    for key, node in tree.nodes.items():
        assert node.reported is not None
        assert tree.drs(*key).status_value(ShareRounding.PRECISE) == node.reported, key
    assert kueue_version(snap).version == "v0.14.0"


def test_fixture_tree_reproduces_the_v0_13_2_zero(fixtures_dir: Any) -> None:
    snap = load_snapshot(str(fixtures_dir / "snapshots" / "fair-sharing-rounding-bug"))
    tree = fair_sharing_tree(snap)
    team_b = tree.drs("ClusterQueue", "team-b")
    assert team_b.borrowed == {"nvidia.com/gpu": 2}
    assert team_b.lendable == {"nvidia.com/gpu": 2048}
    assert team_b.status_value(ShareRounding.INTEGER) == 0 == tree.nodes[("ClusterQueue", "team-b")].reported
    assert team_b.status_value(ShareRounding.PRECISE) == 1
    team_c = tree.drs("ClusterQueue", "team-c")  # weight 2: 6/2048 → 2.93‰ → integer 2 → /2 = 1
    assert team_c.status_value(ShareRounding.INTEGER) == 1 == tree.nodes[("ClusterQueue", "team-c")].reported


def test_fixture_hierarchical_v1beta2_matches_kueue(fixtures_dir: Any) -> None:
    # company ─ research-org (own 16 GPUs, borrowingLimit 8) ─ nlp (32, lendingLimit 16), vision (32)
    #         └ prod-org ─ serving (64, lendingLimit 8)
    snap = load_snapshot(str(fixtures_dir / "snapshots" / "fair-sharing-hierarchical"))
    tree = fair_sharing_tree(snap)
    research = tree.nodes[("Cohort", "research-org")]
    assert research.subtree_quota[("a3-highgpu", "nvidia.com/gpu")] == 64  # 16 + (32 − 16) + 32
    assert tree.nodes[("Cohort", "company")].subtree_quota[("a3-highgpu", "nvidia.com/gpu")] == 72  # 64 + 8
    nlp = tree.drs("ClusterQueue", "nlp")
    assert nlp.borrowed == {"nvidia.com/gpu": 24}
    assert nlp.lendable == {"nvidia.com/gpu": 72}  # min(0 + 72, 64 + 8)
    assert nlp.status_value() == 334 == tree.nodes[("ClusterQueue", "nlp")].reported
    assert fair_sharing_config(snap).enabled is True
