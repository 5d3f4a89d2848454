"""The heads: each ClusterQueue's pending head (or every pending workload) diagnosed in the same pass.

It is `why`, literally: :func:`kueuediag.engine.diagnose` on the shared Snapshot with the Target `why
workload/NAME -n NS` resolves to, so a head's cause and headline equal `why`'s, and the analyses memoised on the
snapshot (quota tree, capacity, rates) are computed once for all heads.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from kueuediag.analysis.queue_order import pending_queue
from kueuediag.check import Check
from kueuediag.config import Settings
from kueuediag.engine import diagnose, select_checks
from kueuediag.health.model import Head, Item
from kueuediag.health.owners import target_for
from kueuediag.health.scope import Scope
from kueuediag.models import ObjectRef, Severity, Verdict
from kueuediag.snapshot.model import Snapshot

HEAD_SEVERITY = Severity.MEDIUM
"""A head whose top finding about it reaches this severity is in trouble; below it, it is waiting normally."""


def iter_heads(snap: Snapshot, scope: Scope, classes: Sequence[type[Check]], settings: Settings,
               all_pending: bool = False) -> Iterator[Head]:
    """Heads in ClusterQueue order (name), then queue position; lazily, so `-o jsonl` streams."""
    checks: list[Check] | None = None  # selected once, at the first head (checks keep nothing between runs)
    for cq in sorted(scope.cluster_queues):
        for entry in pending_queue(snap, cq):
            w = entry.workload
            if scope.has_namespace(w.namespace):
                checks = checks if checks is not None else select_checks(classes, settings)
                verdict = diagnose(snap, target_for(snap, w), classes, settings, checks=checks)
                yield Head(cluster_queue=cq, position=entry.position, namespace=w.namespace, name=w.name,
                           cause=verdict.cause, layer=verdict.layer, headline=verdict.headline, verdict=verdict)
                if not all_pending:
                    break


def head_item(head: Head, verdict: Verdict) -> Item:
    """The head's `pending-heads` item: its top finding when that is about it and serious enough."""
    ref = ObjectRef(kind="Workload", name=head.name, namespace=head.namespace)
    top = verdict.primary
    if top is not None and top.finding.about_target and top.finding.severity >= HEAD_SEVERITY:
        return Item("pending-heads", ref, top.finding, head.headline)
    return Item("pending-heads", ref, None, f"{head.cause}: {head.headline}")
