"""Two facts about a pod that is being deleted, each answered once for the whole tool.

**Past its grace** (Kubernetes' view). The API server sets ``metadata.deletionTimestamp`` to the time of the
delete request *plus* the grace period, so a pod whose deletionTimestamp is in the past while it still exists
(not Succeeded/Failed) has outlived its grace period: the kubelet should have killed it. When that lasts
longer than :data:`ZOMBIE_AFTER_SECONDS` the pod is a *zombie* (dead kubelet, NotReady node, stuck
finalizer). :func:`seconds_past_grace`, :func:`grace_remaining_seconds`, :func:`is_zombie`.

**Still counted active by Kueue** (what decides whether a preemption victim keeps its quota). Kueue's job
reconciler releases a victim's quota once the job is no longer active (kueue-facts §8), and "active" depends on
the integration and the Kueue release — looked up in the version table, never compared in place:

* job-based integrations (batch Job, JobSet, ...): a pod with a deletionTimestamp no longer counts (the job's
  ``status.active`` excludes terminating pods);
* pod integration (``kueue.x-k8s.io/managed=true`` or a pod group): a pod counts while it is ``Running``,
  through its whole grace period and beyond — for a single plain pod on every release;
* a Running *pod-group* pod stops counting once now > deletionTimestamp + deletionGracePeriodSeconds (about
  two grace periods after the delete request) on releases with row ``pod-group-terminating-release``
  (v0.14.0 / v0.13.5 / v0.12.10, PR #6872);
* with the ``FastQuotaReleaseInPodIntegration`` gate on (row ``fast-quota-release-gate``, v0.17.0+), any pod
  with a deletionTimestamp is inactive.

When the answer depends on an unknown Kueue version, :class:`KueueActivity.active` is None and
:attr:`KueueActivity.depends_on` names the table row, so checks say which conclusion needs the version.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from kueuediag.analysis.installation import installation
from kueuediag.analysis.versions import behaviour
from kueuediag.records import dataclass
from kueuediag.snapshot.k8s import PodView
from kueuediag.snapshot.model import Snapshot

ZOMBIE_AFTER_SECONDS = 60.0
"""How long past its grace a pod must be before it counts as a zombie (kubelets report a kill within seconds)."""

MANAGED_LABEL = "kueue.x-k8s.io/managed"
POD_GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"


# --- past its grace (Kubernetes) ----------------------------------------------------------------------------


def seconds_past_grace(pod: PodView, now: datetime) -> float | None:
    """Seconds since the pod's deletionTimestamp (the end of its grace period) while it still exists; None when
    it is not being deleted, already terminal, or still within its grace period."""
    if pod.deletion is None or pod.terminal or now <= pod.deletion:
        return None
    return (now - pod.deletion).total_seconds()


def grace_remaining_seconds(pod: PodView, now: datetime) -> float | None:
    """Seconds until the pod's grace period ends; None when it is not terminating within its grace period."""
    if pod.deletion is None or pod.terminal or now > pod.deletion:
        return None
    return (pod.deletion - now).total_seconds()


def is_past_grace(pod: PodView, now: datetime) -> bool:
    return seconds_past_grace(pod, now) is not None


def is_zombie(pod: PodView, now: datetime) -> bool:
    """Past its grace period for longer than :data:`ZOMBIE_AFTER_SECONDS`."""
    past = seconds_past_grace(pod, now)
    return past is not None and past > ZOMBIE_AFTER_SECONDS


# --- still counted active by Kueue ---------------------------------------------------------------------------


def is_pod_integration(pod: PodView) -> bool:
    """A pod managed by Kueue's pod integration (plain pod or pod group), not a pod of a Job or JobSet."""
    return bool(pod.labels.get(POD_GROUP_LABEL) or pod.labels.get(MANAGED_LABEL) == "true")


def in_pod_group(pod: PodView) -> bool:
    return bool(pod.labels.get(POD_GROUP_LABEL))


