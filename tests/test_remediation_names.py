"""No printed remediation names an object that does not exist.

For every target of every bundled snapshot (fixtures/snapshots, scenarios, incidents, the demo examples), every
finding's remediation text, fix command and fix patch is read for the objects it acts on — `kubectl describe pod
X`, `kubectl patch clusterqueue Y`, `kubectl delete pod Z`, `kubectl logs deploy/W`, `kubectl kueue resume
localqueue V`, a Patch on kind/name — and each must exist in the snapshot. A command that creates an object
(`kubectl create`, `kubectl apply`, `kubectl kueue create`) is the exception: it must be marked as creating, and
the object it creates must not exist yet. A kind the snapshot holds no object of at all cannot be checked and is
skipped (the snapshot cannot tell absence from not-collected).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from kueuediag.analysis.queue_route import collected
from kueuediag.models import Finding
from kueuediag.snapshot.model import Snapshot
from tests.bundled import bundled_sources, snapshot, source_id, verdicts

KINDS = {
    "pod": "Pod", "pods": "Pod", "po": "Pod",
    "node": "Node", "nodes": "Node", "no": "Node",
    "job": "Job", "jobs": "Job", "jobset": "JobSet", "jobsets": "JobSet",
    "workload": "Workload", "workloads": "Workload", "wl": "Workload",
    "clusterqueue": "ClusterQueue", "clusterqueues": "ClusterQueue", "cq": "ClusterQueue",
    "localqueue": "LocalQueue", "localqueues": "LocalQueue", "lq": "LocalQueue",
    "resourceflavor": "ResourceFlavor", "resourceflavors": "ResourceFlavor", "rf": "ResourceFlavor",
    "cohort": "Cohort", "cohorts": "Cohort", "admissioncheck": "AdmissionCheck", "admissionchecks": "AdmissionCheck",
    "topology": "Topology", "topologies": "Topology",
    "deploy": "Deployment", "deployment": "Deployment", "deployments": "Deployment",
    "pvc": "PersistentVolumeClaim", "persistentvolumeclaim": "PersistentVolumeClaim",
    "resourcequota": "ResourceQuota", "quota": "ResourceQuota", "configmap": "ConfigMap", "cm": "ConfigMap",
    "namespace": "Namespace", "ns": "Namespace", "priorityclass": "PriorityClass",
    "workloadpriorityclass": "WorkloadPriorityClass", "provisioningrequest": "ProvisioningRequest",
}
ACTS_ON = {"get", "describe", "patch", "delete", "edit", "label", "annotate", "logs", "resume", "stop", "restart",
           "cordon", "uncordon", "drain", "taint"}
CREATES = {"create", "apply"}
VALUE_FLAGS = {"-n", "--namespace", "-p", "--patch", "--type", "-o", "--output", "-l", "--selector", "-c",
               "--container", "--field-selector", "-L", "--label-columns", "--context", "-f", "--filename",
               "--grace-period", "--since", "--tail", "--timeout"}
CLUSTER_SCOPED = {"Node", "ClusterQueue", "ResourceFlavor", "Cohort", "AdmissionCheck", "Topology", "Namespace",
                  "PriorityClass", "WorkloadPriorityClass"}


@dataclass(frozen=True)
class Named:
    """An object a printed command or patch acts on."""

    kind: str
    name: str
    namespace: str | None
    creates: bool
    text: str


def _commands(text: str) -> Iterator[str]:
    for m in re.finditer(r"`([^`]*\bkubectl\b[^`]*)`", text):
        yield m.group(1)


def named_in_command(command: str) -> list[Named]:
    """The objects one kubectl command acts on (empty when it names none, e.g. a label selector)."""
    try:
        tokens = shlex.split(command.split("|", 1)[0])
    except ValueError:
        tokens = command.split("|", 1)[0].split()
    if "kubectl" not in tokens:
        return []
    tokens = tokens[tokens.index("kubectl") + 1:]
    namespace = None
    words: list[str] = []
    skip = False
    for i, tok in enumerate(tokens):
        if skip:
            skip = False
            continue
        if tok in ("-n", "--namespace"):
            namespace = tokens[i + 1] if i + 1 < len(tokens) else None
            skip = True
        elif tok.startswith("--namespace="):
            namespace = tok.split("=", 1)[1]
        elif tok in VALUE_FLAGS:
            skip = True
        elif tok.startswith("-"):
            continue
        else:
            words.append(tok)
    if words[:1] == ["kueue"]:
        words = words[1:]
    if words[:2] == ["rollout", "restart"]:
        words = words[1:]
    if not words or (words[0] not in ACTS_ON and words[0] not in CREATES):
        return []
    verb, rest = words[0], words[1:]
    creates = verb in CREATES
    if verb in ("cordon", "uncordon", "drain", "taint"):
        return [Named("Node", n, None, creates, command) for n in rest[:1] if not n.startswith("<")]
    out: list[Named] = []
    if rest and "/" in rest[0]:
        for spec in rest:
            kind, _, name = spec.partition("/")
            if kind.lower() in KINDS and name and not name.startswith("<"):
                out.append(Named(KINDS[kind.lower()], name, namespace, creates, command))
        return out
    if verb == "logs" and rest:
        return [Named("Pod", rest[0], namespace, creates, command)] if not rest[0].startswith("<") else []
    if len(rest) >= 2 and rest[0].lower() in KINDS:
        kind = KINDS[rest[0].lower()]
        names = rest[1:] if verb in ("get", "describe", "delete") else rest[1:2]  # label/annotate: then key=value
        return [Named(kind, n, namespace, creates, command) for n in names if not n.startswith("<")
                and "=" not in n]
    return []


def named(f: Finding) -> list[Named]:
    """Every object the finding's remediation acts on; a create that follows a delete of the same object in the
    same sentence (recreate: `kubectl delete localqueue q` then `kubectl kueue create localqueue q`) is dropped."""
    out: list[Named] = []
    for text in (*f.remediation, *(x.text for x in f.fixes)):
        deleted: set[tuple[str, str]] = set()
        for cmd in _commands(text):
            for n in named_in_command(cmd):
                if n.creates and (n.kind, n.name) in deleted:
                    continue
                if re.search(r"\bdelete\b", cmd):
                    deleted.add((n.kind, n.name))
                out.append(n)
    for fix in f.fixes:
        if fix.command:
            out += named_in_command(fix.command)
        if fix.patch is not None and not fix.patch.create and not fix.patch.assumed:  # a create makes the object
            out.append(Named(fix.patch.kind, fix.patch.name, fix.patch.namespace, False, f"patch of {fix.patch}"))
    return out


def exists(snap: Snapshot, n: Named) -> bool | None:
    """Whether the object is in the snapshot; None when the snapshot holds no object of its kind at all."""
    of_kind = snap.of_kind(n.kind)
    if not of_kind or not collected(snap, n.kind, n.namespace):
        return None
    if n.kind in CLUSTER_SCOPED:
        return snap.get(n.kind, n.name) is not None
    if n.namespace is not None:
        return snap.get(n.kind, n.name, n.namespace) is not None
    return any(o.get("metadata", {}).get("name") == n.name for o in of_kind)


@cache
def problems(source: Path) -> tuple[str, ...]:
    snap = snapshot(source)
    out: list[str] = []
    for (text, _ns), verdict in verdicts(source).items():
        for ranked in verdict.findings:
            for n in named(ranked.finding):
                there = exists(snap, n)
                if there is None:
                    continue
                if n.creates and there:
                    out.append(f"{text}: {ranked.finding.code} creates {n.kind}/{n.name}, which exists: {n.text}")
                elif not n.creates and not there:
                    out.append(f"{text}: {ranked.finding.code} names {n.kind} {n.namespace or ''}/{n.name}, which "
                               f"does not exist: {n.text}")
    return tuple(dict.fromkeys(out))


@pytest.mark.parametrize("source", bundled_sources(), ids=source_id)
def test_no_remediation_names_an_object_that_does_not_exist(source: Path) -> None:
    assert problems(source) == ()


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("kubectl -n vision describe pod seg-x7k2p", [("Pod", "seg-x7k2p", "vision", False)]),
        ("kubectl patch clusterqueue gpu --type merge -p '{\"spec\":{}}'", [("ClusterQueue", "gpu", None, False)]),
        ("kubectl -n kueue-system logs deploy/kueue-controller-manager | grep x",
         [("Deployment", "kueue-controller-manager", "kueue-system", False)]),
        ("kubectl kueue resume localqueue team-a -n ml", [("LocalQueue", "team-a", "ml", False)]),
        ("kubectl kueue create resourceflavor a100", [("ResourceFlavor", "a100", None, True)]),
        ("kubectl uncordon gke-pool-1", [("Node", "gke-pool-1", None, False)]),
        ("kubectl get nodes -L cloud.google.com/gke-accelerator", []),
        ("kubectl get workloads -A", []),
        ("kubectl -n ml delete pod p-1 --force --grace-period=0", [("Pod", "p-1", "ml", False)]),
        ("kubectl annotate workload w -n ml kueue.x-k8s.io/admission-gated-by-", [("Workload", "w", "ml", False)]),
    ],
)
def test_commands_are_read_for_the_objects_they_act_on(
        command: str, expected: list[tuple[str, str, str | None, bool]]) -> None:
    assert [(n.kind, n.name, n.namespace, n.creates) for n in named_in_command(command)] == expected
