"""Snapshot reading, indexing and the normalised Kueue/Kubernetes views checks work with.

The package exports are imported on first use: `kueuediag snapshot` reads only `held` and `reader` from here,
and importing the loader and the model with them cost it a sixth of a second at every start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kueuediag.snapshot.loader import load_snapshot
    from kueuediag.snapshot.model import Manifest, Part, Snapshot

__all__ = ["Manifest", "Part", "Snapshot", "load_snapshot"]


def __getattr__(name: str) -> Any:
    if name == "load_snapshot":
        from kueuediag.snapshot.loader import load_snapshot

        return load_snapshot
    if name in ("Manifest", "Part", "Snapshot"):
        from kueuediag.snapshot import model

        return getattr(model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
