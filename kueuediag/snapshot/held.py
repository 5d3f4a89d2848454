"""Objects held as their JSON bytes until a check reads them.

A 10,000-GPU cluster's snapshot is mostly Workloads, Jobs and Pods that finished long ago: 86 % of the Workloads
and 90 % of the Pods of the seed-sized benchmark. Parsing every one of them into Python dicts took about four
times the snapshot's bytes in memory and most of the load time, although a diagnosis reads a few hundred of them.

So a kubectl List file (``-o json``) is split once into its items' byte ranges (msgspec scans the document without
building it), and each item of a bulk kind (:data:`HELD_KINDS`) is read only up to its *head*: kind, apiVersion,
the metadata the indexes need (namespace, name, uid, resourceVersion, owner references, labels) and the two facts
that say whether it is *settled* — a Workload whose Finished condition is True, a Pod in phase Succeeded or Failed
that is not being deleted. The full object is decoded on first use (:meth:`Held.obj`) and kept from then on, so
every caller sees the same dict.

The head is decoded with the same types the loader enforces for every object's metadata; an item whose head
does not fit them (or whose JSON a strict parser refuses) is decoded whole and loaded as before, so a malformed
object still gets its precise, one-line input error.
"""

from __future__ import annotations

from typing import Any

import msgspec

from kueuediag import jsonload

HELD_KINDS = frozenset({"Workload", "Pod", "Job", "Event"})
"""Bulk kinds held as bytes; every other kind is small and is decoded (and shape-checked) at load."""
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
"""Dropped from every object when it is decoded (nothing reads it; it may carry what sanitising removed)."""
_KUEUE_ANNOTATION_PREFIX = "kueue.x-k8s.io/"


class _Ref(msgspec.Struct):
    uid: str | None = None
    kind: str | None = None
    name: str | None = None
    apiVersion: str | None = None  # noqa: N815 - the JSON field's name
    controller: Any = None


class _Meta(msgspec.Struct):
    name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resourceVersion: Any = None  # noqa: N815
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    creationTimestamp: str | None = None  # noqa: N815
    deletionTimestamp: str | None = None  # noqa: N815
    ownerReferences: list[_Ref] | None = None  # noqa: N815


class _Condition(msgspec.Struct):
    type: Any = None
    status: Any = None
    lastTransitionTime: Any = None  # noqa: N815


class _Assignment(msgspec.Struct):
    flavors: dict[str, Any] | None = None
    resourceUsage: dict[str, Any] | None = None  # noqa: N815


class _Admission(msgspec.Struct):
    clusterQueue: Any = None  # noqa: N815
    podSetAssignments: list[_Assignment] | None = None  # noqa: N815


class _Status(msgspec.Struct):
    phase: Any = None
    conditions: list[_Condition] | None = None
    admission: _Admission | None = None


class _Head(msgspec.Struct):
    kind: Any = None
    apiVersion: Any = None  # noqa: N815
    metadata: _Meta | None = None
    spec: msgspec.Raw = msgspec.Raw(b"null")
    status: _Status | None = None


class _List(msgspec.Struct):
    kind: Any = None
    apiVersion: Any = None  # noqa: N815
    items: list[msgspec.Raw] | None = None


_LIST = msgspec.json.Decoder(_List)
Usage = tuple[tuple[int, str, str, Any], ...]
_HEAD = msgspec.json.Decoder(_Head)


