"""KD401 release-state: has Kueue released the workload to Kubernetes, and what does Kubernetes do with it?"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from kueuediag.analysis.capacity import (
    Demand,
    fmt_qty,
    main_resource,
    matching_nodes,
    topology_assignment,
)
from kueuediag.analysis.messages import ReasonKind, Rejection, api_rejection
from kueuediag.analysis.pod_history import history_evidence
from kueuediag.analysis.scheduling import (
    IMAGE_PULL_REASONS,
    ImagePullFailure,
    PodScheduling,
    SchedulingFailure,
    container_start_failures,
    gate_authors,
    pod_scheduling,
    standing_blockers,
)
from kueuediag.causes import CauseSlug
from kueuediag.check import Check
from kueuediag.models import CheckResult, Confidence, Evidence, Finding, Severity, ev
from kueuediag.quantity import ZERO
from kueuediag.records import dataclass
from kueuediag.snapshot.k8s import PodView, meta, pod_fits_node_labels
from kueuediag.snapshot.kueue import (
    FlavorView,
    WorkloadState,
    WorkloadView,
    events_for,
    kueue_index,
    nodes,
    workload_pods,
)
from kueuediag.snapshot.logs import log_lines
from kueuediag.snapshot.model import Part, Snapshot
from kueuediag.target import Target
from kueuediag.timeutil import human_duration, parse_time_lenient

ADMISSION_GATE = "kueue.x-k8s.io/admission"
TOPOLOGY_GATE = "kueue.x-k8s.io/topology"
ELASTIC_GATE = "kueue.x-k8s.io/elastic-job"
KUEUE_GATES = (ADMISSION_GATE, TOPOLOGY_GATE, ELASTIC_GATE)

SUSPEND_FIELDS: dict[tuple[str, str], tuple[str, ...]] = {
    # (API group, kind) → path of the boolean Kueue keeps true until admission (kueue-facts §7.2)
    ("batch", "Job"): ("spec", "suspend"),
    ("jobset.x-k8s.io", "JobSet"): ("spec", "suspend"),
    ("ray.io", "RayJob"): ("spec", "suspend"),
    ("ray.io", "RayCluster"): ("spec", "suspend"),
    ("ray.io", "RayService"): ("spec", "rayClusterConfig", "suspend"),
    ("kubeflow.org", "MPIJob"): ("spec", "runPolicy", "suspend"),
    ("kubeflow.org", "PyTorchJob"): ("spec", "runPolicy", "suspend"),
    ("kubeflow.org", "TFJob"): ("spec", "runPolicy", "suspend"),
    ("kubeflow.org", "XGBoostJob"): ("spec", "runPolicy", "suspend"),
    ("kubeflow.org", "PaddleJob"): ("spec", "runPolicy", "suspend"),
    ("kubeflow.org", "JAXJob"): ("spec", "runPolicy", "suspend"),
    ("trainer.kubeflow.org", "TrainJob"): ("spec", "suspend"),
    ("workload.codeflare.dev", "AppWrapper"): ("spec", "suspend"),
    ("sparkoperator.k8s.io", "SparkApplication"): ("spec", "suspend"),
}


@dataclass(frozen=True)
class HeldBy:
    """One thing still holding the workload back from Kubernetes."""

    kind: str
    name: str
    namespace: str | None
    field: str
    observed: str
    gate: str | None = None


def suspend_field(obj: dict[str, Any]) -> tuple[str, bool | None] | None:
    """(dotted path, value) of the integration's suspend flag, or None for kinds held by pod gates."""
    group = obj.get("apiVersion", "").rpartition("/")[0]
    path = SUSPEND_FIELDS.get((group, obj.get("kind", "")))
    if path is None:
        return None
    cur: Any = obj
    for key in path:
        cur = cur.get(key) if isinstance(cur, dict) else None
    return ".".join(path), cur if isinstance(cur, bool) else None


