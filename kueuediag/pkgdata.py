"""Where the files kueuediag ships live (``kueuediag/data/``): one owner for the question."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable


def package_data(name: str = "") -> Traversable:
    """``kueuediag/data/<name>`` (the folder itself for ``""``).

    The folder beside this module when the package is installed as files (from a wheel or a source tree), else
    what :mod:`importlib.resources` finds (a zip import). Asking importlib.resources when the folder is right
    there imports its file readers and :mod:`zipfile`: ~9 ms of a small ``why`` (issue 11, cold start).
    """
    here = Path(__file__).parent / "data"
    if here.is_dir():
        return here / name if name else here
    from importlib import resources  # noqa: PLC0415 - only for a package that is not installed as files

    folder = resources.files("kueuediag").joinpath("data")
    return folder.joinpath(name) if name else folder
