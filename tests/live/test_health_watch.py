"""`health` live and `--watch` against the local Kubernetes API server: one collection per cycle, bounded
requests, changes between cycles highlighted, Ctrl-C ends cleanly with exit 0."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kueuediag.cli import build_app
from kueuediag.cli.health_cmd import collect_live, render_report
from kueuediag.cli.watch import optional_watch_value, watch_loop
from kueuediag.config import Settings
from kueuediag.health.build import build_report
from kueuediag.health.changes import report_changes
from kueuediag.health.model import HealthReport
from kueuediag.models import Severity
from kueuediag.registry import discover
from tests.live.conftest import ServerFactory

HEAD = "job-llm-finetune-a306b"


def _admit(objects: list[dict[str, Any]]) -> None:
    """What Kueue does when the head gets quota: QuotaReserved and Admitted turn True."""
    for o in objects:
        if o.get("kind") == "Workload" and o["metadata"]["name"] == HEAD:
            conds = [c for c in o.setdefault("status", {}).get("conditions", [])
                     if c["type"] not in ("QuotaReserved", "Admitted")]
            for t in ("QuotaReserved", "Admitted"):
                conds.append({"type": t, "status": "True", "reason": t, "message": "",
                              "lastTransitionTime": "2026-11-20T10:00:00Z"})
            o["status"]["conditions"] = conds


def _stop_queue(objects: list[dict[str, Any]], name: str) -> None:
    for o in objects:
        if o.get("kind") == "ClusterQueue" and o["metadata"]["name"] == name:
            o["spec"]["stopPolicy"] = "Hold"
            o.setdefault("status", {})["conditions"] = [
                {"type": "Active", "status": "False", "reason": "Stopped", "message": "ClusterQueue is stopped",
                 "lastTransitionTime": "2026-11-20T10:00:00Z"}]


def test_watch_highlights_what_changed_between_cycles(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server() as srv:
        settings = Settings(fail_on=Severity.HIGH, kubeconfig=str(srv.kubeconfig(tmp_path)), color=False)
        requests_per_cycle: list[int] = []
        shown: list[list[str] | None] = []

        def cycle() -> HealthReport:
            before = len(srv.cluster.requests)
            report = build_report(collect_live(settings, None, None), discover(), settings)
            requests_per_cycle.append(len(srv.cluster.requests) - before)
            return report

        def show(cur: HealthReport, prev: HealthReport | None, n: int) -> str:
            changes = report_changes(prev, cur) if prev is not None else None
            shown.append(changes)
            return render_report(cur, settings, changes=changes)

        def between_cycles(_: float) -> None:  # the cluster moves on while we sleep
            with srv.cluster.lock:
                _admit(srv.cluster.objects)
                _stop_queue(srv.cluster.objects, "team-b")

        last, n = watch_loop(cycle, show, interval=0, count=2, clear=False, sleep=between_cycles)
        assert {r.method for r in srv.cluster.requests} == {"GET"}
    assert n == 2 and last is not None
    assert shown[0] is None
    assert shown[1] is not None
    assert f"no longer pending (admitted or gone): team-a/{HEAD} (was head of team-a)" in shown[1]
    assert "ClusterQueue team-b became inactive (Stopped: ClusterQueue is stopped)" in shown[1]
    assert "now failing: queue-inactive ClusterQueue/team-b" in shown[1]
    # one bounded collection per cycle: the same number of requests each time, and not many
    assert requests_per_cycle[0] == requests_per_cycle[1] and requests_per_cycle[0] <= 40


def test_watch_cli_cycles_and_stops_cleanly(api_server: ServerFactory, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    with api_server() as srv:
        kc = str(srv.kubeconfig(tmp_path))
        result = CliRunner().invoke(build_app(), ["health", "--kubeconfig", kc, "--watch", "0", "--watch-count", "2",
                                                  "--no-color"])
        assert result.exit_code == 0, result.stderr
        assert "cycle 1 · every 0s" in result.stdout and "cycle 2 · every 0s" in result.stdout
        assert result.stdout.count("kueuediag health") == 2

        import kueuediag.health.build as build

        real = build.build_report
        calls = {"n": 0}

        def interrupted(*args: Any, **kw: Any) -> HealthReport:
            calls["n"] += 1
            if calls["n"] == 2:
                raise KeyboardInterrupt
            return real(*args, **kw)

        monkeypatch.setattr(build, "build_report", interrupted)
        result = CliRunner().invoke(build_app(), ["health", "--kubeconfig", kc, "--watch", "0", "--no-color"])
    assert result.exit_code == 0
    assert "watch stopped after 1 cycle(s)" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_live_health_once_and_unreachable(api_server: ServerFactory, tmp_path: Path) -> None:
    with api_server() as srv:
        result = CliRunner().invoke(build_app(), ["health", "--kubeconfig", str(srv.kubeconfig(tmp_path)),
                                                  "-o", "json"])
    assert result.exit_code == 0, result.stderr
    assert '"schema": "kueuediag/health/v1"' in result.stdout
    cfg = tmp_path / "nowhere.yaml"
    cfg.write_text("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:9'}\n"
                   "contexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\n"
                   "users:\n- name: u\n  user: {token: t}\n")
    down = CliRunner().invoke(build_app(), ["health", "--kubeconfig", str(cfg), "--timeout", "5"])
    assert down.exit_code == 4, down.stderr
    assert "Traceback" not in down.stderr


def test_watch_takes_an_optional_interval() -> None:
    assert optional_watch_value(["health", "--watch"]) == ["health", "--watch", "30"]
    assert optional_watch_value(["health", "--watch", "-o", "json"]) == ["health", "--watch", "30", "-o", "json"]
    assert optional_watch_value(["health", "--watch", "5", "-A"]) == ["health", "--watch", "5", "-A"]


def test_why_watch_says_the_workload_was_admitted(api_server: ServerFactory, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    with api_server() as srv:
        def admit_instead_of_sleeping(_: float) -> None:
            with srv.cluster.lock:
                _admit(srv.cluster.objects)

        monkeypatch.setattr(time, "sleep", admit_instead_of_sleeping)
        result = CliRunner().invoke(build_app(), [
            "why", "job/llm-finetune", "-n", "team-a", "--kubeconfig", str(srv.kubeconfig(tmp_path)),
            "--watch", "1", "--watch-count", "2", "--no-color"])
    assert result.exit_code == 0, result.stderr
    first, second = result.stdout.split("cycle 1 · every 1s · Ctrl-C to stop\n")
    assert "waiting-for-quota" in first
    assert "⟳ admitted: state pending → admitted" in second
    assert "⟳ cause changed: waiting-for-quota → " in second
    assert second.rstrip().endswith("cycle 2 · every 1s · Ctrl-C to stop")
    bad = CliRunner().invoke(build_app(), ["why", "job/x", "--from", "example:healthy", "--watch", "1"])
    assert bad.exit_code == 2 and "--watch needs live mode" in bad.stderr
