"""Shared CLI plumbing: one-line errors with documented exit codes, colour decisions, option parsing."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import typer

from kueuediag.errors import ExitCode, KueuediagError, TargetNotFound

F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str, code: ExitCode) -> typer.Exit:
    typer.echo(f"kueuediag: error: {message}", err=True)
    return typer.Exit(int(code))


def handle_errors(fn: F) -> F:
    """Turn KueuediagError (and any stray exception) into one stderr line and a documented exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except TargetNotFound as exc:
            typer.echo(f"kueuediag: error: {exc}", err=True)
            if exc.suggestions:
                typer.echo("  did you mean: " + ", ".join(exc.suggestions), err=True)
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
