"""KD801 kueue-record: read everything Kueue recorded about the workload against the message catalog."""

from __future__ import annotations

from kueuediag.analysis.installation import kueue_version
from kueuediag.analysis.messages import Classified, catalog_versions, classify, parse_pending_message
from kueuediag.analysis.queue_route import queue_route
from kueuediag.causes import CauseSlug
from kueuediag.check import Check
from kueuediag.models import CheckResult, Confidence, Evidence, Finding, Severity, ev
from kueuediag.snapshot.k8s import Condition
from kueuediag.snapshot.kueue import WorkloadView
from kueuediag.snapshot.model import Part, Snapshot
from kueuediag.target import Target
from kueuediag.timeutil import human_duration

# what to do per catalog entry of a workload-invalid message
_INVALID_FIX: dict[str, str] = {
    "dra-deviceclass-unmapped": "Map DeviceClass {name} to a resource name in `resources.deviceClassMappings` of the "
    "Kueue configuration (ConfigMap kueue-manager-config), cover that resource in the ClusterQueue, and restart "
    "kueue-controller-manager; then recreate the job.",
    "requeued-dra-unmapped": "Map DeviceClass {name} to a resource name in `resources.deviceClassMappings` of the "
    "Kueue configuration (ConfigMap kueue-manager-config), cover that resource in the ClusterQueue, and restart "
    "kueue-controller-manager; then recreate the job.",
    "dra-gate-disabled": "Enable the KueueDRAIntegration feature gate (`--feature-gates=KueueDRAIntegration=true` "
    "on kueue-controller-manager) or drop the resource claims from the pod template.",
    "dra-claims-unsupported": "Use ResourceClaimTemplates instead of ResourceClaims in the pod template (Kueue's DRA "
    "integration does not account for pre-created claims).",
    "requeued-dra-unsupported": "Use ResourceClaimTemplates instead of ResourceClaims in the pod template (Kueue's "
    "DRA integration does not account for pre-created claims).",
    "dra-claim-template": "Create ResourceClaimTemplate {name} in the workload's namespace, or fix its name in the "
    "pod template.",
    "dra-deviceclass-get": "Create DeviceClass {name} (or fix the name the claim template requests).",
    "dra-unsupported-request": "Change the device request: Kueue's DRA integration does not support it ({name}).",
    "resources-invalid": "Fix the pod template's resources: every request must be at most its limit.",
    "limitrange-invalid": "Make the pod template's resources fit the namespace's LimitRange "
    "(`kubectl describe limitrange -n {namespace}`), or change the LimitRange.",
    "namespace-missing": "The workload's namespace no longer exists: the Workload is an orphan; delete it.",
}


