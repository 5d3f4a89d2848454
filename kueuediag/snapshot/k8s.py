"""Normalised views of core Kubernetes objects: conditions, pod requests, selectors, taints, events.

Pure functions over the raw dicts; every quantity is an exact Decimal.
"""

from __future__ import annotations

from dataclasses import field
from datetime import datetime
from decimal import Decimal
from typing import Any

from kueuediag.quantity import ZERO, add_into, parse_resource_list
from kueuediag.records import dataclass
from kueuediag.timeutil import parse_time_lenient


@dataclass(frozen=True)
class Condition:
    type: str
    status: str
    reason: str
    message: str
    last_transition: datetime | None

    @property
    def true(self) -> bool:
        return self.status == "True"

    @property
    def false(self) -> bool:
        return self.status == "False"


def conditions(obj: dict[str, Any]) -> dict[str, Condition]:
    """status.conditions as a map by type."""
    out: dict[str, Condition] = {}
    status = obj.get("status")
    if not isinstance(status, dict):
        return out
    for raw in status.get("conditions") or ():
        if not isinstance(raw, dict) or not raw.get("type"):
            continue
        out[str(raw["type"])] = Condition(
            type=str(raw["type"]),
            status=str(raw.get("status", "Unknown")),
            reason=str(raw.get("reason") or ""),
            message=str(raw.get("message") or ""),
            last_transition=parse_time_lenient(raw.get("lastTransitionTime")),
        )
    return out


def meta(obj: dict[str, Any]) -> dict[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def labels(obj: dict[str, Any]) -> dict[str, str]:
    return meta(obj).get("labels") or {}


def annotations(obj: dict[str, Any]) -> dict[str, str]:  # type: ignore[no-redef]
    return meta(obj).get("annotations") or {}


def ref_of(obj: dict[str, Any]) -> tuple[str, str | None, str]:
    m = meta(obj)
    return obj.get("kind", "?"), m.get("namespace"), m.get("name", "?")


def controller_owner(obj: dict[str, Any]) -> dict[str, Any] | None:
    refs = meta(obj).get("ownerReferences") or []
    for ref in refs:
        if isinstance(ref, dict) and ref.get("controller"):
            return ref
    return refs[0] if refs and isinstance(refs[0], dict) else None


# --- pod resource requests ----------------------------------------------------------------------------------


def container_requests(container: dict[str, Any], where: str = "") -> dict[str, Decimal]:
    """A container's requests; a limit without a request counts as the request (API defaulting)."""
    res = container.get("resources") or {}
    field = f"containers[{container.get('name') or '?'}].resources"
    at = f"{where}: {field}" if where else field
    requests = parse_resource_list(res.get("requests"), f"{at}.requests")
    for name, qty in parse_resource_list(res.get("limits"), f"{at}.limits").items():
        requests.setdefault(name, qty)
    return requests


def pod_spec_requests(spec: dict[str, Any], where: str = "") -> dict[str, Decimal]:
    """Effective per-pod requests as the scheduler and Kueue compute them.

    max(sum(app containers) + sum(sidecars), max over init containers (init + sidecars started before it))
    + pod overhead. Sidecars are init containers with `restartPolicy: Always`.
    """
    total: dict[str, Decimal] = {}
    for c in spec.get("containers") or ():
        add_into(total, container_requests(c, where))
    sidecars: dict[str, Decimal] = {}
    init_peak: dict[str, Decimal] = {}
    for c in spec.get("initContainers") or ():
        req = container_requests(c, where)
        if c.get("restartPolicy") == "Always":
            add_into(sidecars, req)
            continue
        candidate = dict(sidecars)
        add_into(candidate, req)
        for name, qty in candidate.items():
            if qty > init_peak.get(name, ZERO):
                init_peak[name] = qty
    add_into(total, sidecars)
    for name, qty in init_peak.items():
        if qty > total.get(name, ZERO):
            total[name] = qty
    add_into(total, parse_resource_list(spec.get("overhead"), where))
    return {k: v for k, v in total.items() if v != ZERO}


# --- selectors, affinity, taints ---------------------------------------------------------------------------


def label_selector_matches(selector: dict[str, Any] | None, lbls: dict[str, str]) -> bool:
    """metav1.LabelSelector semantics: None matches nothing, {} matches everything."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if lbls.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or ():
        if not _expr_matches(expr, lbls):
            return False
    return True


def _expr_matches(expr: dict[str, Any], lbls: dict[str, str]) -> bool:
    key = expr.get("key", "")
    op = expr.get("operator", "")
    values = [str(v) for v in expr.get("values") or ()]
    present = key in lbls
    if op == "In":
        return present and lbls[key] in values
    if op == "NotIn":
        return not present or lbls[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and values:
        try:
            a, b = int(lbls[key]), int(values[0])
        except ValueError:
            return False
        return a > b if op == "Gt" else a < b
    return False


def node_selector_terms_match(terms: list[dict[str, Any]], lbls: dict[str, str]) -> bool:
    """requiredDuringScheduling nodeSelectorTerms: OR over terms, AND over expressions."""
    if not terms:
        return True
    return any(all(_expr_matches(e, lbls) for e in (t.get("matchExpressions") or ())) for t in terms)


def required_node_terms(pod_spec: dict[str, Any]) -> list[dict[str, Any]]:
    aff = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    return list(aff.get("nodeSelectorTerms") or [])


def pod_fits_node_labels(pod_spec: dict[str, Any], lbls: dict[str, str]) -> bool:
    for key, value in (pod_spec.get("nodeSelector") or {}).items():
        if lbls.get(key) != value:
            return False
    return node_selector_terms_match(required_node_terms(pod_spec), lbls)


def tolerates(tolerations: list[dict[str, Any]], taint: dict[str, Any]) -> bool:
    """Kubernetes toleration matching (operator Exists/Equal, empty key with Exists tolerates everything)."""
    for tol in tolerations:
        effect = tol.get("effect") or ""
        if effect and effect != taint.get("effect"):
            continue
        op = tol.get("operator") or "Equal"
        key = tol.get("key") or ""
        if op == "Exists":
            if not key or key == taint.get("key"):
                return True
            continue
        if key == taint.get("key") and (tol.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def untolerated_taints(tolerations: list[dict[str, Any]], taints: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Taints with effect NoSchedule/NoExecute that the tolerations do not tolerate."""
    return [
        t for t in taints
        if t.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tolerations, t)
    ]


