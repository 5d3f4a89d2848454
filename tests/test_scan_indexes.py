"""The per-snapshot indexes behind `health --all-pending` answer exactly what the direct computation answers.

`health --all-pending` diagnoses every pending workload on one shared Snapshot, so whatever a check reads more
than once is indexed or memoised once per snapshot. Each test here computes an answer both ways — through the
index and by the plain scan it replaces — and requires them equal; the last one diagnoses workloads of several
ClusterQueues on one shared snapshot after many others and compares each verdict with one from a fresh snapshot.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from kueuediag_checks.log_patterns import queue_context

from kueuediag.analysis.admission_rates import admission_rates, detect_trickle, sparkline
from kueuediag.analysis.capacity import constraint_key, matching_nodes
from kueuediag.analysis.guarantees import (
    _releases,
    fit_cq,
    guarantee_violations,
    is_pending,
    nominal_fit,
    pending_since,
    violation_for,
)
from kueuediag.analysis.queue_ahead import ahead_of, fits_after, namespace_mismatch
from kueuediag.analysis.queue_order import QueueEntry, pending_queue, queue_entry
from kueuediag.analysis.queue_route import local_queue_names
from kueuediag.analysis.quota_fit import _fit_with_partial, workload_fit
from kueuediag.analysis.signatures import SignatureHit, hits_concerning
from kueuediag.config import Settings
from kueuediag.engine import diagnose
from kueuediag.errors import KueuediagError
from kueuediag.models import Severity
from kueuediag.registry import discover
from kueuediag.render.json_out import render_json
from kueuediag.snapshot.kueue import WorkloadView, kueue_index, workloads, workloads_by_cluster_queue
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.snapshot.model import Snapshot
from kueuediag.target import resolve

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "snapshots"


def _rate_snapshots(bench_dir: Path) -> list[Snapshot]:
    # metrics-sourced (the benchmark, slow-pod-preemption) and object-sourced (slow-preemption-no-metrics)
    return [load_snapshot(str(bench_dir)), load_snapshot(str(FIXTURES / "slow-pod-preemption")),
            load_snapshot(str(FIXTURES / "slow-preemption-no-metrics"))]


def test_count_since_equals_a_linear_count(bench_dir: Path) -> None:
    checked = 0
    for snap in _rate_snapshots(bench_dir):
        for cq in sorted(workloads_by_cluster_queue(snap))[:8]:
            rates = admission_rates(snap, cq, 6 * 3600)
            lists = [rates.admission_times, rates.preemption_times, rates.all_admission_times,
                     rates.all_preemption_times, *rates.admissions_by_cq.values()]
            for times in lists:
                assert times == sorted(times)  # what the binary search relies on
                probes = {rates.start, rates.end, rates.end - 1800, *times[:3], *times[-3:],
                          *(t - 0.5 for t in times[:3])}
                for since in probes:
                    assert rates.count_since(times, since) == sum(1 for t in times if since < t <= rates.end)
                    checked += 1
    assert checked > 50


def test_rates_sparklines_and_trickle_equal_the_direct_reading(bench_dir: Path) -> None:
    trickles = 0
    for snap in _rate_snapshots(bench_dir):
        for cq in sorted(workloads_by_cluster_queue(snap))[:8]:
            rates = admission_rates(snap, cq, 6 * 3600)
            assert rates.sparklines == {"admissions": sparkline(rates.buckets(rates.admission_times)),
                                        "preemptions": sparkline(rates.buckets(rates.preemption_times))}
            for min_events, min_gap, max_cv in ((4, 120.0, 0.35), (3, 60.0, 0.5), (6, 300.0, 0.2)):
                got = rates.trickle(min_events=min_events, min_gap=min_gap, max_cv=max_cv)
                assert got == detect_trickle(rates.admission_times, min_events=min_events, min_gap=min_gap,
                                             max_cv=max_cv)
                trickles += got is not None
    assert trickles > 0  # the slow-preemption fixtures trickle: the comparison covered a found trickle


def test_local_queue_names_equal_a_scan_of_every_local_queue(bench_dir: Path) -> None:
    for snap in (load_snapshot(str(bench_dir)), load_snapshot(str(FIXTURES / "queue-problems"))):
        idx = kueue_index(snap)
        namespaces = {ns for ns, _ in idx.local_queues} | {"no-such-namespace"}
        for ns in sorted(namespaces):
            direct = sorted(lq.name for (lns, _), lq in idx.local_queues.items() if lns == ns)
            assert local_queue_names(snap, ns) == direct
        assert local_queue_names(snap, "no-such-namespace") == []


def _direct_walk(snap: Snapshot, cq: str, position: int) -> tuple[list[str], dict[object, Decimal], str | None]:
    """The walk over the workloads ahead of `position`, done for that position alone."""
    strict = kueue_index(snap).cluster_queues[cq].queueing_strategy == "StrictFIFO"
    consumed: dict[object, Decimal] = {}
    fitting: list[QueueEntry] = []
    for e in pending_queue(snap, cq)[: position - 1]:
        if e.workload.requeue_at is not None and e.workload.requeue_at > snap.now:
            continue
        fit = workload_fit(snap, e.workload, cq)
        if fit is None:
            continue
        if e.sticky or fits_after(fit, consumed):
            fitting.append(e)
            for _, ff in fit.chosen():
                for r in ff.resources:
                    consumed[(ff.flavor, r.resource)] = consumed.get((ff.flavor, r.resource), Decimal(0)) + r.request
        elif strict and not namespace_mismatch(e):
            return [f.workload.ref() for f in fitting], consumed, e.workload.ref()
    return [f.workload.ref() for f in fitting], consumed, None


@pytest.mark.parametrize("fixture", ["queue-strictfifo", "queue-priority", "queue-problems", "bench"])
def test_queue_walk_and_entries_equal_a_walk_per_position(fixture: str, bench_dir: Path) -> None:
    snap = load_snapshot(str(bench_dir if fixture == "bench" else FIXTURES / fixture))
    walked = blocked = 0
    for cq in sorted(kueue_index(snap).cluster_queues):
        queue = pending_queue(snap, cq)
        for entry in queue:
            assert queue_entry(snap, cq, entry.workload) is next(
                e for e in queue if e.workload.uid == entry.workload.uid and e.workload.name == entry.workload.name)
            ahead = ahead_of(snap, cq, entry.position)
            got = ([e.workload.ref() for e in ahead.fitting], dict(ahead.consumed),
                   ahead.head_blocker.workload.ref() if ahead.head_blocker else None)
            assert got == _direct_walk(snap, cq, entry.position), (cq, entry.position)
            walked += 1
            blocked += ahead.head_blocker is not None
        queued = {e.workload.uid for e in queue}
        for w in workloads_by_cluster_queue(snap).get(cq, []):
            if w.uid not in queued:
                assert queue_entry(snap, cq, w) is None
    assert walked >= 3
    if fixture == "queue-strictfifo":
        assert blocked > 0  # the fixture's StrictFIFO head blocks the workloads behind it


def _direct_queue_context(snap: Snapshot, w: WorkloadView, cq: str) -> dict[str, list[SignatureHit]]:
    """KD501's context about the queue's other workloads, selected from every hit that may concern the target."""
    out: dict[str, list[SignatureHit]] = {}
    for hit in hits_concerning(snap, w.name, cq):
        sig = hit.signature
        if sig.id in ("evaluated-for-admission", "preempted") or not hit.noteworthy or sig.per != "workload":
            continue
        if not hit.index.names_workload(w.namespace, w.name) and hit.index.names_cluster_queue(cq) \
                and sig.severity >= Severity.MEDIUM:
            out.setdefault(hit.cause, []).append(hit)
    return {cause: hits[:3] for cause, hits in out.items()}


@pytest.mark.parametrize("fixture", ["bench", "scenarios/slow-preemption", "scenarios/stuck-preemption-target",
                                     "snapshots/health-logs-level2", "snapshots/health-pod-preemption-grace"])
def test_kd501_queue_context_equals_the_selection_over_every_hit(fixture: str, bench_dir: Path) -> None:
    snap = load_snapshot(str(bench_dir if fixture == "bench" else ROOT / "fixtures" / fixture))
    idx = kueue_index(snap)
    compared = found = 0
    for w in workloads(snap):
        cq = w.admission_cq or (idx.local_queues[(w.namespace, w.queue_name)].cluster_queue
                                if (w.namespace, w.queue_name) in idx.local_queues else None)
        if cq is None:
            continue
        got = queue_context(snap, w, cq)
        assert got == _direct_queue_context(snap, w, cq), (w.ref(), cq)
        compared += 1
        found += bool(got)
    assert compared > 0
    if fixture in ("scenarios/stuck-preemption-target", "snapshots/health-pod-preemption-grace"):
        assert found > 0  # re-queue loops of other workloads name the ClusterQueue: context was compared


def _direct_release(snap: Snapshot, w: WorkloadView) -> str | None:
    """The release that dated the workload's violation, searched for this workload alone: every release after
    it became pending, each probe a fresh nominal fit (not the probes shared by the workloads of its shape)."""
    since0, _ = pending_since(w)
    if since0 is None:
        return None
    releases = list(_releases(snap, fit_cq(snap, w), since0))
    lo, hi = 0, len(releases)
    while lo < hi:
        mid = (lo + hi) // 2
        again = nominal_fit(snap, w, releases[mid][2])
        if again is not None and not again.fits:
            hi = mid
        else:
            lo = mid + 1
    return f"Workload/{releases[lo][1].namespace}/{releases[lo][1].name}" if lo < len(releases) else None


@pytest.mark.parametrize("fixture", ["bench", "guarantee-churn", "guarantee-violation", "kueue-record"])
def test_violations_equal_a_search_per_workload(fixture: str, bench_dir: Path) -> None:
    """guarantee_violations shares its release probes across the workloads of a shape in a queue; each violation
    equals one computed for that workload alone on a fresh snapshot, and its dating release equals a search
    with fresh probes over the releases after it became pending."""
    path = str(bench_dir if fixture == "bench" else FIXTURES / fixture)
    shared = load_snapshot(path)
    found = {v.workload.ref(): v for v in guarantee_violations(shared)}
    assert found
    dated = 0
    for ref, v in list(found.items())[:40]:
        fresh = load_snapshot(path)
        w = next(x for x in workloads(fresh) if x.ref() == ref)
        alone = violation_for(fresh, w)
        assert alone is not None
        assert (alone.since, alone.since_source, alone.seconds, alone.notes, alone.metric_selectors,
                alone.fit.flavors) == (v.since, v.since_source, v.seconds, v.notes, v.metric_selectors,
                                       v.fit.flavors), ref
        released = f"Workload/{v.released_by.namespace}/{v.released_by.name}" if v.released_by is not None else None
        assert released == _direct_release(load_snapshot(path), w), ref
        dated += released is not None
    # the shared run found no violation the per-workload reading misses
    assert {w.ref() for w in workloads(shared) if is_pending(w) and violation_for(shared, w)} == set(found)
    if fixture == "bench":
        assert dated > 0  # releases dated some violations: the shared probes were compared


@pytest.mark.parametrize("fixture", ["bench", "snapshots/guarantee-violation", "snapshots/queue-priority",
                                     "snapshots/flavor-conflict", "scenarios/fragmentation-tas"])
def test_fits_shared_by_shape_equal_each_workloads_own(fixture: str, bench_dir: Path) -> None:
    """workload_fit shares one fit among the workloads of a shape holding no quota; each equals the fit
    computed for that workload alone."""
    snap = load_snapshot(str(bench_dir if fixture == "bench" else ROOT / "fixtures" / fixture))
    compared = shared = 0
    seen: set[int] = set()
    for cq, wls in sorted(workloads_by_cluster_queue(snap).items()):
        if cq not in kueue_index(snap).cluster_queues:
            continue
        for w in wls:
            fit = workload_fit(snap, w, cq)
            assert fit == _fit_with_partial(snap, w, cq), w.ref()
            compared += 1
            shared += id(fit) in seen
            seen.add(id(fit))
    assert compared > 0
    if fixture == "bench":
        assert shared > 0  # workloads of one shape did share a fit


def _doc(snap: Snapshot, namespace: str, name: str) -> dict[str, object]:
    verdict = diagnose(snap, resolve(snap, f"workload/{name}", namespace), discover(), Settings())
    doc = json.loads(render_json(verdict))
    for run in doc["checks"]:
        run.pop("durationMs", None)
    return doc


def test_shared_snapshot_verdicts_equal_fresh_ones(bench_dir: Path) -> None:
    """Every pending workload of the first ClusterQueues diagnosed on one snapshot (the memos warm), and a
    sample of them each on a fresh snapshot: the documents are identical."""
    shared = load_snapshot(str(bench_dir))
    queues = sorted(workloads_by_cluster_queue(shared))
    order = [(e.workload.namespace, e.workload.name) for cq in queues for e in pending_queue(shared, cq)]
    assert len(order) >= 10
    docs = {key: _doc(shared, *key) for key in order}
    sample = order[:3] + order[len(order) // 2:len(order) // 2 + 3] + order[-3:]
    for key in sample:
        assert docs[key] == _doc(load_snapshot(str(bench_dir)), *key), key


@pytest.mark.parametrize("fixture", ["bench", "snapshots/frag-h100", "snapshots/frag-h100-tas",
                                     "scenarios/fragmentation-tas", "snapshots/flavor-conflict"])
def test_node_matches_keyed_once_per_pod_spec_equal_fresh_ones(fixture: str, bench_dir: Path) -> None:
    """matching_nodes works out a pod spec's constraint key once per spec object (a pod set is matched against
    each flavor of its ClusterQueue): each match equals the one a fresh snapshot computes for that spec and
    flavor alone, and a spec equal in content but another object gets its own key computed."""
    path = str(bench_dir if fixture == "bench" else ROOT / "fixtures" / fixture)
    snap = load_snapshot(path)
    flavors = list(kueue_index(snap).flavors.values())
    compared = 0
    for w in workloads(snap)[:120]:
        for ps in w.pod_sets:
            for fv in flavors:
                warm = matching_nodes(snap, fv, ps.spec)
                fresh_snap = load_snapshot(path) if compared < 8 else None
                if fresh_snap is not None:
                    fresh = matching_nodes(fresh_snap, kueue_index(fresh_snap).flavors[fv.name], dict(ps.spec))
                    assert [n.name for n in warm.nodes] == [n.name for n in fresh.nodes], (w.ref(), fv.name)
                    assert warm.excluded == fresh.excluded, (w.ref(), fv.name)
                copy = json.loads(json.dumps(ps.spec, default=str))
                assert matching_nodes(snap, fv, copy) is warm  # same constraints: the same memoised match
                compared += 1
    assert compared > 0


def test_constraint_key_is_used_only_for_its_own_spec_object() -> None:
    """The memo holds the spec it was computed from; a different object never reads another's key, even when a
    freed object's id is reused."""
    snap = load_snapshot(str(FIXTURES / "frag-h100"))
    wide = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    key_wide = constraint_key(snap, wide)
    narrow = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
              "nodeSelector": {"zone": "a"}}
    assert constraint_key(snap, narrow) != key_wide
    for _ in range(50):  # short-lived dicts: ids get reused; each must get its own key
        spec = {"containers": [], "nodeSelector": {"n": str(_)}}
        assert json.loads(constraint_key(snap, spec))["nodeSelector"] == {"n": str(_)}
    assert constraint_key(snap, wide) == key_wide


