"""The cause catalog: every finding names one of these slugs.

Slugs are stable public API (JSON output, `--ignore`, `explain`). Never rename one; add new ones.

Each cause has a *layer* (submission, kueue, kubernetes) and a *tier* used by the ranking policy
(see docs/ranking.md):

* ``blocker``  – the workload can never run as submitted/configured (KEP-10852's workload-wide reasons first);
* ``root``     – a root cause that explains waiting beyond what quota and order predict;
* ``waiting``  – the normal mechanics of a queue (quota, order, preemption in progress, checks);
* ``symptom``  – an observation that needs a root cause (guarantee violation);
* ``context``  – cluster-wide facts worth knowing that do not by themselves explain the target;
* ``none``     – the workload is not pending.
"""

from __future__ import annotations

import re
from dataclasses import replace
from enum import Enum, StrEnum

from kueuediag.models import Layer
from kueuediag.records import dataclass


class CauseSlug(StrEnum):
    """The built-in cause slugs: checks name causes through these so mypy catches a misspelling.

    Plugin causes are plain strings registered at runtime (`register_cause`); `Finding.cause` is a string either
    way (a StrEnum member is one), so JSON output is unchanged.
    """

    NOT_MANAGED = "not-managed"
    LOCALQUEUE_MISSING = "localqueue-missing"
    LOCALQUEUE_STOPPED = "localqueue-stopped"
    CLUSTERQUEUE_MISSING = "clusterqueue-missing"
    CLUSTERQUEUE_INACTIVE = "clusterqueue-inactive"
    NAMESPACE_NOT_SELECTED = "namespace-not-selected"
    RESOURCE_NOT_COVERED = "resource-not-covered"
    NO_MATCHING_FLAVOR = "no-matching-flavor"
    EXCEEDS_MAX_QUOTA = "exceeds-max-quota"
    DEACTIVATED = "deactivated"
    ADMISSION_GATED = "admission-gated"
    NOT_YET_EVALUATED = "not-yet-evaluated"
    WAITING_FOR_QUOTA = "waiting-for-quota"
    QUEUED_BEHIND = "queued-behind"
    PREEMPTION_IN_PROGRESS = "preemption-in-progress"
    SLOW_PREEMPTION = "slow-preemption"
    STUCK_PREEMPTION_TARGET = "stuck-preemption-target"
    GUARANTEE_VIOLATION = "guarantee-violation"
    FAIR_SHARING_ANOMALY = "fair-sharing-anomaly"
    TOPOLOGY_NO_FIT = "topology-no-fit"
    ADMISSION_CHECK_PENDING = "admission-check-pending"
    ADMISSION_CHECK_REJECTED = "admission-check-rejected"
    PODSREADY_BACKOFF = "podsready-backoff"
    WAITING_FOR_PODSREADY = "waiting-for-podsready"
    CONTROLLER_UNHEALTHY = "controller-unhealthy"
    GATE_NOT_REMOVED = "gate-not-removed"
    FRAGMENTATION = "fragmentation"
    KUBE_UNSCHEDULABLE = "kube-unschedulable"
    ZOMBIE_PODS = "zombie-pods"
    NODE_UNHEALTHY = "node-unhealthy"
    CONFIG_CHANGE = "config-change"
    LOGGING_INSUFFICIENT = "logging-insufficient"
    KNOWN_ISSUE = "known-issue"
    NOT_PENDING = "not-pending"
    PODS_NOT_STARTING = "pods-not-starting"
    UNRECOGNISED_KUEUE_MESSAGE = "unrecognised-kueue-message"
    WORKLOAD_INVALID = "workload-invalid"
    MODEL_DISAGREEMENT = "model-disagreement"
    ADMISSION_CHECK_RETRY = "admission-check-retry"
    FOREIGN_SCHEDULING_GATE = "foreign-scheduling-gate"
    FLAVOR_ASSIGNMENT_CONFLICT = "flavor-assignment-conflict"


class Tier(str, Enum):
    BLOCKER = "blocker"
    ROOT = "root"
    WAITING = "waiting"
    SYMPTOM = "symptom"
    CONTEXT = "context"
    NONE = "none"


