"""Nothing leaks: secrets planted in every kind of field are gone from every written snapshot, names and IPs
planted in every kind of field are gone from every redacted one, and redaction never changes a verdict.

Secrets are planted in the objects the local API server serves (args, `sh -c` scripts, headers, env, pod
template last-applied, annotations, labels, container/condition/event messages), in the controller log and in
Prometheus label values; the test collects (`why --save` and `snapshot -A`, with and without `--redact`) and
searches every byte written.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kueuediag.config import Settings
from kueuediag.engine import diagnose
from kueuediag.live import LiveOptions, collect_for_why, take_snapshot
from kueuediag.live.redact import redact, redact_target
from kueuediag.live.sanitize import REDACTED, TRIGGER_WORDS, has_trigger, sanitize_log, sanitize_metrics, scrub_text
from kueuediag.live.write import write_snapshot
from kueuediag.registry import discover
from kueuediag.snapshot.kueue import workloads
from kueuediag.snapshot.model import Snapshot
from kueuediag.snapshot.reader import RawSnapshot, read_snapshot
from kueuediag.target import resolve
from tests.live.conftest import LIVE_FIXTURE, ServerFactory
from tests.live.fakeprom import FakePrometheus
from tests.live.written import written_text

S = {k: f"Zq{k}pL4nt3d{k}X" for k in ("args", "header", "shell", "env", "status", "condition", "event", "note",
                                       "template", "annotation", "label", "log", "logjson", "logurl", "metric",
                                       "basic", "shellenv")}
"""one distinct planted secret per field kind, so a failure names the field that leaked"""


def _by(objs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    return next(o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name)


def plant_secrets(raw: RawSnapshot) -> tuple[list[dict[str, Any]], dict[str, str]]:
    objs = copy.deepcopy(raw.objects)
    job = _by(objs, "Job", "llm-finetune")
    template = job["spec"]["template"]
    c = template["spec"]["containers"][0]
    c["args"] = [*(c.get("args") or []), f"--db-pass={S['args']}", f"--header=Authorization: Bearer {S['header']}"]
    c["command"] = ["sh", "-c", f"export WANDB_API_KEY={S['shellenv']} && python train.py --wandb-api-key "
                                f"{S['shell']} --steps 10"]
    c.setdefault("env", []).append({"name": "DB_URL", "value": S["env"]})
    template.setdefault("metadata", {}).setdefault("annotations", {})[
        "kubectl.kubernetes.io/last-applied-configuration"] = json.dumps({"token": S["template"]})
    job["metadata"].setdefault("annotations", {})["db-password"] = S["annotation"]
    job["metadata"].setdefault("labels", {})["api-token"] = S["label"]
    job.setdefault("status", {}).setdefault("conditions", []).append(
        {"type": "Failed", "status": "False", "reason": "Probe",
         "message": f"probe used Authorization: Basic {S['basic']}= and failed"})
    pod = next(o for o in objs if o["kind"] == "Pod" and o["metadata"].get("namespace") == "team-a")
    pod.setdefault("status", {})["containerStatuses"] = [{
        "name": "main", "ready": False, "restartCount": 1, "image": "trainer:v1", "imageID": "",
        "state": {"waiting": {"reason": "CrashLoopBackOff",
                              "message": f"db connect failed: password={S['status']}"}}}]
    wl = next(o for o in objs if o["kind"] == "Workload" and o["metadata"]["name"].startswith("job-llm-finetune"))
    wl["status"]["conditions"].append({"type": "Custom", "status": "False", "reason": "Hook",
                                       "lastTransitionTime": "2026-11-20T09:15:00Z",
                                       "message": f"webhook https://bot:{S['condition']}@hooks.example/x failed"})
    event = next(o for o in objs if o["kind"] == "Event" and o["metadata"].get("namespace") == "team-a")
    event["message"] = f"{event['message']} (api_key: {S['event']})"
    event["note"] = f"retry with --token {S['note']}"
    logs = {rel: text + f'{{"level":"error","msg":"auth failed","password":"{S["logjson"]}"}}\n'
                        f"2026-11-20T09:20:00Z ERROR token={S['log']} rejected by https://u:{S['logurl']}@api\n"
            for rel, text in raw.logs.items()}
    return objs, logs


METRIC_SERIES = [{"metric": {"__name__": "kueue_pending_workloads", "cluster_queue": "team-a", "status": "active",
                             "endpoint": f"https://scraper:{S['metric']}@10.1.2.3:8443/metrics"},
                  "values": [[1795161600, "1"]]}]


@pytest.mark.parametrize("redacted", [False, True], ids=["plain", "redacted"])
def test_planted_secrets_never_reach_a_snapshot(api_server: ServerFactory, live_raw: RawSnapshot, tmp_path: Path,
                                                redacted: bool) -> None:
    objs, logs = plant_secrets(live_raw)
    with api_server(objects=objs, logs=logs) as srv, FakePrometheus("series", result=METRIC_SERIES) as prom:
        o = LiveOptions(kubeconfig=str(srv.kubeconfig(tmp_path)), prometheus_url=prom.url)
        saved = write_snapshot(collect_for_why("job/llm-finetune", "team-a", o), tmp_path / "why-save")
        o2 = LiveOptions(kubeconfig=str(srv.kubeconfig(tmp_path)), prometheus_url=prom.url)
        snap = take_snapshot(tmp_path / "all.tar.gz", o2, redact=redacted).path
    for path in (saved, snap):
        text = written_text(path)
        assert "llm-finetune" in text or redacted  # the files were read
        leaked = sorted(kind for kind, value in S.items() if value in text)
        assert leaked == [], f"{path.name}: planted secrets survived in {leaked}"
    # the structure around the secrets survives: flags, header names, the messages' words
    text = written_text(saved)
    for kept in ("--db-pass=<redacted>", "Authorization: <redacted>", "--wandb-api-key <redacted>",
                 "db connect failed: password=<redacted>", '"password":"<redacted>"', "insufficient unused quota"):
        assert kept in text, kept
    assert "kubectl.kubernetes.io/last-applied-configuration" not in text


@pytest.mark.parametrize(("text", "expected"), [
    ("--header=Authorization: Bearer abc.def.ghi123", "--header=Authorization: <redacted>"),
    ("sh -c 'python t.py --wandb-api-key X1y2Z3 --steps 1'",
     "sh -c 'python t.py --wandb-api-key <redacted> --steps 1'"),
    ('{"msg":"x","client_secret":"abc123"}', '{"msg":"x","client_secret":"<redacted>"}'),
    ("curl -u admin:pw https://admin:pw@host/x", "curl -u admin:pw https://<redacted>@host/x"),
    ("proxy-authorization: Negotiate YIIBhwYGKwYBBQUCoIIBezCC", "proxy-authorization: <redacted>"),
    ("export PGPASSWORD=pw1 DB_PASS=pw2", "export PGPASSWORD=<redacted> DB_PASS=<redacted>"),
    # vocabulary stays: messages Kueue writes, a map key called "key", plain words after "token"
    ("couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor a100",
     "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor a100"),
    ('"key":"team-a/job-x"', '"key":"team-a/job-x"'),
])
def test_scrub_text(text: str, expected: str) -> None:
    assert scrub_text(text) == expected


_TRIGGER_REGEX = re.compile("(?i)" + "|".join(re.escape(w) for w in TRIGGER_WORDS))
"""what the pre-filter used to be: one case-insensitive regular expression"""


def test_the_trigger_check_finds_every_spelling_a_case_insensitive_regex_finds() -> None:
    """Every character a case-insensitive regex takes for a letter of a trigger word (the Kelvin sign for k, the
    long s, the dotted and dotless Turkish i...), put in that word, is still found."""
    letters = {letter: re.compile("(?i)" + letter) for letter in sorted(set("".join(TRIGGER_WORDS)) - set(":/"))}
    checked = 0
    for cp in range(0x110000):
        c = chr(cp)
        for letter, same in letters.items():
            if c != letter and same.fullmatch(c):
                for word in (w for w in TRIGGER_WORDS if letter in w):
                    assert has_trigger(f"x {word.replace(letter, c)} y"), (hex(cp), word)
                    checked += 1
    assert checked > 30  # the upper-case letters at least
    assert has_trigger("PASSWORD") and has_trigger("X-Api-KEY") and has_trigger("https://h")
    assert not has_trigger("nvidia.com/gpu in flavor h100") and not has_trigger("")


@given(st.text(alphabet=st.sampled_from([*"abcdeikmnoprstuvwyADKSTZ/: -", "\u0130", "\u0131", "\u212a",
                                          "\u017f", "\u00df"]), max_size=40))
def test_the_trigger_check_is_never_narrower_than_the_regex(text: str) -> None:
    if _TRIGGER_REGEX.search(text):
        assert has_trigger(text)


def test_logs_are_scrubbed_line_by_line_with_a_value_on_the_following_line() -> None:
    clean = '{"level":"info","msg":"Workload admitted","workload":{"name":"a","namespace":"b"}}'
    text = "\n".join([clean, "2026-11-20 ERROR login failed token=s3cr3tA1 for u", clean,
                      "db password:", "", "   hunt3rZ", clean, "export PGPASSWORD='q w e'", clean, ""])
    out = sanitize_log(text)
    assert out.split("\n") == [clean, f"2026-11-20 ERROR login failed token={REDACTED} for u", clean,
                               "db password:", "", f"   {REDACTED}", clean, f"export PGPASSWORD='{REDACTED}'",
                               clean, ""]
    assert sanitize_log(clean + "\n" + clean) == clean + "\n" + clean
    # the same result as scrubbing the whole text at once, where no value sits more than a line away
    planted = "\n".join([clean, "auth failed: Authorization: Bearer abcdefghijk", "ok", "curl https://u:pw@h/x"] * 3)
    assert sanitize_log(planted) == scrub_text(planted)


def test_metric_label_values_are_scrubbed() -> None:
    text = ('kueue_x{endpoint="https://u:pw123@h:1/m",auth_token="abc",cluster_queue="team-a"} 1 1700000000\n'
            "# EOF\n")
    assert sanitize_metrics(text) == (f'kueue_x{{endpoint="https://{REDACTED}@h:1/m",auth_token="{REDACTED}",'
                                      'cluster_queue="team-a"} 1 1700000000\n# EOF\n')


# --- redaction ---------------------------------------------------------------------------------------------
PLANTED_NAMES = ("zz-node-private-17", "zz-label-private", "registry.private.example", "zz-team",
                 "team-a", "team-b", "llm-finetune", "prod-gpu-1", "zz-annotation-private", "zz-cq-private",
                 "zz-cq-logonly")
PLANTED_HOSTS = ("ip-10-0-1-2.ec2.internal", "ip-10-0-1-2.us-west-2.compute.internal",
                 "gke-pool-1-abc.c.zz-project.internal", "zz-worker-9", "db.zz-team.svc.cluster.local",
                 "api.zz-corp-private.com", "123456789012.dkr.ecr.us-east-1.amazonaws.com", "metrics.zz-corp.net")
"""dotted DNS names (and one bare host name known by structure) in every field kind that carries them"""
KEPT_VOCABULARY = ("nvidia.com/gpu", "kueue.x-k8s.io/queue-name", "batch/v1", "kubernetes.io/hostname",
                   "kueue.x-k8s.io/v1beta2", "cloud.google.com/gke-accelerator", "mworkload.kb.io",
                   "kueue-webhook-service.kueue-system.svc", "ghcr.io", "scheduler.go", "spec.template.spec")
"""resource names, label keys, API groups, Kueue's webhook and service, a public registry, a Go file and a field
path: none of them is a host name"""
PLANTED_IPS = ("10.11.12.13", "fd00:abcd::17", "10.44.55.66", "fd00:abcd::66", "172.16.9.8")


def plant_names(raw: RawSnapshot) -> RawSnapshot:
    """Names and addresses in every field kind: node names (object, nodeName, event reportingInstance and host),
    label and annotation values, images, IPs (v4 and v6) in statuses, messages, logs and metric labels, and the
    two traps: a ClusterQueue named `default` and a LocalQueue named `gpu`."""
    objs = copy.deepcopy(raw.objects)
    node = copy.deepcopy(_by(objs, "Node", "gke-a100-pool-1"))
    node["metadata"].update(name="zz-node-private-17", uid="0b3c1e00-0000-4000-8000-000000000017")
    node["metadata"]["labels"]["kubernetes.io/hostname"] = "zz-node-private-17"
    node["metadata"]["labels"]["team"] = "zz-label-private"
    node["metadata"].setdefault("annotations", {})["owner-note"] = "zz-annotation-private"
    node["status"]["addresses"] = [{"type": "InternalIP", "address": "10.11.12.13"},
                                   {"type": "InternalIP", "address": "fd00:abcd::17"},
                                   {"type": "Hostname", "address": "zz-node-private-17"}]
    objs.append(node)
    pod = next(o for o in objs if o["kind"] == "Pod" and o["metadata"].get("namespace") == "team-b")
    pod["spec"]["containers"][0]["image"] = "registry.private.example/zz-team/trainer:v7"
    pod["status"].update(podIP="10.44.55.66", podIPs=[{"ip": "10.44.55.66"}, {"ip": "fd00:abcd::66"}],
                         hostIP="10.11.12.13")
    event = copy.deepcopy(next(o for o in objs if o["kind"] == "Event"))
    event["metadata"]["name"] = "planted.17"
    event.update(reportingComponent="kubelet", reportingInstance="zz-node-private-17",
                 source={"component": "kubelet", "host": "zz-node-private-17"},
                 message="Pulling image registry.private.example/zz-team/trainer:v7 on zz-node-private-17 "
                         "(10.11.12.13, fd00:abcd::17) for team-a/llm-finetune")
    objs.append(event)
    fqdn = copy.deepcopy(_by(objs, "Node", "gke-a100-pool-1"))
    fqdn["metadata"].update(name="ip-10-0-1-2.ec2.internal", uid="0b3c1e00-0000-4000-8000-000000000018")
    fqdn["metadata"]["labels"]["kubernetes.io/hostname"] = "ip-10-0-1-2.ec2.internal"
    fqdn["status"]["addresses"] = [{"type": "InternalDNS", "address": "ip-10-0-1-2.us-west-2.compute.internal"},
                                   {"type": "Hostname", "address": "zz-worker-9"}]
    objs.append(fqdn)
    dns = copy.deepcopy(next(o for o in objs if o["kind"] == "Event"))
    dns["metadata"]["name"] = "planted.18"
    dns.update(reportingComponent="kubelet", reportingInstance="gke-pool-1-abc.c.zz-project.internal",
               message="Pulled image 123456789012.dkr.ecr.us-east-1.amazonaws.com/zz-team/app:v1 on "
                       "ip-10-0-1-2.us-west-2.compute.internal (zz-worker-9); db.zz-team.svc.cluster.local:5432 "
                       "refused, see https://api.zz-corp-private.com/status; webhook mworkload.kb.io via "
                       "kueue-webhook-service.kueue-system.svc:443; ghcr.io/zz-team/tool pulled; "
                       "nvidia.com/gpu kueue.x-k8s.io/queue-name batch/v1 scheduler.go:412 spec.template.spec")
    objs.append(dns)
    cq = copy.deepcopy(_by(objs, "ClusterQueue", "misc"))
    cq["metadata"].update(name="default", uid="0b3c1e00-0000-4000-8000-0000000000cd")
    cq["spec"].pop("cohortName", None)
    cq["spec"].pop("cohort", None)
    objs.append(cq)
    lq = copy.deepcopy(_by(objs, "LocalQueue", "team-a-queue"))
    lq["metadata"].update(name="gpu", uid="0b3c1e00-0000-4000-8000-0000000000ab")
    lq["spec"]["clusterQueue"] = "default"
    lq.setdefault("status", {})["conditions"] = [{
        "type": "Active", "status": "True", "reason": "Ready", "lastTransitionTime": "2026-11-20T09:00:00Z",
        "message": "Can submit new workloads to localQueue gpu (nvidia.com/gpu quota in ClusterQueue default)"}]
    objs.append(lq)
    logs = {rel: text + "2026-11-20T09:30:00Z INFO scheduler admitted team-a/llm-finetune on zz-node-private-17 "
                        "peer=172.16.9.8:443 localQueue=gpu\n"
                        '{"level":"info","msg":"cohort usage","clusterQueue":{"name":"zz-cq-logonly"}}\n'
                        '{"level":"info","msg":"pushed to metrics.zz-corp.net:9091 from ip-10-0-1-2.ec2.internal"}\n'
            for rel, text in raw.logs.items()}
    # a ClusterQueue that only the metrics and the log name (its object was not collected)
    metrics = {rel: text.replace("# EOF\n", "") + 'kueue_pending_workloads{cluster_queue="default",status="active",'
               'instance="10.11.12.13:8080",node="zz-node-private-17"} 0 1795161600\n'
               'kueue_pending_workloads{cluster_queue="zz-cq-private",status="active"} 0 1795161600\n# EOF\n'
               for rel, text in raw.metrics.items()}
    return RawSnapshot(source=raw.source, manifest=dict(raw.manifest), objects=objs, metrics=metrics, logs=logs)


def _token(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![A-Za-z0-9_.-]){re.escape(name)}(?![A-Za-z0-9_-])")


def test_redaction_hides_every_planted_name_and_address(tmp_path: Path) -> None:
    raw = plant_names(read_snapshot(LIVE_FIXTURE))
    red, doc = redact(raw)
    text = written_text(write_snapshot(red, tmp_path / "red"))
    left = [n for n in (*PLANTED_NAMES, *PLANTED_IPS, *PLANTED_HOSTS) if _token(n).search(text)]
    assert left == []
    for kept in KEPT_VOCABULARY:
        assert kept in text, kept
    hosts = doc["byCategory"]["host"]
    assert hosts["db.zz-team.svc.cluster.local"].startswith("host-") and hosts["zz-worker-9"].startswith("host-")
    assert doc["mapping"]["ip-10-0-1-2.ec2.internal"].startswith("node-")  # a Node's name: by structure
    planted = next(o for o in red.objects
                   if o["kind"] == "Event" and o["metadata"]["name"] == doc["mapping"]["planted.18"])
    assert planted["reportingInstance"] == doc["mapping"]["gke-pool-1-abc.c.zz-project.internal"]
    assert f"{hosts['db.zz-team.svc.cluster.local']}:5432 refused" in planted["message"]
    # a ClusterQueue named default and a LocalQueue named gpu are renamed by structure, whole tokens only
    names = doc["mapping"]
    assert names["default"].startswith(("clusterqueue-", "ns-")) and names["gpu"] == "localqueue-1"
    lq = next(o for o in red.objects if o["kind"] == "LocalQueue" and o["metadata"]["name"] == names["gpu"])
    assert lq["spec"]["clusterQueue"] == names["default"]
    assert lq["status"]["conditions"][0]["message"] == ("Can submit new workloads to localQueue localqueue-1 "
                                                        f"(nvidia.com/gpu quota in ClusterQueue {names['default']})")
    assert "nvidia.com/localqueue" not in text and "nvidia.com/gpu" in text
    assert not _token("gpu").search(text.replace("nvidia.com/gpu", ""))
    # label keys and API groups are never touched; IPs become documentation addresses, consistently
    for kept in ("kubernetes.io/hostname", "kueue.x-k8s.io/v1beta2", "cloud.google.com/gke-accelerator"):
        assert kept in text
    assert doc["byCategory"]["ip"]["10.11.12.13"].startswith("192.0.2.")
    assert doc["byCategory"]["ip"]["fd00:abcd::17"].startswith("2001:db8::")
    node = doc["mapping"]["zz-node-private-17"]
    event = next(o for o in red.objects if o["kind"] == "Event" and o.get("reportingInstance") == node)
    assert event["source"]["host"] == node
    assert doc["byCategory"]["ip"]["10.11.12.13"] in event["message"]


def test_redaction_keeps_the_verdict_with_planted_names() -> None:
    raw = plant_names(read_snapshot(LIVE_FIXTURE))
    snap = Snapshot(raw)
    red, doc = redact(raw)
    rsnap = Snapshot(red, now=snap.now)
    classes = discover()
    for target in ("job/llm-finetune", "workload/job-llm-finetune-a306b"):
        want = diagnose(snap, resolve(snap, target, "team-a"), classes, Settings())
        t = redact_target({"target": target, "namespace": "team-a"}, doc["mapping"])
        got = diagnose(rsnap, resolve(rsnap, t["target"], t["namespace"]), classes, Settings())
        assert got.cause == want.cause == "waiting-for-quota"


FIX = Path(__file__).resolve().parents[2] / "fixtures"
SNAPSHOTS = sorted([p for p in (FIX / "snapshots").iterdir() if p.is_dir()]
                   + [p for p in (FIX / "scenarios").iterdir() if p.is_dir()])


@pytest.mark.parametrize("path", SNAPSHOTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_fixture_redacted_keeps_every_verdict(path: Path) -> None:
    raw = read_snapshot(path)
    snap = Snapshot(raw)
    red, doc = redact(raw)
    rsnap = Snapshot(red, now=snap.now)
    classes = discover()
    targets = [(f"workload/{w.name}", w.namespace) for w in workloads(snap)]
    for kind in ("Job", "JobSet", "Pod"):
        targets += [(f"{kind.lower()}/{o['metadata']['name']}", o["metadata"].get("namespace"))
                    for o in snap.of_kind(kind)]
    assert targets
    changed = []
    for text, ns in targets:
        want = diagnose(snap, resolve(snap, text, ns), classes, Settings()).cause
        t = redact_target({"target": text, "namespace": ns}, doc["mapping"])
        got = diagnose(rsnap, resolve(rsnap, t["target"], t["namespace"]), classes, Settings()).cause
        if got != want:
            changed.append(f"{text} -n {ns}: {want} → {got}")
    assert changed == []
