"""The shipped RBAC (deploy/rbac/) covers exactly the requests the collectors make: nothing missing, nothing extra.

The requests of `why` (a Job, a JobSet owner fetched by GET, and the GET of the target's ClusterQueue made when
listing them is forbidden) and of `snapshot -A` are recorded by the test API server and mapped to RBAC terms
(API group, resource or subresource, verb; non-resource URLs for discovery). The on-call ClusterRole must equal
their union; the researcher Role must equal the namespaced requests `why` makes in the target's namespace.
"""

from __future__ import annotations

import copy
import fnmatch
from pathlib import Path
from typing import Any

import pytest
import yaml

from kueuediag.live import LiveOptions, collect_for_why, take_snapshot
from kueuediag.snapshot.reader import RawSnapshot
from tests.live.apiserver import Fault, Recorded
from tests.live.conftest import ServerFactory

RBAC = Path(__file__).resolve().parents[2] / "deploy" / "rbac"
Rule = tuple[str, str, str]
"""(apiGroup, resource, verb), or ("nonResourceURL", url pattern, verb)"""


def rbac_terms(path: str) -> tuple[str, str | None, str, str]:
    """A request path as (group, namespace, resource, verb); ("nonResourceURL", None, path, "get") for discovery."""
    segs = [s for s in path.split("/") if s]
    if segs[:1] == ["api"]:
        group, rest = "", segs[2:]
    elif segs[:1] == ["apis"] and len(segs) >= 3:
        group, rest = segs[1], segs[3:]
    else:
        return "nonResourceURL", None, path, "get"
    if not rest:
        return "nonResourceURL", None, path, "get"
    namespace = None
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    if len(rest) == 1:
        return group, namespace, rest[0], "list"
    resource = rest[0] if len(rest) == 2 else f"{rest[0]}/{rest[2]}"
    return group, namespace, resource, "get"


def rules_of(doc: dict[str, Any]) -> set[Rule]:
    out: set[Rule] = set()
    for rule in doc["rules"]:
        for verb in rule["verbs"]:
            for url in rule.get("nonResourceURLs") or ():
                out.add(("nonResourceURL", url, verb))
            for group in rule.get("apiGroups") or ():
                for resource in rule.get("resources") or ():
                    out.add((group, resource, verb))
    return out


def as_rule(group: str, resource: str, verb: str, patterns: set[str]) -> Rule:
    if group == "nonResourceURL":
        matched = [p for p in patterns if fnmatch.fnmatchcase(resource, p)]
        return ("nonResourceURL", matched[0] if matched else resource, verb)
    return (group, resource, verb)


def jobset_owned(raw: RawSnapshot) -> list[dict[str, Any]]:
    """The live fixture plus a JobSet-owned Workload, so that owners of other integrations are read too."""
    objs = [copy.deepcopy(o) for o in raw.objects]
    wl = copy.deepcopy(next(o for o in objs if o["kind"] == "Workload"
                            and o["metadata"]["name"].startswith("job-llm-finetune")))
    uid = "5f0e8a52-4d0c-4c55-8f1a-7f0b9a9f0c11"
    wl["metadata"].update(name="jobset-sweep-1a2b3", uid="5f0e8a52-4d0c-4c55-8f1a-7f0b9a9f0c12",
                          ownerReferences=[{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                                            "name": "sweep", "uid": uid, "controller": True}],
                          labels={"kueue.x-k8s.io/job-uid": uid})
    objs.append(wl)
    objs.append({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                 "metadata": {"name": "sweep", "namespace": "team-a", "uid": uid,
                              "creationTimestamp": "2026-11-20T09:15:00Z",
                              "labels": {"kueue.x-k8s.io/queue-name": "team-a-queue"}},
                 "spec": {"suspend": True, "replicatedJobs": []}})
    return objs


