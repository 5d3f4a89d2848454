"""Shell completion of targets and namespaces: from the `--from` snapshot when one was given, else from the
live cluster (the kubeconfig context's namespace).

Completion runs in the user's shell on every TAB, so it never raises and never waits long: any error means
"no suggestions". Nothing here is imported by `--help` (the callbacks import lazily).
"""

from __future__ import annotations

from typing import Any

TARGET_KINDS = ("Job", "JobSet", "Pod", "Workload")
LIVE_TIMEOUT = 3.0


def _snapshot_objects(source: str) -> list[dict[str, Any]]:
    from kueuediag.examples import resolve_source
    from kueuediag.snapshot.reader import read_snapshot

    return read_snapshot(resolve_source(source)).dicts()


def _live_objects(params: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    from kueuediag.live.kube import KubeClient, resource_path

    client = KubeClient.from_kubeconfig(params.get("kubeconfig"), params.get("context"), timeout=LIVE_TIMEOUT,
                                        request_timeout=LIVE_TIMEOUT, max_retries=0)
    ns = params.get("namespace") or client.default_namespace or "default"
    out: list[dict[str, Any]] = []
    for group, version, plural, kind in (("batch", "v1", "jobs", "Job"), ("", "v1", "pods", "Pod"),
                                         ("kueue.x-k8s.io", "v1beta2", "workloads", "Workload")):
        try:
            out += client.list_items(resource_path(group, version, plural, ns), kind=kind, api_version=version)
        except Exception:  # noqa: BLE001 - a forbidden or absent kind just completes nothing
            continue
    return out, ns


def target_candidates(objects: list[dict[str, Any]], namespace: str | None) -> list[tuple[str, str]]:
    """(`kind/name`, namespace) for every object a user may ask `why` about, in a stable order."""
    out: list[tuple[str, str]] = []
    for obj in objects:
        kind = obj.get("kind")
        meta = obj.get("metadata") or {}
        ns = str(meta.get("namespace") or "")
        if kind in TARGET_KINDS and (namespace is None or ns == namespace):
            out.append((f"{str(kind).lower()}/{meta.get('name')}", ns))
    return sorted(set(out))


def complete_target(ctx: Any, incomplete: str) -> list[tuple[str, str]]:
    """Typer autocompletion callback for TARGET: (value, help) pairs, the help naming the namespace."""
    params: dict[str, Any] = dict(getattr(ctx, "params", {}) or {})
    try:
        if params.get("source"):
            objects, ns = _snapshot_objects(str(params["source"])), params.get("namespace")
        else:
            objects, ns = _live_objects(params)
    except Exception:  # noqa: BLE001 - completion must never break the shell
        return []
    return [(name, f"namespace {n}" if n else "") for name, n in target_candidates(objects, ns)
            if name.startswith(incomplete) or name.partition("/")[2].startswith(incomplete)]


def complete_namespace(ctx: Any, incomplete: str) -> list[str]:
    """Namespaces that hold something to diagnose (from the snapshot given with --from)."""
    params: dict[str, Any] = dict(getattr(ctx, "params", {}) or {})
    if not params.get("source"):
        return []
    try:
        objects = _snapshot_objects(str(params["source"]))
    except Exception:  # noqa: BLE001 - completion must never break the shell
        return []
    names = {str((o.get("metadata") or {}).get("namespace")) for o in objects
             if o.get("kind") in TARGET_KINDS and (o.get("metadata") or {}).get("namespace")}
    return sorted(n for n in names if n.startswith(incomplete))
