"""KD005 resource-coverage: does the ClusterQueue cover every requested resource with a flavor the pods fit?"""

from __future__ import annotations

from typing import Any

from kueuediag.analysis.flavor_match import (
    FlavorExclusion,
    flavor_tolerations_count,
    group_exclusions,
    groups_for_pod_set,
    spec_exclusion,
)
from kueuediag.analysis.kueue_config import kueue_config
from kueuediag.analysis.messages import PendingMessage, ReasonKind
from kueuediag.analysis.queue_route import QueueRoute, collected
from kueuediag.analysis.quota_fit import workload_fit
from kueuediag.analysis.spec_patches import cover_resources, quantity
from kueuediag.analysis.versions import behaviour
from kueuediag.causes import CauseSlug
from kueuediag.models import Evidence, Finding, Fix, Severity, ev
from kueuediag.quantity import format_quantity
from kueuediag.snapshot.kueue import ClusterQueueView, KueueIndex, PodSet, WorkloadView, kueue_index
from kueuediag.snapshot.model import Snapshot
from kueuediag_checks._submission import (
    Pending,
    SubmissionCheck,
    cq_name,
    from_message,
    labels_str,
    lq_active_evidence,
    qr_evidence,
)


class ResourceCoverage(SubmissionCheck):
    """Finds requests no resourceGroup covers and pod sets whose constraints exclude every flavor.

    What it detects:
        A requested resource that no `resourceGroup` of the ClusterQueue lists in `coveredResources` (prefixes in
        `resources.excludeResourcePrefixes` are ignored, as Kueue does); and a pod set whose nodeSelector,
        required node affinity or tolerations exclude every flavor of the group that covers its resources.
        When every pod set fits some flavor but Kueue's in-order assignment (each pod set takes the first flavor
        that fits after what earlier pod sets took, never revisiting a choice) does not fit while another
        combination of the eligible flavors does: `flavor-assignment-conflict` (the combination search is
        bounded at 4,096 combinations). (Split out of the former `queue-configuration` check, KD001.)

    Why the workload stays pending:
        The flavor assigner answers `resource <r> unavailable in ClusterQueue`, or `flavor <f> doesn't match node
        affinity` / `untolerated taint ... in flavor <f>` for every flavor, on every cycle: quota is never the
        question, and freeing capacity changes nothing.

    Evidence:
        The Workload's pod-set requests, nodeSelector, affinity and tolerations; ClusterQueue
        `spec.resourceGroups`; ResourceFlavor `nodeLabels`/`nodeTaints`; the manager config's
        `excludeResourcePrefixes`. The QuotaReserved message is quoted when it names the same flavors.

    How to fix:
        Add the resource to a resourceGroup (with quota in each flavor), drop or exclude the request, or align
        nodeSelector/tolerations with a flavor (the exact toleration or label is given).

    Example:
        `no flavor of ClusterQueue gpu fits pod set main: a100 (untolerated taint), h100 (node affinity)
        [no-matching-flavor]`
    """

    code = "KD005"
    name = "resource-coverage"
    requires = ()
    default_severity = Severity.HIGH

    def looked_at(self, p: Pending, route: QueueRoute) -> str:
        requested = ", ".join(sorted(p.w.total_requests())) or "nothing"
        return (f"ClusterQueue {cq_name(route)} covers every requested resource ({requested}) with a flavor whose "
                "labels and taints the pods accept")

    def route_findings(self, snapshot: Snapshot, p: Pending, route: QueueRoute) -> list[Finding]:
        causes = ("resource-not-covered", "no-matching-flavor")
        if route.state == "lq-unknown":
            return from_message(self, p, causes, "LocalQueue")
        if route.state == "cq-unknown" and route.lq is not None:
            return from_message(self, p, causes, "ClusterQueue", lq_active_evidence(route.lq))
        if route.cq is None:
            return []
        wl_ev = qr_evidence(p.w, p.qr)
        found = [
            *self._resources(snapshot, route.cq, p.w, wl_ev),
            *self._flavors(snapshot, kueue_index(snapshot), route.cq, p.w, wl_ev, p.pm),
        ]
        return found or self._conflict(snapshot, p.w, wl_ev)

    def _conflict(self, snap: Snapshot, w: WorkloadView, wl_ev: list[Evidence]) -> list[Finding]:
        """Kueue's in-order flavor assignment does not fit while another combination does."""
        fit = workload_fit(snap, w)
        if fit is None or fit.better is None:
            return []
        better = fit.better
        kueue = "; ".join(f"{ps} → {f.flavor} ({f.verdict.value})" for ps, f in fit.chosen())
        other = "; ".join(f"{ps} → {flavor}" for ps, _, flavor in better.flavors)
        moved = [(ps, flavor) for (ps, f), (_, _, flavor) in zip(fit.chosen(), better.flavors, strict=False)
                 if f.flavor != flavor]
        fixes = [
            f"Pin pod set {ps} to flavor {flavor}: give it a nodeSelector matching ResourceFlavor {flavor}'s "
            f"nodeLabels (`kubectl get resourceflavor {flavor} -o jsonpath='{{.spec.nodeLabels}}'`), so Kueue's "
            "in-order assignment cannot take the flavor a later pod set needs."
            for ps, flavor in moved
        ] + ["Or order the pod sets so the most constrained one comes first, or split the job into separate jobs."]
        return [self.finding(
            CauseSlug.FLAVOR_ASSIGNMENT_CONFLICT,
            f"Kueue's in-order flavor assignment leaves the workload {fit.verdict.value}, but {other} "
            f"{'fits' if better.verdict.fits else better.verdict.value}",
            f"Every pod set fits some flavor of ClusterQueue {fit.cluster_queue}, but Kueue assigns flavors pod set "
            f"by pod set, each taking the first flavor that fits after what earlier pod sets took, and never "
            f"revisits a choice: {kueue}. Assigning {other} instead is {better.verdict.value}. The workload waits "
            "although the quota suffices; Kueue's message blames quota for the last pod set.",
            evidence=[
                ev("derived", f"Kueue's order: {kueue}", kind="ClusterQueue", name=fit.cluster_queue,
                   field="spec.resourceGroups[].flavors"),
                ev("derived", f"feasible: {other} ({better.verdict.value})", kind="ClusterQueue",
                   name=fit.cluster_queue, field="spec.resourceGroups[].flavors"),
                *wl_ev,
            ],
            remediation=fixes,
            data={"kueue_order": {ps: f.flavor for ps, f in fit.chosen()},
                  "feasible": {ps: flavor for ps, _, flavor in better.flavors}, "verdict": better.verdict.value},
        )]

    def _resources(self, snap: Snapshot, cq: ClusterQueueView, w: WorkloadView, wl_ev: list[Evidence]) -> list[Finding]:
        cfg = kueue_config(snap)
        missing: dict[str, list[str]] = {}
        excluded: set[str] = set()
        for ps in w.pod_sets:
            for res, qty in ps.requests.items():
                if cfg.excluded(res):
                    excluded.add(res)
                    continue
                if cq.group_for(res) is None:
                    missing.setdefault(res, []).append(f"{ps.name}: {format_quantity(qty)} per pod × {ps.count}")
        if not missing:
            return []
        covered = sorted({r for rg in cq.resource_groups for r in rg.covered})
        names = ", ".join(missing)
        totals = w.total_requests()
        needed = {res: totals[res] for res in missing if res in totals}
        cover = cover_resources(cq, needed)
        quota_words = ", ".join(f"{quantity(q)} {res}" for res, q in needed.items())
        excl = f" ({', '.join(sorted(excluded))} ignored via resources.excludeResourcePrefixes)" if excluded else ""
        return [
            self.finding(
                CauseSlug.RESOURCE_NOT_COVERED,
                f"requests {names}, which ClusterQueue {cq.name} does not cover",
                f"The workload requests {names}, but no resourceGroup of ClusterQueue {cq.name} lists it in "
                f"coveredResources (covered: {', '.join(covered) or 'none'}){excl}. The scheduler answers `resource "
                f"{next(iter(missing))} unavailable in ClusterQueue` on every attempt.",
                evidence=[
                    *[
                        ev(
                            "object",
                            f"{res} requested ({'; '.join(detail)})",
                            kind="Workload",
                            name=w.name,
                            namespace=w.namespace,
                            field="spec.podSets[].template.spec.containers[].resources.requests",
                        )
                        for res, detail in missing.items()
                    ],
                    ev(
                        "object",
                        f"coveredResources: {', '.join(covered) or 'none'}",
                        kind="ClusterQueue",
                        name=cq.name,
                        field="spec.resourceGroups[].coveredResources",
                        expected=f"includes {names}",
                    ),
                    *wl_ev,
                ],
                fixes=[Fix(text=f"Cover {names} in ClusterQueue {cq.name}: add it to the first "
                                      f"resourceGroup's coveredResources with a nominalQuota of {quota_words} in every "
                                      "flavor of that group (what this workload requests: size it for the nodes "
                                      "behind the flavors).",
                            patch=cover)] if cover is not None else [],
                remediation=[
                    *([] if cover is not None else [
                        f"Add {names} to a resourceGroup of ClusterQueue {cq.name} (spec.resourceGroups[]."
                        "coveredResources plus a nominalQuota in every flavor of that group), or"]),
                    f"drop the {names} request from the pod template, or",
                    f"have Kueue ignore it: add the prefix to `resources.excludeResourcePrefixes` in ConfigMap "
                    f"{cfg.namespace}/kueue-manager-config.",
                ],
                data={"resources": sorted(missing)},
            )
        ]

    def _flavors(
        self,
        snap: Snapshot,
        idx: KueueIndex,
        cq: ClusterQueueView,
        w: WorkloadView,
        wl_ev: list[Evidence],
        pm: PendingMessage | None,
    ) -> list[Finding]:
        if not collected(snap, "ResourceFlavor", None):
            return []
        out: list[Finding] = []
        for ps in w.pod_sets:
            for rg in groups_for_pod_set(cq, ps):
                excluded, usable = group_exclusions(ps, rg, idx.flavors,
                                                   flavor_tolerations=flavor_tolerations_count(snap))
                if usable or not excluded:
                    continue
                if all(x.kind == "not-found" for x in excluded):  # missing flavors: KD003 (ClusterQueue inactive)
                    continue
                per = [f"{x.flavor}: {_exclusion_text(x)}" for x in excluded]
                covered = ", ".join(r for r in rg.covered if r in ps.requests)
                msg_reasons = (
                    [
                        r.text
                        for r in pm.reasons
                        if r.kind in ("node-affinity", "untolerated-taint", "flavor-not-found")
                        and (r.pod_set in (None, ps.name))
                    ]
                    if pm is not None
                    else []
                )
                evidence = [
                    ev(
                        "derived",
                        f"flavor {x.flavor} excluded: {x.detail}",
                        kind="ResourceFlavor",
                        name=x.flavor,
                        field={
                            "not-found": "metadata.name",
                            "untolerated-taint": "spec.nodeTaints",
                            "node-affinity": "spec.nodeLabels",
                        }[x.kind],
                    )
                    for x in excluded
                ]
                evidence.append(
                    ev(
                        "object",
                        _pod_constraints(ps.spec),
                        kind="Workload",
                        name=w.name,
                        namespace=w.namespace,
                        field=f"spec.podSets[name={ps.name}].template.spec",
                    )
                )
                if msg_reasons:
                    evidence.append(
                        ev(
                            "condition",
                            f"QuotaReserved message: {'; '.join(msg_reasons)}",
                            kind="Workload",
                            name=w.name,
                            namespace=w.namespace,
                            field="status.conditions[type=QuotaReserved].message",
                        )
                    )
                fixes = []
                for x in excluded:
                    fv = idx.flavors.get(x.flavor)
                    if x.kind == ReasonKind.UNTOLERATED_TAINT and fv is not None:
                        t = next((t for t in fv.node_taints if t.get("effect") in ("NoSchedule", "NoExecute")), {})
                        fixes.append(
                            f"To use {x.flavor}: add to the pod template `tolerations: [{{key: "
                            f"{t.get('key')}, operator: Exists, effect: {t.get('effect')}}}]`."
                        )
                    elif x.kind == ReasonKind.NODE_AFFINITY and fv is not None:
                        want = ", ".join(f"{k}: {v}" for k, v in fv.node_labels.items())
                        fixes.append(
                            f"To use {x.flavor}: make the pod's nodeSelector/affinity agree with its "
                            f"nodeLabels ({want}), or drop the conflicting key."
                        )
                    elif x.kind == "not-found":
                        fixes.append(f"Create ResourceFlavor {x.flavor} or remove it from ClusterQueue {cq.name}.")
                own = _self_tolerated(ps, excluded, idx) if not flavor_tolerations_count(snap) else []
                note = ""
                if own:
                    row = behaviour("rf-tolerations-in-assignment")
                    note = (f" The flavor's own spec.tolerations tolerate the taint of {', '.join(own)}, but this "
                            f"Kueue release checks taints against the pod's tolerations only ({row.title} since "
                            f"{row.since[0]}, {', '.join(row.refs)}).")
                    evidence.append(ev("derived", f"spec.tolerations of {', '.join(own)} tolerate its nodeTaints; "
                                                  f"counted in flavor assignment only since {row.since[0]}",
                                       kind="ResourceFlavor", name=own[0], field="spec.tolerations"))
                    fixes.append(f"Or upgrade Kueue to {row.since[0]} or later, where the flavor's own tolerations "
                                 "count during flavor assignment.")
                out.append(
                    self.finding(
                        CauseSlug.NO_MATCHING_FLAVOR,
                        f"no flavor of ClusterQueue {cq.name} fits pod set {ps.name}: "
                        + ", ".join(f"{x.flavor} ({x.kind.replace('-', ' ')})" for x in excluded),
                        f"Pod set {ps.name} needs {covered} from a resource group whose flavors are all excluded "
                        f"before quota is even considered — {'; '.join(per)}. Kueue tries flavors in order and "
                        f"finds none the pods could run on.{note}",
                        evidence=[*evidence, *([] if msg_reasons else wl_ev)],
                        remediation=fixes,
                        data={"pod_set": ps.name, "flavors": {x.flavor: x.kind for x in excluded}},
                    )
                )
        return out


