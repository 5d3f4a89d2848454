"""Submission checks (KD001, KD003-KD006) and KD701 building blocks the fixture cases do not pin down: the
manager-config defaults, the flavor selector restriction Kueue applies, selector semantics (null vs {}),
collection gaps and bad input."""

from __future__ import annotations

from typing import Any

import pytest
from kueuediag_checks.admission_checks import AdmissionChecks
from kueuediag_checks.namespace_selection import NamespaceSelection
from kueuediag_checks.queue_existence import QueueExistence
from kueuediag_checks.queue_state import QueueState
from kueuediag_checks.resource_coverage import ResourceCoverage
from kueuediag_checks.workload_activation import WorkloadActivation

from kueuediag.analysis.flavor_match import flavor_exclusion, restricted_selector_matches
from kueuediag.analysis.kueue_config import kueue_config, selector_str
from kueuediag.check import Check
from kueuediag.errors import InputError
from kueuediag.models import Finding
from kueuediag.snapshot.kueue import flavor_view, workload
from kueuediag.snapshot.model import Snapshot
from kueuediag.snapshot.reader import RawSnapshot
from kueuediag.target import Target
from kueuediag.testing import findings_of

SUBMISSION: tuple[type[Check], ...] = (
    WorkloadActivation,
    QueueExistence,
    QueueState,
    NamespaceSelection,
    ResourceCoverage,
)


def _submission_findings(snap: Snapshot, target: Target) -> list[Finding]:
    """What the five submission checks (the former KD001 queue-configuration) say together."""
    return [f for cls in SUBMISSION for f in findings_of(cls().run(snap, target))]


V2 = "kueue.x-k8s.io/v1beta2"
MANIFEST = {"format": "kueuediag-snapshot/v1", "capturedAt": "2026-11-20T10:00:00Z", "errors": []}


def _snap(objs: list[dict[str, Any]], manifest: dict[str, Any] | None = MANIFEST) -> Snapshot:
    return Snapshot(RawSnapshot(source="test", manifest=dict(manifest or {}), objects=objs))


def _config_map(text: str, ns: str = "kueue-system") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "kueue-manager-config", "namespace": ns},
        "data": {"controller_manager_config.yaml": text},
    }


def _cq(
    name: str,
    selector: dict[str, Any] | None = None,
    flavors: tuple[str, ...] = ("default",),
    covered: tuple[str, ...] = ("cpu",),
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "resourceGroups": [
            {
                "coveredResources": list(covered),
                "flavors": [
                    {"name": f, "resources": [{"name": r, "nominalQuota": "10"} for r in covered]} for f in flavors
                ],
            }
        ],
        **spec,
    }
    if selector is not None:
        body["namespaceSelector"] = selector
    return {"apiVersion": V2, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": body}


def _lq(name: str, cq: str, ns: str = "team") -> dict[str, Any]:
    return {
        "apiVersion": V2,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"clusterQueue": cq},
    }