TIER_ORDER = {Tier.BLOCKER: 0, Tier.ROOT: 1, Tier.WAITING: 2, Tier.SYMPTOM: 3, Tier.CONTEXT: 4, Tier.NONE: 5}


class NextStep(str, Enum):
    """What the reader does when a cause has no cluster change that cures it (the box's advice)."""

    WAIT = "wait"
    """normal queueing or a controller step in progress: it resolves by itself"""
    NOTHING = "nothing"
    """nothing is wrong with queueing"""
    UPGRADE = "upgrade"
    """a Kueue bug: the cure is a release, which a snapshot cannot simulate"""
    INVESTIGATE = "investigate"
    """the evidence points at something outside the objects (the controller, a foreign controller, the model)"""
    RESUBMIT = "resubmit"
    """the job's own request must change; Kueue re-reads it only when the job is submitted again"""


@dataclass(frozen=True)
class Cause:
    slug: str
    layer: Layer
    tier: Tier
    title: str
    description: str
    remediation: str
    owner: str = ""
    """code of the one check that emits findings for this cause; other checks contribute evidence to it"""
    docs: str | None = None
    """documentation link of a plugin cause (built-in causes are documented in docs/causes.md)"""
    next_step: NextStep | None = None
    """None: the cause is cured by a change to cluster objects, so the verdict box must show a checked fix (or a
    stop-gap). Otherwise no such change exists and the box shows the next step of this kind instead."""


_S, _K, _N = Layer.SUBMISSION, Layer.KUEUE, Layer.KUBERNETES

