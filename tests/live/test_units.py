"""Sanitizer, redactor and writer units, plus collector edge cases (owners, part names in manifest errors)."""

from __future__ import annotations

import copy
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from kueuediag.errors import InputError
from kueuediag.live import LiveOptions, collect_for_why
from kueuediag.live.redact import redact
from kueuediag.live.sanitize import REDACTED, sanitize_args, sanitize_object
from kueuediag.live.write import write_snapshot
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.snapshot.model import Part, Snapshot
from kueuediag.snapshot.reader import RawSnapshot, read_snapshot
from tests.live.apiserver import Fault
from tests.live.conftest import LIVE_FIXTURE, ServerFactory
from tests.live.fixture_gen import large


@pytest.mark.parametrize(("args", "expected"), [
    (["--password=hunter2", "--port=8080"], ["--password=<redacted>", "--port=8080"]),
    (["--token", "abc", "--verbose"], ["--token", REDACTED, "--verbose"]),
    (["--api-key=k", "-p=x", "--db-password", "pw"], ["--api-key=<redacted>", "-p=<redacted>", "--db-password",
                                                       REDACTED]),
    (["--dsn=postgres://admin:pw@db:5432/x"], ["--dsn=<redacted>"]),
    (["--url=https://user:pw@example.com/x", "train.py"], ["--url=https://<redacted>@example.com/x", "train.py"]),
    (["sh", "-c", "export API_TOKEN=abc123 && python t.py"],
     ["sh", "-c", "export API_TOKEN=<redacted> && python t.py"]),
    (["--steps", "1000", "--config", "/c.yaml"], ["--steps", "1000", "--config", "/c.yaml"]),
    # a secret-looking flag name is kept (its value is the next argument), but what it carries is still scrubbed
    (["--tokenhttps://u:pw@host/x", "v"], ["--tokenhttps://<redacted>@host/x", REDACTED]),
])
def test_sanitize_args(args: list[str], expected: list[str]) -> None:
    assert sanitize_args(args) == expected


def test_sanitize_object_strips_and_does_not_mutate() -> None:
    pod: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "n", "annotations": {
            "kubectl.kubernetes.io/last-applied-configuration": '{"env":"secret"}', "team": "ml"},
            "managedFields": [{"manager": "kubectl", "operation": "Apply", "time": "t", "fieldsV1": {"f:x": {}}}]},
        "spec": {"containers": [{"name": "c", "env": [{"name": "A", "value": "v"},
                                                      {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}],
                                 "envFrom": [{"secretRef": {"name": "s"}}],
                                 "resources": {"requests": {"cpu": "1"}}}],
                 "initContainers": [{"name": "i", "env": [{"name": "PASSWORD", "value": "p"}]}]},
    }
    before = copy.deepcopy(pod)
    out = sanitize_object(pod)
    assert pod == before
    c = out["spec"]["containers"][0]
    assert c["env"] == [{"name": "A", "value": REDACTED}, {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]
    assert "envFrom" not in c and c["resources"] == {"requests": {"cpu": "1"}}
    assert out["spec"]["initContainers"][0]["env"] == [{"name": "PASSWORD", "value": REDACTED}]
    assert out["metadata"]["annotations"] == {"team": "ml"}
    assert out["metadata"]["managedFields"] == [{"manager": "kubectl", "operation": "Apply", "time": "t"}]
    cm = sanitize_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}})
    assert cm["data"] == {"k": REDACTED}


def test_writer_round_trips_and_protects_files(tmp_path: Path) -> None:
    raw = read_snapshot(LIVE_FIXTURE)
    for name in ("objects.tar.gz", "x.tgz", "dir"):
        p = write_snapshot(raw, tmp_path / name)
        back = read_snapshot(p)
        assert len(back.objects) == len(raw.objects)
        assert back.manifest == raw.manifest and back.logs == raw.logs and back.metrics == raw.metrics
    assert ((tmp_path / "objects.tar.gz").stat().st_mode & 0o777) == 0o600
    assert ((tmp_path / "dir" / "manifest.json").stat().st_mode & 0o777) == 0o600
    with tarfile.open(tmp_path / "x.tgz") as tf:
        assert all(m.name.startswith("x/") for m in tf.getmembers())
    with pytest.raises(InputError, match="not empty"):
        write_snapshot(raw, tmp_path / "dir")


def _raw() -> RawSnapshot:
    return read_snapshot(LIVE_FIXTURE)


