"""Ask the owning `why` check, never a second copy of it.

Health picks *candidates* cheaply (a workload in Retry, an admitted workload whose pods are gated) and lets the
check that owns the cause decide and word the finding, through the engine's isolated :func:`run_check`. A
cluster-scoped check runs once with the empty target (no workload): its findings are then cluster context.
Severity overrides from the configuration apply exactly as in `why`.
"""

from __future__ import annotations

from dataclasses import field

from kueuediag.causes import all_causes
from kueuediag.config import Settings
from kueuediag.engine import override_finding, run_configured
from kueuediag.health.catalog import Selection
from kueuediag.merge import merge_runs
from kueuediag.models import Finding, Outcome
from kueuediag.records import dataclass
from kueuediag.snapshot.kueue import WorkloadView
from kueuediag.snapshot.model import Snapshot
from kueuediag.target import Target, resolve

CLUSTER = Target(query="(cluster)", namespace=None, workload=None)
"""The empty target: cluster-scoped checks report every object they find, none about a target."""


@dataclass
class OwnerResult:
    findings: list[Finding] = field(default_factory=list)
    not_checked: str | None = None
    """why the owner could not answer (not selected, input missing, errored)"""


def target_for(snap: Snapshot, w: WorkloadView) -> Target:
    """The Target `why workload/NAME -n NS` resolves to (owner included), so causes match `why`'s."""
    return snap.memo(("health-target", w.namespace, w.name),
                     lambda: resolve(snap, f"workload/{w.name}", w.namespace))


def ask_owner(sel: Selection, settings: Settings, code: str, snap: Snapshot, target: Target,
              causes: tuple[str, ...] = ()) -> OwnerResult:
    """Run the owning check on `target`; keep the findings of `causes` (all when empty), overrides applied."""
    check = sel.owners.get(code)
    if check is None:
        return OwnerResult(not_checked=f"{code} is not selected")
    run = run_configured(check, snap, target, settings)
    if run.outcome in (Outcome.COULD_NOT_CHECK, Outcome.ERRORED):
        return OwnerResult(not_checked=f"{code} {run.outcome.value}: {run.reason}")
    kept = []
    # a contribution to a cause another check owns becomes a finding stamped with this check, as in `why`
    # when the owner is not in the run
    for f in merge_runs([run], {c.slug: c.owner for c in all_causes()}):
        if causes and f.cause not in causes:
            continue
        over = override_finding(f, settings, sel.classes)
        if over is not None:
            kept.append(over)
    return OwnerResult(findings=kept)