def _rf(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def _wl(
    queue: str,
    requests: dict[str, str],
    pod: dict[str, Any] | None = None,
    ns: str = "team",
    conditions: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    tmpl = {"containers": [{"name": "c", "image": "x", "resources": {"requests": requests}}], **(pod or {})}
    return {
        "apiVersion": V2,
        "kind": "Workload",
        "metadata": {"name": "wl", "namespace": ns, "uid": "wl-uid", "creationTimestamp": "2026-11-20T09:00:00Z"},
        "spec": {"queueName": queue, "podSets": [{"name": "main", "count": 1, "template": {"spec": tmpl}}], **spec},
        "status": {"conditions": conditions or []},
    }


def _ns(name: str, **lbls: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": lbls}}


def _run_kd001(snap: Snapshot) -> list[tuple[str, str]]:
    w = workload(snap, "team", "wl")
    assert w is not None
    return [(f.cause, f.title) for f in _submission_findings(snap, Target("wl", "team", w))]


# --- manager configuration ----------------------------------------------------------------------------------


def test_config_defaults_without_config_map() -> None:
    cfg = kueue_config(_snap([_ns("team")]))
    assert not cfg.found
    assert cfg.frameworks == ("batch/job",)
    assert cfg.framework_enabled("batch/job") and not cfg.framework_enabled("ray.io/rayjob")
    assert (
        selector_str(cfg.managed_jobs_namespace_selector)
        == "kubernetes.io/metadata.name notin (kube-system,kueue-system)"
    )
    assert cfg.wait_for_pods_ready.timeout == "30m" and not cfg.wait_for_pods_ready.block_admission
    assert cfg.wait_for_pods_ready.backoff_base_seconds == 60 and cfg.wait_for_pods_ready.backoff_limit_count is None


def test_config_default_selector_uses_the_configmap_namespace() -> None:
    cfg = kueue_config(
        _snap([_config_map("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n", ns="kueue")])
    )
    assert cfg.found and cfg.namespace == "kueue"
    assert "kueue)" in selector_str(cfg.managed_jobs_namespace_selector)


def test_config_reads_every_field() -> None:
    text = """apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
manageJobsWithoutQueueName: true
managedJobsNamespaceSelector:
  matchLabels: {kueue: "on"}
integrations:
  frameworks: [batch/job, pod]
  externalFrameworks: [Foo.v1.example.com]
resources:
  excludeResourcePrefixes: [ephemeral-storage, example.com/]
waitForPodsReady:
  timeout: 5m
  blockAdmission: true
  requeuingStrategy: {backoffLimitCount: 2, backoffBaseSeconds: 10, backoffMaxSeconds: 100}
"""
    cfg = kueue_config(_snap([_config_map(text)]))
    assert cfg.manage_jobs_without_queue_name
    assert cfg.framework_enabled("pod") and cfg.framework_enabled("Foo.v1.example.com")
    assert cfg.excluded("example.com/fpga") and cfg.excluded("ephemeral-storage") and not cfg.excluded("cpu")
    w = cfg.wait_for_pods_ready
    assert (w.timeout, w.block_admission, w.backoff_limit_count, w.backoff_base_seconds, w.backoff_max_seconds) == (
        "5m",
        True,
        2,
        10,
        100,
    )


def test_junk_config_is_a_one_line_input_error() -> None:
    with pytest.raises(InputError, match="controller_manager_config.yaml: invalid YAML"):
        kueue_config(_snap([_config_map("integrations: [unclosed")]))
    with pytest.raises(InputError, match="expected a Configuration object"):
        kueue_config(_snap([_config_map("- just\n- a list\n")]))


# --- flavor matching (restricted to the flavor's label keys, as Kueue does) ----------------------------------


def test_selector_restricted_to_flavor_keys() -> None:
    flavor = {"pool": "a100"}
    assert restricted_selector_matches({"nodeSelector": {"zone": "x"}}, flavor) == (True, "")
    ok, why = restricted_selector_matches({"nodeSelector": {"pool": "h100"}}, flavor)
    assert not ok and "pool=h100" in why


def test_affinity_terms_are_ored_and_unrelated_terms_match_everything() -> None:
    def aff(*terms: list[tuple[str, str, list[str]]]) -> dict[str, Any]:
        return {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": k, "operator": op, "values": v} for k, op, v in t]}
                            for t in terms
                        ]
                    }
                }
            }
        }

    flavor = {"pool": "a100"}
    assert not restricted_selector_matches(aff([("pool", "In", ["h100"])]), flavor)[0]
    assert restricted_selector_matches(aff([("pool", "In", ["h100"])], [("pool", "In", ["a100"])]), flavor)[0]
    # a term with no expression on the flavor's keys matches any flavor
    assert restricted_selector_matches(aff([("pool", "In", ["h100"])], [("zone", "In", ["z"])]), flavor)[0]
    assert not restricted_selector_matches(aff([("pool", "NotIn", ["a100"])]), flavor)[0]


