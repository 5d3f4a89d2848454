"""Flavor eligibility — the one owner of "may this pod set use this ResourceFlavor?".

Recomputed from objects the way Kueue's flavor assigner does (`pkg/scheduler/flavorassigner/flavorassigner.go`
`checkFlavorForPodSets`); every check (queue configuration, quota fit, fragmentation) asks here. A flavor is
excluded when

* the ResourceFlavor object does not exist (`flavor %s not found`);
* one of the flavor's `nodeTaints` with effect NoSchedule/NoExecute is tolerated neither by the pod nor — on
  releases with version-table row ``rf-tolerations-in-assignment`` (v0.10.0+) — by the flavor's own
  `tolerations` (`untolerated taint %s in flavor %s`);
* the pod's nodeSelector / required node affinity, *restricted to the keys of the flavor's nodeLabels*, does not
  match the flavor's nodeLabels (`flavor %s doesn't match node affinity`).

Pure functions; no quota math here (that is the quota checks' job).
"""

from __future__ import annotations

from typing import Any

from kueuediag.analysis.installation import installation
from kueuediag.analysis.versions import behaviour
from kueuediag.records import dataclass
from kueuediag.snapshot.k8s import node_selector_terms_match, required_node_terms, taint_str, untolerated_taints
from kueuediag.snapshot.kueue import ClusterQueueView, FlavorView, PodSet, ResourceGroup
from kueuediag.snapshot.model import Snapshot


@dataclass(frozen=True)
class FlavorExclusion:
    flavor: str
    kind: str
    """not-found | untolerated-taint | node-affinity"""
    detail: str
    """human text: the taint, or the conflicting selector"""

    @property
    def kueue_message(self) -> str:
        """The reason in Kueue's wording (kueue-facts §2.4)."""
        if self.kind == "not-found":
            return f"flavor {self.flavor} not found"
        if self.kind == "untolerated-taint":
            return f"{self.detail} in flavor {self.flavor}"
        return f"flavor {self.flavor} doesn't match node affinity"


def flavor_tolerations_count(snap: Snapshot) -> bool:
    """Whether the installed Kueue lets a flavor's own tolerations cover its nodeTaints in flavor assignment
    (version-table row ``rf-tolerations-in-assignment``; an unknown version is taken as a current release).
    Read once per snapshot: KD003 and KD201 ask it for every pending workload of a fleet scan."""
    return snap.memo("flavor-match:rf-tolerations",
                     lambda: installation(snap).has(behaviour("rf-tolerations-in-assignment").id) is not False)


def restricted_selector_matches(pod_spec: dict[str, Any], flavor_labels: dict[str, str]) -> tuple[bool, str]:
    """Match the pod's nodeSelector and required affinity against a flavor, only on the flavor's label keys.

    A required-affinity term without any expression on those keys matches every flavor (as in Kueue).
    Returns (matches, what conflicted).
    """
    keys = set(flavor_labels)
    for key, value in (pod_spec.get("nodeSelector") or {}).items():
        if key in keys and flavor_labels.get(key) != str(value):
            return False, f"nodeSelector {key}={value} (flavor has {key}={flavor_labels.get(key)})"
    terms = required_node_terms(pod_spec)
    restricted: list[dict[str, Any]] = []
    for term in terms:
        exprs = [e for e in term.get("matchExpressions") or () if e.get("key") in keys]
        if not exprs:
            restricted = []
            break
        restricted.append({"matchExpressions": exprs})
    if restricted and not node_selector_terms_match(restricted, flavor_labels):
        shown = "; ".join(
            " and ".join(
                f"{e.get('key')} {e.get('operator')} {list(e.get('values') or [])}".rstrip(" []")
                for e in t["matchExpressions"]
            )
            for t in restricted
        )
        return False, f"required node affinity {shown}"
    return True, ""


def spec_exclusion(pod_spec: dict[str, Any], flavor_name: str, flavor: FlavorView | None, *,
                   flavor_tolerations: bool = True) -> FlavorExclusion | None:
    """Why Kueue would skip `flavor_name` for pods with `pod_spec`, or None when the flavor is usable.

    `flavor_tolerations`: whether the flavor's own tolerations count (:func:`flavor_tolerations_count`).
    """
    if flavor is None:
        return FlavorExclusion(flavor_name, "not-found", f"ResourceFlavor {flavor_name} does not exist")
    tolerations = list(pod_spec.get("tolerations") or [])
    if flavor_tolerations:
        tolerations += list(flavor.tolerations)
    bad = untolerated_taints(tolerations, flavor.node_taints)
    if bad:
        return FlavorExclusion(flavor_name, "untolerated-taint", f"untolerated taint {taint_str(bad[0])}")
    ok, why = restricted_selector_matches(pod_spec, flavor.node_labels)
    if not ok:
        return FlavorExclusion(flavor_name, "node-affinity", why)
    return None


def flavor_exclusion(pod_set: PodSet, flavor_name: str, flavor: FlavorView | None, *,
                     flavor_tolerations: bool = True) -> FlavorExclusion | None:
    """Why Kueue would skip `flavor_name` for this pod set, or None when the flavor is usable."""
    return spec_exclusion(pod_set.spec, flavor_name, flavor, flavor_tolerations=flavor_tolerations)


def groups_for_pod_set(cq: ClusterQueueView, pod_set: PodSet) -> list[ResourceGroup]:
    """The resource groups that cover at least one resource the pod set requests."""
    out = []
    for rg in cq.resource_groups:
        if any(r in rg.covered for r in pod_set.requests):
            out.append(rg)
    return out


def group_exclusions(
    pod_set: PodSet, group: ResourceGroup, flavors: dict[str, FlavorView], *, flavor_tolerations: bool = True
) -> tuple[list[FlavorExclusion], list[str]]:
    """(excluded flavors with reasons, usable flavor names) for one resource group."""
    excluded: list[FlavorExclusion] = []
    usable: list[str] = []
    for name, _ in group.flavors:
        why = flavor_exclusion(pod_set, name, flavors.get(name), flavor_tolerations=flavor_tolerations)
        if why is None:
            usable.append(name)
        else:
            excluded.append(why)
    return excluded, usable
