"""The console entries (``kueuediag``, ``kubectl-kueuediag``, ``kubectl_complete-kueuediag``): the cyclic garbage
collector paused before anything else is imported.

A command's process starts by building objects that live until it ends — Typer and its click, then the checks,
their analyses and the result records — and the collector scanned them again and again while they were made.
:func:`kueuediag.cli._run` pauses it for the rest of the process once the CLI module is imported; pausing it here
also spares the import of the CLI and Typer (~8 ms of CPU of a small ``why`` on the VM that measures issue 11).
Importing :mod:`kueuediag.cli` as a library (the tests do) leaves the collector alone.
"""

from __future__ import annotations

import gc


def _run(entry: str) -> None:
    gc.disable()
    from kueuediag import cli

    getattr(cli, entry)()


def main() -> None:
    _run("main")


def kubectl_main() -> None:
    _run("kubectl_main")


def kubectl_complete_main() -> None:
    _run("kubectl_complete_main")
