"""Semver ranges, the log-signature library and the known-issues table."""

from __future__ import annotations

import pytest

from kueuediag.analysis.signatures import (
    BY_ID,
    SIGNATURES,
    TEXT_HINTS,
    Signature,
    cause_for_reason,
    fixed_version_for,
    is_fixed,
    parse_version,
    satisfies,
    scan,
)
from kueuediag.causes import BY_SLUG
from kueuediag.models import Severity
from kueuediag.snapshot.logs import LogLine, parse_log_line, parse_log_text


def test_parse_version() -> None:
    v = parse_version("v0.13.2")
    assert v is not None and (v.major, v.minor, v.patch, v.pre) == (0, 13, 2, ())
    assert str(parse_version("0.14")) == "v0.14.0"
    assert str(parse_version("v0.20.0-devel")) == "v0.20.0-devel"
    assert str(parse_version("v0.13.2-12-gabc1234")) == "v0.13.2"  # git describe
    assert parse_version("latest") is None and parse_version("") is None and parse_version(None) is None


def test_ordering_and_prereleases() -> None:
    def v(text: str) -> object:
        return parse_version(text)

    assert v("v0.14.0-rc.1") < v("v0.14.0") < v("v0.14.1")  # type: ignore[operator]
    assert v("v0.14.0-rc.2") < v("v0.14.0-rc.10")  # type: ignore[operator]
    assert v("v0.9.9") < v("v0.10.0")  # type: ignore[operator]
    assert v("v1.0.0") > v("v0.99.99")  # type: ignore[operator]


@pytest.mark.parametrize(("version", "spec", "expected"), [
    ("v0.13.4", ">=v0.13.0, <v0.13.5", True),
    ("v0.13.5", ">=v0.13.0, <v0.13.5", False),
    ("0.12.9", "<0.13", True),
    ("v0.14.0-rc.1", "<v0.14.0", True),
    ("v0.19.2", "==v0.19.2", True),
    ("v0.19.2", "!=v0.19.2", False),
])
def test_satisfies(version: str, spec: str, expected: bool) -> None:
    assert satisfies(version, spec) is expected


def test_satisfies_rejects_bad_spec() -> None:
    with pytest.raises(ValueError):
        satisfies("v0.13.0", ">=banana")


@pytest.mark.parametrize(("version", "fixed"), [
    ("v0.12.7", False), ("v0.12.8", True), ("v0.12.12", True),
    ("v0.13.2", False), ("v0.13.3", True),
    ("v0.11.9", False),  # no cherry-pick on that line
    ("v0.14.0-rc.1", False), ("v0.14.0", True), ("v0.19.2", True),
])
def test_is_fixed_with_cherry_picks(version: str, fixed: bool) -> None:
    # fair-sharing rounding #6577: PR #6617 in v0.14.0, cherry-picks v0.13.3 and v0.12.8
    assert is_fixed(version, ("v0.14.0", "v0.13.3", "v0.12.8")) is fixed


def test_fixed_version_for_prefers_same_line() -> None:
    fixes = ("v0.14.0", "v0.13.5", "v0.12.10")
    assert fixed_version_for("v0.13.2", fixes) == "v0.13.5"
    assert fixed_version_for("v0.12.3", fixes) == "v0.12.10"
    assert fixed_version_for("v0.11.2", fixes) == "v0.14.0"


def test_signatures_name_catalog_causes_and_are_unique() -> None:
    ids = [s.id for s in SIGNATURES]
    assert len(ids) == len(set(ids))
    for s in SIGNATURES:
        assert s.cause in BY_SLUG, s.id
    assert {s.id for s in SIGNATURES if s.decisive} == {"evaluated-for-admission", "preempted"}
    assert BY_ID["evaluated-for-admission"].min_verbosity == 3
    with pytest.raises(ValueError):
        Signature("empty", "t", "m", "waiting-for-quota", Severity.LOW)


