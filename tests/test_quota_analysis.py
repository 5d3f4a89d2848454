"""Quota arithmetic of kueuediag.analysis.quota against hand-computed values (Kueue resource-node semantics).

The tree used by most tests (flavor a100, resource nvidia.com/gpu):

    Cohort org            nominal 4 (cohort-level resourceGroups)
    ├── Cohort research   nominal 0, borrowingLimit 6
    │   ├── CQ team-a     nominal 8, borrowingLimit 4, lendingLimit 2   usage 7
    │   └── CQ team-b     nominal 8                                     usage 10 (borrows 2)
    └── CQ team-c         nominal 16, lendingLimit 8                    usage 4

SubtreeQuota: team-a 8 (guaranteed 6), team-b 8, research 0 + (8-6) + 8 = 10, team-c 16 (guaranteed 8),
org 4 + 10 + (16-8) = 22. Cohort usage: research max(0,7-6) + 10 = 11; org 11 + max(0,4-8) = 11.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from kueuediag.analysis.quota_fit import FitVerdict, workload_fit
from kueuediag.analysis.quota_summary import cq_quota, quota_holders
from kueuediag.analysis.quota_tree import quota_tree
from kueuediag.quantity import parse_quantity
from kueuediag.snapshot.kueue import workload
from kueuediag.snapshot.model import Snapshot
from kueuediag.snapshot.reader import RawSnapshot

D = Decimal
ZERO_D = Decimal(0)
GPU = "nvidia.com/gpu"
V2 = "kueue.x-k8s.io/v1beta2"


def _res(name: str, nominal: str, borrowing: str | None = None, lending: str | None = None) -> dict[str, Any]:
    r: dict[str, Any] = {"name": name, "nominalQuota": nominal}
    if borrowing is not None:
        r["borrowingLimit"] = borrowing
    if lending is not None:
        r["lendingLimit"] = lending
    return r


def _cq(
    name: str,
    cohort: str | None,
    resources: list[dict[str, Any]],
    flavor: str = "a100",
    covered: tuple[str, ...] = (GPU,),
    extra_flavors: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": list(covered),
                "flavors": [{"name": flavor, "resources": resources}] + (extra_flavors or []),
            }
        ],
        **spec,
    }
    if cohort:
        body["cohortName"] = cohort
    return {
        "apiVersion": V2,
        "kind": "ClusterQueue",
        "metadata": {"name": name, "uid": f"uid-{name}"},
        "spec": body,
    }


def _cohort(name: str, parent: str | None, resources: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if parent:
        spec["parentName"] = parent
    if resources:
        spec["resourceGroups"] = [{"coveredResources": [GPU], "flavors": [{"name": "a100", "resources": resources}]}]
    return {
        "apiVersion": V2,
        "kind": "Cohort",
        "metadata": {"name": name, "uid": f"uid-{name}"},
        "spec": spec,
    }


def _flavor(
    name: str, labels: dict[str, str] | None = None, taints: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if labels:
        spec["nodeLabels"] = labels
    if taints:
        spec["nodeTaints"] = taints
    return {
        "apiVersion": V2,
        "kind": "ResourceFlavor",
        "metadata": {"name": name, "uid": f"uid-{name}"},
        "spec": spec,
    }


def _lq(ns: str, name: str, cq: str) -> dict[str, Any]:
    return {
        "apiVersion": V2,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": ns, "uid": f"lq-{name}"},
        "spec": {"clusterQueue": cq},
    }


def _wl(
    ns: str,
    name: str,
    queue: str,
    per_pod: dict[str, str],
    count: int = 1,
    admitted_in: str | None = None,
    flavor: str = "a100",
    pod_spec: dict[str, Any] | None = None,
    pod_sets: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    template_spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x", "resources": {"requests": per_pod}}]}
    template_spec.update(pod_spec or {})
    status: dict[str, Any] = {}
    if admitted_in:
        usage = {r: str(parse_quantity(q) * count) for r, q in per_pod.items()}
        status = {
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "True",
                    "reason": "QuotaReserved",
                    "message": f"Quota reserved in ClusterQueue {admitted_in}",
                    "lastTransitionTime": "2026-11-20T09:00:00Z",
                }
            ],
            "admission": {
                "clusterQueue": admitted_in,
                "podSetAssignments": [
                    {
                        "name": "main",
                        "count": count,
                        "flavors": {r: flavor for r in per_pod},
                        "resourceUsage": usage,
                    }
                ],
            },
        }
    return {
        "apiVersion": V2,
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": f"uid-{name}",
            "creationTimestamp": "2026-11-20T08:00:00Z",
        },
        "spec": {
            "queueName": queue,
            "podSets": pod_sets or [{"name": "main", "count": count, "template": {"spec": template_spec}}],
        },
        "status": status,
    }


def _snap(objs: list[dict[str, Any]], manifest: dict[str, Any] | None = None) -> Snapshot:
    raw = RawSnapshot(
        source="test",
        manifest=manifest or {"format": "kueuediag-snapshot/v1", "capturedAt": "2026-11-20T10:00:00Z", "errors": []},
        objects=objs,
    )
    return Snapshot(raw)


def _tree_objects() -> list[dict[str, Any]]:
    return [
        _flavor("a100"),
        _cohort("org", None, [_res(GPU, "4")]),
        _cohort("research", "org", [_res(GPU, "0", borrowing="6")]),
        _cq("team-a", "research", [_res(GPU, "8", borrowing="4", lending="2")]),
        _cq("team-b", "research", [_res(GPU, "8")]),
        _cq("team-c", "org", [_res(GPU, "16", lending="8")]),
        _lq("a", "q", "team-a"),
        _lq("b", "q", "team-b"),
        _lq("c", "q", "team-c"),
        _wl("a", "a-run1", "q", {GPU: "3"}, admitted_in="team-a"),
        _wl("a", "a-run2", "q", {GPU: "2"}, count=2, admitted_in="team-a"),
        _wl("b", "b-run", "q", {GPU: "5"}, count=2, admitted_in="team-b"),
        _wl("c", "c-run", "q", {GPU: "4"}, admitted_in="team-c"),
    ]


@pytest.fixture()
def tree_snap() -> Snapshot:
    return _snap(_tree_objects())


def test_subtree_quota_and_cohort_usage(tree_snap: Snapshot) -> None:
    tree = quota_tree(tree_snap)
    fr = ("a100", GPU)
    assert tree.cluster_queues["team-a"].guaranteed(fr) == D(6)
    assert tree.cohorts["research"].subtree_quota[fr] == D(10)
    assert tree.cohorts["org"].subtree_quota[fr] == D(22)
    assert tree.cohorts["research"].usage[fr] == D(11)
    assert tree.cohorts["org"].usage[fr] == D(11)
    assert tree.path("team-a") == ["research", "org"]
    assert tree.usage_source["team-a"] == "workloads"


def test_available_respects_borrowing_limits_of_cq_and_intermediate_cohort(tree_snap: Snapshot) -> None:
    a = cq_quota(tree_snap, "team-a", "a100", GPU)
    assert a is not None
    # research: min(10 - 11 + 6, org 22-11=11) = 5; team-a: local max(0, 6-7)=0 + min(2-1+4, 5) = 5
    assert a.usage == D(7)
    assert a.available == D(5)
    assert a.free_nominal == D(1)
    assert a.borrowable == D(4)
    # maximum capacity: min(8+4, 6 + min(10+6, 22)) = 12
    assert a.max_capacity == D(12)
    assert a.max_borrowable == D(4)
    b = cq_quota(tree_snap, "team-b", "a100", GPU)
    assert b is not None and b.available == D(5) and b.borrowed == D(2) and b.max_capacity == D(16)
    c = cq_quota(tree_snap, "team-c", "a100", GPU)
    # team-c keeps 8 guaranteed (lendingLimit 8 of 16), 4 used → 4 local + org's 11
    assert c is not None and c.available == D(15) and c.max_capacity == D(30)


def test_lending_limit_caps_what_others_can_borrow() -> None:
    objs = [
        _flavor("a100"),
        _cq("lender", "pool", [_res(GPU, "10", lending="3")]),
        _cq("borrower", "pool", [_res(GPU, "2")]),
    ]
    snap = _snap(objs)
    q = cq_quota(snap, "borrower", "a100", GPU)
    assert q is not None
    assert q.max_capacity == D(5)  # own 2 + lender's lendingLimit 3
    assert q.available == D(5)
    lender = cq_quota(snap, "lender", "a100", GPU)
    assert lender is not None and lender.max_capacity == D(12)  # guaranteed 7 + pool 5


def test_fit_verdicts_per_amount(tree_snap: Snapshot) -> None:
    objs = _tree_objects() + [
        _wl("a", "small", "q", {GPU: "1"}),
        _wl("a", "borrow", "q", {GPU: "5"}),
        _wl("a", "preempt", "q", {GPU: "6"}),
        _wl("a", "huge", "q", {GPU: "13"}),
    ]
    snap = _snap(objs)
    expected = {
        "small": FitVerdict.FITS_NOMINAL,
        "borrow": FitVerdict.FITS_BORROWING,
        "preempt": FitVerdict.NEEDS_PREEMPTION,
        "huge": FitVerdict.NEVER_FITS,
    }
    for name, verdict in expected.items():
        w = workload(snap, "a", name)
        assert w is not None
        fit = workload_fit(snap, w)
        assert fit is not None and fit.verdict == verdict, name
    huge = workload(snap, "a", "huge")
    assert huge is not None
    fit = workload_fit(snap, huge)
    assert fit is not None and fit.never_fits and not fit.fits_in_nominal
    ((_, rf),) = fit.blocking()
    assert (rf.needed, rf.free_nominal, rf.borrowable, rf.shortfall) == (D(13), D(1), D(4), D(8))
    assert "needs 13 nvidia.com/gpu in flavor a100: 1 free in nominal quota, 4 borrowable" in rf.describe()


def test_holders_own_and_borrowers(tree_snap: Snapshot) -> None:
    h = quota_holders(tree_snap, "team-a", "a100", GPU)
    assert [(x.name, x.amount) for x in h.own] == [("a-run2", D(4)), ("a-run1", D(3))]
    assert [(x.name, x.amount) for x in h.borrowers] == [("team-b", D(2))]
    assert h.own_total == D(7) and h.borrowed_total == D(2)


def test_cohort_holders_when_the_queue_holds_nothing(tree_snap: Snapshot) -> None:
    """A ClusterQueue that must borrow is told which workloads of the other queues hold the flavor."""
    h = quota_holders(tree_snap, "team-b", "a100", GPU)
    assert [(x.name, x.cluster_queue, x.amount) for x in h.cohort] == [
        ("a-run2", "team-a", D(4)), ("c-run", "team-c", D(4)), ("a-run1", "team-a", D(3))]
    assert all(x.note == "" for x in (*h.own, *h.cohort))


def _evicted(w: dict[str, Any], owner_uid: str) -> dict[str, Any]:
    w["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "job", "uid": owner_uid,
                                         "controller": True}]
    w["status"]["conditions"].append({"type": "Evicted", "status": "True", "reason": "PodsReadyTimeout",
                                      "message": "Exceeded the PodsReady timeout a/a-run1",
                                      "lastTransitionTime": "2026-11-20T09:30:00Z"})
    return w


def _job(uid: str, suspended: bool) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "job", "namespace": "a", "uid": uid},
            "spec": {"suspend": suspended, "template": {"spec": {"containers": []}}}}


def test_evicted_holder_is_marked_only_once_its_job_is_stopped() -> None:
    """An eviction in progress (job still running) holds quota normally; a suspended job with no running pods
    whose Workload still reserves quota holds it for nothing, and is marked."""
    for suspended, pod_phase, marked in ((True, None, True), (False, None, False), (True, "Running", False)):
        objs = [o for o in _tree_objects() if o["metadata"]["name"] != "a-run1"]
        objs += [_evicted(_wl("a", "a-run1", "q", {GPU: "3"}, admitted_in="team-a"), "job-uid"),
                 _job("job-uid", suspended),
                 {"apiVersion": "v1", "kind": "Pod", "spec": {}, "status": {"phase": "Running"},
                  "metadata": {"name": "other", "namespace": "kube-system", "uid": "p0"}}]
        if pod_phase:
            objs.append({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": "job-x", "namespace": "a", "uid": "p1",
                                      "ownerReferences": [{"kind": "Job", "name": "job", "uid": "job-uid"}]},
                         "spec": {}, "status": {"phase": pod_phase}})
        h = quota_holders(_snap(objs), "team-a", "a100", GPU)
        note = next(x.note for x in h.own if x.name == "a-run1")
        assert bool(note) is marked, (suspended, pod_phase, note)
        if marked:
            assert note == ("Evicted (PodsReadyTimeout) since 2026-11-20T09:30:00Z, its Job suspended with no "
                            "running pods, but it still holds its quota reservation")


def test_exact_decimal_cpu_and_memory() -> None:
    objs = [
        _flavor("default"),
        _cq("q", None, [_res("cpu", "1"), _res("memory", "1Gi")], flavor="default", covered=("cpu", "memory")),
        _lq("ns", "lq", "q"),
        _wl("ns", "w1", "lq", {"cpu": "100m", "memory": "256Mi"}, count=3, admitted_in="q", flavor="default"),
        _wl("ns", "w2", "lq", {"cpu": "700m", "memory": "256Mi"}),
        _wl("ns", "w3", "lq", {"cpu": "701m", "memory": "256Mi"}),
    ]
    snap = _snap(objs)
    q = cq_quota(snap, "q", "default", "cpu")
    assert q is not None and q.free_nominal == D("0.7") and q.usage == D("0.3")
    mem = cq_quota(snap, "q", "default", "memory")
    assert mem is not None and mem.free_nominal == D(256 * 1024**2)
    w2, w3 = workload(snap, "ns", "w2"), workload(snap, "ns", "w3")
    assert w2 is not None and w3 is not None
    f2, f3 = workload_fit(snap, w2), workload_fit(snap, w3)
    assert f2 is not None and f2.verdict == FitVerdict.FITS_NOMINAL  # exactly 700m left: no float rounding
    # 1m too much: within maximum capacity (nominal 1, no cohort) but above what is available now
    assert f3 is not None and f3.verdict == FitVerdict.NEEDS_PREEMPTION
    ((_, rf),) = f3.blocking()
    assert rf.shortfall == D("0.001")


def test_flavor_order_taints_and_node_labels() -> None:
    taint = {"key": "spot", "value": "true", "effect": "NoSchedule"}
    objs = [
        _flavor("spot", {"pool": "spot"}, [taint]),
        _flavor("on-demand", {"pool": "on-demand"}),
        _flavor("reserved", {"pool": "reserved"}),
        _cq(
            "q",
            None,
            [_res(GPU, "8")],
            flavor="spot",
            extra_flavors=[
                {"name": "on-demand", "resources": [_res(GPU, "2")]},
                {"name": "reserved", "resources": [_res(GPU, "8")]},
            ],
        ),
        _lq("ns", "lq", "q"),
        _wl("ns", "pinned", "lq", {GPU: "4"}, pod_spec={"nodeSelector": {"pool": "reserved"}}),
        _wl("ns", "free", "lq", {GPU: "4"}),
        _wl(
            "ns",
            "tolerant",
            "lq",
            {GPU: "4"},
            pod_spec={"tolerations": [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}]},
        ),
    ]
    snap = _snap(objs)
    pinned = workload(snap, "ns", "pinned")
    assert pinned is not None
    fit = workload_fit(snap, pinned)
    assert fit is not None
    flavors = {f.flavor: f for f in fit.pod_sets[0].flavors}
    # one reason per flavor, the first that excludes it (as Kueue's checkFlavorForPodSets reports)
    assert flavors["spot"].reasons == ("untolerated taint spot=true:NoSchedule in flavor spot",)
    assert flavors["on-demand"].reasons == ("flavor on-demand doesn't match node affinity",)
    assert fit.chosen()[0][1].flavor == "reserved"
    free = workload(snap, "ns", "free")
    assert free is not None
    free_fit = workload_fit(snap, free)
    # spot is tainted; on-demand (2) is too small → never fits there; reserved fits
    assert free_fit is not None and free_fit.chosen()[0][1].flavor == "reserved"
    tolerant = workload(snap, "ns", "tolerant")
    assert tolerant is not None
    tol_fit = workload_fit(snap, tolerant)
    assert tol_fit is not None and tol_fit.chosen()[0][1].flavor == "spot"


def test_second_pod_set_accumulates_in_the_same_flavor() -> None:
    def ps(name: str, gpus: str, count: int) -> dict[str, Any]:
        return {
            "name": name,
            "count": count,
            "template": {"spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {GPU: gpus}}}]}},
        }

    objs = [
        _flavor("a100"),
        _cq("q", None, [_res(GPU, "8")]),
        _lq("ns", "lq", "q"),
        _wl("ns", "multi", "lq", {}, pod_sets=[ps("launcher", "1", 1), ps("worker", "2", 4)]),
    ]
    snap = _snap(objs)
    w = workload(snap, "ns", "multi")
    assert w is not None
    fit = workload_fit(snap, w)
    assert fit is not None
    worker = fit.pod_sets[1].groups[0].chosen
    assert worker is not None
    rf = worker.resource(GPU)
    assert rf is not None and rf.request == D(8) and rf.needed == D(9)
    assert fit.verdict == FitVerdict.NEVER_FITS


def test_status_reservation_used_when_snapshot_is_namespace_limited() -> None:
    cq = _cq("q", None, [_res(GPU, "8")])
    cq["status"] = {
        "flavorsReservation": [{"name": "a100", "resources": [{"name": GPU, "total": "6", "borrowed": "0"}]}]
    }
    objs = [_flavor("a100"), cq, _lq("ns", "lq", "q"), _wl("ns", "mine", "lq", {GPU: "2"}, admitted_in="q")]
    limited = _snap(
        objs,
        {
            "format": "kueuediag-snapshot/v1",
            "capturedAt": "2026-11-20T10:00:00Z",
            "errors": [],
            "namespaces": ["ns"],
        },
    )
    q = cq_quota(limited, "q", "a100", GPU)
    assert q is not None and q.usage_source == "status" and q.usage == D(6) and q.free_nominal == D(2)
    full = _snap(objs)
    q2 = cq_quota(full, "q", "a100", GPU)
    assert q2 is not None and q2.usage_source == "workloads" and q2.usage == D(2)
    assert q2.status_usage == D(6) and q2.usage_mismatch


def test_cohort_cycle_disables_borrowing() -> None:
    objs = [
        _flavor("a100"),
        _cohort("x", "y"),
        _cohort("y", "x"),
        _cq("q", "x", [_res(GPU, "4")]),
        _cq("p", "x", [_res(GPU, "4")]),
    ]
    snap = _snap(objs)
    tree = quota_tree(snap)
    assert tree.cycles == {"x", "y"}
    q = cq_quota(snap, "q", "a100", GPU)
    assert q is not None and q.max_capacity == D(4) and not q.in_cohort


def test_affinity_is_restricted_to_the_flavor_own_label_keys() -> None:
    """A flavor without nodeLabels matches any nodeSelector (only its own keys are compared)."""
    objs = [
        _flavor("labelled", {"pool": "a"}),
        _flavor("plain"),
        _cq(
            "q",
            None,
            [_res(GPU, "1")],
            flavor="labelled",
            extra_flavors=[{"name": "plain", "resources": [_res(GPU, "8")]}],
        ),
        _lq("ns", "lq", "q"),
        _wl("ns", "w", "lq", {GPU: "2"}, pod_spec={"nodeSelector": {"pool": "b"}}),
    ]
    snap = _snap(objs)
    w = workload(snap, "ns", "w")
    assert w is not None
    fit = workload_fit(snap, w)
    assert fit is not None
    by_name = {f.flavor: f for f in fit.pod_sets[0].flavors}
    assert by_name["labelled"].reasons == ("flavor labelled doesn't match node affinity",)
    assert by_name["plain"].eligible
    assert fit.chosen()[0][1].flavor == "plain" and fit.verdict == FitVerdict.FITS_NOMINAL


def test_partial_admission_finds_the_largest_count_that_fits() -> None:
    template = {"spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {GPU: "1"}}}]}}
    objs = [
        _flavor("a100"),
        _cq("q", None, [_res(GPU, "8")]),
        _lq("ns", "lq", "q"),
        _wl("ns", "running", "lq", {GPU: "2"}, admitted_in="q"),
        _wl("ns", "elastic", "lq", {}, pod_sets=[{"name": "main", "count": 12, "minCount": 4, "template": template}]),
        _wl("ns", "rigid", "lq", {}, pod_sets=[{"name": "main", "count": 12, "template": template}]),
        _wl("ns", "too-big", "lq", {}, pod_sets=[{"name": "main", "count": 12, "minCount": 10, "template": template}]),
    ]
    snap = _snap(objs)
    fits = {}
    for name in ("elastic", "rigid", "too-big"):
        w = workload(snap, "ns", name)
        assert w is not None
        fits[name] = workload_fit(snap, w)
    elastic, rigid, too_big = fits["elastic"], fits["rigid"], fits["too-big"]
    assert elastic is not None and elastic.verdict == FitVerdict.FITS_NOMINAL and elastic.partial == (("main", 6),)
    assert elastic.pod_sets[0].count == 6
    assert rigid is not None and rigid.never_fits and rigid.partial == ()
    # 10 pods exceed the nominal quota of 8 even at minCount: still never fits, reported at full count
    assert too_big is not None and too_big.never_fits and too_big.partial == ()


def test_unused_nominal_quota_lent_to_a_borrower() -> None:
    objs = [
        _flavor("a100"),
        _cq("owner", "pool", [_res(GPU, "8")]),
        _cq("greedy", "pool", [_res(GPU, "4")]),
        _lq("o", "lq", "owner"),
        _lq("g", "lq", "greedy"),
        _wl("o", "small", "lq", {GPU: "2"}, admitted_in="owner"),
        _wl("g", "big", "lq", {GPU: "5"}, count=2, admitted_in="greedy"),
        _wl("o", "waiting", "lq", {GPU: "3"}),
    ]
    snap = _snap(objs)
    q = cq_quota(snap, "owner", "a100", GPU)
    assert q is not None
    assert (q.free_nominal, q.available, q.lent_out, q.borrowable) == (D(6), D(0), D(6), D(0))
    w = workload(snap, "o", "waiting")
    assert w is not None
    fit = workload_fit(snap, w)
    assert fit is not None and fit.verdict == FitVerdict.NEEDS_PREEMPTION and not fit.fits_in_nominal
    ((_, rf),) = fit.blocking()
    assert rf.describe().startswith(
        "needs 3 nvidia.com/gpu in flavor a100: 6 free in nominal quota (6 of it lent to the cohort), 0 borrowable"
    )
    holders = quota_holders(snap, "owner", "a100", GPU)
    assert [(h.name, h.amount) for h in holders.borrowers] == [("greedy", D(6))]


# --- properties over random two-level trees ---------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_limit = st.one_of(st.none(), st.integers(0, 12).map(str))


@st.composite
def _random_tree(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[str]]:
    objs: list[dict[str, Any]] = [_flavor("a100"), _cohort("root", None, [_res(GPU, str(draw(st.integers(0, 4))))])]
    cqs: list[str] = []
    for c in range(draw(st.integers(1, 2))):
        name = f"mid{c}"
        objs.append(_cohort(name, "root", [_res(GPU, "0", borrowing=draw(_limit), lending=draw(_limit))]))
        for q in range(draw(st.integers(1, 3))):
            cq = f"{name}-q{q}"
            cqs.append(cq)
            borrowing = draw(_limit)
            objs.append(_cq(cq, name, [_res(GPU, str(draw(st.integers(0, 10))), borrowing, draw(_limit))]))
            objs.append(_lq(cq, "lq", cq))
            for i in range(draw(st.integers(0, 3))):
                objs.append(_wl(cq, f"w{i}", "lq", {GPU: str(draw(st.integers(1, 6)))}, admitted_in=cq))
    return objs, cqs


@settings(max_examples=60, deadline=None)
@given(_random_tree())
def test_available_never_exceeds_maximum_capacity(tree: tuple[list[dict[str, Any]], list[str]]) -> None:
    objs, cqs = tree
    snap = _snap(objs)
    idle = _snap([o for o in objs if o["kind"] != "Workload"])
    for cq in cqs:
        q = cq_quota(snap, cq, "a100", GPU)
        q0 = cq_quota(idle, cq, "a100", GPU)
        assert q is not None and q0 is not None
        assert q.available <= q.max_capacity
        assert q.max_capacity == q0.max_capacity  # usage never changes the maximum capacity
        assert q0.available == q0.max_capacity  # with no usage everything potential is available
        assert q.max_capacity >= q.nominal
        assert q.free_nominal + q.borrowable >= max(q.available, ZERO_D)


@pytest.mark.parametrize(("preference", "expected"), [(None, "a"), ("PreemptionOverBorrowing", "b")])
def test_flavor_fungibility_preference(preference: str | None, expected: str) -> None:
    fungibility: dict[str, Any] = {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"}
    if preference:
        fungibility["preference"] = preference
    objs = [
        _flavor("a"),
        _flavor("b"),
        _cq(
            "q",
            "pool",
            [_res(GPU, "2")],
            flavor="a",
            extra_flavors=[{"name": "b", "resources": [_res(GPU, "8")]}],
            flavorFungibility=fungibility,
        ),
        _cq(
            "other", "pool", [_res(GPU, "10")], flavor="a", extra_flavors=[{"name": "b", "resources": [_res(GPU, "0")]}]
        ),
        _lq("ns", "lq", "q"),
        _lq("o", "lq", "other"),
        _wl("ns", "mine", "lq", {GPU: "2"}, admitted_in="q", flavor="b"),
        _wl("o", "borrower", "lq", {GPU: "6"}, admitted_in="other", flavor="b"),
        _wl("ns", "new", "lq", {GPU: "4"}),
    ]
    snap = _snap(objs)
    w = workload(snap, "ns", "new")
    assert w is not None
    fit = workload_fit(snap, w)
    assert fit is not None
    verdicts = {f.flavor: f.verdict for f in fit.pod_sets[0].flavors}
    assert verdicts == {"a": FitVerdict.FITS_BORROWING, "b": FitVerdict.NEEDS_PREEMPTION}
    assert fit.chosen()[0][1].flavor == expected
