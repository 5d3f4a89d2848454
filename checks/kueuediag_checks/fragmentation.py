"""KD201 fragmentation: quota allows the workload, but no node (or topology domain) has a hole of its shape."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import field
from decimal import Decimal
from typing import Any

from kueuediag.analysis.capacity import (
    DEFAULT_GPU_RESOURCES,
    Demand,
    Holes,
    LevelDomains,
    NodeCapacity,
    NodeMatch,
    Placement,
    constraint_key,
    fmt_qty,
    fragmentation,
    main_resource,
    matching_nodes,
    total_slots,
)
from kueuediag.analysis.flavor_match import flavor_tolerations_count, spec_exclusion
from kueuediag.analysis.messages import PendingMessage, Reason, ReasonKind, parse_pending_message
from kueuediag.analysis.quota_fit import FitVerdict, fit_facts, fit_shape, flavor_fits, workload_fit
from kueuediag.analysis.scheduling import pod_scheduling
from kueuediag.causes import CauseSlug
from kueuediag.check import Check
from kueuediag.models import CheckResult, Confidence, Evidence, Finding, Severity, ev
from kueuediag.quantity import ZERO
from kueuediag.records import dataclass
from kueuediag.snapshot.kueue import (
    ClusterQueueView,
    FlavorView,
    KueueIndex,
    PodSet,
    WorkloadState,
    WorkloadView,
    cluster_queue_of,
    kueue_index,
    pods_by_node,
    workload_pods,
)
from kueuediag.snapshot.model import Part, Snapshot
from kueuediag.target import Target

_TAS_ANNOTATIONS = (
    ("required", "kueue.x-k8s.io/podset-required-topology"),
    ("preferred", "kueue.x-k8s.io/podset-preferred-topology"),
)


@dataclass
class _FlavorEval:
    """The numbers for one flavor the workload may use."""

    flavor: FlavorView
    pod_sets: list[tuple[PodSet, int]]
    """(pod set, pods still to place)"""
    nodes: tuple[NodeCapacity, ...]
    excluded: dict[str, int]
    resource: str
    holes: Holes
    need: Decimal
    """pods still to place × per-pod request of `resource`"""
    placement: Placement
    quota_ok: bool
    quota_note: str
    match: NodeMatch
    """the flavor's nodes for this pod shape (answers about them are memoised on it)"""
    facts: dict[str, dict[str, bool | None]] = field(default_factory=dict)
    """what the recomputation concluded about objects (Finding.data["facts"]), when it decided"""
    levels: list[LevelDomains] = field(default_factory=list)
    topology: str | None = None
    tas_level: tuple[str, str] | None = None
    """(mode, level) of the topology request"""
    tas_fits: bool | None = None

    @property
    def per_pod(self) -> Decimal:
        return self.pod_sets[0][0].requests.get(self.resource, ZERO) if self.pod_sets else ZERO

    @property
    def pods(self) -> int:
        return sum(n for _, n in self.pod_sets)


