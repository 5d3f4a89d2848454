"""Snapshot reading, indexing and the normalised Kueue/Kubernetes views checks work with."""

from kueuediag.snapshot.loader import load_snapshot
from kueuediag.snapshot.model import Manifest, Part, Snapshot

__all__ = ["Manifest", "Part", "Snapshot", "load_snapshot"]
