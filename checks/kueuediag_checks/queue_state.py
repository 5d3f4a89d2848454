"""KD003 queue-state: is the LocalQueue or ClusterQueue on the workload's route stopped or inactive?"""

from __future__ import annotations

import copy
import difflib
import json
from typing import Any

from kueuediag.analysis.messages import cq_inactive_parts, signal
from kueuediag.analysis.queue_route import QueueRoute, collected
from kueuediag.analysis.quota_tree import quota_tree
from kueuediag.causes import CauseSlug
from kueuediag.models import Confidence, Evidence, Finding, Severity, ev
from kueuediag.snapshot.k8s import Condition, conditions, meta
from kueuediag.snapshot.kueue import ClusterQueueView, KueueIndex, LocalQueueView, WorkloadView, kueue_index
from kueuediag.snapshot.logs import log_lines
from kueuediag.snapshot.model import Part, Snapshot
from kueuediag_checks._submission import (
    STOPPED,
    Pending,
    SubmissionCheck,
    cq_name,
    from_message,
    lq_active_evidence,
    qr_evidence,
)

_PART_ORDER = ("stopped", "terminating", "missing-flavors", "missing-checks", "inactive-checks", "missing-topology",
               "multiple-multikueue", "multikueue-per-flavor", "multikueue-with-provisioning", "tas-multikueue",
               "tas-provisioning", "tas-cohorts", "tas-preemption", "cohort-cycle")
_INACTIVE_WORDS = {
    "stopped": "is stopped",
    "terminating": "is terminating",
    "missing-flavors": "references missing ResourceFlavor(s)",
    "missing-checks": "references missing AdmissionCheck(s)",
    "inactive-checks": "references inactive AdmissionCheck(s)",
    "missing-topology": "references missing Topology",
    "multiple-multikueue": "uses several MultiKueue AdmissionChecks",
    "multikueue-per-flavor": "applies a MultiKueue AdmissionCheck per flavor",
    "multikueue-with-provisioning": "mixes MultiKueue and ProvisioningRequest AdmissionChecks",
    "tas-multikueue": "TAS is not supported with MultiKueue admission check",
    "tas-provisioning": "TAS is not supported with ProvisioningRequest admission check",
    "tas-cohorts": "TAS is not supported for cohorts",
    "tas-preemption": "TAS is not supported for preemption within cluster queue",
    "cohort-cycle": "its cohort tree has a cycle",
}