class KueueRecord(Check):
    """Reads every message Kueue recorded on the workload and its queues against the catalog of Kueue's messages.

    What it detects:
        Each condition Kueue writes on the Workload (`QuotaReserved`, `Admitted`, `Evicted`, `Preempted`,
        `Requeued`, `PodsReady`, `DeactivationTarget`, `BlockedOnPreemptionGates`, Kueue's `Finished` reasons) and
        the `Active` conditions of its LocalQueue and ClusterQueue are matched against the message catalog
        (docs/messages.md: every template Kueue v0.9 - v0.19 writes, with the versions that write it). Two things
        fire: a message no catalogued template explains (`unrecognised-kueue-message`, quoted verbatim with its
        condition, reason and age), and a validation or configuration error Kueue recorded for the workload —
        requests above limits, LimitRange violations, an unmapped DRA DeviceClass, DRA without its feature gate
        (`workload-invalid`), usually with `Requeued=False`.

    Why the workload stays pending:
        An unrecognised message is Kueue's own account of why the workload waits, in words kueuediag cannot
        interpret: every inference kueuediag makes without recorded evidence ranks below it. A recorded
        validation or configuration error means Kueue cannot compute the workload's requests at all and will not
        try again until the workload or the configuration changes.

    Evidence:
        The conditions themselves (type, status, reason, message, lastTransitionTime), the catalog entry each
        message matched (template, source file, version range), and the Kueue version when the snapshot knows
        it. When nothing fires, the list of conditions read and the entries they matched is the evidence.

    How to fix:
        For an unrecognised message: read it — it is Kueue's explanation — and look it up in the Kueue release
        notes for your version. For a recorded error: fix what it names (the DRA DeviceClass mapping in
        `resources.deviceClassMappings`, the KueueDRAIntegration gate, requests and limits, the LimitRange).

    Example:
        `Kueue recorded a configuration error: DeviceClass gpu.example.com is not mapped in DRA configuration
        for podset main (Requeued=False) [workload-invalid]`
    """

    code = "KD801"
    name = "kueue-record"
    requires = (Part.WORKLOADS,)
    default_severity = Severity.MEDIUM

    def run(self, snapshot: Snapshot, target: Target) -> CheckResult:
        w = target.workload
        if w is None:
            return CheckResult.not_applicable("no Workload: Kueue recorded nothing to read")
        read = self._read(snapshot, w)
        if not read:
            return CheckResult.ruled_out(
                ev("object", "the Workload carries no condition messages", kind="Workload", name=w.name,
                   namespace=w.namespace, field="status.conditions"),
                reason="nothing recorded",
            )
        findings = [*self._invalid(snapshot, w, read), *self._unrecognised(snapshot, w, read)]
        version = kueue_version(snapshot).parsed
        seen = [
            ev("condition",
               f"{c.condition}={c.status} ({c.reason}): matched "
               + ", ".join(f"{e.id} ({e.versions}"
                           + (", not written by " + str(version) if version and e.exists_in(version) is False else "")
                           + ")" for e in c.entries),
               kind=kind, name=name, namespace=ns, field=f"status.conditions[type={c.condition.split('.')[-1]}]")
            for c, (kind, name, ns) in read if c.entries
        ]
        if findings:
            return CheckResult.fired(findings)
        return CheckResult.ruled_out(*(seen or [ev("derived", "no Kueue message to match", kind="Workload",
                                                   name=w.name, namespace=w.namespace)]),
                                     reason="every message Kueue recorded is in the catalog")

    # --- reading ------------------------------------------------------------------------------------------
    def _read(self, snap: Snapshot, w: WorkloadView) -> list[tuple[Classified, tuple[str, str, str | None]]]:
        """Every condition message on the Workload and on its queues, classified."""
        out: list[tuple[Classified, tuple[str, str, str | None]]] = []
        for cond in w.conditions.values():
            if cond.message:
                out.append((_classified(snap, cond.type, cond), ("Workload", w.name, w.namespace)))
        qr = w.cond("QuotaReserved")
        pm = parse_pending_message(qr.message) if qr is not None and qr.false and qr.message else None
        route = queue_route(snap, w, pm)
        for kind, view_conds, name, ns in (
            ("LocalQueue", route.lq.conditions if route.lq else {}, route.lq_name, w.namespace),
            ("ClusterQueue", route.cq.conditions if route.cq else {}, route.cq.name if route.cq else "", None),
        ):
            active = view_conds.get("Active")
            if active is not None and active.message:
                out.append((_classified(snap, f"{kind}.Active", active), (kind, name, ns)))
        return out

    def _age(self, snap: Snapshot, cond: Condition | None) -> str:
        if cond is None or cond.last_transition is None:
            return ""
        age = snap.age_seconds(cond.last_transition)
        return f", {human_duration(age)} ago" if age is not None else ""

    # --- workload-invalid ---------------------------------------------------------------------------------
    def _invalid(
        self, snap: Snapshot, w: WorkloadView, read: list[tuple[Classified, tuple[str, str, str | None]]]
    ) -> list[Finding]:
        hits = [
            (c, e) for c, (kind, _, _) in read if kind == "Workload" and c.condition in ("QuotaReserved", "Requeued")
            and c.status != "True" for e in c.entries if e.cause == CauseSlug.WORKLOAD_INVALID
        ]
        if not hits or w.state != "pending":
            return []
        requeued = w.cond("Requeued")
        no_retry = requeued is not None and requeued.false
        evidence: list[Evidence] = []
        fixes: list[str] = []
        for c, e in hits:
            cond = w.cond(c.condition)
            evidence.append(ev("condition",
                               f"{c.condition}={c.status} ({c.reason}){self._age(snap, cond)}: {c.message}",
                               kind="Workload", name=w.name, namespace=w.namespace,
                               field=f"status.conditions[type={c.condition}]"))
            m = e.pattern.search(c.message)
            name = (m.groupdict().get("name") if m else None) or "?"
            fix = _INVALID_FIX.get(e.id, "Fix what the message names, then recreate the job.")
            fix = fix.format(name=name, namespace=w.namespace)
            if fix not in fixes:
                fixes.append(fix)
        c0, e0 = hits[0]
        m0 = e0.pattern.search(c0.message)
        what = "configuration" if e0.kind == "dra" else "validation"
        detail = m0.group(0).rstrip("\": ") if m0 else c0.message
        retry = (
            " Kueue set Requeued=False: it will not evaluate the workload again until the workload or the "
            "configuration changes." if no_retry else ""
        )
        return [
            self.finding(
                CauseSlug.WORKLOAD_INVALID,
                f"Kueue recorded a {what} error: {detail}" + (" (Requeued=False)" if no_retry else ""),
                f"Kueue could not compute the workload's resource requests and recorded `{c0.message}` on "
                f"{c0.condition} (catalog entry {e0.id}, {e0.source}, Kueue {e0.versions}).{retry}",
                severity=Severity.HIGH,
                confidence=Confidence.HIGH,
                evidence=evidence,
                remediation=fixes,
                data={"entries": sorted({e.id for _, e in hits}), "requeued": not no_retry},
            )
        ]

    # --- unrecognised ---------------------------------------------------------------------------------------
    def _unrecognised(
        self, snap: Snapshot, w: WorkloadView, read: list[tuple[Classified, tuple[str, str, str | None]]]
    ) -> list[Finding]:
        out: list[Finding] = []
        kv = kueue_version(snap)
        versions = catalog_versions()
        span = f"{versions[0]} - {versions[-1]}"
        newer = ""
        if kv.parsed is not None and kv.parsed.line > (0, int(versions[-1].split(".")[1])):
            newer = f" The cluster runs Kueue {kv.version}, newer than the catalog ({span}): expect new wording."
        for c, (kind, name, ns) in read:
            if c.recognised:
                continue
            cond_name = c.condition.split(".")[-1]
            cond = w.cond(c.condition) if kind == "Workload" else None
            quoted = "; ".join(c.unrecognised)
            out.append(
                self.finding(
                    CauseSlug.UNRECOGNISED_KUEUE_MESSAGE,
                    f"Kueue recorded a message kueuediag does not know on {kind} {name} "
                    f"{cond_name}={c.status} ({c.reason}): {quoted}",
                    f"{kind} {name} carries {cond_name}={c.status}, reason {c.reason}{self._age(snap, cond)}, message "
                    f"`{c.message}`. No template in kueuediag's catalog of Kueue's messages ({span}) explains "
                    f"`{quoted}`. This is Kueue's own account and outranks what kueuediag infers without recorded "
                    f"evidence.{newer}",
                    severity=Severity.MEDIUM,
                    confidence=Confidence.HIGH,
                    evidence=[ev("condition", f"{cond_name}={c.status} ({c.reason}): {c.message}", kind=kind,
                                 name=name, namespace=ns, field=f"status.conditions[type={cond_name}]")],
                    remediation=[
                        "Read the quoted message: it is Kueue's explanation. Look it up in the Kueue release notes "
                        f"and issues for {kv.version or 'your version'}, and report it to kueuediag so the catalog "
                        "learns it (docs/messages.md lists what is known)."
                    ],
                    data={"condition": c.condition, "reason": c.reason, "fragments": list(c.unrecognised),
                          "kueue_version": kv.version or ""},
                )
            )
        return out


def _classified(snap: Snapshot, condition: str, cond: Condition) -> Classified:
    """`classify` of one recorded condition, once per distinct (condition, message, reason, status) in the
    snapshot: the pending workloads of a queue mostly carry the same messages, and their queues' Active
    condition is read for every one of them."""
    return snap.memo(("KD801:classified", condition, cond.message, cond.reason, cond.status),
                     lambda: classify(condition, cond.message, reason=cond.reason, status=cond.status))
