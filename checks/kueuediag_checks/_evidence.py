"""Evidence built the same way by several checks: one spelling of a quoted Workload condition."""

from __future__ import annotations

from kueuediag.models import Evidence, ev
from kueuediag.snapshot.k8s import Condition
from kueuediag.snapshot.kueue import WorkloadView


def condition_ev(w: WorkloadView, c: Condition) -> Evidence:
    """`TYPE=STATUS (REASON): MESSAGE` of one of the Workload's conditions, quoted as evidence (no trailing
    `: ` when Kueue wrote no message)."""
    return ev(
        "condition",
        f"{c.type}={c.status} ({c.reason}): {c.message}".rstrip(": "),
        kind="Workload",
        name=w.name,
        namespace=w.namespace,
        field=f"status.conditions[type={c.type}]",
    )
