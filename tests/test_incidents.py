"""Real incidents: the whole engine on snapshots rebuilt from public issue threads (fixtures/incidents/<slug>/).

Each folder's README cites the thread, the cause the thread established and the Kueue version. The test asserts
the verdict's cause and layer and the key evidence (the objects and numbers the thread turned on).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from kueuediag.config import Settings
from kueuediag.engine import diagnose
from kueuediag.models import Finding, Verdict
from kueuediag.registry import discover
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.target import resolve

INCIDENTS = Path(__file__).resolve().parent.parent / "fixtures" / "incidents"


@dataclass(frozen=True)
class Expect:
    slug: str
    target: str
    namespace: str
    cause: str
    layer: str
    evidence: tuple[str, ...]
    """substrings of the top finding's title, message or evidence"""
    refs: tuple[str, ...] = ()
    """KIND/NAME the top finding's evidence names"""
    also: tuple[str, ...] = ()
    """other causes that must be among the findings (contributing)"""
    xfail: str = ""


CASES = [
    Expect("headlamp-1191-missing-flavors", "job/sample-job", "team-a", "clusterqueue-inactive", "submission",
           ("default", "spot"), ("ClusterQueue/team-a",)),
    Expect("djinn-2841-no-namespace-selector", "job/build-7f3k", "djinn-builds", "namespace-not-selected",
           "submission", ("no namespaceSelector",), ("ClusterQueue/djinn-builds",)),
    Expect("djinn-2841-ephemeral-storage-not-covered", "job/build-9q2w", "djinn-builds", "resource-not-covered",
           "submission", ("ephemeral-storage",), ("ClusterQueue/djinn-builds",)),
    Expect("xpk-603-cpu-memory-not-covered", "job/tpu-train", "default", "resource-not-covered", "submission",
           ("cpu", "memory"), ("ClusterQueue/cluster-queue",)),
    Expect("kueue-3909-same-priority-full-queue", "workload/pytorchjob-llm-sft-5b6c7", "ai", "waiting-for-quota",
           "kueue", ("nvidia.com/gpu",), also=("known-issue",)),
    Expect("kueue-7929-no-localqueue", "pod/pod-debug", "test", "localqueue-missing", "submission",
           ("queueName",)),
    Expect("kueue-10824-tas-second-flavor-no-fit", "workload/job-train-hi-3a4b5", "ml", "topology-no-fit", "kueue",
           ("gpu-topology", "fits 0 of 2 pod(s)")),
    Expect("kueue-5129-dws-provisioning-failed", "job/train-dws", "default", "admission-check-retry", "kueue",
           ("dws-prov", "Max nodepool size reached", "evicted"), ("AdmissionCheck/dws-prov",)),
    Expect("kueue-9482-foreign-scheduling-gate", "pod/kueue-sleep-qw5hb", "kueue-test", "foreign-scheduling-gate",
           "kubernetes", ("test",)),
    Expect("kueue-3158-untolerated-flavor-taint", "job/myjob", "issue-3158", "no-matching-flavor", "submission",
           ("untolerated taint", "taint_key"), ("ResourceFlavor/node-type",)),
    Expect("kueue-5039-tas-level-label-missing", "job/tas-sample", "default", "topology-no-fit", "kueue",
           ("no topology domains at level: hpc_island_id", "5 of 5 node(s) of flavor tas-e5-flex lack label "
            "hpc_island_id"), ("Topology/oci-topology", "ResourceFlavor/tas-e5-flex")),
    Expect("kueue-3948-hierarchical-cohort-no-reclaim", "job/guaranteed", "guaranteed", "known-issue", "kueue",
           ("#3948", "Cohort guaranteed owns 100m", "best-effort", "reclaimWithinCohort Any"),
           ("Cohort/guaranteed", "ClusterQueue/best-effort"), also=("waiting-for-quota",)),
    Expect("kueue-13607-preemption-over-borrowing", "job/repro-starved", "repro", "known-issue", "kueue",
           ("PreemptionOverBorrowing", "fixed in v0.18.5", "no candidate workloads"),
           ("ClusterQueue/repro-target",)),
    Expect("kueue-12949-borrow-needs-flavor-in-cq", "job/road-train-4", "road", "waiting-for-quota", "kueue",
           ("base-flavor-1", "0 borrowable", "road/job-road-train-0-7b8c0 (8)"),
           ("ClusterQueue/base-queue", "Workload/job-road-train-0-7b8c0")),
    Expect("kueue-14811-podsready-eviction-keeps-quota", "job/eval-sweep-17", "research", "waiting-for-quota",
           "kueue", ("ml-prod/jobset-llm-pretrain-4d5e6 of prod (32", "Evicted (PodsReadyTimeout)",
                     "its JobSet suspended with no running pods, but it still holds its quota reservation"),
           ("Workload/jobset-llm-pretrain-4d5e6",)),
    Expect("kueue-13374-default-queue-in-unmanaged-namespace", "job/nightly-report", "analytics", "not-managed",
           "submission", ("outside managedJobsNamespaceSelector", "kueue.x-k8s.io/queue-name=default and "
                          "spec.suspend=true", "kueue#13374"), ("LocalQueue/default", "Job/nightly-report")),
    Expect("kueue-3721-flavor-tolerations-ignored", "job/sample-job", "default", "no-matching-flavor", "submission",
           ("untolerated taint key=value:NoExecute", "spec.tolerations of default-flavor tolerate its nodeTaints",
            "since v0.10.0"), ("ResourceFlavor/default-flavor",)),
]


