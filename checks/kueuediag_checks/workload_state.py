"""KD002 workload-state: is the workload pending at all?"""

from __future__ import annotations

from kueuediag.causes import CauseSlug
from kueuediag.check import Check
from kueuediag.models import CheckResult, Confidence, Finding, Severity, ev
from kueuediag.snapshot.kueue import WorkloadState as State
from kueuediag.snapshot.model import Part, Snapshot
from kueuediag.target import Target
from kueuediag.timeutil import human_duration


class WorkloadState(Check):
    """Reports when the workload is not pending: admitted (running) or finished.

    What it detects:
        A Workload whose `Admitted` condition is True (quota reserved and every admission check Ready) or
        whose `Finished` condition is True.

    Why the workload stays pending:
        It does not: Kueue's part is done. If the job still does not run, the Kubernetes layer checks
        (release state, fragmentation) say why; their findings outrank this one.

    Evidence:
        The `Admitted`/`Finished` condition with its reason and transition time, and the ClusterQueue
        from `status.admission.clusterQueue`.

    How to fix:
        Nothing to fix in Kueue. For pods that do not start, read the release-state check (KD401).

    Example:
        `workload/job-train-7c1e2 is admitted: admitted by ClusterQueue team-a 12m ago [not-pending]`
    """

    code = "KD002"
    name = "workload-state"
    requires = (Part.WORKLOADS,)
    default_severity = Severity.INFO

    def run(self, snapshot: Snapshot, target: Target) -> CheckResult | list[Finding]:
        w = target.workload
        assert w is not None
        state = w.state
        if state not in (State.ADMITTED, State.FINISHED):
            return CheckResult.ruled_out(ev(
                "condition", f"Admitted and Finished are not True: the Workload is {state}", kind="Workload",
                name=w.name, namespace=w.namespace, field="status.conditions[type=Admitted]"))
        cond = w.cond("Finished" if state == State.FINISHED else "Admitted")
        assert cond is not None
        age = snapshot.age_seconds(cond.last_transition)
        when = f" {human_duration(age)} ago" if age is not None else ""
        if state == State.FINISHED:
            title = f"finished ({cond.reason}){when}"
        else:
            title = f"admitted by ClusterQueue {w.admission_cq}{when}"
        return [self.finding(
            CauseSlug.NOT_PENDING, title,
            f"The Workload is {state}: condition {cond.type}=True, reason {cond.reason}: {cond.message}".rstrip(": "),
            confidence=Confidence.HIGH,
            evidence=[ev("condition", f"{cond.type}=True ({cond.reason})", kind="Workload", name=w.name,
                         namespace=w.namespace, field=f"status.conditions[type={cond.type}]", expected="False")],
        )]
