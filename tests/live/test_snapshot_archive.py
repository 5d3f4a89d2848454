"""`kueuediag snapshot -A` to an archive, written member by member (kueuediag/live/targz.py): the same files, in
the writer's order, and the same objects as a directory snapshot of the same cluster; a collection cut at the
deadline or missing a forbidden kind still writes a valid partial archive with its manifest errors; a refused
snapshot leaves no file and no compression thread behind."""

from __future__ import annotations

import gzip
import io
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
from kueuediag.snapshot.reader import RawSnapshot, read_snapshot
from tests.live.apiserver import Fault
from tests.live.conftest import ServerFactory


def _key(o: dict[str, Any]) -> tuple[str, str, str]:
    return o["kind"], o["metadata"].get("namespace") or "", o["metadata"]["name"]


def test_the_archive_holds_the_tar_bytes_tarfile_streams(live_raw: RawSnapshot, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(write.time, "time", lambda: 1_700_000_000.0)
    path = write.write_snapshot(live_raw, tmp_path / "snap.tar.gz")
    reference = io.BytesIO()
    with tarfile.open(fileobj=reference, mode="w|") as tf:
        for rel, data in write.snapshot_files(live_raw).items():
            info = tarfile.TarInfo(f"snap/{rel}")
            info.size, info.mtime, info.mode = len(data), 1_700_000_000, 0o600
            tf.addfile(info, io.BytesIO(data))
    assert gzip.decompress(path.read_bytes()) == reference.getvalue()
    assert sorted(map(_key, read_snapshot(path).dicts())) == sorted(map(_key, live_raw.dicts()))


def _live_threads() -> set[str]:
    return {t.name for t in threading.enumerate() if t.name.startswith("kueuediag-gzip")}


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
    """The clock passes the deadline once the jobs are listed: what was listed before and the manifest's errors
    for what came after end up in a valid archive."""
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
