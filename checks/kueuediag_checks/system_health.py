"""KD901 system-health: cluster health that stalls Kueue (zombie pods, controller, nodes, recent changes)."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from kueuediag.analysis.health import (
    Change,
    ControllerPod,
    Zombie,
    concerns_queue,
    config_changes,
    controller_deployment,
    controller_pods,
    shares_quota_with,
    zombie_pods,
)
from kueuediag.analysis.installation import installation
from kueuediag.analysis.pod_termination import describe_termination
from kueuediag.analysis.preemption_victims import Victim, quota_holding_victims, victim_blocks, victim_facts
from kueuediag.analysis.versions import behaviour
from kueuediag.causes import CauseSlug
from kueuediag.check import Check
from kueuediag.models import (
    CheckResult,
    Confidence,
    Contribution,
    Evidence,
    Finding,
    Fix,
    Outcome,
    Patch,
    Severity,
    ev,
)
from kueuediag.records import dataclass
from kueuediag.snapshot.k8s import NodeView, meta
from kueuediag.snapshot.kueue import KueueIndex, WorkloadState, WorkloadView, kueue_index, nodes
from kueuediag.snapshot.model import Part, Snapshot
from kueuediag.target import Target
from kueuediag.timeutil import format_rfc3339, human_duration

_GPU_HINTS = ("gpu",)
_KIND_ORDER = {"ConfigMap": 0, "Deployment": 1, "ClusterQueue": 2, "Cohort": 3, "ResourceFlavor": 4}


@dataclass
class _Ctx:
    snap: Snapshot
    target: Target
    idx: KueueIndex
    workload: WorkloadView | None
    cq: str | None
    pending: bool
    onset: datetime | None


class SystemHealth(Check):
    """Looks for cluster and controller health problems that stall admission.

    What it detects:
        * zombie pods: pods still there more than a minute after their `deletionTimestamp` (which is the end
          of their grace period), often on a NotReady node;
        * preemption victims that still hold quota (`Evicted=True` reason `Preempted` while
          `QuotaReserved=True`) and for how long;
        * the Kueue controller: pods not ready, restarts, CrashLoopBackOff, every leader-election candidate
          failing (namespace kueue-system, label `control-plane=controller-manager` or
          `app.kubernetes.io/name=kueue`);
        * nodes of the workload's flavors that are NotReady, cordoned, or report less GPU allocatable than
          capacity;
        * configuration changes near the pending onset: ClusterQueues, Cohorts and ResourceFlavors of the
          workload's cohort tree, the `kueue-manager-config` ConfigMap and the controller Deployment (newest
          `metadata.managedFields[].time` that is not a status write), and controller restarts.
        It also records the Kueue version (manifest, controller image or `kueue_build_info`) and the feature
        gates (`--feature-gates` and the Configuration's `featureGates`) in every finding's data.

    Why the workload stays pending:
        A preemptor waits until its victims release quota; a victim whose pod is a zombie never does, and
        heads of several ClusterQueues may all target it. A controller that is down admits
        nothing. Nodes that are gone shrink what kube-scheduler can place. A change to queues or to the Kueue
        configuration (such as enabling fair sharing) can start the wait.
        A health item is about the workload only when it plausibly explains it: controller down while it is
        pending, a zombie or victim holding quota in its ClusterQueue or cohort tree, unhealthy nodes in its
        flavors, a change close to when it started waiting. Everything else is reported as context.

    Evidence:
        Pod `metadata.deletionTimestamp` and grace period, node `Ready` condition and `spec.unschedulable`,
        node `status.allocatable` vs `status.capacity`, Workload `Evicted`/`QuotaReserved` conditions,
        controller container statuses (`restartCount`, `state.waiting.reason`, `lastState.terminated`),
        `metadata.managedFields[].time` of the changed objects.

    How to fix:
        Force-delete zombie pods (`kubectl delete pod <pod> -n <ns> --force --grace-period=0`) and repair their
        node; `kubectl -n kueue-system describe pod -l control-plane=controller-manager` and read the previous
        container's logs (`kubectl logs --previous`); uncordon or repair nodes; review (and roll back) the
        configuration change.

    Example:
        `1 pod stuck terminating 2h45m past its grace period, on NotReady node gpu-node-2, holding quota in
        ClusterQueue team-b [zombie-pods]`
    """

    code = "KD901"
    name = "system-health"
    requires = (Part.PODS,)
    needs_workload = False
    default_severity = Severity.MEDIUM
    options = {"restart_threshold": 3, "victim_hold_minutes": 10, "change_window_minutes": 60}

    def run(self, snapshot: Snapshot, target: Target) -> CheckResult:
        w = target.workload
        pending = w is not None and w.state in (WorkloadState.PENDING, WorkloadState.QUOTA_RESERVED)
        ctx = _Ctx(snapshot, target, kueue_index(snapshot), w, target.cluster_queue(snapshot), pending,
                   (w.queue_order_time or w.created) if w is not None else None)
        zombies, victims = self._zombies(ctx), self._victims(ctx)
        controller, node_findings, changes = self._controller(ctx), self._nodes(ctx), self._changes(ctx)
        findings = zombies + controller + node_findings + changes
        if findings or victims:
            inst = installation(snapshot)
            extra = {"kueueVersion": inst.version.version, "kueueVersionSource": inst.version.source,
                     "featureGates": inst.gates.describe()}
            return CheckResult.fired([f.model_copy(update={"data": {**f.data, **extra}}) for f in findings],
                                     victims)
        return self._nothing_found(ctx)

    def _nothing_found(self, ctx: _Ctx) -> CheckResult:
        """Ruled out with what each part looked at — or could not check, naming the parts it could not see."""
        snap = ctx.snap
        seen = [ev("derived", f"{snap.count('Pod')} pod(s): none a zombie (past its grace period for over a minute)",
                   field="metadata.deletionTimestamp"),
                ev("derived", f"{len(quota_holding_victims(snap))} preemption victim(s) holding quota: none stuck or "
                              f"held {self.opts['victim_hold_minutes']}m or more", field="status.conditions[Evicted]")]
        unseen: list[tuple[str, str]] = []
        ctrl = controller_pods(snap)
        if ctrl:
            seen.append(ev("object", f"{sum(1 for p in ctrl if p.healthy)}/{len(ctrl)} controller pod(s) ready, "
                                     f"at most {max(p.restarts for p in ctrl)} restart(s)",
                           kind="Pod", name=ctrl[0].name, namespace=ctrl[0].namespace, field="status"))
        elif controller_deployment(snap) is not None:
            seen.append(ev("object", "controller Deployment present, no pod of it listed", field="status"))
        else:
            unseen.append(("controller pods", "no kueue-controller-manager Pod or Deployment in the snapshot"))
        why_nodes = snap.part_unavailable(Part.NODES)
        if why_nodes:
            unseen.append(("nodes", why_nodes))
        else:
            seen.append(ev("derived", f"{len(nodes(snap))} node(s): none NotReady, cordoned or short of "
                                      "allocatable GPUs", field="status.conditions[Ready]"))
        seen.append(ev("derived", f"no queue, flavor or Kueue configuration change within "
                                  f"{self.opts['change_window_minutes']}m", field="metadata.managedFields[].time"))
        if unseen:
            return CheckResult(outcome=Outcome.COULD_NOT_CHECK, input=", ".join(i for i, _ in unseen),
                        reason="; ".join(r for _, r in unseen), evidence=tuple(seen))
        return CheckResult.ruled_out(*seen)

    # --- zombies -------------------------------------------------------------------------------------------

    def _zombies(self, ctx: _Ctx) -> list[Finding]:
        zombies = zombie_pods(ctx.snap)
        if not zombies:
            return []
        relevant = [z for z in zombies if ctx.pending and shares_quota_with(ctx.idx, ctx.cq, z.cluster_queue)]
        others = [z for z in zombies if z not in relevant]
        out = []
        for group, about in ((relevant, True), (others, False)):
            if not group:
                continue
            oldest = group[0]
            n = len(group)
            on = _node_phrase(group)
            holding = sorted({z.cluster_queue for z in group if z.cluster_queue})
            hold = f", holding quota in ClusterQueue {', '.join(holding)}" if holding else ""
            title = (f"{n} pod{'s' if n != 1 else ''} stuck terminating {human_duration(oldest.overdue_seconds)} "
                     f"past {'their' if n != 1 else 'its'} grace period{on}{hold}")
            why = ""
            if about:
                why = (f" Their Workloads still hold quota that ClusterQueue {ctx.cq} needs (same ClusterQueue "
                       "or cohort tree): a preemptor waiting for them waits forever on Kueue releases that count "
                       "a Running pod with a deletionTimestamp as active.")
            severity = Severity.HIGH if about else (Severity.MEDIUM if holding else Severity.LOW)
            out.append(self.finding(
                CauseSlug.ZOMBIE_PODS, title,
                f"{n} pod(s) still exist {human_duration(oldest.overdue_seconds)} after their deletion grace "
                f"period ended (oldest: {oldest.pod.namespace}/{oldest.pod.name}). This happens when the kubelet "
                f"is gone (NotReady node) or a pod was deleted while pulling its image.{why}",
                severity=severity, confidence=Confidence.HIGH,
                evidence=[e for z in group[:5] for e in _zombie_evidence(z)],
                remediation=["Repair or remove the NotReady node; alert on pods Terminating past their grace "
                             "period."],
                fixes=[Fix(text=f"Force-delete the zombie pod {z.pod.name} (its node stopped answering).",
                            patch=Patch(kind="Pod", name=z.pod.name, namespace=z.pod.namespace, delete=True,
                                       flags=("--force", "--grace-period=0")))
                       for z in group[:3]],
                about_target=about,
                data={"pods": [f"{z.pod.namespace}/{z.pod.name}" for z in group],
                      "oldest_overdue_seconds": round(oldest.overdue_seconds)},
            ))
        return out

    # --- preemption victims ------------------------------------------------------------------------------

    def _victims(self, ctx: _Ctx) -> list[Contribution]:
        limit = float(self.opts["victim_hold_minutes"]) * 60
        held = [v for v in quota_holding_victims(ctx.snap) if v.zombie_pods or (v.held_seconds or 0) >= limit]
        out = []
        for cause in ("stuck-preemption-target", "slow-preemption"):
            group = [v for v in held if bool(v.zombie_pods) == (cause == "stuck-preemption-target")]
            if not group:
                continue
            about_group = [v for v in group if ctx.pending and victim_blocks(ctx.snap, ctx.workload, ctx.cq, v)]
            for sub, about in ((about_group, True), ([v for v in group if v not in about_group], False)):
                if sub:
                    out.append(self._victim_finding(ctx, cause, sub, about))
        return out

    def _victim_finding(self, ctx: _Ctx, cause: str, group: list[Victim], about: bool) -> Contribution:
        """Preemption victims that hold quota: evidence for KD302's slow-/stuck-preemption cause."""
        first = group[0]
        n = len(group)
        held = human_duration(first.held_seconds)
        if n == 1:
            title = (f"preemption victim {first.workload.ref()} still holds quota in ClusterQueue "
                     f"{first.cluster_queue} {held} after its eviction")
        else:
            title = f"{n} preemption victims still hold quota (longest {held}, {first.workload.ref()})"
        if cause == "stuck-preemption-target":
            title += f"; {len(first.zombie_pods)} of its pods stuck terminating"
            why = ("Its pods are stuck past their grace period while Kueue still holds the quota: every preemptor "
                   "that targets it waits, and heads of other ClusterQueues that pick the same victim are skipped "
                   "for overlapping targets.")
        else:
            why = ("Preemptions complete one victim release at a time (preStop hooks, long "
                   "terminationGracePeriodSeconds).")
        states = [f"pod {p.pod.name}: {describe_termination(ctx.snap, p.pod)}" for p in first.active_pods[:2]]
        if states:
            why += " " + "; ".join(states) + "."
        elif first.pods:
            why += " None of its pods is active any more; Kueue should release the quota at its next reconcile."
        else:
            why += " Its pods are not in the snapshot."
        evidence: list[Evidence] = []
        for v in group[:4]:
            evidence.append(ev(
                "condition",
                f"Evicted=True (Preempted{', ' + v.preempted_reason if v.preempted_reason else ''}) since "
                f"{format_rfc3339(v.evicted_at) if v.evicted_at else '?'}; QuotaReserved=True",
                kind="Workload", name=v.workload.name, namespace=v.workload.namespace,
                field="status.conditions[type=Evicted]", expected="QuotaReserved=False soon after eviction"))
            for vp in v.zombie_pods[:2]:
                p = vp.pod
                evidence.append(ev("object", f"deletionTimestamp {format_rfc3339(p.deletion) if p.deletion else '?'},"
                                   f" phase {p.phase}", kind="Pod", name=p.name, namespace=p.namespace,
                                   field="metadata.deletionTimestamp"))
        # a contribution: folded into KD302's finding, whose zombie-pod patch verifies this same command
        remediation = [f"kubectl delete pod {vp.pod.name} -n {vp.pod.namespace} --force --grace-period=0"
                       for v in group[:2] for vp in v.zombie_pods[:2]]
        if cause == "slow-preemption":
            remediation = ["Shorten terminationGracePeriodSeconds / preStop hooks of preemptible workloads.",
                           f"Kueue >= {behaviour('fast-quota-release-gate').first}: enable the "
                           "FastQuotaReleaseInPodIntegration feature gate for plain pods "
                           "(--feature-gates=FastQuotaReleaseInPodIntegration=true)."]
        return self.contribute(
            cause, title,
            f"{first.workload.ref()} was preempted ({first.message or 'Evicted reason Preempted'}) {held} ago "
            f"but still holds quota. {why}",
            severity=Severity.HIGH if about else Severity.MEDIUM,
            confidence=Confidence.HIGH if cause == "stuck-preemption-target" else Confidence.MEDIUM,
            evidence=evidence, remediation=remediation, about_target=about,
            data={"victims": [v.workload.ref() for v in group],
                  "held_seconds": round(first.held_seconds or 0), "facts": victim_facts(ctx.snap, group)},
        )

    # --- the Kueue controller ---------------------------------------------------------------------------

    def _controller(self, ctx: _Ctx) -> list[Finding]:
        pods = controller_pods(ctx.snap)
        dep = controller_deployment(ctx.snap)
        if not pods and dep is None:
            return []
        unhealthy = [p for p in pods if not p.healthy]
        healthy = [p for p in pods if p.healthy]
        threshold = int(self.opts["restart_threshold"])
        restarting = [p for p in pods if p.restarts >= threshold]
        dep_ready, dep_want = _deployment_replicas(dep)
        down = (bool(pods) and not healthy) or (dep is not None and not pods and dep_want > 0 and dep_ready == 0)
        if not down and not unhealthy and not restarting:
            return []
        evidence = [_controller_evidence(p) for p in (unhealthy or restarting)[:4]]
        if dep is not None:
            m = meta(dep)
            evidence.append(ev("object", f"{dep_ready}/{dep_want} replicas ready", kind="Deployment",
                               name=m.get("name"), namespace=m.get("namespace"), field="status.readyReplicas",
                               expected=f"{dep_want}"))
        worst = (unhealthy or restarting)[0] if (unhealthy or restarting) else None
        detail = _pod_state(worst) if worst is not None else "no controller pod in the snapshot"
        ns = worst.namespace if worst is not None else (meta(dep).get("namespace") if dep else "kueue-system")
        remediation = [
            f"kubectl -n {ns} describe pod -l control-plane=controller-manager",
            f"kubectl -n {ns} logs deploy/kueue-controller-manager -c manager --previous",
            "Check the webhook service, certificates and API-server health; raise memory limits after OOMKilled.",
        ]
        if down:
            total = len(pods) or dep_want
            candidates = ""
            if len(unhealthy) > 1:
                candidates = (f" All {len(unhealthy)} leader-election candidates are failing, so no replica can "
                              "take over the lease.")
            about = ctx.pending or ctx.workload is None
            return [self.finding(
                CauseSlug.CONTROLLER_UNHEALTHY,
                f"Kueue controller down: 0/{total} replicas ready ({detail})",
                f"No kueue-controller-manager replica is ready: nothing is admitted, requeued or released "
                f"while it is down, and the workload's status is not updated.{candidates}",
                severity=Severity.CRITICAL if about else Severity.HIGH, confidence=Confidence.HIGH,
                evidence=evidence, remediation=remediation, about_target=about,
                data={"unhealthy": [p.name for p in unhealthy], "ready": 0, "replicas": total},
            )]
        if unhealthy:
            return [self.finding(
                CauseSlug.CONTROLLER_UNHEALTHY,
                f"{len(unhealthy)} of {len(pods)} Kueue controller replicas not ready ({detail})",
                f"{len(healthy)} replica(s) are ready and can hold the leader lease, so admission continues; the "
                f"failing replica ({detail}) is a warning sign.",
                severity=Severity.MEDIUM, confidence=Confidence.MEDIUM, evidence=evidence,
                remediation=remediation, about_target=False,
                data={"unhealthy": [p.name for p in unhealthy], "ready": len(healthy), "replicas": len(pods)},
            )]
        top = restarting[0]
        recent = ctx.onset is not None and top.started is not None and top.started >= ctx.onset
        return [self.finding(
            CauseSlug.CONTROLLER_UNHEALTHY,
            f"Kueue controller restarted {top.restarts} times ({detail})",
            f"The controller is ready now but restarted {top.restarts} times"
            f"{' (last start ' + format_rfc3339(top.started) + ')' if top.started else ''}. Each restart drops "
            "the in-memory queues and caches; frequent restarts slow admission.",
            severity=Severity.MEDIUM if recent else Severity.LOW, confidence=Confidence.MEDIUM,
            evidence=evidence, remediation=remediation, about_target=False,
            data={"restarts": top.restarts},
        )]

    # --- nodes -----------------------------------------------------------------------------------------------

    def _nodes(self, ctx: _Ctx) -> list[Finding]:
        problems = ctx.snap.memo("system-health:node-problems",
                                 lambda: [(n, why) for n in nodes(ctx.snap) if (why := _node_problems(n))])
        if not problems:
            return []
        flavor_labels = _target_flavor_labels(ctx)
        relevant = [(n, why) for n, why in problems
                    if flavor_labels is not None and any(_matches(n, lbls) for lbls in flavor_labels.values())]
        others = [(n, why) for n, why in problems if (n, why) not in relevant]
        out = []
        for group, about in ((relevant, ctx.pending), (others, False)):
            if not group:
                continue
            if group is relevant:
                flavors = sorted(f for f, lbls in (flavor_labels or {}).items()
                                 if any(_matches(n, lbls) for n, _ in group))
                where = f" in flavor{'s' if len(flavors) != 1 else ''} {', '.join(flavors)}"
            else:
                where = ""
            n = len(group)
            title = f"{n} node{'s' if n != 1 else ''}{where} unavailable: " + "; ".join(
                f"{node.name} {', '.join(why)}" for node, why in group[:3]) + (" …" if n > 3 else "")
            out.append(self.finding(
                CauseSlug.NODE_UNHEALTHY, title,
                f"{n} node(s){where} cannot take (all of) their pods: NotReady nodes run nothing new and their "
                "pods hang in Terminating; cordoned nodes take no new pods; GPUs missing from allocatable are "
                "invisible to kube-scheduler. Kueue's quota does not know: admitted workloads may not start.",
                severity=Severity.MEDIUM if about else Severity.LOW, confidence=Confidence.HIGH,
                evidence=[e for node, why in group[:5] for e in _node_evidence(node)],
                about_target=about, data={"nodes": [node.name for node, _ in group]},
            ))
        return out

    # --- configuration changes --------------------------------------------------------------------------

    def _changes(self, ctx: _Ctx) -> list[Finding]:
        window = timedelta(minutes=float(self.opts["change_window_minutes"])).total_seconds()
        anchor = ctx.onset if ctx.pending and ctx.onset is not None else ctx.snap.now
        near: list[Change] = []
        for c in config_changes(ctx.snap):
            if c.kind in ("ClusterQueue", "Cohort", "ResourceFlavor") and not concerns_queue(ctx.idx, ctx.cq, c.kind,
                                                                                          c.name):
                continue
            if abs((c.at - anchor).total_seconds()) <= window:
                near.append(c)
        # the Kueue configuration first, then the controller Deployment, then queue objects; closest first
        near.sort(key=lambda c: (_KIND_ORDER.get(c.kind, 9), abs((c.at - anchor).total_seconds())))
        # (re)starts of healthy controller pods (container restarts and new pods of a rollout); restarts of a pod
        # that is unhealthy now belong to the controller finding
        starts = [p for p in controller_pods(ctx.snap) if p.started is not None and p.healthy
                  and abs((p.started - anchor).total_seconds()) <= window]
        if not near and not starts:
            return []
        about = ctx.pending and ctx.onset is not None
        items = [f"{_obj(c.kind, c.namespace, c.name)} changed {_rel(c.at, anchor, about)} by {c.manager} "
                 f"({c.what})" for c in near]
        items += [f"controller pod {p.name} {'restarted' if p.restarts else 'started'} "
                  f"{_rel(p.started, anchor, about)}" for p in starts if p.started is not None]
        if near:
            first = near[0]
            title = f"{_obj(first.kind, first.namespace, first.name)} changed {_rel(first.at, anchor, about)}"
            if first.kind == "ConfigMap" and "; " in first.what:
                title += f": {first.what.split('; ', 1)[-1]}"
        else:
            title = items[0]
        if len(items) > 1:
            title += f" (+{len(items) - 1} more change{'s' if len(items) > 2 else ''} nearby)"
        evidence = [ev("object", f"managedFields time {format_rfc3339(c.at)} (manager {c.manager}, {c.operation})",
                       kind=c.kind, name=c.name, namespace=c.namespace, field="metadata.managedFields[].time")
                    for c in near[:5]]
        evidence += [ev("object", f"restartCount {p.restarts}, started {format_rfc3339(p.started)}", kind="Pod",
                        name=p.name, namespace=p.namespace, field="status.containerStatuses[manager].state")
                     for p in starts[:2] if p.started is not None]
        when = (f"The workload started waiting at {format_rfc3339(anchor)}" if about
                else f"The snapshot was captured at {format_rfc3339(anchor)}")
        return [self.finding(
            CauseSlug.CONFIG_CHANGE, title,
            "Changes close to the moment things went wrong are the first suspects (in one known incident, "
            f"guarantee violations began when fair sharing was enabled). {when}; within "
            f"{human_duration(window)}: " + "; ".join(items) + ".",
            severity=Severity.MEDIUM if about else Severity.LOW, confidence=Confidence.LOW,
            evidence=evidence,
            remediation=["Review the change: `kubectl get <kind> <name> -o yaml --show-managed-fields`; roll it "
                         "back if the timing matches the first pending workloads."],
            about_target=about, data={"changes": items},
        )]


# --- helpers -------------------------------------------------------------------------------------------------


def _obj(kind: str, namespace: str | None, name: str) -> str:
    return f"{kind} {namespace + '/' if namespace else ''}{name}"


def _node_phrase(group: list[Zombie]) -> str:
    bad = sorted({z.pod.node for z in group if z.pod.node and z.node_ready is False})
    if bad:
        return f", on NotReady node{'s' if len(bad) > 1 else ''} {', '.join(bad)}"
    return ""


def _zombie_evidence(z: Zombie) -> list[Evidence]:
    p = z.pod
    out = [ev("object", f"deletionTimestamp {format_rfc3339(p.deletion) if p.deletion else '?'}, grace "
                        f"{p.grace_seconds}s, phase {p.phase}, {human_duration(z.overdue_seconds)} past grace",
              kind="Pod", name=p.name, namespace=p.namespace, field="metadata.deletionTimestamp",
              expected="pod gone within deletionGracePeriodSeconds")]
    if z.node is not None and not z.node.ready:
        cond = z.node.conditions.get("Ready")
        out.append(ev("condition", f"Ready={cond.status if cond else 'missing'}"
                                   f"{' (' + cond.reason + ')' if cond and cond.reason else ''}",
                      kind="Node", name=z.node.name, field="status.conditions[type=Ready]", expected="True"))
    if z.workload is not None:
        out.append(ev("condition", "QuotaReserved=True", kind="Workload", name=z.workload.name,
                      namespace=z.workload.namespace, field="status.conditions[type=QuotaReserved]"))
    return out


def _deployment_replicas(dep: dict[str, Any] | None) -> tuple[int, int]:
    if dep is None:
        return 0, 0
    spec, status = dep.get("spec") or {}, dep.get("status") or {}
    want = spec.get("replicas", 1)
    return int(status.get("readyReplicas") or 0), int(want if isinstance(want, int) else 1)


def _pod_state(p: ControllerPod) -> str:
    parts = [p.name]
    if p.waiting_reason:
        parts.append(p.waiting_reason)
    elif not p.ready:
        parts.append("not ready")
    if p.restarts:
        parts.append(f"{p.restarts} restarts")
    if p.last_terminated_reason:
        code = f" exit {p.last_exit_code}" if p.last_exit_code is not None else ""
        parts.append(f"last {p.last_terminated_reason}{code}")
    return ", ".join(parts)


def _controller_evidence(p: ControllerPod) -> Evidence:
    return ev("object", _pod_state(p), kind="Pod", name=p.name, namespace=p.namespace,
              field="status.containerStatuses[manager]", expected="ready, running, no restarts")


def _node_problems(n: NodeView) -> list[str]:
    out = []
    if not n.ready:
        cond = n.conditions.get("Ready")
        out.append(f"NotReady ({cond.reason})" if cond and cond.reason else "NotReady")
    if n.unschedulable:
        out.append("cordoned")
    for res, cap in n.capacity.items():
        if any(h in res.lower() for h in _GPU_HINTS):
            alloc = n.allocatable.get(res, Decimal(0))
            if alloc < cap:
                out.append(f"{res} allocatable {alloc} < capacity {cap}")
    return out


def _node_evidence(n: NodeView) -> list[Evidence]:
    out = []
    if not n.ready:
        cond = n.conditions.get("Ready")
        out.append(ev("condition", f"Ready={cond.status if cond else 'missing'}"
                                   f"{' (' + cond.reason + ')' if cond and cond.reason else ''}",
                      kind="Node", name=n.name, field="status.conditions[type=Ready]", expected="True"))
    if n.unschedulable:
        out.append(ev("object", "unschedulable: true", kind="Node", name=n.name, field="spec.unschedulable",
                      expected="false"))
    for res, cap in n.capacity.items():
        alloc = n.allocatable.get(res, Decimal(0))
        if any(h in res.lower() for h in _GPU_HINTS) and alloc < cap:
            out.append(ev("object", f"allocatable {alloc}, capacity {cap}", kind="Node", name=n.name,
                          field=f"status.allocatable[{res}]", expected=str(cap)))
    return out


def _target_flavor_labels(ctx: _Ctx) -> dict[str, dict[str, str]] | None:
    if ctx.cq is None or ctx.cq not in ctx.idx.cluster_queues:
        return None
    out = {}
    for f in ctx.idx.cluster_queues[ctx.cq].flavor_names():
        fv = ctx.idx.flavors.get(f)
        if fv is not None:
            out[f] = fv.node_labels
    return out


def _matches(n: NodeView, lbls: dict[str, str]) -> bool:
    return all(n.labels.get(k) == v for k, v in lbls.items())


def _rel(moment: datetime, anchor: datetime, about: bool) -> str:
    delta = (moment - anchor).total_seconds()
    ref = "the pending onset" if about else "the capture"
    if abs(delta) < 1:
        return f"at {ref}"
    return f"{human_duration(abs(delta))} {'before' if delta < 0 else 'after'} {ref}"