def test_flavor_tolerations_tolerate_its_own_taints() -> None:
    from kueuediag.snapshot.kueue import PodSet

    taint = {"key": "gpu", "value": "true", "effect": "NoSchedule"}
    ps = PodSet(name="main", count=1, min_count=None, requests={}, spec={}, topology_request=None)
    own = flavor_view(_rf("f", nodeTaints=[taint], tolerations=[{"key": "gpu", "operator": "Exists"}]))
    assert flavor_exclusion(ps, "f", own) is None
    bare = flavor_view(_rf("f", nodeTaints=[taint]))
    x = flavor_exclusion(ps, "f", bare)
    assert x is not None and x.kind == "untolerated-taint" and "gpu=true:NoSchedule" in x.detail
    soft = flavor_view(_rf("f", nodeTaints=[{"key": "gpu", "effect": "PreferNoSchedule"}]))
    assert flavor_exclusion(ps, "f", soft) is None
    missing = flavor_exclusion(ps, "f", None)
    assert missing is not None and missing.kind == "not-found"


# --- KD001 on synthetic snapshots -------------------------------------------------------------------------


def test_empty_namespace_selector_selects_everything_and_null_selects_nothing() -> None:
    base = [_ns("team"), _rf("default"), _lq("q", "cq")]
    assert _run_kd001(_snap([*base, _cq("cq", selector={}), _wl("q", {"cpu": "1"})])) == []
    found = _run_kd001(_snap([*base, _cq("cq", selector=None), _wl("q", {"cpu": "1"})]))
    assert found == [
        ("namespace-not-selected", "ClusterQueue cq has no namespaceSelector (null): it admits no namespace")
    ]