class Held:
    """One object of a snapshot: its identity and index keys, and the object itself once decoded."""

    __slots__ = ("_obj", "_raw", "annotations", "api_version", "created", "deleting", "kind", "labels", "name",
                 "namespace", "origin", "owners", "rv", "settled", "settled_at", "settled_in", "settled_usage", "uid")

    def __init__(self, kind: str, api_version: str, name: str, namespace: str | None, uid: str | None,
                 rv: int, owners: tuple[tuple[str | None, str | None, str | None, bool], ...],
                 labels: dict[str, str], annotations: dict[str, str], created: str | None, deleting: bool,
                 settled: bool, origin: str | None, raw: Any = None, obj: dict[str, Any] | None = None,
                 settled_at: str | None = None, settled_in: str | None = None,
                 settled_usage: Usage = ()) -> None:
        self.kind = kind
        self.api_version = api_version
        self.name = name
        self.namespace = namespace
        self.uid = uid
        self.rv = rv
        self.owners = owners
        """(uid, kind, name, controller) of each owner reference"""
        self.labels = labels
        self.annotations = annotations
        """only Kueue's own annotations (``kueue.x-k8s.io/…``): the ones indexes are keyed by"""
        self.created = created
        self.deleting = deleting
        self.settled = settled
        """finished for good: a Finished Workload, a Succeeded/Failed Pod not being deleted"""
        self.settled_at = settled_at
        """when a settled Workload finished (its Finished condition's lastTransitionTime), when recorded"""
        self.settled_in = settled_in
        """the ClusterQueue a settled Workload was admitted to (status.admission.clusterQueue), when recorded"""
        self.settled_usage = settled_usage
        """(pod set index, flavor, resource, quantity as written) of a settled Workload's status.admission: what
        it held until it finished"""
        self.origin = origin
        self._raw = raw
        self._obj = obj

    @property
    def decoded(self) -> bool:
        return self._obj is not None

    def obj(self) -> dict[str, Any]:
        """The whole object (decoded on first use, then shared by every caller)."""
        obj = self._obj
        if obj is None:
            obj = jsonload.loads(memoryview(self._raw))
            obj.setdefault("kind", self.kind)
            obj.setdefault("apiVersion", self.api_version)
            annotations = obj["metadata"].get("annotations")
            if annotations and LAST_APPLIED in annotations:
                del annotations[LAST_APPLIED]
            self._obj = obj
            self._raw = None
        return obj


def held_of(obj: dict[str, Any], origin: str | None) -> Held:
    """The Held record of an object already decoded (small kinds, YAML, live collection)."""
    meta = obj["metadata"]
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    return Held(
        kind=obj["kind"], api_version=obj["apiVersion"], name=meta["name"], namespace=meta.get("namespace"),
        uid=meta.get("uid") or None, rv=_rv(meta.get("resourceVersion")),
        owners=tuple((r.get("uid"), r.get("kind"), r.get("name"), bool(r.get("controller")))
                     for r in meta.get("ownerReferences") or () if isinstance(r, dict)),
        labels=labels, annotations={k: v for k, v in annotations.items() if k.startswith(_KUEUE_ANNOTATION_PREFIX)},
        created=meta.get("creationTimestamp") if isinstance(meta.get("creationTimestamp"), str) else None,
        deleting=meta.get("deletionTimestamp") is not None, settled=_settled_dict(obj), origin=origin, obj=obj,
        settled_at=_finished_at_dict(obj), settled_in=_admitted_to_dict(obj),
        settled_usage=_usage_dict(obj) if _settled_dict(obj) else (),
    )


def split_list(data: bytes, origin: str) -> list[dict[str, Any] | Held] | None:
    """The items of a kubectl JSON List: bulk kinds as Held, the rest decoded; None when `data` is not a List
    msgspec can read (the caller parses it the ordinary way and reports any error)."""
    try:
        envelope = _LIST.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None
    kind = envelope.kind
    if envelope.items is None or not (isinstance(kind, str) and kind.endswith("List")):
        return None
    item_kind = kind[:-4] if kind != "List" else None
    list_version = envelope.apiVersion if isinstance(envelope.apiVersion, str) else None
    out: list[dict[str, Any] | Held] = []
    for raw in envelope.items:
        held = _hold(raw, item_kind, list_version, origin)
        if held is not None:
            out.append(held)
            continue
        try:
            obj = jsonload.loads(memoryview(raw))
        except ValueError:
            return None  # let the ordinary parser report it
        if not isinstance(obj, dict):
            return None
        if item_kind and "kind" not in obj:
            obj["kind"] = item_kind
            if list_version and "apiVersion" not in obj:
                obj["apiVersion"] = list_version
        out.append(obj)
    return out