_CATALOG: tuple[Cause, ...] = (
    # --- submission layer -------------------------------------------------------------------------------
    Cause(CauseSlug.NOT_MANAGED, _S, Tier.BLOCKER, "Kueue does not manage this job",
          "The job exists but Kueue created no Workload for it: the queue-name label is missing (and the "
          "namespace has no LocalQueue named `default`), the namespace is outside "
          "`managedJobsNamespaceSelector`, or the job's integration is not enabled in `integrations.frameworks`.",
          "Add the label `kueue.x-k8s.io/queue-name=<localqueue>` to the job, or create a LocalQueue named "
          "`default` in the namespace; check `integrations.frameworks` in the Kueue manager config."),
    Cause(CauseSlug.LOCALQUEUE_MISSING, _S, Tier.BLOCKER, "The LocalQueue does not exist",
          "The Workload names a LocalQueue (`spec.queueName`) that does not exist in its namespace. Kueue writes "
          "`LocalQueue <name> doesn't exist` and never considers the workload.",
          "Create the LocalQueue or resubmit with the right `kueue.x-k8s.io/queue-name` label "
          "(`kubectl get localqueues -n <ns>`)."),
    Cause(CauseSlug.LOCALQUEUE_STOPPED, _S, Tier.BLOCKER, "The LocalQueue is stopped or inactive",
          "The LocalQueue has `stopPolicy: Hold|HoldAndDrain` or is inactive because its ClusterQueue is missing "
          "or inactive.",
          "`kubectl patch localqueue <lq> -n <ns> --type merge -p '{\"spec\":{\"stopPolicy\":\"None\"}}'` "
          "(or `kubectl kueue resume localqueue <lq>`)."),
    Cause(CauseSlug.CLUSTERQUEUE_MISSING, _S, Tier.BLOCKER, "The ClusterQueue does not exist",
          "The LocalQueue points at a ClusterQueue (`spec.clusterQueue`) that does not exist.",
          "Create the ClusterQueue or point the LocalQueue at an existing one (LocalQueue.spec.clusterQueue is "
          "immutable: recreate the LocalQueue)."),
    Cause(CauseSlug.CLUSTERQUEUE_INACTIVE, _S, Tier.BLOCKER, "The ClusterQueue is inactive",
          "The ClusterQueue's `Active` condition is False (stopped, missing ResourceFlavors, missing or inactive "
          "AdmissionChecks, missing Topology, terminating). Every workload in it stays pending with "
          "`ClusterQueue <name> is inactive`.",
          "Fix what the ClusterQueue's Active condition names: create the missing ResourceFlavor/AdmissionCheck/"
          "Topology, or set `spec.stopPolicy: None`."),
    Cause(CauseSlug.NAMESPACE_NOT_SELECTED, _S, Tier.BLOCKER, "The namespace is not selected by the ClusterQueue",
          "The ClusterQueue's `namespaceSelector` does not match the workload's namespace (a null selector "
          "matches no namespace; `{}` matches all).",
          "Label the namespace to match the selector, or widen `spec.namespaceSelector` on the ClusterQueue."),
    Cause(CauseSlug.RESOURCE_NOT_COVERED, _S, Tier.BLOCKER, "A requested resource is not covered by the ClusterQueue",
          "The workload requests a resource that no resourceGroup of the ClusterQueue covers "
          "(`resource X unavailable in ClusterQueue`).",
          "Add the resource to a resourceGroup's `coveredResources` (with quota in each flavor), or drop the "
          "request from the pod template, or list it in `resources.excludeResourcePrefixes`."),
    Cause(CauseSlug.NO_MATCHING_FLAVOR, _S, Tier.BLOCKER, "No ResourceFlavor matches the pod's constraints",
          "Every flavor is excluded by the pod's nodeSelector/affinity or by flavor taints the pod does not "
          "tolerate, or a flavor does not exist.",
          "Align the pod's nodeSelector/affinity with a flavor's `nodeLabels`, or add tolerations for the "
          "flavor's `nodeTaints`."),
    Cause(CauseSlug.EXCEEDS_MAX_QUOTA, _S, Tier.BLOCKER, "The request is larger than the queue could ever provide",
          "The request exceeds nominal quota plus everything the ClusterQueue may borrow in every flavor it may "
          "use: it can never be admitted as is.",
          "Reduce the request (fewer pods or smaller pods), raise nominalQuota/borrowingLimit, or submit to a "
          "bigger queue."),
    Cause(CauseSlug.DEACTIVATED, _S, Tier.BLOCKER, "The Workload is deactivated",
          "`spec.active` is false: set by a user, by the requeuing limit of waitForPodsReady, by maximum execution "
          "time or by a rejected admission check.",
          "Fix the reason, then `kubectl patch workload <wl> -n <ns> --type merge -p '{\"spec\":{\"active\":true}}'`."),
    Cause(CauseSlug.ADMISSION_GATED, _S, Tier.BLOCKER, "Admission is gated by an external controller",
          "The annotation `kueue.x-k8s.io/admission-gated-by` (or preemption gates) blocks admission until the "
          "named controllers clear it.",
          "Find the controller named in the annotation; it must remove itself from the annotation."),
    # --- kueue layer ----------------------------------------------------------------------------------------
    Cause(CauseSlug.NOT_YET_EVALUATED, _K, Tier.WAITING, "Kueue has not evaluated the workload yet",
          "The Workload has no QuotaReserved condition: the scheduler has not looked at it yet. Normal for "
          "seconds; minutes point at a busy or unhealthy controller.",
          "Wait a scheduling cycle; if it lasts, check the Kueue controller (see controller-unhealthy)."),
    Cause(CauseSlug.WAITING_FOR_QUOTA, _K, Tier.WAITING, "Waiting for quota",
          "The ClusterQueue (with what it may borrow) has no unused quota for the request right now, and "
          "preemption cannot make room.",
          "Wait for running workloads to finish, lower the request, or ask for more nominal quota/borrowing."),
    Cause(CauseSlug.QUEUED_BEHIND, _K, Tier.WAITING, "Queued behind other workloads",
          "The request would fit, but workloads ahead in the ClusterQueue (higher priority or earlier) go first, "
          "or a StrictFIFO head that does not fit blocks the queue.",
          "Wait, raise the workload's priority (WorkloadPriorityClass), or switch the ClusterQueue to "
          "BestEffortFIFO if a blocked head is the problem."),
    Cause(CauseSlug.PREEMPTION_IN_PROGRESS, _K, Tier.WAITING, "Preemption in progress",
          "Kueue has chosen victims and waits for them to release quota (`Pending the preemption of N "
          "workload(s)`).",
          "Usually resolves within the victims' termination grace period."),
    Cause(CauseSlug.SLOW_PREEMPTION, _K, Tier.ROOT, "Preemption is slow: victims hold quota through long grace periods",
          "The workload heads its queue waiting for victims that take their whole termination grace period "
          "(preStop hooks, long terminationGracePeriodSeconds) to release quota; admissions trickle at that "
          "interval.",
          "Shorten terminationGracePeriodSeconds/preStop hooks, enable FastQuotaReleaseInPodIntegration "
          "(Kueue >= v0.17), or evict victims manually as a stop-gap."),
    Cause(CauseSlug.STUCK_PREEMPTION_TARGET, _K, Tier.ROOT, "A preemption victim is stuck and blocks several queues",
          "A victim (often a zombie pod past its grace period) never releases quota; heads of several "
          "ClusterQueues target it (`overlapping preemption targets`) and admissions stall across them.",
          "Force-delete the zombie pod (`kubectl delete pod <pod> -n <ns> --force --grace-period=0`), fix its node; "
          "Kueue >= v0.14.0 releases quota after the grace period."),
    Cause(CauseSlug.GUARANTEE_VIOLATION, _K, Tier.SYMPTOM,
          "Guarantee violation: fits in unused nominal quota but pending",
          "The workload would fit in its ClusterQueue's unused nominal quota, yet it stays pending. A symptom: "
          "another finding usually explains it.",
          "Follow the recipe: rule out fragmentation, check admission/preemption rates, release state, logs and "
          "controller health."),
    Cause(CauseSlug.FAIR_SHARING_ANOMALY, _K, Tier.ROOT, "Fair-sharing shares are wrong",
          "The dominant resource share Kueue reports disagrees with the recomputation (e.g. a borrowing queue at 0 "
          "on a Kueue with the rounding bug), so reclamation and ordering go wrong.",
          "Upgrade Kueue (>= v0.13.5 / v0.14.0 fixes the rounding bug); as a stop-gap lower fair-sharing weights "
          "or evict the borrowers by hand."),
    Cause(CauseSlug.TOPOLOGY_NO_FIT, _K, Tier.ROOT, "Topology-aware scheduling finds no domain that fits",
          "The TAS flavor's topology has no domain with enough free capacity for the requested level.",
          "Relax the topology request (preferred instead of required, a higher level), wait for a domain to drain, "
          "or defragment."),
    Cause(CauseSlug.ADMISSION_CHECK_PENDING, _K, Tier.WAITING, "Waiting for admission checks",
          "Quota is reserved but an admission check (e.g. ProvisioningRequest) is not Ready yet.",
          "Look at the admission check's controller and its ProvisioningRequest; see the check's message."),
    Cause(CauseSlug.ADMISSION_CHECK_REJECTED, _K, Tier.BLOCKER, "An admission check rejected the workload",
          "An admission check reported Rejected; Kueue deactivates the workload.",
          "Read the check's message, fix the cause, then reactivate the Workload."),
    Cause(CauseSlug.PODSREADY_BACKOFF, _K, Tier.WAITING, "Requeue backoff after a PodsReady timeout",
          "The workload was evicted because its pods did not become ready in time; it waits until "
          "`status.requeueState.requeueAt` before Kueue considers it again.",
          "Find why the pods did not start (image pulls, unschedulable pods); the backoff ends by itself."),
    Cause(CauseSlug.WAITING_FOR_PODSREADY, _K, Tier.WAITING, "Admission is blocked until other workloads are ready",
          "waitForPodsReady.blockAdmission holds new admissions while an admitted workload is not PodsReady.",
          "Find the admitted workload whose pods are not ready; consider blockAdmission: false."),
    Cause(CauseSlug.CONTROLLER_UNHEALTHY, _K, Tier.ROOT, "The Kueue controller is unhealthy",
          "The kueue-controller-manager is not ready, crash-looping or lost leader election: nothing is admitted.",
          "`kubectl -n kueue-system describe pod -l control-plane=controller-manager`; read its logs; check "
          "webhook and API-server health."),
    # --- kubernetes layer ---------------------------------------------------------------------------------
    Cause(CauseSlug.GATE_NOT_REMOVED, _N, Tier.ROOT, "Admitted, but Kueue has not released the pods",
          "The Workload is admitted but its pods still carry the `kueue.x-k8s.io/admission` (or topology) "
          "scheduling gate, or the job is still suspended.",
          "Check the Kueue job reconciler logs for the job; restart the controller if it is stuck."),
    Cause(CauseSlug.FRAGMENTATION, _N, Tier.ROOT, "Free capacity exists, but no node has a hole of the needed shape",
          "Quota allows the workload, but free GPUs are scattered across nodes (e.g. 1+1+4+2 free on four 8-GPU "
          "nodes cannot run an 8-GPU pod).",
          "Use topology-aware scheduling, bin-pack small jobs (MostAllocated scoring), reshape the request, or "
          "drain small workloads from a node."),
    Cause(CauseSlug.KUBE_UNSCHEDULABLE, _N, Tier.ROOT, "The Kubernetes scheduler cannot place the pods",
          "Kueue released the pods, but kube-scheduler reports them unschedulable (taints, affinity, volumes, "
          "insufficient resources).",
          "Read the FailedScheduling event (`0/N nodes are available: ...`) and fix the constraint it names."),
    # --- extra causes (added by kueuediag) ---------------------------------------------------------------
    Cause(CauseSlug.ZOMBIE_PODS, _N, Tier.CONTEXT, "Pods stuck terminating past their grace period",
          "Pods whose deletionTimestamp (plus grace) has passed still exist; their resources and, on older Kueue, "
          "their quota stay taken.",
          "`kubectl delete pod <pod> --force --grace-period=0` and fix the node/kubelet."),
    Cause(CauseSlug.NODE_UNHEALTHY, _N, Tier.CONTEXT, "Nodes in the workload's flavors are unavailable",
          "Nodes are NotReady, cordoned, or report less allocatable GPU than capacity.",
          "Repair or uncordon the nodes; check the GPU device plugin."),
    Cause(CauseSlug.CONFIG_CHANGE, _K, Tier.CONTEXT, "Queue configuration changed near the pending onset",
          "A ClusterQueue, Cohort, ResourceFlavor or the Kueue configuration changed, or the controller "
          "restarted, close to when the workload started waiting.",
          "Review the change (managedFields, generation) and roll it back if it is the trigger."),
    Cause(CauseSlug.LOGGING_INSUFFICIENT, _K, Tier.CONTEXT, "Controller logs are too quiet to decide",
          "Kueue runs at the default --zap-log-level=2, so the decisive level-3 lines (`Workload evaluated for "
          "admission`, `Preempted`) are absent.",
          "Raise the controller's log level to `--zap-log-level=5` while investigating."),
    Cause(CauseSlug.KNOWN_ISSUE, _K, Tier.ROOT, "A known upstream Kueue bug matches",
          "The Kueue version and a signature in the snapshot match a known upstream issue.",
          "Upgrade to the fixed version named in the finding."),
    Cause(CauseSlug.NOT_PENDING, Layer.NONE, Tier.NONE, "The workload is not pending",
          "The workload is admitted and running, or finished.",
          "Nothing to do for Kueue; if pods misbehave, look at the pods themselves."),
    Cause(CauseSlug.PODS_NOT_STARTING, _N, Tier.ROOT, "Kueue released the workload, but its pods do not start",
          "Kueue admitted and released the workload, but its pods never run: the job controller cannot create "
          "them (FailedCreate: ResourceQuota exceeded, admission webhook or PodSecurity rejection), or the kubelet "
          "cannot start their containers (ErrImagePull / ImagePullBackOff, CreateContainerConfigError for a "
          "missing Secret or ConfigMap). The quota stays taken; with waitForPodsReady the workload is evicted and "
          "requeued after the timeout.",
          "Read the job's FailedCreate event or the pod's container status (`kubectl describe job|pod ...`) and "
          "fix what it names: the namespace ResourceQuota, the image reference or pull credentials, the missing "
          "Secret/ConfigMap."),
    Cause("unrecognised-kueue-message", _K, Tier.ROOT, "Kueue recorded a message kueuediag does not know",
          "A condition on the Workload (or its LocalQueue/ClusterQueue) carries a message that matches no template "
          "in kueuediag's catalog of what Kueue v0.9 - v0.19 writes (docs/messages.md). It is Kueue's own account "
          "of the workload, so it is quoted verbatim and ranked above any explanation kueuediag infers without "
          "recorded evidence: a newer Kueue, a patched build, or a path the catalog misses.",
          "Read the quoted message: it is Kueue's explanation. Search it in the Kueue issues and release notes "
          "for your version, and report it to kueuediag so the catalog learns it."),
    Cause("workload-invalid", _S, Tier.BLOCKER, "Kueue recorded a validation or configuration error",
          "Kueue cannot build the workload's resource requests: it recorded a validation error (requests above "
          "limits, LimitRange violations, a namespace that does not exist) or a configuration error (a DRA "
          "DeviceClass not mapped in `resources.deviceClassMappings`, DRA used without the KueueDRAIntegration "
          "feature gate, an unsupported device request) with `QuotaReserved=False` and `Requeued=False`: Kueue "
          "will not try again until the workload or the configuration changes.",
          "Fix what the message names (the pod template's requests/limits, the LimitRange, the DRA mapping or "
          "feature gate in the Kueue configuration), then recreate the job."),
    Cause("model-disagreement", _K, Tier.SYMPTOM, "kueuediag's model and Kueue disagree",
          "kueuediag's recomputation says the workload fits in its ClusterQueue's unused nominal quota, while "
          "Kueue's recorded message says it does not, and nothing in the snapshot shows capacity changing after "
          "Kueue wrote it. Either the snapshot misses something Kueue sees (objects, usage, a version difference) "
          "or kueuediag's model is wrong; both accounts are shown.",
          "Trust Kueue's message first; compare it with the quota table in the finding. If neither explains the "
          "gap, capture a fresh snapshot (`kueuediag snapshot`) and report it."),
    Cause("admission-check-retry", _K, Tier.ROOT, "An admission check asked for a retry",
          "An admission check is in state `Retry` (for a ProvisioningRequest: the request failed or its booking "
          "expired), or Kueue evicted the workload because of a check in Retry and has not re-evaluated it after "
          "the check's backoff (`requeueAfterSeconds`, `status.requeueState.requeueAt`).",
          "Read the check's message (and its ProvisioningRequest's conditions); wait for the backoff, or fix "
          "what the check reports (capacity, quota of the node group, parameters)."),
    Cause("flavor-assignment-conflict", _K, Tier.BLOCKER, "Kueue's flavor order finds no fit, another combination does",
          "Every pod set fits some flavor, but Kueue's flavor assigner takes pod sets in order and gives each the "
          "first flavor that fits, counting what earlier pod sets took; it never revisits an earlier choice. The "
          "combination it reaches does not fit (or only by preemption), while another assignment of the same "
          "flavors fits. Kueue's message then blames quota ('insufficient quota ... previously considered podsets "
          "requests') although the quota suffices.",
          "Pin the earlier pod set to the flavor that leaves room (a nodeSelector matching that flavor's nodeLabels), "
          "reorder the pod sets so the most constrained comes first, or split the job."),
    Cause("foreign-scheduling-gate", _N, Tier.ROOT, "A scheduling gate Kueue did not add holds the pods",
          "The pods carry a `spec.schedulingGates` entry that Kueue did not add (Kueue only adds and removes its "
          "own `kueue.x-k8s.io/admission` and `kueue.x-k8s.io/topology` gates). Another controller or webhook "
          "added it and must remove it; until then the kube-scheduler ignores the pods, admitted or not.",
          "Find who added the gate (the pod's managedFields name the field manager) and have that controller "
          "release it; remove it by hand only if that controller is gone."),
)

