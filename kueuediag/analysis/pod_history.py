"""What happened to a workload's earlier pods, from the events they left behind.

Pods come and go: a job whose pod failed to pull its image is evicted after the waitForPodsReady timeout and its pod
deleted; a preempted or node-pressure-evicted pod is replaced. The Event objects outlive the pods (an hour by
default), and they are often the only record of why a workload is requeued, backing off or running its second
attempt. This module is the one owner of "which events are about pods of this workload that no longer exist":

* a pod belongs to the workload's job when the job's own events name it (`SuccessfulCreate: Created pod: X`,
  `SuccessfulDelete: Deleted pod: X`), or, for a batch Job, when its name is the Job's pod name
  (`<job>-<5 chars>`, indexed `<job>-<index>-<5 chars>`);
* it no longer exists when the snapshot holds no Pod of that name while it does hold Pods (a snapshot without
  pods cannot tell);
* only events that explain the history are kept: image pulls and container start failures, evictions,
  preemptions, failed scheduling, OOM kills, node failures.

Evidence built from them says plainly that the pod no longer exists, and nothing built from them is a remediation:
no command may name an object that is gone.
"""

from __future__ import annotations

import re
from typing import Any

from kueuediag.models import Evidence, ev
from kueuediag.records import dataclass
from kueuediag.snapshot.k8s import EventView, meta
from kueuediag.snapshot.kueue import events, events_for
from kueuediag.snapshot.model import Snapshot

_CREATED = re.compile(r"^(?:Created|Deleted) pod: (?P<pod>\S+)")
# event reason → what it says about the pod's history
_HISTORY: dict[str, str] = {
    "Failed": "start failure",
    "BackOff": "back-off",
    "Evicted": "eviction",
    "Preempted": "preemption",
    "Preempting": "preemption",
    "FailedScheduling": "failed scheduling",
    "OOMKilling": "OOM kill",
    "TaintManagerEviction": "eviction",
    "NodeNotReady": "node failure",
    "FailedMount": "volume failure",
    "FailedAttachVolume": "volume failure",
}


@dataclass(frozen=True)
class DepartedPodEvent:
    """One event about a pod of the workload that the snapshot no longer holds."""

    pod: str
    namespace: str
    what: str
    """start failure | back-off | eviction | preemption | failed scheduling | OOM kill | node failure | volume
    failure"""
    event: EventView

    def evidence(self) -> Evidence:
        e = self.event
        times = f" ×{e.count}" if e.count > 1 else ""
        return ev("event", f"pod {self.pod} (no longer exists) {self.what}: {e.reason}{times}: {e.message}",
                  kind="Pod", name=self.pod, namespace=self.namespace, field=e.reason,
                  expected="history: this pod was deleted; the event outlived it")


def _pod_names_of(snap: Snapshot, owner: dict[str, Any]) -> tuple[set[str], re.Pattern[str] | None]:
    m = meta(owner)
    kind, name, ns = str(owner.get("kind", "")), str(m.get("name", "")), m.get("namespace")
    named = set()
    for e in events_for(snap, kind, ns, name):
        hit = _CREATED.match(e.message)
        if hit:
            named.add(hit.group("pod"))
    pattern = None
    if kind == "Job" and str(owner.get("apiVersion", "")).startswith("batch/"):
        pattern = re.compile(rf"^{re.escape(name)}-(?:\d+-)?[a-z0-9]{{5}}$")
    return named, pattern


def departed_pod_events(snap: Snapshot, owner: dict[str, Any] | None) -> list[DepartedPodEvent]:
    """Events that explain the history of the job's pods that no longer exist, oldest first."""
    if owner is None or not snap.count("Pod"):
        return []
    named, pattern = _pod_names_of(snap, owner)
    ns = meta(owner).get("namespace")

    def build() -> list[DepartedPodEvent]:
        out = []
        for e in events(snap):
            pod_ns = e.involved_namespace or e.namespace
            if e.involved_kind != "Pod" or pod_ns != ns or e.reason not in _HISTORY:
                continue
            if e.involved_name not in named and (pattern is None or not pattern.match(e.involved_name)):
                continue
            if snap.get("Pod", e.involved_name, pod_ns) is not None:
                continue
            out.append(DepartedPodEvent(e.involved_name, pod_ns or "", _HISTORY[e.reason], e))
        out.sort(key=lambda d: d.event.last or d.event.first or snap.now)
        return out

    key = f"departed-pod-events:{owner.get('kind')}:{ns}/{meta(owner).get('name')}"
    result: list[DepartedPodEvent] = snap.memo(key, build)
    return result


def history_evidence(snap: Snapshot, owner: dict[str, Any] | None, limit: int = 4) -> list[Evidence]:
    """Evidence lines for the newest `limit` history events of pods that no longer exist (one per pod and kind)."""
    seen: set[tuple[str, str]] = set()
    picked: list[DepartedPodEvent] = []
    for d in reversed(departed_pod_events(snap, owner)):
        if (d.pod, d.what) in seen:
            continue
        seen.add((d.pod, d.what))
        picked.append(d)
        if len(picked) == limit:
            break
    return [d.evidence() for d in reversed(picked)]
