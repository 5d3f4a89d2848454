"""What kube-scheduler and the kubelet say about pods Kueue has released.

kube-scheduler explains an unschedulable pod in one line, both in the pod's ``PodScheduled=False`` condition
(reason ``Unschedulable``) and in ``FailedScheduling`` events::

    0/7 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't match Pod's node
    affinity/selector, 4 Insufficient nvidia.com/gpu. preemption: 0/7 nodes are available:
    3 Preemption is not helpful for scheduling, 4 No preemption victims found for incoming pod.

The filter reasons are ``<count> <reason>`` items joined by ``, `` (sorted as strings); a PreFilter failure
(``pod has unbound immediate PersistentVolumeClaims``) has no count. This module parses that line into
per-reason counts and collects the kubelet's image-pull failures, so checks never match raw text themselves.
"""

from __future__ import annotations

import re
from datetime import datetime

from kueuediag.analysis.capacity import matching_nodes
from kueuediag.records import dataclass
from kueuediag.snapshot.k8s import PodView, meta
from kueuediag.snapshot.kueue import FlavorView, events_for
from kueuediag.snapshot.model import Snapshot


@dataclass(frozen=True)
class SchedulingReason:
    """One `<count> <reason>` item of a FailedScheduling message."""

    kind: str
    """insufficient | untolerated-taint | node-affinity | unschedulable-node | not-ready | pod-affinity |
    pod-anti-affinity | topology-spread | volume-node-affinity | unbound-pvc | volume-limit | ports |
    too-many-pods | preemption-not-helpful | no-victims | other"""
    text: str
    count: int | None
    """nodes the reason applies to (None for PreFilter messages that name no nodes)"""
    resource: str | None = None
    """for insufficient: the resource name"""
    taint: str | None = None
    """for untolerated-taint: `key: value` as printed"""


@dataclass(frozen=True)
class SchedulingFailure:
    """A parsed `0/N nodes are available: ...` message."""

    raw: str
    total_nodes: int | None
    reasons: tuple[SchedulingReason, ...]
    preemption: tuple[SchedulingReason, ...] = ()

    def of(self, *kinds: str) -> list[SchedulingReason]:
        return [r for r in self.reasons if r.kind in kinds]

    def has(self, *kinds: str) -> bool:
        return any(r.kind in kinds for r in self.reasons)

    def counts(self) -> dict[str, int]:
        """Reason text → node count (PreFilter reasons count as all nodes)."""
        out: dict[str, int] = {}
        for r in self.reasons:
            out[r.text] = r.count if r.count is not None else (self.total_nodes or 0)
        return out

    def insufficient(self) -> dict[str, int]:
        """resource → nodes short of it."""
        return {r.resource: r.count or 0 for r in self.reasons if r.kind == "insufficient" and r.resource}

    def summary(self) -> str:
        """'4 Insufficient nvidia.com/gpu, 1 node(s) were unschedulable' (largest count first)."""
        items = sorted(self.reasons, key=lambda r: (-(r.count or 0), r.text))
        return ", ".join(f"{r.count} {r.text}" if r.count is not None else r.text for r in items)


_HEAD = re.compile(r"(?P<avail>\d+)/(?P<total>\d+) nodes are available:?\s*")
_ITEM_SPLIT = re.compile(r",\s+(?=\d+\s)")
_COUNTED = re.compile(r"^(?P<count>\d+)\s+(?P<text>.+)$")

_KINDS: list[tuple[str, re.Pattern[str]]] = [
    ("insufficient", re.compile(r"^Insufficient (?P<resource>\S+)$")),
    ("untolerated-taint", re.compile(r"^node\(s\) had (?:untolerated )?taint \{(?P<taint>[^}]*)\}")),
    ("node-affinity", re.compile(r"^node\(s\) didn't match (?:Pod's )?node (?:affinity/selector|selector)")),
    ("unschedulable-node", re.compile(r"^node\(s\) were unschedulable")),
    ("not-ready", re.compile(r"^node\(s\) (?:were not ready|had condition)")),
    ("pod-anti-affinity", re.compile(r"^node\(s\) didn't (?:match pod anti-affinity rules|satisfy existing pods "
                                     r"anti-affinity rules)")),
    ("pod-affinity", re.compile(r"^node\(s\) didn't match pod affinity rules")),
    ("topology-spread", re.compile(r"^node\(s\) didn't match pod topology spread constraints")),
    ("volume-node-affinity", re.compile(r"^node\(s\) had volume node affinity conflict")),
    ("volume-limit", re.compile(r"^node\(s\) exceed max volume count")),
    ("ports", re.compile(r"^node\(s\) didn't have free ports")),
    ("too-many-pods", re.compile(r"^Too many pods")),
    ("unbound-pvc", re.compile(r"pod has unbound immediate PersistentVolumeClaims")),
    ("unbound-pvc", re.compile(r"node\(s\) (?:didn't find available persistent volumes to bind|"
                               r"unavailable due to one or more pvc\(s\) bound to non-existent pv\(s\))")),
    ("preemption-not-helpful", re.compile(r"^Preemption is not helpful for scheduling")),
    ("no-victims", re.compile(r"^No preemption victims found for incoming pod")),
]