class QueueState(SubmissionCheck):
    """Finds a stopped LocalQueue or an inactive ClusterQueue on the workload's route.

    What it detects:
        A LocalQueue with `spec.stopPolicy: Hold|HoldAndDrain` or `Active=False`; a ClusterQueue that is
        inactive: stopped, terminating, referencing a missing ResourceFlavor, a missing or inactive
        AdmissionCheck, or a missing Topology, or mixing MultiKueue with ProvisioningRequest checks (each piece
        of the `Can't admit new workloads: ...` message read against the message catalog) — also recomputed
        from the objects when the ClusterQueue has no status yet. A ClusterQueue whose cohort tree has a
        `spec.parentName` cycle is inactive too although its Active condition says True: Kueue writes no
        condition on a Cohort, so the cycle is found from the Cohort objects and the cohort reconciler's log
        (`cohort has a cycle`). (Split out of the former `queue-configuration` check, KD001.)

    Why the workload stays pending:
        A stopped LocalQueue or an inactive ClusterQueue admits nothing: the workload controller writes
        `LocalQueue <name> is stopped` or `ClusterQueue <name> is inactive` and the workload never reaches the
        scheduler's quota evaluation. Nothing changes until someone resumes the queue or creates what it lacks.

    Evidence:
        LocalQueue `spec.stopPolicy` and `Active` condition; ClusterQueue `spec.stopPolicy`,
        `metadata.deletionTimestamp`, `spec.resourceGroups[].flavors`, `spec.admissionChecksStrategy`, `Active`
        condition; the ResourceFlavors, AdmissionChecks (and their `Active` conditions) and Topologies it
        references; the Cohorts' `spec.parentName` chain and the cohort reconciler's log line. When the queue
        objects are missing from the snapshot, the QuotaReserved message alone (medium confidence).

    How to fix:
        Set `stopPolicy: None` (or `kubectl kueue resume`), create the missing ResourceFlavor, AdmissionCheck or
        Topology, or fix the AdmissionCheck's controller or parameters; break a cohort cycle by pointing one
        Cohort's `spec.parentName` outside the loop.

    Example:
        `ClusterQueue gpu-pool is inactive: references missing ResourceFlavor(s): a100 [clusterqueue-inactive]`
    """

    code = "KD003"
    name = "queue-state"
    requires = ()
    reads = (Part.LOGS,)
    default_severity = Severity.HIGH

    def looked_at(self, p: Pending, route: QueueRoute) -> str:
        return (f"LocalQueue {p.w.namespace}/{route.lq_name} and ClusterQueue {cq_name(route)}: stopPolicy None, "
                "Active=True")

    def route_findings(self, snapshot: Snapshot, p: Pending, route: QueueRoute) -> list[Finding]:
        if route.state == "lq-unknown":
            return from_message(self, p, ("localqueue-stopped", "clusterqueue-inactive"), "LocalQueue")
        lq = route.lq
        if lq is None:
            return []  # the LocalQueue is missing: KD001's
        wl_ev = qr_evidence(p.w, p.qr)
        out = self._lq_stopped(lq, p.w, wl_ev)
        lq_ev = lq_active_evidence(lq)
        if route.state == "cq-unknown":
            return out + from_message(self, p, ("clusterqueue-inactive",), "ClusterQueue", lq_ev)
        if route.cq is None:
            return out
        return out + self._cq_inactive(snapshot, kueue_index(snapshot), route.cq, lq_ev, wl_ev)

    def _lq_stopped(self, lq: LocalQueueView, w: WorkloadView, wl_ev: list[Evidence]) -> list[Finding]:
        active = lq.conditions.get("Active")
        cond_stopped = (
            active is not None
            and active.false
            and active.reason not in ("ClusterQueueDoesNotExist", "ClusterQueueIsInactive")
        )
        if lq.stop_policy not in STOPPED and not cond_stopped:
            return []
        evidence = []
        if lq.stop_policy in STOPPED:
            evidence.append(
                ev(
                    "object",
                    f"spec.stopPolicy: {lq.stop_policy}",
                    kind="LocalQueue",
                    name=lq.name,
                    namespace=lq.namespace,
                    field="spec.stopPolicy",
                    expected="None",
                )
            )
        if active is not None and active.false:
            evidence.append(
                ev(
                    "condition",
                    f"Active=False ({active.reason}): {active.message}",
                    kind="LocalQueue",
                    name=lq.name,
                    namespace=lq.namespace,
                    field="status.conditions[type=Active]",
                )
            )
        what = (
            f"stopPolicy {lq.stop_policy}"
            if lq.stop_policy in STOPPED
            else f"Active=False, {active.reason if active else '?'}"
        )
        drain = " and evicts workloads it already admitted" if lq.stop_policy == "HoldAndDrain" else ""
        return [
            self.finding(
                CauseSlug.LOCALQUEUE_STOPPED,
                f"LocalQueue {lq.name} is stopped ({what})",
                f"LocalQueue {lq.namespace}/{lq.name} is stopped ({what}): it accepts no new admissions{drain}, so the "
                f"workload is held (`LocalQueue {lq.name} is stopped`) until someone resumes the queue.",
                evidence=[*evidence, *wl_ev],
                remediation=[
                    f"`kubectl patch localqueue {lq.name} -n {lq.namespace} --type merge -p "
                    '\'{"spec":{"stopPolicy":"None"}}\'` (or `kubectl kueue resume localqueue '
                    f"{lq.name} -n {lq.namespace}`) — check with the queue owner why it was stopped."
                ],
                data={"stop_policy": lq.stop_policy},
            )
        ]

    def _cq_inactive(
        self, snap: Snapshot, idx: KueueIndex, cq: ClusterQueueView, lq_ev: list[Evidence], wl_ev: list[Evidence]
    ) -> list[Finding]:
        active = cq.conditions.get("Active")
        from_status = cq_inactive_parts(active.message) if active is not None and active.false else {}
        parts: dict[str, list[str]] = {}
        evidence: list[Evidence] = []
        fixes: list[str] = []
        if cq.stop_policy in STOPPED:
            parts["stopped"] = [cq.stop_policy]
            evidence.append(
                ev(
                    "object",
                    f"spec.stopPolicy: {cq.stop_policy}",
                    kind="ClusterQueue",
                    name=cq.name,
                    field="spec.stopPolicy",
                    expected="None",
                )
            )
            fixes.append(
                f"`kubectl patch clusterqueue {cq.name} --type merge -p "
                '\'{"spec":{"stopPolicy":"None"}}\'` (or `kubectl kueue resume clusterqueue '
                f"{cq.name}`)."
            )
        if meta(cq.obj).get("deletionTimestamp"):
            parts["terminating"] = []
            evidence.append(
                ev(
                    "object",
                    f"deletionTimestamp: {meta(cq.obj).get('deletionTimestamp')}",
                    kind="ClusterQueue",
                    name=cq.name,
                    field="metadata.deletionTimestamp",
                )
            )
            fixes.append(
                "The ClusterQueue is being deleted (finalizer kueue.x-k8s.io/resource-in-use waits for "
                "its workloads); recreate it or move the LocalQueue to another ClusterQueue."
            )
        if collected(snap, "ResourceFlavor", None):
            missing = [f for f in dict.fromkeys(cq.flavor_names()) if f not in idx.flavors]
            if missing:
                parts["missing-flavors"] = missing
                evidence.append(
                    ev(
                        "derived",
                        f"ResourceFlavor(s) {', '.join(missing)} referenced in spec.resourceGroups do not exist",
                        kind="ClusterQueue",
                        name=cq.name,
                        field="spec.resourceGroups[].flavors[].name",
                        expected=f"existing flavors: {', '.join(sorted(idx.flavors)) or 'none'}",
                    )
                )
                fixes += _did_you_mean_flavor(cq, missing, sorted(idx.flavors))
                fixes.append(
                    f"Create ResourceFlavor(s) {', '.join(missing)} (an empty spec matches every node; add "
                    f"spec.nodeLabels for the nodes each one stands for): `{_create_flavors(cq, missing)}`, or "
                    f"remove them from ClusterQueue {cq.name} spec.resourceGroups."
                )
            tas_missing = [
                (f, fv.topology_name)
                for f in dict.fromkeys(cq.flavor_names())
                if (fv := idx.flavors.get(f)) is not None
                and fv.topology_name
                and fv.topology_name not in idx.topologies
                and collected(snap, "Topology", None)
            ]
            if tas_missing:
                parts["missing-topology"] = [t for _, t in tas_missing if t]
                for f, t in tas_missing:
                    evidence.append(
                        ev(
                            "derived",
                            f"TAS flavor {f} has spec.topologyName {t}, but Topology {t} does not exist",
                            kind="ResourceFlavor",
                            name=f,
                            field="spec.topologyName",
                        )
                    )
                fixes.append(
                    f"Create Topology {tas_missing[0][1]} (spec.levels[].nodeLabel) or fix "
                    f"spec.topologyName of ResourceFlavor {tas_missing[0][0]}."
                )
        checks = [name for name, _ in cq.admission_checks]
        if checks and collected(snap, "AdmissionCheck", None):
            missing_ac = [c for c in checks if c not in idx.admission_checks]
            inactive_ac = []
            for c in checks:
                obj = idx.admission_checks.get(c)
                if obj is not None:
                    cond = _conds(obj).get("Active")
                    if cond is not None and cond.false:
                        inactive_ac.append(c)
                        evidence.append(
                            ev(
                                "condition",
                                f"Active=False ({cond.reason}): {cond.message}",
                                kind="AdmissionCheck",
                                name=c,
                                field="status.conditions[type=Active]",
                            )
                        )
            if missing_ac:
                parts["missing-checks"] = missing_ac
                evidence.append(
                    ev(
                        "derived",
                        f"AdmissionCheck(s) {', '.join(missing_ac)} do not exist",
                        kind="ClusterQueue",
                        name=cq.name,
                        field="spec.admissionChecksStrategy.admissionChecks",
                    )
                )
                fixes.append(
                    f"Create AdmissionCheck(s) {', '.join(missing_ac)} or remove them from ClusterQueue "
                    f"{cq.name} spec.admissionChecksStrategy."
                )
            if inactive_ac:
                parts["inactive-checks"] = inactive_ac
                fixes.append(
                    f"Fix AdmissionCheck(s) {', '.join(inactive_ac)}: their controller or parameters "
                    "(e.g. the ProvisioningRequestConfig) are not ready."
                )
        cycle = quota_tree(snap).cycle_above(cq.name)
        if cycle:
            parts["cohort-cycle"] = cycle
            evidence += _cycle_evidence(snap, idx, cq, cycle)
            first_in_loop = cycle[-1]
            fixes.append(
                f"Break the cohort cycle {' → '.join(cycle)}: point spec.parentName of Cohort {first_in_loop} at a "
                f"Cohort outside the loop, or drop it (`kubectl patch cohort {first_in_loop} --type json -p "
                "'[{\"op\":\"remove\",\"path\":\"/spec/parentName\"}]'`). Kueue admits again in the whole tree "
                "once no Cohort is its own ancestor."
            )
        recomputed = bool(parts)
        status_false = active is not None and active.false
        if not recomputed and not status_false:
            return []
        for k, v in from_status.items():
            parts.setdefault(k, v)
        parts = {k: parts[k] for k in _PART_ORDER if k in parts}
        if status_false and active is not None:
            evidence.insert(
                0,
                ev(
                    "condition",
                    f"Active=False ({active.reason}): {active.message}",
                    kind="ClusterQueue",
                    name=cq.name,
                    field="status.conditions[type=Active]",
                    expected="True",
                ),
            )
        if status_false and not recomputed:
            fixes.append(f"Fix what the Active condition names: `kubectl describe clusterqueue {cq.name}`.")
        if active is None:
            status_note = (
                " The ClusterQueue has no status yet (Kueue has not reconciled it, or the controller is "
                "down), so this was recomputed from the objects."
            )
            confidence = Confidence.HIGH
        elif active.false:
            status_note = ""
            confidence = Confidence.HIGH
        elif cycle and set(parts) == {"cohort-cycle"}:
            status_note = (
                " Its Active condition says True: Kueue writes no condition for a cohort cycle (a Cohort has no "
                "conditions at all); its scheduler skips every ClusterQueue under the cycle and its cohort "
                f"reconciler logs `{signal('cohort-cycle').error}`."
            )
            confidence = Confidence.HIGH
        else:
            status_note = (
                " Its Active condition still says True: the status may be stale, or the snapshot lacks "
                "the referenced objects."
            )
            confidence = Confidence.LOW
        summary = "; ".join(
            f"{_INACTIVE_WORDS.get(k, k)}{': ' + ', '.join(v) if v and k != 'stopped' else ''}"
            + (f" ({v[0]})" if k == "stopped" and v else "")
            for k, v in parts.items()
            if k != "cohort-cycle"
        )
        if "cohort-cycle" in parts:
            summary = "; ".join(x for x in (summary, f"its cohort tree has a cycle ({' → '.join(cycle)})") if x)
        reason = active.reason if status_false and active is not None else _first_reason(parts)
        return [
            self.finding(
                CauseSlug.CLUSTERQUEUE_INACTIVE,
                f"ClusterQueue {cq.name} is inactive: {summary}",
                f"ClusterQueue {cq.name} cannot admit new workloads ({reason}): {summary}. Every workload in it stays "
                f"pending with `ClusterQueue {cq.name} is inactive`.{status_note}",
                confidence=confidence,
                evidence=[*evidence, *lq_ev, *wl_ev],
                remediation=fixes,
                data={"reason": reason, "parts": sorted(parts), "missing_flavors": parts.get("missing-flavors", [])},
            )
        ]