@dataclass(frozen=True)
class KueueActivity:
    """Whether Kueue counts a pod as active (so its Workload keeps quota after an eviction), and why."""

    active: bool | None
    """None: the answer depends on the Kueue version, which the snapshot does not tell"""
    rule: str
    """the rule that decided, in words fit for a finding"""
    depends_on: str | None = None
    """the version-table row the answer hinges on when :attr:`active` is None"""


def counted_active_by_kueue(snap: Snapshot, pod: PodView) -> KueueActivity:
    """Whether Kueue's job reconciler counts `pod` as active at the snapshot time (see the module docstring)."""
    if pod.terminal:
        return KueueActivity(False, f"the pod is {pod.phase}")
    if not is_pod_integration(pod):
        if pod.deletion is not None:
            return KueueActivity(False, "a terminating pod of a job no longer counts as active")
        return KueueActivity(True, "the pod is not being deleted")
    inst = installation(snap)
    fast = behaviour("fast-quota-release-gate")
    gate = fast.gate or ""
    if pod.deletion is not None and inst.gates.enabled(gate):
        if inst.has(fast.id) is not False:
            return KueueActivity(False, f"{gate} is on: a terminating pod no longer counts as active")
    if pod.phase != "Running":
        return KueueActivity(False, f"the pod is {pod.phase}; the pod integration counts only Running pods")
    if pod.deletion is None:
        return KueueActivity(True, "the pod is Running and not being deleted")
    if not in_pod_group(pod):
        return KueueActivity(True, "a plain pod counts as active while it is Running, even past its grace period")
    cutoff = pod.deletion + timedelta(seconds=pod.grace_seconds)
    if snap.now <= cutoff:
        return KueueActivity(True, "a Running pod-group pod counts as active until deletionTimestamp + "
                                   "deletionGracePeriodSeconds")
    row = behaviour("pod-group-terminating-release")
    fixed = inst.has(row.id)
    version = inst.version.version
    if fixed is None:
        return KueueActivity(None, "a Running pod-group pod past deletionTimestamp + deletionGracePeriodSeconds "
                                   f"stops counting only on Kueue >= {' / '.join(row.since)}", depends_on=row.id)
    if fixed:
        return KueueActivity(False, f"Kueue {version or '(>= ' + row.first + ')'} ignores a Running pod-group pod "
                                    "once deletionTimestamp + deletionGracePeriodSeconds has passed (PR #6872)")
    return KueueActivity(True, f"Kueue {version} predates PR #6872: a Running pod-group pod counts as active "
                               "until it is gone")


# --- one sentence for every check ----------------------------------------------------------------------------


def describe_termination(snap: Snapshot, pod: PodView) -> str:
    """The pod's termination state and Kueue's view of it in one phrase, so every check words it the same."""
    from kueuediag.timeutil import human_duration

    past = seconds_past_grace(pod, snap.now)
    left = grace_remaining_seconds(pod, snap.now)
    if pod.terminal:
        state = f"{pod.phase}"
    elif past is not None:
        state = (f"{pod.phase} {human_duration(past)} past its grace period "
                 f"({'a zombie' if past > ZOMBIE_AFTER_SECONDS else 'just overdue'})")
    elif left is not None:
        state = f"terminating, grace ends in {human_duration(left)}"
    else:
        state = f"{pod.phase}, not deleted"
    activity = counted_active_by_kueue(snap, pod)
    if activity.active is None:
        kueue = f"whether Kueue still counts it active depends on the Kueue version ({activity.rule})"
    else:
        kueue = f"Kueue {'still counts it active' if activity.active else 'no longer counts it active'}"
        kueue += f" ({activity.rule})"
    return f"{state}; {kueue}"


def pod_facts(snap: Snapshot, pods: list[PodView]) -> dict[str, dict[str, bool | None]]:
    """Structured conclusions about pods for Finding.data["facts"] (compared across checks by a test)."""
    past: dict[str, bool | None] = {}
    active: dict[str, bool | None] = {}
    for p in pods:
        key = f"Pod/{p.namespace}/{p.name}"
        past[key] = is_past_grace(p, snap.now)
        active[key] = counted_active_by_kueue(snap, p).active
    return {"pod-past-grace": past, "pod-counted-active-by-kueue": active}