@pytest.mark.parametrize(("line", "sig_id"), [
    ('{"level":"Level(-2)","msg":"Workload requires preemption, but there are no candidate workloads allowed for '
     'preemption","workload":{"name":"w","namespace":"n"}}', "no-preemption-candidates"),
    ('{"level":"Level(-2)","msg":"Start the eviction of the workload due to exceeding the PodsReady timeout",'
     '"workload":{"name":"w","namespace":"n"}}', "podsready-timeout-eviction"),
    ('{"level":"error","msg":"Reconciler error","error":"Internal error occurred: failed calling webhook '
     '\\"mworkload.kb.io\\": x"}', "webhook-error"),
    ('{"level":"Level(-3)","msg":"Updating workload","error":"Operation cannot be fulfilled on '
     'workloads.kueue.x-k8s.io \\"w\\": the object has been modified; please apply your changes to the latest '
     'version and try again"}',
     "api-conflict"),
    ('{"level":"error","msg":"x","error":"the server could not find the requested resource"}', "api-not-found"),
    ("E0101 00:00:00.000000       1 leaderelection.go:1] failed to renew lease kueue-system/x: timed out",
     "leader-election-lost"),
    ('{"level":"error","msg":"Observed a panic","panic":"runtime error"}', "panic"),
    ('{"level":"Level(-3)","msg":"Workload is inadmissible because the LocalQueue is stopped"}', "localqueue-stopped"),
    ('{"level":"Level(-3)","msg":"Workload is evicted because the ClusterQueue is stopped"}', "clusterqueue-stopped"),
    ('{"level":"Level(-2)","msg":"ClusterQueue for workload didn\'t exist; ignored for now"}', "clusterqueue-missing"),
    ('{"level":"Level(-3)","msg":"Preempted","targetWorkload":{"name":"v","namespace":"n"},'
     '"preemptingWorkload":{"name":"w","namespace":"n"}}', "preempted"),
    ('{"level":"Level(-3)","msg":"Workload evaluated for admission","workload":{"name":"w","namespace":"n"},'
     '"status":"skipped","reason":"Workload has overlapping preemption targets with another workload"}',
     "overlapping-preemption-targets"),
])
def test_signature_matches(line: str, sig_id: str) -> None:
    parsed = parse_log_line("f", 1, line)
    assert BY_ID[sig_id].matches(parsed)
    assert sig_id in {h.signature.id for h in scan([parsed])}  # through the substring pre-filter too


def test_text_hints_cover_every_text_alternative() -> None:
    import re

    for sig in SIGNATURES:
        if sig.text is None:
            continue
        for alt in re.split(r"\|(?![^(]*\))", sig.text):
            plain = alt.replace("\\", "")
            assert any(h in plain for h in TEXT_HINTS), f"{sig.id}: no hint covers {alt!r}"


def test_scan_ignores_unrelated_lines() -> None:
    quiet = parse_log_text("f", '{"level":"info","msg":"Reconcile LocalQueue"}\nplain words')
    assert scan(quiet) == []


def test_requeue_loops_split_by_reason_and_threshold() -> None:
    def requeue(i: int, reason: str) -> str:
        return ('{"level":"Level(-2)","ts":"2026-01-01T00:MM:00Z","msg":"Workload re-queued",'
                '"workload":{"name":"w","namespace":"n"},"requeueReason":"RR"}').replace("MM", f"{i:02d}").replace(
                    "RR", reason)

    lines = parse_log_text("f", "\n".join(requeue(i * 3, "PendingPreemption") for i in range(6)))
    hits = {h.signature.id: h for h in scan(lines)}
    assert "requeue-loop" not in hits
    pending = hits["requeue-loop-pending-preemption"]
    assert pending.key == "n/w" and pending.count == 6 and pending.span_seconds == 900 and pending.noteworthy
    assert pending.cause == "slow-preemption" and not pending.escalated
    hours = scan(parse_log_text("f", "\n".join(
        requeue(i, "PendingPreemption").replace("T00:", f"T0{i}:") for i in range(6))))
    [long_wait] = hours
    assert long_wait.span_seconds > 3600 and long_wait.escalated and long_wait.cause == "stuck-preemption-target"
    few = scan(parse_log_text("f", "\n".join(requeue(i, "NoFit") for i in range(9))))
    assert [(h.signature.id, h.noteworthy) for h in few] == [("requeue-loop", False)]  # 9 < 10


def test_overlap_needs_a_long_period() -> None:
    text = "\n".join(
        '{"level":"Level(-3)","ts":"2026-01-01T00:0%d:00Z","msg":"Workload evaluated for admission",'
        '"workload":{"name":"w","namespace":"n"},"status":"skipped",'
        '"reason":"Workload has overlapping preemption targets with another workload"}'.replace("%d", str(i))
        for i in range(6))
    hit = next(h for h in scan(parse_log_text("f", text)) if h.signature.id == "overlapping-preemption-targets")
    assert hit.count == 6 and not hit.noteworthy  # 5 minutes is normal operation, not a stuck victim


@pytest.mark.parametrize(("reason", "cause"), [
    ("couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, 1 more needed",
     "waiting-for-quota"),
    ("couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, 2 more needed. "
     "Pending the preemption of 1 workload(s)", "preemption-in-progress"),
    ("couldn't assign flavors to pod set main: insufficient quota for cpu in flavor default, previously considered "
     "podsets requests (0) + current podset request (10) > maximum capacity (8)", "exceeds-max-quota"),
    ("Workload has overlapping preemption targets with another workload", "stuck-preemption-target"),
    ("Workload no longer fits after processing another workload", "queued-behind"),
    ("workload namespace doesn't match ClusterQueue selector", "namespace-not-selected"),
    ("couldn't assign flavors to pod set main: flavor a doesn't match node affinity", "no-matching-flavor"),
    ('topology "default" doesn\'t allow to fit any of 1 pod(s)', "topology-no-fit"),
    ("something new", None),
])
def test_cause_for_reason(reason: str, cause: str | None) -> None:
    assert cause_for_reason(reason) == cause


