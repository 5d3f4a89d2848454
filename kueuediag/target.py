"""Resolve `job/NAME`, `pod/NAME`, `workload/NAME`, `KIND.GROUP/NAME` or a bare NAME to a Workload.

The recipe is Kueue's own (kueue-facts §7.3): label `kueue.x-k8s.io/job-uid`, controller ownerReferences,
the pod-group label, the pod annotation `kueue.x-k8s.io/workload`, then the owner chain of a pod.
A job that exists without a Workload resolves to a Target with `workload=None`: that is a diagnosis
(not managed), not an error — unless the Workloads could not be collected (403, timeout, failed LIST in the
snapshot manifest): then the Workload is *unknown*, not absent (`workload_unknown` says why), and no check may
conclude that Kueue created none.

A collection failure is never "not found" either: when the LIST of the target's kind failed, the target is
looked up through the ownerReferences of the collected Workloads, and when that fails too, resolution raises
:class:`TargetUnreadable` (exit 4) naming what failed and the permission it needs.
"""

from __future__ import annotations

import difflib
from typing import Any

from kueuediag.errors import InputError, TargetNotFound, TargetUnreadable
from kueuediag.records import dataclass
from kueuediag.snapshot.held import Held
from kueuediag.snapshot.k8s import meta
from kueuediag.snapshot.kueue import WorkloadView, cluster_queue_of, kueue_index, workload, workload_of
from kueuediag.snapshot.model import Snapshot

KIND_ALIASES = {
    "job": ("Job", "batch"),
    "jobs": ("Job", "batch"),
    "jobset": ("JobSet", "jobset.x-k8s.io"),
    "jobsets": ("JobSet", "jobset.x-k8s.io"),
    "pod": ("Pod", ""),
    "pods": ("Pod", ""),
    "po": ("Pod", ""),
    "workload": ("Workload", "kueue.x-k8s.io"),
    "workloads": ("Workload", "kueue.x-k8s.io"),
    "wl": ("Workload", "kueue.x-k8s.io"),
    "kwl": ("Workload", "kueue.x-k8s.io"),
}
OWNER_KINDS_SKIP = {"Workload", "Event", "Node", "Namespace", "ConfigMap", "ClusterQueue", "LocalQueue",
                    "ResourceFlavor", "Cohort", "Topology", "WorkloadPriorityClass", "AdmissionCheck",
                    "ProvisioningRequest", "ProvisioningRequestConfig", "Lease", "ReplicaSet"}


@dataclass
class Target:
    """What `why` is asked about, resolved against one snapshot."""

    query: str
    namespace: str | None
    workload: WorkloadView | None
    owner: dict[str, Any] | None = None
    """the job-like object (or pod) the user named or that owns the Workload"""
    pod: dict[str, Any] | None = None
    workload_unknown: str | None = None
    """why the Workload could not be looked for (its collection failed); None when the lookup was complete"""

    @property
    def owner_kind(self) -> str | None:
        return self.owner.get("kind") if self.owner else None

    @property
    def owner_name(self) -> str | None:
        return meta(self.owner).get("name") if self.owner else None

    def cluster_queue(self, snap: Snapshot) -> str | None:
        if self.workload is None:
            return None
        return cluster_queue_of(kueue_index(snap), self.workload)

    @property
    def local_queue(self) -> str | None:
        if self.workload is not None:
            return self.workload.queue_name
        if self.owner is not None:
            return (meta(self.owner).get("labels") or {}).get("kueue.x-k8s.io/queue-name")
        return None


def parse_target(text: str) -> tuple[str | None, str | None, str]:
    """'job/x' → ('Job', 'batch', 'x'); 'rayjob.ray.io/x' → ('rayjob', 'ray.io', 'x'); 'x' → (None, None, 'x')."""
    text = text.strip()
    if not text:
        raise InputError("empty target (use job/NAME, pod/NAME, workload/NAME, KIND.GROUP/NAME or NAME)")
    if "/" not in text:
        return None, None, text
    kind, _, name = text.partition("/")
    if not name or "/" in name:
        raise InputError(f"invalid target {text!r} (use KIND/NAME)")
    alias = KIND_ALIASES.get(kind.lower())
    if alias:
        return alias[0], alias[1], name
    k, _, group = kind.partition(".")
    return k, group or None, name


