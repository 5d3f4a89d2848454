"""Collect a RawSnapshot from a live cluster: scoped to one target (`why`) or cluster-wide (`snapshot`).

What is read, and why (issue 4):

* the target's namespace: Namespace, LocalQueues, Workloads, Jobs, Pods, Events (and the owners of its
  Workloads, e.g. a JobSet, fetched by GET through discovery);
* all cluster-scoped Kueue objects (ClusterQueues, Cohorts, ResourceFlavors, Topologies, priority classes,
  AdmissionChecks): small, and the cohort tree can only be computed from all of them;
* the Workloads of every ClusterQueue in the target's cohort tree (one paginated cluster-wide LIST, filtered);
* the nodes selected by the tree's flavors (one LIST per distinct nodeLabels selector) and the pods bound to
  them (ONE paginated LIST with ``fieldSelector=spec.nodeName!=,...``, filtered client-side);
* the visibility API's pending positions for the ClusterQueue and the LocalQueue;
* the Kueue controller pods and Deployments, and the last ``--since`` of the manager's logs (read first, on a thread
  of their own, while the objects are read: the largest single answer, and a slow one through the kubelet);
* Prometheus range queries when ``--prometheus-url`` is given.

A 403 on any part is recorded in the manifest ``errors`` ({what, error}) and the rest continues; the
engine then skips the checks that need that part. The ``what`` text names the part with the words
:meth:`Snapshot.part_unavailable` looks for, and deliberately avoids those words for failures that do not
make a whole part unusable (e.g. other namespaces' Workloads for a researcher with namespace-only read).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from kueuediag.errors import ClusterUnavailable, InputError
from kueuediag.live.kube import (
    KUEUE_GROUP,
    VISIBILITY_GROUP,
    DeadlineExceeded,
    Forbidden,
    GaveUp,
    KubeClient,
    KubeError,
    NotFound,
    in_background,
    resource_path,
)
from kueuediag.live.options import LiveOptions
from kueuediag.live.sanitize import sanitize_log, sanitize_metrics, sanitize_owned_object
from kueuediag.quantity import parse_quantity
from kueuediag.snapshot.held import DROPPED_KINDS, Held
from kueuediag.snapshot.reader import FORMAT, RawSnapshot

if TYPE_CHECKING:
    from kueuediag.analysis.messages import PendingMessage

T = TypeVar("T")

KUEUE_CLUSTER_KINDS = ("ClusterQueue", "Cohort", "ResourceFlavor", "Topology", "WorkloadPriorityClass",
                       "AdmissionCheck", "ProvisioningRequestConfig", "MultiKueueConfig", "MultiKueueCluster")
KUEUE_PLURALS = {
    "ClusterQueue": "clusterqueues", "Cohort": "cohorts", "ResourceFlavor": "resourceflavors",
    "Topology": "topologies", "WorkloadPriorityClass": "workloadpriorityclasses",
    "AdmissionCheck": "admissionchecks", "ProvisioningRequestConfig": "provisioningrequestconfigs",
    "MultiKueueConfig": "multikueueconfigs", "MultiKueueCluster": "multikueueclusters",
    "LocalQueue": "localqueues", "Workload": "workloads",
}
MAX_LOG_BYTES = 32 * 1024 * 1024
MAX_NAMESPACE_LISTS = 10
"""live `why` lists the Workloads of at most this many further namespaces one by one; beyond that, one paginated
cluster-wide LIST costs fewer requests"""
COHORT_WHAT = "cohort-wide usage (all namespaces)"
"""names no snapshot part: a researcher who may read only their namespace still gets a diagnosis"""
COHORT_NEED = "list {}.kueue.x-k8s.io across all namespaces"
MAX_VISIBILITY_QUEUES = 200
"""`snapshot` asks the visibility API about at most this many queues (one request each)."""


class Collector:
    """Accumulates objects, metrics, logs and per-part errors from one client."""

    def __init__(self, client: KubeClient, options: LiveOptions) -> None:
        self.client = client
        self.options = options
        self.objects: dict[tuple[str, str | None, str], dict[str, Any]] = {}
        self.errors: list[dict[str, str]] = []
        self.notes: list[str] = []
        self.metrics: dict[str, str] = {}
        self.logs: dict[str, str] = {}
        self.out_of_time = False
        self.unreachable: str | None = None
        self.kueue_version_api = "v1beta2"
        self.kueue_resources: dict[str, dict[str, Any]] = {}
        self.kueue_image_version: str | None = None
        self.cohort_complete = False
        """every Workload of the target's cohort tree was read (all namespaces)"""
        self.workload_namespaces: set[str] = set()
        """otherwise: the namespaces whose Workloads were all read (the manifest's `namespaces`)"""
        self.scope: dict[str, Any] | None = None
        self._logs_ahead: list[tuple[str, str, Future[str]]] = []
        """(snapshot path, the permission it needs, the log being read) for each manager's log"""
        self.started = time.monotonic()
        self.captured_at = datetime.now(UTC).replace(microsecond=0)

    # --- bookkeeping ------------------------------------------------------------------------------------
    def add(self, objs: Iterable[dict[str, Any]]) -> None:
        for obj in objs:
            meta = obj.get("metadata") or {}
            if not obj.get("kind") or not meta.get("name"):
                continue
            if obj.get("kind") == "Secret":
                continue
            key = (str(obj["kind"]), meta.get("namespace"), str(meta["name"]))
            self.objects[key] = sanitize_owned_object(obj)  # freshly decoded: ours to sanitize in place

    def error(self, what: str, error: str) -> None:
        entry = {"what": what, "error": error}
        if entry not in self.errors:
            self.errors.append(entry)

    def attempt(self, what: str, need: str, fn: Callable[[], T], *, soft: bool = False) -> T | None:
        """Run one read; record 403/timeouts/errors under `what` and return None instead of raising.

        `soft` failures (extras that do not make a snapshot part unusable) go to manifest notes.
        """
        report = self.note if soft else self.error
        if self.out_of_time:
            report(what, "not collected: --timeout reached")
            return None
        if self.unreachable:
            report(what, "not collected: the Kubernetes API stopped answering")
            return None
        return self._run(what, need, fn, soft=soft)

    def _run(self, what: str, need: str, fn: Callable[[], T], *, soft: bool = False) -> T | None:
        """`fn()`, its failure recorded under `what` (see `attempt`, which runs it only while time is left and the
        API answers)."""
        report = self.note if soft else self.error
        try:
            return fn()
        except ClusterUnavailable as exc:  # the API went away mid-way: keep what we have
            self.unreachable = str(exc)
            report(what, f"not collected: {exc}")
        except Forbidden:
            report(what, forbidden(need))
        except NotFound as exc:
            self.note(what, f"not found ({exc.path})")
        except DeadlineExceeded:
            self.out_of_time = True
            report(what, "not collected: --timeout reached")
        except GaveUp as exc:
            report(what, f"not collected: HTTP {exc.status}, {exc.message}")
        except KubeError as exc:
            if exc.status == 0:
                report(what, f"not collected: {exc.message}")
            else:
                report(what, f"HTTP {exc.status}{': ' + exc.message if exc.message else ''}")
        return None

    def note(self, what: str, error: str) -> None:
        self.notes.append(f"{what}: {error}")

    def lst(self, what: str, need: str, path: str, soft: bool = False, **kw: Any) -> list[dict[str, Any]] | None:
        """LIST into the collection, each page sanitized while the next one is fetched (a LIST that fails
        mid-way keeps its first pages; the error marks the part, as for a LIST that failed at once)."""
        self.options.say(f"listing {what}")
        return self.attempt(what, need, lambda: self.client.list_items(path, on_page=self.add, **kw), soft=soft)

    def _get_add(self, path: str, kind: str, api_version: str) -> None:
        self.add([_with_kind(self.client.get(path), kind, api_version)])

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [o for (k, _, _), o in self.objects.items() if k == kind]

    # --- discovery -------------------------------------------------------------------------------------
    def discover(self) -> None:
        self.options.say("discovering the Kueue API")
        try:
            self.kueue_version_api = self.client.kueue_version()
        except DeadlineExceeded:
            raise ClusterUnavailable("--timeout reached before the Kueue API could be discovered") from None
        except Forbidden:
            raise ClusterUnavailable("forbidden: cannot read the API discovery document /apis/kueue.x-k8s.io "
                                     "(your credentials need at least discovery access)") from None
        except KubeError as exc:
            raise ClusterUnavailable(f"Kueue API discovery failed: {exc}") from None
        resources = self.attempt("Kueue API discovery", "get /apis/kueue.x-k8s.io",
                                 lambda: self.client.resources(KUEUE_GROUP, self.kueue_version_api))
        self.kueue_resources = resources or {k: {"name": p} for k, p in KUEUE_PLURALS.items()}

    def kueue_path(self, kind: str, namespace: str | None = None, name: str | None = None) -> str | None:
        res = self.kueue_resources.get(kind)
        if res is None:
            return None
        return resource_path(KUEUE_GROUP, self.kueue_version_api, str(res.get("name") or KUEUE_PLURALS[kind]),
                             namespace, name)

    def api_version(self) -> str:
        return f"{KUEUE_GROUP}/{self.kueue_version_api}"

    # --- building blocks -------------------------------------------------------------------------------
    def kueue_cluster_objects(self) -> None:
        for kind in KUEUE_CLUSTER_KINDS:
            path = self.kueue_path(kind)
            if path is None:
                continue
            plural = KUEUE_PLURALS[kind]
            what = f"{plural} (list)"
            if kind == "WorkloadPriorityClass":  # never name a snapshot part ("workload") for this one
                what = "Kueue priority classes (list)"
            elif kind == "Topology":  # "topology" contains "log": do not mark the logs part unavailable
                what = "Kueue TAS level definitions (list)"
            elif kind in ("Cohort", "Topology", "WorkloadPriorityClass", "AdmissionCheck",
                        "ProvisioningRequestConfig", "MultiKueueConfig", "MultiKueueCluster", "ResourceFlavor"):
                what = f"Kueue {plural} (list)"
            self.lst(what, f"list {plural}.kueue.x-k8s.io", path, kind=kind, api_version=self.api_version())
        self.lst("Kubernetes priority classes (list)", "list priorityclasses.scheduling.k8s.io",
                 "/apis/scheduling.k8s.io/v1/priorityclasses", kind="PriorityClass",
                 api_version="scheduling.k8s.io/v1")

    def namespace_objects(self, ns: str) -> None:
        self.attempt("namespaces (get)", "get namespaces",
                     lambda: self.add([_with_kind(self.client.get(resource_path("", "v1", "namespaces", None, ns)),
                                                  "Namespace", "v1")]))
        lq = self.kueue_path("LocalQueue", ns)
        if lq:
            self.lst("localqueues (list)", f"list localqueues.kueue.x-k8s.io in namespace {ns}", lq,
                     kind="LocalQueue", api_version=self.api_version())
        wl = self.kueue_path("Workload", ns)
        if wl:
            self.lst("workloads (list)", f"list workloads.kueue.x-k8s.io in namespace {ns}", wl,
                     kind="Workload", api_version=self.api_version())
        self.lst("jobs (list)", f"list jobs.batch in namespace {ns}",
                 resource_path("batch", "v1", "jobs", ns), kind="Job", api_version="batch/v1")
        self.lst("pods (list)", f"list pods in namespace {ns}", resource_path("", "v1", "pods", ns),
                 kind="Pod", api_version="v1")
        self.lst("events (list)", f"list events in namespace {ns}", resource_path("", "v1", "events", ns),
                 kind="Event", api_version="v1")

    def workload_owners(self, namespaces: set[str] | None = None) -> None:
        """GET the owners of Workloads that are not Jobs/Pods (JobSet, RayJob, ...), via discovery."""
        have = {(k, ns, n) for (k, ns, n) in self.objects}
        wanted: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for w in self.of_kind("Workload"):
            ns = (w.get("metadata") or {}).get("namespace")
            if namespaces is not None and ns not in namespaces:
                continue
            for ref in (w.get("metadata") or {}).get("ownerReferences") or ():
                kind, api, name = ref.get("kind"), ref.get("apiVersion"), ref.get("name")
                if not (kind and api and name and ns) or (kind, ns, name) in have:
                    continue
                if kind in DROPPED_KINDS:  # an owner kueuediag never reads: note it, keep collecting the rest
                    self.note(f"owner {kind} {ns}/{name}", "not read: kueuediag never reads Secrets")
                    continue
                wanted.setdefault((str(api), str(kind)), []).append((str(ns), str(name)))
        plurals: dict[str, dict[str, dict[str, Any]]] = {}
        for (api, kind), refs in sorted(wanted.items()):
            group, _, version = api.rpartition("/")
            if api not in plurals:
                found = self.attempt(f"job owners ({kind} discovery)", f"get /apis/{api}",
                                     partial(self.client.resources, group, version), soft=True)
                plurals[api] = found or {}
            res = plurals[api].get(kind)
            if not res:
                continue
            if namespaces is None or len(refs) > 10:  # many owners: one paginated LIST, not one GET each
                listed = self.attempt(f"job owners ({kind} list)", f"list {res['name']}.{group}",
                                      partial(self.client.list_items, resource_path(group, version, str(res["name"])),
                                              kind=kind, api_version=api), soft=True)
                want = set(refs)
                self.add(o for o in listed or () if _nsname(o) in want)
                continue
            for ns, name in refs:
                path = resource_path(group, version, str(res["name"]), ns, name)
                self.attempt(f"owner {kind} {ns}/{name} (get)", f"get {res['name']}.{group or 'core'}",
                             partial(self._get_add, path, kind, api), soft=True)

    def tree_workloads(self, target_cqs: set[str], tree_cqs: set[str], namespace: str,
                       targets: list[dict[str, Any]]) -> None:
        """The Workloads `why` needs from the target's cohort tree, beyond the target's namespace (issue 11).

        Kueue's own record of each ClusterQueue's usage (``status.flavorsReservation``, with ``borrowed``) gives
        the quota numbers of the whole tree, so Workloads are read only where they name holders: the namespaces
        that submit to the target's ClusterQueue (its own holders, its queue order, preemption within it) and,
        for a flavor the target's pending message names that its ClusterQueue holds none of, the namespaces of
        the ClusterQueues that hold it (the cohort's holders, which `why` names then). The manifest then lists
        the namespaces read (``namespaces``), so the quota tree takes usage from status. When a ClusterQueue of
        the tree has no usage record (not readable, or not written), every Workload of the tree is read, as
        when the target waits for the preemption of victims (they may be in any ClusterQueue of the tree) and
        when more than :data:`MAX_NAMESPACE_LISTS` namespaces would be (one paginated LIST costs less then).
        """
        lq_path, wl_path = self.kueue_path("LocalQueue"), self.kueue_path("Workload")
        if not (lq_path and wl_path) or not tree_cqs:
            return
        self.options.say("listing the LocalQueues of the cohort's ClusterQueues")
        lqs = self.attempt(COHORT_WHAT, COHORT_NEED.format("localqueues"), partial(
            self.client.list_items, lq_path, kind="LocalQueue", api_version=self.api_version()))
        if lqs is None:
            return
        lq_cq = {_nsname(q): (q.get("spec") or {}).get("clusterQueue") for q in lqs}
        self.add(q for q in lqs if lq_cq.get(_nsname(q)) in tree_cqs)
        by_name = {str((o.get("metadata") or {}).get("name")): o for o in self.of_kind("ClusterQueue")}
        if not all(_usage_record(by_name.get(cq)) is not None for cq in tree_cqs) or _awaits_preemption(targets):
            self.cluster_workloads(tree_cqs, lq_cq)
            return
        needed = set(target_cqs) | _cohort_holder_queues(target_cqs, tree_cqs, targets, by_name)
        spaces = sorted({str(ns) for (ns, _), cq in lq_cq.items() if cq in needed and ns} - {namespace})
        if len(spaces) > MAX_NAMESPACE_LISTS:
            self.cluster_workloads(tree_cqs, lq_cq)
            return
        for ns in spaces:
            path = self.kueue_path("Workload", ns)
            got = self.attempt(f"quota holders in namespace {ns} (list)",
                               f"list workloads.kueue.x-k8s.io in namespace {ns}",
                               partial(self.client.list_items, str(path), kind="Workload",
                                       api_version=self.api_version()))
            if got is not None:
                self.add(got)
                self.workload_namespaces.add(ns)

    def cluster_workloads(self, cq_names: set[str], lq_cq: dict[tuple[Any, Any], Any]) -> None:
        """Every Workload of the given ClusterQueues across all namespaces: one paginated LIST."""
        wl_path = self.kueue_path("Workload")
        if not wl_path:
            return
        self.options.say("listing Workloads of the cohort's ClusterQueues")
        wls = self.attempt(COHORT_WHAT, COHORT_NEED.format("workloads"), partial(
            self.client.list_items, wl_path, kind="Workload", api_version=self.api_version()))
        if wls is None:
            return
        self.add(w for w in wls if _workload_cq(w, lq_cq) in cq_names)
        self.cohort_complete = True

    def nodes_and_bound_pods(self, flavor_names: set[str] | None) -> None:
        """Nodes selected by the flavors (all nodes when None) and the non-terminal pods bound to them."""
        selectors: set[str] = set()
        everything = flavor_names is None
        flavors = {(f.get("metadata") or {}).get("name"): f for f in self.of_kind("ResourceFlavor")}
        for name in sorted(flavor_names or ()):
            f = flavors.get(name)
            labels = ((f or {}).get("spec") or {}).get("nodeLabels") or {}
            if not labels:
                everything = True
                break
            selectors.add(",".join(f"{k}={v}" for k, v in sorted(labels.items())))
        node_path = resource_path("", "v1", "nodes")
        got_nodes = False
        if everything:
            got_nodes = self.lst("nodes (list)", "list nodes", node_path, kind="Node", api_version="v1") is not None
        else:
            for sel in sorted(selectors):
                if self.lst("nodes (list)", "list nodes", node_path, label_selector=sel, kind="Node",
                            api_version="v1") is not None:
                    got_nodes = True
        if not got_nodes:
            return
        node_names = {n for (k, _, n) in self.objects if k == "Node"}
        if not node_names:
            return
        self.options.say(f"listing pods bound to {len(node_names)} nodes")
        pods = self.attempt("pods bound to the flavors' machines (list, all namespaces)",
                            "list pods across all namespaces",
                            lambda: self.client.list_items(
                                resource_path("", "v1", "pods"),
                                field_selector="spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed",
                                kind="Pod", api_version="v1"))
        if pods is not None:
            self.add(p for p in pods if (p.get("spec") or {}).get("nodeName") in node_names)

    def cluster_scoped_events(self, kind: str, names: Iterable[str]) -> None:
        for name in sorted(set(names))[:20]:
            sel = f"involvedObject.kind={kind},involvedObject.name={name}"
            self.lst(f"events of {kind} {name} (list, all namespaces)", "list events across all namespaces",
                     resource_path("", "v1", "events"), soft=True, field_selector=sel, kind="Event",
                     api_version="v1")

    def visibility(self, cluster_queues: Iterable[str], local_queues: Iterable[tuple[str, str]]) -> None:
        what = "visibility API (pending positions)"
        versions = self.attempt(what, "get /apis/visibility.kueue.x-k8s.io",
                                lambda: self.client.group_versions(VISIBILITY_GROUP))
        if versions is None:
            return
        if not versions:
            self.notes.append("visibility API (visibility.kueue.x-k8s.io) is not served: no pending positions")
            return
        version = "v1beta2" if "v1beta2" in versions else versions[0]
        api = f"{VISIBILITY_GROUP}/{version}"
        for cq in sorted(set(cluster_queues))[:MAX_VISIBILITY_QUEUES]:
            path = f"/apis/{api}/clusterqueues/{cq}/pendingworkloads"
            doc = self.attempt(what, "get clusterqueues/pendingworkloads.visibility.kueue.x-k8s.io",
                               partial(self.client.get, path, [("limit", "1000")]))
            if doc is not None:
                self.add([_summary(doc, api, cq, None, "ClusterQueue")])
        for ns, lq in sorted(set(local_queues))[:MAX_VISIBILITY_QUEUES]:
            path = f"/apis/{api}/namespaces/{ns}/localqueues/{lq}/pendingworkloads"
            doc = self.attempt(what, f"get localqueues/pendingworkloads.visibility.kueue.x-k8s.io in namespace {ns}",
                               partial(self.client.get, path, [("limit", "1000")]))
            if doc is not None:
                self.add([_summary(doc, api, lq, ns, "LocalQueue")])

    def controller(self) -> None:
        """The Kueue controller's pods and Deployment, and its managers' logs read on a thread of their own while the
        collection goes on (`wait_for_logs` takes them): a manager's log is the largest single answer of a
        collection (up to 32 MiB, through the kubelet on a real cluster), and it travels beside the object LISTs
        instead of after them."""
        ns = self.options.kueue_namespace
        self.options.say(f"reading the Kueue controller in {ns}")
        pods = self.lst("controller status (list)", f"list pods in namespace {ns}",
                        resource_path("", "v1", "pods", ns), kind="Pod", api_version="v1")
        self.lst("controller status (list)", f"list deployments.apps in namespace {ns}",
                 resource_path("apps", "v1", "deployments", ns), kind="Deployment", api_version="apps/v1")
        for dep in self.of_kind("Deployment"):
            for c in ((((dep.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or ()):
                tag = _image_version(str(c.get("image") or ""))
                if tag and "kueue" in str(c.get("image")):
                    self.kueue_image_version = self.kueue_image_version or tag
        if not pods:
            if pods is not None:
                self.notes.append(f"no pods in {ns}: is Kueue installed there? (use --kueue-namespace)")
            return
        managers = [p for p in pods if _is_manager(p)] or [p for p in pods if _phase(p) == "Running"]
        since = max(1, int(self.options.since.total_seconds()))
        for pod in managers[:5]:
            pname = (pod.get("metadata") or {}).get("name") or ""
            containers = ((pod.get("spec") or {}).get("containers") or [])
            names = [str(c.get("name")) for c in containers]
            container = "manager" if "manager" in names else (names[0] if names else None)
            for c in containers:
                tag = _image_version(str(c.get("image") or ""))
                if tag and c.get("name") == container:
                    self.kueue_image_version = self.kueue_image_version or tag
            if container is None:
                continue
            path = resource_path("", "v1", "pods", ns, pname) + "/log"
            q = [("container", container), ("sinceSeconds", str(since))]
            self._logs_ahead.append((f"logs/{ns}/{pname}/{container}.log", f"get pods/log in namespace {ns}",
                                     in_background(partial(self._read_log, path, q), "kueuediag-log")))

    def _read_log(self, path: str, query: list[tuple[str, str]]) -> str:
        return sanitize_log(self.client.get_text(path, query, limit_bytes=MAX_LOG_BYTES))

    def wait_for_logs(self) -> None:
        """The controller logs `controller` started reading, each kept or its failure recorded."""
        for rel, need, reading in self._logs_ahead:
            text = self._run("Kueue manager logs", need, reading.result)
            if text is not None:
                self.logs[rel] = text
        self._logs_ahead.clear()

    # --- result ----------------------------------------------------------------------------------------
    def raw(self, namespaces: list[str] | None) -> RawSnapshot:
        self.wait_for_logs()
        manifest: dict[str, Any] = {
            "format": FORMAT,
            "capturedAt": self.captured_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "cluster": self.client.cluster,
            "kueueVersion": self.kueue_image_version,
            "kueueApiVersion": self.api_version(),
            "errors": list(self.errors),
            "partial": bool(self.errors),
            "collector": {
                "tool": "kueuediag",
                "requests": self.client.stats.requests,
                "bytes": self.client.stats.bytes,
                "wireBytes": self.client.stats.wire,
                "retries": self.client.stats.retries,
                "seconds": round(time.monotonic() - self.started, 2),
            },
        }
        if namespaces is not None:
            manifest["namespaces"] = sorted(namespaces)
        if self.scope is not None:
            manifest["scope"] = self.scope
        if self.notes:
            manifest["notes"] = list(dict.fromkeys(self.notes))
        objs: list[dict[str, Any] | Held] = [self.objects[k] for k in _sorted_keys(self.objects)]
        return RawSnapshot(source=f"live:{self.client.cluster or 'cluster'}", manifest=manifest, objects=objs,
                           metrics=dict(self.metrics), logs=dict(self.logs))


# --- public entry points -----------------------------------------------------------------------------------
def make_client(options: LiveOptions) -> KubeClient:
    client = KubeClient.from_kubeconfig(options.kubeconfig, options.context, impersonate_user=options.as_user,
                                        impersonate_groups=options.as_groups, timeout=options.timeout,
                                        request_timeout=options.request_timeout)
    client.deadline = min(client.deadline, options.started + options.timeout)  # both time.monotonic()
    return client


def collect(target: str, namespace: str | None, options: LiveOptions,
            client: KubeClient | None = None) -> RawSnapshot:
    """Collect what diagnosing `target` needs (see the module docstring). Raises ClusterUnavailable
    (incl. KueueNotInstalled) only when nothing useful can be read at all."""
    client = client or make_client(options)
    c = Collector(client, options)
    c.discover()
    c.controller()  # its log travels while the objects are read
    ns = namespace or options.namespace or client.default_namespace or "default"
    c.namespace_objects(ns)
    c.workload_owners({ns})
    c.kueue_cluster_objects()

    # The target's ClusterQueue(s): resolved from the namespace's objects (no CQ list needed).
    targets = _target_workloads(c, target, ns)
    lq_cq = {_nsname(q): (q.get("spec") or {}).get("clusterQueue") for q in c.of_kind("LocalQueue")}
    cqs: set[str] = set()
    lqs: set[tuple[str, str]] = set()
    for w in targets:
        cq = _workload_cq(w, lq_cq)
        if cq:
            cqs.add(cq)
        qn = (w.get("spec") or {}).get("queueName")
        if qn:
            lqs.add((ns, str(qn)))
    if not targets:  # unknown target: keep the scope to the namespace's queues
        cqs = {str(v) for v in lq_cq.values() if v}
        lqs = {(str(k[0]), str(k[1])) for k in lq_cq}
    _fetch_missing_cluster_queues(c, cqs)

    tree_cqs = _cohort_tree_cluster_queues(c, cqs)
    c.workload_namespaces.add(ns)
    c.tree_workloads(cqs, tree_cqs, ns, targets)
    flavors = _flavors_of(c, tree_cqs)
    c.nodes_and_bound_pods(flavors)
    c.cluster_scoped_events("ClusterQueue", cqs)
    c.visibility(cqs, lqs)
    _metrics(c, options)
    c.wait_for_logs()
    for rec in client.log:
        c.options.verbose_line(f"  {rec.method} {rec.path} → {rec.status or 'ERR'} {rec.bytes}B {rec.seconds}s")
    c.options.verbose_line(f"kueuediag: {client.stats.summary()}")
    c.scope = {"target": target, "namespace": ns, "clusterQueues": sorted(tree_cqs)}
    # With every Workload of the cohort tree in hand, quota can be recomputed from Workloads exactly as for a
    # cluster-wide snapshot; otherwise say which namespaces were read, so quota comes from ClusterQueue status.
    return c.raw(None if c.cohort_complete else sorted(c.workload_namespaces))


def collect_cluster(namespaces: list[str] | None, since: timedelta | None, options: LiveOptions,
                    client: KubeClient | None = None) -> RawSnapshot:
    """Cluster-wide Kueue state for `kueuediag snapshot` (namespaces=None: all namespaces, `-A`)."""
    if since is not None:
        options.since = since
    client = client or make_client(options)
    c = Collector(client, options)
    c.discover()
    c.controller()  # its log travels while the objects are read
    c.kueue_cluster_objects()
    if namespaces is None:
        c.lst("namespaces (list)", "list namespaces", resource_path("", "v1", "namespaces"),
              kind="Namespace", api_version="v1")
        for kind in ("LocalQueue", "Workload"):
            path = c.kueue_path(kind)
            if path:
                plural = KUEUE_PLURALS[kind]
                c.lst(f"{plural} (list)", f"list {plural}.kueue.x-k8s.io", path, kind=kind,
                      api_version=c.api_version())
        managed = {str((q.get("metadata") or {}).get("namespace")) for q in c.of_kind("LocalQueue")}
        managed.add(options.kueue_namespace)
        c.lst("nodes (list)", "list nodes", resource_path("", "v1", "nodes"), kind="Node", api_version="v1")
        # One paginated cluster-wide LIST per kind, filtered here: never one request per namespace or object.
        # Each page is filtered and sanitized while the next one is fetched.
        def keep_pods(page: list[dict[str, Any]]) -> None:
            c.add(p for p in page if _namespace(p) in managed or (
                (p.get("spec") or {}).get("nodeName") and _phase(p) not in ("Succeeded", "Failed")))

        def keep_jobs(page: list[dict[str, Any]]) -> None:
            c.add(j for j in page if _namespace(j) in managed)

        def keep_events(page: list[dict[str, Any]]) -> None:
            c.add(e for e in page if _namespace(e) in managed or
                  str((e.get("involvedObject") or {}).get("apiVersion") or "").startswith(KUEUE_GROUP))

        c.attempt("pods (list)", "list pods across all namespaces",
                  partial(client.list_items, resource_path("", "v1", "pods"), kind="Pod", api_version="v1",
                          on_page=keep_pods))
        c.attempt("jobs (list)", "list jobs.batch across all namespaces",
                  partial(client.list_items, resource_path("batch", "v1", "jobs"), kind="Job",
                          api_version="batch/v1", on_page=keep_jobs))
        c.attempt("events (list)", "list events across all namespaces",
                  partial(client.list_items, resource_path("", "v1", "events"), kind="Event", api_version="v1",
                          on_page=keep_events))
        c.workload_owners()
    else:
        for ns in namespaces:
            c.namespace_objects(ns)
        c.workload_owners(set(namespaces))
        c.nodes_and_bound_pods(None)
        cq_names = {n for (k, _, n) in c.objects if k == "ClusterQueue"}
        c.cluster_scoped_events("ClusterQueue", cq_names)
    # The visibility API answers per queue (one request each): only when asked, and only about queues that
    # report pending workloads. `why --from` orders the queue from the Workloads themselves without it.
    if options.pending_positions:
        c.visibility({n for (k, _, n), o in c.objects.items() if k == "ClusterQueue" and _has_pending(o)},
                     {(str(ns), n) for (k, ns, n), o in c.objects.items() if k == "LocalQueue" and _has_pending(o)})
    _metrics(c, options)
    c.wait_for_logs()
    c.options.verbose_line(f"kueuediag: {client.stats.summary()}")
    return c.raw(sorted(namespaces) if namespaces is not None else None)


# --- helpers ----------------------------------------------------------------------------------------------
def _sorted_keys(objects: dict[tuple[str, Any, str], Any]) -> list[tuple[str, Any, str]]:
    """(kind, namespace, name) keys in order, a cluster-scoped object's namespace (None) first. The keys themselves
    compare as they are unless one kind has both (0.05 s instead of 0.09 s for the 63,000 objects of the half-size
    benchmark, collected in its order)."""
    try:
        return sorted(objects)
    except TypeError:  # None against a namespace within one kind
        return sorted(objects, key=lambda k: (k[0], "" if k[1] is None else str(k[1]), k[2]))


def forbidden(need: str) -> str:
    """The manifest error for a 403, naming the request and the RBAC rule that would allow it.

    `need` is "VERB RESOURCE[ in namespace NS]" ("list jobs.batch in namespace team-a") →
    "cannot list jobs.batch in namespace team-a (403): need get/list on jobs.batch".
    """
    verb, _, rest = need.partition(" ")
    resource = rest.split(" ")[0] if rest else need
    verbs = "get/list" if verb == "list" else verb
    return f"cannot {need} (403): need {verbs} on {resource}"


def _metrics(c: Collector, options: LiveOptions) -> None:
    if not options.prometheus_url:
        return
    from kueuediag.live.prom import collect_metrics

    options.say("querying Prometheus")
    end = options.metrics_end or c.captured_at
    remaining = c.client.remaining()
    if remaining <= 0:
        c.error("Prometheus metrics", "not collected: --timeout reached")
        return
    result = collect_metrics(options, end - options.since, end, deadline_seconds=remaining)
    c.metrics.update({name: sanitize_metrics(text) for name, text in result.files.items()})
    c.notes.extend(result.notes)
    for what, err in result.errors:
        c.error(what, err)


def _target_workloads(c: Collector, target: str, ns: str) -> list[dict[str, Any]]:
    kind, _, name = target.strip().rpartition("/")
    kind = kind.split(".")[0].lower()
    out = []
    for w in c.of_kind("Workload"):
        m = w.get("metadata") or {}
        if m.get("namespace") != ns:
            continue
        if m.get("name") == name and kind in ("", "workload", "workloads", "wl", "kwl"):
            out.append(w)
            continue
        for ref in m.get("ownerReferences") or ():
            if ref.get("name") == name and (not kind or str(ref.get("kind", "")).lower() == kind.rstrip("s")
                                            or kind in ("po", "pod", "pods")):
                out.append(w)
                break
    if not out and kind in ("", "pod", "pods", "po"):
        pod = c.objects.get(("Pod", ns, name))
        if pod is not None:
            pm = pod.get("metadata") or {}
            wl_name = (pm.get("annotations") or {}).get("kueue.x-k8s.io/workload") or (
                pm.get("labels") or {}).get("kueue.x-k8s.io/pod-group-name")
            owners = {r.get("uid") for r in pm.get("ownerReferences") or ()}
            for w in c.of_kind("Workload"):
                wm = w.get("metadata") or {}
                if wm.get("namespace") == ns and (wm.get("name") == wl_name or
                                                  (wm.get("labels") or {}).get("kueue.x-k8s.io/job-uid") in owners):
                    out.append(w)
    if not out:  # job-like target whose Workload links only by the job-uid label
        for k2, ns2, n2 in list(c.objects):
            if ns2 == ns and n2 == name and k2 not in ("Workload", "Event"):
                uid = (c.objects[(k2, ns2, n2)].get("metadata") or {}).get("uid")
                out.extend(w for w in c.of_kind("Workload")
                           if uid and (w.get("metadata") or {}).get("labels", {}).get("kueue.x-k8s.io/job-uid") == uid)
    return out


def _fetch_missing_cluster_queues(c: Collector, cqs: set[str]) -> None:
    """When the ClusterQueue LIST was forbidden, a GET of the one ClusterQueue may still be allowed."""
    have = {n for (k, _, n) in c.objects if k == "ClusterQueue"}
    if c.unreachable or c.out_of_time:
        return
    for cq in sorted(cqs - have):
        path = c.kueue_path("ClusterQueue", None, cq)
        if path is None:
            continue
        try:
            c.add([_with_kind(c.client.get(path), "ClusterQueue", c.api_version())])
        except (KubeError, DeadlineExceeded, ClusterUnavailable):
            continue
        # The GET worked: the target's ClusterQueue is visible, so the part is usable.
        c.errors = [e for e in c.errors if e["what"] != "clusterqueues (list)"]
        c.notes.append("clusterqueues (list) forbidden; read the target's ClusterQueue by GET")


def _usage_record(cq: dict[str, Any] | None) -> list[Any] | None:
    """Kueue's record of the quota a ClusterQueue's workloads hold (status.flavorsReservation), or None."""
    record = ((cq or {}).get("status") or {}).get("flavorsReservation")
    return record if isinstance(record, list) else None


def _reserves(cq: dict[str, Any] | None, flavor: str, resource: str | None) -> bool:
    """Whether the ClusterQueue's usage record shows quota held in `flavor` (of `resource`, when given)."""
    for entry in _usage_record(cq) or ():
        if not isinstance(entry, dict) or entry.get("name") != flavor:
            continue
        for r in entry.get("resources") or ():
            if not isinstance(r, dict) or (resource is not None and r.get("name") != resource):
                continue
            try:
                if parse_quantity(r.get("total") or 0) > 0:
                    return True
            except InputError:
                return True  # unreadable: read the holders rather than assume none
    return False


def _pending_messages(targets: list[dict[str, Any]]) -> list[tuple[str, PendingMessage]]:
    """(reason, parsed message) of each target's QuotaReserved=False condition."""
    # `why` only: `snapshot` never parses a message, and the parser's tables cost a third of a second to import
    from kueuediag.analysis.messages import parse_pending_message

    out = []
    for w in targets:
        for cond in (w.get("status") or {}).get("conditions") or ():
            if isinstance(cond, dict) and cond.get("type") == "QuotaReserved" and cond.get("status") == "False":
                out.append((str(cond.get("reason") or ""), parse_pending_message(str(cond.get("message") or ""))))
    return out


def _awaits_preemption(targets: list[dict[str, Any]]) -> bool:
    """Whether a target waits for preempted workloads (its victims, which `why` names, may be anywhere in the
    cohort tree)."""
    from kueuediag.analysis.messages import ReasonKind

    return any(pm.preempting or pm.has(ReasonKind.OVERLAPPING_TARGETS, ReasonKind.OVERLAPPING_DEFERRED)
               or reason == "WaitingForPreemptedWorkloads" for reason, pm in _pending_messages(targets))


def _cohort_holder_queues(target_cqs: set[str], tree_cqs: set[str], targets: list[dict[str, Any]],
                          by_name: dict[str, dict[str, Any]]) -> set[str]:
    """ClusterQueues of the tree whose Workloads `why` names as the cohort's holders: those holding a (flavor,
    resource) the target's pending message says is short, when the target's own ClusterQueue holds none of it."""
    from kueuediag.analysis.messages import ReasonKind

    short = {(r.flavor, r.resource) for _, pm in _pending_messages(targets)
             for r in pm.of(ReasonKind.INSUFFICIENT_UNUSED_QUOTA) if r.flavor}
    out: set[str] = set()
    for flavor, resource in short:
        if not any(_reserves(by_name.get(cq), flavor, resource) for cq in target_cqs):
            out |= {cq for cq in tree_cqs if _reserves(by_name.get(cq), flavor, resource)}
    return out


def _cohort_of(cq: dict[str, Any]) -> str | None:
    spec = cq.get("spec") or {}
    value = spec.get("cohortName") or spec.get("cohort")
    return str(value) if value else None


def _cohort_tree_cluster_queues(c: Collector, cqs: set[str]) -> set[str]:
    by_name = {(o.get("metadata") or {}).get("name"): o for o in c.of_kind("ClusterQueue")}
    parents = {str((o.get("metadata") or {}).get("name")): (o.get("spec") or {}).get("parentName")
               for o in c.of_kind("Cohort")}

    def root(cohort: str) -> str:
        seen: set[str] = set()
        while parents.get(cohort) and cohort not in seen:
            seen.add(cohort)
            cohort = str(parents[cohort])
        return cohort

    roots = {root(co) for cq in cqs if (co := _cohort_of(by_name.get(cq) or {}))}
    out = set(cqs)
    for name, obj in by_name.items():
        co = _cohort_of(obj)
        if co and root(co) in roots and name:
            out.add(str(name))
    return out


def _flavors_of(c: Collector, cqs: set[str]) -> set[str] | None:
    """Flavor names used by the ClusterQueues; None (all nodes) when a ClusterQueue is not visible."""
    by_name = {(o.get("metadata") or {}).get("name"): o for o in c.of_kind("ClusterQueue")}
    out: set[str] = set()
    for cq in cqs:
        obj = by_name.get(cq)
        if obj is None:
            return None
        for rg in (obj.get("spec") or {}).get("resourceGroups") or ():
            for f in rg.get("flavors") or ():
                if f.get("name"):
                    out.add(str(f["name"]))
    return out


def _workload_cq(w: dict[str, Any], lq_cq: dict[tuple[Any, Any], Any]) -> str | None:
    adm = ((w.get("status") or {}).get("admission") or {}).get("clusterQueue")
    if adm:
        return str(adm)
    ns = (w.get("metadata") or {}).get("namespace")
    cq = lq_cq.get((ns, (w.get("spec") or {}).get("queueName")))
    return str(cq) if cq else None


def _nsname(obj: dict[str, Any]) -> tuple[Any, Any]:
    m = obj.get("metadata") or {}
    return m.get("namespace"), m.get("name")


def _with_kind(obj: dict[str, Any], kind: str, api_version: str) -> dict[str, Any]:
    obj.setdefault("kind", kind)
    obj.setdefault("apiVersion", api_version)
    return obj


def _summary(doc: dict[str, Any], api: str, name: str, namespace: str | None, queue_kind: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"kueuediag.io/queue-kind": queue_kind}}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": api, "kind": "PendingWorkloadsSummary", "metadata": meta,
            "items": list(doc.get("items") or [])}


def _is_manager(pod: dict[str, Any]) -> bool:
    m = pod.get("metadata") or {}
    labels = m.get("labels") or {}
    return (labels.get("control-plane") == "controller-manager" or "controller-manager" in str(m.get("name"))
            or labels.get("app.kubernetes.io/component") == "controller")


def _namespace(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")


def _has_pending(queue: dict[str, Any]) -> bool:
    status = queue.get("status")
    if not isinstance(status, dict) or "pendingWorkloads" not in status:
        return True  # unknown: ask
    try:
        return int(status.get("pendingWorkloads") or 0) > 0
    except (TypeError, ValueError):
        return True


def _phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def _image_version(image: str) -> str | None:
    tag = image.rpartition(":")[2] if ":" in image.rpartition("/")[2] else ""
    tag = tag.split("@")[0]
    return tag if tag.startswith("v") and any(ch.isdigit() for ch in tag) else None
