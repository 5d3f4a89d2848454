"""Field changes to Kueue queue objects, written as JSON patches against the object's own spec layout.

A remediation that says "edit the ClusterQueue" cannot be checked; the exact change can. These functions own the
layout of `spec.resourceGroups` (lists addressed by index, flavors' `resources` in the order of
`coveredResources`, as Kueue's validation requires), so every check that proposes a quota or coverage change
writes the same patch and the verifier can apply it to a snapshot copy. They return None when the object's spec
has no place for the change (no resourceGroups, the flavor or resource not listed).
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from kueuediag.models import Patch
from kueuediag.snapshot.kueue import ClusterQueueView


def quantity(value: Decimal) -> str:
    """An exact Kubernetes quantity for `value`, never rounded down (a quota one unit short would not admit):
    whole numbers as they are (bytes, GPUs, cpu cores), fractions in milli-units rounded up."""
    if value == value.to_integral_value():
        return str(int(value))
    return f"{math.ceil(value * 1000)}m"


def _groups(cq: ClusterQueueView) -> list[dict[str, Any]]:
    groups = (cq.obj.get("spec") or {}).get("resourceGroups")
    return [g for g in groups if isinstance(g, dict)] if isinstance(groups, list) else []


def cover_resources(cq: ClusterQueueView, quotas: dict[str, Decimal]) -> Patch | None:
    """Add resources to the first resourceGroup of `cq`: `coveredResources` and, in every flavor of that group, a
    `nominalQuota` (the amount given, in the same order, as Kueue's validation requires)."""
    groups = _groups(cq)
    if not groups or not quotas:
        return None
    group = groups[0]
    flavors = group.get("flavors")
    if not isinstance(group.get("coveredResources"), list) or not isinstance(flavors, list) or not flavors:
        return None
    ops: list[dict[str, Any]] = []
    for res, qty in quotas.items():
        ops.append({"op": "add", "path": "/spec/resourceGroups/0/coveredResources/-", "value": res})
        for i, flavor in enumerate(flavors):
            if not isinstance(flavor, dict) or not isinstance(flavor.get("resources"), list):
                return None
            ops.append({"op": "add", "path": f"/spec/resourceGroups/0/flavors/{i}/resources/-",
                        "value": {"name": res, "nominalQuota": quantity(qty)}})
    return Patch(kind="ClusterQueue", name=cq.name, json_ops=tuple(ops))


def set_nominal_quota(cq: ClusterQueueView, flavor: str, resource: str, quota: Decimal) -> Patch | None:
    """Set `nominalQuota` of (`flavor`, `resource`) in `cq` (a JSON patch `replace` at its index)."""
    for g, group in enumerate(_groups(cq)):
        for f, fl in enumerate(group.get("flavors") or ()):
            if not isinstance(fl, dict) or fl.get("name") != flavor:
                continue
            for r, entry in enumerate(fl.get("resources") or ()):
                if isinstance(entry, dict) and entry.get("name") == resource:
                    path = f"/spec/resourceGroups/{g}/flavors/{f}/resources/{r}/nominalQuota"
                    return Patch(kind="ClusterQueue", name=cq.name, json_ops=(
                        {"op": "replace", "path": path, "value": quantity(quota)},))
    return None
