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
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from kueuediag.causes import BY_SLUG, all_causes
from kueuediag.config import Settings
from kueuediag.engine import diagnose
from kueuediag.examples import list_examples
from kueuediag.fixes import apply, command, parse_command, resolved
from kueuediag.models import FixStatus, Severity, Verdict
from kueuediag.registry import discover
from kueuediag.render.common import log_line
from kueuediag.render.terminal import display_rows, render_terminal
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
    """Every bundled fixture target: the demo examples, every case-file target (fixtures/cases over
    fixtures/snapshots), every scenario and every incident (their test modules hold the target lists, and their
    own tests require one entry per fixture folder, so a new fixture is picked up here without editing this)."""
    from tests.test_incidents import CASES as INCIDENTS
    from tests.test_scenarios import CASES as SCENARIOS

    pairs: dict[tuple[str, str, str | None, str | None], str] = {}
    for ex in list_examples():
        pairs[(str(ex.path), ex.target, ex.namespace, None)] = f"example:{ex.name}"
    for c in load_cases():
        pairs.setdefault((str(FIXTURES / c.snapshot), c.target, c.namespace, c.now), c.id)
    for sc in SCENARIOS:
        pairs.setdefault((str(FIXTURES / "scenarios" / sc.name), sc.target, sc.namespace, None), f"scenario:{sc.name}")
    for inc in INCIDENTS:
        pairs.setdefault((str(FIXTURES / "incidents" / inc.slug), inc.target, inc.namespace, None),
                         f"incident:{inc.slug}")
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


# Causes no change to cluster objects cures (kueuediag.causes.NEXT_STEPS): the box shows this kind of next step.
ADVICE_ONLY = {
    "not-yet-evaluated": "wait", "waiting-for-quota": "wait", "queued-behind": "wait",
    "preemption-in-progress": "wait", "admission-check-pending": "investigate", "admission-check-retry": "investigate",
    "podsready-backoff": "wait", "waiting-for-podsready": "investigate",
    "not-pending": "nothing",
    "known-issue": "upgrade",
    "model-disagreement": "investigate", "controller-unhealthy": "investigate",
    "unrecognised-kueue-message": "investigate", "guarantee-violation": "investigate",
    "pods-not-starting": "investigate", "config-change": "investigate", "node-unhealthy": "investigate",
    "admission-gated": "investigate", "foreign-scheduling-gate": "investigate",
    "admission-check-rejected": "investigate",
    "workload-invalid": "resubmit", "topology-no-fit": "resubmit", "flavor-assignment-conflict": "resubmit",
    "no-matching-flavor": "resubmit",
}
ADVICE_WORDS = {"nothing": r"^Nothing to do for Kueue", "upgrade": r"^Upgrade Kueue to v\d"}
"""what the box's next step must say for the kinds that have one fixed wording"""
_RESUBMIT = "the job itself must be resubmitted (Kueue reads its queue label and pod template at creation)"
NO_CHECKABLE_CHANGE: dict[str, str] = {
    "KD001:job without queue-name label in a namespace without a default LocalQueue": _RESUBMIT,
    "KD001:unlabelled job created before the namespace's default LocalQueue": _RESUBMIT,
    "KD001:LocalQueue does not exist (typo)": _RESUBMIT + "; the box names the LocalQueue meant",
    "KD902:v0.12.1 A queue-name label added after creation is never picked up (#5047)": _RESUBMIT,
    "incident:kueue-7929-no-localqueue": _RESUBMIT + " (its Workload has no queue name)",
    "KD001:child Job of a JobSet points at the JobSet's Workload": "the cause belongs to the parent JobSet: the box "
                                                                  "gives its diagnosis",
    "KD001:labelled job in a managed namespace without a Workload yet (seconds old)": "Kueue has not reconciled the "
                                                                                      "job yet: read its log",
    "KD901:job submitted while the controller is down has no Workload; the controller is the explanation":
        "the Kueue controller must run again: nothing to change in the objects",
    "KD003:ClusterQueue inactive - missing AdmissionCheck and TAS Topology":
        "a Topology's levels are the cluster's node labels, which a snapshot cannot pick",
    "KD003:ClusterQueue references an inactive MultiKueue AdmissionCheck": "the AdmissionCheck's own controller "
                                                                           "marks it active",
    "KD003:loose dump without the ClusterQueue - inactive per the condition message only": "the dump lacks the "
                                                                                           "ClusterQueue to change",
    "KD102:a preempted victim requeued and not evaluated since": "no stuck pod in the snapshot: the victim must be "
                                                                 "found first",
    "KD401:released job, PVC never binds (immediate binding, provisioning fails)": "the storage provisioner's error, "
                                                                                  "outside the objects",
    "KD401:a validating webhook refuses Kueue's unsuspend - the log line is cited, the advice is the policy":
        "the webhook's policy is not a snapshot object",
    "KD902:v0.14.2 TAS ignored required node affinity (#7899)": "a Kueue bug: an upgrade",
    "KD902:v0.10.1 TAS counted cordoned nodes as capacity (#4181)": "nodes to repair and uncordon",
    "KD902:v0.10.0 TAS assigned pod sets of one workload independently (#3937)": "a Kueue bug: an upgrade",
    "KD902:v0.18.2 A terminating ClusterQueue stops updating its status (#13757)": "the ClusterQueue is being "
                                                                                   "deleted: recreate it afterwards",
}
"""targets whose cause a cluster change usually cures, but not one the model can apply to this fixture: name → why"""


