"""The version table (kueuediag/data/versions.yaml): every row is checked on both sides of its boundary."""

from __future__ import annotations

import pytest

from kueuediag.analysis.versions import (
    behaviour,
    gate_default,
    gate_introduced,
    gate_stage,
    has_behaviour,
    parse_version,
    table,
)

# (row, version, has the new behaviour) — written by hand from kueue-facts, not derived from the table
CASES: list[tuple[str, str, bool]] = [
    ("rf-tolerations-in-assignment", "v0.9.3", False),
    ("rf-tolerations-in-assignment", "v0.10.0", True),
    ("pod-group-terminating-release", "v0.13.4", False),
    ("pod-group-terminating-release", "v0.13.5", True),
    ("pod-group-terminating-release", "v0.12.9", False),
    ("pod-group-terminating-release", "v0.12.10", True),
    ("pod-group-terminating-release", "v0.14.0", True),
    ("fast-quota-release-gate", "v0.16.9", False),
    ("fast-quota-release-gate", "v0.17.0", True),
    ("drs-reclamation-floor", "v0.13.2", False),
    ("drs-reclamation-floor", "v0.13.3", True),
    ("drs-reclamation-floor", "v0.12.7", False),
    ("drs-reclamation-floor", "v0.12.8", True),
    ("drs-precise", "v0.13.4", False),
    ("drs-precise", "v0.13.5", True),
    ("drs-precise", "v0.14.0-rc.1", False),
    ("drs-precise", "v0.14.0", True),
    ("max-capacity-message-multi-podset", "v0.14.3", False),
    ("max-capacity-message-multi-podset", "v0.15.0", True),
    ("wait-for-pods-ready-default-on", "v0.18.6", False),
    ("wait-for-pods-ready-default-on", "v0.19.0", True),
    ("tas-on-by-default", "v0.13.10", False),
    ("tas-on-by-default", "v0.14.0", True),
    ("tas-exclusion-summary", "v0.16.2", False),
    ("tas-exclusion-summary", "v0.17.0", True),
    ("v1beta2-api", "v0.14.9", False),
    ("v1beta2-api", "v0.15.0", True),
    ("preemptor-path-in-message", "v0.14.2", False),
    ("preemptor-path-in-message", "v0.15.0", True),
    # known upstream bugs (kueuediag/data/known_issues.yaml): the release of the KD902 fixture, and its fix
    ("tas-preemption-without-tas-cache-fix", "v0.15.0", False),
    ("tas-preemption-without-tas-cache-fix", "v0.15.1", True),
    ("tas-slice-annotation-not-ungated-fix", "v0.17.0", False),
    ("tas-slice-annotation-not-ungated-fix", "v0.17.1", True),
    ("lws-pods-gated-after-upgrade-fix", "v0.18.4", False),
    ("lws-pods-gated-after-upgrade-fix", "v0.18.6", True),
    ("backoff-limit-per-index-holds-quota-fix", "v0.18.3", False),
    ("backoff-limit-per-index-holds-quota-fix", "v0.18.5", True),
    ("rayjob-validation-failed-holds-quota-fix", "v0.19.0", False),
    ("rayjob-validation-failed-holds-quota-fix", "v0.19.1", True),
    ("finish-orphaned-marks-new-finished-fix", "v0.17.2", False),
    ("finish-orphaned-marks-new-finished-fix", "v0.17.3", True),
    ("workload-priority-class-change-ignored-fix", "v0.15.2", False),
    ("workload-priority-class-change-ignored-fix", "v0.15.3", True),
    ("node-selector-other-flavor-label-fix", "v0.18.1", False),
    ("node-selector-other-flavor-label-fix", "v0.18.2", True),
    ("flavor-taint-edit-not-retried-fix", "v0.18.4", False),
    ("flavor-taint-edit-not-retried-fix", "v0.18.5", True),
    ("tas-flavor-taint-edit-not-retried-fix", "v0.19.0", False),
    ("tas-flavor-taint-edit-not-retried-fix", "v0.19.1", True),
    ("flavor-labels-edit-not-retried-fix", "v0.18.2", False),
    ("flavor-labels-edit-not-retried-fix", "v0.18.5", True),
    ("tas-required-node-affinity-ignored-fix", "v0.14.2", False),
    ("tas-required-node-affinity-ignored-fix", "v0.14.5", True),
    ("tas-cordoned-nodes-counted-fix", "v0.10.1", False),
    ("tas-cordoned-nodes-counted-fix", "v0.10.2", True),
    ("tas-multi-podset-conflict-fix", "v0.10.0", False),
    ("tas-multi-podset-conflict-fix", "v0.10.1", True),
    ("preemption-race-head-of-line-fix", "v0.17.2", False),
    ("preemption-race-head-of-line-fix", "v0.17.4", True),
    ("afs-gate-without-config-crash-fix", "v0.13.2", False),
    ("afs-gate-without-config-crash-fix", "v0.13.4", True),
    ("afs-usage-truncated-to-zero-fix", "v0.18.4", False),
    ("afs-usage-truncated-to-zero-fix", "v0.18.5", True),
    ("localqueue-status-too-many-flavors-fix", "v0.17.4", False),
    ("localqueue-status-too-many-flavors-fix", "v0.17.5", True),
    ("tas-hostname-equals-top-level-fix", "v0.19.0", False),
    ("tas-hostname-equals-top-level-fix", "v0.19.1", True),
    ("tas-zero-count-podset-crash-fix", "v0.13.2", False),
    ("tas-zero-count-podset-crash-fix", "v0.13.3", True),
    ("tas-zero-request-panic-fix", "v0.11.2", False),
    ("tas-zero-request-panic-fix", "v0.11.4", True),
    ("terminating-clusterqueue-status-stale-fix", "v0.18.2", False),
    ("terminating-clusterqueue-status-stale-fix", "v0.18.5", True),
    ("queue-name-set-after-creation-fix", "v0.12.1", False),
    ("queue-name-set-after-creation-fix", "v0.12.3", True),
    ("hierarchical-cohort-classical-preemption-fix", "v0.11.3", False),
    ("hierarchical-cohort-classical-preemption-fix", "v0.12.0", True),
    ("tas-node-heartbeat-starvation-fix", "v0.13.1", False),
    ("tas-node-heartbeat-starvation-fix", "v0.13.3", True),
    ("zero-weight-cohort-preempts-nominal-fix", "v0.11.1", False),
    ("zero-weight-cohort-preempts-nominal-fix", "v0.11.4", True),
    ("preemption-over-borrowing-stuck-fix", "v0.18.3", False),
    ("preemption-over-borrowing-stuck-fix", "v0.18.5", True),
    ("flavor-fungibility-preference", "v0.14.8", False),
    ("flavor-fungibility-preference", "v0.15.0", True),
]


