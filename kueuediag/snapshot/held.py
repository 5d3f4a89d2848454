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

import mmap
import os
import re
from sys import intern
from typing import Any

import msgspec

from kueuediag import jsonload

DROPPED_KINDS = frozenset({"Secret"})
"""Never kept in memory, even when a user's dump contains them (and never read from a cluster)."""
HELD_KINDS = frozenset({"Workload", "Pod", "Job", "Event"})
INDEXED_LABELS = ("kueue.x-k8s.io/job-uid", "kueue.x-k8s.io/pod-group-name", "control-plane", "app.kubernetes.io/name")
"""The labels a Held record keeps: the ones the indexes are keyed by (the object keeps all of them)."""
INDEXED_ANNOTATIONS = ("kueue.x-k8s.io/pod-group-name", "kueue.x-k8s.io/workload")
_NONE: dict[str, str] = {}
"""The shared (never written) labels/annotations of a record that has none of the indexed ones."""
"""Bulk kinds held as bytes; every other kind is small and is decoded (and shape-checked) at load."""
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
"""Dropped from every object when it is decoded (nothing reads it; it may carry what sanitising removed)."""


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
    podSetAssignments: msgspec.Raw = msgspec.Raw(b"null")  # noqa: N815 - read once per distinct text


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


class _Heads(msgspec.Struct):
    items: list[_Head] | None = None


_LIST = msgspec.json.Decoder(_List)
Usage = tuple[tuple[str, str, Any], ...]
_HEAD = msgspec.json.Decoder(_Head)
_HEADS = msgspec.json.Decoder(_Heads)
_ASSIGNMENTS = msgspec.json.Decoder(list[_Assignment] | None)


