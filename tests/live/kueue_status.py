"""ClusterQueue and LocalQueue status as Kueue's controller writes it, for generated clusters that lack it.

The scale benchmark's generator (bench/generate_large.py) writes ClusterQueues with conditions only; every real
ClusterQueue also carries Kueue's record of its usage (kueue-facts §3.1, §3.3): ``flavorsReservation`` (quota
held by QuotaReserved Workloads), ``flavorsUsage`` (by Admitted ones), ``borrowed`` (usage above nominal) and
the pending/reserving/admitted counts. Live ``why`` reads quota from that record, so the benchmark's test API
server serves a cluster with it filled in from the Workloads, as Kueue would (finished Workloads hold nothing;
``reclaimablePods`` are not modelled: the generator writes none).
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from kueuediag.quantity import ZERO, parse_quantity

FlavorResource = tuple[str, str]


def _conds(w: dict[str, Any]) -> dict[str, str]:
    return {str(c.get("type")): str(c.get("status")) for c in (w.get("status") or {}).get("conditions") or ()
            if isinstance(c, dict)}


def _held(w: dict[str, Any]) -> dict[FlavorResource, Decimal]:
    out: dict[FlavorResource, Decimal] = defaultdict(lambda: ZERO)
    for psa in ((w.get("status") or {}).get("admission") or {}).get("podSetAssignments") or ():
        flavors = psa.get("flavors") or {}
        for res, qty in (psa.get("resourceUsage") or {}).items():
            if flavors.get(res):
                out[(str(flavors[res]), str(res))] += parse_quantity(qty)
    return out


def _text(value: Decimal) -> str:
    """An exact quantity string (a plain number: canonical suffixes would round large byte counts)."""
    return format(value.normalize(), "f") if value != value.to_integral_value() else str(int(value))


def _usage_list(flavor_order: list[str], resources: dict[str, list[str]], used: dict[FlavorResource, Decimal],
                nominal: dict[FlavorResource, Decimal]) -> list[dict[str, Any]]:
    return [{"name": f, "resources": [{"name": r, "total": _text(used.get((f, r), ZERO)),
                                       "borrowed": _text(max(ZERO, used.get((f, r), ZERO) - nominal.get((f, r), ZERO)))}
                                      for r in resources[f]]}
            for f in flavor_order]


def with_queue_status(objects: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """A copy of `objects` where ClusterQueues and LocalQueues without Kueue's usage record get one."""
    objs = list(objects)
    lq_cq = {((o["metadata"].get("namespace")), o["metadata"]["name"]): (o.get("spec") or {}).get("clusterQueue")
             for o in objs if o.get("kind") == "LocalQueue"}
    reserved: dict[str, dict[FlavorResource, Decimal]] = defaultdict(lambda: defaultdict(lambda: ZERO))
    admitted: dict[str, dict[FlavorResource, Decimal]] = defaultdict(lambda: defaultdict(lambda: ZERO))
    counts: dict[tuple[str, Any], dict[str, int]] = defaultdict(lambda: {"pending": 0, "reserving": 0, "admitted": 0})
    for w in objs:
        if w.get("kind") != "Workload":
            continue
        conds = _conds(w)
        if conds.get("Finished") == "True":
            continue
        ns, queue = w["metadata"].get("namespace"), (w.get("spec") or {}).get("queueName")
        cq = ((w.get("status") or {}).get("admission") or {}).get("clusterQueue") or lq_cq.get((ns, queue))
        if not cq:
            continue
        keys = [("ClusterQueue", cq), ("LocalQueue", (ns, queue))]
        if conds.get("QuotaReserved") == "True":
            for fr, qty in _held(w).items():
                reserved[cq][fr] += qty
                if conds.get("Admitted") == "True":
                    admitted[cq][fr] += qty
            for k in keys:
                counts[k]["reserving"] += 1
                counts[k]["admitted"] += conds.get("Admitted") == "True"
        elif (w.get("spec") or {}).get("active", True) is not False:
            for k in keys:
                counts[k]["pending"] += 1
    out = []
    for o in objs:
        status = o.get("status") or {}
        recorded = "flavorsReservation" if o.get("kind") == "ClusterQueue" else "pendingWorkloads"
        if o.get("kind") not in ("ClusterQueue", "LocalQueue") or recorded in status:
            out.append(o)
            continue
        o = copy.deepcopy(o)
        status = o.setdefault("status", {})
        if o["kind"] == "ClusterQueue":
            name = o["metadata"]["name"]
            flavor_order: list[str] = []
            resources: dict[str, list[str]] = {}
            nominal: dict[FlavorResource, Decimal] = {}
            for rg in (o.get("spec") or {}).get("resourceGroups") or ():
                for fl in rg.get("flavors") or ():
                    flavor_order.append(str(fl["name"]))
                    resources[str(fl["name"])] = [str(r["name"]) for r in fl.get("resources") or ()]
                    for r in fl.get("resources") or ():
                        nominal[(str(fl["name"]), str(r["name"]))] = parse_quantity(r.get("nominalQuota", 0))
            status["flavorsReservation"] = _usage_list(flavor_order, resources, reserved[name], nominal)
            status["flavorsUsage"] = _usage_list(flavor_order, resources, admitted[name], nominal)
            c = counts[("ClusterQueue", name)]
        else:
            c = counts[("LocalQueue", (o["metadata"].get("namespace"), o["metadata"]["name"]))]
        status["pendingWorkloads"] = c["pending"]
        status["reservingWorkloads"] = c["reserving"]
        status["admittedWorkloads"] = c["admitted"]
        out.append(o)
    return out
