"""Every place a pod spec can carry an environment value or a token, planted in the objects the local API server
serves, is gone from every byte `snapshot -A` and `why --save` write — while the structure around it (the
variable names, `valueFrom` references, the projected token's volume) is kept for the diagnosis.

Covered: containers, initContainers and ephemeralContainers of Pods; pod templates of Jobs, JobSets
(replicatedJobs), RayJobs (head group, worker groups, submitter pod) and Workloads (podSets); `envFrom`;
`value` next to `valueFrom`; last-applied-configuration annotations holding env on the object and on its pod
template; a projected service-account token used in a shell command and copied into an env value.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kueuediag.live import LiveOptions, collect_for_why, take_snapshot
from kueuediag.live.write import write_snapshot
from kueuediag.snapshot.reader import RawSnapshot
from tests.live.conftest import ServerFactory
from tests.live.written import written_text

S = {k: f"Vq{k}S3cr3t{k}Z" for k in ("jobinit", "podinit", "ephemeral", "jobset", "rayhead", "rayworker",
                                      "raysubmitter", "envfrom", "valuefrom", "lastapplied", "templateapplied",
                                      "jwtcmd", "jwtenv", "wlmain", "wlinit")}
"""one planted value per path, so a failure names the path that leaked"""
JWT = "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEyMyJ9.eyJzdWIiOiJzeXN0ZW06c2EifQ."
RAY_UID = "7d1e2c3b-0a9f-4e8d-b7c6-5a4b3c2d1e0f"
JOBSET_UID = "5f0e8a52-4d0c-4c55-8f1a-7f0b9a9f0c11"


def _container(name: str, secret: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": "python:3.11", "env": [{"name": f"{name.upper()}_DB_URL", "value": secret}],
            **extra}


def _template(main_secret: str, init_secret: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"restartPolicy": "Never", "containers": [_container("main", main_secret)]}
    if init_secret is not None:
        spec["initContainers"] = [_container("setup", init_secret)]
    return {"metadata": {"labels": {"app": "x"}}, "spec": spec}


def _owned_workload(base: dict[str, Any], name: str, kind: str, api: str, owner: str, uid: str) -> dict[str, Any]:
    wl = copy.deepcopy(base)
    wl["metadata"]["name"] = name
    wl["metadata"]["uid"] = f"{uid[:-4]}beef"
    wl["metadata"]["ownerReferences"] = [{"apiVersion": api, "kind": kind, "name": owner, "uid": uid,
                                          "controller": True}]
    wl["metadata"]["labels"] = {"kueue.x-k8s.io/job-uid": uid}
    return wl


def plant(raw: RawSnapshot) -> list[dict[str, Any]]:
    objs = [copy.deepcopy(o) for o in raw.dicts()]
    job = next(o for o in objs if o["kind"] == "Job" and o["metadata"]["name"] == "llm-finetune")
    template = job["spec"]["template"]
    template["spec"]["initContainers"] = [_container("setup", S["jobinit"])]
    main = template["spec"]["containers"][0]
    main["envFrom"] = [{"prefix": S["envfrom"], "secretRef": {"name": "training-secrets"}}]
    main.setdefault("env", []).append({"name": "DB_PASSWORD", "value": S["valuefrom"],
                                       "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}})
    job["metadata"].setdefault("annotations", {})["kubectl.kubernetes.io/last-applied-configuration"] = json.dumps(
        {"spec": {"template": {"spec": {"containers": [{"name": "main", "env": [
            {"name": "DB_URL", "value": S["lastapplied"]}]}]}}}})
    template.setdefault("metadata", {}).setdefault("annotations", {})[
        "kubectl.kubernetes.io/last-applied-configuration"] = json.dumps({"env": [{"value": S["templateapplied"]}]})

    pod = next(o for o in objs if o["kind"] == "Pod" and o["metadata"].get("namespace") == "team-a")
    spec = pod["spec"]
    spec["initContainers"] = [_container("setup", S["podinit"])]
    spec["ephemeralContainers"] = [_container("debugger", S["ephemeral"], targetContainerName="main")]
    spec.setdefault("volumes", []).append({"name": "vault-token", "projected": {"sources": [
        {"serviceAccountToken": {"audience": "vault", "expirationSeconds": 3600, "path": "token"}}]}})
    spec["containers"][0]["command"] = ["sh", "-c", f"curl -H 'Authorization: Bearer {JWT}{S['jwtcmd']}' "
                                                     "https://vault.example/v1/login"]
    spec["containers"][0].setdefault("env", []).append({"name": "VAULT_SA_JWT", "value": JWT + S["jwtenv"]})

    base = next(o for o in objs if o["kind"] == "Workload" and o["metadata"]["name"].startswith("job-llm-finetune"))
    base["spec"]["podSets"][0]["template"] = _template(S["wlmain"], S["wlinit"])
    objs.append({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                 "metadata": {"name": "sweep", "namespace": "team-a", "uid": JOBSET_UID,
                              "creationTimestamp": "2026-11-20T09:15:00Z",
                              "labels": {"kueue.x-k8s.io/queue-name": "team-a-queue"}},
                 "spec": {"suspend": True, "replicatedJobs": [
                     {"name": "workers", "replicas": 2, "template": {"spec": {"template": _template(S["jobset"])}}}]}})
    objs.append(_owned_workload(base, "jobset-sweep-1a2b3", "JobSet", "jobset.x-k8s.io/v1alpha2", "sweep",
                                JOBSET_UID))
    objs.append({"apiVersion": "ray.io/v1", "kind": "RayJob",
                 "metadata": {"name": "tune", "namespace": "team-a", "uid": RAY_UID,
                              "creationTimestamp": "2026-11-20T09:15:00Z",
                              "labels": {"kueue.x-k8s.io/queue-name": "team-a-queue"}},
                 "spec": {"entrypoint": "python tune.py", "suspend": True,
                          "submitterPodTemplate": _template(S["raysubmitter"]),
                          "rayClusterSpec": {
                              "headGroupSpec": {"rayStartParams": {}, "template": _template(S["rayhead"])},
                              "workerGroupSpecs": [{"groupName": "gpu", "replicas": 2, "rayStartParams": {},
                                                    "template": _template(S["rayworker"])}]}}})
    objs.append(_owned_workload(base, "rayjob-tune-9f8e7", "RayJob", "ray.io/v1", "tune", RAY_UID))
    return objs


def test_env_values_and_tokens_are_gone_from_every_path(api_server: ServerFactory, live_raw: RawSnapshot,
                                                        tmp_path: Path) -> None:
    objs = plant(live_raw)
    with api_server(objects=objs) as srv:
        srv.cluster.resources.append(("ray.io", "v1", "RayJob", "rayjobs", True))
        o = LiveOptions(kubeconfig=str(srv.kubeconfig(tmp_path)))
        saved = write_snapshot(collect_for_why("job/llm-finetune", "team-a", o), tmp_path / "why-save")
        full = take_snapshot(tmp_path / "all.tar.gz", LiveOptions(kubeconfig=str(srv.kubeconfig(tmp_path)))).path
        as_dir = take_snapshot(tmp_path / "all-dir", LiveOptions(kubeconfig=str(srv.kubeconfig(tmp_path)))).path
    for path in (saved, full, as_dir):
        text = written_text(path)
        leaked = sorted(k for k, v in S.items() if v in text)
        assert leaked == [], f"{path.name}: planted values survived in {leaked}"
        assert JWT not in text, f"{path.name}: the service-account token survived"
        assert "kubectl.kubernetes.io/last-applied-configuration" not in text
    text = written_text(full)
    # every planted object was read, and what the diagnosis needs around the values is kept
    for kept in ('"kind":"RayJob"', '"kind":"JobSet"', '"SETUP_DB_URL"', '"DEBUGGER_DB_URL"', '"MAIN_DB_URL"',
                 '"secretKeyRef":{"name":"db","key":"password"}', '"serviceAccountToken":{"audience":"vault"',
                 '"workerGroupSpecs"', '"submitterPodTemplate"', "Authorization: <redacted>"):
        assert kept in text, kept
    assert '"envFrom"' not in text


def test_a_remembered_argument_is_redacted_by_its_position_not_by_its_text() -> None:
    """The per-argument memo keeps what an argument is; whether it is a secret flag's value depends on the
    argument before it, every time."""
    from kueuediag.live.sanitize import REDACTED, sanitize_args

    args = ["--token", "v1", "v1", "-p", "v1", "--steps", "v1", "--db-pass=v1", "v1"]
    want = ["--token", REDACTED, "v1", "-p", REDACTED, "--steps", "v1", f"--db-pass={REDACTED}", "v1"]
    assert sanitize_args(args) == want
    assert sanitize_args(args) == want  # the same answer from the memo
    assert sanitize_args(["v1", "--token"]) == ["v1", "--token"]


def test_the_walk_treats_subclasses_like_the_plain_types_and_stops_at_depth_40() -> None:
    """The walk dispatches on exact types for speed (decoded JSON); YAML-read or hand-built objects may hold
    subclasses of dict, list and str, which are sanitized the same way; nesting beyond 40 levels is left as is."""
    from collections import OrderedDict

    from kueuediag.live.sanitize import REDACTED, sanitize_owned_object

    class Text(str):
        pass

    container = OrderedDict(name="main", env=[{"name": "DB_PASSWORD", "value": "hunter2"}],
                            args=["--token", "abc123secret"])
    deep: dict[str, Any] = {"message": "password=deepvalue"}
    for _ in range(45):
        deep = {"next": deep}
    obj = {"kind": "Pod", "metadata": OrderedDict(name="p", annotations={"db-password": "x"}),
           "spec": {"containers": [container]},
           "status": {"message": Text("password=s3cr3tvalue now"), "notes": [Text("Bearer abcdefghijklmnop")],
                      "deep": deep}}
    out = sanitize_owned_object(obj)
    assert out["spec"]["containers"][0]["env"][0]["value"] == REDACTED
    assert out["spec"]["containers"][0]["args"] == ["--token", REDACTED]
    assert out["metadata"]["annotations"]["db-password"] == REDACTED
    assert "s3cr3tvalue" not in out["status"]["message"] and out["status"]["message"].endswith(" now")
    assert out["status"]["notes"] == [f"Bearer {REDACTED}"]
    node = out["status"]["deep"]
    while "next" in node:
        node = node["next"]
    assert node["message"] == "password=deepvalue"  # beyond the walk's depth bound: untouched, as before


def _every_fixture_object() -> list[dict[str, Any]]:
    from kueuediag.snapshot.reader import read_snapshot
    from tests.conftest import FIXTURES

    objs: list[dict[str, Any]] = []
    for snap in sorted((FIXTURES / "snapshots").iterdir()):
        if snap.is_dir():
            objs.extend(read_snapshot(snap).dicts())
    return objs


def test_skipping_the_validated_fields_of_known_kinds_changes_nothing(bench_dir: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Fields whose strings the API server validates (quantities, label values, names: `_VALIDATED`) are not walked
    in Kubernetes' and Kueue's own kinds: every fixture object and every object of the generated cluster comes out
    exactly as the whole walk leaves it."""
    import orjson

    from kueuediag.live import sanitize

    objs = _every_fixture_object()
    objs += [o for p in sorted((bench_dir / "objects").glob("*.json")) for o in json.loads(p.read_text())["items"]]
    skipped = [o for o in objs if sanitize._group(o.get("apiVersion")) in sanitize._KNOWN_GROUPS]
    assert len(skipped) > 1000 and {o["kind"] for o in skipped} >= {"Pod", "Job", "Workload", "Node", "ClusterQueue"}
    skipping = [orjson.dumps(sanitize.sanitize_owned_object(copy.deepcopy(o))) for o in objs]
    monkeypatch.setattr(sanitize, "_KNOWN_GROUPS", frozenset())  # every kind walked whole
    for obj, got in zip(objs, skipping, strict=True):
        assert got == orjson.dumps(sanitize.sanitize_owned_object(copy.deepcopy(obj))), \
            (obj.get("kind"), (obj.get("metadata") or {}).get("name"))