class ReleaseState(Check):
    """Checks whether Kueue has released an admitted workload to Kubernetes, and why its pods do not run.

    What it detects:
        For an admitted Workload: pods that still carry the `kueue.x-k8s.io/admission` (or
        `kueue.x-k8s.io/topology`) scheduling gate, or a job whose suspend flag is still true (batch Job and
        JobSet `spec.suspend`, RayService `spec.rayClusterConfig.suspend`, MPIJob/Kubeflow jobs
        `spec.runPolicy.suspend`, ...) longer than a grace period → `gate-not-removed`. Once released: pods that
        kube-scheduler cannot place (`PodScheduled=False` reason `Unschedulable` and `FailedScheduling` events,
        parsed into per-reason node counts), split into `fragmentation` when enough room is free in total but
        no node has a hole of the pod's shape, and `kube-unschedulable` otherwise (taints, affinity, unbound
        PersistentVolumeClaims, full nodes); bound pods whose containers cannot start (image pulls,
        CreateContainerConfigError) and released jobs whose controller cannot create pods (FailedCreate, e.g. a
        namespace ResourceQuota) → `pods-not-starting`. Scheduling gates Kueue did not add (anything other than
        `kueue.x-k8s.io/admission`, `kueue.x-k8s.io/topology`, `kueue.x-k8s.io/elastic-job`) →
        `foreign-scheduling-gate`, naming who added the gate from the pod's managedFields: Kueue only removes
        its own gates. When the controller log or an event shows the API server refusing Kueue's unsuspend or
        ungate (admission webhook, ValidatingAdmissionPolicy, PodSecurity, SCC, immutable field, RBAC), the
        gate-not-removed finding cites that line and points at the policy, not at a stuck controller.
        Past the grace period, pods that still do not run with none of these failures recorded are
        `pods-not-starting` too, naming where they are: no pod although the job is released, a pod not bound yet,
        a pod bound to a NotReady node, or (no Pod objects in the snapshot) Kueue's own `PodsReady=False` record:
        an admitted workload whose pods do not run is never reported as merely admitted.
        A pending (not admitted) workload whose pods are gated or whose job is suspended is normal: clear.

    Why the workload stays pending:
        Kueue only admits; it then releases the job by unsuspending it or removing the pods' scheduling gate.
        If that step does not happen, the job never reaches kube-scheduler although its quota is taken. If it
        does, the pods are kube-scheduler's business and Kueue cannot explain a failure there.

    Evidence:
        The Workload's `Admitted` condition and its age, the pod's `spec.schedulingGates` or the job's suspend
        field, the pod's `PodScheduled` condition and newest `FailedScheduling` event, per-node free room for
        the fragmentation split, container `waiting` reasons, the job's `FailedCreate` events and the
        ResourceQuota they name; events of the job's earlier pods that no longer exist (image pulls, evictions,
        preemptions, failed scheduling), marked as such — history, never a command's target.

    How to fix:
        gate-not-removed: read the Kueue controller logs for the job (`Job admitted, unsuspending`), check its
        webhooks and restart the controller if it is stuck. kube-unschedulable: fix the constraint the
        scheduler names (flavor `tolerations` for an untolerated taint, nodeSelector/nodeLabels, the PVC's
        StorageClass). fragmentation: see KD201. pods-not-starting: fix the image or pull credentials, the
        missing Secret/ConfigMap, or the namespace ResourceQuota.

    Example:
        `pod whisper-batch-0-x2k8r unschedulable for 12m: 3 node(s) had untolerated taint
        {cloud.google.com/gke-spot: true}, 2 node(s) didn't match Pod's node affinity/selector [kube-unschedulable]`
    """

    code = "KD401"
    name = "release-state"
    requires = (Part.WORKLOADS,)
    reads = (Part.LOGS,)
    default_severity = Severity.HIGH
    options = {"grace_seconds": 60}

    def run(self, snapshot: Snapshot, target: Target) -> CheckResult:
        w = target.workload
        assert w is not None
        if w.state != WorkloadState.ADMITTED:
            # Pending or quota-reserved (admission checks still running): gates and suspend are expected.
            return CheckResult.not_applicable(f"the workload is {w.state}, not admitted: its pods are not released yet")
        if w.is_true("Evicted") or not w.active:
            # Being evicted/preempted or deactivated: Kueue is stopping the job on purpose (it re-suspends it and
            # sets `kueue.x-k8s.io/stopping`); it keeps Admitted until the job is no longer active.
            return CheckResult.not_applicable("the workload is being evicted or is deactivated: Kueue stops it")
        admitted = w.cond("Admitted")
        since = admitted.last_transition if admitted else None
        age = snapshot.age_seconds(since)
        owner = _owner(snapshot, w, target)
        pods = [p for p in workload_pods(snapshot, w) if not p.terminal]
        held = _held(owner, pods)
        in_grace = age is not None and age < float(self.opts["grace_seconds"])
        foreign = [] if in_grace else self._foreign_gates(w, pods, age)
        if held:
            if in_grace:
                return CheckResult.not_applicable(
                    f"admitted {human_duration(age)} ago: Kueue is still releasing the pods (grace "
                    f"{self.opts['grace_seconds']}s)")
            return CheckResult.fired(_with_history(snapshot, owner, [self._not_released(snapshot, w, held, age),
                                                                     *foreign]))
        findings: list[Finding] = list(foreign)
        pending = [p for p in pods if not p.node and not p.terminating]
        scheds = [s for s in (pod_scheduling(snapshot, p) for p in pending) if s.failure is not None]
        if scheds:
            findings.append(self._unschedulable(snapshot, w, scheds, len(pending)))
        pulls = [(p, container_start_failures(p)) for p in pods if p.node]
        pulls = [(p, f) for p, f in pulls if f]
        if pulls:
            findings.append(self._image_pull(snapshot, w, pulls))
        if not pods and owner is not None and (age is None or age >= float(self.opts["grace_seconds"])):
            created = self._not_created(snapshot, w, owner, age)
            if created is not None:
                findings.append(created)
        if not findings:
            stalled = self._not_running(snapshot, w, owner, pods, age)
            if stalled is not None:
                findings.append(stalled)
        findings = _with_history(snapshot, owner, findings)
        placed = sum(1 for p in pods if p.node)
        return self.result(findings, ev(
            "object", f"{len(pods)} pod(s), {placed} bound to a node; no scheduling gate left, no "
                      "FailedScheduling, image-pull or container-start failure", kind="Workload", name=w.name,
            namespace=w.namespace, field="pods of the workload"))

    # --- gates Kueue did not add --------------------------------------------------------------------------
    def _foreign_gates(self, w: WorkloadView, pods: list[PodView], age: float | None) -> list[Finding]:
        """Scheduling gates on the workload's pods that Kueue did not add: Kueue never removes them."""
        gated = [(p, g) for p in pods for g in p.scheduling_gates if g not in KUEUE_GATES]
        if not gated:
            return []
        evidence: list[Evidence] = []
        who: dict[str, str] = {}
        for p, g in gated:
            author = gate_authors(p).get(g)
            if author is not None:
                how = "managedFields own the gate" if author.exact else "the pod's only non-system writer"
                who.setdefault(g, author.manager)
                added = f"; added by {author.manager} at {author.time} ({how})"
            else:
                added = "; managedFields do not say who added it"
            evidence.append(ev("object", f"schedulingGates: [{', '.join(p.scheduling_gates)}]{added}", kind="Pod",
                               name=p.name, namespace=p.namespace, field="spec.schedulingGates",
                               expected="no scheduling gate once Kueue admitted the workload"))
            sched = p.conditions.get("PodScheduled")
            if sched is not None and sched.false:
                evidence.append(ev("condition", f"PodScheduled=False ({sched.reason}): {sched.message}", kind="Pod",
                                   name=p.name, namespace=p.namespace, field="status.conditions[type=PodScheduled]"))
        gates = sorted({g for _, g in gated})
        pod_names = sorted({p.name for p, _ in gated})
        first_pod, first_gate = gated[0]
        by = f" (added by {who[first_gate]})" if first_gate in who else ""
        since = f" {human_duration(age)} ago" if age is not None else ""
        authors = "; ".join(f"{g} by {m}" for g, m in sorted(who.items())) or "managedFields do not say by whom"
        index = first_pod.scheduling_gates.index(first_gate)
        return [self.finding(
            CauseSlug.FOREIGN_SCHEDULING_GATE,
            f"pod {first_pod.name} is held by scheduling gate {first_gate}, which Kueue did not add{by}",
            f"Kueue admitted the workload{since} and released it, but {len(pod_names)} pod(s) still carry "
            f"scheduling gate(s) {', '.join(gates)} that Kueue did not add ({authors}). Kueue only adds and removes "
            f"its own gates ({', '.join(KUEUE_GATES)}), so it will never remove these; the kube-scheduler ignores "
            "a gated pod while the workload keeps its quota.",
            evidence=evidence,
            remediation=[
                (f"Ask {who[first_gate]}, which added {first_gate}, " if first_gate in who else
                 f"Find the controller or webhook that adds {first_gate} and ask it ")
                + "why it holds the pod (its logs, the webhook's configuration); it must remove the gate.",
                f"Only if that controller is gone: `kubectl patch pod {first_pod.name} -n {first_pod.namespace} "
                f"--type json -p '[{{\"op\":\"remove\",\"path\":\"/spec/schedulingGates/{index}\"}}]'`.",
            ],
            data={"gates": gates, "pods": pod_names, "added_by": who},
        )]

    # --- not released ----------------------------------------------------------------------------------------
    def _not_released(self, snap: Snapshot, w: WorkloadView, held: list[HeldBy], age: float | None) -> Finding:
        first = held[0]
        denied = _denied_release(snap, w, held)
        when = f" {human_duration(age)} ago" if age is not None else ""
        what = (f"pod {first.name} still carries scheduling gate {first.gate}" if first.gate
                else f"{first.kind} {first.name} still has {first.field}=true")
        more = f" (and {len(held) - 1} more)" if len(held) > 1 else ""
        title = f"admitted{when} but not released: {what}{more}"
        topo_only = all(h.gate == TOPOLOGY_GATE for h in held)
        if topo_only:
            step = ("Kueue removes the `kueue.x-k8s.io/topology` gate only after injecting the topology assignment "
                    "(node selectors) into each pod; the topology ungater has not done so.")
            assigned = _assigned_domains(w)
            if assigned:
                step += f" The Workload's topology assignment places the pods on {assigned}."
        elif first.gate:
            step = ("For plain pods (and Deployment, StatefulSet, LeaderWorkerSet pods) Kueue releases an admitted "
                    "workload by removing the `kueue.x-k8s.io/admission` scheduling gate; until then "
                    "kube-scheduler does not even look at the pod (PodScheduled reason SchedulingGated).")
        else:
            step = (f"Kueue releases a {first.kind} by setting {first.field} to false at admission (controller log "
                    "`Job admitted, unsuspending`); until then no pods are created.")
        message = (f"The Workload {w.namespace}/{w.name} has been admitted by ClusterQueue {w.admission_cq}{when}, "
                   f"so its quota is taken, but Kueue has not released it to Kubernetes. {step} The "
                   f"{'topology ungater' if topo_only else 'job reconciler'} is stuck or failing for this job: the "
                   "scheduling problem is in the Kueue layer, not in kube-scheduler.")
        adm = w.cond("Admitted")
        evidence: list[Evidence] = [
            ev("condition", f"Admitted=True ({adm.reason if adm else '?'}){when}", kind="Workload", name=w.name,
               namespace=w.namespace, field="status.conditions[type=Admitted]"),
        ]
        for h in held[:8]:
            evidence.append(ev("object", h.observed, kind=h.kind, name=h.name, namespace=h.namespace, field=h.field,
                               expected="no Kueue scheduling gate" if h.gate else "false"))
        job = f"{first.kind.lower()}/{first.name}" if not first.gate else f"pod/{first.name}"
        if denied is not None:
            rej, line, src = denied
            action = "remove the scheduling gate from" if first.gate else f"set {first.field}=false on"
            title = f"admitted{when} but the API server rejects Kueue's release: {rej.kind} {rej.name}"
            message = (f"The Workload {w.namespace}/{w.name} has been admitted by ClusterQueue {w.admission_cq}"
                       f"{when}, and Kueue tried to {action} {job}, but the API server refused the update "
                       f"({rej.kind} {rej.name}{': ' + rej.why if rej.why else ''}). Kueue is not stuck: a policy "
                       "outside Kueue blocks the release, and Kueue retries with backoff while the quota stays taken.")
            evidence.append(ev(src, line, kind=first.kind, name=first.name, namespace=first.namespace,
                               field="update by kueue-controller-manager", expected="accepted"))
            return self.finding(
                CauseSlug.GATE_NOT_REMOVED, title, message, evidence=evidence,
                remediation=[
                    f"Fix the {rej.kind} ({rej.name}) so it admits Kueue's update of {job}: exempt the "
                    "kueue-controller-manager service account, or change the rule"
                    + (f" ({rej.why})" if rej.why else "") + ".",
                    "Restarting Kueue will not help: the API server refuses the write itself.",
                ],
                data={"held": [h.name for h in held], "gates": sorted({h.gate for h in held if h.gate}),
                      "admitted_seconds_ago": round(age) if age is not None else None,
                      "rejected_by": f"{rej.kind} {rej.name}"})
        remediation = [
            "Read the Kueue controller log for this job: `kubectl -n kueue-system logs "
            f"deploy/kueue-controller-manager | grep {w.name}` (raise `--zap-log-level` to 5 if nothing shows); "
            "look for webhook or update errors.",
            "If the controller is wedged (no recent reconciles), restart it: "
            "`kubectl -n kueue-system rollout restart deploy/kueue-controller-manager`.",
            f"Do not remove the gate or unsuspend {job} by hand: Kueue injects the flavor's nodeSelector and "
            "tolerations when it releases the job, and a manual release skips that.",
        ]
        return self.finding(CauseSlug.GATE_NOT_REMOVED, title, message, evidence=evidence, remediation=remediation,
                            data={"held": [h.name for h in held], "gates": sorted({h.gate for h in held if h.gate}),
                                  "admitted_seconds_ago": round(age) if age is not None else None})

    # --- released but unschedulable --------------------------------------------------------------------------
    def _unschedulable(self, snap: Snapshot, w: WorkloadView, scheds: list[PodScheduling], pending: int) -> Finding:
        first = scheds[0]
        failure = first.failure
        assert failure is not None
        pod = first.pod
        age = snap.age_seconds(first.since)
        for_ = f" for {human_duration(age)}" if age is not None else ""
        counts = failure.counts()
        data: dict[str, Any] = {"pod": pod.name, "pending_pods": pending, "total_nodes": failure.total_nodes,
                                "reasons": counts, "failed_scheduling_events": first.events}
        evidence = [
            ev("event" if first.source == "event" else "condition", failure.raw, kind="Pod", name=pod.name,
               namespace=pod.namespace,
               field="FailedScheduling" if first.source == "event" else "status.conditions[type=PodScheduled]"),
        ]
        adm = w.cond("Admitted")
        evidence.append(ev("condition", f"Admitted=True ({adm.reason if adm else '?'})", kind="Workload", name=w.name,
                           namespace=w.namespace, field="status.conditions[type=Admitted]"))
        frag = _fragmentation(snap, pod, [s.pod for s in scheds], failure) if failure.insufficient() else None
        if frag is not None:
            res, per_pod, h_total, largest, layout, slots, count, hist, biggest = frag
            article = "an" if per_pod.startswith("8") else "a"
            title = (f"released, but no node has {article} {per_pod} {res} hole: {h_total} free ({layout}), "
                     f"largest {largest}, {slots} slots for {count} pod(s)")
            message = (
                f"Kueue released the workload, but kube-scheduler has reported{for_}: {failure.summary()}. "
                f"The nodes the pod may use have {h_total} {res} free in total ({layout}), enough for the "
                f"request, but the largest hole is {largest} and {count} pod(s) of {per_pod} {res} need one "
                f"node each: the free capacity is fragmented. Nodes by free {res}: {hist}."
            )
            data.update({"resource": res, "per_pod": per_pod, "total_free": h_total, "largest_hole": largest,
                         "layout": layout, "slots": slots})
            evidence.append(ev("derived", f"free {res} per node: {layout} (total {h_total}, largest hole {largest})",
                               kind="Node", name=biggest, field=f"status.allocatable[{res}] - pod requests",
                               expected=f">= {per_pod} free on one node"))
            return self.finding(CauseSlug.FRAGMENTATION, title, message, evidence=evidence, data=data,
                                remediation=["See KD201 (fragmentation) for the hole histogram and the node to "
                                             "drain.",
                                             "Enable topology-aware scheduling on the flavor so Kueue admits only "
                                             "what fits on the nodes."])
        if failure.has("unbound-pvc"):
            claims = _claims(pod)
            states = []
            for c in claims:
                pvc = snap.get("PersistentVolumeClaim", c, pod.namespace)
                phase = ((pvc or {}).get("status") or {}).get("phase", "missing") if pvc else "missing"
                states.append(f"{c} ({phase})")
                evidence.append(ev("object", f"phase {phase}", kind="PersistentVolumeClaim", name=c,
                                   namespace=pod.namespace, field="status.phase", expected="Bound"))
                for e in events_for(snap, "PersistentVolumeClaim", pod.namespace, c)[-1:]:
                    evidence.append(ev("event", f"{e.reason}: {e.message}", kind="PersistentVolumeClaim", name=c,
                                       namespace=pod.namespace, field=e.reason))
            title = (f"pod {pod.name} unschedulable{for_}: unbound PersistentVolumeClaim "
                     f"{', '.join(states) or '(unknown claim)'}")
            message = (f"Kueue released the workload, but kube-scheduler cannot place pod {pod.name}: pod has unbound "
                       "immediate PersistentVolumeClaims. The claim has no volume and its StorageClass uses "
                       "`volumeBindingMode: Immediate`, so provisioning must succeed before scheduling.")
            remediation = [f"`kubectl -n {pod.namespace} describe pvc {claims[0] if claims else '<claim>'}`: fix the "
                           "StorageClass/provisioner error it shows, or use a StorageClass with "
                           "`volumeBindingMode: WaitForFirstConsumer`."]
            return self.finding(CauseSlug.KUBE_UNSCHEDULABLE, title, message, evidence=evidence,
                                remediation=remediation, data=data)
        title = f"pod {pod.name} unschedulable{for_}: {failure.summary()}"
        if len(scheds) > 1:
            title += f" ({len(scheds)} pods)"
        selected = _selector_matches(snap, pod)
        parts = []
        for r in sorted(failure.reasons, key=lambda r: -(r.count or 0)):
            text = _explain(r.kind, r.count, r.text)
            if r.kind == ReasonKind.NODE_AFFINITY and selected:
                text = (f"{r.count} node(s) are outside the pod's nodeSelector (the flavor's nodeLabels, injected by "
                        f"Kueue); {selected} node(s) do match it, so this part is expected.")
            parts.append(text)
        message = (f"Kueue released the workload ({len(scheds)} of {pending} pending pod(s) have a scheduling "
                   f"failure), but kube-scheduler cannot place it: 0/{failure.total_nodes} nodes are available. "
                   + " ".join(p for p in parts if p))
        flavor = _flavor_of(snap, w)
        blockers = standing_blockers(snap, pod, failure, flavor)
        data["blockers"] = blockers
        released_before = []
        for r in failure.of(ReasonKind.UNTOLERATED_TAINT):
            key = (r.taint or "").split(":", 1)[0].strip()
            if flavor is not None and not any(t.get("key") in (key, None, "") for t in flavor.tolerations):
                message += (f" ResourceFlavor {flavor.name} has no toleration for {key}, so Kueue injected none "
                            "and the job's pod template has none either.")
            elif f"untolerated taint {key}" not in blockers:
                released_before.append(key)
        remediation = self._unschedulable_fix(snap, w, pod, failure)
        if released_before and flavor is not None:
            message += (f" ResourceFlavor {flavor.name} tolerates {', '.join(released_before)} now, but Kueue injects "
                        "a flavor's tolerations when it releases a workload: these pods were released before.")
            remediation.insert(0, f"Requeue the workload so Kueue releases it again with ResourceFlavor "
                                  f"{flavor.name}'s tolerations: deactivate and reactivate Workload {w.name} "
                                  "(spec.active false, then true), or resubmit the job.")
        for r in failure.reasons:
            if r.kind == ReasonKind.UNTOLERATED_TAINT and r.taint:
                key = r.taint.split(":", 1)[0].strip()
                tainted = [n for n in nodes(snap) if any(t.get("key") == key for t in n.taints)]
                for n in tainted[:4]:
                    t = next(t for t in n.taints if t.get("key") == key)
                    evidence.append(ev("object", f"taint {key}={t.get('value', '')}:{t.get('effect')}", kind="Node",
                                       name=n.name, field="spec.taints",
                                       expected="a toleration in the pod (or the ResourceFlavor)"))
        return self.finding(CauseSlug.KUBE_UNSCHEDULABLE, title, message, evidence=evidence, remediation=remediation,
                            data=data)

    def _unschedulable_fix(self, snap: Snapshot, w: WorkloadView, pod: PodView,
                           failure: SchedulingFailure) -> list[str]:
        out: list[str] = []
        fv = _flavor_of(snap, w)
        flavor = fv.name if fv is not None else "<flavor>"
        selected = _selector_matches(snap, pod)
        for r in sorted(failure.reasons, key=lambda r: -(r.count or 0)):
            if r.kind == ReasonKind.UNTOLERATED_TAINT and r.taint:
                key, _, value = (s.strip() for s in r.taint.partition(":"))
                effect = "NoSchedule"
                for n in nodes(snap):
                    for t in n.taints:
                        if t.get("key") == key:
                            effect = str(t.get("effect") or effect)
                tol = (f'{{"key":"{key}","operator":"Equal","value":"{value}","effect":"{effect}"}}' if value
                       else f'{{"key":"{key}","operator":"Exists","effect":"{effect}"}}')
                if fv is not None and any(t.get("key") == key for t in fv.tolerations):
                    continue  # the flavor tolerates it already: the pods were released before (requeue above)
                # a merge patch replaces the whole list: keep the flavor's tolerations
                kept = "".join(json.dumps(t, separators=(",", ":")) + "," for t in (fv.tolerations if fv else []))
                out.append(f"Add the toleration to ResourceFlavor {flavor} so Kueue injects it at admission: "
                           f"`kubectl patch resourceflavor {flavor} --type merge -p "
                           f"'{{\"spec\":{{\"tolerations\":[{kept}{tol}]}}}}'` (or add it to the job's pod template), "
                           "then requeue the workload so Kueue releases it again with the toleration; declaring the "
                           "taint in the flavor's `nodeTaints` makes Kueue refuse such jobs instead of admitting "
                           "them.")
            elif r.kind == ReasonKind.NODE_AFFINITY and not selected:
                sel = (pod.obj.get("spec") or {}).get("nodeSelector") or {}
                out.append(f"Check the pod's nodeSelector {sel} (the flavor's nodeLabels are injected at admission) "
                           "against the node labels: `kubectl get nodes -L " + ",".join(sel) + "`.")
            elif r.kind == "unschedulable-node":
                out.append("Cordoned nodes give no room: `kubectl get nodes | grep SchedulingDisabled`; uncordon "
                           "repaired nodes.")
            elif r.kind == "insufficient":
                out.append(f"Nodes lack {r.resource}: quota admits more than the nodes can hold (nominal quota "
                           "larger than the flavor's nodes, or pods outside Kueue use the room); align quota with "
                           "node capacity or add nodes.")
        if not out:
            out.append("Fix the constraint the FailedScheduling event names (`kubectl describe pod "
                       f"{pod.name} -n {pod.namespace}`).")
        return out

    # --- bound but not starting ------------------------------------------------------------------------------
    def _image_pull(self, snap: Snapshot, w: WorkloadView,
                    pulls: Sequence[tuple[PodView, list[ImagePullFailure]]]) -> Finding:
        pod, fails = pulls[0]
        f = fails[0]
        started = _pod_time(pod)
        age = snap.age_seconds(started)
        for_ = f" for {human_duration(age)}" if age is not None else ""
        pulling = f.reason in IMAGE_PULL_REASONS
        title = (f"pod {pod.name} cannot pull image {f.image}: {f.reason}{for_}" if pulling
                 else f"pod {pod.name} container {f.container} cannot start: {f.reason}{for_}")
        if len(pulls) > 1:
            title += f" ({len(pulls)} pods)"
        evidence = [ev("object", f"{f.reason}: {f.message}".rstrip(": "), kind="Pod", name=pod.name,
                       namespace=pod.namespace, field=f"status.containerStatuses[name={f.container}].state.waiting")]
        failed = [e for e in events_for(snap, "Pod", pod.namespace, pod.name) if e.reason == "Failed"]
        if failed:
            evidence.append(ev("event", failed[-1].message, kind="Pod", name=pod.name, namespace=pod.namespace,
                               field="Failed"))
        what = (f"cannot pull image {f.image} for container {f.container}" if pulling
                else f"cannot start container {f.container}: {f.message or f.reason}")
        message = (f"Kueue admitted and released the workload and kube-scheduler bound pod {pod.name} to node "
                   f"{pod.node}, but the kubelet {what} ({f.reason}). The quota stays taken while the pod waits; "
                   "with waitForPodsReady Kueue evicts and requeues the workload after the timeout.")
        if pulling:
            remediation = [f"`kubectl -n {pod.namespace} describe pod {pod.name}` shows the registry's error; fix the "
                           "image name/tag or the pull credentials (imagePullSecrets, node service account access "
                           "to the registry), then recreate the job."]
        else:
            remediation = [f"`kubectl -n {pod.namespace} describe pod {pod.name}`: create the Secret/ConfigMap the "
                           "container references or fix the container's configuration."]
        return self.finding(CauseSlug.PODS_NOT_STARTING, title, message, evidence=evidence, remediation=remediation,
                            data={"pod": pod.name, "image": f.image, "reason": f.reason,
                                  "pods": [p.name for p, _ in pulls]})

    def _not_running(self, snap: Snapshot, w: WorkloadView, owner: dict[str, Any] | None, pods: list[PodView],
                     age: float | None) -> Finding | None:
        """Released, nothing failed yet, but the pods do not run: name where they are (not created, not bound,
        bound to a NotReady node, containers still being created) — an admitted workload whose pods do not run
        is never 'not pending'. Inside the grace period this is ordinary start-up: nothing to report yet."""
        if age is not None and age < float(self.opts["grace_seconds"]):
            return None
        when = f" {human_duration(age)} ago" if age is not None else ""
        adm = w.cond("Admitted")
        evidence: list[Evidence] = [ev("condition", f"Admitted=True ({adm.reason if adm else '?'}){when}",
                                       kind="Workload", name=w.name, namespace=w.namespace,
                                       field="status.conditions[type=Admitted]")]
        ready = w.cond("PodsReady")
        if ready is not None and ready.false:
            evidence.append(ev("condition", f"PodsReady=False ({ready.reason}): {ready.message}".rstrip(": "),
                               kind="Workload", name=w.name, namespace=w.namespace,
                               field="status.conditions[type=PodsReady]", expected="True"))
        waiting = [p for p in pods if p.phase != "Running"]
        if waiting:
            pod = waiting[0]
            node = next((n for n in nodes(snap) if n.name == pod.node), None) if pod.node else None
            where = (f"bound to node {pod.node}, which is NotReady" if node is not None and not node.ready
                     else f"bound to node {pod.node}, containers not started" if pod.node
                     else "not bound to a node yet")
            evidence.append(ev("object", f"phase {pod.phase}, {where}", kind="Pod", name=pod.name,
                               namespace=pod.namespace, field="status.phase", expected="Running"))
            if node is not None and not node.ready:
                cond = node.conditions.get("Ready")
                evidence.append(ev("condition", f"Ready={cond.status if cond else 'Unknown'} "
                                                f"({cond.reason if cond else '?'}): {cond.message if cond else ''}"
                                   .rstrip(": "), kind="Node", name=node.name, field="status.conditions[type=Ready]",
                                   expected="True"))
            for e in events_for(snap, "Pod", pod.namespace, pod.name)[-2:]:
                evidence.append(ev("event", f"{e.reason}: {e.message}", kind="Pod", name=pod.name,
                                   namespace=pod.namespace, field=e.reason))
            more = f" ({len(waiting)} of {len(pods)} pods)" if len(waiting) > 1 else ""
            title = f"admitted{when}, but pod {pod.name} does not run: {pod.phase}, {where}{more}"
            if node is not None and not node.ready:
                fix = [f"Node {node.name} is NotReady: its kubelet starts nothing. Repair the node, or delete the "
                       f"pod so its controller recreates it on a healthy node (`kubectl -n {pod.namespace} delete "
                       f"pod {pod.name}`).", "See KD901 (node-unhealthy) for the node's conditions."]
            else:
                fix = [f"`kubectl -n {pod.namespace} describe pod {pod.name}`: its events say what the scheduler or "
                       "the kubelet is doing (volume attach, image pull, sandbox creation)."]
            what = f"pod {pod.name} is {pod.phase} and {where}"
            data: dict[str, Any] = {"pod": pod.name, "phase": pod.phase, "node": pod.node or "",
                                    "node_ready": node.ready if node is not None else None}
        elif pods:
            return None  # every pod runs
        elif ready is not None and ready.false:
            # Kueue's own record says the pods have not all started; the snapshot may not hold them
            pods_part = snap.part_unavailable(Part.PODS)
            seen = (f"the snapshot holds no Pod objects ({pods_part})" if pods_part
                    else "no pod of it is in the snapshot")
            title = f"admitted{when}, but Kueue records its pods not ready: PodsReady=False ({ready.reason})"
            fix = [f"`kubectl -n {w.namespace} get pods` for this job and `kubectl describe pod` the ones not "
                   "running: their events say why (scheduling, image pulls, volumes)."]
            what = f"Kueue records PodsReady=False ({ready.reason}: {ready.message}) and {seen}"
            data = {"pod": "", "podsready_reason": ready.reason}
        else:
            if owner is None or suspend_field(owner) is None:
                return None  # a pod group or an owner the snapshot does not hold: nothing says pods should exist
            m = meta(owner)
            status = owner.get("status") or {}
            if status.get("active") or status.get("ready") or status.get("succeeded"):
                return None  # the job reports pods the snapshot does not hold
            kind = str(owner.get("kind", "?"))
            title = f"admitted{when} and released, but {kind} {m.get('name')} has no pod"
            evidence.append(ev("object", f"status: {status or '{}'}; no pod of it in the snapshot", kind=kind,
                               name=m.get("name"), namespace=m.get("namespace"), field="status.active",
                               expected=">= 1"))
            fix = [f"`kubectl -n {m.get('namespace')} describe {kind.lower()} {m.get('name')}`: its events say why "
                   "its controller creates no pod (none recorded in this snapshot)."]
            what = f"{kind} {m.get('name')} has no pod and reports none active"
            data = {"owner": f"{kind}/{m.get('name')}", "pod": ""}
        message = (f"Kueue admitted and released the workload{when}, so its quota is taken, but {what}, with no "
                   "scheduling, image or container failure recorded to explain it.")
        return self.finding(CauseSlug.PODS_NOT_STARTING, title, message, evidence=evidence, remediation=fix,
                            severity=Severity.MEDIUM, confidence=Confidence.MEDIUM, data=data)

    def _not_created(self, snap: Snapshot, w: WorkloadView, owner: dict[str, Any],
                     age: float | None) -> Finding | None:
        """Released job without pods: the job controller's FailedCreate events say why."""
        m = meta(owner)
        kind = str(owner.get("kind", "?"))
        if suspend_field(owner) is None:
            return None
        failed = [e for e in events_for(snap, kind, m.get("namespace"), m.get("name", ""))
                  if e.reason == "FailedCreate"]
        if not failed:
            return None
        last = failed[-1]
        when = f" {human_duration(age)} ago" if age is not None else ""
        short = last.message.split(": ", 1)[-1] if last.message.startswith("Error creating") else last.message
        title = f"admitted{when} and released, but {kind} {m.get('name')} cannot create its pods: {short}"
        message = (f"Kueue admitted the Workload{when} and unsuspended {kind} {m.get('name')}, but its controller "
                   f"fails to create pods ({sum(e.count for e in failed)} FailedCreate event(s)): {last.message}. "
                   "Kueue's quota is taken while nothing runs.")
        evidence = [ev("event", last.message, kind=kind, name=m.get("name"), namespace=m.get("namespace"),
                       field="FailedCreate"),
                    ev("condition", "Admitted=True", kind="Workload", name=w.name, namespace=w.namespace,
                       field="status.conditions[type=Admitted]")]
        fix = "Fix what the FailedCreate event names (`kubectl describe " + f"{kind.lower()} {m.get('name')}`)"
        if "exceeded quota" in last.message:
            quota = last.message.split("exceeded quota: ", 1)[-1].split(",", 1)[0]
            rq = snap.get("ResourceQuota", quota, m.get("namespace"))
            if rq is not None:
                st = rq.get("status") or {}
                hard, used = st.get("hard") or {}, st.get("used") or {}
                observed = ", ".join(f"{r}: used {used.get(r, '?')} of {q}" for r, q in sorted(hard.items()))
                evidence.append(ev("object", observed or "no status", kind="ResourceQuota", name=quota,
                                   namespace=m.get("namespace"), field="status.used"))
            fix = (f"The namespace ResourceQuota {quota} is smaller than what Kueue admits into it: raise it "
                   f"(`kubectl -n {m.get('namespace')} describe resourcequota {quota}`) or align the ClusterQueue's "
                   "nominal quota with it")
        count = sum(e.count for e in failed)
        return self.finding(CauseSlug.PODS_NOT_STARTING, title, message, evidence=evidence, remediation=[fix + "."],
                            data={"owner": f"{kind}/{m.get('name')}", "failed_create_events": count})


