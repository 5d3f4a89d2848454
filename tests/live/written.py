"""What a snapshot writer put on disk, as one text: the leak tests search it for planted secrets."""

from __future__ import annotations

import tarfile
from pathlib import Path


def written_text(path: Path) -> str:
    """Every file of a snapshot directory or archive, decoded (bytes that are not UTF-8 replaced), joined."""
    if path.is_dir():
        return "\n".join(p.read_text(errors="replace") for p in sorted(path.rglob("*")) if p.is_file())
    with tarfile.open(path) as tf:
        return "\n".join(tf.extractfile(m).read().decode(errors="replace")  # type: ignore[union-attr]
                         for m in tf.getmembers() if m.isfile())
