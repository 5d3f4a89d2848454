"""Snapshot reading, indexing and the normalised Kueue/Kubernetes views checks work with."""

from kueuediag.snapshot.model import Manifest, Part, Snapshot, load_snapshot

__all__ = ["Manifest", "Part", "Snapshot", "load_snapshot"]
