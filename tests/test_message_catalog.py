"""The catalog of Kueue's messages (kueuediag/data/messages.yaml): each entry against its own example, the version
boundaries learned from Kueue's source, and what happens to text the catalog does not know."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
import yaml

from kueuediag.analysis.messages import (
    CatalogEntry,
    api_rejection,
    catalog,
    catalog_versions,
    classify,
    cq_inactive_parts,
    entry,
    parse_pending_message,
    queue_status,
    rejected_checks,
    signal,
    waits_for_preemption,
)
from kueuediag.analysis.versions import parse_version
from kueuediag.causes import BY_SLUG

ENTRIES = catalog()


@pytest.mark.parametrize("e", ENTRIES, ids=lambda e: e.id)
def test_example_classifies_back_to_its_entry_and_cause(e: CatalogEntry) -> None:
    concrete = "%" not in e.example and ("%" not in e.template or e.example != e.template)
    assert concrete, f"{e.id}: the example must be a concrete message"
    got = classify(e.condition, e.example, reason=e.reasons[0], status=e.status)
    assert e.id in [x.id for x in got.entries], f"{e.id}: {e.example!r} classified as {[x.id for x in got.entries]}"
    assert e.cause in got.causes
    assert got.recognised, f"{e.id}: left over {got.unrecognised}"


@pytest.mark.parametrize("e", catalog(), ids=lambda e: e.id)
def test_literal_pretest_never_hides_a_match(e: CatalogEntry) -> None:
    """`may_match` skips compiling and running a template only where it cannot match: never on its own example,
    nor on any other entry's example it matches."""
    examples = [x.example for x in catalog()]
    for text in examples:
        if e.pattern.search(text):
            assert e.may_match(text), text
            assert e.search(text) is not None
    assert e.may_match(e.example)


def test_literal_pretest_reads_the_text_every_match_starts_with() -> None:
    unused, lq = entry("insufficient-unused-quota"), entry("lq-missing")
    assert unused.may_match("couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor x")
    assert not unused.may_match("LocalQueue team-a doesn't exist")
    assert lq.may_match("LocalQueue team-a doesn't exist")
    assert not lq.may_match("the LocalQueue team-a doesn't exist")  # anchored: only at the start
    assert lq.search("the LocalQueue team-a doesn't exist") is None


@pytest.mark.parametrize("e", ENTRIES, ids=lambda e: e.id)
def test_entry_fields_are_well_formed(e: CatalogEntry) -> None:
    assert e.cause in BY_SLUG, f"{e.id}: unknown cause {e.cause}"
    assert e.part in ("whole", "flavor", "suffix", "condition", "check", "queue", "fragment")
    assert e.source.endswith(".go") and e.source.startswith(("pkg/", "apis/"))
    lo, hi = parse_version(e.since), parse_version(e.until)
    assert lo is not None and hi is not None and lo <= hi
    assert e.reasons, f"{e.id}: no reason"


def test_catalog_covers_every_minor_from_v0_9_to_v0_19() -> None:
    assert catalog_versions() == tuple(f"v0.{n}" for n in range(9, 20))
    assert len({e.id for e in ENTRIES}) == len(ENTRIES)
    for minor in catalog_versions():
        assert [e for e in ENTRIES if e.exists_in(minor)], minor


@pytest.mark.parametrize(
    ("entry_id", "present", "absent"),
    [
        ("namespace-mismatch-legacy", "v0.17.8", "v0.18.0"),  # the scheduler's capital W until v0.17
        ("namespace-mismatch", "v0.18.0", "v0.17.8"),
        ("exceeds-max-quota", "v0.13.0", "v0.12.10"),  # 'previously considered podsets requests' since v0.13
        ("exceeds-max-quota-v2", "v0.12.10", "v0.13.0"),
        ("podsready-legacy", "v0.10.6", "v0.11.0"),
        ("podsready-started", "v0.11.0", "v0.10.6"),
        ("evicted-admission-check", "v0.17.8", "v0.18.0"),  # 'At least one admission check is false'
        ("evicted-admission-check-retry", "v0.18.0", "v0.17.8"),
        ("deactivation-check-rejected-legacy", "v0.17.8", "v0.18.0"),
        ("admission-gated", "v0.17.0", "v0.16.9"),
        ("dra-deviceclass-unmapped", "v0.15.0", "v0.14.8"),
        ("lq-active-legacy", "v0.9.5", "v0.10.0"),  # 'to clusterQueue' became 'to localQueue' in v0.10
        ("lq-active", "v0.10.0", "v0.9.5"),
        ("cq-part-multikueue-with-provisioning", "v0.16.0", "v0.15.8"),
        ("cq-part-tas-multikueue", "v0.14.8", "v0.15.0"),
        ("cq-part-tas-provisioning", "v0.11.9", "v0.12.0"),
        ("cq-part-tas-cohorts", "v0.10.6", "v0.11.0"),
    ],
)
def test_version_boundaries_learned_from_the_release_tags(entry_id: str, present: str, absent: str) -> None:
    e = entry(entry_id)
    assert e.exists_in(present) is True
    assert e.exists_in(absent) is False
    assert e.exists_in(None) is None