def resolve(snap: Snapshot, text: str, namespace: str | None = None) -> Target:
    """Resolve `text` in `snap`; raises TargetNotFound (exit 3) only when every place it could be was read."""
    target = _resolve(snap, text, namespace)
    if target.workload is None:
        gap = collection_gap(snap, ("Workload",))
        if gap is not None:
            target.workload_unknown = gap
    return target


COLLECTED_AS = {"Workload": "workloads (list)", "Job": "jobs (list)", "Pod": "pods (list)"}
"""kind → the manifest `errors[].what` under which the collectors record a failed LIST of it"""


def collection_gap(snap: Snapshot, kinds: tuple[str, ...]) -> str | None:
    """'WHAT: ERROR' of the first manifest error saying `kinds` were not (completely) collected, else None."""
    wanted = {COLLECTED_AS[k] for k in kinds if k in COLLECTED_AS}
    for what, error in snap.manifest.errors:
        if what in wanted:
            return f"{what}: {error}"
    return None


def _lookup_kinds(kind: str | None) -> tuple[str, ...]:
    if kind is None:
        return ("Workload", "Job", "Pod")
    if kind in COLLECTED_AS:
        return (kind,) if kind == "Workload" else (kind, "Workload")
    return ("Workload",)  # other integrations are found through their Workload's ownerReferences


def _resolve(snap: Snapshot, text: str, namespace: str | None) -> Target:
    kind, group, name = parse_target(text)
    try:
        return _resolve_found(snap, text, kind, group, name, namespace)
    except TargetNotFound:
        gap = collection_gap(snap, _lookup_kinds(kind))
        if gap is None:
            raise
        via = _through_workload_owner(snap, text, kind, name, namespace)
        if via is not None:
            return via
        verdict = "not allowed to read it" if "(403)" in gap else "could not be read"
        raise TargetUnreadable(f"{text}: {verdict}{_in(namespace)}: {gap}") from None


def _through_workload_owner(snap: Snapshot, text: str, kind: str | None, name: str,
                            namespace: str | None) -> Target | None:
    """The target's Workload found by its ownerReference when the target's own kind was not collected."""
    if kind == "Workload":
        return None
    found = [workload_of(snap, snap.obj(h)) for h in snap.entries("Workload")
             if (namespace is None or h.namespace == namespace) and _owned_by(h, kind, name)]
    if len(found) != 1:
        return None
    w = found[0]
    return Target(query=text, namespace=w.namespace, workload=w, owner=None)


def _owned_by(held: Held, kind: str | None, name: str) -> bool:
    """The Workload names `kind/name` as its owner (read from its index keys: a malformed Workload still
    resolves, then fails)."""
    return any(ref_name == name and (kind is None or str(ref_kind or "").lower() == kind.lower())
               for _, ref_kind, ref_name, _ in held.owners)