class Fragmentation(Check):
    """Finds free capacity scattered across nodes in holes too small for the workload's pods.

    What it detects:
        For every flavor the workload may use (its assigned flavor once admitted; otherwise the ClusterQueue's
        flavors that match its pods), the nodes behind the flavor (its `nodeLabels`, the pod's nodeSelector and
        tolerations plus the flavor's), their free room (allocatable minus requests of bound, non-terminal pods;
        cordoned and NotReady nodes give none), the histogram of nodes by free GPUs, total free vs the largest
        hole, and how many pods of the workload's per-pod shape fit (every resource at once, several pods per
        node). Fragmentation is reported when quota is available (or already held) and the total free room is
        enough but no placement exists. With topology-aware scheduling (a flavor with `topologyName`), free
        room is summed per topology domain at each level and Kueue's TAS message
        (`topology "x" doesn't allow to fit any of N pod(s)`) is decoded.

    Why the workload stays pending:
        Quota is counted per flavor, not per node: 1+1+4+2 free GPUs on four 8-GPU nodes is 8 GPUs of quota
        but no node can run an 8-GPU pod. Without TAS Kueue admits the workload and kube-scheduler leaves its
        pods Pending (`Insufficient nvidia.com/gpu`), until waitForPodsReady evicts it. With TAS Kueue refuses
        admission instead and the workload stays queued with a `topology ... doesn't allow to fit` message.

    Evidence:
        Per-node free room (`Node status.allocatable` minus pod requests), cordoned/NotReady nodes, the
        Workload's admission or QuotaReserved message, the pods' FailedScheduling events, and for TAS the
        Topology levels with the best domain per level. `finding.data` carries the histogram, total free,
        largest hole, slots and the cluster fragmentation figure.

    How to fix:
        Open a hole of the needed shape (drain the node with the most free room), bin-pack small jobs
        (kube-scheduler `NodeResourcesFit` scoring strategy `MostAllocated`), reshape the job into more, smaller
        pods if it can run that way, or enable topology-aware scheduling so Kueue only admits what fits. For TAS
        relax the topology request (preferred instead of required, a higher level) or wait for a domain to drain.

    Example:
        `no node can take an 8 nvidia.com/gpu pod in flavor h100: 8 free on 4 nodes (1+1+4+2), largest hole 4,
        0 slots for 1 pod(s) [fragmentation]`
    """

    code = "KD201"
    name = "fragmentation"
    requires = (Part.WORKLOADS, Part.NODES, Part.PODS)
    default_severity = Severity.HIGH
    options = {"gpu_resources": ",".join(DEFAULT_GPU_RESOURCES)}

    def run(self, snapshot: Snapshot, target: Target) -> CheckResult:
        w = target.workload
        assert w is not None
        if w.state == WorkloadState.FINISHED or not w.active or w.is_true("Evicted"):
            state = "finished" if w.state == WorkloadState.FINISHED else "inactive" if not w.active else "evicted"
            return CheckResult.not_applicable(f"the workload is {state}: no pods to place")
        gpus = tuple(r.strip() for r in str(self.opts["gpu_resources"]).split(",") if r.strip())
        idx = kueue_index(snapshot)
        holds_quota = w.holds_quota
        qr = w.cond("QuotaReserved")
        msg = parse_pending_message(qr.message) if (qr is not None and qr.false) else None
        cq = idx.cluster_queues.get(cluster_queue_of(idx, w) or "")
        remaining = _remaining_pods(snapshot, w)
        if not any(remaining.values()):
            return CheckResult.not_applicable("every pod of the workload is already placed")
        evals, owned = self._evaluations(snapshot, idx, w, cq, remaining, msg, gpus)
        if not evals:
            return CheckResult.could_not_check(
                "ResourceFlavors", "no ResourceFlavor the workload may use is in the snapshot (nothing to place on)")
        config = msg.of(ReasonKind.TAS_CONFIG) if msg else []
        if config and not holds_quota:
            first_tas = next((e for e in evals if e.topology), None)
            return CheckResult.fired([self._topology_config_finding(w, owned(first_tas) if first_tas else None,
                                                                    config[0])])
        tas_reasons = msg.of(ReasonKind.TOPOLOGY_NO_FIT, ReasonKind.TOPOLOGY_PARTIAL_FIT) if msg else []
        if tas_reasons and not holds_quota:
            tas_eval = next((e for e in evals if e.topology == tas_reasons[0].name), None) or next(
                (e for e in evals if e.topology), evals[0])
            return CheckResult.fired([self._topology_finding(snapshot, w, owned(tas_eval), tas_reasons[0],
                                                             confident=True)])
        # a flavor where the workload fits (and quota allows it) clears the check
        usable = [e for e in evals if e.quota_ok]
        if not usable:
            return CheckResult.ruled_out(*(self._clear_ev(e, "quota does not allow it here: " + e.quota_note)
                                           for e in evals), reason="quota, not node shape, is what is short")
        fitting = [e for e in usable if _fits(e)]
        if fitting:
            return CheckResult.ruled_out(*(self._clear_ev(e, "fits") for e in fitting))
        tas_evals = [e for e in usable if e.topology]
        if tas_evals and not holds_quota:
            return CheckResult.fired([self._topology_finding(snapshot, w, owned(tas_evals[0]), None, confident=False)])
        fragmented = [e for e in usable if e.need > ZERO and not e.match.short_in_total(
            [Demand(ps.name, dict(ps.requests), n) for ps, n in e.pod_sets])]
        if not fragmented:
            return CheckResult.ruled_out(
                *(self._clear_ev(e, "short in total, not fragmented") for e in usable),
                reason="the nodes lack the capacity in total: not a shape problem")
        return CheckResult.fired([self._fragmentation_finding(snapshot, w, [owned(e) for e in fragmented], holds_quota,
                                                              gpus)])

    @staticmethod
    def _clear_ev(e: _FlavorEval, verdict: str) -> Evidence:
        """What was looked at in one flavor: nodes, the largest hole and what one pod needs."""
        return ev("derived",
                  f"{len(e.nodes)} node(s) in flavor {e.flavor.name}, largest hole {e.holes.largest}{e.holes.unit} "
                  f"{e.resource}, {e.per_pod} per pod needed, {e.holes.total_free}{e.holes.unit} free in total: "
                  f"{verdict}",
                  kind="ResourceFlavor", name=e.flavor.name, field=e.resource)

    # --- evaluation ------------------------------------------------------------------------------------------
    def _evaluations(self, snap: Snapshot, idx: KueueIndex, w: WorkloadView, cq: ClusterQueueView | None,
                     remaining: dict[str, int], msg: PendingMessage | None,
                     gpus: tuple[str, ...]) -> tuple[list[_FlavorEval], Callable[[_FlavorEval], _FlavorEval]]:
        """:meth:`_evaluate`, shared by the pending workloads of one shape in one ClusterQueue, and the function
        that makes an evaluation the workload's own.

        For a workload that holds no quota and has no admission, the evaluation reads of the workload only what
        the key holds: per pod set its name, count, minimum count, requests and placement constraints (`fit_shape`,
        which also decides its quota fit), the constraint text node matching reads from its pod spec, its
        topology request, and the workload's QuotaReserved message; the rest is the snapshot's and the option
        `gpus`. The shared evaluations are read as they are where only that shows (whether quota allows a flavor
        and the pods fit, and the ruled-out evidence: flavor, nodes, holes, per-pod request); a finding is built
        from the workload's own copy (`owned`: its own pod sets, and the facts named after it).
        tests/test_scan_indexes.py holds the results to those of each workload's own evaluation."""
        own = {ps.name: ps for ps in w.pod_sets}
        if w.assignments or w.holds_quota or cq is None or len(own) < len(w.pod_sets):
            return self._evaluate(snap, idx, w, cq, remaining, msg, gpus), _as_is
        qr = w.cond("QuotaReserved")
        key = ("KD201:evaluations", cq.name, gpus, fit_shape(w),
               tuple(constraint_key(snap, ps.spec) for ps in w.pod_sets),
               tuple(_tas_request(w, ps) for ps in w.pod_sets), tuple(sorted(remaining.items())),
               qr.message if qr is not None and qr.false else None)
        shared = snap.memo(key, lambda: self._evaluate(snap, idx, w, cq, remaining, msg, gpus))
        name = cq.name

        def owned(e: _FlavorEval) -> _FlavorEval:
            pairs = {(ps.name, e.flavor.name) for ps, _ in e.pod_sets}
            return dataclasses.replace(e, pod_sets=[(own[ps.name], n) for ps, n in e.pod_sets],
                                       facts=fit_facts(w, workload_fit(snap, w, name), only=pairs))

        return shared, owned

    def _evaluate(self, snap: Snapshot, idx: KueueIndex, w: WorkloadView, cq: ClusterQueueView | None,
                  remaining: dict[str, int], msg: PendingMessage | None, gpus: tuple[str, ...]) -> list[_FlavorEval]:
        by_flavor: dict[str, list[tuple[PodSet, int]]] = {}
        if w.assignments:
            for a in w.assignments:
                ps = next((p for p in w.pod_sets if p.name == a.name), None)
                if ps is None or not remaining.get(ps.name):
                    continue
                res = main_resource(ps.requests, gpus)
                flavor = a.flavors.get(res) or next(iter(a.flavors.values()), None)
                if flavor:
                    by_flavor.setdefault(flavor, []).append((ps, remaining[ps.name]))
        elif cq is not None:
            rf_tolerations = flavor_tolerations_count(snap)
            for ps in w.pod_sets:
                if not remaining.get(ps.name):
                    continue
                res = main_resource(ps.requests, gpus)
                group = cq.group_for(res)
                for fname, _ in (group.flavors if group else []):
                    fv = idx.flavors.get(fname)
                    if spec_exclusion(ps.spec, fname, fv, flavor_tolerations=rf_tolerations) is None:
                        by_flavor.setdefault(fname, []).append((ps, remaining[ps.name]))
        out: list[_FlavorEval] = []
        for fname, sets in by_flavor.items():
            fv = idx.flavors.get(fname)
            if fv is None:
                continue
            out.append(self._evaluate_flavor(snap, idx, w, cq, fv, sets, msg, gpus))
        return out

    def _evaluate_flavor(self, snap: Snapshot, idx: KueueIndex, w: WorkloadView, cq: ClusterQueueView | None,
                         fv: FlavorView, sets: list[tuple[PodSet, int]], msg: PendingMessage | None,
                         gpus: tuple[str, ...]) -> _FlavorEval:
        first = sets[0][0]
        match = matching_nodes(snap, fv, first.spec)
        resource = main_resource(first.requests, gpus)
        h = match.holes(resource)
        need = sum((ps.requests.get(resource, ZERO) * n for ps, n in sets), ZERO)
        placement = match.place([Demand(ps.name, dict(ps.requests), n) for ps, n in sets], gpus)
        quota_ok, note = _quota_available(snap, w, cq, fv.name, sets, msg)
        facts: dict[str, dict[str, bool | None]] = {}
        if not w.holds_quota and cq is not None:
            facts = fit_facts(w, workload_fit(snap, w, cq.name), only={(ps.name, fv.name) for ps, _ in sets})
        ev_ = _FlavorEval(flavor=fv, pod_sets=sets, nodes=match.nodes, excluded=match.excluded, resource=resource,
                          holes=h, need=need, placement=placement, quota_ok=quota_ok, quota_note=note,
                          match=match, facts=facts)
        levels = idx.topologies.get(fv.topology_name or "") if fv.topology_name else None
        if fv.topology_name and levels:
            ev_.topology = fv.topology_name
            ev_.levels = match.topology_domains(levels, resource, first.requests)
            ev_.tas_level = _tas_request(w, first)
            ev_.tas_fits = _tas_fits(ev_)
        return ev_

    # --- findings --------------------------------------------------------------------------------------------
    def _fragmentation_finding(self, snap: Snapshot, w: WorkloadView, evals: list[_FlavorEval], holds_quota: bool,
                               gpus: tuple[str, ...]) -> Finding:
        e = evals[0]
        res = e.resource
        per_pod = fmt_qty(e.per_pod)
        h = e.holes
        title = (f"no node can take {_a(per_pod)} {per_pod} {res} pod in flavor {e.flavor.name}: "
                 f"{fmt_qty(h.total_free)} free on {len(h.per_node)} nodes ({h.layout()}), "
                 f"largest hole {fmt_qty(h.largest)}, {_slots(e)} slots for {e.pods} pod(s)")
        mixed = h.largest >= e.per_pod
        if mixed:
            title = (f"no node has room for a whole pod ({_shape_text(e)}) in flavor {e.flavor.name}: enough free in "
                     f"total, but where {res} is free other resources are not; {_slots(e)} slots for {e.pods} pod(s)")
        cluster = fragmentation(snap, res)
        mine = fragmentation(snap, res, node_set=e.nodes, shape=e.per_pod)
        state = ("The Workload is admitted (its quota is held), so only node placement stands between it and running"
                 if holds_quota else
                 f"The Workload is not admitted yet but quota is available ({e.quota_note}); once Kueue admits it "
                 "(topology-aware scheduling is off for this flavor) kube-scheduler will not find a node either")
        lines = [
            f"{state}. It needs {e.pods} pod(s) of {_shape_text(e)} each in flavor {e.flavor.name}.",
            f"Free {res} per node behind the flavor: {h.layout()} = {fmt_qty(h.total_free)} free in total, but the "
            f"largest hole is {fmt_qty(h.largest)}; nodes by free {res}: {h.histogram_text()}.",
            f"Slots for this pod shape (all resources at once): {_slots(e)} for {e.pods} pod(s) needed"
            + ("" if e.placement.exact else " (greedy placement of several pod sets: a bound, not exact)") + ".",
            f"{fmt_qty(mine.stranded)} of {fmt_qty(mine.total_free)} free {res} ({mine.percent}) sit in holes smaller "
            f"than {per_pod}; cluster-wide {cluster.percent} of free {res} is in holes smaller than the most common "
            f"requested shape ({fmt_qty(cluster.shape) if cluster.shape is not None else 'none'} {res}).",
        ]
        if h.nodes_without_room:
            lines.append("Nodes that give no room: " + ", ".join(f"{n} ({why})" for n, why in h.nodes_without_room)
                         + ".")
        for other in evals[1:]:
            lines.append(f"Flavor {other.flavor.name}: {other.holes.layout()} free, largest hole "
                         f"{fmt_qty(other.holes.largest)}, {_slots(other)} slots for {other.pods} pod(s).")
        evidence = self._node_evidence(snap, e)
        evidence.insert(0, _workload_evidence(w, holds_quota))
        for p in workload_pods(snap, w):
            if p.node or p.terminal:
                continue
            sched = pod_scheduling(snap, p)
            if sched.failure is not None:
                evidence.append(ev("event" if sched.source == "event" else "condition", sched.failure.raw,
                                   kind="Pod", name=p.name, namespace=p.namespace,
                                   field="FailedScheduling" if sched.source == "event"
                                   else "status.conditions[type=PodScheduled]"))
                break
        return self.finding(
            CauseSlug.FRAGMENTATION, title, "\n".join(lines),
            confidence=Confidence.HIGH if holds_quota else Confidence.MEDIUM,
            severity=Severity.HIGH if holds_quota else Severity.MEDIUM,
            evidence=evidence,
            remediation=self._remediation(snap, e, gpus),
            data=_data(e, cluster, mine),
        )

    def _topology_finding(self, snap: Snapshot, w: WorkloadView, e: _FlavorEval, reason: Reason | None,
                          confident: bool) -> Finding:
        res = e.resource
        topo = (reason.name if reason else None) or e.topology or "?"
        total = reason.amount if reason and reason.amount is not None else Decimal(e.pods)
        fit = reason.extra.get("fit", "0") if reason else "0"
        title = (f'topology "{topo}" fits {fit} of {fmt_qty(total)} pod(s) of {fmt_qty(e.per_pod)} {res}: '
                 f"{fmt_qty(e.holes.total_free)} free ({e.holes.layout()}), largest hole {fmt_qty(e.holes.largest)}")
        lines = []
        if reason is not None:
            lines.append(f"Kueue's topology-aware scheduling refuses admission: {reason.text}.")
            excluded = reason.extra.get("excluded")
            if excluded:
                lines.append(f"Kueue left out nodes ({reason.extra.get('total', '?')} in total): {excluded}.")
        else:
            lines.append("Quota is available but the TAS flavor's topology has no room for the pods, so Kueue "
                         "will not admit the workload (no TAS message recorded yet; computed from nodes).")
        if e.tas_level:
            lines.append(f"Topology request: {e.tas_level[0]} level {e.tas_level[1]}.")
        for lv in e.levels:
            best = lv.best
            if best is None:
                lines.append(f"Level {lv.level}: no domains.")
                continue
            lines.append(f"Level {lv.level}: {len(lv.domains)} domain(s); best {'/'.join(best.values[-1:])} has "
                         f"{fmt_qty(best.free)} free {res} ({best.slots} slot(s) for this pod shape, "
                         f"{best.nodes} node(s)).")
        lines.append(f"Nodes by free {res}: {e.holes.histogram_text()}.")
        evidence = [_workload_evidence(w, False, reason)]
        evidence.append(ev("object", f"levels: {', '.join(lv.level for lv in e.levels)}", kind="Topology", name=topo,
                           field="spec.levels"))
        evidence.extend(self._node_evidence(snap, e))
        rem: list[str] = []
        levels_text = ", ".join(lv.level for lv in e.levels)
        if e.tas_level and e.tas_level[0] == "required":
            rem.append(f"Relax the topology request of pod set {e.pod_sets[0][0].name}: "
                       f"`kueue.x-k8s.io/podset-preferred-topology: {e.tas_level[1]}` instead of "
                       f"`podset-required-topology`, or a higher level (levels: {levels_text}).")
        if e.holes.largest < e.per_pod:
            rem.append(f"No single node has {fmt_qty(e.per_pod)} free {res} (largest hole {fmt_qty(e.holes.largest)} "
                       "on " + (e.holes.per_node[0][0] if e.holes.per_node else "no node") + "): no topology request "
                       "can help; drain a node or run the job as more, smaller pods.")
        else:
            rem.append(f"Wait for a domain to drain, or drain one: the best domain per level is listed above "
                       f"(levels: {levels_text}).")
        rem.append("Keep new small workloads packed onto the fullest domains: the TAS profile feature gate "
                   "`TASProfileMixed` (Beta, on by default since v0.15) does that for single-node workloads.")
        data = _data(e, fragmentation(snap, res), fragmentation(snap, res, node_set=e.nodes, shape=e.per_pod))
        data["topology"] = topo
        data["levels"] = {lv.level: {"domains": len(lv.domains),
                                     "largest_free": fmt_qty(lv.best.free) if lv.best else "0",
                                     "max_slots": lv.best.slots if lv.best else 0} for lv in e.levels}
        if reason is not None and reason.extra.get("excluded"):
            data["excluded"] = reason.extra["excluded"]
        return self.finding(CauseSlug.TOPOLOGY_NO_FIT, title, "\n".join(lines),
                            confidence=Confidence.HIGH if confident else Confidence.MEDIUM,
                            evidence=evidence, remediation=rem, data=data)

    def _topology_config_finding(self, w: WorkloadView, e: _FlavorEval | None, reason: Reason) -> Finding:
        """Kueue recorded that the topology itself cannot be used (a level no node carries, a request for a level
        the Topology lacks): no amount of waiting helps, the Topology, the nodes' labels or the request must
        change. The nodes behind the flavor are counted per level so the missing label is named."""
        topo = (e.topology if e else None) or "?"
        ps = reason.pod_set or (e.pod_sets[0][0].name if e else "?")
        title = f'Kueue cannot use topology "{topo}" for pod set {ps}: {reason.text}'
        lines = [f"Kueue's topology-aware scheduling refuses admission with a configuration error: {reason.text}. "
                 "Waiting does not help: the Topology, the nodes' labels or the workload's topology request must "
                 "change."]
        evidence = [_workload_evidence(w, False, reason)]
        rem: list[str] = []
        if e is not None:
            levels = [lv.level for lv in e.levels]
            evidence.append(ev("object", f"levels: {', '.join(levels)}", kind="Topology", name=topo,
                               field="spec.levels"))
            usable = sum(1 for n in e.nodes if n.usable)
            for lv in e.levels:
                lines.append(f"Level {lv.level}: {len(lv.domains)} domain(s); {lv.unlabelled_nodes} of {usable} "
                             f"usable node(s) of flavor {e.flavor.name} lack a label this level needs.")
                if lv.unlabelled_nodes:
                    evidence.append(ev("derived", f"{lv.unlabelled_nodes} of {usable} node(s) of flavor "
                                                  f"{e.flavor.name} lack label {lv.level} (or a level above it)",
                                       kind="ResourceFlavor", name=e.flavor.name, field=f"nodes.labels[{lv.level}]",
                                       expected="every node of a TAS flavor carries every level label"))
            missing = [lv.level for lv in e.levels if lv.unlabelled_nodes]
            if missing:
                rem.append(f"Label the nodes of flavor {e.flavor.name} with every topology level "
                           f"({', '.join(missing)} is missing), or remove the level from Topology {topo}.")
            if levels and levels[-1] != "kubernetes.io/hostname":
                rem.append(f"Make kubernetes.io/hostname the lowest level of Topology {topo}: only then are node "
                           "taints respected and pods packed per node.")
        rem.append("Check the workload's topology annotations name a level of the Topology "
                   "(kueue.x-k8s.io/podset-required-topology / -preferred-topology).")
        data: dict[str, Any] = {"topology": topo, "reason": reason.text}
        if e is not None:
            data["levels"] = {lv.level: {"domains": len(lv.domains), "unlabelled_nodes": lv.unlabelled_nodes}
                              for lv in e.levels}
        return self.finding(CauseSlug.TOPOLOGY_NO_FIT, title, "\n".join(lines), confidence=Confidence.HIGH,
                            evidence=evidence, remediation=rem, data=data)

    def _node_evidence(self, snap: Snapshot, e: _FlavorEval, limit: int = 8) -> list[Evidence]:
        out: list[Evidence] = []
        res = e.resource
        by_name = {n.name: n for n in e.nodes}
        for name, free in e.holes.per_node[:limit]:
            n = by_name[name]
            used = n.requested.get(res, ZERO)
            out.append(ev("object", f"{fmt_qty(n.allocatable.get(res, ZERO))} allocatable, {fmt_qty(used)} requested "
                                    f"by {n.pods} pod(s) → {fmt_qty(free)} free",
                          kind="Node", name=name, field=f"status.allocatable[{res}]",
                          expected=f">= {fmt_qty(e.per_pod)} free"))
        for name, why in e.holes.nodes_without_room:
            where = "spec.unschedulable" if why.startswith("cordoned") else "status.conditions[type=Ready]"
            out.append(ev("object", f"{why}: gives no room", kind="Node", name=name, field=where))
        del snap
        return out

    def _remediation(self, snap: Snapshot, e: _FlavorEval, gpus: tuple[str, ...]) -> list[str]:
        res = e.resource
        out: list[str] = []
        if e.holes.per_node:
            node, free = e.holes.per_node[0]
            short = e.per_pod - free
            holders = sorted(
                (p for p in pods_by_node(snap).get(node, []) if p.holds_node_resources
                 and p.requests.get(res, ZERO) > ZERO),
                key=lambda p: (-p.requests.get(res, ZERO), p.name))
            victims, freed = [], ZERO
            for p in holders:
                if freed >= short:
                    break
                victims.append(p)
                freed += p.requests.get(res, ZERO)
            names = ", ".join(f"{p.namespace}/{p.name} ({fmt_qty(p.requests.get(res, ZERO))})" for p in victims)
            out.append(f"Open a {fmt_qty(e.per_pod)}-{res} hole: node {node} has {fmt_qty(free)} free and needs "
                       f"{fmt_qty(short)} more; `kubectl cordon {node}` and move {names or 'its pods'} elsewhere "
                       "(then uncordon).")
        out.append("Bin-pack small jobs so large holes survive: kube-scheduler `NodeResourcesFit` scoring strategy "
                   "`MostAllocated` (on GKE: `--autoscaling-profile optimize-utilization`).")
        first = e.pod_sets[0][0]
        per = first.requests.get(res, ZERO)
        for k in (2, 4, 8):
            if per <= ZERO or per % k:
                continue
            smaller = {r: q / k for r, q in first.requests.items()}
            slots = total_slots(e.nodes, smaller)
            if slots >= e.pods * k:
                out.append(f"If the job can run as more, smaller pods: {e.pods * k} pod(s) of {fmt_qty(per / k)} {res} "
                           f"would fit now ({slots} slots).")
                break
        if not e.flavor.topology_name:
            out.append(f"Enable topology-aware scheduling for flavor {e.flavor.name} (`spec.topologyName` plus a "
                       "Topology object) so Kueue admits only workloads that fit on the nodes.")
        return out


