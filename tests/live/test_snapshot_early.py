"""`kueuediag snapshot` to an archive encodes and compresses each kind's List files as soon as that kind's LIST
ends, while the next LISTs travel: the archive holds the same files and objects as one written after the
collection (the same tar bytes), a file whose objects changed later is written from the final objects, and a
collection cut mid-way or refused still ends as before (a valid partial archive with its manifest errors, or no
file at all)."""

from __future__ import annotations

import gzip
import json
import tarfile
import threading
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kueuediag.cli import build_app
from kueuediag.errors import ExitCode
from kueuediag.live import LiveOptions, take_snapshot, write
from kueuediag.live.kube import KubeClient
from kueuediag.live.write import EarlyFiles, write_snapshot
from kueuediag.snapshot.reader import RawSnapshot, read_snapshot
from tests.live.apiserver import Fault
from tests.live.conftest import ServerFactory


def _plain(raw: RawSnapshot) -> RawSnapshot:
    """The fixture as a collection holds it: plain dicts in snapshot order (kind, namespace, name)."""
    objs = sorted(raw.dicts(), key=_key)
    return RawSnapshot(source="live:test", manifest=dict(raw.manifest), objects=list(objs), metrics=dict(raw.metrics),
                       logs=dict(raw.logs))


def _key(o: dict[str, Any]) -> tuple[str, str, str]:
    return o["kind"], o["metadata"].get("namespace") or "", o["metadata"]["name"]


def _of(raw: RawSnapshot, *kinds: str) -> list[dict[str, Any]]:
    return [o for o in raw.dicts() if o["kind"] in kinds]


def _live_threads() -> set[str]:
    return {t.name for t in threading.enumerate() if t.name.startswith(("kueuediag-encode", "kueuediag-gzip"))}


def test_early_files_give_the_same_archive_and_follow_later_changes(
        live_raw: RawSnapshot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(write.time, "time", lambda: 1_700_000_000.0)
    raw = _plain(live_raw)
    (tmp_path / "after").mkdir()
    after = write_snapshot(raw, tmp_path / "after" / "snap.tar.gz")

    encoded_here: list[tuple[str, str | None]] = []  # (kind, namespace) of the List files encoded at the end
    list_file = write.list_file

    def spy(objs: list[dict[str, Any]]) -> bytes:
        if threading.current_thread() is threading.main_thread():
            encoded_here.append((objs[0]["kind"], objs[0]["metadata"].get("namespace")))
        return list_file(objs)

    monkeypatch.setattr(write, "list_file", spy)
    early = EarlyFiles(tmp_path / "snap.tar.gz", workers=2)
    try:
        early.add(_of(raw, "LocalQueue", "Workload"))
        early.add(_of(raw, "Pod"))
        # a later step reads one pod again (as the Kueue controller's pods are): its file must hold the new one
        i, pod = next((i, o) for i, o in enumerate(raw.objects) if isinstance(o, dict) and o["kind"] == "Pod")
        newer = json.loads(json.dumps(pod))
        newer["status"]["phase"] = "Succeeded"
        raw.objects[i] = newer
        (tmp_path / "early").mkdir()
        written = write_snapshot(raw, tmp_path / "early" / "snap.tar.gz", early)
    finally:
        early.close()
    assert _live_threads() == set()
    pod_ns = pod["metadata"]["namespace"]
    assert ("Workload", "team-a") not in encoded_here and ("LocalQueue", "team-a") not in encoded_here
    assert ("Pod", pod_ns) in encoded_here  # changed after it was handed over: encoded again
    assert any(k == "Pod" and ns != pod_ns for k, ns in _of_files(raw, "Pod")) and not any(
        k == "Pod" and ns != pod_ns for k, ns in encoded_here)  # the other pod files were taken as encoded
    assert ("ClusterQueue", None) in encoded_here  # never handed over

    # the same tar bytes as the archive written after the collection, but for the one pod that changed
    raw.objects[i] = pod
    assert gzip.decompress(written.read_bytes()) != gzip.decompress(after.read_bytes())
    back = read_snapshot(written)
    got = next(o for o in back.dicts() if o["kind"] == "Pod" and o["metadata"]["name"] == pod["metadata"]["name"]
               and o["metadata"]["namespace"] == pod_ns)
    assert got["status"]["phase"] == "Succeeded"
    early = EarlyFiles(tmp_path / "snap.tar.gz")
    try:
        early.add(_of(raw, "LocalQueue", "Workload", "Pod", "Job", "Event", "Node"))
        (tmp_path / "again").mkdir()
        again = write_snapshot(raw, tmp_path / "again" / "snap.tar.gz", early)
    finally:
        early.close()
    assert gzip.decompress(again.read_bytes()) == gzip.decompress(after.read_bytes())


def _of_files(raw: RawSnapshot, kind: str) -> set[tuple[str, str | None]]:
    return {(o["kind"], o["metadata"].get("namespace")) for o in _of(raw, kind)}


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(build_app(), list(args), env={"NO_COLOR": "1", "KUEUEDIAG_DEBUG": ""})
    return result.exit_code, result.stdout, result.stderr


def _members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path, mode="r|gz") as tf:
        return {m.name.split("/", 1)[1]: tf.extractfile(m).read() for m in tf if m.isfile()}  # type: ignore[union-attr]