# The one owning check per cause (a contract test checks that no other check emits a finding for it).
OWNERS: dict[CauseSlug, str] = {
    CauseSlug.NOT_MANAGED: "KD001",
    CauseSlug.LOCALQUEUE_MISSING: "KD001",
    CauseSlug.CLUSTERQUEUE_MISSING: "KD001",
    CauseSlug.LOCALQUEUE_STOPPED: "KD003",
    CauseSlug.CLUSTERQUEUE_INACTIVE: "KD003",
    CauseSlug.NAMESPACE_NOT_SELECTED: "KD004",
    CauseSlug.RESOURCE_NOT_COVERED: "KD005",
    CauseSlug.NO_MATCHING_FLAVOR: "KD005",
    CauseSlug.DEACTIVATED: "KD006",
    CauseSlug.ADMISSION_GATED: "KD006",
    CauseSlug.EXCEEDS_MAX_QUOTA: "KD102",
    CauseSlug.NOT_YET_EVALUATED: "KD102",
    CauseSlug.WAITING_FOR_QUOTA: "KD102",
    CauseSlug.QUEUED_BEHIND: "KD601",
    CauseSlug.PREEMPTION_IN_PROGRESS: "KD302",
    CauseSlug.SLOW_PREEMPTION: "KD302",
    CauseSlug.STUCK_PREEMPTION_TARGET: "KD302",
    CauseSlug.GUARANTEE_VIOLATION: "KD101",
    CauseSlug.FAIR_SHARING_ANOMALY: "KD103",
    CauseSlug.TOPOLOGY_NO_FIT: "KD201",
    CauseSlug.FRAGMENTATION: "KD201",
    CauseSlug.ADMISSION_CHECK_PENDING: "KD701",
    CauseSlug.ADMISSION_CHECK_REJECTED: "KD701",
    CauseSlug.PODSREADY_BACKOFF: "KD701",
    CauseSlug.WAITING_FOR_PODSREADY: "KD701",
    CauseSlug.CONTROLLER_UNHEALTHY: "KD901",
    CauseSlug.ZOMBIE_PODS: "KD901",
    CauseSlug.NODE_UNHEALTHY: "KD901",
    CauseSlug.CONFIG_CHANGE: "KD901",
    CauseSlug.GATE_NOT_REMOVED: "KD401",
    CauseSlug.KUBE_UNSCHEDULABLE: "KD401",
    CauseSlug.PODS_NOT_STARTING: "KD401",
    CauseSlug.LOGGING_INSUFFICIENT: "KD501",
    CauseSlug.KNOWN_ISSUE: "KD902",
    CauseSlug.NOT_PENDING: "KD002",
    CauseSlug.UNRECOGNISED_KUEUE_MESSAGE: "KD801",
    CauseSlug.WORKLOAD_INVALID: "KD801",
    CauseSlug.MODEL_DISAGREEMENT: "KD101",
    CauseSlug.ADMISSION_CHECK_RETRY: "KD701",
    CauseSlug.FOREIGN_SCHEDULING_GATE: "KD401",
    CauseSlug.FLAVOR_ASSIGNMENT_CONFLICT: "KD005",
}

