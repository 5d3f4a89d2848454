"""The patch model behind every printed remediation: create, objects assumed from Kueue's record, blockers, field
changes instead of `kubectl edit`, and controller restarts labelled as stop-gaps with the reason.

Each test diagnoses a bundled fixture, takes the fix the engine printed, and checks both what is printed (the
command a user copies) and what applying it to the snapshot does.
"""

from __future__ import annotations

import json

from kueuediag.config import Settings
from kueuediag.engine import diagnose
from kueuediag.fixes import apply, classify, command, parse_command
from kueuediag.models import Fix, FixStatus, Patch, Verdict
from kueuediag.registry import discover
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.snapshot.model import Snapshot
from kueuediag.target import resolve
from tests.case_runner import FIXTURES


def _why(path: str, target: str, namespace: str) -> tuple[Snapshot, Verdict]:
    snap = load_snapshot(str(FIXTURES / path))
    return snap, diagnose(snap, resolve(snap, target, namespace), discover(), Settings())


def _fixes(v: Verdict, code: str) -> list[Fix]:
    return [x for r in v.findings if r.finding.code == code for x in r.finding.fixes]


def test_a_create_command_round_trips_and_fails_on_an_existing_object() -> None:
    flavor = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": "spot"}}
    patch = Patch(kind="ResourceFlavor", name="spot", create=flavor)
    cmd = command(patch)
    assert cmd == ("echo '{\"apiVersion\":\"kueue.x-k8s.io/v1beta1\",\"kind\":\"ResourceFlavor\","
                   "\"metadata\":{\"name\":\"spot\"}}' | kubectl create -f -")
    assert parse_command(cmd) == patch
    snap = load_snapshot(str(FIXTURES / "incidents" / "headlamp-1191-missing-flavors"))
    raw = apply(snap.raw, patch)
    assert raw is not None and any(o.get("kind") == "ResourceFlavor" and o["metadata"]["name"] == "spot"
                                   for o in raw.objects)
    assert apply(raw, patch) is None, "kubectl create fails when the object exists: never printed"


def test_missing_flavors_are_created_in_one_checked_command() -> None:
    """headlamp#1191: the ClusterQueue names flavors default and spot, which do not exist. Creating both (one List)
    makes the ClusterQueue active in the model; the did-you-mean rename comes first."""
    _, v = _why("incidents/headlamp-1191-missing-flavors", "job/sample-job", "team-a")
    create = next(x for x in _fixes(v, "KD003") if x.command and "kubectl create -f -" in x.command)
    assert create.status is FixStatus.VERIFIED
    body = json.loads(create.command.split("'")[1])
    assert body["kind"] == "List" and [i["metadata"]["name"] for i in body["items"]] == ["default", "spot"]
    assert v.first_fix is not None and "did you mean default-flavor?" in v.first_fix.text


def test_a_queue_missing_from_a_loose_dump_is_resumed_as_the_record_describes_it() -> None:
    snap, v = _why("snapshots/user-report-loose", "workload/job-ablation-3-e5d9c", "team-x")
    assert v.cause == "localqueue-stopped"
    fix = v.first_fix
    assert fix is not None and fix.status is FixStatus.VERIFIED
    assert fix.command == ("kubectl patch localqueue exp-queue -n team-x --type merge -p "
                           "'{\"spec\":{\"stopPolicy\":\"None\"}}'")
    assert fix.patch is not None and fix.patch.assumed["spec"] == {"stopPolicy": "Hold"}
    assert snap.get("LocalQueue", "exp-queue", "team-x") is None, "the dump really lacks the LocalQueue"
    without = fix.patch.model_copy(update={"assumed": {}})
    assert apply(snap.raw, without) is None, "without the assumed object there is nothing to patch"