def test_snapshot_all_namespaces_archive_matches_a_directory_snapshot(api_server: ServerFactory,
                                                                      tmp_path: Path) -> None:
    with api_server() as srv:
        kc = str(srv.kubeconfig(tmp_path))
        code, _, err = _run("snapshot", "-A", "--kubeconfig", kc, "-o", str(tmp_path / "all.tar.gz"))
        assert code == ExitCode.OK, err
        code, _, err = _run("snapshot", "-A", "--kubeconfig", kc, "-o", str(tmp_path / "all-dir"))
        assert code == ExitCode.OK, err
    members = _members(tmp_path / "all.tar.gz")
    files = {str(p.relative_to(tmp_path / "all-dir")): p.read_bytes()
             for p in sorted((tmp_path / "all-dir").rglob("*")) if p.is_file()}
    parts = [sorted(k for k in files if k.startswith(top)) for top in ("objects/", "metrics/", "logs/")]
    assert list(members) == ["manifest.json", *parts[0], *parts[1], *parts[2]]  # the writer's order, as before
    assert {k: v for k, v in members.items() if k != "manifest.json"} == \
        {k: v for k, v in files.items() if k != "manifest.json"}
    assert "objects/namespaces/team-a/workload.json" in members and "objects/cluster/clusterqueue.json" in members
    assert read_snapshot(tmp_path / "all.tar.gz").dicts() == read_snapshot(tmp_path / "all-dir").dicts()
    assert _live_threads() == set()


def test_snapshot_cut_at_the_deadline_writes_what_it_has(api_server: ServerFactory, tmp_path: Path) -> None:
    """The clock passes the deadline once the jobs are listed: the pods and workloads handed over early, the jobs
    just listed, and the manifest's errors for what came after all end up in a valid archive."""
    with api_server() as srv:
        requests = srv.cluster.requests
        now = [0.0]

        def clock() -> float:
            if any(r.path == "/apis/batch/v1/jobs" for r in requests):
                now[0] = 100.0
            return now[0]

        o = LiveOptions(kubeconfig=str(srv.kubeconfig(tmp_path)), timeout=30)
        client = KubeClient.from_kubeconfig(o.kubeconfig, None, timeout=30, clock=clock)
        result = take_snapshot(tmp_path / "cut.tar.gz", o, client=client)
    errors = {e["what"]: e["error"] for e in result.raw.manifest["errors"]}
    assert errors["events (list)"] == "not collected: --timeout reached"
    back = read_snapshot(result.path)
    assert back.manifest["partial"] is True and back.manifest["errors"] == result.raw.manifest["errors"]
    kinds = {o["kind"] for o in back.dicts()}
    assert {"Workload", "Pod", "Job", "LocalQueue"} <= kinds and "Event" not in kinds
    assert sorted(back.dicts(), key=_key) == sorted(result.raw.dicts(), key=_key)
    assert _live_threads() == set()


def test_snapshot_with_a_forbidden_list_keeps_the_other_kinds(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server() as srv:
        srv.cluster.faults.append(Fault(path=r"^/api/v1/pods$", status=403))
        code, _, err = _run("snapshot", "-A", "--kubeconfig", str(srv.kubeconfig(tmp_path)),
                            "-o", str(tmp_path / "part.tar.gz"))
    assert code == ExitCode.OK, err
    assert "not collected: pods (list): cannot list pods across all namespaces (403)" in err
    back = read_snapshot(tmp_path / "part.tar.gz")
    assert back.manifest["partial"] is True
    kinds = {o["kind"] for o in back.dicts()}
    assert {"Workload", "Job", "Event"} <= kinds


def test_a_refused_snapshot_leaves_no_file_and_no_threads(api_server: ServerFactory,
                                                                   tmp_path: Path) -> None:
    with api_server() as srv:  # collected, then refused: nothing to diagnose in the context's namespace
        kc = str(srv.kubeconfig(tmp_path, namespace="nobody-here"))
        code, _, err = _run("snapshot", "--kubeconfig", kc, "-o", str(tmp_path / "empty.tar.gz"))
    assert code == ExitCode.USAGE and "nothing to record" in err
    assert list(tmp_path.glob("*.tar.gz")) == [] and list(tmp_path.glob(".empty.tar.gz*")) == []
    assert _live_threads() == set()