# --- helpers ----------------------------------------------------------------------------------------------------


def _remaining_pods(snap: Snapshot, w: WorkloadView) -> dict[str, int]:
    """Pods per pod set still to place: the admitted count minus pods already bound to a node."""
    counts = {ps.name: ps.count for ps in w.pod_sets}
    for a in w.assignments:
        if a.count is not None and a.name in counts:
            counts[a.name] = int(a.count)
    if not w.holds_quota:
        return counts
    bound: dict[str, int] = {}
    single = w.pod_sets[0].name if len(w.pod_sets) == 1 else None
    for p in workload_pods(snap, w):
        if not p.node or p.terminal:
            continue
        name = p.labels.get("kueue.x-k8s.io/podset") or single
        if name:
            bound[name] = bound.get(name, 0) + 1
    return {k: max(0, v - bound.get(k, 0)) for k, v in counts.items()}


def _quota_available(snap: Snapshot, w: WorkloadView, cq: ClusterQueueView | None, flavor: str,
                     sets: list[tuple[PodSet, int]], msg: PendingMessage | None) -> tuple[bool, str]:
    """Whether quota is no obstacle in `flavor`: Kueue's own message first, then the one fit function
    (:func:`kueuediag.analysis.quota_fit.workload_fit`, cohort borrowing included) that KD102 uses too."""
    if w.holds_quota:
        return True, "quota reserved"
    if msg is not None:
        blocked = [r for r in msg.of(ReasonKind.INSUFFICIENT_UNUSED_QUOTA, ReasonKind.EXCEEDS_MAX_QUOTA)
                   if r.flavor in (flavor, None)]
        if blocked:
            return False, blocked[0].text
        if msg.has(ReasonKind.TOPOLOGY_NO_FIT, ReasonKind.TOPOLOGY_PARTIAL_FIT):
            return True, "Kueue's message names only the topology"
    if cq is None:
        return False, "no ClusterQueue"
    fit = workload_fit(snap, w, cq.name)
    fits = [f for f in (flavor_fits(fit, ps.name, flavor) for ps, _ in sets) if f is not None]
    if not fits:
        return False, f"flavor {flavor} is not one Kueue would try for this workload in ClusterQueue {cq.name}"
    bad = next((f for f in fits if not f.verdict.fits), None)
    if bad is not None:
        limiting = bad.limiting()
        return False, limiting.describe() if limiting is not None else f"{bad.verdict.value} in flavor {flavor}"
    if any(f.verdict is FitVerdict.FITS_BORROWING for f in fits):
        return True, f"quota of ClusterQueue {cq.name} plus what it may borrow from its cohort covers the request"
    return True, f"unused nominal quota in ClusterQueue {cq.name} covers the request"


