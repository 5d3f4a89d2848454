"""Round trips: live `why` equals `why --from` the fixture; `snapshot` then `why --from` keeps the verdict,
with and without `--redact`; written snapshots carry no secrets."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kueuediag.config import Settings
from kueuediag.engine import diagnose
from kueuediag.live import LiveOptions, collect_for_why, take_snapshot
from kueuediag.models import Verdict
from kueuediag.registry import discover
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.snapshot.model import Snapshot
from kueuediag.target import resolve
from tests.live.conftest import LIVE_FIXTURE, ServerFactory
from tests.live.fixture_gen import SECRET_VALUE
from tests.live.verdicts import same_conclusion, same_observations

TARGET, NS = "job/llm-finetune", "team-a"


def disk_snapshot() -> Snapshot:
    return load_snapshot(str(LIVE_FIXTURE))


def verdict_of(snap: Snapshot, target: str = TARGET, ns: str = NS) -> Verdict:
    return diagnose(snap, resolve(snap, target, ns), discover(), Settings())


def summary(v: Verdict) -> list[tuple[Any, ...]]:
    return [(r.finding.code, r.finding.cause, r.finding.severity, r.finding.title,
             tuple((e.source, e.ref, e.field, e.observed, e.expected) for e in r.finding.evidence))
            for r in v.findings]


def opts(srv: Any, tmp_path: Path, **kw: Any) -> LiveOptions:
    return LiveOptions(kubeconfig=str(srv.kubeconfig(tmp_path)), **kw)


def test_live_why_equals_why_from_the_fixture(api_server: ServerFactory, tmp_path: Path) -> None:
    disk = disk_snapshot()
    expected = verdict_of(disk)
    assert expected.cause == "waiting-for-quota"
    with api_server() as srv:
        raw = collect_for_why(TARGET, NS, opts(srv, tmp_path))
    live = Snapshot(raw, now=disk.now)  # the fixture's capture time, so durations compare
    got = verdict_of(live)
    # live `why` takes quota usage from ClusterQueue status (the fixture's status agrees with its Workloads):
    # the same conclusion and the same numbers, only the evidence names its usage source differently
    same_conclusion(got, expected)
    same_observations(got, expected)


def _snapshot(api_server: ServerFactory, tmp_path: Path, out: Path, **kw: Any) -> Any:
    with api_server() as srv:
        return take_snapshot(out, opts(srv, tmp_path, since="6h"), **kw)


def _all_text(path: Path) -> str:
    if path.is_dir():
        return "\n".join(p.read_text() for p in sorted(path.rglob("*")) if p.is_file())
    with tarfile.open(path) as tf:
        return "\n".join(tf.extractfile(m).read().decode() for m in tf.getmembers() if m.isfile())  # type: ignore[union-attr]


@pytest.mark.parametrize("name", ["snap.tar.gz", "snapdir"])
def test_snapshot_then_why_from_gives_the_same_verdict(api_server: ServerFactory, tmp_path: Path,
                                                       name: str) -> None:
    disk = disk_snapshot()
    expected = verdict_of(disk)
    result = _snapshot(api_server, tmp_path, tmp_path / name)
    snap = load_snapshot(str(result.path), now=disk.now)
    got = verdict_of(snap)
    assert got.cause == expected.cause and got.headline == expected.headline
    assert summary(got) == summary(expected)
    m = json.loads((result.path / "manifest.json").read_text()) if result.path.is_dir() else result.raw.manifest
    assert m["format"] == "kueuediag-snapshot/v1" and m["cluster"] == "prod-gpu-1" and m["errors"] == []
    assert m["kueueVersion"] == "v0.19.2" and "namespaces" not in m  # cluster-wide
    # cluster-wide: the unrelated ClusterQueue and its namespace are recorded too
    assert snap.get("ClusterQueue", "misc") is not None and snap.get("Pod", "etl-nightly-x7k2p", "batch-misc")
    text = _all_text(result.path)
    assert SECRET_VALUE not in text
    assert "last-applied-configuration" not in text
    assert "training-secrets" not in text  # envFrom dropped


def test_redacted_snapshot_keeps_the_verdict(api_server: ServerFactory, tmp_path: Path) -> None:
    disk = disk_snapshot()
    expected = verdict_of(disk)
    map_file = tmp_path / "map.json"
    result = _snapshot(api_server, tmp_path, tmp_path / "redacted.tar.gz", redact=True, redact_map=map_file)
    mapping = json.loads(map_file.read_text())["mapping"]
    job, ns = mapping["llm-finetune"], mapping["team-a"]
    assert job != "llm-finetune" and ns.startswith("ns-")
    snap = load_snapshot(str(result.path), now=disk.now)
    got = verdict_of(snap, f"job/{job}", ns)
    assert got.cause == expected.cause
    assert [(r.finding.code, r.finding.cause, r.finding.severity) for r in got.findings] == \
        [(r.finding.code, r.finding.cause, r.finding.severity) for r in expected.findings]
    # titles and evidence say the same with the names replaced
    reverse = {v: k for k, v in mapping.items()}
    def unmap(text: str) -> str:
        for pseudo in sorted(reverse, key=len, reverse=True):
            text = text.replace(pseudo, reverse[pseudo])
        return text
    assert [unmap(r.finding.title) for r in got.findings] == [r.finding.title for r in expected.findings]
    text = _all_text(result.path)
    for secret in ("team-a", "team-b", "llm-finetune", "prod-gpu-1", "gke-a100-pool-1", "nvidia-tesla-a100",
                   "acme-ml", "research", "eval-sweep", SECRET_VALUE):
        assert secret not in text, secret
    for kept in ("nvidia.com/gpu", "kueue.x-k8s.io/queue-name", "kueue.x-k8s.io/job-uid",
                 "cloud.google.com/gke-accelerator", "QuotaReserved", "insufficient unused quota for nvidia.com/gpu"):
        assert kept in text, kept
    assert snap.manifest.cluster == mapping["prod-gpu-1"]
    # the same input maps to the same pseudonym: the ClusterQueue named in the pending message, the
    # LocalQueue's spec.clusterQueue and the Workload's queueName all agree
    lq = snap.get("LocalQueue", mapping["team-a-queue"], ns)
    assert lq is not None and lq["spec"]["clusterQueue"] == mapping["team-a"]
    assert (map_file.stat().st_mode & 0o777) == 0o600


def test_snapshot_command(api_server: ServerFactory, tmp_path: Path) -> None:
    import typer

    from kueuediag.cli.snapshot_cmd import register

    app = typer.Typer()
    register(app)

    @app.command("noop")
    def _noop() -> None:  # a second command keeps typer from collapsing the app into one command
        pass

    out = tmp_path / "cli.tar.gz"
    with api_server() as srv:
        kc = srv.kubeconfig(tmp_path)
        res = CliRunner().invoke(app, ["snapshot", "-o", str(out), "-n", "team-a", "-n", "team-b",
                                       "--kubeconfig", str(kc), "--since", "6h", "--redact",
                                       "--redact-map", str(tmp_path / "m.json"), "--timeout", "30",
                                       "--pending-positions"])
        bad = CliRunner().invoke(app, ["snapshot", "-n", "x", "-A", "--kubeconfig", str(kc)])
    assert res.exit_code == 0, res.output
    assert res.stdout.strip() == str(out)
    assert "recorded" in res.stderr
    snap = load_snapshot(str(out))
    assert snap.manifest.namespaces is not None and len(snap.manifest.namespaces) == 2
    assert not any(o["metadata"].get("namespace") == "batch-misc" for o in snap.of_kind("Pod"))
    # --pending-positions: the visibility API's answer for the queues that report pending work (redacted names)
    assert [len(o["items"]) for o in snap.of_kind("PendingWorkloadsSummary")] == [1, 1]
    assert bad.exit_code == 2 and "either -n NAMESPACE or -A" in bad.stderr


def test_cli_live_why_and_snapshot_then_why_from(api_server: ServerFactory, tmp_path: Path) -> None:
    """The real app: `why` without --from collects live; `snapshot` then `why --from` says the same."""
    from kueuediag.cli import build_app

    app = build_app()
    runner = CliRunner()
    out = tmp_path / "s.tar.gz"
    now = "2026-11-20T10:00:00Z"
    with api_server() as srv:
        kc = str(srv.kubeconfig(tmp_path))
        live = runner.invoke(app, ["why", TARGET, "-n", NS, "--kubeconfig", kc, "--now", now, "-o", "json",
                                   "--save", str(tmp_path / "saved")])
        snap = runner.invoke(app, ["snapshot", "-A", "-o", str(out), "--kubeconfig", kc])
    assert live.exit_code == 0, live.output
    assert snap.exit_code == 0, snap.output
    assert not load_snapshot(str(out)).of_kind("PendingWorkloadsSummary")  # not asked: --pending-positions
    replay = runner.invoke(app, ["why", TARGET, "-n", NS, "--from", str(out), "--now", now, "-o", "json"])
    saved = runner.invoke(app, ["why", TARGET, "-n", NS, "--from", str(tmp_path / "saved"), "--now", now,
                                "-o", "json"])
    disk = runner.invoke(app, ["why", TARGET, "-n", NS, "--from", str(LIVE_FIXTURE), "-o", "json"])
    docs = [json.loads(r.stdout) for r in (live, replay, saved, disk)]
    assert {d["verdict"]["cause"] for d in docs} == {"waiting-for-quota"}
    assert len({d["verdict"]["headline"] for d in docs}) == 1
    assert len({json.dumps([f["title"] for f in d["findings"]]) for d in docs}) == 1
