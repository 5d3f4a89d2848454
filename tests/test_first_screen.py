"""The answer and the fix on the first screen; every printed remediation checked against the model.

Over every bundled fixture target (the demo examples and every case-file target): the verdict box holds the first
fix, the default output fits 45 rows at 100 columns (the longest is printed), printed severities never rise down
the list, and every printed fix that changes the cluster was re-evaluated (verified or a stop-gap). Plus: plain
text for pipes / TERM=dumb / NO_COLOR, `--quiet`, a closed pipe, log lines as `time level message key=value`,
"did you mean" for a mistyped ResourceFlavor, no jargon, and a real terminal (tmux at 80 and 120 columns).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from kueuediag.config import Settings
from kueuediag.engine import diagnose
from kueuediag.examples import list_examples
from kueuediag.fixes import apply, command, parse_command, resolved
from kueuediag.models import FixStatus, Severity, Verdict
from kueuediag.registry import discover
from kueuediag.render.common import log_line
from kueuediag.render.terminal import TOP_FINDINGS, _one_per_cause, display_rows, render_terminal
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.snapshot.model import Snapshot
from kueuediag.snapshot.reader import read_snapshot
from kueuediag.target import resolve
from kueuediag.timeutil import parse_time
from tests.case_runner import FIXTURES, load_cases

ROOT = Path(__file__).resolve().parent.parent
MAX_ROWS = 45
WIDTH = 100


@dataclass
class Diagnosed:
    name: str
    snap: Snapshot
    target: str
    namespace: str | None
    verdict: Verdict
    text: str


def _targets() -> dict[tuple[str, str, str | None, str | None], str]:
    pairs: dict[tuple[str, str, str | None, str | None], str] = {}
    for ex in list_examples():
        pairs[(str(ex.path), ex.target, ex.namespace, None)] = f"example:{ex.name}"
    for c in load_cases():
        pairs.setdefault((str(FIXTURES / c.snapshot), c.target, c.namespace, c.now), c.id)
    return pairs


@pytest.fixture(scope="module")
def diagnosed() -> list[Diagnosed]:
    out = []
    for (path, target, ns, now), name in _targets().items():
        snap = load_snapshot(path, now=parse_time(now) if now else None)
        v = diagnose(snap, resolve(snap, target, ns), discover(), Settings())
        out.append(Diagnosed(name, snap, target, ns, v, render_terminal(v, color=False, width=WIDTH, boxes=False)))
    return out


def _box(text: str) -> str:
    """The verdict box of plain output: from the title to the first blank line."""
    return text.split("\n\n", 1)[0]


def test_default_output_fits_one_screen_and_the_box_holds_the_first_fix(diagnosed: list[Diagnosed]) -> None:
    rows = sorted((display_rows(d.text, WIDTH), d.name) for d in diagnosed)
    print(f"\nlongest default output at {WIDTH} columns over {len(rows)} fixture targets: {rows[-1][0]} rows "
          f"({rows[-1][1]}); median {rows[len(rows) // 2][0]}")
    assert rows[-1][0] <= MAX_ROWS, rows[-3:]
    for d in diagnosed:
        box = _box(d.text)
        assert box.startswith("== kueuediag why ==\nVERDICT "), d.name
        fix = d.verdict.first_fix
        if fix is None and d.verdict.primary is None:
            assert "NEXT STEP: no check found a cause" in box and "kueuediag snapshot --for " in box, d.name
            continue
        if fix is None and not d.name.startswith("example:"):
            assert "NO CHECKED FIX:" in box, f"{d.name}: no first fix and the box does not say why"
            continue
        assert fix is not None, f"{d.name}: the box has no first fix"
        shown = fix.command or fix.text
        assert " ".join(shown.split()) in " ".join(box.split()), f"{d.name}: first fix not in the box"
        if d.verdict.workload.pending_seconds:
            assert "waiting " in box, d.name


def test_printed_severity_never_rises_down_the_list(diagnosed: list[Diagnosed]) -> None:
    order = {s.label.upper(): int(s) for s in Severity}
    for d in diagnosed:
        printed = [order[m] for m in re.findall(r"^\d+\. \[([A-Z]+)\]", d.text, flags=re.M)]
        assert printed == sorted(printed, reverse=True), f"{d.name}: {printed}"


def test_every_printed_change_was_re_evaluated(diagnosed: list[Diagnosed]) -> None:
    """Fixes shown by default (the box and the top findings): a command that changes the cluster is either
    verified on a patched copy of the snapshot or labelled stop-gap; a verified patch is re-checked here,
    independently: applied to the snapshot, the diagnosis no longer has the cause from the same check."""
    rechecked = 0
    for d in diagnosed:
        top = _one_per_cause([r for r in d.verdict.findings if r.finding.about_target])[:TOP_FINDINGS]
        candidates = [(d.verdict.primary.finding if d.verdict.primary else None, d.verdict.first_fix)]
        candidates += [(r.finding, x) for r in top for x in r.finding.fixes]
        for finding, fix in candidates:
            if fix is None or finding is None:
                continue
            mutating = fix.command is not None and parse_command(fix.command) is not None
            if fix.patch is not None or mutating:
                assert fix.status in (FixStatus.VERIFIED, FixStatus.STOP_GAP), \
                    f"{d.name}: {fix.status.value}: {fix.command}"
            if fix.status is FixStatus.VERIFIED and fix.patch is not None:
                assert fix.command == command(fix.patch) or parse_command(fix.command or "") == fix.patch
                w = d.verdict.workload
                raw = apply(d.snap.raw, fix.patch, (w.namespace, w.name) if w.name else None)
                assert raw is not None
                patched = Snapshot(raw, now=d.snap.now)
                after = diagnose(patched, resolve(patched, d.target, d.namespace), discover(), Settings(),
                                 verify_fixes=False)
                assert all(resolved(finding, r.finding) for r in after.findings
                           if r.finding.cause == finding.cause and r.finding.code == finding.code
                           and r.finding.about_target == finding.about_target), f"{d.name}: {fix.command}"
                rechecked += 1
    assert rechecked >= 10, "the bundled fixtures exercise verified patches"


def test_a_fix_that_cannot_help_is_not_printed() -> None:
    """A merge patch with an empty selector changes nothing (RFC 7386): the verifier would drop it."""
    case = next(c for c in load_cases() if c.name.startswith("namespace not matched by the ClusterQueue"))
    snap = load_snapshot(str(FIXTURES / case.snapshot))
    noop = parse_command("kubectl patch clusterqueue vision-only --type merge "
                         "-p '{\"spec\":{\"namespaceSelector\":{}}}'")
    assert noop is not None
    raw = apply(snap.raw, noop)
    assert raw is not None
    patched = Snapshot(raw, now=snap.now)
    after = diagnose(patched, resolve(patched, case.target, case.namespace), discover(), Settings(),
                     verify_fixes=False)
    assert any(r.finding.cause == "namespace-not-selected" for r in after.findings)
    v = diagnose(snap, resolve(snap, case.target, case.namespace), discover(), Settings())
    printed = [x.command for r in v.findings for x in r.finding.fixes if x.command]
    assert not any('"namespaceSelector":{}' in c for c in printed)
    assert any('"namespaceSelector":{"matchLabels":null' in c for c in printed)


def test_a_mistyped_resource_flavor_gets_did_you_mean_and_a_checked_rename() -> None:
    raw = read_snapshot(str(FIXTURES / "snapshots" / "queue-problems"))
    flavor = next(o for o in raw.objects if o.get("kind") == "ResourceFlavor")
    raw.objects.append({**flavor, "metadata": {"name": "h100-reserved5"}})
    snap = Snapshot(raw)
    v = diagnose(snap, resolve(snap, "job/h100-finetune", "vision"), discover(), Settings())
    assert v.cause == "clusterqueue-inactive"
    fix = v.first_fix
    assert fix is not None and "h100-reserved → did you mean h100-reserved5?" in fix.text
    assert fix.status is FixStatus.VERIFIED and fix.command is not None
    assert fix.command.startswith("kubectl patch clusterqueue vision-h100 --type merge -p ")
    assert '"name":"h100-reserved5"' in fix.command


def test_admin_choices_say_whom_to_ask() -> None:
    case = next(c for c in load_cases() if c.name.startswith("LocalQueue stopped with stopPolicy Hold"))
    snap = load_snapshot(str(FIXTURES / case.snapshot))
    v = diagnose(snap, resolve(snap, case.target, case.namespace), discover(), Settings())
    assert v.first_fix is not None and v.first_fix.status is FixStatus.VERIFIED
    assert "ask the namespace's queue owner" in v.first_fix.note
    text = render_terminal(v, color=False, width=WIDTH, boxes=False)
    assert "ask the namespace's queue owner" in _box(text)


def test_log_lines_render_as_time_level_message_pairs() -> None:
    raw = ('logs/kueue-controller-manager.log:32: {"level":"Level(-3)","ts":"2025-09-15T23:19:48.331873041Z",'
           '"logger":"scheduler","caller":"scheduler/logging.go:40","msg":"Workload evaluated for admission",'
           '"schedulingCycle":2731381,"workload":{"name":"job-a","namespace":"team-a"}}')
    assert log_line(raw) == ("2025-09-15T23:19:48Z level-3 Workload evaluated for admission "
                             "schedulingCycle=2731381 workload=team-a/job-a")
    assert log_line("plain text line") == "plain text line"


JARGON = re.compile(r"talk bug|talk step|the talk's|step \d of|V\(\d\)|Level\(-\d\)|‰")


def test_no_jargon_in_what_users_read(diagnosed: list[Diagnosed]) -> None:
    for d in diagnosed:
        verbose = render_terminal(d.verdict, color=False, width=WIDTH, boxes=False, verbose=True)
        assert not JARGON.search(verbose), f"{d.name}: {JARGON.search(verbose)}"
    from kueuediag.causes import all_causes
    from kueuediag.docs import cause_page, check_page

    pages = [check_page(cls) for cls in discover()] + [cause_page(c.slug) for c in all_causes()]
    for page in pages:
        assert not JARGON.search(page), JARGON.search(page)
    for path in list((ROOT / "checks").rglob("*.py")) + list((ROOT / "kueuediag").rglob("*.py")):
        if path.name in ("logs.py", "common.py") and path.parent.name in ("snapshot", "render"):
            continue  # the log parser and formatter name zap's level format to translate it
        text = path.read_text()
        assert not JARGON.search(text), f"{path}: {JARGON.search(text)}"


# --- the CLI in pipes, dumb terminals and real terminals ----------------------------------------------------------
def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kueuediag", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


def test_plain_text_when_piped_dumb_or_no_color() -> None:
    for env in ({}, {"TERM": "dumb", "FORCE_COLOR": ""}, {"NO_COLOR": "1", "FORCE_COLOR": "1"}):
        out = _cli("demo", "guarantee-violation", env={"COLUMNS": "80", **env}).stdout
        assert "\x1b[" not in out and "─" not in out and "╭" not in out, env
        assert out.startswith("== kueuediag why ==\nVERDICT ")
        assert max(len(line) for line in out.splitlines()) <= 80 or "kubectl" in out


def test_quiet_prints_one_line() -> None:
    out = _cli("why", "job/af3-inference-batch-12", "-n", "team-bio", "--from", "example:guarantee-violation",
               "-q").stdout
    assert out.count("\n") == 1 and out.startswith("job/af3-inference-batch-12 is pending after 52m: ")


def test_closed_pipe_ends_quietly_with_status_zero() -> None:
    for cmd in ("demo stuck-preemption-target -v", "checks"):
        proc = subprocess.run(f"{sys.executable} -m kueuediag {cmd} | head -n 1; echo \"rc=${{PIPESTATUS[0]}}\"",
                              shell=True, executable="/bin/bash", capture_output=True, text=True, timeout=120)
        assert proc.stdout.strip().endswith("rc=0"), proc.stdout + proc.stderr
        assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
        assert "BrokenPipe" not in proc.stderr


TMUX = shutil.which("tmux")


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
@pytest.mark.parametrize("columns", [80, 120])
def test_real_terminal_in_tmux(columns: int, tmp_path: Path) -> None:
    """Run `kueuediag demo` in a real pseudo-terminal (tmux) and look at the screen: the rules fit the width,
    colours are on, the box comes first and the first fix's command survives wrapping whole (joined lines)."""
    session = f"kueuediag-{os.getpid()}-{columns}"
    env_file = tmp_path / "run.sh"
    env_file.write_text(f"cd {ROOT}\nunset NO_COLOR FORCE_COLOR COLUMNS\nexport TERM=xterm-256color\n"
                        f"{sys.executable} -m kueuediag demo stuck-preemption-target 2>/dev/null\n"
                        "echo __DONE__\nsleep 30\n")
    base = [str(TMUX), "-L", session]
    subprocess.run([*base, "new-session", "-d", "-s", session, "-x", str(columns), "-y", "100",
                    f"bash {env_file}"], check=True, timeout=30)
    try:
        screen = ""
        for _ in range(120):
            screen = subprocess.run([*base, "capture-pane", "-p", "-t", session, "-S", "-", "-E", "-"],
                                    capture_output=True, text=True, timeout=30).stdout
            if "__DONE__" in screen:
                break
            time.sleep(0.5)
        assert "__DONE__" in screen, screen
        colored = subprocess.run([*base, "capture-pane", "-p", "-e", "-t", session], capture_output=True,
                                 text=True, timeout=30).stdout
        joined = subprocess.run([*base, "capture-pane", "-p", "-J", "-t", session, "-S", "-", "-E", "-"],
                                capture_output=True, text=True, timeout=30).stdout
    finally:
        subprocess.run([*base, "kill-server"], capture_output=True, timeout=30)
    lines = screen.split("__DONE__")[0].rstrip("\n").splitlines()
    assert lines[0].startswith("kueuediag why ─") and len(lines[0]) == columns, lines[0]
    assert lines[1].startswith("VERDICT A preemption victim is stuck")
    assert all(len(line) <= columns for line in lines)
    assert "\x1b[" in colored, "colours in a real terminal"
    assert "    kubectl delete pod sweep-lr-0917-g4-1 -n ml-sweeps --force --grace-period=0" in joined
    box = "\n".join(lines[: lines.index(next(x for x in lines[1:] if x.startswith("─"))) + 1])
    assert "FIRST FIX, CHECKED" in box


def test_readme_sample_is_a_real_run() -> None:
    """The README's sample output is what `kueuediag demo stuck-preemption-target` prints (plain, 100 columns)."""
    out = _cli("demo", "stuck-preemption-target", env={"COLUMNS": "100", "NO_COLOR": "1"}).stdout
    readme = (ROOT / "README.md").read_text()
    assert out.strip("\n") in readme
