"""Parse the condition messages Kueue writes, every variant from v0.10 to v0.19 (kueue-facts §2.4).

The QuotaReserved=False message is the scheduler's own explanation. This module turns it into structured
reasons without splitting blindly on ", " (taint structs and TAS exclusion lists contain commas): each known
template is matched by its own regex.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum

from kueuediag.quantity import QuantityError, parse_quantity


class ReasonKind(StrEnum):
    """What one reason in a pending message says (one member per message pattern Kueue writes)."""

    INSUFFICIENT_UNUSED_QUOTA = "insufficient-unused-quota"
    EXCEEDS_MAX_QUOTA = "exceeds-max-quota"
    RESOURCE_UNAVAILABLE = "resource-unavailable"
    FLAVOR_NOT_FOUND = "flavor-not-found"
    UNTOLERATED_TAINT = "untolerated-taint"
    NODE_AFFINITY = "node-affinity"
    FLAVOR_MISSING_RESOURCE = "flavor-missing-resource"
    TOPOLOGY_NO_FIT = "topology-no-fit"
    TOPOLOGY_PARTIAL_FIT = "topology-partial-fit"
    TAS_CONFIG = "tas-config"
    LQ_MISSING = "lq-missing"
    LQ_STOPPED = "lq-stopped"
    LQ_INACTIVE = "lq-inactive"
    CQ_MISSING = "cq-missing"
    CQ_STOPPED = "cq-stopped"
    CQ_INACTIVE = "cq-inactive"
    NAMESPACE_MISMATCH = "namespace-mismatch"
    ADMISSION_GATED = "admission-gated"
    FAILED_CHECKS = "failed-checks"
    OVERLAPPING_TARGETS = "overlapping-targets"
    NO_LONGER_FITS = "no-longer-fits"
    PREEMPTION_GATED = "preemption-gated"
    WAITING_PODSREADY = "waiting-podsready"
    VALIDATION = "validation"
    PENDING_EVALUATION = "pending-evaluation"
    BYPASSED = "bypassed"
    DEACTIVATED = "deactivated"
    DRA = "dra"
    OTHER = "other"


@dataclass(frozen=True)
class Reason:
    """One reason from a pending message."""

    kind: ReasonKind
    """insufficient-unused-quota | exceeds-max-quota | resource-unavailable | flavor-not-found |
    untolerated-taint | node-affinity | flavor-missing-resource | topology-no-fit | topology-partial-fit |
    tas-config | namespace-mismatch | cq-inactive | cq-missing | lq-missing | lq-inactive | lq-stopped |
    cq-stopped | admission-gated | failed-checks | overlapping-targets | no-longer-fits | preemption-gated |
    waiting-podsready | validation | pending-evaluation | bypassed | other"""
    text: str
    pod_set: str | None = None
    resource: str | None = None
    flavor: str | None = None
    amount: Decimal | None = None
    """'N more needed' / the request"""
    capacity: Decimal | None = None
    """maximum capacity in exceeds-max-quota"""
    name: str | None = None
    """the queue/topology/taint/gate the reason names"""
    extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PendingMessage:
    raw: str
    reasons: tuple[Reason, ...]
    preempting: int | None = None
    """N in 'Pending the preemption of N workload(s)'"""
    preemption_failed: int | None = None

    def of(self, *kinds: ReasonKind) -> list[Reason]:
        return [r for r in self.reasons if r.kind in kinds]

    def has(self, *kinds: ReasonKind) -> bool:
        return any(r.kind in kinds for r in self.reasons)


def _q(text: str) -> Decimal | None:
    try:
        return parse_quantity(text.strip())
    except QuantityError:
        return None


_EXCL = r'[A-Za-z]+(?: "[^"]*")?: \d+(?:, [A-Za-z]+(?: "[^"]*")?: \d+)*'

_FLAVOR_REASONS: list[tuple[ReasonKind, re.Pattern[str]]] = [
    (ReasonKind.INSUFFICIENT_UNUSED_QUOTA, re.compile(
        r"insufficient unused quota (?:in cohort )?for (?P<resource>\S+) in flavor (?P<flavor>\S+?), "
        r"(?P<amount>\S+) more needed")),
    (ReasonKind.EXCEEDS_MAX_QUOTA, re.compile(
        r"insufficient quota for (?P<resource>\S+) in flavor (?P<flavor>\S+?), previously considered podsets "
        r"requests \((?P<previous>[^)]*)\) \+ current podset request \((?P<amount>[^)]*)\) > maximum capacity "
        r"\((?P<capacity>[^)]*)\)")),
    (ReasonKind.EXCEEDS_MAX_QUOTA, re.compile(
        r"insufficient quota for (?P<resource>\S+) in flavor (?P<flavor>\S+?), request > maximum capacity "
        r"\((?P<amount>\S+) > (?P<capacity>[^)]+)\)")),
    (ReasonKind.EXCEEDS_MAX_QUOTA, re.compile(
        r"insufficient quota for (?P<resource>\S+) in flavor (?P<flavor>\S+?) in ClusterQueue")),
    (ReasonKind.RESOURCE_UNAVAILABLE, re.compile(r"resource (?P<resource>\S+) unavailable in ClusterQueue")),
    (ReasonKind.FLAVOR_NOT_FOUND, re.compile(r"flavor (?P<flavor>\S+?) not found")),
    (ReasonKind.UNTOLERATED_TAINT, re.compile(
        r"untolerated taint (?P<name>\{[^}]*\}) in flavor (?P<flavor>[^\s,;.]+)")),
    (ReasonKind.NODE_AFFINITY, re.compile(r"flavor (?P<flavor>\S+?) doesn't match node affinity")),
    (ReasonKind.FLAVOR_MISSING_RESOURCE, re.compile(
        r"flavor (?P<flavor>\S+?) does not provide resource (?P<resource>\S+)")),
    (ReasonKind.TOPOLOGY_NO_FIT, re.compile(
        r"topology \"(?P<name>[^\"]+)\" doesn't allow to fit any of (?P<amount>\d+) (?P<unit>pod|slice)\(s\)"
        r"(?:\. Total nodes: (?P<total>\d+); excluded: (?P<excluded>" + _EXCL + "))?")),
    (ReasonKind.TOPOLOGY_PARTIAL_FIT, re.compile(
        r"topology \"(?P<name>[^\"]+)\" allows to fit only (?P<fit>\d+) out of (?P<amount>\d+) "
        r"(?P<unit>pod|slice)\(s\)(?:\. Total nodes: (?P<total>\d+); excluded: (?P<excluded>" + _EXCL + "))?")),
    (ReasonKind.TOPOLOGY_NO_FIT, re.compile(
        r"topology \"(?P<name>[^\"]+)\" doesn't allow to fit; (?P<fit>\d+)/(?P<amount>\d+) slice\(s\) fit on level "
        r"(?P<level>\S+)")),
    (ReasonKind.TAS_CONFIG, re.compile(
        r"(Flavor \"(?P<flavor>[^\"]+)\" (?:does not support TopologyAwareScheduling|information missing in TAS cache|"
        r"does not contain the requested level|supports only TopologyAwareScheduling)|"
        r"no requested topology level[^,;]*|"
        r"no topology domains at level[^,;]*|topology level not specified|workload requires Topology, but there is no "
        r"TAS cache information|no TAS flavor assigned|more than one TAS flavor assigned[^,;]*)")),
]

_WHOLE: list[tuple[ReasonKind, re.Pattern[str]]] = [
    (ReasonKind.LQ_MISSING, re.compile(r"^LocalQueue (?P<name>\S+) (?:doesn't exist|is terminating or missing)")),
    (ReasonKind.LQ_STOPPED, re.compile(r"^LocalQueue (?P<name>\S+) is stopped")),
    (ReasonKind.LQ_INACTIVE, re.compile(r"^LocalQueue (?P<name>\S+) is inactive")),
    (ReasonKind.CQ_MISSING, re.compile(
        r"^ClusterQueue (?P<name>\S+) (?:doesn't exist|not found|is terminating or missing)")),
    (ReasonKind.CQ_STOPPED, re.compile(r"^ClusterQueue (?P<name>\S+) is stopped")),
    (ReasonKind.CQ_INACTIVE, re.compile(r"^ClusterQueue (?P<name>\S+) is inactive")),
    (ReasonKind.NAMESPACE_MISMATCH, re.compile(r"^[Ww]orkload namespace doesn't match ClusterQueue selector")),
    (ReasonKind.NAMESPACE_MISMATCH, re.compile(r"^workload namespace \"(?P<name>[^\"]+)\" does not exist")),
    (ReasonKind.ADMISSION_GATED, re.compile(r"^Admission is gated by: (?P<name>.*)$")),
    (ReasonKind.FAILED_CHECKS, re.compile(r"^The workload has failed admission checks")),
    (ReasonKind.OVERLAPPING_TARGETS, re.compile(r"^Workload has overlapping preemption targets with another workload")),
    (ReasonKind.NO_LONGER_FITS, re.compile(r"^Workload no longer fits after processing another workload")),
    (ReasonKind.PREEMPTION_GATED, re.compile(r"^Workload requires preemption, but it's gated")),
    (ReasonKind.WAITING_PODSREADY, re.compile(r"^waiting for all admitted workloads to be in PodsReady condition")),
    (ReasonKind.VALIDATION, re.compile(
        r"^(resources validation failed|resources didn't satisfy LimitRange constraints): (?P<name>.*)")),
    (ReasonKind.PENDING_EVALUATION, re.compile(r"^(Workload is pending evaluation in the scheduling queue|"
                                      r"AdmissionGatedBy cleared, waiting for quota reservation)")),
    (ReasonKind.BYPASSED, re.compile(
        r"^Bypassed scheduling evaluation because an equivalent workload recently failed")),
    (ReasonKind.DEACTIVATED, re.compile(r"^The workload is deactivated")),
    (ReasonKind.DRA, re.compile(r"^(Workload uses DRA resources|KueueDRAIntegration feature does not support)")),
]

_PODSET = re.compile(r"couldn't assign flavors to pod set (?P<ps>[^:]+): ")
_PREEMPT = re.compile(r"\. Pending the preemption of (?P<n>\d+) workload\(s\)")
_PREEMPT_FAILED = re.compile(r"\. Preempting (?P<n>\d+) workload\(s\) failed, will retry\.")


def parse_pending_message(message: str) -> PendingMessage:
    """Structured reasons from a QuotaReserved=False (or Pending event) message."""
    raw = message or ""
    text = raw.strip()
    preempting = preempt_failed = None
    m = _PREEMPT.search(text)
    if m:
        preempting = int(m.group("n"))
        text = text[: m.start()] + text[m.end():]
    m = _PREEMPT_FAILED.search(text)
    if m:
        preempt_failed = int(m.group("n"))
        text = text[: m.start()] + text[m.end():]
    reasons: list[Reason] = []
    for kind, pattern in _WHOLE:
        wm = pattern.search(text)
        if wm:
            gd = wm.groupdict()
            reasons.append(Reason(kind=kind, text=wm.group(0), name=gd.get("name")))
    # pod-set sections: "couldn't assign flavors to pod set main: r1, r2; couldn't assign flavors to pod set w: r3"
    starts = list(_PODSET.finditer(text))
    sections: list[tuple[str | None, str]] = []
    if starts:
        for i, sm in enumerate(starts):
            end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
            sections.append((sm.group("ps").strip(), text[sm.end():end].rstrip("; ")))
    elif not reasons:
        sections.append((None, text))
    for ps, body in sections:
        found_any = False
        for kind, pattern in _FLAVOR_REASONS:
            for fm in pattern.finditer(body):
                gd = fm.groupdict()
                extra = {k: v for k, v in gd.items() if k in ("previous", "unit", "total", "excluded", "fit", "level")
                         and v is not None}
                reasons.append(Reason(
                    kind=kind, text=fm.group(0), pod_set=ps, resource=gd.get("resource"), flavor=gd.get("flavor"),
                    amount=_q(gd["amount"]) if gd.get("amount") else None,
                    capacity=_q(gd["capacity"]) if gd.get("capacity") else None,
                    name=gd.get("name"), extra=extra,
                ))
                found_any = True
        if not found_any and body:
            reasons.append(Reason(kind=ReasonKind.OTHER, text=body, pod_set=ps))
    # de-duplicate identical reasons (older exceeds-max patterns overlap)
    seen: set[tuple[str, str | None, str | None, str | None]] = set()
    unique = []
    for r in reasons:
        key = (r.kind, r.pod_set, r.flavor, r.resource)
        if key in seen and r.kind != ReasonKind.OTHER:
            continue
        seen.add(key)
        unique.append(r)
    return PendingMessage(raw=raw, reasons=tuple(unique), preempting=preempting, preemption_failed=preempt_failed)


_INACTIVE_PARTS = [
    ("stopped", re.compile(r"is stopped")),
    ("missing-flavors", re.compile(r"references missing ResourceFlavor\(s\): (?P<names>[^.]+?)(?:, references|\.$|$)")),
    ("missing-checks", re.compile(r"references missing AdmissionCheck\(s\): (?P<names>[^.]+?)(?:, references|\.$|$)")),
    ("inactive-checks", re.compile(
        r"references inactive AdmissionCheck\(s\): (?P<names>[^.]+?)(?:, references|\.$|$)")),
    ("missing-topology", re.compile(r"there is no Topology \"(?P<names>[^\"]+)\"")),
    ("terminating", re.compile(r"clusterQueue is terminating")),
]


def parse_cq_inactive_message(message: str) -> dict[str, list[str]]:
    """`Can't admit new workloads: references missing ResourceFlavor(s): a,b.` → {'missing-flavors': ['a','b']}."""
    out: dict[str, list[str]] = {}
    for kind, pattern in _INACTIVE_PARTS:
        m = pattern.search(message or "")
        if m:
            names = m.groupdict().get("names")
            out[kind] = [n.strip() for n in names.split(",")] if names else []
    return out