def _tas_request(w: WorkloadView, ps: PodSet) -> tuple[str, str] | None:
    """(mode, level) from podSets[].topologyRequest, else from the pod-template annotations."""
    tr = ps.topology_request or {}
    for mode in ("required", "preferred"):
        if tr.get(mode):
            return mode, str(tr[mode])
    if tr.get("unconstrained"):
        return "unconstrained", "any"
    ann: dict[str, Any] = {}
    for raw in (w.obj.get("spec") or {}).get("podSets") or ():
        if isinstance(raw, dict) and (raw.get("name") or "main") == ps.name:
            ann = ((raw.get("template") or {}).get("metadata") or {}).get("annotations") or {}
    for mode, key in _TAS_ANNOTATIONS:
        if ann.get(key):
            return mode, str(ann[key])
    return None


def _as_is(e: _FlavorEval) -> _FlavorEval:
    """An evaluation worked out for the workload itself is already its own."""
    return e


def _tas_fits(e: _FlavorEval) -> bool:
    """A required level needs one domain at that level with enough slots; otherwise any node set will do (bound)."""
    pods = e.pods
    if e.tas_level and e.tas_level[0] == "required":
        for lv in e.levels:
            if lv.level == e.tas_level[1]:
                return bool(lv.best and lv.best.slots >= pods)
    return e.placement.fits