_ALL_FIXTURES = sorted([*(p for p in FIXTURES.iterdir() if (p / "manifest.json").exists()),
                        *(p for p in (ROOT / "fixtures" / "scenarios").iterdir() if (p / "manifest.json").exists())])


@pytest.mark.parametrize("path", [*_ALL_FIXTURES, "bench"], ids=lambda p: str(p).rsplit("/", 1)[-1])
def test_kd201_evaluations_shared_by_shape_equal_each_workloads_own(path: Path | str, bench_dir: Path) -> None:
    """KD201 shares its per-flavor evaluation among the pending workloads of one shape in one ClusterQueue: on
    every fixture, every workload's KD201 result on a snapshot where all the others ran first equals its result
    on a second snapshot where nothing is shared (each evaluation worked out for that workload alone)."""
    from kueuediag_checks.fragmentation import Fragmentation

    from kueuediag.engine import run_check

    where = str(bench_dir if path == "bench" else path)
    shared_snap, alone_snap = load_snapshot(where), load_snapshot(where)
    check, alone = Fragmentation(), Fragmentation()
    alone._evaluations = lambda *args: (alone._evaluate(*args), lambda e: e)  # type: ignore[method-assign]
    evaluated = 0
    evaluate = check._evaluate

    def counted(*args: object) -> object:
        nonlocal evaluated
        evaluated += 1
        return evaluate(*args)  # type: ignore[arg-type]

    check._evaluate = counted  # type: ignore[method-assign,assignment]
    compared = 0
    for w in workloads(shared_snap):
        try:
            target = resolve(shared_snap, f"workload/{w.name}", w.namespace)
            other = resolve(alone_snap, f"workload/{w.name}", w.namespace)
        except KueuediagError:  # a fixture's deliberately unresolvable workload: nothing to compare
            continue
        got, want = run_check(check, shared_snap, target), run_check(alone, alone_snap, other)
        assert got.model_copy(update={"duration_ms": 0}) == want.model_copy(update={"duration_ms": 0}), w.ref()
        compared += 1
    if path == "bench":
        assert compared >= 10 and evaluated < compared / 2  # workloads of one shape did share


