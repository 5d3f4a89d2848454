"""The heads: each ClusterQueue's pending head (or every pending workload) diagnosed in the same pass.

It is `why`, literally: :func:`kueuediag.engine.diagnose` on the shared Snapshot with the Target `why
workload/NAME -n NS` resolves to, so a head's cause and headline equal `why`'s, and the analyses memoised on the
snapshot (quota tree, capacity, rates) are computed once for all heads.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from kueuediag.analysis.queue_order import QueueEntry, pending_queue
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


class QueueHeads:
    """Diagnoses the heads of one ClusterQueue at a time (the unit `health` splits among processes, so that what
    is memoised per ClusterQueue is worked out in one of them)."""

    def __init__(self, snap: Snapshot, scope: Scope, classes: Sequence[type[Check]], settings: Settings,
                 all_pending: bool) -> None:
        self.snap, self.scope, self.classes, self.settings = snap, scope, classes, settings
        self.all_pending = all_pending
        self._checks: list[Check] | None = None  # selected once, at the first head (checks keep nothing between runs)

    def entries(self, cq: str) -> list[QueueEntry]:
        """The queue entries of `cq` that are heads: the first in scope, or every one with `all_pending`."""
        inside = [e for e in pending_queue(self.snap, cq) if self.scope.has_namespace(e.workload.namespace)]
        return inside if self.all_pending else inside[:1]

    def of_queue(self, cq: str) -> Iterator[Head]:
        for entry in self.entries(cq):
            w = entry.workload
            if self._checks is None:
                self._checks = select_checks(self.classes, self.settings)
            verdict = diagnose(self.snap, target_for(self.snap, w), self.classes, self.settings, checks=self._checks)
            yield Head(cluster_queue=cq, position=entry.position, namespace=w.namespace, name=w.name,
                       cause=verdict.cause, layer=verdict.layer, headline=verdict.headline, verdict=verdict)


def head_item(head: Head, verdict: Verdict) -> Item:
    """The head's `pending-heads` item: its top finding when that is about it and serious enough."""
    ref = ObjectRef(kind="Workload", name=head.name, namespace=head.namespace)
    top = verdict.primary
    if top is not None and top.finding.about_target and top.finding.severity >= HEAD_SEVERITY:
        return Item("pending-heads", ref, top.finding, head.headline)
    return Item("pending-heads", ref, None, f"{head.cause}: {head.headline}")
