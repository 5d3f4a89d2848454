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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kueuediag.live.options import PROMETHEUS_TOKEN_ENV, LiveOptions

if TYPE_CHECKING:
    from kueuediag.live.kube import KubeClient
    from kueuediag.snapshot.model import Snapshot
    from kueuediag.snapshot.reader import RawSnapshot

__all__ = ["LiveOptions", "PROMETHEUS_TOKEN_ENV", "SnapshotResult", "collect_for_why", "live_snapshot_for_why",
           "take_snapshot"]


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


def take_snapshot(output: str | os.PathLike[str], options: LiveOptions, namespaces: list[str] | None = None,
                  redact: bool = False, redact_map: str | os.PathLike[str] | None = None,
                  client: KubeClient | None = None) -> SnapshotResult:
    """`kueuediag snapshot`: collect cluster-wide (or `namespaces`), redact if asked, write to `output`."""
    from kueuediag.live.collect import collect_cluster
    from kueuediag.live.write import write_snapshot

    raw = collect_cluster(namespaces, options.since, options, client=client)
    mapping = None
    if redact:
        from kueuediag.live.redact import redact as do_redact

        raw, mapping = do_redact(raw, keep_namespaces=[options.kueue_namespace])
        if redact_map is not None:
            p = Path(redact_map)
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as fh:
                json.dump(mapping, fh, indent=2)
                fh.write("\n")
    path = write_snapshot(raw, output)
    return SnapshotResult(path=path, raw=raw, mapping=mapping)