_QUOTA_SHORT = ("couldn't assign flavors to pod set {ps}: insufficient unused quota for nvidia.com/gpu in flavor "
                "{flavor}, 4 more needed")


@pytest.mark.parametrize("fixture", ["snapshots/frag-h100-tas", "snapshots/frag-h100"])
def test_kd201_shares_only_among_workloads_of_one_key(fixture: str, tmp_path: Path) -> None:
    """Copies of each pending workload that differ from it only in what the shared evaluation's key holds besides
    the shape (its QuotaReserved message, its topology request, no message at all) sit in the same ClusterQueue
    after it: each gets its own evaluation, equal to the one worked out for it alone."""
    import copy
    import shutil

    import yaml
    from kueuediag_checks.fragmentation import Fragmentation

    from kueuediag.engine import run_check

    src = ROOT / "fixtures" / fixture
    where = tmp_path / "snap"
    shutil.copytree(src, where)
    path = next(p for p in sorted((where / "objects").rglob("*.yaml")) if "kind: Workload\n" in p.read_text())
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    flavors = sorted(kueue_index(load_snapshot(str(src))).flavors)
    variants = []
    for d in docs:
        if d.get("kind") != "Workload" or (d.get("status") or {}).get("admission"):
            continue
        ps = d["spec"]["podSets"][0]["name"]
        for i, change in enumerate(("quota", "topology", "no-message")):
            v = copy.deepcopy(d)
            v["metadata"]["name"] += f"-v{i}"
            v["metadata"]["uid"] = v["metadata"]["uid"][:-2] + f"{i}f"
            conds = v.setdefault("status", {}).setdefault("conditions", [])
            if change == "quota":
                qr = {"type": "QuotaReserved", "status": "False", "reason": "Pending",
                      "lastTransitionTime": "2026-11-28T10:00:00Z",
                      "message": _QUOTA_SHORT.format(ps=ps, flavor=flavors[0])}
                v["status"]["conditions"] = [c for c in conds if c.get("type") != "QuotaReserved"] + [qr]
            elif change == "topology":
                v["spec"]["podSets"][0]["topologyRequest"] = {"required": "kubernetes.io/hostname"}
            else:
                v["status"]["conditions"] = [c for c in conds if c.get("type") != "QuotaReserved"]
            variants.append(v)
    assert variants
    path.write_text(yaml.safe_dump_all(docs + variants))
    shared_snap, alone_snap = load_snapshot(str(where)), load_snapshot(str(where))
    check, alone = Fragmentation(), Fragmentation()
    alone._evaluations = lambda *args: (alone._evaluate(*args), lambda e: e)  # type: ignore[method-assign]
    results = {}
    for w in workloads(shared_snap):  # the originals first, then their copies
        target = resolve(shared_snap, f"workload/{w.name}", w.namespace)
        got = run_check(check, shared_snap, target).model_copy(update={"duration_ms": 0})
        want = run_check(alone, alone_snap, resolve(alone_snap, f"workload/{w.name}", w.namespace))
        assert got == want.model_copy(update={"duration_ms": 0}), w.ref()
        results[w.name] = got
    # the copies did change what KD201 says about some workload (else this test could not see a missing key part)
    changed = [v["metadata"]["name"] for v in variants
               if results[v["metadata"]["name"]].model_dump(exclude={"findings"}) !=
               results[v["metadata"]["name"][:-3]].model_dump(exclude={"findings"})
               or [f.title for f in results[v["metadata"]["name"]].findings] !=
               [f.title for f in results[v["metadata"]["name"][:-3]].findings]]
    assert changed
