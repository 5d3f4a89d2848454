"""Shared CLI plumbing: one-line errors with documented exit codes, colour decisions, option parsing."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

import typer

from kueuediag.errors import ExitCode, InputError, KueuediagError, TargetNotFound, clip
from kueuediag.records import dataclass

if TYPE_CHECKING:
    from kueuediag.config import Settings
    from kueuediag.live import LiveOptions

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


class _ProcessEnd:
    """Objects kept alive until the process ends, when the CLI runs as its own process.

    Freeing the object graph of a large snapshot one object at a time costs about a tenth of a run; a
    one-shot process can skip it (`kueuediag.cli._exit_now` ends the process without the teardown). Inside a
    test runner or another program nothing is retained.
    """

    fast_exit = False
    retained: list[object] = []


def retain_until_exit(*objs: object) -> None:
    """Keep `objs` (a loaded snapshot, a verdict) alive until the process ends, so they are never freed."""
    if _ProcessEnd.fast_exit:
        _ProcessEnd.retained.extend(objs)


def silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush into a closed pipe does not complain."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (tests' captured stdout)
        pass


def handle_errors(fn: F) -> F:
    """Turn KueuediagError (and any stray exception) into one stderr line and a documented exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except BrokenPipeError:  # `kueuediag why … | head`: the reader has what it wanted
            silence_stdout()
            raise typer.Exit(int(ExitCode.OK)) from None
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


MIN_WIDTH = 60
"""narrower than this, the layout (indents, evidence lines) stops being readable: render at 60 and let it wrap"""
DEFAULT_WIDTH = 100
"""when stdout is not a terminal and COLUMNS is unset (a pipe, a file, CI logs)"""


@dataclass(frozen=True)
class TerminalStyle:
    """How the terminal renderer draws: colours, box drawing, and the width to fit."""

    color: bool
    boxes: bool
    width: int


def terminal_style(settings: Settings, stream: TextIO | None = None,
                   env: Mapping[str, str] | None = None) -> TerminalStyle:
    """Fancy (colours and boxes) only on a real terminal; plain text for TERM=dumb, NO_COLOR, `--no-color`
    or a pipe. FORCE_COLOR forces colours (CI logs that render ANSI). The width follows `--width`, then
    COLUMNS, then the terminal, never below :data:`MIN_WIDTH`."""
    env = os.environ if env is None else env
    stream = stream or sys.stdout
    tty = bool(getattr(stream, "isatty", lambda: False)())
    fancy = tty and env.get("TERM") != "dumb"
    if settings.color is False or env.get("NO_COLOR"):
        fancy = False
    elif env.get("FORCE_COLOR") or settings.color is True:
        fancy = True
    width = settings.width
    if width is None:
        columns = env.get("COLUMNS", "")
        if columns.isdigit() and int(columns) > 0:
            width = int(columns)
        elif tty:
            try:
                width = os.get_terminal_size(stream.fileno()).columns
            except (OSError, ValueError):
                width = DEFAULT_WIDTH
        else:
            width = DEFAULT_WIDTH
    return TerminalStyle(color=fancy, boxes=fancy, width=max(MIN_WIDTH, width))


def settings_from_flags(config: Path | None, **flags: Any) -> Settings:
    """The layered settings for one command: config file < KUEUEDIAG_* < the flags given (None = not given)."""
    from kueuediag.config import load_settings

    sev_items = split_csv(flags.pop("severity", None))
    bad = [s for s in sev_items if "=" not in s]
    if bad:
        raise InputError(f"--severity takes CODE=SEVERITY, got {bad[0]!r}")
    given: dict[str, Any] = {"severity": dict(s.split("=", 1) for s in sev_items)} if sev_items else {}
    for key in ("select", "ignore", "as_group", "prometheus_header"):
        if key in flags:
            flags[key] = split_csv(flags[key]) if key != "prometheus_header" else list(flags[key] or [])
    if flags.pop("no_color", None):
        given["color"] = False
    if "as_user" in flags:
        flags["as"] = flags.pop("as_user")
    given.update(flags)
    return load_settings(flags=given, config_file=config)


def live_options(settings: Settings, namespace: str | None, progress: Callable[[str], None] | None,
                 default_since: str, save: str | None = None) -> LiveOptions:
    """LiveOptions for live `why` and `snapshot`, from the layered settings."""
    from kueuediag.live import LiveOptions

    return LiveOptions(
        kubeconfig=settings.kubeconfig, context=settings.context, as_user=settings.as_user,
        as_groups=list(settings.as_groups), namespace=namespace, kueue_namespace=settings.kueue_namespace,
        since=settings.since or default_since,  # type: ignore[arg-type]
        timeout=settings.timeout, prometheus_url=settings.prometheus_url,
        prometheus_headers=list(settings.prometheus_header),  # type: ignore[arg-type]
        prometheus_ca=settings.prometheus_ca, prometheus_insecure=settings.prometheus_insecure,
        verbose=settings.verbose, save=save, progress=progress, report=lambda line: typer.echo(line, err=True))


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