# --- helpers -------------------------------------------------------------------------------------------------


def _conds(obj: dict[str, Any]) -> dict[str, Condition]:
    return conditions(obj)


def _first_reason(parts: dict[str, list[str]]) -> str:
    order = [
        ("stopped", "Stopped"),
        ("terminating", "Terminating"),
        ("missing-flavors", "FlavorNotFound"),
        ("missing-checks", "AdmissionCheckNotFound"),
        ("inactive-checks", "AdmissionCheckInactive"),
        ("missing-topology", "TopologyNotFound"),
        ("cohort-cycle", "HasCycle"),
    ]
    return next((r for k, r in order if k in parts), "Unknown")


def _create_flavors(cq: ClusterQueueView, names: list[str]) -> str:
    """One `kubectl create` for the missing flavors (a List when there are several), in the ClusterQueue's API
    version, in the one-line form the fix verifier parses and applies to a snapshot copy."""
    api = str(cq.obj.get("apiVersion") or "kueue.x-k8s.io/v1beta1")
    items: list[dict[str, Any]] = [{"apiVersion": api, "kind": "ResourceFlavor", "metadata": {"name": n}}
                                   for n in names]
    body = items[0] if len(items) == 1 else {"apiVersion": "v1", "kind": "List", "items": items}
    return f"echo '{json.dumps(body, separators=(',', ':'))}' | kubectl create -f -"