# Causes no change to cluster objects cures: the verdict box shows this kind of next step instead of a fix.
_W, _I = NextStep.WAIT, NextStep.INVESTIGATE
NEXT_STEPS: dict[CauseSlug, NextStep] = {
    CauseSlug.NOT_YET_EVALUATED: _W, CauseSlug.WAITING_FOR_QUOTA: _W, CauseSlug.QUEUED_BEHIND: _W,
    CauseSlug.PREEMPTION_IN_PROGRESS: _W, CauseSlug.ADMISSION_CHECK_PENDING: _I, CauseSlug.ADMISSION_CHECK_RETRY: _I,
    CauseSlug.PODSREADY_BACKOFF: _W, CauseSlug.WAITING_FOR_PODSREADY: _I,
    CauseSlug.NOT_PENDING: NextStep.NOTHING,
    CauseSlug.KNOWN_ISSUE: NextStep.UPGRADE,
    CauseSlug.MODEL_DISAGREEMENT: _I, CauseSlug.CONTROLLER_UNHEALTHY: _I, CauseSlug.UNRECOGNISED_KUEUE_MESSAGE: _I,
    CauseSlug.GUARANTEE_VIOLATION: _I, CauseSlug.PODS_NOT_STARTING: _I, CauseSlug.CONFIG_CHANGE: _I,
    CauseSlug.NODE_UNHEALTHY: _I, CauseSlug.ADMISSION_GATED: _I, CauseSlug.FOREIGN_SCHEDULING_GATE: _I,
    CauseSlug.ADMISSION_CHECK_REJECTED: _I,
    CauseSlug.WORKLOAD_INVALID: NextStep.RESUBMIT, CauseSlug.TOPOLOGY_NO_FIT: NextStep.RESUBMIT,
    CauseSlug.FLAVOR_ASSIGNMENT_CONFLICT: NextStep.RESUBMIT, CauseSlug.NO_MATCHING_FLAVOR: NextStep.RESUBMIT,
}