# --- helpers ----------------------------------------------------------------------------------------------------


def _with_history(snap: Snapshot, owner: dict[str, Any] | None, findings: list[Finding]) -> list[Finding]:
    """Each finding with what the job's earlier, deleted pods went through (their events outlive them)."""
    history = history_evidence(snap, owner)
    if not history:
        return findings
    return [f.model_copy(update={"evidence": (*f.evidence, *history)}) for f in findings]


def _denied_release(snap: Snapshot, w: WorkloadView, held: list[HeldBy]) -> tuple[Rejection, str, str] | None:
    """The newest controller log line or event saying the API server refused Kueue's update of a held object."""
    names = {h.name for h in held}
    found: tuple[Rejection, str, str] | None = None
    for ln in log_lines(snap):
        text = f"{ln.msg} {ln.error}"
        if not any(re.search(rf"\b{re.escape(n)}\b", ln.raw) for n in names | {w.name}):
            continue
        rej = api_rejection(text)
        if rej is not None:
            found = (rej, f"{ln.file}:{ln.lineno}: {ln.msg}: {ln.error}".rstrip(": "), "log")
    if found is not None:
        return found
    for h in held:
        for e in events_for(snap, h.kind, h.namespace or w.namespace, h.name):
            rej = api_rejection(e.message)
            if rej is not None:
                found = (rej, f"{e.reason}: {e.message}", "event")
    return found


