"""KD103 fair-sharing: the weightedShare Kueue reports disagrees with the recomputed dominant resource share."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

from kueuediag.analysis.fair_sharing import (
    DRS,
    MAX_INT64,
    FairShareTree,
    FSNode,
    NodeKey,
    ShareRounding,
    fair_sharing_config,
    fair_sharing_tree,
    fmt_amount,
    fmt_fraction,
    share_rounding,
)
from kueuediag.analysis.installation import kueue_version, version_floor
from kueuediag.analysis.versions import behaviour
from kueuediag.causes import CauseSlug
from kueuediag.check import Check
from kueuediag.models import CheckResult, Confidence, Evidence, Finding, Severity, ev
from kueuediag.records import dataclass
from kueuediag.snapshot.kueue import WorkloadState
from kueuediag.snapshot.model import Part, Snapshot
from kueuediag.target import Target


@dataclass(frozen=True)
class _Anomaly:
    key: NodeKey
    drs: DRS
    reported: int
    expected: int
    """what this Kueue release should have written (precise arithmetic when the version is unknown)"""
    precise: int
    legacy: int
    zero_while_borrowing: bool
    explained_by_bug: bool


class FairSharing(Check):
    """Recomputes every ClusterQueue's and Cohort's dominant resource share and compares it with Kueue's.

    What it detects:
        With fair sharing enabled (manager ConfigMap `kueue-manager-config`, key
        `controller_manager_config.yaml`, a `fairSharing` section — `enable: true` in the v1beta1 config — or
        `status.fairSharing.weightedShare` present on the queues), the check recomputes Kueue's DRS for
        every node of every cohort tree exactly as `pkg/cache/scheduler/fair_sharing.go` does: SubtreeQuota
        (children contribute at most their lendingLimit), usage = reserved quota, borrowed = usage above
        SubtreeQuota summed per resource across flavors, lendable = what the parent could lend
        (potentialAvailable up the tree), ratio = borrowed × 1000 / lendable, the maximum over resources,
        divided by `fairSharing.weight` and rounded up (weight 0 while borrowing = MaxInt64). It fires when a
        borrowing ClusterQueue or Cohort is reported at `weightedShare: 0` — the rounding bug of Kueue up to
        v0.13.2 (issue #6577; fixed by #6617 in v0.14.0, v0.13.3 and v0.12.8, and properly by #6925 in
        v0.14.0 / #6994 in v0.13.5) — or when the reported value is far from the recomputed one
        (`tolerance_ratio`, default 0.5, and `tolerance_absolute`, default 50 per mille). The Kueue version
        comes from the snapshot manifest, the controller image tag, or `kueue_build_info`; on an affected
        version the arithmetic of that release is reproduced to confirm the 0.

    Why the workload stays pending:
        Fair sharing orders admission and picks preemption victims by share. A queue that borrows but
        shows share 0 looks like a queue within its guarantees: it is never chosen as a fair-sharing
        preemption target, so the ClusterQueue that owns the lent quota cannot reclaim its nominal quota
        (the controller logs `Workload requires preemption, but there are no candidate workloads allowed
        for preemption`), and it wins admission tournaments it should lose. The finding is about the
        target when its ClusterQueue is in the affected cohort tree and it is pending.

    Evidence:
        Per affected node: `status.fairSharing.weightedShare` (observed) against the recomputed value
        (expected), with the borrowed amount, the lendable amount and the dominant resource; the Kueue
        version and where it came from; the fairSharing configuration. `finding.data` holds the whole
        tree (borrowed, lendable, precise share, expected and reported share per node).

    How to fix:
        Upgrade Kueue to a release with the fix (v0.13.5 on the v0.13 line, v0.12.8+ for the reclamation
        part, or v0.14.0+). Until then, evict the borrowing queue's workloads by hand so the owner can
        reclaim its quota, or lower the borrower's `fairSharing.weight` so its share no longer rounds to 0.
        A disagreement on a fixed release usually means the status was captured mid-update: re-collect.

    Example:
        `ClusterQueue team-b borrows 2 nvidia.com/gpu of 2048 lendable (weighted share 0.98 → 1) but Kueue reports
        weightedShare 0 (rounding bug, Kueue v0.13.2) [fair-sharing-anomaly]`
    """

    code = "KD103"
    name = "fair-sharing"
    requires = (Part.QUEUES,)
    needs_workload = False
    default_severity = Severity.HIGH
    options = {"tolerance_ratio": 0.5, "tolerance_absolute": 50}

    def run(self, snapshot: Snapshot, target: Target) -> CheckResult:
        cfg = fair_sharing_config(snapshot)
        tree = fair_sharing_tree(snapshot)
        reported, rounding, anomalies = snapshot.memo(
            ("KD103:anomalies", self.opts["tolerance_ratio"], self.opts["tolerance_absolute"]),
            lambda: self._anomalies(snapshot, tree))
        if cfg.enabled is False and not reported:
            return CheckResult.not_applicable("fair sharing is disabled in the Kueue configuration")
        if not reported:
            hidden = snapshot.part_unavailable(Part.QUEUES)
            if hidden or cfg.enabled:
                return CheckResult.could_not_check(
                    "fair-sharing shares", hidden or "fair sharing is on, but no ClusterQueue or Cohort reports "
                    "status.fairSharing.weightedShare and no kueue_cluster_queue_weighted_share metric is in the "
                    "snapshot")
            # Kueue writes status.fairSharing only when fair sharing is on: none anywhere means it is off.
            return CheckResult.not_applicable(
                f"fair sharing is not enabled: no ClusterQueue or Cohort reports status.fairSharing ({cfg.source})")
        target_root = self._target_root(snapshot, tree, target)
        findings = []
        for root, items in sorted(anomalies.items()):
            findings.append(self._finding(snapshot, tree, root, items, rounding, root == target_root))
        return self.result(findings, ev(
            "derived", f"{len(reported)} reported weighted share(s) match the recomputation within tolerance",
            field="status.fairSharing.weightedShare"))

    # --- detection ---------------------------------------------------------------------------------------
    def _anomalies(self, snap: Snapshot, tree: FairShareTree) -> tuple[
            dict[NodeKey, FSNode], ShareRounding, dict[str, list[_Anomaly]]]:
        """The nodes reporting a share, the version's rounding, and the anomalies by cohort root: the same for
        every target, so `run` reads them once per snapshot (and tolerances)."""
        reported = {k: n for k, n in tree.nodes.items() if n.reported is not None}
        rounding = share_rounding(kueue_version(snap).parsed)
        if rounding is ShareRounding.UNKNOWN and version_floor(snap):
            rounding = share_rounding(version_floor(snap))
        anomalies: dict[str, list[_Anomaly]] = {}
        for key, node in sorted(reported.items()):
            found = self._anomaly(tree, key, node.reported or 0, rounding)
            if found is not None:
                anomalies.setdefault(tree.root_of(node).name, []).append(found)
        return reported, rounding, anomalies

    def _anomaly(self, tree: FairShareTree, key: NodeKey, reported: int,
                 rounding: ShareRounding) -> _Anomaly | None:
        drs = tree.drs(*key)
        if not drs.has_parent:
            return None
        precise = drs.status_value(ShareRounding.PRECISE)
        legacy = drs.status_value(ShareRounding.INTEGER)
        expected = drs.status_value(rounding)
        if reported == 0 and precise >= 1 and drs.borrowing:
            return _Anomaly(key, drs, reported, expected, precise, legacy, True,
                            rounding is ShareRounding.INTEGER and expected == 0)
        if reported == expected:
            return None
        if MAX_INT64 in (reported, expected):
            return _Anomaly(key, drs, reported, expected, precise, legacy, False, False)
        diff = abs(reported - expected)
        allowed = max(float(self.opts["tolerance_absolute"]),
                      float(self.opts["tolerance_ratio"]) * max(reported, expected))
        if diff > allowed:
            return _Anomaly(key, drs, reported, expected, precise, legacy, False, False)
        return None

    @staticmethod
    def _target_root(snap: Snapshot, tree: FairShareTree, target: Target) -> str | None:
        w = target.workload
        if w is None or w.state != WorkloadState.PENDING or not w.active:
            return None
        cq = target.cluster_queue(snap)
        node = tree.nodes.get(("ClusterQueue", cq or ""))
        if node is None or node.parent is None:
            return None
        return tree.root_of(node).name

    # --- the finding -------------------------------------------------------------------------------------
    def _finding(self, snap: Snapshot, tree: FairShareTree, root: str, items: list[_Anomaly],
                 rounding: ShareRounding, about_target: bool) -> Finding:
        version = kueue_version(snap)
        cfg = fair_sharing_config(snap)
        zero = [a for a in items if a.zero_while_borrowing]
        first = (zero or items)[0]
        kind, name = first.key
        d = first.drs
        res = d.dominant_resource or "?"
        vtext = version.version or "unknown version"
        if first.zero_while_borrowing:
            why = (f"rounding bug, Kueue {vtext}" if first.explained_by_bug
                   else "rounding bug signature" if rounding is ShareRounding.UNKNOWN
                   else f"not explained by Kueue {vtext}'s arithmetic")
            if d.dominant_resource is not None:
                what = (f"borrows {fmt_amount(res, d.borrowed[res])} {res} of "
                        f"{fmt_amount(res, d.lendable[res])} lendable (weighted share "
                        f"{fmt_fraction(d.weighted_share)} → {first.precise})")
            else:
                what = d.explain()
            title = f"{kind} {name} {what} but Kueue reports weightedShare 0 ({why})"
        else:
            title = (f"{kind} {name}: Kueue reports weightedShare {first.reported}, recomputed "
                     f"{first.expected} ({d.explain()})")
        more = len(items) - 1
        if more:
            title += f"; {more} more node(s) in cohort {root}"
        severity, confidence = self._grade(first, rounding, about_target)
        message = self._message(snap, root, first, items, rounding, about_target)
        evidence: list[Evidence] = []
        for a in items:
            k, n = a.key
            evidence.append(ev(
                "object", f"weightedShare {a.reported}; recomputed: {a.drs.explain()}, weight "
                f"{format(a.drs.weight.normalize(), 'f')}, precise share {fmt_fraction(a.drs.weighted_share)}",
                kind=k, name=n, field="status.fairSharing.weightedShare",
                expected=str(a.precise if a.zero_while_borrowing else a.expected)))
        floor = version_floor(snap) if version.parsed is None else None
        source = version.source + (f"; serves kueue.x-k8s.io/v1beta2, so >= {floor}" if floor else "")
        evidence.append(ev("manifest", f"Kueue {vtext} ({source}); weightedShare arithmetic: "
                           f"{rounding.value}", field="kueue version",
                           expected=f">= {behaviour('drs-precise').upgrade_to(version.parsed)}"
                           if version.parsed is not None else None))
        if cfg.enabled is not None:
            evidence.append(ev("object", cfg.source, field="fairSharing",
                               kind="ConfigMap", name="kueue-manager-config", namespace=self._cm_ns(cfg.source)))
        else:
            evidence.append(ev("derived", "fair sharing is on: status.fairSharing.weightedShare is set on "
                               f"{len([n for n in tree.nodes.values() if n.reported is not None])} queue(s)/"
                               "cohort(s)", field="status.fairSharing"))
        data = {"cohort": root, "kueue_version": version.version, "rounding": rounding.value,
                "nodes": self._table(tree, root, rounding),
                "anomalies": [{"kind": a.key[0], "name": a.key[1], "reported": a.reported,
                               "expected_this_version": a.expected, "precise": a.precise,
                               "zero_while_borrowing": a.zero_while_borrowing} for a in items]}
        return self.finding(CauseSlug.FAIR_SHARING_ANOMALY, title, message, severity=severity, confidence=confidence,
                            evidence=evidence, about_target=about_target, data=data,
                            remediation=self._remediation(version.parsed is not None, vtext, first, rounding))

    @staticmethod
    def _cm_ns(source: str) -> str | None:
        parts = source.split("/")
        return parts[1] if len(parts) > 2 and parts[0].startswith("ConfigMap") else None

    @staticmethod
    def _grade(a: _Anomaly, rounding: ShareRounding, about_target: bool) -> tuple[Severity, Confidence]:
        if a.zero_while_borrowing and a.explained_by_bug:
            sev, conf = Severity.HIGH, Confidence.HIGH
        elif a.zero_while_borrowing and rounding is ShareRounding.UNKNOWN:
            sev, conf = Severity.HIGH, Confidence.MEDIUM
        elif a.zero_while_borrowing:
            sev, conf = Severity.MEDIUM, Confidence.LOW
        else:
            sev, conf = Severity.MEDIUM, Confidence.MEDIUM
        if not about_target:
            sev = Severity(max(int(Severity.LOW), int(sev) - 1))
        return sev, conf

    def _message(self, snap: Snapshot, root: str, a: _Anomaly, items: list[_Anomaly],
                 rounding: ShareRounding, about_target: bool) -> str:
        version = kueue_version(snap)
        kind, name = a.key
        d = a.drs
        parts = []
        if a.zero_while_borrowing:
            parts.append(
                f"{kind} {name} is borrowing from cohort {root} ({d.explain()}; weight "
                f"{format(d.weight.normalize(), 'f')}), so its dominant resource share is "
                f"{fmt_fraction(d.weighted_share)} and "
                f"Kueue should report weightedShare {a.precise}. It reports 0, which means \"within its "
                "guarantees\": fair-sharing preemption never picks its workloads, so a ClusterQueue that lent "
                "it quota cannot reclaim its nominal quota, and it wins admission tournaments it should lose.")
            if a.explained_by_bug:
                parts.append(
                    f"Kueue {version.version} computes shares in integers (borrowed × 1000 / lendable, then × 1000 "
                    "/ weight in milli-units), which truncates small shares to 0: the rounding bug of issue "
                    f"#6577, fixed in {' / '.join(behaviour('drs-reclamation-floor').since)} (#6617) and properly "
                    f"in {' / '.join(behaviour('drs-precise').since)} (#6925).")
            elif rounding is ShareRounding.UNKNOWN:
                parts.append("The Kueue version is not in the snapshot; a 0 for a borrowing queue is the "
                             "signature of the integer-rounding bug of Kueue before "
                             f"{' / '.join(behaviour('drs-reclamation-floor').since)} (issue #6577).")
            else:
                which = version.version or f"(serving v1beta2, so >= {version_floor(snap)})"
                parts.append(f"Kueue {which} already has the rounding fix, so this is not the known "
                             "bug: the status may have been captured mid-update; re-collect to confirm.")
        else:
            parts.append(
                f"{kind} {name} reports weightedShare {a.reported}, but recomputing Kueue's dominant resource "
                f"share from the quotas and reservations in the snapshot gives {a.expected} ({d.explain()}). "
                "Fair-sharing admission order and preemption use the reported value.")
            if rounding is ShareRounding.INTEGER_MIN1:
                parts.append(f"Kueue {version.version} still rounds shares in integers (fixed properly in "
                             f"{' / '.join(behaviour('drs-precise').since)}, #6925), which can explain small "
                             "differences.")
        if len(items) > 1:
            others = ", ".join(f"{k} {n} ({x.reported} vs {x.expected})" for (k, n), x in
                               ((i.key, i) for i in items if i is not a))
            parts.append(f"Also affected in the same cohort tree: {others}.")
        if about_target:
            parts.append("Your workload's ClusterQueue is in this cohort tree, so the wrong shares decide "
                         "whether it is admitted or can reclaim its quota.")
        else:
            parts.append("Your workload is not in this cohort tree (or not pending); this is context.")
        return " ".join(parts)

    @staticmethod
    def _table(tree: FairShareTree, root: str, rounding: ShareRounding) -> list[dict[str, Any]]:
        rows = []
        for key in sorted(tree.members(root)):
            node = tree.nodes[key]
            d = tree.drs(*key)
            rows.append({
                "kind": key[0], "name": key[1], "parent": node.parent,
                "borrowed": dict(d.borrowed), "lendable": dict(d.lendable),
                "dominant_resource": d.dominant_resource, "weight": str(d.weight.normalize()),
                "precise_share": fmt_fraction(d.weighted_share),
                "expected": d.status_value(rounding), "reported": node.reported,
            })
        return rows

    @staticmethod
    def _remediation(known_version: bool, vtext: str, a: _Anomaly, rounding: ShareRounding) -> list[str]:
        kind, name = a.key
        precise = behaviour("drs-precise")
        target = precise.upgrade_to(vtext if known_version else None)
        steps = [
            f"Upgrade Kueue to {target} or later (the rounding fix #6925; #6617 in "
            f"{', '.join(behaviour('drs-reclamation-floor').since)} already keeps borrowing queues at a share >= 1).",
            f"Stop-gap: evict the borrowing {kind}'s workloads so the owner can reclaim its quota "
            f"(`kubectl get workloads -A -o wide | grep {name}`, then delete or deactivate the newest ones).",
        ]
        weight = FairSharing._weight_that_helps(a.drs, rounding)
        if weight is not None:
            steps.append(
                f"Stop-gap: lower {kind} {name}'s fairSharing.weight to {weight}: with this Kueue's arithmetic its "
                f"share would then be {replace(a.drs, weight=weight).status_value(rounding)} instead of 0: "
                f"`kubectl patch {kind.lower()} {name} --type merge -p "
                f"'{{\"spec\":{{\"fairSharing\":{{\"weight\":\"{weight}\"}}}}}}'`.")
        if not a.zero_while_borrowing:
            steps.append("If Kueue already has the fix, re-collect the snapshot: the status may have been "
                         "written between two scheduling cycles.")
        return steps

    @staticmethod
    def _weight_that_helps(drs: DRS, rounding: ShareRounding) -> Decimal | None:
        """The largest weight below the current one that makes this Kueue report a share above 0, or None.

        A weight patch is only suggested when recomputing the share with it (the same arithmetic the running
        Kueue uses) changes what Kueue would write: otherwise it cannot help and is not printed.
        """
        if not drs.borrowing or drs.status_value(rounding) > 0:
            return None
        for factor in ("0.5", "0.2", "0.1", "0.05", "0.01"):
            candidate = (drs.weight * Decimal(factor)).normalize()
            if candidate > 0 and replace(drs, weight=candidate).status_value(rounding) > 0:
                return candidate
        return None


__all__ = ["FairSharing"]
