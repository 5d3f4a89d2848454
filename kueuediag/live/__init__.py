"""Live mode: collect from a real cluster (and Prometheus), build the same Snapshot the engine reads.

Core library, no CLI imports; `kubernetes` and `urllib3` (Prometheus) are imported lazily inside the
functions that talk to them, so `--help` and snapshot-only runs never load them.

Entry points for the CLI:

* :func:`live_snapshot_for_why` — `kueuediag why TARGET` without `--from` (optionally `--save PATH`);
* :func:`collect_for_why` — the same, returning the RawSnapshot (to write it and build the Snapshot);
* :func:`take_snapshot` — `kueuediag snapshot` (cluster-wide, sanitized, optionally redacted, written).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kueuediag.errors import InputError
from kueuediag.live.options import PROMETHEUS_TOKEN_ENV, LiveOptions
from kueuediag.records import dataclass

if TYPE_CHECKING:
    from kueuediag.live.kube import KubeClient
    from kueuediag.snapshot.model import Snapshot
    from kueuediag.snapshot.reader import RawSnapshot

__all__ = ["LiveOptions", "PROMETHEUS_TOKEN_ENV", "SnapshotResult", "collect_for_why", "live_snapshot_for_why",
           "take_snapshot", "redaction_map_path"]


def collect_for_why(target: str, namespace: str | None, options: LiveOptions,
                    client: KubeClient | None = None) -> RawSnapshot:
    from kueuediag.live.collect import collect

    return collect(target, namespace, options, client=client)


def live_snapshot_for_why(target: str, namespace: str | None, options: LiveOptions,
                          save: str | os.PathLike[str] | None = None,
                          client: KubeClient | None = None) -> Snapshot:
    """Collect live for `target` and return the Snapshot the engine diagnoses; `save` also writes it."""
    from kueuediag.snapshot.model import Snapshot

    raw = collect_for_why(target, namespace, options, client=client)
    save = save if save is not None else options.save
    if save is not None:
        from kueuediag.live.write import write_snapshot

        write_snapshot(raw, save)
    return Snapshot(raw)


@dataclass
class SnapshotResult:
    path: Path
    raw: RawSnapshot
    mapping: dict[str, Any] | None = None
    map_path: Path | None = None


RECORDABLE_KINDS = frozenset({"Workload", "LocalQueue", "ClusterQueue", "Job", "JobSet", "Pod"})
"""a snapshot holding none of these has nothing to diagnose: `kueuediag snapshot` refuses to write it"""


def redaction_map_path(output: str | os.PathLike[str]) -> Path:
    """Where `snapshot --redact` writes the pseudonym map: beside the snapshot, never inside it."""
    p = Path(output)
    return p.with_name(p.name.removesuffix("/") + ".redaction-map.json")


def _check_map_outside(output: Path, redact_map: Path) -> None:
    out, where = output.resolve(), redact_map.resolve()
    if where == out or out in where.parents:
        raise InputError(f"{redact_map}: the redaction map must not be written inside the snapshot {output} "
                         "(whoever gets the snapshot would get the real names)")


def _namespaces_to_record(namespaces: list[str] | None, all_namespaces: bool, options: LiveOptions,
                          client: KubeClient) -> list[str] | None:
    if namespaces or all_namespaces:
        return namespaces or None
    return [options.namespace or client.default_namespace or "default"]


def take_snapshot(output: str | os.PathLike[str], options: LiveOptions, namespaces: list[str] | None = None,
                  redact: bool = False, redact_map: str | os.PathLike[str] | None = None,
                  client: KubeClient | None = None, *, all_namespaces: bool = True,
                  for_target: str | None = None) -> SnapshotResult:
    """`kueuediag snapshot`: collect, redact if asked, refuse an empty result, write to `output`.

    Scope: `namespaces`, else every namespace when `all_namespaces` (kubectl's `-A`), else the kubeconfig
    context's namespace (kubectl's default). `for_target` is recorded in the manifest (`target`, `namespace`), so
    `why --from` without a target diagnoses it; the target must exist in what was collected. With `redact`, the
    pseudonym map goes beside the output (`redact_map`, default `<output>.redaction-map.json`), never inside.
    """
    from kueuediag.live.collect import collect_cluster, make_client
    from kueuediag.live.write import write_snapshot

    out_path = Path(output)
    map_path = Path(redact_map) if redact_map is not None else redaction_map_path(out_path) if redact else None
    if map_path is not None:
        _check_map_outside(out_path, map_path)
    client = client or make_client(options)
    scope = _namespaces_to_record(namespaces, all_namespaces, options, client)
    raw = collect_cluster(scope, options.since, options, client=client)
    if not _has_something_to_diagnose(raw, scope):
        where = f"namespace(s) {', '.join(scope)}" if scope else "the cluster"
        raise InputError(f"nothing to record: {where} has no Workloads, LocalQueues, ClusterQueues, jobs or pods "
                         "visible to you (use -n NAMESPACE or -A); no snapshot written")
    if for_target is not None:
        raw.manifest["target"] = _recorded_target(raw, for_target, options.namespace or (scope[0] if scope else None))
    mapping = None
    if redact:
        from kueuediag.live.redact import redact as do_redact
        from kueuediag.live.redact import redact_target

        raw, mapping = do_redact(raw, keep_namespaces=[options.kueue_namespace])
        names = mapping.get("mapping") or {}
        if isinstance(raw.manifest.get("target"), dict):
            raw.manifest["target"] = redact_target(raw.manifest["target"], names)
        assert map_path is not None
        fd = os.open(map_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(mapping, fh, indent=2)
            fh.write("\n")
    path = write_snapshot(raw, output)
    return SnapshotResult(path=path, raw=raw, mapping=mapping, map_path=map_path)


def _has_something_to_diagnose(raw: RawSnapshot, scope: list[str] | None) -> bool:
    """Some Kueue queue, Workload, job or pod in the namespaces asked for (cluster-wide objects collected
    alongside a namespace, such as ClusterQueues or pods on the same nodes, do not count)."""
    for obj in raw.dicts():
        ns = (obj.get("metadata") or {}).get("namespace")
        if str(obj.get("kind")) in RECORDABLE_KINDS and (scope is None or ns in scope):
            return True
    return False


def _recorded_target(raw: RawSnapshot, text: str, namespace: str | None) -> dict[str, str | None]:
    """Resolve `text` in what was collected (exit 3 with suggestions when it is not there) and record it."""
    from kueuediag.snapshot.model import Snapshot
    from kueuediag.target import resolve

    found = resolve(Snapshot(raw), text, namespace)
    return {"target": text, "namespace": found.namespace}