def test_redaction_is_deterministic_and_consistent() -> None:
    a, map_a = redact(_raw())
    b, map_b = redact(_raw())
    assert map_a == map_b and a.objects == b.objects and a.logs == b.logs and a.metrics == b.metrics
    m = map_a["mapping"]
    objs = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in a.objects}
    flavor = objs[("ResourceFlavor", None, m["a100"])]
    node = objs[("Node", None, m["gke-a100-pool-1"])]
    label = "cloud.google.com/gke-accelerator"
    assert flavor["spec"]["nodeLabels"][label] == node["metadata"]["labels"][label] == m["nvidia-tesla-a100"]
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == m["gke-a100-pool-1"]
    assert node["metadata"]["labels"]["kubernetes.io/os"] == "linux"
    cq = objs[("ClusterQueue", None, m["team-a"])]
    assert cq["spec"]["cohortName"] == m["research"]
    assert objs[("Cohort", None, m["research"])]["spec"]["parentName"] == m["org"]
    assert cq["spec"]["resourceGroups"][0]["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu"]
    assert cq["spec"]["resourceGroups"][0]["flavors"][0]["name"] == m["a100"]
    wl = objs[("Workload", m["team-a"], m["job-llm-finetune-a306b"])]
    assert wl["spec"]["queueName"] == m["team-a-queue"]
    assert wl["metadata"]["ownerReferences"][0]["name"] == m["llm-finetune"]
    assert wl["metadata"]["labels"]["kueue.x-k8s.io/job-uid"] == objs[("Job", m["team-a"], m["llm-finetune"])][
        "metadata"]["uid"]
    msg = wl["status"]["conditions"][0]["message"]
    assert msg == ("couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in "
                   f"flavor {m['a100']}, 4 more needed")
    admitted = objs[("Workload", m["team-b"], m["job-pretrain-7b-e06da"])]
    assert set(admitted["status"]["admission"]["podSetAssignments"][0]["flavors"].values()) == {m["a100"]}
    pod = objs[("Pod", m["team-b"], m["pretrain-7b-x7k2p"])]
    assert pod["spec"]["nodeName"] == m["gke-a100-pool-2"]
    assert pod["spec"]["containers"][0]["image"].startswith("image-")
    # kueue-system and its controller stay readable; the public Kueue image is kept
    assert ("Deployment", "kueue-system", "kueue-controller-manager") in objs
    # logs and metrics use the same pseudonyms
    (log,) = a.logs.values()
    first = json.loads(log.splitlines()[0])
    assert first["workload"] == {"name": m["job-llm-finetune-a306b"], "namespace": m["team-a"]}
    assert first["clusterQueue"] == {"name": m["team-a"]}
    (om,) = a.metrics.values()
    assert f'cluster_queue="{m["team-a"]}"' in om and 'resource="nvidia.com/gpu"' in om
    assert 'cluster_queue="team-a"' not in om and om.endswith("# EOF\n")
    assert a.manifest["cluster"] == m["prod-gpu-1"] and a.manifest["redacted"] is True
    snap = Snapshot(a)
    assert snap.get("LocalQueue", m["team-a-queue"], m["team-a"]) is not None


def test_namespace_names_never_leak_into_part_names(api_server: ServerFactory, tmp_path: Path) -> None:
    """A forbidden LIST in a namespace called catalog-nodes-controller marks only the pods part unavailable."""
    text = json.dumps(large(namespaces=1, workloads_per_ns=2, nodes=1, pods_per_node=1))
    objs = json.loads(text.replace("team-000", "catalog-nodes-controller"))
    with api_server(objects=objs, logs={}, secrets=False) as srv:
        srv.cluster.faults.append(Fault(path="^/api/v1/namespaces/catalog-nodes-controller/pods$", status=403))
        raw = collect_for_why("job/job-0001", "catalog-nodes-controller",
                              LiveOptions(kubeconfig=str(srv.kubeconfig(tmp_path))))
    snap = Snapshot(raw)
    assert snap.manifest.errors == (("pods (list)", "cannot list pods in namespace catalog-nodes-controller (403): "
                                                   "need get/list on pods"),)
    assert snap.part_unavailable(Part.PODS) is not None
    assert snap.part_unavailable(Part.NODES) is None
    assert snap.part_unavailable(Part.WORKLOADS) is None
    assert "not collected" not in (snap.part_unavailable(Part.LOGS) or "")
    assert "not collected" not in (snap.part_unavailable(Part.CONTROLLER) or "")


def test_owner_objects_are_fetched_by_discovery(api_server: ServerFactory, tmp_path: Path) -> None:
    raw = _raw()
    objs = [copy.deepcopy(o) for o in raw.objects]
    wl = next(o for o in objs if o["kind"] == "Workload" and o["metadata"]["name"].startswith("job-llm-finetune"))
    js_uid = "5f0e8a52-4d0c-4c55-8f1a-7f0b9a9f0c11"
    wl["metadata"]["name"] = "jobset-sweep-1a2b3"
    wl["metadata"]["ownerReferences"] = [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                                          "name": "sweep", "uid": js_uid, "controller": True}]
    wl["metadata"]["labels"] = {"kueue.x-k8s.io/job-uid": js_uid}
    objs.append({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                 "metadata": {"name": "sweep", "namespace": "team-a", "uid": js_uid,
                              "creationTimestamp": "2026-11-20T09:15:00Z",
                              "labels": {"kueue.x-k8s.io/queue-name": "team-a-queue"}},
                 "spec": {"suspend": True, "replicatedJobs": []}})
    with api_server(objects=objs) as srv:
        raw2 = collect_for_why("jobset/sweep", "team-a", LiveOptions(kubeconfig=str(srv.kubeconfig(tmp_path))))
        paths = [r.path for r in srv.cluster.requests]
    assert "/apis/jobset.x-k8s.io/v1alpha2/namespaces/team-a/jobsets/sweep" in paths
    snap = Snapshot(raw2)
    assert snap.get("JobSet", "sweep", "team-a") is not None
    scope = raw2.manifest["scope"]
    assert scope["clusterQueues"] == ["team-a", "team-b"]
    from kueuediag.target import resolve

    target = resolve(snap, "jobset/sweep", "team-a")
    assert target.workload is not None and target.workload.name == "jobset-sweep-1a2b3"