def test_unknown_reason_is_kept_verbatim_next_to_the_known_one() -> None:
    msg = ("couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, 3 more "
           "needed, flavor default is reserved for maintenance window")
    got = classify("QuotaReserved", msg, reason="Pending", status="False")
    assert [e.id for e in got.entries] == ["insufficient-unused-quota"]
    assert got.unrecognised == ("flavor default is reserved for maintenance window",)
    pm = parse_pending_message(msg)
    assert [r.kind for r in pm.reasons] == ["insufficient-unused-quota", "other"]
    assert pm.reasons[0].amount == Decimal(3)


def test_whole_unknown_message_is_unrecognised_but_other_controllers_text_is_not() -> None:
    assert classify("Evicted", "Evicted by the cluster janitor", reason="Janitor", status="True").unrecognised == (
        "Evicted by the cluster janitor",)
    # Finished carries the job's own message; third-party admission checks write their own text
    assert classify("Finished", "Job failed: BackoffLimitExceeded", reason="Failed", status="True").recognised
    assert classify("AdmissionCheck", "waiting for budget approval", status="Pending").recognised
    assert classify("example.com/Custom", "anything", status="True").recognised


def test_commas_inside_taints_and_tas_exclusions_do_not_split_reasons() -> None:
    msg = ("couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor on-demand, 5 more "
           "needed, untolerated taint {key val NoSchedule <nil>} in flavor spot-tainted")
    pm = parse_pending_message(msg)
    assert [(r.kind, r.flavor) for r in pm.reasons] == [("insufficient-unused-quota", "on-demand"),
                                                      ("untolerated-taint", "spot-tainted")]
    assert not pm.unrecognised
    tas = ('couldn\'t assign flavors to pod set main: topology "default" doesn\'t allow to fit any of 1 pod(s). '
           'Total nodes: 4; excluded: nodeSelector: 2, resource "cpu": 1, taint "key=value:NoSchedule": 1')
    (r,) = parse_pending_message(tas).reasons
    assert r.kind == "topology-no-fit"
    assert r.extra == {"unit": "pod", "total": "4",
                       "excluded": 'nodeSelector: 2, resource "cpu": 1, taint "key=value:NoSchedule": 1'}


def test_two_pod_sets_and_the_preemption_suffix() -> None:
    msg = ("couldn't assign flavors to pod set driver: flavor cpu-only does not provide resource nvidia.com/gpu; "
           "couldn't assign flavors to pod set workers: insufficient unused quota for nvidia.com/gpu in flavor h100, "
           "8 more needed. Pending the preemption of 2 workload(s)")
    pm = parse_pending_message(msg)
    assert [(r.pod_set, r.kind) for r in pm.reasons] == [("driver", "flavor-missing-resource"),
                                                       ("workers", "insufficient-unused-quota")]
    assert pm.preempting == 2 and waits_for_preemption(msg)
    got = classify("QuotaReserved", msg, status="False")
    assert "pending-preemption" in [e.id for e in got.entries] and got.recognised


def test_eviction_message_carried_by_quota_reserved_and_requeued() -> None:
    msg = "Exceeded the PodsReady timeout team-a/job-train-7c1e2"
    assert [e.id for e in classify("QuotaReserved", msg, reason="PodsReadyTimeout", status="False").entries] == [
        "evicted-podsready-timeout"]
    assert [e.id for e in classify("Requeued", msg, reason="PodsReadyTimeout", status="False").entries] == [
        "evicted-podsready-timeout"]
    dra = ('spec.podSets[0].template.spec.resourceClaims[0].resourceClaimTemplateName: Not found: "DeviceClass '
           'gpu.example.com is not mapped in DRA configuration for podset main"')
    assert classify("Requeued", dra, reason="Inadmissible", status="False").causes == ("workload-invalid",)


@pytest.mark.parametrize(
    ("message", "names"),
    [
        ('AdmissionCheck in Rejected state: "dws-prov" (the request was rejected)', ["dws-prov"]),
        ('The workload is deactivated due to AdmissionChecks in Rejected state: "a" (x; y); "b"', ["a", "b"]),
        ("Admission check(s): [dws-prov multikueue], were rejected", ["dws-prov", "multikueue"]),
        ("Admission check(s): dws-prov,mk, were rejected", ["dws-prov", "mk"]),
        ("The workload is deactivated", []),
    ],
)
def test_rejected_checks_in_every_wording(message: str, names: list[str]) -> None:
    assert rejected_checks(message) == names