def _classify(text: str, count: int | None) -> SchedulingReason:
    text = text.strip().rstrip(".").strip()
    for kind, pattern in _KINDS:
        m = pattern.search(text)
        if m:
            gd = m.groupdict()
            return SchedulingReason(kind=kind, text=text, count=count, resource=gd.get("resource"),
                                    taint=gd.get("taint"))
    return SchedulingReason(kind="other", text=text, count=count)


def _items(body: str) -> list[SchedulingReason]:
    body = body.strip().rstrip(".").strip()
    if not body:
        return []
    out = []
    for part in _ITEM_SPLIT.split(body):
        m = _COUNTED.match(part.strip())
        if m:
            out.append(_classify(m.group("text"), int(m.group("count"))))
        else:
            out.append(_classify(part, None))
    return out


def parse_failed_scheduling(message: str) -> SchedulingFailure | None:
    """Parse a kube-scheduler `0/N nodes are available: ...` message (None when it is not one)."""
    text = (message or "").strip()
    head = _HEAD.search(text)
    if head is None:
        if "unbound immediate PersistentVolumeClaims" in text:
            return SchedulingFailure(raw=message, total_nodes=None, reasons=(_classify(text, None),))
        return None
    rest = text[head.end():]
    preemption: list[SchedulingReason] = []
    cut = rest.find("preemption:")
    if cut >= 0:
        pre = rest[cut + len("preemption:"):]
        ph = _HEAD.search(pre)
        preemption = _items(pre[ph.end():] if ph else pre)
        rest = rest[:cut]
    # the scheduler writes "<PreFilter msg>. <filter reasons>." — PreFilter text has no leading count
    reasons: list[SchedulingReason] = []
    for chunk in re.split(r"\.\s+(?=\S)", rest.strip()):
        reasons.extend(_items(chunk))
    return SchedulingFailure(raw=message, total_nodes=int(head.group("total")), reasons=tuple(reasons),
                             preemption=tuple(preemption))


# --- per-pod state -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ImagePullFailure:
    """A container waiting on a start failure (the name is historical: not only image pulls)."""

    container: str
    image: str
    reason: str
    """ErrImagePull | ImagePullBackOff | InvalidImageName | ErrImageNeverPull | CreateContainerConfigError |
    CreateContainerError | RunContainerError"""
    message: str


IMAGE_PULL_REASONS = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull")
START_FAILURE_REASONS = IMAGE_PULL_REASONS + ("CreateContainerConfigError", "CreateContainerError",
                                              "RunContainerError")


def image_pull_failures(pod: PodView) -> list[ImagePullFailure]:
    """Containers (init and app) waiting on an image pull failure."""
    return [f for f in container_start_failures(pod) if f.reason in IMAGE_PULL_REASONS]


def container_start_failures(pod: PodView) -> list[ImagePullFailure]:
    """Containers (init and app) that cannot start: image pulls, missing Secret/ConfigMap, runtime errors."""
    status = pod.obj.get("status") or {}
    out = []
    for key in ("initContainerStatuses", "containerStatuses"):
        for cs in status.get(key) or ():
            waiting = ((cs or {}).get("state") or {}).get("waiting") or {}
            reason = waiting.get("reason") or ""
            if reason in START_FAILURE_REASONS:
                out.append(ImagePullFailure(container=cs.get("name", "?"), image=cs.get("image", "?"),
                                            reason=reason, message=waiting.get("message") or ""))
    return out


@dataclass(frozen=True)
class PodScheduling:
    """Why kube-scheduler has not bound one pod, from its condition and its newest FailedScheduling event."""

    pod: PodView
    failure: SchedulingFailure | None
    source: str
    """'condition' | 'event' | ''"""
    since: datetime | None
    events: int
    """FailedScheduling occurrences (sum of event counts)"""
    reason: str
    """PodScheduled reason (Unschedulable, SchedulingGated, ...) or ''"""


