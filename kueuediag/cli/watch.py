"""`--watch [SECONDS]` for `why` and `health`: re-collect, redraw, highlight what changed.

Each cycle is one bounded live collection (a fresh client, so the `--timeout` deadline applies per cycle) and
one diagnosis; Ctrl-C ends the loop cleanly with exit 0. `--watch-count N` ends after N cycles (scripts, tests).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TypeVar

import typer

from kueuediag.errors import InputError

T = TypeVar("T")

CLEAR = "\x1b[2J\x1b[H"


DEFAULT_INTERVAL = "30"


def optional_watch_value(argv: list[str]) -> list[str]:
    """`--watch` may come without SECONDS: give it the default when the next word is not a number."""
    out: list[str] = []
    for n, arg in enumerate(argv):
        out.append(arg)
        if arg == "--watch":
            nxt = argv[n + 1] if n + 1 < len(argv) else None
            try:
                float(nxt or "")
            except ValueError:
                out.append(DEFAULT_INTERVAL)
    return out


def parse_interval(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        seconds = float(text)
    except ValueError:
        raise InputError(f"--watch takes a number of seconds, got {text!r}") from None
    if seconds < 0:
        raise InputError(f"--watch must not be negative, got {text}")
    return seconds


def watch_loop(cycle: Callable[[], T], show: Callable[[T, T | None, int], str], *, interval: float,
               count: int | None, clear: bool | None = None,
               sleep: Callable[[float], None] | None = None) -> tuple[T | None, int]:
    """Run `cycle` every `interval` seconds, echoing `show(current, previous, n)`; returns (last, cycles run).

    KeyboardInterrupt (Ctrl-C) stops the loop quietly; the caller exits 0.
    """
    clear = sys.stdout.isatty() if clear is None else clear
    previous: T | None = None
    n = 0
    try:
        while count is None or n < count:
            current = cycle()
            n += 1
            text = show(current, previous, n)
            typer.echo((CLEAR if clear else "") + text, nl=False)
            previous = current
            if count is not None and n >= count:
                break
            (sleep or time.sleep)(interval)
    except KeyboardInterrupt:
        typer.echo("", err=True)
        typer.echo(f"kueuediag: watch stopped after {n} cycle(s)", err=True)
    return previous, n
