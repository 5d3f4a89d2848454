"""`concerns_queue` (KD901's "does this queue object's change matter to the target") equals the direct listing.

KD901 used to list, per ClusterQueue, every ClusterQueue and Cohort of its cohort tree by walking the whole
index; it now asks per change. The reference below is that listing, computed directly: for every ClusterQueue of
each snapshot (fixtures with cohort trees, hierarchical cohorts, cycles, and the benchmark generator's tree) and
every queue object the index knows (plus names it does not), the two answers must agree.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kueuediag.analysis.health import concerns_queue
from kueuediag.snapshot.kueue import KueueIndex, kueue_index
from kueuediag.snapshot.loader import load_snapshot

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "snapshots"
TREE_FIXTURES = ["quota-cohort-borrowing", "fair-sharing-hierarchical", "cohort-cycle", "guarantee-churn",
                 "ki-hierarchical-cohort-classical-preemption", "frag-h100", "basic"]


def listed(idx: KueueIndex, cq: str) -> set[tuple[str, str]]:
    """The queue objects of `cq`'s tree, listed by walking every ClusterQueue and Cohort of the index."""
    out = {("ClusterQueue", cq)}
    cohort = idx.cluster_queues[cq].cohort
    root = idx.root_of(cohort) if cohort else None
    if root is not None:
        out |= {("ClusterQueue", q.name) for q in idx.cluster_queues.values()
                if q.cohort and idx.root_of(q.cohort) == root}
        out |= {("Cohort", c.name) for c in idx.cohorts.values() if idx.root_of(c.name) == root}
    out |= {("ResourceFlavor", f) for f in idx.cluster_queues[cq].flavor_names()}
    return out


def candidates(idx: KueueIndex) -> list[tuple[str, str]]:
    names = [("ClusterQueue", q) for q in idx.cluster_queues] + [("Cohort", c) for c in idx.cohorts]
    names += [("ResourceFlavor", f) for f in idx.flavors]
    return names + [("ClusterQueue", "no-such-cq"), ("Cohort", "no-such-cohort"), ("ResourceFlavor", "no-such")]


def assert_agrees(idx: KueueIndex) -> int:
    compared = 0
    for cq in idx.cluster_queues:
        expected = listed(idx, cq)
        for kind, name in candidates(idx):
            assert concerns_queue(idx, cq, kind, name) == ((kind, name) in expected), (cq, kind, name)
            compared += 1
    return compared


@pytest.mark.parametrize("fixture", TREE_FIXTURES)
def test_concerns_queue_equals_the_tree_listing(fixture: str) -> None:
    idx = kueue_index(load_snapshot(FIXTURES / fixture))
    assert idx.cluster_queues
    assert_agrees(idx)


def test_concerns_queue_on_the_benchmark_tree(bench_dir: Path) -> None:
    """The generator's three-level tree (root, divisions, orgs): members of the tree and of other subtrees."""
    idx = kueue_index(load_snapshot(bench_dir))
    assert any(c.parent for c in idx.cohorts.values())  # a tree deeper than one cohort
    assert_agrees(idx)
    cq = sorted(idx.cluster_queues)[0]
    cohort = idx.cluster_queues[cq].cohort
    assert cohort is not None and concerns_queue(idx, cq, "Cohort", cohort)


def test_a_workload_without_a_known_cluster_queue_is_concerned_by_every_change() -> None:
    idx = kueue_index(load_snapshot(FIXTURES / "basic"))
    assert concerns_queue(idx, None, "ClusterQueue", "anything")
    assert concerns_queue(idx, "no-such-cq", "Cohort", "anything")
