"""KD302 preemption: the workload waits for preemption victims — slow, stuck, or simply in progress."""

from __future__ import annotations

from kueuediag.analysis.installation import installation
from kueuediag.analysis.pod_termination import describe_termination, in_pod_group
from kueuediag.analysis.preemption_victims import (
    LONG_GRACE_SECONDS,
    BlockedHead,
    Victim,
    blocked_heads,
    preemption_cause,
    preemption_victims,
    victim_facts,
    victims_of,
)
from kueuediag.analysis.quota_tree import quota_tree
from kueuediag.analysis.versions import behaviour
from kueuediag.causes import CauseSlug
from kueuediag.check import Check
from kueuediag.models import CheckResult, Confidence, Evidence, Finding, Fix, Patch, Severity, ev
from kueuediag.snapshot.kueue import WorkloadState, WorkloadView
from kueuediag.snapshot.model import Part, Snapshot
from kueuediag.target import Target
from kueuediag.timeutil import human_duration


class Preemption(Check):
    """Explains a workload that waits for the workloads it (or another queue head) preempted.

    What it detects:
        A pending Workload whose `QuotaReserved` message ends with `. Pending the preemption of N
        workload(s)` (reason `WaitingForPreemptedWorkloads` with UnadmittedWorkloadsObservability) or says
        `Workload has overlapping preemption targets with another workload`. It finds the victims — Workloads
        with `Evicted=True` reason `Preempted` whose `Preempted` message names the target's UID
        (`Preempted to accommodate a workload (UID: ...)`) or that a `PreemptedWorkload` event names — and
        looks at their pods: `deletionTimestamp`, termination grace period, preStop hooks, node readiness.
        Three outcomes: `stuck-preemption-target` (a victim pod is a zombie past the end of its grace period
        and still holds quota, often on a NotReady node, with the heads of several ClusterQueues waiting on
        it), `slow-preemption` (victims hold quota through long grace periods or preStop hooks — typical for
        the plain-pod integration, where a pod counts as active until it stops Running) and
        `preemption-in-progress` (victims terminate within short grace periods: just wait). A preemption
        message unchanged for longer than `stale_seconds` (default 30 minutes, by the condition's
        lastTransitionTime) is never "in progress": it is escalated to `stuck-preemption-target` even when
        the stuck victim is not in the snapshot. KD302 owns all three causes; KD301 (rates) and KD901
        (victims holding quota) add their evidence to its finding.

    Why the workload stays pending:
        Kueue's preemptor only issues evictions; a victim keeps its quota until its job is no longer active,
        and the preemptor stays at the head of its ClusterQueue until then. For plain pods that is the whole
        termination grace period, so with 15-minute preStop hooks one guarantee is reclaimed every 15 minutes.
        A pod that never terminates keeps the quota for good on Kueue before v0.14.0 (v0.13.5, v0.12.10), and
        every ClusterQueue head that picks the same victim is skipped with `overlapping preemption targets`.

    Evidence:
        The target's `QuotaReserved` condition; each victim's `Preempted`/`Evicted` and `QuotaReserved`
        conditions; the victim pods' `metadata.deletionTimestamp`, `spec.terminationGracePeriodSeconds`,
        `lifecycle.preStop` and node `Ready` condition; the other blocked heads' messages; the Kueue version
        from the snapshot manifest and the `FastQuotaReleaseInPodIntegration` feature gate.

    How to fix:
        Zombie victim: `kubectl delete pod <pod> -n <ns> --force --grace-period=0`, repair the node, and
        upgrade to Kueue >= v0.14.0 (v0.13.5 / v0.12.10) so such pods stop holding quota (PR #6872).
        Slow preemption: shorten `terminationGracePeriodSeconds` and preStop hooks of preemptible pods, enable
        `FastQuotaReleaseInPodIntegration` (Kueue >= v0.17.0) so quota is released once all victim pods are
        terminating, and as a stop-gap shorten the victims' grace by deleting them again with
        `--grace-period=1`, or evict low-priority workloads ahead of a known wave.

    Example:
        `waiting for 2 preempted workload(s) whose pods take 900s to terminate (preStop hook); quota frees in
        ~11m [slow-preemption]`
    """

    code = "KD302"
    name = "preemption"
    requires = (Part.WORKLOADS,)
    default_severity = Severity.HIGH
    options = {"long_grace_seconds": LONG_GRACE_SECONDS, "stale_seconds": 1800}

    def run(self, snapshot: Snapshot, target: Target) -> CheckResult:
        w = target.workload
        assert w is not None
        if w.state != WorkloadState.PENDING:
            return CheckResult.not_applicable(f"the workload is {w.state}, not pending")
        qr = w.cond("QuotaReserved")
        if qr is None or not qr.false:
            return CheckResult.not_applicable("no QuotaReserved=False condition: Kueue has not tried to admit it")
        heads = blocked_heads(snapshot)
        head = next((h for h in heads if h.workload.uid == w.uid and h.workload.name == w.name), None)
        if head is None:
            return CheckResult.ruled_out(ev(
                "condition", f"QuotaReserved=False ({qr.reason}): {qr.message or 'no message'}", kind="Workload",
                name=w.name, namespace=w.namespace, field="status.conditions[type=QuotaReserved].message",
                expected="no 'Pending the preemption' / 'overlapping preemption targets' wording"))
        own = victims_of(snapshot, w)
        if not own and head.message.preempting:
            # No victim names this workload's UID (older message format, recreated workload): fall back to
            # victims still holding quota whose preemptor path ends in the target's ClusterQueue.
            own = [v for v in preemption_victims(snapshot)
                   if v.holds_quota and v.preemptor_cq and v.preemptor_cq == head.cluster_queue]
        # Heads of other ClusterQueues that wait on preemption, and the victims they picked.
        others = [h for h in heads if h.workload is not w and h.cluster_queue != head.cluster_queue]
        shared: list[Victim] = []
        if head.overlapping or not own:
            other_uids = {h.workload.uid for h in others}
            shared = [v for v in preemption_victims(snapshot) if v.preemptor_uid in other_uids]
        candidates = own + [v for v in shared if v not in own]
        cond_ev = ev("condition", f"QuotaReserved=False ({qr.reason}): {qr.message}", kind="Workload",
                     name=w.name, namespace=w.namespace, field="status.conditions[type=QuotaReserved].message")
        long_grace = int(self.opts["long_grace_seconds"])
        if preemption_cause(candidates, long_grace) != CauseSlug.STUCK_PREEMPTION_TARGET and head.overlapping:
            # The overlapping message does not name the victim: any zombie victim still holding quota fits.
            candidates += [v for v in preemption_victims(snapshot) if v not in candidates
                           and preemption_cause([v], long_grace) == CauseSlug.STUCK_PREEMPTION_TARGET]
        cause = preemption_cause(candidates, long_grace)
        if cause == CauseSlug.STUCK_PREEMPTION_TARGET:
            stuck = [v for v in candidates if preemption_cause([v], long_grace) == cause]
            return CheckResult.fired([self._stuck(snapshot, w, head, heads, stuck, own, cond_ev)])
        if cause == CauseSlug.SLOW_PREEMPTION:
            slow = [v for v in candidates if preemption_cause([v], long_grace) == cause]
            return CheckResult.fired([self._slow(snapshot, w, head, slow, own, cond_ev)])
        return CheckResult.fired([self._in_progress(snapshot, w, head, candidates, cond_ev)])

    # --- stuck ---------------------------------------------------------------------------------------------
    def _stuck(self, snap: Snapshot, w: WorkloadView, head: BlockedHead, heads: list[BlockedHead],
               stuck: list[Victim], own: list[Victim], cond_ev: Evidence) -> Finding:
        victim = max(stuck, key=lambda v: max(p.past_grace_seconds or 0 for p in v.zombie_pods))
        zombie = max(victim.zombie_pods, key=lambda p: p.past_grace_seconds or 0)
        overdue = zombie.past_grace_seconds or 0.0
        tree = quota_tree(snap)
        root = tree.root(head.cluster_queue) if head.cluster_queue else None
        related = [h for h in heads if h.cluster_queue and (
            tree.root(h.cluster_queue) == root if root else h.cluster_queue == head.cluster_queue)]
        waiting_cqs = sorted({h.cluster_queue for h in related if h.cluster_queue})
        n_cqs = len(waiting_cqs)
        title = (f"preemption victim {victim.workload.ref()} is stuck: pod {zombie.pod.name} is "
                 f"{human_duration(overdue)} past its grace period; heads of {n_cqs} ClusterQueue(s) wait on it")
        node_txt = ""
        if zombie.pod.node:
            state = {True: "Ready", False: "NotReady", None: "unknown"}[zombie.node_ready]
            node_txt = f" on node {zombie.pod.node} ({state})"
        inst = installation(snap)
        version, v = inst.version.version, inst.version.parsed
        zombie_fix = behaviour("pod-group-terminating-release")
        fixed = bool(inst.has(zombie_fix.id))
        message = (
            f"Pod {zombie.pod.namespace}/{zombie.pod.name}{node_txt} was deleted but is still "
            f"{zombie.pod.phase} {human_duration(overdue)} after its deletionTimestamp (grace period "
            f"{zombie.grace_seconds}s): it is a zombie. Its Workload {victim.workload.ref()} was preempted "
            f"({victim.reason}) yet still holds quota (QuotaReserved=True), so the preemption never completes. "
            f"The heads of {n_cqs} ClusterQueue(s) ({', '.join(waiting_cqs)}) wait for preemptions; those that "
            "picked the same victim are skipped every cycle with `Workload has overlapping preemption targets "
            "with another workload`, so admissions stall across queues."
        )
        activity = zombie.activity
        if activity.active is None:
            message += f" {inst.unknown_note(activity.depends_on or zombie_fix.id)}."
        elif activity.active:
            message += f" Kueue still counts the pod active ({activity.rule}), so the quota stays taken."
        else:
            message += (f" Kueue no longer counts the pod active ({activity.rule}), yet the Workload still holds "
                        "quota: the job reconciler has not released it — check the Kueue controller.")
        evidence = [cond_ev,
                    ev("object", f"deletionTimestamp {human_duration(overdue)} ago, phase {zombie.pod.phase}, "
                       f"grace {zombie.grace_seconds}s", kind="Pod", name=zombie.pod.name,
                       namespace=zombie.pod.namespace, field="metadata.deletionTimestamp",
                       expected="pod gone within its grace period"),
                    ev("condition", f"Evicted=True (Preempted), QuotaReserved=True: {victim.message}",
                       kind="Workload", name=victim.workload.name, namespace=victim.workload.namespace,
                       field="status.conditions[type=Preempted]", expected="QuotaReserved=False")]
        if zombie.pod.node and zombie.node_ready is False:
            evidence.append(ev("condition", "Ready=False", kind="Node", name=zombie.pod.node,
                               field="status.conditions[type=Ready]", expected="True"))
        for h in related:
            if h.workload is not w and len(evidence) < 9:
                evidence.append(ev("condition", h.message.raw, kind="Workload", name=h.workload.name,
                                   namespace=h.workload.namespace,
                                   field="status.conditions[type=QuotaReserved].message"))
        fixes = [Fix(text=f"Force-delete the zombie pod {zombie.pod.name} (its node stopped answering; the "
                                "quota is released once no victim pod is Running).",
                      patch=Patch(kind="Pod", name=zombie.pod.name, namespace=zombie.pod.namespace,
                                 delete=True, flags=("--force", "--grace-period=0")))]
        remediation: list[str] = []
        if zombie.pod.node:
            remediation.append(f"Repair node {zombie.pod.node}: `kubectl describe node {zombie.pod.node}`; check the "
                               "kubelet and container runtime (zombies come from dead kubelets or pods deleted "
                               "while pulling images).")
        pod_group = in_pod_group(zombie.pod)
        if pod_group and v is not None and not fixed:
            remediation.append(f"Upgrade Kueue ({version}) to {zombie_fix.upgrade_to(v)} or later (PR #6872 in "
                               f"{' / '.join(zombie_fix.since)}): pods past their grace period stop "
                               "holding quota.")
        remediation.append("Alert on pods whose deletionTimestamp is past (zombie pods) so preemption completes "
                           "out of band of Kueue.")
        strong = (n_cqs >= 2 or victim in own) and activity.active is not None
        return self.finding(
            CauseSlug.STUCK_PREEMPTION_TARGET, title, message, severity=Severity.HIGH,
            confidence=Confidence.HIGH if strong else Confidence.MEDIUM, evidence=evidence,
            remediation=remediation, fixes=fixes,
            data={"victim": victim.workload.ref(), "zombie_pod": f"{zombie.pod.namespace}/{zombie.pod.name}",
                  "overdue_seconds": round(overdue), "blocked_cluster_queues": waiting_cqs,
                  "kueue_version": version, "zombie_fix_present": fixed,
                  "facts": victim_facts(snap, stuck)},
        )

    # --- slow ------------------------------------------------------------------------------------------------
    def _slow(self, snap: Snapshot, w: WorkloadView, head: BlockedHead, slow: list[Victim],
              own: list[Victim], cond_ev: Evidence) -> Finding:
        grace = max(v.max_grace for v in slow)
        pre_stop = any(v.pre_stop for v in slow)
        remaining = [r for r in (v.grace_remaining for v in slow) if r is not None]
        left = max(remaining) if remaining else None
        not_deleted = [v for v in slow if not v.terminating_pods]
        pod_int = any(v.pod_integration for v in slow)
        hook = " (preStop hook)" if pre_stop else ""
        n = head.message.preempting or len(slow)
        title = f"waiting for {n} preempted workload(s) whose pods take {grace}s to terminate{hook}"
        if left is not None:
            title += f"; quota frees in ~{human_duration(left)}"
        inst = installation(snap)
        version = inst.version.version
        fast = behaviour("fast-quota-release-gate")
        gate = fast.gate or "FastQuotaReleaseInPodIntegration"
        gate_on = inst.gates.explicit.get(gate)
        has_gate = bool(inst.has(fast.id))
        names = ", ".join(x.workload.ref() for x in slow[:4]) + (" …" if len(slow) > 4 else "")
        message = (
            f"Kueue preempted {names} to make room for this workload, but a victim keeps its quota until its "
            f"pods stop running. Their termination grace period is {grace}s{hook}"
        )
        message += (f", and the last grace period ends in {human_duration(left)}." if left is not None
                    else ".")
        if not_deleted:
            message += (f" {len(not_deleted)} victim(s) have no terminating pod yet, so their grace period "
                        "has not even started.")
        if pod_int:
            message += (" The victims are plain pods (kueue.x-k8s.io/managed=true): for the pod integration a "
                        "pod counts as active through its whole grace period, so preemptions in the ClusterQueue "
                        f"are serialised — one reclaimed slot every ~{human_duration(grace)}.")
            if gate_on:
                message += f" {gate} is enabled, yet the victims still hold quota."
            if inst.has(fast.id) is None:
                message += f" Whether {gate} could shorten this: {inst.unknown_note(fast.id)}."
        message += " This workload stays at the head of its ClusterQueue until then."
        evidence = [cond_ev]
        for victim in slow[:4]:
            evidence.append(ev("condition", f"Evicted=True (Preempted), QuotaReserved=True: {victim.message}",
                               kind="Workload", name=victim.workload.name, namespace=victim.workload.namespace,
                               field="status.conditions[type=Preempted]", expected="QuotaReserved=False"))
            for p in victim.active_pods[:2]:
                state = describe_termination(snap, p.pod)
                evidence.append(ev("object", f"terminationGracePeriodSeconds={p.grace_seconds}"
                                   f"{', preStop hook' if p.pre_stop else ''}; {state}", kind="Pod",
                                   name=p.pod.name, namespace=p.pod.namespace,
                                   field="spec.terminationGracePeriodSeconds",
                                   expected=f"< {self.opts['long_grace_seconds']}s"))
        remediation = [
            f"Shorten `spec.terminationGracePeriodSeconds` (now {grace}s) and preStop hooks of preemptible pods "
            "(e.g. checkpoint more often and give them 30-60s).",
        ]
        if pod_int and not gate_on:
            if has_gate:
                remediation.append(f"Enable the {gate} feature gate (alpha, Kueue >= {fast.first}): "
                                   f"`--feature-gates={gate}=true` on kueue-controller-manager — quota "
                                   "is released as soon as all victim pods are terminating.")
            else:
                remediation.append(f"Upgrade Kueue ({version or 'version unknown'}) to >= {fast.first} and "
                                   f"enable the {gate} feature gate so quota is released as soon as "
                                   "all victim pods are terminating.")
        pods = " ".join(p.pod.name for x in slow for p in x.terminating_pods[:3])
        ns = slow[0].workload.namespace
        if pods:
            remediation.append(f"Stop-gap: shorten the victims' grace by deleting them again: `kubectl delete pod "
                               f"-n {ns} {pods} --grace-period=1` (their work is lost).")
        remediation.append("Stop-gap before a known wave (migration, burst of high-priority work): evict the "
                           "borrowing/low-priority workloads by hand so their grace periods run in parallel.")
        return self.finding(
            CauseSlug.SLOW_PREEMPTION, title, message, severity=Severity.HIGH,
            confidence=Confidence.HIGH if pod_int and any(x in own for x in slow) else Confidence.MEDIUM,
            evidence=evidence, remediation=remediation,
            data={"victims": [x.workload.ref() for x in slow], "grace_seconds": grace, "pre_stop": pre_stop,
                  "grace_remaining_seconds": round(left) if left is not None else None,
                  "pod_integration": pod_int, "kueue_version": version,
                  "fast_quota_release_gate": gate_on, "facts": victim_facts(snap, slow)},
        )

    # --- in progress ---------------------------------------------------------------------------------------
    def _in_progress(self, snap: Snapshot, w: WorkloadView, head: BlockedHead, victims: list[Victim],
                     cond_ev: Evidence) -> Finding:
        n = head.message.preempting
        evidence = [cond_ev]
        holding = [v for v in victims if v.holds_quota]
        if victims:
            left = [r for r in (v.grace_remaining for v in holding) if r is not None]
            with_pods = [v for v in victims if v.active_pods]
            grace = max((v.max_grace for v in with_pods), default=0)
            title = f"preempting {n or len(victims)} workload(s); {len(holding)} still hold quota"
            if with_pods:
                title += f", their pods terminate within {grace}s"
            if left:
                title += f" (~{human_duration(max(left))} left)"
            message = (f"Kueue preempted {', '.join(v.workload.ref() for v in victims[:4])} for this workload; "
                       f"{len(holding)} of them still hold(s) quota.")
            if with_pods:
                message += (f" Their pods terminate within short grace periods (at most {grace}s), so the workload "
                            "should be admitted within a few scheduling cycles.")
            else:
                message += (" No running victim pod is in the snapshot: the quota is released as soon as Kueue sees "
                            "the victims' jobs inactive.")
            for v in victims[:4]:
                evidence.append(ev("condition", f"Evicted=True (Preempted), QuotaReserved="
                                   f"{'True' if v.holds_quota else 'False'}", kind="Workload",
                                   name=v.workload.name, namespace=v.workload.namespace,
                                   field="status.conditions[type=Evicted]"))
            confidence = Confidence.HIGH
        elif head.overlapping:
            title = "skipped: overlapping preemption targets with another ClusterQueue's head"
            message = ("Another ClusterQueue's head picked the same preemption victims; Kueue skips this workload "
                       "until those preemptions complete.")
            confidence = Confidence.MEDIUM
        else:
            title = f"preempting {n} workload(s); victims not found in the snapshot"
            message = ("The QuotaReserved message says Kueue is waiting for preempted workloads, but no Workload "
                       "with Evicted=True (Preempted) naming this workload's UID is in the snapshot (already "
                       "gone, or outside the collected namespaces).")
            confidence = Confidence.LOW
        since = snap.age_seconds(head.since)
        stale = float(self.opts["stale_seconds"])
        if since is not None and since >= stale:
            # Unchanged for far longer than any grace period: not a preemption in progress but one that is stuck.
            return self.finding(
                CauseSlug.STUCK_PREEMPTION_TARGET,
                f"preemption has not progressed for {human_duration(since)}: {title}",
                f"{message} The QuotaReserved message has not changed for {human_duration(since)} (its "
                "lastTransitionTime), far beyond a scheduling cycle or a victim's grace period: the preemption is "
                "stuck. Look for a victim that never releases quota (a pod Terminating on a NotReady node, a "
                "finalizer) and for a known Kueue bug.",
                severity=Severity.HIGH, confidence=Confidence.MEDIUM if head.overlapping or victims else Confidence.LOW,
                evidence=evidence,
                data={"victims": [v.workload.ref() for v in victims], "preempting": n,
                      "waiting_seconds": round(since), "stale_after_seconds": round(stale),
                      "facts": victim_facts(snap, victims)},
            )
        return self.finding(
            CauseSlug.PREEMPTION_IN_PROGRESS, title, message, severity=Severity.LOW, confidence=confidence,
            evidence=evidence,
            data={"victims": [v.workload.ref() for v in victims], "preempting": n,
                  "facts": victim_facts(snap, victims),
                  "waiting_seconds": round(since) if since is not None else None},
        )