def test_a_custom_resource_is_walked_whole_whatever_its_fields_are_called() -> None:
    """Only the API's own kinds and Kueue's skip `_VALIDATED` fields: a custom resource's `resources` or `affinity`
    may be free text, and is scrubbed like every other string."""
    from kueuediag.live.sanitize import REDACTED, sanitize_owned_object

    spec = {"resources": ["db password=Kq9CustomA"], "affinity": {"note": "token: Kq9CustomB"}}
    custom = sanitize_owned_object({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"},
                                    "spec": copy.deepcopy(spec)})
    assert custom["spec"] == {"resources": [f"db password={REDACTED}"], "affinity": {"note": f"token: {REDACTED}"}}
    own = sanitize_owned_object({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                                 "spec": copy.deepcopy(spec),
                                 "status": {"conditions": [{"type": "Failed", "message": "token: Kq9CustomC"}]}})
    assert own["spec"] == spec  # the API server would have refused these strings in a Job's validated fields
    assert own["status"]["conditions"][0]["message"] == f"token: {REDACTED}"  # every other field: walked


_ARG_PIECES = ["--token", "--password=hunter2", "-p", "-k", "x1", "sh", "-c", "run", "'", '"', "--db-pass", "secret",
               "password: hunter2", "key=val", "https://u:pw@host/x", "Bearer abcdefghijkl", "Authorization: Basic",
               "dXNlcjpwYXNzd29yZA==", "=", ":", " ", "--api-key", "token", "<redacted>", "-", "--", "session=1",
               "cookie:", "DSN", "\n", "&", ";", "pass", "auth", "--flag"]