def test_every_problem_target_has_its_first_fix_in_the_box(diagnosed: list[Diagnosed]) -> None:
    """For every bundled fixture target: a cause that a change cures has a checked fix (verified, or a stop-gap
    saying why) in the box, with its command; a cause the catalog says no change cures has the catalog's kind of
    next step in the box; no cause at all has the snapshot command."""
    assert ADVICE_ONLY == {c.slug: c.next_step.value for c in all_causes() if c.next_step is not None}
    outcome: Counter[str] = Counter()
    problems = []
    for d in diagnosed:
        box = " ".join(_box(d.text).split())
        fix, cause = d.verdict.first_fix, d.verdict.cause
        if d.verdict.primary is None or cause not in BY_SLUG:
            assert fix is not None or "NEXT STEP: no check found a cause" in box, d.name
            outcome["no cause: snapshot command or advice"] += 1
            continue
        step = BY_SLUG[cause].next_step
        if step is None and d.name not in NO_CHECKABLE_CHANGE:
            if fix is None or fix.status not in (FixStatus.VERIFIED, FixStatus.STOP_GAP) or not fix.command:
                problems.append(f"{d.name} ({cause}): {fix.status.value if fix else 'no fix'}: "
                                f"{(fix.text if fix else '')[:100]}")
                continue
            assert " ".join(fix.command.split()) in box, f"{d.name}: the command is not in the box"
            heading = "FIRST FIX, CHECKED:" if fix.status is FixStatus.VERIFIED else "FIRST STOP-GAP:"
            assert heading in box, f"{d.name}: {box[:300]}"
            outcome[f"change cause: {fix.status.value}"] += 1
            continue
        assert fix is not None, f"{d.name} ({cause}): no next step in the box"
        assert " ".join((fix.command or fix.text).split()) in box, f"{d.name}: the next step is not in the box"
        kind = step.value if step is not None else "no checkable change"
        if step is not None and kind in ADVICE_WORDS and fix.status is FixStatus.ADVICE:
            if not re.search(ADVICE_WORDS[kind], fix.text):
                problems.append(f"{d.name} ({cause}, {kind}): {fix.text[:120]}")
        outcome[f"{kind}: {fix.status.value}"] += 1
    print(f"\n{len(diagnosed)} fixture targets checked: " + ", ".join(f"{k} {n}" for k, n in sorted(outcome.items())))
    assert not problems, "\n".join(problems)
    by_name = {d.name: d for d in diagnosed}
    for name in NO_CHECKABLE_CHANGE:  # the exceptions stay true: drop one once its target gets a checked fix
        d = by_name[name]
        fix = d.verdict.first_fix
        assert BY_SLUG[d.verdict.cause].next_step is None, f"{name}: the catalog covers it now"
        assert fix is None or fix.status is FixStatus.ADVICE, f"{name}: has a checked fix now"


def test_printed_severity_never_rises_down_the_list(diagnosed: list[Diagnosed]) -> None:
    order = {s.label.upper(): int(s) for s in Severity}
    for d in diagnosed:
        printed = [order[m] for m in re.findall(r"^\d+\. \[([A-Z]+)\]", d.text, flags=re.M)]
        assert printed == sorted(printed, reverse=True), f"{d.name}: {printed}"


def test_every_printed_change_was_re_evaluated(diagnosed: list[Diagnosed]) -> None:
    """Every remediation printed for every bundled fixture target (`-v` prints them all): none is 'not checked';
    a command that changes the cluster is either verified on a patched copy of the snapshot or labelled stop-gap
    (with the reason when it cannot be simulated); a verified patch is re-checked here, independently: applied to
    the snapshot, the diagnosis no longer has the cause (or its blockers) from the same check."""
    rechecked = 0
    statuses: Counter[str] = Counter()
    for d in diagnosed:
        candidates = [(d.verdict.primary.finding if d.verdict.primary else None, d.verdict.first_fix)]
        candidates += [(r.finding, x) for r in d.verdict.findings for x in r.finding.fixes]
        for finding, fix in candidates:
            if fix is None or finding is None:
                continue
            statuses[fix.status.value] += 1
            assert fix.status is not FixStatus.UNVERIFIED, f"{d.name}: not checked: {fix.command or fix.text}"
            if fix.status is FixStatus.STOP_GAP and fix.patch is None and fix.command:
                assert fix.reason, f"{d.name}: a stop-gap command without the reason it is one: {fix.command}"
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
    print(f"\nprinted remediations over {len(diagnosed)} targets: {dict(statuses)}; {rechecked} verified patches "
          "re-checked")
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