def _owner(snap: Snapshot, w: WorkloadView, target: Target) -> dict[str, Any] | None:
    if w.owner and w.owner.get("uid"):
        obj = snap.by_uid(str(w.owner["uid"]))
        if obj is not None:
            return obj
    return target.owner


def _held(owner: dict[str, Any] | None, pods: list[PodView]) -> list[HeldBy]:
    out: list[HeldBy] = []
    if owner is not None:
        sf = suspend_field(owner)
        stopping = (meta(owner).get("annotations") or {}).get("kueue.x-k8s.io/stopping") == "true"
        if sf is not None and sf[1] is True and not stopping:
            m = meta(owner)
            out.append(HeldBy(kind=owner.get("kind", "?"), name=m.get("name", "?"), namespace=m.get("namespace"),
                              field=sf[0], observed=f"{sf[0]}: true"))
    for p in pods:
        for gate in p.scheduling_gates:
            if gate in KUEUE_GATES:
                out.append(HeldBy(kind="Pod", name=p.name, namespace=p.namespace, field="spec.schedulingGates",
                                  observed=f"schedulingGates: [{', '.join(p.scheduling_gates)}]", gate=gate))
                break
    return out


def _flavor_of(snap: Snapshot, w: WorkloadView) -> FlavorView | None:
    """The flavor of the workload's first assigned resource (the one whose nodeLabels/tolerations Kueue injected)."""
    names = [f for a in w.assignments for f in a.flavors.values()]
    return kueue_index(snap).flavors.get(names[0]) if names else None