def _resolve_found(snap: Snapshot, text: str, kind: str | None, group: str | None, name: str,
                   namespace: str | None) -> Target:
    if kind == "Workload":
        return _resolve_workload(snap, text, name, namespace)
    if kind is None:
        try:
            return _resolve_workload(snap, text, name, namespace)
        except TargetNotFound:
            pass
    candidates = _find_objects(snap, kind, group, name, namespace)
    if not candidates:
        bare = _find_objects(snap, kind, group, name, namespace, without_namespace=True)
        if bare:  # a manifest's object: what the API server returns always names its namespace
            found = ", ".join(sorted({f"{o['kind']}/{name}" for o in bare}))
            raise InputError(f"{text}: {found} in the snapshot has no metadata.namespace (a manifest rather than "
                             "an object read from the cluster?); set its namespace, or capture the cluster with "
                             "`kueuediag snapshot`")
        raise TargetNotFound(f"{text}: not found{_in(namespace)}", _suggest(snap, name, namespace))
    namespaces = sorted({meta(o).get("namespace") or "" for o in candidates})
    if len(candidates) > 1 and len(namespaces) > 1:
        raise InputError(f"{text}: ambiguous, found in namespaces {', '.join(namespaces)}; pass -n NAMESPACE")
    if len(candidates) > 1:
        kinds = sorted({o["kind"] for o in candidates})
        raise InputError(f"{text}: ambiguous, matches kinds {', '.join(kinds)}; use KIND/NAME")
    obj = candidates[0]
    ns = meta(obj).get("namespace")
    if obj["kind"] == "Pod":
        return _resolve_pod(snap, text, obj)
    return Target(query=text, namespace=ns, workload=workload_for_owner(snap, obj), owner=obj)


def _in(namespace: str | None) -> str:
    return f" in namespace {namespace}" if namespace else " in any namespace"


def _resolve_workload(snap: Snapshot, text: str, name: str, namespace: str | None) -> Target:
    if namespace is not None:
        w = workload(snap, namespace, name)
        found = [w] if w else []
    else:
        # match raw objects, then build only those: junk in the named Workload is the target's (exit 2), while
        # `workloads()` would leave it out and report "not found"
        found = [workload_of(snap, snap.obj(h)) for h in snap.entries("Workload") if h.name == name]
    if not found:
        raise TargetNotFound(f"{text}: no Workload named {name}{_in(namespace)}", _suggest(snap, name, namespace))
    if len(found) > 1:
        nss = ", ".join(sorted(w.namespace for w in found))
        raise InputError(f"{text}: ambiguous, Workloads named {name} exist in namespaces {nss}; pass -n NAMESPACE")
    w = found[0]
    owner = snap.by_uid(w.owner["uid"]) if w.owner and w.owner.get("uid") else None
    if owner is None and w.owner:
        owner = snap.get(w.owner.get("kind", ""), w.owner.get("name", ""), w.namespace)
    return Target(query=text, namespace=w.namespace, workload=w, owner=owner)


def _find_objects(snap: Snapshot, kind: str | None, group: str | None, name: str,
                  namespace: str | None, *, without_namespace: bool = False) -> list[dict[str, Any]]:
    """The namespaced objects named `name` (in `namespace` if given); with `without_namespace`, instead those of
    that name that carry no namespace at all (which no `-n` can select)."""
    out = []
    for k in snap.kinds():
        if k in OWNER_KINDS_SKIP:
            continue
        if kind is not None and k.lower() != kind.lower():
            continue
        for h in snap.entries(k):
            if h.name != name or bool(h.namespace) == without_namespace:
                continue
            if namespace is not None and not without_namespace and h.namespace != namespace:
                continue
            if group is not None:
                api_group = h.api_version.rpartition("/")[0]
                if api_group != group and not (group == "" and api_group == ""):
                    continue
            out.append(snap.obj(h))
    return out


def _workload_objects_by_job_uid(snap: Snapshot) -> dict[tuple[str, str], Held]:
    """Workloads by (namespace, `kueue.x-k8s.io/job-uid` label), read from their index keys so that resolving
    one target decodes and normalises only its own Workload."""
    out: dict[tuple[str, str], Held] = {}
    for h in snap.entries("Workload"):
        job_uid = h.labels.get("kueue.x-k8s.io/job-uid")
        if isinstance(job_uid, str) and job_uid:
            out[(h.namespace or "", job_uid)] = h
    return out