def _did_you_mean_flavor(cq: ClusterQueueView, missing: list[str], existing: list[str]) -> list[str]:
    """A missing flavor one or two edits (or a shared prefix) away from an existing one is most likely a typo:
    name it and give the patch that renames it in the ClusterQueue (the whole resourceGroups list, since a merge
    patch replaces lists)."""
    renames = {}
    for name in missing:
        close = difflib.get_close_matches(name, existing, n=1, cutoff=0.75)
        prefixed = [e for e in existing if e.startswith(name) or name.startswith(e)]
        if close or len(prefixed) == 1:
            renames[name] = (close or prefixed)[0]
    if not renames:
        return []
    groups = copy.deepcopy((cq.obj.get("spec") or {}).get("resourceGroups") or [])
    for group in groups:
        for flavor in group.get("flavors") or []:
            if flavor.get("name") in renames:
                flavor["name"] = renames[flavor["name"]]
    body = json.dumps({"spec": {"resourceGroups": groups}}, separators=(",", ":"))
    pairs = ", ".join(f"{old} → did you mean {new}?" for old, new in renames.items())
    return [f"ResourceFlavor {pairs} Rename it in ClusterQueue {cq.name}: "
            f"`kubectl patch clusterqueue {cq.name} --type merge -p '{body}'`"]


def _cycle_evidence(snap: Snapshot, idx: KueueIndex, cq: ClusterQueueView, cycle: list[str]) -> list[Evidence]:
    """The parentName links that close the loop, and the cohort reconciler's log line when the snapshot has it."""
    out = [ev("object", f"spec.cohortName: {cycle[0]}", kind="ClusterQueue", name=cq.name, field="spec.cohortName")]
    for name in cycle[:-1]:
        co = idx.cohorts.get(name)
        parent = co.parent if co is not None else None
        out.append(ev("object", f"spec.parentName: {parent}" if co is not None and co.obj is not None
                      else "no Cohort object (implicit cohort)", kind="Cohort", name=name, field="spec.parentName",
                      expected="a chain that ends at a root Cohort"))
    sig = signal("cohort-cycle")
    for ln in log_lines(snap):
        if sig.log in ln.msg and sig.error in f"{ln.error} {ln.raw}":
            out.append(ev("log", f"{ln.file}:{ln.lineno}: {ln.msg}: {ln.error}".rstrip(": "), kind="Cohort",
                          name=str(ln.fields.get("cohort") or ln.fields.get("name") or cycle[-1]),
                          field="cohort-reconciler"))
            break
    return out
