"""`kueuediag snapshot` made for tickets: the context namespace by default, no empty snapshots, `--for TARGET`
recorded for `why --from` without a target, JSON objects, the redaction map beside (never inside) the archive,
and `why` translating real names through the map."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kueuediag.cli import build_app
from kueuediag.errors import ExitCode
from tests.live.conftest import ServerFactory


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(build_app(), list(args), env={"NO_COLOR": "1", "KUBECONFIG": ""})
    return result.exit_code, result.stdout, result.stderr


def _members(path: Path) -> list[str]:
    with tarfile.open(path) as tf:
        return [m.name.split("/", 1)[1] for m in tf.getmembers() if m.isfile()]


def test_snapshot_defaults_to_the_context_namespace_records_the_target_and_writes_json(
        api_server: ServerFactory, tmp_path: Path) -> None:
    out = tmp_path / "ticket.tar.gz"
    with api_server() as srv:
        kc = str(srv.kubeconfig(tmp_path, namespace="team-a"))
        code, stdout, err = _run("snapshot", "--kubeconfig", kc, "-o", str(out), "--for", "job/llm-finetune")
    assert code == ExitCode.OK, err
    assert stdout.strip() == str(out)
    members = _members(out)
    assert "objects/namespaces/team-a/workload.json" in members
    assert not any(m.endswith((".yaml", ".yml")) for m in members)
    # only the context namespace's own objects (pods elsewhere are recorded only for the nodes they occupy)
    assert not any(m.startswith("objects/namespaces/team-b/") and not m.endswith("/pod.json") for m in members)
    with tarfile.open(out) as tf:
        manifest = json.loads(tf.extractfile(next(m for m in tf.getmembers()  # type: ignore[union-attr]
                                                  if m.name.endswith("manifest.json"))).read())
    assert manifest["namespaces"] == ["team-a"]
    assert manifest["target"] == {"target": "job/llm-finetune", "namespace": "team-a"}
    assert "recorded target job/llm-finetune -n team-a" in err
    # `why --from` without a target diagnoses the recorded one
    code, stdout, err = _run("why", "--from", str(out), "-o", "json")
    assert code == ExitCode.OK, err
    doc = json.loads(stdout)
    assert doc["workload"]["owner"] == {"kind": "Job", "name": "llm-finetune"}
    assert doc["workload"]["namespace"] == "team-a"
    assert "diagnosing job/llm-finetune -n team-a (recorded in the snapshot)" in err


def test_snapshot_refuses_to_write_an_empty_snapshot(api_server: ServerFactory, tmp_path: Path) -> None:
    out = tmp_path / "empty.tar.gz"
    with api_server() as srv:
        kc = str(srv.kubeconfig(tmp_path, namespace="nobody-here"))
        code, stdout, err = _run("snapshot", "--kubeconfig", kc, "-o", str(out))
    assert code == ExitCode.USAGE
    assert stdout == "" and not out.exists()
    assert err.startswith("kueuediag: error: nothing to record: namespace(s) nobody-here has no Workloads")
    assert err.count("\n") == 1


def test_snapshot_for_a_missing_target_is_not_found(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server() as srv:
        kc = str(srv.kubeconfig(tmp_path, namespace="team-a"))
        code, _, err = _run("snapshot", "--kubeconfig", kc, "-o", str(tmp_path / "x.tar.gz"),
                            "--for", "job/llm-finetun")
    assert code == ExitCode.NOT_FOUND and "job/llm-finetune" in err
    assert not (tmp_path / "x.tar.gz").exists()


def test_redaction_map_goes_beside_the_archive_and_why_translates_real_names(
        api_server: ServerFactory, tmp_path: Path) -> None:
    out = tmp_path / "redacted.tar.gz"
    with api_server() as srv:
        kc = str(srv.kubeconfig(tmp_path))
        code, _, err = _run("snapshot", "--kubeconfig", kc, "-A", "-o", str(out), "--redact",
                            "--for", "job/llm-finetune", "-n", "team-a")
        assert code == ExitCode.USAGE and "either -n NAMESPACE or -A" in err
        code, _, err = _run("snapshot", "--kubeconfig", kc, "-o", str(out), "--redact", "-n", "team-a",
                            "--for", "job/llm-finetune")
    assert code == ExitCode.OK, err
    map_path = tmp_path / "redacted.tar.gz.redaction-map.json"
    assert map_path.is_file() and f"redaction map (keep private, do not attach): {map_path}" in err
    members = _members(out)
    assert not any("redaction" in m for m in members)
    text = "".join(tarfile.open(out).extractfile(m).read().decode()  # type: ignore[union-attr]
                   for m in tarfile.open(out).getmembers() if m.isfile())
    assert "llm-finetune" not in text and "team-a" not in text
    names = json.loads(map_path.read_text())["mapping"]
    # the real name plus the map → the pseudonym is printed and diagnosed
    code, stdout, err = _run("why", "job/llm-finetune", "-n", "team-a", "--from", str(out),
                             "--redact-map", str(map_path), "-o", "json")
    assert code == ExitCode.OK, err
    assert (f"job/llm-finetune -n team-a is job/{names['llm-finetune']} -n {names['team-a']} "
            "in this redacted snapshot") in err
    assert json.loads(stdout)["workload"]["owner"]["name"] == names["llm-finetune"]
    # the recorded target was redacted too
    code, stdout, _ = _run("why", "--from", str(out), "-o", "json")
    assert code == ExitCode.OK and json.loads(stdout)["workload"]["namespace"] == names["team-a"]


def test_redaction_map_inside_a_directory_snapshot_is_refused(api_server: ServerFactory, tmp_path: Path) -> None:
    out = tmp_path / "snapdir"
    with api_server() as srv:
        kc = str(srv.kubeconfig(tmp_path, namespace="team-a"))
        code, _, err = _run("snapshot", "--kubeconfig", kc, "-o", str(out), "--redact",
                            "--redact-map", str(out / "map.json"))
    assert code == ExitCode.USAGE and "must not be written inside the snapshot" in err
    assert not out.exists()


def test_snapshot_keeps_its_objects_for_the_fast_exit(api_server: ServerFactory, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Run as its own process, `snapshot` hands what it collected to the process end instead of freeing every
    object when the command returns (a quarter of a second on a quarter-size cluster)."""
    from kueuediag.cli.common import _ProcessEnd
    from kueuediag.live import SnapshotResult

    retained: list[object] = []
    monkeypatch.setattr(_ProcessEnd, "fast_exit", True)
    monkeypatch.setattr(_ProcessEnd, "retained", retained)
    out = tmp_path / "all.tar.gz"
    with api_server() as srv:
        code, _, err = _run("snapshot", "-A", "--kubeconfig", str(srv.kubeconfig(tmp_path)), "-o", str(out))
    assert code == ExitCode.OK, err
    kept = [r for r in retained if isinstance(r, SnapshotResult)]
    assert len(kept) == 1 and kept[0].path == out
    assert {str(o.get("kind")) for o in kept[0].raw.dicts()} >= {"Workload", "ClusterQueue", "Pod"}
