"""The Kueue manager configuration as recorded in the snapshot (kueue-facts §7.2, §11).

Kueue reads its `Configuration` from the ConfigMap `kueue-manager-config` (key `controller_manager_config.yaml`)
in its own namespace. Only the fields a "why pending" diagnosis needs are normalised here, with Kueue's
defaults when a field (or the whole ConfigMap) is absent: `integrations.frameworks` defaults to `batch/job`,
`managedJobsNamespaceSelector` to `kubernetes.io/metadata.name NotIn [kube-system, <kueue namespace>]`,
`manageJobsWithoutQueueName` to false, `waitForPodsReady` to a 30m timeout without blockAdmission (whether it
is on without configuration depends on the release: see :mod:`kueuediag.analysis.installation`).
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from kueuediag.errors import InputError
from kueuediag.records import dataclass
from kueuediag.snapshot.k8s import labels, meta
from kueuediag.snapshot.model import Snapshot

CONFIG_MAP = "kueue-manager-config"
CONFIG_KEY = "controller_manager_config.yaml"
DEFAULT_NAMESPACE = "kueue-system"
DEFAULT_FRAMEWORKS = ("batch/job",)

# owner kind (and API group) → integration framework name in `integrations.frameworks`
FRAMEWORKS: dict[tuple[str, str], str] = {
    ("Job", "batch"): "batch/job",
    ("JobSet", "jobset.x-k8s.io"): "jobset.x-k8s.io/jobset",
    ("RayJob", "ray.io"): "ray.io/rayjob",
    ("RayCluster", "ray.io"): "ray.io/raycluster",
    ("RayService", "ray.io"): "ray.io/rayservice",
    ("MPIJob", "kubeflow.org"): "kubeflow.org/mpijob",
    ("PyTorchJob", "kubeflow.org"): "kubeflow.org/pytorchjob",
    ("TFJob", "kubeflow.org"): "kubeflow.org/tfjob",
    ("XGBoostJob", "kubeflow.org"): "kubeflow.org/xgboostjob",
    ("PaddleJob", "kubeflow.org"): "kubeflow.org/paddlejob",
    ("JAXJob", "kubeflow.org"): "kubeflow.org/jaxjob",
    ("TrainJob", "trainer.kubeflow.org"): "trainer.kubeflow.org/trainjob",
    ("AppWrapper", "workload.codeflare.dev"): "workload.codeflare.dev/appwrapper",
    ("SparkApplication", "sparkoperator.k8s.io"): "sparkoperator.k8s.io/sparkapplication",
    ("Pod", ""): "pod",
    ("Deployment", "apps"): "deployment",
    ("StatefulSet", "apps"): "statefulset",
    ("LeaderWorkerSet", "leaderworkerset.x-k8s.io"): "leaderworkerset.x-k8s.io/leaderworkerset",
}


@dataclass(frozen=True)
class WaitForPodsReady:
    enabled: bool | None
    """what the Configuration says (`enable` in v1beta1, the section's presence otherwise); None when it says
    nothing — then the release decides: :meth:`kueuediag.analysis.installation.Installation.wait_for_pods_ready`"""
    block_admission: bool
    timeout: str
    backoff_limit_count: int | None
    backoff_base_seconds: int
    backoff_max_seconds: int


@dataclass(frozen=True)
class KueueConfig:
    found: bool
    """False when the snapshot has no `kueue-manager-config` ConfigMap: every value is Kueue's default."""
    namespace: str
    """the Kueue namespace (where the ConfigMap lives)"""
    source: str
    """`ConfigMap/<ns>/kueue-manager-config` or 'Kueue defaults'"""
    api_version: str | None
    frameworks: tuple[str, ...]
    frameworks_set: bool
    external_frameworks: tuple[str, ...]
    manage_jobs_without_queue_name: bool
    managed_jobs_namespace_selector: dict[str, Any] | None
    namespace_selector_set: bool
    pod_namespace_selector: dict[str, Any] | None
    """v1beta1 `integrations.podOptions.namespaceSelector` (deprecated), when set"""
    exclude_resource_prefixes: tuple[str, ...]
    wait_for_pods_ready: WaitForPodsReady
    raw: dict[str, Any] = field(default_factory=dict)

    def framework_enabled(self, framework: str) -> bool:
        return framework in self.frameworks or framework in self.external_frameworks

    def excluded(self, resource: str) -> bool:
        return any(resource.startswith(p) for p in self.exclude_resource_prefixes)


def default_namespace_selector(kueue_namespace: str) -> dict[str, Any]:
    return {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", kueue_namespace]}
        ]
    }


def kueue_config(snap: Snapshot) -> KueueConfig:
    """The normalised manager configuration (memoised on the snapshot)."""
    return snap.memo("kueue-config", lambda: _load(snap))


def _find_config_map(snap: Snapshot) -> dict[str, Any] | None:
    candidates = [cm for cm in snap.of_kind("ConfigMap") if meta(cm).get("name") == CONFIG_MAP]
    if not candidates:
        # Helm installs may prefix the name (`<release>-kueue-manager-config`): accept the suffix.
        candidates = [
            cm
            for cm in snap.of_kind("ConfigMap")
            if str(meta(cm).get("name", "")).endswith(CONFIG_MAP) and CONFIG_KEY in (cm.get("data") or {})
        ]
    candidates.sort(key=lambda cm: (meta(cm).get("namespace") != DEFAULT_NAMESPACE, meta(cm).get("namespace") or ""))
    return candidates[0] if candidates else None


