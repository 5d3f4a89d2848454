"""Which entry points the installed distributions declare, read from their metadata files without importlib.metadata.

Two questions are asked at every start of a diagnosis: does any distribution publish a check plugin
(`kueuediag.checks`) besides kueuediag's own built-ins, and does any publish a pydantic plugin (pydantic looks
when it builds the first result model's validator). :mod:`importlib.metadata` answers both by importing itself
(with ``email``, ``zipfile``, ``csv``: ~20 ms) and building every distribution on the path, twice: ~35 ms of a
~0.5 s small ``why`` on the VM that measures issue 11, where the answer is almost always "none".

:func:`declared` reads the same files importlib.metadata reads (``NAME-VERSION.dist-info/entry_points.txt`` and
``*.egg-info/entry_points.txt`` in every directory on ``sys.path``, parsed the same way) and says ``None``
whenever it cannot see everything importlib.metadata would (a zip or egg on the path, another finder that
publishes distributions): then the caller asks importlib.metadata. It may see more than importlib.metadata
(which keeps only the first of two distributions with one name): that only sends the caller to the full scan.
"""

from __future__ import annotations

import os
import sys
from importlib.machinery import PathFinder

_INFO_SUFFIXES = (".dist-info", ".egg-info")


def declared(group: str) -> list[str] | None:
    """The value (``module:attr``) of every entry point in `group` of every distribution on ``sys.path``, in path
    order; ``None`` when only :mod:`importlib.metadata` can tell."""
    if any(f is not PathFinder and hasattr(f, "find_distributions") for f in sys.meta_path):
        return None  # another finder publishes distributions this scan cannot see
    values: list[str] = []
    for entry in sys.path:
        if not isinstance(entry, str):
            return None  # a Path or bytes someone put on sys.path: leave it to importlib.metadata
        root = entry or "."
        if root.lower().endswith(".egg"):
            return None
        try:
            names = os.listdir(root)
        except NotADirectoryError:
            return None  # a zip archive on the path
        except OSError:
            continue  # missing or unreadable: importlib.metadata finds nothing there either
        for name in names:
            if name.lower().endswith(_INFO_SUFFIXES):
                found = _group_values(os.path.join(root, name, "entry_points.txt"), group)
                if found is None:
                    return None
                values.extend(found)
    return values


def _group_values(path: str, group: str) -> list[str] | None:
    """The values of `group`'s entries in one entry_points.txt (INI sections, as importlib.metadata reads them);
    None when the file is not UTF-8 text (importlib.metadata's own error is then the one to see)."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError:  # no entry points (or an egg-info file): nothing declared
        return []
    except ValueError:
        return None
    section = None
    out: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")  # exactly importlib.metadata's reading: "[ x ]" is not the group "x"
        elif section == group:
            out.append(line.partition("=")[2].strip())
    return out