def test_literal_prefixes_of_message_patterns() -> None:
    from kueuediag.analysis.signatures import literal_prefixes

    assert literal_prefixes(r"^Workload re-queued$") == ("Workload re-queued",)
    assert literal_prefixes(r"^Workload couldn't be admitted\.") == ("Workload couldn't be admitted",)
    assert literal_prefixes(r"^Workload is (inadmissible|evicted) because") == ("Workload is ",)
    assert literal_prefixes(r"^A thing|^Another thing") == ("A thing", "Another thing")
    assert literal_prefixes(r"^ab*c") == ("a",)  # b is optional: only "a" is certain
    assert literal_prefixes(r"^a|b") is None  # the second alternative can start anywhere
    assert literal_prefixes(r"Preempted") is None
    # a class holding ')' or '|' neither closes a group nor splits alternatives
    assert literal_prefixes(r"^a[)|]b|c") is None
    assert literal_prefixes(r"^x[^)]y|^z") == ("x", "z")
    assert BY_ID["clusterqueue-missing"].msg_prefixes == (
        "ClusterQueue for workload didn't exist; ignored for now",
        "Workload is inadmissible because the ClusterQueue is terminating or missing")


def test_top_level_alternatives_and_leading_literal() -> None:
    from kueuediag.analysis.signatures import leading_literal, top_level_alternatives

    assert top_level_alternatives(r"a(b|c)d|e[|]f|g\|h") == ["a(b|c)d", "e[|]f", "g\\|h"]
    assert top_level_alternatives(r"[]|]x|y") == ["[]|]x", "y"]  # ']' first in a class is a member
    assert leading_literal(r"insufficient quota for (?P<r>\S+)") == "insufficient quota for "
    assert leading_literal(r"pods?") == "pod"
    assert leading_literal(r"(?P<name>x)") == ""


def _fixture_log_lines() -> list[LogLine]:
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "fixtures"
    lines: list[LogLine] = []
    for path in sorted(root.rglob("*.log")):
        lines += parse_log_text(str(path), path.read_text(errors="replace"), 2026)
    return lines


def test_scan_prefilters_change_no_hit() -> None:
    """The message-prefix and text-hint shortcuts in `scan` skip only lines a signature cannot match."""
    lines = _fixture_log_lines()
    assert len(lines) > 500
    expected: dict[tuple[str, str], list[int]] = {}
    for line in lines:
        for sig in SIGNATURES:
            if sig.matches(line):
                expected.setdefault((sig.id, sig.group_key(line)), []).append(id(line))
    got = {(h.signature.id, h.key): [id(ln) for ln in h.lines] for h in scan(lines)}
    assert got == expected
    assert {sid for sid, _ in got} >= {"evaluated-for-admission", "preempted"}


def test_line_index_answers_like_each_line() -> None:
    from kueuediag.snapshot.logs import LineIndex

    lines = _fixture_log_lines()
    index = LineIndex(lines)
    names = {(ns, n) for ln in lines for ns, n in ln.workloads} | {(None, "ghost"), ("other-ns", "job-x")}
    names |= {(None, "job-llm-finetune-5d2e1"), ("wrong-ns", "job-llm-finetune-5d2e1")}
    for ns, name in sorted(names, key=str):
        slow = [ln for ln in lines if ln.names_workload(ns, name)]
        assert index.naming_workload(ns, name) == slow, (ns, name)
        assert index.names_workload(ns, name) == bool(slow)
    for cq in {cq for ln in lines for cq in ln.cluster_queues} | {"no-such-cq"}:
        assert index.names_cluster_queue(cq) == any(ln.names_cluster_queue(cq) for ln in lines)


@pytest.mark.parametrize("name", ["health-zombie-pod-group", "health-controller-crashloop", "health-logs-level2"])
def test_hits_concerning_keeps_every_hit_that_names_the_target(name: str) -> None:
    from pathlib import Path

    from kueuediag.analysis.signatures import hits_concerning, signature_hits
    from kueuediag.snapshot.loader import load_snapshot

    snap = load_snapshot(str(Path(__file__).resolve().parent.parent / "fixtures" / "snapshots" / name))
    hits = signature_hits(snap)
    assert hits
    names = {n for h in hits for ln in h.lines for _, n in ln.workloads} | {"no-such-workload"}
    queues = {cq for h in hits for ln in h.lines for cq in ln.cluster_queues} | {"no-such-queue"}
    for workload in names:
        for cq in [*queues, None]:
            subset = hits_concerning(snap, workload, cq)
            assert subset == [h for h in hits if h in subset]  # library order kept
            needed = [h for h in hits if h.signature.per != "workload" or h.index.names_workload(None, workload)
                      or (cq is not None and h.index.names_cluster_queue(cq))]
            assert all(h in subset for h in needed), (workload, cq)
            assert all(h in needed or any(not ln.workloads for ln in h.lines) for h in subset), (workload, cq)
