"""The in-memory Snapshot: every object indexed once, plus lazily parsed metrics and logs.

Checks read only this object. Indexes are built once at load (by kind, namespace/name, UID, owner UID) and
more specialised ones (pods by node, workloads by ClusterQueue) are built on first use and memoised, so a
check that never asks for pods never pays for them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from datetime import datetime
from enum import Enum
from typing import Any, TypeVar

from kueuediag.errors import InputError, MalformedObject, clip, shown
from kueuediag.records import dataclass
from kueuediag.snapshot.held import DROPPED_KINDS, HELD_KINDS, LAST_APPLIED, Held, held_of
from kueuediag.snapshot.limits import DEFAULT_LIMITS, Limits
from kueuediag.snapshot.reader import RawSnapshot
from kueuediag.timeutil import parse_time, parse_time_lenient

T = TypeVar("T")

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSIONS: dict[str, set[str]] = {
    # kind → served versions kueuediag understands (v1alpha1 only where it existed upstream)
    "ClusterQueue": {"v1beta1", "v1beta2"},
    "LocalQueue": {"v1beta1", "v1beta2"},
    "ResourceFlavor": {"v1beta1", "v1beta2"},
    "Workload": {"v1beta1", "v1beta2"},
    "WorkloadPriorityClass": {"v1beta1", "v1beta2"},
    "AdmissionCheck": {"v1beta1", "v1beta2"},
    "ProvisioningRequestConfig": {"v1beta1", "v1beta2"},
    "Cohort": {"v1alpha1", "v1beta1", "v1beta2"},
    "Topology": {"v1alpha1", "v1beta1", "v1beta2"},
    "MultiKueueConfig": {"v1alpha1", "v1beta1", "v1beta2"},
    "MultiKueueCluster": {"v1alpha1", "v1beta1", "v1beta2"},
}
_COMMON_SHAPE = ("metadata:dict", "spec:dict", "status:dict", "metadata.labels:dict", "metadata.annotations:dict",
                 "metadata.ownerReferences:list", "metadata.ownerReferences[]:dict", "status.conditions:list",
                 "status.conditions[]:dict")
_RESOURCE_GROUPS = ("spec.resourceGroups:list", "spec.resourceGroups[]:dict", "spec.resourceGroups[].flavors:list",
                    "spec.resourceGroups[].flavors[]:dict", "spec.resourceGroups[].flavors[].resources:list",
                    "spec.resourceGroups[].flavors[].resources[]:dict")
_POD_SPEC = ("containers:list", "containers[]:dict", "containers[].resources:dict", "initContainers:list",
             "initContainers[]:dict", "tolerations:list", "nodeSelector:dict", "terminationGracePeriodSeconds:int")
SHAPES: dict[str, tuple[str, ...]] = {
    # The fields checks read, with the JSON type kubectl always writes. A mismatch is an input error at load,
    # naming the object and field, instead of a confusing failure inside a check later.
    "Workload": ("spec.podSets:list", "spec.podSets[]:dict", "spec.podSets[].count:int", "spec.podSets[].template:dict",
                 "spec.podSets[].template.spec:dict", *("spec.podSets[].template.spec." + f for f in _POD_SPEC),
                 "spec.priority:int", "spec.queueName:str", "status.admission:dict",
                 "status.admission.podSetAssignments:list", "status.admission.podSetAssignments[]:dict",
                 "status.admissionChecks:list", "status.requeueState:dict"),
    "ClusterQueue": (*_RESOURCE_GROUPS, "spec.namespaceSelector:dict"),
    "Cohort": _RESOURCE_GROUPS,
    "LocalQueue": ("spec.clusterQueue:str",),
    "ResourceFlavor": ("spec.nodeLabels:dict", "spec.nodeTaints:list", "spec.tolerations:list"),
    "Pod": ("status.containerStatuses:list", *("spec." + f for f in _POD_SPEC)),
    "Node": ("status.allocatable:dict", "status.capacity:dict", "spec.taints:list", "spec.taints[]:dict"),
    "WorkloadPriorityClass": ("value:int",),
    "Topology": ("spec.levels:list", "spec.levels[]:dict"),
}
LAZY_SHAPE_KINDS = HELD_KINDS
"""Bulk kinds: their shapes are checked only when building a view fails (see `malformed`), keeping loads fast."""
_TYPES: dict[str, tuple[type, ...]] = {"dict": (dict,), "list": (list,), "int": (int,), "str": (str,)}


class Part(str, Enum):
    """Snapshot parts a check may declare in `requires`."""

    WORKLOADS = "workloads"
    QUEUES = "queues"
    NODES = "nodes"
    PODS = "pods"
    EVENTS = "events"
    METRICS = "metrics"
    LOGS = "logs"
    CONTROLLER = "controller"


PART_KINDS: dict[Part, tuple[str, ...]] = {
    Part.WORKLOADS: ("Workload",),
    Part.QUEUES: ("ClusterQueue", "LocalQueue"),
    Part.NODES: ("Node",),
    Part.PODS: ("Pod",),
    Part.EVENTS: ("Event",),
    Part.CONTROLLER: ("Pod", "Deployment"),
}


@dataclass(frozen=True)
class Manifest:
    format: str | None
    captured_at: datetime | None
    cluster: str | None
    kueue_version: str | None
    errors: tuple[tuple[str, str], ...]
    namespaces: tuple[str, ...] | None = None
    """Namespaces the collector was limited to (None: cluster-wide)."""
    target: str | None = None
    """`snapshot --for TARGET`: the target the snapshot was taken for (`why --from` diagnoses it by default)"""
    target_namespace: str | None = None
    redacted: bool = False
    partial: bool = False
    """Some parts could not be collected (`errors` says which): a warning, never a load failure."""


class Snapshot:
    """An indexed, read-only view of one recorded (or live-collected) cluster state."""

    def __init__(self, raw: RawSnapshot, now: datetime | None = None, limits: Limits = DEFAULT_LIMITS) -> None:
        self.source = raw.source
        self.limits = limits
        self.raw = raw
        """what was read, kept so a fix can be applied to a copy and re-diagnosed (kueuediag.fixes)"""
        self.manifest = _manifest(raw)
        self._by_kind: dict[str, list[Held]] = defaultdict(list)
        self._by_key: dict[tuple[str, str | None, str], Held] = {}
        self._by_uid: dict[str, Held] = {}
        self._children: dict[str, list[Held]] = defaultdict(list)
        self._memo: dict[Any, Any] = {}
        self._origins: dict[int, str] = dict(raw.origins)
        self.warnings: list[str] = list(raw.warnings)
        """input read in a degraded way (replaced bytes, skipped files, cut logs): shown with the verdict"""
        checked: set[tuple[str, str]] = set()
        """(kind, apiVersion) pairs of held records already found readable: a List holds one pair 50,000 times"""
        for entry in raw.objects:
            if type(entry) is Held:
                kind = entry.kind
                if kind in DROPPED_KINDS:
                    continue
                if (kind, entry.api_version) not in checked:
                    self._check_version(kind, entry.api_version, entry, entry.origin)
                    checked.add((kind, entry.api_version))
                self._index(entry)
            else:
                self._add(entry)
        self.metrics_text = raw.metrics
        self.logs_text = raw.logs
        self.now = now or self.manifest.captured_at or self._newest_timestamp()

    # --- loading -----------------------------------------------------------------------------------------
    def _add(self, entry: dict[str, Any] | Held) -> None:
        if isinstance(entry, Held):
            if entry.kind in DROPPED_KINDS:
                return
            self._check_version(entry.kind, entry.api_version, entry, entry.origin)
            self._index(entry)
            return
        obj = entry
        kind = obj["kind"]
        if kind in DROPPED_KINDS:
            return
        origin = self._origins.get(id(obj))
        self._check_version(kind, obj["apiVersion"], obj, origin)
        for part in ("metadata", "spec", "status"):
            if part in obj and obj[part] is not None and not isinstance(obj[part], dict):
                _shape_error(obj, part, "dict", obj[part], origin)
        _check_metadata(obj, origin)
        annotations = obj["metadata"].get("annotations")
        if annotations and LAST_APPLIED in annotations:
            # A whole second copy of the object as kubectl applied it (often the largest field of a user's dump);
            # nothing reads it, and it may carry what sanitisation removes from the object itself.
            del annotations[LAST_APPLIED]
        if kind not in LAZY_SHAPE_KINDS:
            _check_shapes(obj, origin)
        self._index(held_of(obj, origin))

    @staticmethod
    def _check_version(kind: str, api: str, obj: dict[str, Any] | Held, origin: str | None) -> None:
        group, _, version = api.rpartition("/")
        if group == KUEUE_GROUP and kind in KUEUE_VERSIONS and version not in KUEUE_VERSIONS[kind]:
            where = (f"{origin + ': ' if origin else ''}{clip(kind, 60)} "
                     f"{'/'.join(clip(x, 80) for x in (obj.namespace, obj.name) if x)}"
                     if isinstance(obj, Held) else _describe(obj, origin))
            raise InputError(
                f"{where}: unsupported apiVersion {clip(api)} "
                f"(kueuediag reads {', '.join(sorted(KUEUE_VERSIONS[kind]))})", source=origin, field="apiVersion"
            )

    def _index(self, held: Held) -> None:
        key = (held.kind, held.namespace, held.name)
        old = self._by_key.get(key)
        if old is not None:
            # Same object twice (e.g. a List and a single-object file): keep the newer resourceVersion.
            if held.rv < old.rv:
                return
            self._by_kind[held.kind].remove(old)
        self._by_key[key] = held
        self._by_kind[held.kind].append(held)
        if held.uid:
            self._by_uid[held.uid] = held
        for uid, _, _, _ in held.owners:
            if uid:
                self._children[uid].append(held)

    def obj(self, held: Held) -> dict[str, Any]:
        """The object of `held`, decoded on first use (its file is remembered for error messages)."""
        if held.decoded:
            return held.obj()
        obj = held.obj()
        if held.origin:
            self._origins[id(obj)] = held.origin
        return obj

    def _newest_timestamp(self) -> datetime:
        newest: datetime | None = None
        for kind in self._by_kind:
            for obj in self.of_kind(kind):
                for moment in _object_times(obj):
                    if newest is None or moment > newest:
                        newest = moment
        if newest is None:
            raise InputError(
                f"{self.source}: cannot tell the capture time (no manifest capturedAt and no timestamps); "
                "pass --now RFC3339"
            )
        return newest

    # --- lookups -------------------------------------------------------------------------------------------
    def kinds(self) -> list[str]:
        return sorted(self._by_kind)

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        """Every object of `kind`, decoded (use `entries`, `active` or the indexes to read only a few)."""
        entries = self._by_kind.get(kind)
        if not entries:
            return []
        return self.memo(("of-kind", kind), lambda: [self.obj(h) for h in entries])

    def entries(self, kind: str) -> list[Held]:
        """Every object of `kind` as its Held record: identity, index keys and whether it is settled; `obj(h)`
        decodes one."""
        return self._by_kind.get(kind, [])

    def count(self, kind: str) -> int:
        return len(self._by_kind.get(kind, ()))

    def active(self, kind: str) -> list[dict[str, Any]]:
        """The objects of `kind` that are not settled (a Finished Workload, a Succeeded/Failed Pod that is not
        being deleted, see :mod:`kueuediag.snapshot.held`): what holds quota, waits, runs or terminates."""
        entries = self._by_kind.get(kind)
        if not entries:
            return []
        return self.memo(("active", kind), lambda: [self.obj(h) for h in entries if not h.settled])

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        held = self._by_key.get((kind, namespace, name))
        return self.obj(held) if held is not None else None

    def origin(self, obj: dict[str, Any]) -> str | None:
        """The file an object was read from (None for live-collected or hand-built snapshots)."""
        return self._origins.get(id(obj))

    def input_error(self, obj: dict[str, Any], exc: Exception) -> MalformedObject:
        """The one-line input error for an object a view or an analysis could not read.

        Names the file, the object and — when a shape rule or the failing accessor knows it — the field; carries
        the object's identity so the engine can tell whether the target depends on it.
        """
        origin = self.origin(obj)
        if isinstance(exc, InputError):
            return as_malformed(obj, exc, origin)
        return malformed(obj, exc, origin)

    def by_uid(self, uid: str) -> dict[str, Any] | None:
        held = self._by_uid.get(uid)
        return self.obj(held) if held is not None else None

    def held_by_uid(self, uid: str) -> Held | None:
        return self._by_uid.get(uid)

    def children(self, uid: str) -> list[dict[str, Any]]:
        """Objects whose ownerReferences name `uid`."""
        return [self.obj(h) for h in self._children.get(uid, ())]

    def child_entries(self, uid: str) -> list[Held]:
        return self._children.get(uid, [])

    def in_namespace(self, kind: str, namespace: str) -> list[dict[str, Any]]:
        index = self.memo(("ns-index", kind), lambda: _group_by(self.entries(kind), _namespace_of))
        return [self.obj(h) for h in index.get(namespace, ())]

    def memo(self, key: Any, compute: Callable[[], T]) -> T:
        """Compute-once cache shared by all checks (analyses are pure functions of the snapshot)."""
        try:
            result: T = self._memo[key]  # one lookup when present: it is asked a few hundred times per target
        except KeyError:
            result = self._memo[key] = compute()
        return result

    def has_memo(self, key: Any) -> bool:
        """Whether `memo` holds `key` already (a value worked out elsewhere is installed only where nothing was)."""
        return key in self._memo

    # --- parts -------------------------------------------------------------------------------------------
    def part_unavailable(self, part: Part) -> str | None:
        """Why `part` cannot be used, or None when it is present. The engine asks it for every check run (~16 a
        diagnosis), so the answer is kept per part for this manifest (what a snapshot holds does not change after
        loading; a replaced manifest, as kueuediag.testing sets one, is asked again)."""
        key = ("part-unavailable", part, id(self.manifest))
        try:
            held, why = self._memo[key]
            if held is self.manifest:
                return why  # type: ignore[no-any-return]
        except KeyError:
            pass
        why = self._part_unavailable(part)
        self._memo[key] = (self.manifest, why)
        return why

    def _part_unavailable(self, part: Part) -> str | None:
        for what, error in self.manifest.errors:
            if _error_names_part(what, part):
                return f"not collected ({what}: {error})"
        if part is Part.METRICS:
            return None if self.metrics_text else "no Prometheus metrics in this snapshot"
        if part is Part.LOGS:
            return None if self.logs_text else "no Kueue controller logs in this snapshot"
        kinds = PART_KINDS[part]
        if any(self._by_kind.get(k) for k in kinds):
            return None
        return f"no {' or '.join(kinds)} objects in this snapshot"

    def age_seconds(self, moment: datetime | None) -> float | None:
        return None if moment is None else (self.now - moment).total_seconds()


_Rule = tuple[str, tuple[tuple[str, bool], ...], str]


def _compile(rule: str) -> _Rule:
    path, _, type_name = rule.rpartition(":")
    segments = tuple((p[:-2], True) if p.endswith("[]") else (p, False) for p in path.split("."))
    return path, segments, type_name


_COMPILED: dict[str, tuple[_Rule, ...]] = {}


def _rules_for(kind: str) -> tuple[_Rule, ...]:
    rules = _COMPILED.get(kind)
    if rules is None:
        rules = _COMPILED[kind] = tuple(_compile(r) for r in _COMMON_SHAPE + SHAPES.get(kind, ()))
    return rules


def _check_shapes(obj: dict[str, Any], origin: str | None = None) -> None:
    for path, segments, type_name in _rules_for(obj["kind"]):
        values: list[Any] = [obj]
        for key, many in segments:
            nxt: list[Any] = []
            for v in values:
                child = v.get(key) if isinstance(v, dict) else None
                if child is None:
                    continue
                if many:
                    if isinstance(child, list):
                        nxt.extend(c for c in child if c is not None)
                else:
                    nxt.append(child)
            values = nxt
            if not values:
                break
        for v in values:
            if not isinstance(v, _TYPES[type_name]) or (type_name == "int" and isinstance(v, bool)):
                _shape_error(obj, path, type_name, v, origin)


class FieldTypeError(TypeError):
    """Raised by a typed accessor (:func:`typed`) when a field has the wrong JSON type."""

    def __init__(self, path: str, type_name: str, value: Any) -> None:
        super().__init__(f"{path} must be a {_NAMES[type_name]}, got {shown(value, 40)}")
        self.path = path


def typed(container: dict[str, Any], key: str, type_name: str, path: str) -> Any:
    """``container[key]`` when absent/None or of the JSON type Kubernetes fixes for it; else FieldTypeError.

    The one accessor views use for fields whose type checks rely on (names used as keys, numbers compared):
    :func:`kueuediag.snapshot.kueue.guarded` turns the error into an input error naming file, object and field.
    """
    value = container.get(key)
    if value is None or (isinstance(value, _TYPES[type_name]) and not (type_name == "int" and isinstance(value, bool))):
        return value
    raise FieldTypeError(path, type_name, value)


BAD_SHAPE_ERRORS = (TypeError, AttributeError, ValueError, KeyError, IndexError, OverflowError, RecursionError)
"""What reading a wrong-typed field raises in Python code that assumed the type kubectl writes."""


def malformed(obj: dict[str, Any], exc: Exception, origin: str | None = None) -> MalformedObject:
    """The input error for an object whose normalisation failed: the precise field when a shape rule finds it."""
    try:
        _check_shapes(obj, origin)
    except MalformedObject as precise:
        return precise
    if isinstance(exc, FieldTypeError):
        return _malformed(obj, origin, str(exc), exc.path)
    return _malformed(obj, origin, f"malformed object ({type(exc).__name__}: {clip(str(exc), 120)})")


def _identity(obj: dict[str, Any]) -> tuple[str, str | None, str]:
    """(kind, namespace, name) of a possibly malformed object."""
    raw_meta = obj.get("metadata")
    meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
    ns = meta.get("namespace")
    return str(obj.get("kind") or "?"), str(ns) if ns else None, str(meta.get("name") or "?")


def as_malformed(obj: dict[str, Any], exc: InputError, origin: str | None = None) -> MalformedObject:
    """`exc` (raised while reading `obj`) tagged with the object's identity and file, prefixed with them when
    missing."""
    if isinstance(exc, MalformedObject) and (origin is None or str(exc).startswith(origin)):
        return exc
    text = str(exc)
    where = _describe(obj, None)
    if not text.startswith(where) and not (origin and text.startswith(origin)):
        text = f"{where}: {text}"
    if origin and not text.startswith(origin):
        text = f"{origin}: {text}"
    err = MalformedObject(text, *_identity(obj))
    err.source, err.field = origin, exc.field
    return err


def _malformed(obj: dict[str, Any], origin: str | None, problem: str, field: str | None = None) -> MalformedObject:
    err = MalformedObject(f"{_describe(obj, origin)}: {problem}", *_identity(obj))
    err.source, err.field = origin, field
    return err


def _describe(obj: dict[str, Any], origin: str | None) -> str:
    """``objects/x.yaml: Workload team-a/train`` (bounded: names come from the input)."""
    raw_meta = obj.get("metadata")
    meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
    kind, ns, name = obj.get("kind") or "?", meta.get("namespace"), meta.get("name") or "?"
    where = "/".join(clip(x, 80) for x in (ns, name) if x)
    return f"{origin + ': ' if origin else ''}{clip(kind, 60)} {where}"


def _shape_error(obj: dict[str, Any], path: str, type_name: str, value: Any, origin: str | None = None) -> None:
    raise _malformed(obj, origin, f"{path} must be a {_NAMES[type_name]}, got {shown(value, 40)}", path)


_NAMES = {"dict": "mapping", "list": "list", "int": "whole number", "str": "string"}
_TIME_TYPES = (str, datetime)


def _check_metadata(obj: dict[str, Any], origin: str | None) -> None:
    """Fixed-type metadata every index and view relies on, checked for every object at load (cheaply).

    namespace and uid are dictionary keys, labels and annotations are matched as strings, owner references
    link objects by uid; Kubernetes fixes all of their types, so anything else is a malformed input.
    """
    meta = obj["metadata"]
    for key in ("namespace", "uid"):
        value = meta.get(key)
        if value is not None and type(value) is not str:
            _shape_error(obj, f"metadata.{key}", "str", value, origin)
    for key in ("labels", "annotations"):
        value = meta.get(key)
        if value is None:
            continue
        if type(value) is not dict:
            _shape_error(obj, f"metadata.{key}", "dict", value, origin)
        for k, v in value.items():
            if type(v) is not str or type(k) is not str:
                _shape_error(obj, f"metadata.{key}.{shown(k, 40)}", "str", v if type(k) is str else k, origin)
    for key in ("creationTimestamp", "deletionTimestamp"):
        value = meta.get(key)
        if value is not None and not isinstance(value, _TIME_TYPES):
            _shape_error(obj, f"metadata.{key}", "str", value, origin)
    refs = meta.get("ownerReferences")
    if refs is None:
        return
    if type(refs) is not list:
        _shape_error(obj, "metadata.ownerReferences", "list", refs, origin)
    for i, ref in enumerate(refs):
        if type(ref) is not dict:
            _shape_error(obj, f"metadata.ownerReferences[{i}]", "dict", ref, origin)
        for key in ("uid", "kind", "name", "apiVersion"):
            value = ref.get(key)
            if value is not None and type(value) is not str:
                _shape_error(obj, f"metadata.ownerReferences[{i}].{key}", "str", value, origin)


def _namespace_of(held: Held) -> str:
    return held.namespace or ""


def _group_by(objs: Iterable[T], key: Callable[[T], str]) -> dict[str, list[T]]:
    out: dict[str, list[T]] = defaultdict(list)
    for obj in objs:
        out[key(obj)].append(obj)
    return dict(out)


def _object_times(obj: dict[str, Any]) -> Iterable[datetime]:
    meta = obj.get("metadata") or {}
    for value in (meta.get("creationTimestamp"), meta.get("deletionTimestamp")):
        t = parse_time_lenient(value)
        if t:
            yield t
    for key in ("lastTimestamp", "eventTime", "firstTimestamp"):
        t = parse_time_lenient(obj.get(key))
        if t:
            yield t
    status = obj.get("status")
    if isinstance(status, dict):
        for cond in status.get("conditions") or ():
            if isinstance(cond, dict):
                t = parse_time_lenient(cond.get("lastTransitionTime"))
                if t:
                    yield t


_PART_WORDS: dict[Part, tuple[str, ...]] = {
    Part.WORKLOADS: ("workload",),
    Part.QUEUES: ("clusterqueue", "localqueue"),
    Part.NODES: ("node",),
    Part.PODS: ("pod",),
    Part.EVENTS: ("event",),
    Part.METRICS: ("metric", "prometheus"),
    Part.LOGS: ("log",),
    Part.CONTROLLER: ("controller",),
}


def _error_names_part(what: str, part: Part) -> bool:
    w = what.lower()
    return any(word in w for word in _PART_WORDS[part])


def _manifest(raw: RawSnapshot) -> Manifest:
    m = raw.manifest
    captured = None
    where = f"{raw.source}/manifest.json"
    if m.get("capturedAt") is not None:
        try:
            captured = parse_time(m.get("capturedAt"))
        except InputError:
            raise InputError(f"{where}: invalid capturedAt {shown(m.get('capturedAt'))}") from None
    for key in ("cluster", "kueueVersion"):
        if m.get(key) is not None and not isinstance(m.get(key), str):
            raise InputError(f"{where}: {key} must be a string, got {shown(m.get(key))}")
    errors = tuple((clip(e.get("what", "?"), 200), clip(e.get("error", "?"), 400)) for e in m.get("errors") or ())
    namespaces = m.get("namespaces")
    if namespaces is not None and not (isinstance(namespaces, list) and all(isinstance(n, str) for n in namespaces)):
        raise InputError(f"{where}: namespaces must be a list of strings, got {shown(namespaces)}")
    recorded = m.get("target")
    return Manifest(
        format=m.get("format"),
        captured_at=captured,
        cluster=m.get("cluster"),
        kueue_version=m.get("kueueVersion"),
        errors=errors,
        namespaces=tuple(namespaces) if isinstance(namespaces, list) else None,
        target=str(recorded["target"]) if isinstance(recorded, dict) and recorded.get("target") else None,
        target_namespace=str(recorded["namespace"]) if isinstance(recorded, dict) and recorded.get("namespace")
        else None,
        redacted=m.get("redacted") is True,
        partial=m.get("partial") is True or bool(errors),
    )