def _selector_matches(snap: Snapshot, pod: PodView) -> int:
    """Nodes whose labels satisfy the pod's nodeSelector and required node affinity."""
    spec = pod.obj.get("spec") or {}
    return sum(1 for n in nodes(snap) if pod_fits_node_labels(spec, n.labels))


def _assigned_domains(w: WorkloadView) -> str:
    """'node-a (2 pods), node-b (1 pod)' from status.admission.podSetAssignments[].topologyAssignment."""
    parts = []
    for a in w.assignments:
        levels, domains = topology_assignment(a.topology)
        for d in domains:
            where = "/".join(d.values) if d.values else "?"
            parts.append(f"{where} ({d.pods} pod{'s' if d.pods != 1 else ''})")
        if levels and domains:
            parts[-len(domains)] = f"{levels[-1]} " + parts[-len(domains)]
    return ", ".join(parts[:8]) + (f" and {len(parts) - 8} more" if len(parts) > 8 else "")


def _claims(pod: PodView) -> list[str]:
    out = []
    for v in (pod.obj.get("spec") or {}).get("volumes") or ():
        claim = ((v or {}).get("persistentVolumeClaim") or {}).get("claimName")
        if claim:
            out.append(str(claim))
    return out


def _pod_time(pod: PodView) -> datetime | None:
    status = pod.obj.get("status") or {}
    return parse_time_lenient(status.get("startTime")) or parse_time_lenient(meta(pod.obj).get("creationTimestamp"))