def test_labelling_the_namespace_removes_the_blocker_and_the_resubmit_stays_advice() -> None:
    snap, v = _why("snapshots/submission-unmanaged", "job/etl-nightly", "ml-infra")
    fixes = _fixes(v, "KD001")
    label = fixes[0]
    assert label.status is FixStatus.VERIFIED
    assert label.command == "kubectl label namespace ml-infra ml.example.com/kueue=enabled"
    assert "Kueue administrator's choice" in label.note
    assert fixes[1].status is FixStatus.ADVICE and fixes[1].text.startswith("Then resubmit the job")
    assert label.patch is not None
    raw = apply(snap.raw, label.patch)
    assert raw is not None
    after = diagnose(Snapshot(raw, now=snap.now), resolve(snap, "job/etl-nightly", "ml-infra"), discover(),
                     Settings(), verify_fixes=False)
    top = after.findings[0].finding
    assert top.cause == "not-managed" and top.data["blockers"] == [], "only the resubmit is left"
    assert v.findings[0].finding.data["blockers"] == ["namespace"]


def test_the_log_level_is_a_json_patch_on_the_deployment_not_kubectl_edit() -> None:
    _, v = _why("scenarios/guarantee-violation", "job/af3-inference-batch-12", "team-bio")
    fix = next(x for x in _fixes(v, "KD501"))
    assert fix.status is FixStatus.VERIFIED
    assert fix.command == ("kubectl patch deployment kueue-controller-manager -n kueue-system --type json -p "
                           "'[{\"op\":\"replace\",\"path\":\"/spec/template/spec/containers/0/args/1\","
                           "\"value\":\"--zap-log-level=5\"}]'")
    printed = [x.command or "" for r in v.findings for x in r.finding.fixes]
    assert not any("kubectl edit" in c or " edit " in c for c in printed)


def test_uncovered_resource_gets_the_coverage_patch_with_the_requested_quota() -> None:
    _, v = _why("incidents/djinn-2841-ephemeral-storage-not-covered", "job/build-9q2w", "djinn-builds")
    fix = v.first_fix
    assert fix is not None and fix.status is FixStatus.VERIFIED and fix.patch is not None
    ops = list(fix.patch.json_ops)
    assert ops[0] == {"op": "add", "path": "/spec/resourceGroups/0/coveredResources/-", "value": "ephemeral-storage"}
    assert all(op["path"].startswith("/spec/resourceGroups/0/flavors/") and op["value"]["name"] == "ephemeral-storage"
               for op in ops[1:]) and len(ops) >= 2
    assert fix.command is not None and fix.command.startswith("kubectl patch clusterqueue djinn-builds --type json")


def test_exceeding_max_quota_offers_the_exact_nominal_quota_that_admits_it() -> None:
    _, v = _why("snapshots/quota-exceeds-max", "job/llm-finetune", "ml")
    assert v.cause == "exceeds-max-quota"
    fix = next(x for x in _fixes(v, "KD102") if x.patch is not None)
    assert fix.status is FixStatus.VERIFIED
    (op,) = fix.patch.json_ops if fix.patch else ()
    assert op["op"] == "replace" and op["path"].endswith("/nominalQuota")
    assert f"to {op['value']} (by " in fix.text


def test_a_controller_restart_is_a_stop_gap_that_says_why() -> None:
    fix = classify("If the controller is wedged, restart it: "
                   "`kubectl -n kueue-system rollout restart deploy/kueue-controller-manager`.")
    assert fix.status is FixStatus.STOP_GAP and fix.stop_gap
    assert fix.reason.startswith("a restart changes no object a snapshot holds")
    assert classify("`kubectl edit clusterqueue x`").status is FixStatus.UNVERIFIED


def test_markdown_shows_the_first_fix_and_its_label_before_the_findings() -> None:
    from kueuediag.render.markdown import render_markdown

    _, v = _why("scenarios/stuck-preemption-target", "job/vit-h14-finetune-e3", "team-vision")
    text = render_markdown(v)
    head = text.split("### Findings")[0]
    assert "**First fix, checked:** Force-delete the zombie pod sweep-lr-0917-g4-1" in head
    assert "```sh\nkubectl delete pod sweep-lr-0917-g4-1 -n ml-sweeps --force --grace-period=0\n```" in head
    _, stop = _why("scenarios/fragmentation-no-tas", "job/llama3-8b-sft-8g-r12", "team-research")
    fix = stop.first_fix
    assert fix is not None and fix.status is FixStatus.STOP_GAP
    head = render_markdown(stop).split("### Findings")[0]
    assert "**First stop-gap:**" in head and f"_Why only a stop-gap:_ {fix.reason}." in head