@pytest.mark.parametrize(
    ("text", "kind", "name"),
    [
        ('admission webhook "jobs.policy.example.com" denied the request: only at night', "admission webhook",
         "jobs.policy.example.com"),
        ('pods "p" is forbidden: violates PodSecurity "restricted:latest": privileged', "PodSecurity",
         'violates PodSecurity "restricted:latest"'),
        ("Job.batch \"train\" is invalid: spec.template: Invalid value: ...: field is immutable", "immutable field",
         "field is immutable"),
    ],
)
def test_api_rejection_of_kueues_own_writes(text: str, kind: str, name: str) -> None:
    rej = api_rejection(text)
    assert rej is not None and (rej.kind, rej.name) == (kind, name)
    assert api_rejection("Operation cannot be fulfilled on jobs.batch: the object has been modified") is None


# --- the queue objects: LocalQueue, ClusterQueue, Cohort --------------------------------------------------------

REFERENCE = Path(__file__).resolve().parent.parent.parent / "shared" / "kueue-reference"


@pytest.mark.parametrize("kind", ["LocalQueue", "ClusterQueue"])
def test_every_queue_condition_has_a_true_and_a_false_message_in_every_version(kind: str) -> None:
    for cond in queue_status()[kind].conditions:
        for minor in catalog_versions():
            if not (parse_version(cond.since) <= parse_version(minor) <= parse_version(cond.until)):  # type: ignore[operator]
                continue
            written = {e.status for e in ENTRIES if e.condition == f"{kind}.{cond.type}" and e.exists_in(minor)}
            assert written >= {"True", "False"}, f"{kind}.{cond.type} at {minor}: only {written}"


def _crd_status(kind: str) -> dict[str, set[str]]:
    doc = yaml.safe_load((REFERENCE / f"kueue.x-k8s.io_{kind.lower()}s.yaml").read_text())
    return {v["name"]: set(v["schema"]["openAPIV3Schema"]["properties"].get("status", {}).get("properties", {}))
            for v in doc["spec"]["versions"]}


def test_a_cohort_carries_no_condition_and_the_crd_agrees() -> None:
    if not REFERENCE.is_dir():
        pytest.skip(f"upstream CRDs not available: {REFERENCE}")
    cohort = queue_status()["Cohort"]
    assert cohort.conditions == ()
    assert [f.field for f in cohort.fields] == ["status.fairSharing.weightedShare"]
    assert {v: s for v, s in _crd_status("Cohort").items()} == {"v1beta1": {"fairSharing"}, "v1beta2": {"fairSharing"}}
    for kind in ("LocalQueue", "ClusterQueue"):
        assert all("conditions" in s for s in _crd_status(kind).values()), kind
        assert [c.type for c in queue_status()[kind].conditions] == ["Active"]


def test_the_cohort_cycle_signal_names_the_workload_message_kueue_writes() -> None:
    sig = signal("cohort-cycle")
    assert (sig.since, sig.until, sig.cause) == ("v0.9", "v0.19", "clusterqueue-inactive")
    got = classify("QuotaReserved", "ClusterQueue physics is inactive", reason="Pending", status="False")
    assert [e.id for e in got.entries] == [sig.workload_entry]
    assert entry(sig.workload_entry).cause == sig.cause
    with pytest.raises(KeyError):
        signal("no-such-signal")


@pytest.mark.parametrize(
    ("message", "parts"),
    [
        ("Can't admit new workloads: references missing ResourceFlavor(s): [a100 h100].",  # v0.9 - v0.11
         {"missing-flavors": ["a100", "h100"]}),
        ("Can't admit new workloads: is stopped, references missing ResourceFlavor(s): a100,h100, references "
         "inactive AdmissionCheck(s): mk.", {"stopped": [], "missing-flavors": ["a100", "h100"],
                                             "inactive-checks": ["mk"]}),
        ("Can't admit new workloads: Cannot use both MultiKueue and ProvisioningRequest AdmissionChecks together, "
         "found: mk-eu, dws-prov.", {"multikueue-with-provisioning": ["mk-eu"]}),
        ('Can\'t admit new workloads: there is no Topology "dc" for TAS flavor "tas-h100".',
         {"missing-topology": ["dc"]}),
        ("Can't admit new workloads; clusterQueue is terminating", {"terminating": []}),
        ("Can admit new workloads", {}),
    ],
)
def test_cluster_queue_inactive_message_is_read_piece_by_piece(message: str, parts: dict[str, list[str]]) -> None:
    assert cq_inactive_parts(message) == parts
    got = classify("ClusterQueue.Active", message, status="False" if parts else "True")
    assert got.recognised
    assert {e.id.removeprefix("cq-part-") for e in got.entries if e.part == "fragment"} == set(parts) - {"terminating"}
