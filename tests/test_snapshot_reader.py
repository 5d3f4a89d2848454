"""Every layout kubectl writes, and one-line errors for broken input."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from kueuediag.errors import InputError
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.snapshot.model import Part, Snapshot
from kueuediag.snapshot.reader import read_snapshot

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1", "namespace": "ns", "uid": "u1",
                                                       "creationTimestamp": "2026-01-01T00:00:00Z"}}
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "creationTimestamp": "2026-01-02T00:00:00Z"}}


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_plain_kubectl_folder_nested_lists_and_multidoc(tmp_path: Path) -> None:
    _write(tmp_path / "a" / "pods.json", json.dumps({"apiVersion": "v1", "kind": "List", "items": [POD]}))
    _write(tmp_path / "b" / "c" / "node.yaml", "---\n" + json.dumps(NODE) + "\n---\n")
    _write(tmp_path / "typed.json", json.dumps({"apiVersion": "v1", "kind": "NodeList",
                                                "items": [{"metadata": {"name": "n2"}}]}))
    snap = load_snapshot(str(tmp_path))
    assert {o["metadata"]["name"] for o in snap.of_kind("Node")} == {"n1", "n2"}
    assert snap.get("Pod", "p1", "ns") is not None
    # no manifest: now = newest timestamp in the objects
    assert snap.now.isoformat() == "2026-01-02T00:00:00+00:00"


def test_single_file_is_read_as_objects(tmp_path: Path) -> None:
    f = tmp_path / "one.yaml"
    f.write_text(json.dumps(POD))
    raw = read_snapshot(f)
    assert [o["kind"] for o in raw.objects] == ["Pod"]


def test_tarball_with_top_folder_is_read_in_memory(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in {
            "snap/manifest.json": json.dumps({"format": "kueuediag-snapshot/v1", "capturedAt": "2026-02-01T00:00:00Z"}),
            "snap/objects/pods.yaml": json.dumps(POD),
            "snap/metrics/kueue.om": "# EOF\n",
            "snap/logs/kueue.log": '{"level":"info","msg":"hi"}\n',
        }.items():
            info = tarfile.TarInfo(name)
            payload = data.encode()
            info.size = len(payload)
            tf.addfile(info, io.BytesIO(payload))
    path = tmp_path / "snap.tar.gz"
    path.write_bytes(buf.getvalue())
    snap = load_snapshot(str(path))
    assert snap.now.isoformat() == "2026-02-01T00:00:00+00:00"
    assert list(snap.metrics_text) == ["metrics/kueue.om"]
    assert list(snap.logs_text) == ["logs/kueue.log"]
    assert snap.part_unavailable(Part.NODES) == "no Node objects in this snapshot"
    assert snap.part_unavailable(Part.PODS) is None


def test_truncated_tarball(tmp_path: Path) -> None:
    src = tmp_path / "x.tar.gz"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        payload = json.dumps(POD).encode() * 200
        info = tarfile.TarInfo("objects/p.json")
        info.size = len(payload)
        tf.addfile(info, io.BytesIO(payload))
    src.write_bytes(buf.getvalue()[: len(buf.getvalue()) // 2])
    with pytest.raises(InputError, match="unreadable or truncated archive"):
        load_snapshot(str(src))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("kind: Pod\napiVersion: v1\nmetadata: {name: [unclosed\n", r"invalid YAML at line \d+"),
        ("- just\n- a list\n", "expected a Kubernetes object, got list"),
        ("apiVersion: v1\nmetadata: {name: x}\n", "object has no 'kind'"),
        ("kind: Pod\nmetadata: {name: x}\n", "Pod has no 'apiVersion'"),
        ("kind: Pod\napiVersion: v1\nmetadata: {}\n", "Pod has no metadata.name"),
        ("apiVersion: kueue.x-k8s.io/v9\nkind: ClusterQueue\nmetadata: {name: cq}\n",
         "unsupported apiVersion kueue.x-k8s.io/v9"),
    ],
)
def test_malformed_objects_give_one_line_errors(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "objects").mkdir()
    (tmp_path / "objects" / "bad.yaml").write_text(content)
    with pytest.raises(InputError, match=message) as info:
        load_snapshot(str(tmp_path))
    assert "\n" not in str(info.value)


def test_invalid_json_and_manifest(tmp_path: Path) -> None:
    (tmp_path / "objects").mkdir()
    (tmp_path / "objects" / "x.json").write_text("{nope")
    with pytest.raises(InputError, match=r"objects/x.json: invalid JSON"):
        load_snapshot(str(tmp_path))
    (tmp_path / "objects" / "x.json").write_text(json.dumps(POD))
    (tmp_path / "manifest.json").write_text(json.dumps({"format": "other/v9"}))
    with pytest.raises(InputError, match="unsupported format 'other/v9'"):
        load_snapshot(str(tmp_path))
    (tmp_path / "manifest.json").write_text(json.dumps({"capturedAt": "yesterday"}))
    with pytest.raises(InputError, match="invalid capturedAt"):
        load_snapshot(str(tmp_path))


def test_missing_path_and_empty_dir(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        load_snapshot(str(tmp_path / "nope"))
    with pytest.raises(InputError, match="no Kubernetes objects"):
        load_snapshot(str(tmp_path))


def test_secrets_are_dropped_and_duplicates_keep_newest(tmp_path: Path) -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"}, "data": {"a": "b"}}
    old = dict(POD, metadata=dict(POD["metadata"], resourceVersion="5", labels={"v": "old"}))
    new = dict(POD, metadata=dict(POD["metadata"], resourceVersion="9", labels={"v": "new"}))
    (tmp_path / "objects").mkdir()
    (tmp_path / "objects" / "a.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List",
                                                             "items": [secret, new]}))
    (tmp_path / "objects" / "b.json").write_text(json.dumps(old))
    snap = load_snapshot(str(tmp_path))
    assert snap.of_kind("Secret") == []
    assert [p["metadata"]["labels"]["v"] for p in snap.of_kind("Pod")] == ["new"]


def test_manifest_errors_mark_parts_unavailable(tmp_path: Path) -> None:
    (tmp_path / "objects").mkdir()
    (tmp_path / "objects" / "p.json").write_text(json.dumps(POD))
    (tmp_path / "manifest.json").write_text(json.dumps({
        "format": "kueuediag-snapshot/v1", "capturedAt": "2026-01-01T00:00:00Z",
        "errors": [{"what": "nodes (list)", "error": "forbidden: need list nodes"}]}))
    snap = Snapshot(read_snapshot(tmp_path))
    assert snap.part_unavailable(Part.NODES) == "not collected (nodes (list): forbidden: need list nodes)"


def test_malformed_metrics_are_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "objects").mkdir()
    (tmp_path / "objects" / "p.json").write_text(json.dumps(POD))
    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "kueue.om").write_text('kueue_pending_workloads{cluster_queue="a" 3 1700000000\n# EOF\n')
    with pytest.raises(InputError, match=r"metrics/kueue.om:1"):
        load_snapshot(str(tmp_path))


def test_last_applied_annotation_is_dropped_at_load(tmp_path: Path) -> None:
    """kubectl's last-applied copy of an object is never read: it is not kept in memory."""
    pod = json.loads(json.dumps(POD))
    pod["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": json.dumps(POD),
                                      "team": "ml"}
    _write(tmp_path / "pods.json", json.dumps({"apiVersion": "v1", "kind": "List", "items": [pod, NODE]}))
    snap = load_snapshot(str(tmp_path))
    got = snap.get("Pod", "p1", "ns")
    assert got is not None and got["metadata"]["annotations"] == {"team": "ml"}
    assert "annotations" not in (snap.get("Node", "n1") or {})["metadata"]


def test_json_the_fast_parser_refuses_reads_like_the_standard_parser(tmp_path: Path) -> None:
    """orjson refuses 65-bit integers and NaN; the standard parser's reading is kept for them."""
    _write(tmp_path / "pod.json", json.dumps(POD)[:-1] + ', "spec": {"priority": 123456789012345678901234567890, '
                                                         '"weight": NaN}}')
    snap = load_snapshot(str(tmp_path))
    spec = (snap.get("Pod", "p1", "ns") or {})["spec"]
    assert spec["priority"] == 123456789012345678901234567890 and spec["weight"] != spec["weight"]
    _write(tmp_path / "pod.json", '\ufeff' + json.dumps(POD))
    with pytest.raises(InputError, match=r"pod.json: invalid JSON \(Unexpected UTF-8 BOM"):
        load_snapshot(str(tmp_path))
    (tmp_path / "pod.json").write_bytes(json.dumps(POD).encode()[:-2] + b'\xff"}}')
    with pytest.raises(InputError, match=r"pod.json: not UTF-8 text \(byte"):
        load_snapshot(str(tmp_path))