def pod_scheduling(snap: Snapshot, pod: PodView) -> PodScheduling:
    """Combine `PodScheduled=False` and `FailedScheduling` events (the newer message wins)."""
    cond = pod.conditions.get("PodScheduled")
    failure: SchedulingFailure | None = None
    source = ""
    since = None
    reason = cond.reason if cond is not None and cond.false else ""
    if cond is not None and cond.false and cond.reason == "Unschedulable":
        failure = parse_failed_scheduling(cond.message)
        source = "condition" if failure else ""
        since = cond.last_transition
    evs = [e for e in events_for(snap, "Pod", pod.namespace, pod.name) if e.reason == "FailedScheduling"]
    count = sum(e.count for e in evs)
    if evs:
        newest = evs[-1]
        parsed = parse_failed_scheduling(newest.message)
        newer = since is None or (newest.last is not None and newest.last >= since)
        if parsed is not None and (failure is None or newer):
            failure, source = parsed, "event"
        times = [t for t in (e.first or e.last for e in evs) if t is not None]
        first = min(times, default=None)
        if first is not None and (since is None or first < since):
            since = first
    return PodScheduling(pod=pod, failure=failure, source=source, since=since, events=count, reason=reason)


# --- scheduling gates ----------------------------------------------------------------------------------------

_SYSTEM_MANAGERS = ("kube-controller-manager", "kubelet", "kube-scheduler", "kueue", "manager")


@dataclass(frozen=True)
class GateAuthor:
    """Who added a scheduling gate to a pod, read from its managedFields."""

    manager: str
    time: str
    exact: bool
    """True: the manager's managedFields entry owns this very gate; False: a candidate (the snapshot kept only
    manager, operation and time, so the writer of the pod at creation is named)"""


def gate_authors(pod: PodView) -> dict[str, GateAuthor | None]:
    """Each scheduling gate on the pod → who added it (None when managedFields do not say)."""
    entries = [mf for mf in meta(pod.obj).get("managedFields") or () if isinstance(mf, dict)]
    out: dict[str, GateAuthor | None] = {}
    for gate in pod.scheduling_gates:
        key = 'k:{"name":"' + gate + '"}'
        exact = next((mf for mf in entries
                      if key in (((mf.get("fieldsV1") or {}).get("f:spec") or {}).get("f:schedulingGates") or {})),
                     None)
        if exact is not None:
            out[gate] = GateAuthor(str(exact.get("manager") or "?"), str(exact.get("time") or "?"), True)
            continue
        candidates = [mf for mf in entries if mf.get("subresource") != "status"
                      and not str(mf.get("manager") or "").startswith(_SYSTEM_MANAGERS)]
        out[gate] = (GateAuthor(str(candidates[0].get("manager") or "?"), str(candidates[0].get("time") or "?"),
                                False) if candidates else None)
    return out


# --- what still blocks placement ------------------------------------------------------------------------------


def standing_blockers(snap: Snapshot, pod: PodView, failure: SchedulingFailure, flavor: FlavorView | None) -> list[str]:
    """The reasons of a recorded scheduling failure that still hold for `pod` as Kueue releases it from `flavor`
    now (the pod's own tolerations plus the flavor's, the pod's nodeSelector plus the flavor's nodeLabels), judged
    by the placement model (:func:`~kueuediag.analysis.capacity.matching_nodes`).

    The record is what kube-scheduler saw when it tried; this answers whether the objects still impose it, so a
    ResourceFlavor change (a toleration, nodeLabels) shows up as a constraint that no longer holds, while the pods
    released before the change keep the old ones until Kueue releases the workload again. Reasons the model does
    not judge (resources, volumes, node state) are kept as recorded: `insufficient <resource>`, or the kind.
    """
    match = matching_nodes(snap, flavor, pod.obj.get("spec") or {})
    out: list[str] = []
    for r in failure.reasons:
        if r.kind == "untolerated-taint" and r.taint:
            key = r.taint.split(":", 1)[0].strip()
            if any(k.startswith(f'taint "{key}') for k in match.excluded):
                out.append(f"untolerated taint {key}")
        elif r.kind == "node-affinity":
            if not match.nodes:
                out.append("node-affinity")
        elif r.kind == "insufficient":
            out.append(f"insufficient {r.resource}")
        else:
            out.append(r.kind)
    return list(dict.fromkeys(out))
