"""Shared CLI plumbing: one-line errors with documented exit codes, colour decisions, option parsing."""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import typer

from kueuediag.errors import ExitCode, InputError, KueuediagError, TargetNotFound, clip, shown

F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str, code: ExitCode) -> typer.Exit:
    typer.echo(encodable(f"kueuediag: error: {clip(message, 1000)}", sys.stderr), err=True)
    return typer.Exit(int(code))


def encodable(text: str, stream: Any) -> str:
    """`text` as `stream` can write it: characters its encoding lacks become replacement characters."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return text.encode(encoding, "replace").decode(encoding, "replace")
    return text


def emit(text: str, output: str) -> None:
    """Write rendered output to stdout whatever its encoding (latin-1, cp437, or lone surrogates from the input).

    JSON is re-escaped to ASCII, which keeps every character; other formats degrade to replacement characters.
    """
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        if output == "json":
            text = json.dumps(json.loads(text), indent=2, ensure_ascii=True) + "\n"
        else:
            text = encodable(text, sys.stdout)
    typer.echo(text, nl=False)


def positive_seconds(flag: str, value: float) -> float:
    """A deadline in seconds: finite and above zero (``nan`` would silently disable it, ``inf`` too)."""
    if not math.isfinite(value) or value <= 0:
        raise InputError(f"{flag}: expected a positive number of seconds, got {shown(value)}")
    return value


def handle_errors(fn: F) -> F:
    """Turn KueuediagError (and any stray exception) into one stderr line and a documented exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except TargetNotFound as exc:
            typer.echo(encodable(f"kueuediag: error: {exc}", sys.stderr), err=True)
            if exc.suggestions:
                line = "  did you mean: " + ", ".join(clip(s, 80) for s in exc.suggestions[:10])
                typer.echo(encodable(line, sys.stderr), err=True)
            raise typer.Exit(int(exc.exit_code)) from None
        except KueuediagError as exc:
            raise fail(str(exc), exc.exit_code) from None
        except KeyboardInterrupt:
            raise fail("interrupted", ExitCode.USAGE) from None
        except Exception as exc:  # last resort: never a traceback for the on-call reader
            if os.environ.get("KUEUEDIAG_DEBUG"):
                raise
            raise fail(f"internal error: {type(exc).__name__}: {exc} (set KUEUEDIAG_DEBUG=1 for a traceback)",
                       ExitCode.USAGE) from None

    return wrapper  # type: ignore[return-value]


def use_color(no_color: bool) -> bool:
    if no_color or os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return sys.stdout.isatty()


def split_csv(values: list[str] | None) -> list[str]:
    out: list[str] = []
    for v in values or []:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


@contextlib.contextmanager
def stderr_status(initial: str) -> Iterator[Callable[[str], None] | None]:
    """A rich spinner on stderr while collecting (only when stderr is a terminal); yields the progress callback."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console

    console = Console(stderr=True)
    with console.status(initial) as status:
        yield lambda text: status.update(text)