@pytest.mark.parametrize("row,version,expected", CASES, ids=[f"{r}@{v}" for r, v, _ in CASES])
def test_behaviour_boundary(row: str, version: str, expected: bool) -> None:
    assert has_behaviour(version, row) is expected


def test_every_row_is_tested_on_both_sides() -> None:
    sides = {(r, e) for r, _, e in CASES}
    for row in table().behaviours:
        assert (row, True) in sides and (row, False) in sides, row


def test_unknown_version_is_unknown_not_false() -> None:
    assert has_behaviour(None, "drs-precise") is None
    assert has_behaviour("latest", "drs-precise") is None
    with pytest.raises(KeyError):
        has_behaviour("v0.19.0", "no-such-row")


def test_upgrade_target_prefers_the_own_release_line() -> None:
    row = behaviour("pod-group-terminating-release")
    assert row.first == "v0.14.0"
    assert row.upgrade_to("v0.13.2") == "v0.13.5"
    assert row.upgrade_to("v0.11.4") == "v0.14.0"
    assert row.upgrade_to(None) == "v0.14.0"


@pytest.mark.parametrize("gate,version,default", [
    ("TopologyAwareScheduling", "v0.9.0", False), ("TopologyAwareScheduling", "v0.13.6", False),
    ("TopologyAwareScheduling", "v0.14.0", True), ("TopologyAwareScheduling", "v0.8.0", None),
    ("AdmissionFairSharing", "v0.14.2", False), ("AdmissionFairSharing", "v0.15.0", True),
    ("LocalQueueMetrics", "v0.16.0", False), ("LocalQueueMetrics", "v0.17.3", True),
    ("FastQuotaReleaseInPodIntegration", "v0.16.2", None), ("FastQuotaReleaseInPodIntegration", "v0.19.2", False),
    ("UnadmittedWorkloadsObservability", "v0.19.0", False),
    ("MultiplePreemptions", "v0.13.1", True), ("MultiplePreemptions", "v0.14.0", None),  # removed in v0.14
    ("VisibilityOnDemand", "v0.9.0", True), ("PartialAdmission", "v0.9.0", True),
    ("NoSuchGate", "v0.19.0", None),
])
def test_gate_defaults_per_release(gate: str, version: str, default: bool | None) -> None:
    assert gate_default(gate, version) is default


def test_every_gate_stage_boundary() -> None:
    """For every stage change in the table: the release line before still has the old default."""
    for gate, stages in table().gates.items():
        for prev, stage in zip((None, *stages[:-1]), stages, strict=True):
            at = parse_version(f"v{stage.since.major}.{stage.since.minor}.0")
            assert at is not None
            expected_at = None if stage.stage == "removed" else stage.default
            assert gate_default(gate, at) is expected_at, (gate, str(at))
            if stage.since.minor == 0:
                continue
            before = parse_version(f"v{stage.since.major}.{stage.since.minor - 1}.99")
            expected_before = None if prev is None or prev.stage == "removed" else prev.default
            assert gate_default(gate, before) is expected_before, (gate, str(before))


def test_gate_metadata() -> None:
    assert gate_introduced("FastQuotaReleaseInPodIntegration") == "v0.17.0"
    assert gate_introduced("NoSuchGate") is None
    stage = gate_stage("HierarchicalCohorts", "v0.17.0")
    assert stage is not None and stage.stage == "ga" and stage.default is True