def test_saved_live_snapshot_loads(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server() as srv:
        raw = collect_for_why("job/llm-finetune", "team-a", LiveOptions(kubeconfig=str(srv.kubeconfig(tmp_path))))
    p = write_snapshot(raw, tmp_path / "out")
    snap = load_snapshot(str(p))
    assert snap.manifest.format == "kueuediag-snapshot/v1"
    assert snap.get("PendingWorkloadsSummary", "team-a") is not None


def test_plain_word_label_values_do_not_rewrite_kueue_messages() -> None:
    raw = _raw()
    for o in raw.objects:
        if o["kind"] == "Job":
            o["metadata"]["labels"]["stage"] = "quota"
    red, mapping = redact(raw)
    m = mapping["mapping"]
    assert m["quota"].startswith("value-")
    job = next(o for o in red.objects if o["kind"] == "Job" and o["metadata"]["name"] == m["llm-finetune"])
    assert job["metadata"]["labels"]["stage"] == m["quota"]
    wl_name = m["job-llm-finetune-a306b"]
    wl = next(o for o in red.objects if o["kind"] == "Workload" and o["metadata"]["name"] == wl_name)
    assert "insufficient unused quota for nvidia.com/gpu" in wl["status"]["conditions"][0]["message"]


def _python(code: str) -> str:
    """What `code` prints in a fresh interpreter (what a module imports depends on what was imported before)."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def test_live_core_imports_no_heavy_or_cli_libraries() -> None:
    code = ("import sys, kueuediag.live, kueuediag.live.collect, kueuediag.live.kube, kueuediag.live.prom, "
            "kueuediag.live.redact, kueuediag.live.sanitize, kueuediag.live.write; "
            "print(','.join(m for m in ('kubernetes', 'prometheus_api_client', 'typer', 'rich', 'requests', 'urllib3') "
            "if m in sys.modules))")
    assert _python(code) == ""


def test_the_snapshot_path_imports_neither_the_analyses_nor_the_loader() -> None:
    """`kueuediag snapshot` collects, sanitises and writes: the message parser's tables and the snapshot
    loader (a third of a second of imports) are for `why`, imported by the functions that use them."""
    code = ("import sys, kueuediag.live.collect, kueuediag.live.write, kueuediag.live.sanitize; "
            "print(','.join(sorted(m for m in sys.modules if m.startswith(('kueuediag.analysis', "
            "'kueuediag.snapshot.loader', 'kueuediag.snapshot.logs', 'kueuediag.snapshot.metrics', "
            "'kueuediag.snapshot.model')))))")
    assert _python(code) == ""
    code = "import kueuediag.snapshot as s; print(s.Snapshot.__name__, s.load_snapshot.__name__, s.Part.__name__)"
    assert _python(code).split() == ["Snapshot", "load_snapshot", "Part"]


def test_collected_objects_are_handed_out_by_kind_namespace_and_name_even_when_a_kind_mixes_scopes() -> None:
    from kueuediag.live.collect import _sorted_keys

    # a missing namespace counts as "" (a cluster-scoped object first within its kind), as it always has
    keys = {("Pod", "b", "x"): 1, ("Event", None, "e2"): 2, ("Pod", "a", "y"): 3, ("Event", "ns", "e1"): 4,
            ("Node", None, "n1"): 5, ("Event", "", "e0"): 6}
    assert _sorted_keys(keys) == [("Event", "", "e0"), ("Event", None, "e2"), ("Event", "ns", "e1"),
                                  ("Node", None, "n1"), ("Pod", "a", "y"), ("Pod", "b", "x")]
    del keys[("Event", None, "e2")], keys[("Event", "", "e0")]
    assert _sorted_keys(keys) == sorted(keys)


def test_a_request_still_in_flight_never_holds_the_process_at_exit() -> None:
    """A LIST's next page and the controller's log are read on daemon threads: a run that ends (or is interrupted)
    while one is still in flight exits at once; a pool's worker thread would be joined at exit, here forever."""
    import subprocess
    import sys

    from kueuediag.live.kube import in_background

    assert in_background(lambda: "log", "t").result(5) == "log"
    with pytest.raises(KeyError):
        in_background(lambda: {}["missing"], "t").result(5)
    code = ("import threading\nfrom kueuediag.live.kube import in_background\n"
            "in_background(threading.Event().wait, 'kueuediag-log')\nprint('done')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout == "done\n"
