"""An example third-party kueuediag check with its own code prefix (XY) and its own cause.

The site this plugin was written for runs an admission controller that keeps a job's Workload gated until the
job (or its namespace) carries a `team` label, for quota chargeback. kueuediag knows nothing about that policy;
this plugin teaches it.
"""

from __future__ import annotations

from kueuediag.causes import Cause, Tier
from kueuediag.check import Check
from kueuediag.models import CheckResult, Layer, Severity, ev
from kueuediag.snapshot.k8s import meta
from kueuediag.snapshot.model import Part, Snapshot
from kueuediag.target import Target

MISSING_TEAM_LABEL = Cause(
    "missing-team-label", Layer.SUBMISSION, Tier.BLOCKER, "The job has no team label (site chargeback policy)",
    "The site's chargeback controller keeps Workloads gated until the job or its namespace carries the `team` "
    "label; without it the job is never admitted.",
    "Label the job or its namespace: `kubectl label namespace <ns> team=<team>`.",
    docs="https://example.com/kueuediag-example-plugin#missing-team-label",
)


class TeamLabel(Check):
    """Finds pending jobs that the site's chargeback policy holds because no team label names who pays.

    What it detects:
        A pending Workload whose owning job and namespace both lack the label named by the `label` option
        (default `team`).

    Why the workload stays pending:
        The site's chargeback controller gates admission until the label is present, so Kueue never admits it.

    Evidence:
        The job's and the namespace's labels.

    How to fix:
        `kubectl label namespace <ns> team=<team>` (or label the job).

    Example:
        `job/train in namespace team-a carries no team label [missing-team-label]`
    """

    code = "XY101"
    name = "team-label"
    requires = (Part.WORKLOADS,)
    default_severity = Severity.HIGH
    options = {"label": "team"}
    causes = (MISSING_TEAM_LABEL,)
    docs_url = "https://example.com/kueuediag-example-plugin#xy101"

    def run(self, snapshot: Snapshot, target: Target) -> CheckResult:
        w = target.workload
        assert w is not None
        if w.state not in ("pending", "quota-reserved"):
            return CheckResult.not_applicable(f"the workload is {w.state}: the policy only holds pending jobs")
        label = str(self.opts["label"])
        ns = snapshot.get("Namespace", w.namespace)
        job_labels = (meta(target.owner).get("labels") or {}) if target.owner is not None else {}
        ns_labels = (meta(ns).get("labels") or {}) if ns is not None else {}
        owner = f"{target.owner.get('kind')}/{meta(target.owner).get('name')}" if target.owner else "the Workload"
        if label in job_labels or label in ns_labels:
            where, value = ("job", job_labels[label]) if label in job_labels else ("namespace", ns_labels[label])
            return CheckResult.ruled_out(ev("object", f"{where} label {label}={value}", kind="Namespace",
                                            name=w.namespace, field=f"metadata.labels.{label}"))
        if ns is None:
            return CheckResult.could_not_check(f"Namespace {w.namespace}", "not in the snapshot, and the job "
                                               f"has no {label} label")
        return CheckResult.fired([self.finding(
            "missing-team-label", f"{owner} in namespace {w.namespace} carries no {label} label",
            f"Neither {owner} nor namespace {w.namespace} has the `{label}` label the chargeback policy requires.",
            evidence=[ev("object", f"labels: {', '.join(sorted(ns_labels)) or 'none'}", kind="Namespace",
                         name=w.namespace, field="metadata.labels", expected=f"{label}=<team>")],
            data={"label": label},
        )])
