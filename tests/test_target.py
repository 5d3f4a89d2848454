"""Target resolution the way Kueue links objects (kueue-facts §7.3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kueuediag.errors import InputError, TargetNotFound
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.snapshot.model import Snapshot
from kueuediag.target import parse_target, resolve

FIX = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture(scope="module")
def spot() -> Snapshot:
    return load_snapshot(str(FIX / "snapshots" / "release-l4-spot"))


@pytest.mark.parametrize(("text", "expected"), [
    ("job/x", ("Job", "batch", "x")),
    ("jobset/x", ("JobSet", "jobset.x-k8s.io", "x")),
    ("wl/x", ("Workload", "kueue.x-k8s.io", "x")),
    ("rayjob.ray.io/x", ("rayjob", "ray.io", "x")),
    ("x", (None, None, "x")),
])
def test_parse_target(text: str, expected: tuple[str | None, str | None, str]) -> None:
    assert parse_target(text) == expected


@pytest.mark.parametrize("bad", ["", "job/", "a/b/c"])
def test_parse_target_rejects_junk(bad: str) -> None:
    with pytest.raises(InputError):
        parse_target(bad)


@pytest.mark.parametrize("text", ["job/whisper-batch", "whisper-batch", "pod/whisper-batch-0-jg6cl",
                                  "workload/job-whisper-batch-588f6", "job-whisper-batch-588f6"])
def test_every_spelling_reaches_the_jobs_workload(spot: Snapshot, text: str) -> None:
    t = resolve(spot, text, "team-nlp")
    assert t.workload is not None and t.workload.name == "job-whisper-batch-588f6"
    assert t.owner_kind == "Job" and t.owner_name == "whisper-batch"


def test_jobset_by_job_uid_label(spot: Snapshot) -> None:
    t = resolve(spot, "jobset/rag-eval", None)
    assert t.workload is not None and t.workload.name == "jobset-rag-eval-aa1a9" and t.namespace == "team-nlp"


def test_pod_group_label() -> None:
    snap = load_snapshot(str(FIX / "snapshots" / "health-zombie-pod-group"))
    t = resolve(snap, "pod/infer-pg-7f9c-0", "team-b")
    assert t.workload is not None and t.workload.name == "infer-pg-7f9c"
    assert t.pod is not None and t.pod["metadata"]["name"] == "infer-pg-7f9c-0"


def test_single_pod_integration_pod_owns_its_workload() -> None:
    snap = load_snapshot(str(FIX / "scenarios" / "slow-preemption"))
    t = resolve(snap, "pod/nlp-sft-llama70b-r8", "team-nlp")
    assert t.workload is not None and t.workload.name == "pod-nlp-sft-llama70b-r8-0e6f2"
    assert t.owner_kind == "Pod"


def test_other_integration_without_workload_is_not_an_error() -> None:
    snap = load_snapshot(str(FIX / "snapshots" / "submission-unmanaged"))
    t = resolve(snap, "rayjob.ray.io/rl-tune", "team-a")
    assert t.workload is None and t.owner_kind == "RayJob" and t.owner_name == "rl-tune"


def test_not_found_lists_closest_names(spot: Snapshot) -> None:
    with pytest.raises(TargetNotFound) as info:
        resolve(spot, "job/whisper-bach", None)
    assert "job/whisper-batch -n team-nlp" in info.value.suggestions
    with pytest.raises(TargetNotFound):
        resolve(spot, "job/whisper-batch", "team-speech")


def test_an_object_without_a_namespace_is_named_not_suggested(tmp_path: Path) -> None:
    """A manifest's JobSet (no metadata.namespace, as `kubectl apply -f` files are written) cannot be selected by
    any `-n`: resolving it says so in one line instead of "not found" with a suggestion of `-n None`."""
    (tmp_path / "objects").mkdir()
    (tmp_path / "objects" / "jobset.yaml").write_text(
        "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n  name: sleep-job\n"
        "  creationTimestamp: '2026-01-01T00:00:00Z'\n  labels: {kueue.x-k8s.io/queue-name: user-queue}\n"
        "spec: {replicatedJobs: []}\n"
        "---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: sleep-jobs\n  namespace: team-a\n"
        "  creationTimestamp: '2026-01-01T00:00:00Z'\nspec: {template: {spec: {containers: []}}}\n")
    snap = load_snapshot(str(tmp_path))
    for text, ns in (("jobset/sleep-job", None), ("sleep-job", None), ("jobset/sleep-job", "default")):
        with pytest.raises(InputError, match=r"JobSet/sleep-job in the snapshot has no metadata\.namespace"):
            resolve(snap, text, ns)
    with pytest.raises(TargetNotFound) as info:
        resolve(snap, "job/sleep-jo", None)
    assert info.value.suggestions == ["job/sleep-jobs -n team-a"]