CAUSES: tuple[Cause, ...] = tuple(
    replace(c, owner=OWNERS[CauseSlug(c.slug)], next_step=NEXT_STEPS.get(CauseSlug(c.slug))) for c in _CATALOG)

BY_SLUG: dict[str, Cause] = {c.slug: c for c in CAUSES}


def cause(slug: str) -> Cause:
    try:
        return BY_SLUG[slug]
    except KeyError:
        raise KeyError(f"unknown cause {slug!r}") from None


def all_causes() -> tuple[Cause, ...]:
    """Every cause known to this process: the built-in catalog, then the causes plugins registered."""
    return tuple(BY_SLUG.values())


_OwnerTables = tuple[dict[str, str], dict[str, tuple[int, ...]]]
_owner_cache: list[tuple[dict[str, Cause], int, _OwnerTables]] = []


def _owner_tables() -> _OwnerTables:
    """(slug → owning check, check → tiers of the causes it owns), worked out once per state of the catalog.

    The engine asks for both on every diagnosis. The catalog only grows (:func:`register_cause` never replaces
    or removes an entry), so the catalog dict and its size name its state."""
    if _owner_cache:
        catalog, size, tables = _owner_cache[0]
        if catalog is BY_SLUG and size == len(BY_SLUG):
            return tables
    owner = {c.slug: c.owner for c in BY_SLUG.values()}
    tiers: dict[str, list[int]] = {}
    for c in BY_SLUG.values():
        tiers.setdefault(c.owner, []).append(TIER_ORDER[c.tier])
    tables = (owner, {code: tuple(t) for code, t in tiers.items()})
    _owner_cache[:] = [(BY_SLUG, len(BY_SLUG), tables)]
    return tables


def owners() -> dict[str, str]:
    """Each known cause's owning check (slug → code). Shared: do not modify."""
    return _owner_tables()[0]


def owned_tiers() -> dict[str, tuple[int, ...]]:
    """Each check's owned causes' tiers (code → :data:`TIER_ORDER` values). Shared: do not modify."""
    return _owner_tables()[1]


_SLUG = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")


def register_cause(c: Cause) -> None:
    """Add a plugin's cause to the catalog (idempotent for the same entry).

    Raises ValueError when the slug is malformed, has no owner, or is taken by another entry (a plugin can
    never redefine a built-in cause or another plugin's).
    """
    if not _SLUG.fullmatch(c.slug):
        raise ValueError(f"cause {c.slug!r} is not a slug (lowercase words joined by '-')")
    if not c.owner:
        raise ValueError(f"cause {c.slug!r} names no owning check")
    known = BY_SLUG.get(c.slug)
    if known is not None and known != c:
        who = "a built-in cause" if known in CAUSES else f"already registered by {known.owner}"
        raise ValueError(f"cause {c.slug!r} clashes with {who}")
    BY_SLUG[c.slug] = c