def _hold(raw: msgspec.Raw, item_kind: str | None, list_version: str | None, origin: str) -> Held | None:
    """The Held record of one List item, or None when it must be decoded whole (not a bulk kind, or a head that
    does not have the types every object's metadata must have)."""
    try:
        head = _HEAD.decode(raw)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None
    kind = head.kind if head.kind is not None else item_kind
    api = head.apiVersion if head.apiVersion is not None else (list_version if item_kind else None)
    meta = head.metadata
    if kind not in HELD_KINDS or not isinstance(api, str) or not api or meta is None or not meta.name:
        return None
    spec = bytes(memoryview(head.spec)[:1]) or b"n"
    if spec not in (b"{", b"n"):
        return None  # spec is not a mapping: the loader names the field
    status = head.status
    conditions = (status.conditions if status is not None else None) or ()
    settled_at = None
    if kind == "Workload":
        finished = next((c for c in conditions if c.type == "Finished" and c.status == "True"), None)
        settled = finished is not None
        if finished is not None and isinstance(finished.lastTransitionTime, str):
            settled_at = finished.lastTransitionTime
    elif kind == "Pod":
        settled = status is not None and status.phase in ("Succeeded", "Failed") and meta.deletionTimestamp is None
    else:
        settled = False
    annotations = meta.annotations or {}
    return Held(
        kind=kind, api_version=api, name=meta.name, namespace=meta.namespace, uid=meta.uid or None,
        rv=_rv(meta.resourceVersion),
        owners=tuple((r.uid, r.kind, r.name, bool(r.controller)) for r in meta.ownerReferences or ()),
        labels=meta.labels or {},
        annotations={k: v for k, v in annotations.items() if k.startswith(_KUEUE_ANNOTATION_PREFIX)},
        created=meta.creationTimestamp, deleting=meta.deletionTimestamp is not None, settled=settled,
        origin=origin, raw=raw, settled_at=settled_at,
        settled_in=_str(status.admission.clusterQueue) if settled and status and status.admission else None,
        settled_usage=_usage(status.admission.podSetAssignments) if settled and status and status.admission else (),
    )


def _settled_dict(obj: dict[str, Any]) -> bool:
    kind = obj.get("kind")
    status = obj.get("status")
    if kind not in ("Workload", "Pod") or not isinstance(status, dict):
        return False
    if kind == "Pod":
        return status.get("phase") in ("Succeeded", "Failed") and obj["metadata"].get("deletionTimestamp") is None
    conds = status.get("conditions")
    return isinstance(conds, list) and any(isinstance(c, dict) and c.get("type") == "Finished"
                                           and c.get("status") == "True" for c in conds)


def _finished_at_dict(obj: dict[str, Any]) -> str | None:
    status = obj.get("status")
    conds = status.get("conditions") if isinstance(status, dict) and obj.get("kind") == "Workload" else None
    for c in conds if isinstance(conds, list) else ():
        if isinstance(c, dict) and c.get("type") == "Finished" and c.get("status") == "True":
            moment = c.get("lastTransitionTime")
            return moment if isinstance(moment, str) else None
    return None


def _usage(assignments: list[_Assignment] | None) -> Usage:
    out = []
    for i, a in enumerate(assignments or ()):
        flavors = a.flavors or {}
        for resource, quantity in (a.resourceUsage or {}).items():
            flavor = flavors.get(resource)
            if isinstance(flavor, str) and flavor:
                out.append((i, flavor, resource, quantity))
    return tuple(out)


def _usage_dict(obj: dict[str, Any]) -> Usage:
    admission = (obj.get("status") or {}).get("admission")
    assignments = admission.get("podSetAssignments") if isinstance(admission, dict) else None
    if not isinstance(assignments, list):
        return ()
    try:
        return _usage([msgspec.convert(a, _Assignment) for a in assignments])
    except msgspec.ValidationError:
        return ()


def _admitted_to(obj: dict[str, Any]) -> str | None:
    status = obj.get("status")
    admission = status.get("admission") if isinstance(status, dict) else None
    return _str(admission.get("clusterQueue")) if isinstance(admission, dict) else None


def _admitted_to_dict(obj: dict[str, Any]) -> str | None:
    return _admitted_to(obj) if _settled_dict(obj) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _rv(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0