# --- helpers -------------------------------------------------------------------------------------------------


def _self_tolerated(ps: PodSet, excluded: list[FlavorExclusion], idx: KueueIndex) -> list[str]:
    """Flavors excluded for a taint that their own spec.tolerations tolerate: usable on releases where flavor
    tolerations count in assignment (kueue#3721)."""
    return [x.flavor for x in excluded if x.kind == ReasonKind.UNTOLERATED_TAINT
            and spec_exclusion(ps.spec, x.flavor, idx.flavors.get(x.flavor), flavor_tolerations=True) is None]


def _exclusion_text(x: FlavorExclusion) -> str:
    if x.kind == "not-found":
        return "the ResourceFlavor does not exist"
    if x.kind == ReasonKind.UNTOLERATED_TAINT:
        return f"{x.detail} (the pod has no matching toleration)"
    return f"doesn't match node affinity: {x.detail}"


def _pod_constraints(spec: dict[str, Any]) -> str:
    sel = spec.get("nodeSelector") or {}
    tols = spec.get("tolerations") or []
    aff = bool(
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    )
    tol_s = ", ".join(f"{t.get('key', '*')}:{t.get('effect', '*')}" for t in tols) or "none"
    return (
        f"nodeSelector {labels_str({str(k): str(v) for k, v in sel.items()})}, "
        f"required node affinity {'set' if aff else 'none'}, tolerations {tol_s}"
    )