class OpenFile:
    """A snapshot file kept open so that held items can be read back by offset (`os.pread`), touching no
    mapping: decoding a few scattered items then costs only their own bytes in memory."""

    def __init__(self, path: str, fd: int) -> None:
        self.path = path
        self.fd = fd

    def read(self, offset: int, length: int) -> bytes:
        data = os.pread(self.fd, length, offset)
        if len(data) != length:
            raise ValueError(f"{self.path} changed while kueuediag was reading it")
        return data

    def __del__(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass


class InMemory:
    """Bytes read whole (an archive's member, a small file), from which held items are read back by offset as
    from an :class:`OpenFile`: what a child process that split the bytes can name by offset and length."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def read(self, offset: int, length: int) -> memoryview:
        return memoryview(self.data)[offset:offset + length]


Source = OpenFile | InMemory
"""Where a held item read by offset is read back from."""


class Held:
    """One object of a snapshot: its identity and index keys, and the object itself once decoded."""

    __slots__ = ("_len", "_obj", "_off", "_raw", "annotations", "api_version", "kind", "labels", "name",
                 "namespace", "origin", "owners", "rv", "settled", "settled_at", "settled_in", "settled_usage", "uid")

    def __init__(self, kind: str, api_version: str, name: str, namespace: str | None, uid: str | None,
                 rv: int, owners: tuple[tuple[str | None, str | None, str | None, bool], ...],
                 labels: dict[str, str], annotations: dict[str, str],
                 settled: bool, origin: str | None, raw: Any = None, obj: dict[str, Any] | None = None,
                 settled_at: str | None = None, settled_in: str | None = None,
                 settled_usage: Usage = ()) -> None:
        self.kind = intern(kind)
        self.api_version = intern(api_version)
        self.name = name
        self.namespace = intern(namespace) if namespace else namespace
        self.uid = uid
        self.rv = rv
        self.owners = owners
        """(uid, kind, name, controller) of each owner reference"""
        self.labels = _indexed(labels, INDEXED_LABELS) if labels else _NONE
        """only the labels indexes are keyed by (`INDEXED_LABELS`)"""
        self.annotations = _indexed(annotations, INDEXED_ANNOTATIONS) if annotations else _NONE
        """only the annotations indexes are keyed by (`INDEXED_ANNOTATIONS`)"""
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
        """msgspec.Raw (a slice of the bytes read), or the OpenFile to read `_len` bytes at `_off` from"""
        self._off = 0
        self._len = 0
        self._obj = obj

    def at(self, source: Source, offset: int, length: int) -> None:
        """Read the object back from `source` (`length` bytes at `offset`) when it is decoded."""
        self._raw, self._off, self._len = source, offset, length

    def state(self) -> tuple[Any, ...] | None:
        """Everything but where it is read back from, for a record read by offset and not decoded yet (else
        None): what a child process that split a file sends of it (:mod:`kueuediag.snapshot.split_load`)."""
        if self._obj is not None or not isinstance(self._raw, Source):
            return None
        return (self.kind, self.api_version, self.name, self.namespace, self.uid, self.rv, self.owners, self.labels,
                self.annotations, self.settled, self.origin, self.settled_at, self.settled_in, self.settled_usage,
                self._off, self._len)

    @classmethod
    def from_state(cls, state: tuple[Any, ...], source: Source) -> Held:
        """The record `state` describes, read back from `source` (this process's copy of the same bytes)."""
        held = cls.__new__(cls)
        (kind, api_version, held.name, namespace, held.uid, held.rv, held.owners, labels, annotations, held.settled,
         held.origin, held.settled_at, held.settled_in, held.settled_usage, held._off, held._len) = state
        held.kind = intern(kind)
        held.api_version = intern(api_version)
        held.namespace = intern(namespace) if namespace else namespace
        held.labels = labels or _NONE
        held.annotations = annotations or _NONE
        held._raw = source
        held._obj = None
        return held

    @property
    def decoded(self) -> bool:
        return self._obj is not None

    def obj(self) -> dict[str, Any]:
        """The whole object (decoded on first use, then shared by every caller)."""
        obj = self._obj
        if obj is None:
            raw = self._raw
            obj = jsonload.loads(raw.read(self._off, self._len) if isinstance(raw, Source) else memoryview(raw))
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
    settled = is_settled(obj)
    return Held(
        kind=obj["kind"], api_version=obj["apiVersion"], name=meta["name"], namespace=meta.get("namespace"),
        uid=meta.get("uid") or None, rv=_rv(meta.get("resourceVersion")),
        owners=tuple((r.get("uid"), _intern(r.get("kind")), r.get("name"), bool(r.get("controller")))
                     for r in meta.get("ownerReferences") or () if isinstance(r, dict)),
        labels=labels, annotations=annotations, settled=settled, origin=origin, obj=obj,
        settled_at=_finished_at_dict(obj), settled_in=_admitted_to(obj) if settled else None,
        settled_usage=_usage_dict(obj) if settled else (),
    )


_SEPARATOR = re.compile(rb"[ \t\r\n]*,[ \t\r\n]*")


def split_list(data: bytes | mmap.mmap, origin: str,
               source: Source | None = None) -> list[dict[str, Any] | Held] | None:
    """The items of a kubectl JSON List: bulk kinds as Held, the rest decoded; None when `data` is not a List
    msgspec can read (the caller parses it the ordinary way and reports any error).

    With `source` (the file `data` maps, or `data` itself), a held item remembers its offset and length in it
    instead of a slice of `data`, so the caller can unmap the file once it is split, or a child process that
    split it can name the item by offset."""
    try:
        envelope = _LIST.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return None
    kind = envelope.kind
    if envelope.items is None or not (isinstance(kind, str) and kind.endswith("List")):
        return None
    item_kind = kind[:-4] if kind != "List" else None
    list_version = envelope.apiVersion if isinstance(envelope.apiVersion, str) else None
    out: list[dict[str, Any] | Held] = []
    spans = _spans(data, envelope.items) if source is not None else None
    try:  # every head in one pass; an item whose head has the wrong types makes it fail: then one by one
        heads: list[_Head | None] | None = list(_HEADS.decode(data).items or ())
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        heads = None
    if heads is not None and len(heads) != len(envelope.items):
        heads = None
    usages: dict[bytes, Usage] = {}
    for i, raw in enumerate(envelope.items):
        held = _hold(raw, heads[i] if heads is not None else _head(raw), item_kind, list_version, origin, usages)
        if held is not None:
            if spans is not None and source is not None:
                held.at(source, spans[i], len(raw))
            out.append(held)
            continue
        try:
            obj = jsonload.loads(memoryview(raw))
        except (ValueError, RecursionError):
            return None  # let the ordinary parser report it
        if not isinstance(obj, dict):
            return None
        if item_kind and "kind" not in obj:
            obj["kind"] = item_kind
            if list_version and "apiVersion" not in obj:
                obj["apiVersion"] = list_version
        out.append(obj)
    return out


def _spans(data: bytes | mmap.mmap, items: list[msgspec.Raw]) -> list[int] | None:
    """The offset of each item in `data`: the first found by its opening bytes, each next one after the comma
    that follows the previous one; every item is compared with the bytes at its offset (None if one differs)."""
    if not items:
        return []
    first = bytes(items[0])
    pos = data.find(first[:4096])
    out: list[int] = []
    for i, raw in enumerate(items):
        if i:
            sep = _SEPARATOR.match(data, pos)
            if sep is None:
                return None
            pos = sep.end()
        n = len(raw)
        if pos < 0 or data[pos:pos + n] != (first if i == 0 else bytes(raw)):
            return None
        out.append(pos)
        pos += n
    return out


def _head(raw: msgspec.Raw) -> _Head | None:
    try:
        return _HEAD.decode(raw)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return None


def _hold(raw: msgspec.Raw, head: _Head | None, item_kind: str | None, list_version: str | None, origin: str,
          usages: dict[bytes, Usage]) -> Held | None:
    """The Held record of one List item, or None when it must be decoded whole (not a bulk kind, or a head that
    does not have the types every object's metadata must have)."""
    if head is None:
        return None
    kind = head.kind if head.kind is not None else item_kind
    api = head.apiVersion if head.apiVersion is not None else (list_version if item_kind else None)
    meta = head.metadata
    if kind not in HELD_KINDS or not isinstance(api, str) or not api or meta is None or not meta.name:
        return None
    if memoryview(head.spec)[0] not in _MAPPING_OR_NULL:
        return None  # spec is not a mapping: the loader names the field
    status = head.status
    settled_at = settled_in = None
    settled_usage: Usage = ()
    settled = False
    if kind == "Workload":
        if status is not None and status.conditions:
            for c in status.conditions:
                if c.type == "Finished" and c.status == "True":
                    settled = True
                    if isinstance(c.lastTransitionTime, str):
                        settled_at = c.lastTransitionTime
                    break
        if settled and status is not None and status.admission is not None:
            settled_in = _str(status.admission.clusterQueue)
            settled_usage = _usage_of(status.admission.podSetAssignments, usages)
    elif kind == "Pod":
        settled = status is not None and status.phase in ("Succeeded", "Failed") and meta.deletionTimestamp is None
    refs = meta.ownerReferences
    owners = tuple([(r.uid, _intern(r.kind), r.name, bool(r.controller)) for r in refs]) if refs else ()
    rv = meta.resourceVersion
    return Held(kind, api, meta.name, meta.namespace, meta.uid or None,
                int(rv) if type(rv) is str and rv.isdigit() and rv.isascii() else _rv(rv),
                owners, meta.labels or _NONE, meta.annotations or _NONE, settled, origin, raw, None,
                settled_at, settled_in, settled_usage)


_MAPPING_OR_NULL = frozenset(b"{n")


def _usage_of(raw: msgspec.Raw, usages: dict[bytes, Usage]) -> Usage:
    """`_usage` of status.admission.podSetAssignments as written, worked out once per distinct text (a
    cluster's jobs come in a few shapes); assignments of the wrong types hold nothing that can be read."""
    key = bytes(raw)
    usage = usages.get(key)
    if usage is None:
        try:
            usage = _usage(_ASSIGNMENTS.decode(key))
        except msgspec.DecodeError:
            usage = ()
        usages[key] = usage
    return usage


def is_settled(obj: dict[str, Any]) -> bool:
    """A decoded object finished for good (see `Held.settled`): a Finished Workload, a Succeeded or Failed Pod
    that is not being deleted."""
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
    for a in assignments or ():
        flavors = a.flavors or {}
        for resource, quantity in (a.resourceUsage or {}).items():
            flavor = flavors.get(resource)
            if isinstance(flavor, str) and flavor:
                out.append((flavor, resource, quantity))
    return tuple(out)


def _indexed(values: dict[str, str], keys: tuple[str, ...]) -> dict[str, str]:
    if not values:
        return _NONE
    kept = {k: values[k] for k in keys if k in values}
    return kept or _NONE


def _intern(value: Any) -> Any:
    return intern(value) if isinstance(value, str) else value


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


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _rv(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0