def taint_str(taint: dict[str, Any]) -> str:
    value = taint.get("value")
    return f"{taint.get('key')}{'=' + str(value) if value else ''}:{taint.get('effect')}"


# --- pods and nodes ------------------------------------------------------------------------------------------


@dataclass
class PodView:
    obj: dict[str, Any]
    namespace: str
    name: str
    uid: str
    phase: str
    node: str | None
    requests: dict[str, Decimal]
    deletion: datetime | None
    grace_seconds: int
    scheduling_gates: list[str]
    conditions: dict[str, Condition]
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)

    @property
    def terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    @property
    def terminating(self) -> bool:
        return self.deletion is not None

    @property
    def holds_node_resources(self) -> bool:
        """Bound and not terminal: its requests count against the node (terminating pods still count)."""
        return bool(self.node) and not self.terminal


def pod_view(obj: dict[str, Any]) -> PodView:
    m = meta(obj)
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    where = f"Pod {m.get('namespace')}/{m.get('name')}"
    grace = m.get("deletionGracePeriodSeconds")
    if grace is None:
        grace = spec.get("terminationGracePeriodSeconds", 30)
    return PodView(
        obj=obj,
        namespace=m.get("namespace") or "",
        name=m.get("name") or "",
        uid=m.get("uid") or "",
        phase=status.get("phase") or "Pending",
        node=spec.get("nodeName") or None,
        requests=pod_spec_requests(spec, where),
        deletion=parse_time_lenient(m.get("deletionTimestamp")),
        grace_seconds=int(grace or 0),
        scheduling_gates=[g.get("name", "") for g in spec.get("schedulingGates") or () if isinstance(g, dict)],
        conditions=conditions(obj),
        labels=m.get("labels") or {},
        annotations=m.get("annotations") or {},
    )


@dataclass
class NodeView:
    obj: dict[str, Any]
    name: str
    labels: dict[str, str]
    taints: list[dict[str, Any]]
    allocatable: dict[str, Decimal]
    capacity: dict[str, Decimal]
    ready: bool
    unschedulable: bool
    conditions: dict[str, Condition]


def node_view(obj: dict[str, Any]) -> NodeView:
    m = meta(obj)
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    conds = conditions(obj)
    ready = conds.get("Ready")
    where = f"Node {m.get('name')}"
    return NodeView(
        obj=obj,
        name=m.get("name") or "",
        labels=m.get("labels") or {},
        taints=list(spec.get("taints") or []),
        allocatable=parse_resource_list(status.get("allocatable"), where),
        capacity=parse_resource_list(status.get("capacity"), where),
        ready=ready.true if ready else False,
        unschedulable=bool(spec.get("unschedulable")),
        conditions=conds,
    )


# --- events --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EventView:
    """core/v1 and events.k8s.io/v1 events in one shape."""

    namespace: str | None
    involved_kind: str
    involved_name: str
    involved_namespace: str | None
    involved_uid: str | None
    type: str
    reason: str
    message: str
    count: int
    first: datetime | None
    last: datetime | None
    source: str


def event_view(obj: dict[str, Any]) -> EventView:
    m = meta(obj)
    if obj.get("apiVersion", "").startswith("events.k8s.io"):
        regarding = obj.get("regarding") or {}
        series = obj.get("series") or {}
        last = parse_time_lenient(series.get("lastObservedTime")) or parse_time_lenient(obj.get("eventTime")) \
            or parse_time_lenient(obj.get("deprecatedLastTimestamp")) or parse_time_lenient(m.get("creationTimestamp"))
        return EventView(
            namespace=m.get("namespace"),
            involved_kind=regarding.get("kind", ""),
            involved_name=regarding.get("name", ""),
            involved_namespace=regarding.get("namespace"),
            involved_uid=regarding.get("uid"),
            type=obj.get("type") or "",
            reason=obj.get("reason") or "",
            message=obj.get("note") or "",
            count=int(series.get("count") or obj.get("deprecatedCount") or 1),
            first=parse_time_lenient(obj.get("eventTime")) or parse_time_lenient(obj.get("deprecatedFirstTimestamp")),
            last=last,
            source=obj.get("reportingController") or "",
        )
    involved = obj.get("involvedObject") or {}
    src = obj.get("source") or {}
    return EventView(
        namespace=m.get("namespace"),
        involved_kind=involved.get("kind", ""),
        involved_name=involved.get("name", ""),
        involved_namespace=involved.get("namespace"),
        involved_uid=involved.get("uid"),
        type=obj.get("type") or "",
        reason=obj.get("reason") or "",
        message=obj.get("message") or "",
        count=int(obj.get("count") or 1),
        first=parse_time_lenient(obj.get("firstTimestamp")) or parse_time_lenient(obj.get("eventTime")),
        last=parse_time_lenient(obj.get("lastTimestamp")) or parse_time_lenient(obj.get("eventTime"))
        or parse_time_lenient(m.get("creationTimestamp")),
        source=src.get("component") or obj.get("reportingComponent") or "",
    )