def workload_for_owner(snap: Snapshot, owner: dict[str, Any]) -> WorkloadView | None:
    """The Workload of a job-like object: label job-uid first, then ownerReferences."""
    m = meta(owner)
    uid, ns = m.get("uid"), m.get("namespace")
    if uid:
        by_label = snap.memo("workload-objects-by-job-uid", lambda: _workload_objects_by_job_uid(snap))
        held = by_label.get((str(ns or ""), str(uid)))
        if held is not None:
            return workload_of(snap, snap.obj(held))
        for child in snap.children(uid):
            if child.get("kind") == "Workload":
                return workload(snap, meta(child).get("namespace") or "", meta(child).get("name") or "")
    # prebuilt workloads
    prebuilt = (m.get("labels") or {}).get("kueue.x-k8s.io/prebuilt-workload-name") or (
        m.get("annotations") or {}).get("kueue.x-k8s.io/prebuilt-workload-name")
    if prebuilt and ns:
        return workload(snap, str(ns), str(prebuilt))
    return None


def _resolve_pod(snap: Snapshot, text: str, pod: dict[str, Any]) -> Target:
    m = meta(pod)
    ns = m.get("namespace") or ""
    lbls, ann = m.get("labels") or {}, m.get("annotations") or {}
    for key in (ann.get("kueue.x-k8s.io/workload"), lbls.get("kueue.x-k8s.io/pod-group-name"),
                ann.get("kueue.x-k8s.io/pod-group-name")):
        if key:
            w = workload(snap, ns, key)
            if w:
                owner = _top_owner(snap, pod)
                return Target(query=text, namespace=ns, workload=w, owner=owner, pod=pod)
    # single-pod integration: the pod owns its Workload
    w = workload_for_owner(snap, pod)
    if w:
        return Target(query=text, namespace=ns, workload=w, owner=pod, pod=pod)
    # walk up the owner chain, use the top-most owner that has a Workload
    current: dict[str, Any] | None = pod
    best: tuple[dict[str, Any], WorkloadView | None] = (pod, None)
    seen: set[str] = set()
    while current is not None:
        refs = meta(current).get("ownerReferences") or []
        ref = next((r for r in refs if r.get("controller")), refs[0] if refs else None)
        if not ref or ref.get("uid") in seen:
            break
        seen.add(ref.get("uid", ""))
        parent = snap.by_uid(ref.get("uid", "")) or snap.get(ref.get("kind", ""), ref.get("name", ""), ns)
        if parent is None:
            break
        w = workload_for_owner(snap, parent)
        if w is not None:
            best = (parent, w)
        elif best[1] is None:
            best = (parent, None)
        current = parent
    return Target(query=text, namespace=ns, workload=best[1], owner=best[0], pod=pod)


def _top_owner(snap: Snapshot, obj: dict[str, Any]) -> dict[str, Any] | None:
    current, top = obj, None
    seen: set[str] = set()
    while True:
        refs = meta(current).get("ownerReferences") or []
        ref = next((r for r in refs if r.get("controller")), refs[0] if refs else None)
        if not ref or ref.get("uid") in seen:
            return top
        seen.add(ref.get("uid", ""))
        parent = snap.by_uid(ref.get("uid", ""))
        if parent is None:
            return top
        top = current = parent


def _suggest(snap: Snapshot, name: str, namespace: str | None) -> list[str]:
    names: dict[str, str] = {}
    for h in snap.entries("Workload"):
        if h.namespace and (namespace is None or h.namespace == namespace):  # no `-n` selects a namespace-less one
            names[h.name] = f"workload/{h.name} -n {h.namespace}"
            owner = next((r for r in h.owners if r[3]), h.owners[0] if h.owners else None)
            if owner and owner[2]:
                names.setdefault(owner[2], f"{str(owner[1] or '').lower()}/{owner[2]} -n {h.namespace}")
    for kind in ("Job", "JobSet", "Pod"):
        for h in snap.entries(kind):
            if h.namespace and (namespace is None or h.namespace == namespace):
                names.setdefault(h.name, f"{kind.lower()}/{h.name} -n {h.namespace}")
    close = difflib.get_close_matches(name, list(names), n=5, cutoff=0.5)
    return [names[c] for c in close]