_EXPLAIN = {
    "insufficient": "{n} node(s) lack free {text}.",
    "untolerated-taint": "{n} node(s) carry a taint the pod does not tolerate ({text}).",
    "node-affinity": "{n} node(s) do not match the pod's nodeSelector/affinity (Kueue injects the flavor's "
                     "nodeLabels).",
    "unschedulable-node": "{n} node(s) are cordoned.",
    "preemption-not-helpful": "",
}


def _explain(kind: str, count: int | None, text: str) -> str:
    template = _EXPLAIN.get(kind)
    if template is None:
        return f"{count} node(s): {text}." if count is not None else f"{text}."
    return template.format(n=count, text=text.removeprefix("Insufficient "))


def _fragmentation(snap: Snapshot, pod: PodView, pending: list[PodView],
                   failure: SchedulingFailure) -> tuple[str, str, str, str, str, int, int, str, str] | None:
    """When nodes exist in the snapshot: (resource, per pod, total free, largest, layout, slots, pods, histogram,
    node with the largest hole) if the pending pods' total fits in the free room of the nodes they may use but no
    placement exists."""
    if not nodes(snap):
        return None
    spec = pod.obj.get("spec") or {}
    shape = pod.requests
    same = [p for p in pending if p.requests == shape]
    res = main_resource(shape)
    match = matching_nodes(snap, None, spec)
    h = match.holes(res)
    per = shape.get(res, ZERO)
    demand = [Demand("pending", dict(shape), len(same))]
    if per <= ZERO or h.largest >= per or match.short_in_total(demand):
        # nothing free in aggregate, or a big-enough hole exists (then other resources bind): not fragmentation
        return None
    placement = match.place(demand)
    if placement.fits:
        return None
    slots = sum(placement.slots.values())
    return (res, fmt_qty(per), fmt_qty(h.total_free), fmt_qty(h.largest), h.layout(), slots, len(same),
            h.histogram_text(), h.per_node[0][0] if h.per_node else "?")