@cache
def verdict(slug: str, target: str, namespace: str) -> Verdict:
    snap = load_snapshot(str(INCIDENTS / slug))
    return diagnose(snap, resolve(snap, target, namespace), discover(), Settings())


def _text(f: Finding) -> str:
    return "\n".join([f.title, f.message, *(f"{e.field or ''} {e.observed}" for e in f.evidence)])


def _refs(f: Finding) -> set[str]:
    return {f"{e.ref.kind}/{e.ref.name}" for e in f.evidence if e.ref is not None}


@pytest.mark.parametrize("case", [pytest.param(c, id=c.slug, marks=[pytest.mark.xfail(reason=c.xfail, strict=True)]
                                               if c.xfail else []) for c in CASES])
def test_incident_verdict(case: Expect) -> None:
    v = verdict(case.slug, case.target, case.namespace)
    summary = [(r.finding.code, r.finding.cause, r.finding.title[:100]) for r in v.findings]
    assert v.cause == case.cause, summary
    assert v.layer.value == case.layer
    top = v.findings[0].finding
    for s in case.evidence:
        assert s in _text(top), f"{s!r} not in the top finding: {_text(top)[:500]}"
    for ref in case.refs:
        assert ref in _refs(top), f"{ref} not in {sorted(_refs(top))}"
    causes = {r.finding.cause for r in v.findings}
    for other in case.also:
        assert other in causes, summary


def test_every_incident_has_a_readme_citing_its_thread_and_a_case() -> None:
    folders = sorted(p.name for p in INCIDENTS.iterdir() if p.is_dir())  # README.md: the index
    assert folders == sorted(c.slug for c in CASES)
    for name in folders:
        readme = (INCIDENTS / name / "README.md").read_text()
        assert "https://github.com/" in readme and "Kueue version: v" in readme and "Established cause:" in readme


def test_stopped_reservation_advice_comes_first() -> None:
    """The quota a recovery-evicted JobSet still reserves is the first thing to act on, not a wait."""
    v = verdict("kueue-14811-podsready-eviction-keeps-quota", "job/eval-sweep-17", "research")
    first = v.findings[0].finding.remediation[0]
    assert first.startswith("Workload ml-prod/jobset-llm-pretrain-4d5e6") and "deactivate it" in first