_ARG = st.one_of(st.lists(st.sampled_from(_ARG_PIECES), max_size=5).map("".join),
                 st.lists(st.sampled_from(_ARG_PIECES), max_size=5).map(" ".join),
                 st.text(alphabet=st.sampled_from([*"abkpst-=: '\"/@"]), max_size=14))
_ENV = st.fixed_dictionaries(
    {"name": st.sampled_from(["A", "DB_PASSWORD", "TOKEN", "x"])},
    optional={"value": _ARG, "valueFrom": st.sampled_from([
        {"secretKeyRef": {"name": "db", "key": "password"}}, {"configMapKeyRef": {"name": "cfg", "key": "token"}},
        {"fieldRef": {"fieldPath": "metadata.name", "apiVersion": "v1"}}])})


@settings(max_examples=500, deadline=None)
@given(command=st.lists(_ARG, max_size=5), args=st.lists(_ARG, max_size=6), env=st.lists(_ENV, max_size=3))
def test_what_the_container_pass_made_safe_is_left_as_walking_it_again_would_leave_it(
        command: list[str], args: list[str], env: list[dict[str, Any]]) -> None:
    """`env`, `command` and `args` of a known kind's containers are skipped by the walk (`_BY_STRUCTURE`): after the
    container pass, walking them again changes no string, whatever the arguments hold (flags with and without
    values, shell scripts, credentials in URLs, header-like text, what the pass itself wrote)."""
    from kueuediag.live import sanitize

    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "main", "command": command, "args": args, "env": env}],
                    "initContainers": [{"name": "init", "args": list(reversed(args))}]}}
    skipping = sanitize._walk(copy.deepcopy(pod), skip=sanitize._VALIDATED)
    whole = sanitize._walk(copy.deepcopy(pod), skip=sanitize._OWN_WALK)
    assert skipping == whole
    assert all(v.get("value", sanitize.REDACTED) == sanitize.REDACTED for v in skipping["spec"]["containers"][0]["env"])