def test_match_expressions_against_namespace_labels() -> None:
    sel = {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold"]}]}
    base = [_rf("default"), _lq("q", "cq"), _cq("cq", selector=sel), _wl("q", {"cpu": "1"})]
    assert _run_kd001(_snap([_ns("team", tier="gold"), *base])) == []
    assert [c for c, _ in _run_kd001(_snap([_ns("team", tier="silver"), *base]))] == ["namespace-not-selected"]


def test_excluded_resource_prefix_is_not_reported() -> None:
    objs = [
        _ns("team"),
        _rf("default"),
        _lq("q", "cq"),
        _cq("cq", selector={}),
        _wl("q", {"cpu": "1", "example.com/fpga": "1", "rdma/ib": "2"}),
    ]
    assert [c for c, _ in _run_kd001(_snap(objs))] == ["resource-not-covered"]
    cfg = _config_map("resources:\n  excludeResourcePrefixes: [example.com/, rdma/]\n")
    assert _run_kd001(_snap([*objs, cfg])) == []


def test_missing_flavor_is_reported_once_as_inactive_cluster_queue() -> None:
    objs = [
        _ns("team"),
        _lq("q", "cq"),
        _cq("cq", selector={}, flavors=("gone",)),
        _rf("other"),
        _wl("q", {"cpu": "1"}),
    ]
    found = _run_kd001(_snap(objs))
    assert found == [
        ("clusterqueue-inactive", "ClusterQueue cq is inactive: references missing ResourceFlavor(s): gone")
    ]


def test_uncollected_kinds_are_not_claimed_missing() -> None:
    # ResourceFlavors failed to collect: no missing-flavor claim, and no flavor matching either
    manifest = {**MANIFEST, "errors": [{"what": "resourceflavors", "error": "forbidden"}]}
    objs = [_ns("team"), _lq("q", "cq"), _cq("cq", selector={}, flavors=("a100",)), _wl("q", {"cpu": "1"})]
    assert _run_kd001(_snap(objs, manifest)) == []
    # the same objects in a complete snapshot: the flavor really is missing
    assert [c for c, _ in _run_kd001(_snap(objs))] == ["clusterqueue-inactive"]


def test_stopped_cluster_queue_without_status_is_inactive() -> None:
    objs = [
        _ns("team"),
        _rf("default"),
        _lq("q", "cq"),
        _cq("cq", selector={}, stopPolicy="Hold"),
        _wl("q", {"cpu": "1"}),
    ]
    assert _run_kd001(_snap(objs)) == [("clusterqueue-inactive", "ClusterQueue cq is inactive: is stopped (Hold)")]


def test_admitted_workload_is_out_of_scope() -> None:
    cond = {
        "type": "Admitted",
        "status": "True",
        "reason": "Admitted",
        "message": "The workload is admitted",
        "lastTransitionTime": "2026-11-20T09:01:00Z",
    }
    objs = [_ns("team"), _lq("q", "cq"), _cq("cq", selector=None), _wl("q", {"cpu": "1"}, conditions=[cond])]
    assert _run_kd001(_snap(objs)) == []


# --- KD701 -----------------------------------------------------------------------------------------------------


def test_backoff_in_the_past_is_not_reported() -> None:
    ev = {
        "type": "Evicted",
        "status": "True",
        "reason": "PodsReadyTimeout",
        "message": "Exceeded the PodsReady timeout team/wl",
        "lastTransitionTime": "2026-11-20T09:00:00Z",
    }
    wl = _wl("q", {"cpu": "1"}, conditions=[ev])
    wl["status"]["requeueState"] = {"count": 1, "requeueAt": "2026-11-20T09:01:00Z"}
    snap = _snap([wl])
    w = workload(snap, "team", "wl")
    assert w is not None
    assert findings_of(AdmissionChecks().run(snap, Target("wl", "team", w))) == []
    wl["status"]["requeueState"]["requeueAt"] = "2026-11-20T10:05:00Z"
    snap = _snap([wl])
    w = workload(snap, "team", "wl")
    assert w is not None
    found = findings_of(AdmissionChecks().run(snap, Target("wl", "team", w)))
    assert [(f.cause, f.data["seconds_left"]) for f in found] == [("podsready-backoff", 300)]


def test_terminating_cluster_queue_is_inactive() -> None:
    cq = _cq("cq", selector={})
    cq["metadata"].update(
        {"deletionTimestamp": "2026-11-20T09:30:00Z", "finalizers": ["kueue.x-k8s.io/resource-in-use"]}
    )
    found = _run_kd001(_snap([_ns("team"), _rf("default"), _lq("q", "cq"), cq, _wl("q", {"cpu": "1"})]))
    assert found == [("clusterqueue-inactive", "ClusterQueue cq is inactive: is terminating")]


def test_admission_gated_reason_without_annotation_is_medium_confidence() -> None:
    cond = {
        "type": "QuotaReserved",
        "status": "False",
        "reason": "AdmissionGated",
        "message": "Admission is gated by: example.com/broker",
        "lastTransitionTime": "2026-11-20T09:01:00Z",
    }
    snap = _snap(
        [_ns("team"), _rf("default"), _lq("q", "cq"), _cq("cq", selector={}), _wl("q", {"cpu": "1"}, conditions=[cond])]
    )
    w = workload(snap, "team", "wl")
    assert w is not None
    found = _submission_findings(snap, Target("wl", "team", w))
    assert [(f.cause, f.title, f.confidence.label) for f in found] == [
        ("admission-gated", "admission is gated by example.com/broker", "medium")
    ]


def test_workload_without_queue_name_has_no_local_queue() -> None:
    # manageJobsWithoutQueueName: true manages unlabelled jobs, but their Workload names no LocalQueue
    found = _run_kd001(_snap([_ns("team"), _rf("default"), _cq("cq", selector={}), _wl("", {"cpu": "1"})]))
    assert found == [("localqueue-missing", "Workload has no spec.queueName")]


def _kd701(objs: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    snap = _snap(objs)
    w = workload(snap, "team", "wl")
    assert w is not None
    found = findings_of(AdmissionChecks().run(snap, Target("wl", "team", w)))
    return [(f.cause, f.title, f.confidence.label) for f in found]


def test_rejected_check_while_holding_quota() -> None:
    qr = {
        "type": "QuotaReserved",
        "status": "True",
        "reason": "QuotaReserved",
        "message": "Quota reserved in ClusterQueue cq",
        "lastTransitionTime": "2026-11-20T09:00:00Z",
    }
    wl = _wl("q", {"cpu": "1"}, conditions=[qr])
    wl["status"]["admissionChecks"] = [
        {"name": "ready-check", "state": "Ready", "message": "", "lastTransitionTime": "2026-11-20T09:01:00Z"},
        {
            "name": "budget",
            "state": "Rejected",
            "message": "over the monthly GPU budget",
            "lastTransitionTime": "2026-11-20T09:02:00Z",
        },
    ]
    assert _kd701([wl]) == [("admission-check-rejected", "admission check budget rejected the workload", "high")]
    wl["status"]["admissionChecks"][1]["state"] = "Pending"
    assert _kd701([wl]) == [
        ("admission-check-pending", "admission check budget is Pending for 58m: over the monthly GPU budget", "high")
    ]


def test_block_admission_without_condition_is_medium_confidence() -> None:
    cfg = _config_map("waitForPodsReady:\n  timeout: 10m\n  blockAdmission: true\n")
    admitted = _wl(
        "q",
        {"cpu": "1"},
        conditions=[
            {
                "type": "Admitted",
                "status": "True",
                "reason": "Admitted",
                "message": "The workload is admitted",
                "lastTransitionTime": "2026-11-20T09:50:00Z",
            }
        ],
    )
    admitted["metadata"].update({"name": "other", "uid": "other-uid"})
    found = _kd701([cfg, admitted, _wl("q", {"cpu": "1"})])
    assert found == [
        ("waiting-for-podsready", "admission blocked until 1 admitted workload(s) are PodsReady: team/other", "medium")
    ]
    # without blockAdmission nothing holds the workload back
    assert _kd701([admitted, _wl("q", {"cpu": "1"})]) == []


def test_deactivated_while_still_holding_quota() -> None:
    conds = [
        {
            "type": "QuotaReserved",
            "status": "True",
            "reason": "QuotaReserved",
            "message": "Quota reserved in ClusterQueue cq",
            "lastTransitionTime": "2026-11-20T09:00:00Z",
        },
        {
            "type": "Admitted",
            "status": "True",
            "reason": "Admitted",
            "message": "The workload is admitted",
            "lastTransitionTime": "2026-11-20T09:00:00Z",
        },
        {
            "type": "Evicted",
            "status": "True",
            "reason": "Deactivated",
            "message": "The workload is deactivated",
            "lastTransitionTime": "2026-11-20T09:59:00Z",
        },
    ]
    objs = [
        _ns("team"),
        _rf("default"),
        _lq("q", "cq"),
        _cq("cq", selector=None),
        _wl("q", {"cpu": "1"}, conditions=conds, active=False),
    ]
    # the null selector is not reported for an admitted workload; the deactivation is
    assert _run_kd001(_snap(objs)) == [
        (
            "deactivated",
            "Workload is deactivated (spec.active: false): Deactivated — a user or controller set spec.active: false",
        )
    ]


def test_reactivated_workload_is_not_reported_as_rejected() -> None:
    wl = _wl("q", {"cpu": "1"})
    wl["status"]["admissionChecks"] = [
        {
            "name": "prov",
            "state": "Pending",
            "message": "Reset to Pending after eviction. Previously: Rejected",
            "lastTransitionTime": "2026-11-20T09:02:00Z",
        }
    ]
    assert _kd701([wl]) == []
    wl["spec"]["active"] = False
    assert [c for c, _, _ in _kd701([wl])] == ["admission-check-rejected"]


def test_unsatisfied_checks_without_check_states_names_the_cluster_queue_checks() -> None:
    conds = [
        {
            "type": "QuotaReserved",
            "status": "True",
            "reason": "QuotaReserved",
            "message": "Quota reserved in ClusterQueue cq",
            "lastTransitionTime": "2026-11-20T09:00:00Z",
        },
        {
            "type": "Admitted",
            "status": "False",
            "reason": "UnsatisfiedChecks",
            "message": "The workload has not all checks ready",
            "lastTransitionTime": "2026-11-20T09:00:00Z",
        },
    ]
    wl = _wl("q", {"cpu": "1"}, conditions=conds)
    wl["status"]["admission"] = {"clusterQueue": "cq", "podSetAssignments": []}
    cq = _cq("cq", selector={}, admissionChecksStrategy={"admissionChecks": [{"name": "prov"}]})
    assert _kd701([cq, wl]) == [
        ("admission-check-pending", "holds quota, waiting for admission check(s) prov", "medium")
    ]