def recorded(api_server: ServerFactory, live_raw: RawSnapshot, tmp_path: Path) -> tuple[list[Recorded],
                                                                                          list[Recorded]]:
    """(requests of every `why` scenario, requests of `snapshot -A`)."""
    objs = jobset_owned(live_raw)
    why: list[Recorded] = []
    for target, faults in (("job/llm-finetune", []), ("jobset/sweep", []),
                           ("job/llm-finetune", [Fault(path=r"/clusterqueues$", status=403)])):
        with api_server(objects=objs) as srv:
            srv.cluster.faults.extend(faults)
            collect_for_why(target, "team-a", LiveOptions(kubeconfig=str(srv.kubeconfig(tmp_path))))
            why += srv.cluster.requests
    with api_server(objects=objs) as srv:
        take_snapshot(tmp_path / "all.tar.gz", LiveOptions(kubeconfig=str(srv.kubeconfig(tmp_path))),
                      all_namespaces=True)
        snapshot = list(srv.cluster.requests)
    return why, snapshot


@pytest.fixture
def requests(api_server: ServerFactory, live_raw: RawSnapshot, tmp_path: Path) -> tuple[list[Recorded],
                                                                                         list[Recorded]]:
    return recorded(api_server, live_raw, tmp_path)


def test_oncall_clusterrole_is_exactly_what_why_and_snapshot_read(
        requests: tuple[list[Recorded], list[Recorded]]) -> None:
    doc = yaml.safe_load((RBAC / "kueuediag-oncall.yaml").read_text())
    assert doc["kind"] == "ClusterRole"
    rules = rules_of(doc)
    patterns = {r[1] for r in rules if r[0] == "nonResourceURL"}
    why, snapshot = requests
    assert {r.method for r in why + snapshot} == {"GET"}
    used = set()
    for r in why + snapshot:
        group, _ns, resource, verb = rbac_terms(r.path)
        used.add(as_rule(group, resource, verb, patterns))
    assert sorted(used - rules) == [], "requests the ClusterRole does not allow"
    assert sorted(rules - used) == [], "rules no collector needs"
    assert not any("secret" in r[1] or "*" in (r[0], r[1]) for r in rules if r[0] != "nonResourceURL")
    assert {v for _, _, v in rules} == {"get", "list"}


def test_researcher_role_is_exactly_what_why_reads_in_the_namespace(
        requests: tuple[list[Recorded], list[Recorded]]) -> None:
    doc = yaml.safe_load((RBAC / "kueuediag-researcher.yaml").read_text())
    assert doc["kind"] == "Role" and doc["metadata"]["namespace"] == "team-a"
    rules = rules_of(doc)
    why, _ = requests
    used = set()
    for r in why:
        group, ns, resource, verb = rbac_terms(r.path)
        if ns == "team-a":
            used.add((group, resource, verb))
    assert sorted(used - rules) == [] and sorted(rules - used) == []
    assert not any("secret" in r[1] for r in rules)


@pytest.mark.parametrize(("path", "terms"), [
    ("/api/v1/namespaces/team-a", ("", None, "namespaces", "get")),
    ("/api/v1/namespaces/team-a/pods", ("", "team-a", "pods", "list")),
    ("/api/v1/namespaces/kueue-system/pods/p/log", ("", "kueue-system", "pods/log", "get")),
    ("/apis/kueue.x-k8s.io/v1beta2/clusterqueues/team-a", ("kueue.x-k8s.io", None, "clusterqueues", "get")),
    ("/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/team-a/localqueues/q/pendingworkloads",
     ("visibility.kueue.x-k8s.io", "team-a", "localqueues/pendingworkloads", "get")),
    ("/apis/kueue.x-k8s.io/v1beta2", ("nonResourceURL", None, "/apis/kueue.x-k8s.io/v1beta2", "get")),
])
def test_request_paths_map_to_rbac_terms(path: str, terms: tuple[str, str | None, str, str]) -> None:
    assert rbac_terms(path) == terms