def _fits(e: _FlavorEval) -> bool:
    if e.topology and e.tas_fits is not None:
        return e.tas_fits
    return e.placement.fits


def _a(number: str) -> str:
    """'an 8', 'an 11', 'an 80', 'a 4' (as read aloud)."""
    return "an" if number.startswith("8") or number in ("11", "18") else "a"


def _slots(e: _FlavorEval) -> int:
    return sum(e.placement.slots.values())


def _shape_text(e: _FlavorEval) -> str:
    req = e.pod_sets[0][0].requests
    order = [e.resource] + sorted(r for r in req if r != e.resource)
    return ", ".join(f"{_human(r, req[r])} {r}" for r in order if r in req)


def _human(resource: str, q: Decimal) -> str:
    if resource == "memory" or resource.startswith("hugepages") or resource == "ephemeral-storage":
        gi = Decimal(1024) ** 3
        if q >= gi and q % (gi / 1024) == 0:
            return f"{fmt_qty(q / gi)}Gi"
    return fmt_qty(q)


def _workload_evidence(w: WorkloadView, holds_quota: bool, reason: Reason | None = None) -> Evidence:
    if holds_quota:
        c = w.cond("Admitted") if w.is_true("Admitted") else w.cond("QuotaReserved")
        observed = f"{c.type}=True ({c.reason}) in ClusterQueue {w.admission_cq}" if c else "quota reserved"
        return ev("condition", observed, kind="Workload", name=w.name, namespace=w.namespace,
                  field=f"status.conditions[type={c.type if c else 'QuotaReserved'}]")
    qr = w.cond("QuotaReserved")
    observed = (qr.message if qr is not None and qr.message
                else "no QuotaReserved condition yet: Kueue has not evaluated the workload")
    return ev("condition", observed, kind="Workload", name=w.name, namespace=w.namespace,
              field="status.conditions[type=QuotaReserved]",
              expected="a topology domain with room for the pods" if reason else None)


def _data(e: _FlavorEval, cluster: Any, mine: Any) -> dict[str, Any]:
    return {
        **({"facts": e.facts} if e.facts else {}),
        "flavor": e.flavor.name,
        "resource": e.resource,
        "per_pod": fmt_qty(e.per_pod),
        "pods": e.pods,
        "need": fmt_qty(e.need),
        "histogram": e.holes.histogram_dict(),
        "layout": e.holes.layout(),
        "total_free": fmt_qty(e.holes.total_free),
        "largest_hole": fmt_qty(e.holes.largest),
        "slots": _slots(e),
        "fits": e.placement.fits,
        "placement_exact": e.placement.exact,
        "nodes": len(e.holes.per_node),
        "nodes_without_room": [n for n, _ in e.holes.nodes_without_room],
        "excluded_nodes": dict(e.excluded),
        "stranded": fmt_qty(mine.stranded),
        "stranded_percent": mine.percent,
        "cluster_fragmentation": cluster.percent,
        "cluster_common_shape": fmt_qty(cluster.shape) if cluster.shape is not None else None,
    }