def _load(snap: Snapshot) -> KueueConfig:
    cm = _find_config_map(snap)
    namespace = DEFAULT_NAMESPACE
    raw: dict[str, Any] = {}
    source = "Kueue defaults (no kueue-manager-config ConfigMap in the snapshot)"
    if cm is not None:
        namespace = meta(cm).get("namespace") or DEFAULT_NAMESPACE
        source = f"ConfigMap/{namespace}/{meta(cm).get('name')}"
        text = (cm.get("data") or {}).get(CONFIG_KEY)
        if text:
            from kueuediag.yamlload import load_document  # only a ConfigMap's text needs the YAML reader

            loaded = load_document(text, f"{source} key {CONFIG_KEY}")
            if loaded is not None and not isinstance(loaded, dict):
                raise InputError(f"{source} key {CONFIG_KEY}: expected a Configuration object")
            raw = loaded or {}
    elif _kueue_namespace_from_pods(snap):
        namespace = _kueue_namespace_from_pods(snap) or DEFAULT_NAMESPACE
    integrations = _dict(raw.get("integrations"))
    frameworks = integrations.get("frameworks")
    external = integrations.get("externalFrameworks") or []
    pod_opts = _dict(integrations.get("podOptions"))
    selector_set = "managedJobsNamespaceSelector" in raw
    selector = raw.get("managedJobsNamespaceSelector") if selector_set else default_namespace_selector(namespace)
    resources = _dict(raw.get("resources"))
    return KueueConfig(
        found=cm is not None,
        namespace=namespace,
        source=source,
        api_version=raw.get("apiVersion"),
        frameworks=tuple(str(f) for f in frameworks) if isinstance(frameworks, list) else DEFAULT_FRAMEWORKS,
        frameworks_set=isinstance(frameworks, list),
        external_frameworks=tuple(str(f) for f in external) if isinstance(external, list) else (),
        manage_jobs_without_queue_name=bool(raw.get("manageJobsWithoutQueueName", False)),
        managed_jobs_namespace_selector=selector if isinstance(selector, dict) else None,
        namespace_selector_set=selector_set,
        pod_namespace_selector=pod_opts.get("namespaceSelector")
        if isinstance(pod_opts.get("namespaceSelector"), dict)
        else None,
        exclude_resource_prefixes=tuple(str(p) for p in resources.get("excludeResourcePrefixes") or ()),
        wait_for_pods_ready=_wait_for_pods_ready(raw),
        raw=raw,
    )


def _wait_for_pods_ready(raw: dict[str, Any]) -> WaitForPodsReady:
    wfpr = _dict(raw.get("waitForPodsReady"))
    strategy = _dict(wfpr.get("requeuingStrategy"))
    # v1beta1 configs carry `enable`; a v1beta2 section means on; no section: the release's default decides.
    enabled = bool(wfpr.get("enable", True)) if "waitForPodsReady" in raw else None
    limit = strategy.get("backoffLimitCount")
    return WaitForPodsReady(
        enabled=enabled,
        block_admission=bool(wfpr.get("blockAdmission", False)),
        timeout=str(wfpr.get("timeout") or "30m"),
        backoff_limit_count=int(limit) if isinstance(limit, int) else None,
        backoff_base_seconds=_int(strategy.get("backoffBaseSeconds"), 60),
        backoff_max_seconds=_int(strategy.get("backoffMaxSeconds"), 3600),
    )


def _kueue_namespace_from_pods(snap: Snapshot) -> str | None:
    for obj in snap.of_kind("Deployment"):
        if meta(obj).get("name") == "kueue-controller-manager":
            return meta(obj).get("namespace")
    for h in snap.entries("Pod"):
        if h.labels.get("control-plane") == "controller-manager" and "kueue" in h.name:
            return h.namespace
    return None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def namespace_labels(snap: Snapshot, namespace: str) -> tuple[dict[str, str], bool]:
    """Labels of a Namespace object (with the automatic `kubernetes.io/metadata.name`), and whether it exists."""
    ns = snap.get("Namespace", namespace)
    out = dict(labels(ns)) if ns is not None else {}
    out.setdefault("kubernetes.io/metadata.name", namespace)
    return out, ns is not None


def selector_str(selector: dict[str, Any] | None) -> str:
    """A LabelSelector the way kubectl prints it (`a=b,c notin (x,y)`); null → `<null>` , {} → `{}`."""
    if selector is None:
        return "<null>"
    parts = [f"{k}={v}" for k, v in (selector.get("matchLabels") or {}).items()]
    for e in selector.get("matchExpressions") or ():
        op = str(e.get("operator", ""))
        values = ",".join(str(v) for v in e.get("values") or ())
        if op == "Exists":
            parts.append(str(e.get("key")))
        elif op == "DoesNotExist":
            parts.append(f"!{e.get('key')}")
        else:
            parts.append(f"{e.get('key')} {op.lower()} ({values})")
    return ",".join(parts) if parts else "{}"
