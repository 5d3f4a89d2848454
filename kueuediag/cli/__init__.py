"""The kueuediag command line. It only parses and delegates: one module per command.

Heavy libraries (rich, kubernetes, urllib3) are imported inside commands, so `--help` and
snapshot-only runs stay fast. The same app runs as `kueuediag` and as the kubectl plugin `kubectl kueuediag`
(console script `kubectl-kueuediag`, see docs/kubectl-plugin.md).
"""

from __future__ import annotations

import gc
import re
import sys
from collections.abc import Iterator, MutableMapping
from enum import Enum
from functools import cache
from typing import Any

import typer
from typer.core import TyperGroup

from kueuediag import __version__
from kueuediag.records import dataclass

PROG = "kueuediag"
PLUGIN_PROG = "kubectl kueuediag"
COMPLETE_VAR = "_KUEUEDIAG_COMPLETE"
"""the environment variable Typer's completion protocol uses for this program (bash/zsh/fish scripts set it)"""


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kueuediag {__version__}")
        raise typer.Exit(0)


class _RootGroup(TyperGroup):
    """The root command group: it spares every command's parameters Typer's pydantic coercion where it is moot.

    Typer (0.2x) coerces each parameter's value through a pydantic TypeAdapter (built per parameter, on every
    run) unless the value is already a bool. The root group's `--help`, `--install-completion` and
    `--show-completion` are flags without a default, so even `kueuediag why --help` built adapters for them and
    imported pydantic (a third of its time); a `why` run built one per option, 0.1 s of a small diagnosis.
    See `_spare_coercion`.
    """

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _LazyCommands(self.rich_markup_mode)

    def get_params(self, ctx: Any) -> list[Any]:  # click.Context (vendored by recent Typer)
        params: list[Any] = super().get_params(ctx)
        _spare_coercion(params)
        return params

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            _spare_coercion(command.get_params(ctx))
        return command


COMMANDS: tuple[tuple[str, str], ...] = (
    ("why", "why_cmd"), ("health", "health_cmd"), ("rules", "rules_cmd"), ("demo", "demo_cmd"),
    ("checks", "checks_cmd"), ("explain", "explain_cmd"), ("snapshot", "snapshot_cmd"),
    ("completion", "completion_cmd"),
)
"""every command, in the order `--help` lists them, and its module under kueuediag.cli (whose `register(app)`
adds it)"""


class _LazyCommands(MutableMapping[str, Any]):
    """The root group's commands by name; each command's module is imported, and the command made into a click
    command, the first time it is looked up.

    Typer builds every command of a group before it parses the command line (reading each command function's
    signature and type hints and making its parameters: ~15 ms for the eight commands, plus importing their
    modules); a run needs one. Typer's group reads its commands only through this mapping (looking one up,
    listing the names for help and for "did you mean"), so `kueuediag why …` imports and builds `why` alone and
    `kueuediag --help` builds them all, in the order of `COMMANDS`, as before.
    """

    def __init__(self, rich_markup_mode: Any) -> None:
        self._modules: dict[str, str | None] = dict(COMMANDS)  # None: added already built (add_command)
        self._markup = rich_markup_mode
        self._built: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            from importlib import import_module

            from typer.main import get_command_from_info

            module = self._modules[name]  # KeyError: no such command
            assert module is not None  # only added commands have none, and they are built
            holder = typer.Typer()
            import_module(f"kueuediag.cli.{module}").register(holder)
            [info] = holder.registered_commands
            self._built[name] = get_command_from_info(info, pretty_exceptions_short=holder.pretty_exceptions_short,
                                                      rich_markup_mode=self._markup)
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._modules.setdefault(name, None)
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._modules[name]
        self._built.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __len__(self) -> int:
        return len(self._modules)


def _spare_coercion(params: list[Any]) -> None:
    """Unexposed flags given no value read as False (not coerced at all), plain `str` parameters pass their
    value through unchanged — what pydantic's str validation does with the strings a command line holds — and
    every other parameter builds Typer's coercion only when it has a value to coerce (`_deferred_coercion`).

    Uses Typer's own coercion classes; with a Typer that has none (older or newer internals), the parameters are
    left as they are and Typer coerces them as usual.
    """
    pass_through: Any = None
    deferred: Any = None
    try:
        from typer._coercion import PassThroughRuntimeParam

        pass_through = PassThroughRuntimeParam
        deferred = _deferred_coercion()
    except ImportError:  # pragma: no cover - depends on the Typer version
        pass
    for param in params:
        # only flags whose value no command sees (--help, --install-completion: callbacks test it for truth);
        # a command's own flags keep None, which the settings layering reads as "not given"
        if getattr(param, "is_flag", False) and param.default is None and not param.expose_value:
            param.default = False
        desc = getattr(param, "type_descriptor", None)
        if pass_through is None or desc is None or getattr(param, "_runtime_param", False) is not None:
            continue
        try:
            plain = desc.annotation is str and not (desc.is_list or desc.is_tuple or desc.is_choice or desc.is_file
                                                    or desc.is_path or desc.is_datetime)
            if plain:
                param._runtime_param = pass_through(annotation=str, parameter_info=desc.parameter_info)
            else:
                param._runtime_param = deferred(annotation=desc.annotation, parameter_info=desc.parameter_info,
                                                descriptor=desc)
        except (AttributeError, TypeError):  # pragma: no cover - other Typer internals: leave it to Typer
            continue


@cache
def _deferred_coercion() -> type[Any]:
    """A Typer runtime parameter that builds Typer's own coercion for its parameter on the first value to coerce.

    Typer builds a pydantic TypeAdapter per parameter before it looks at the value, also for an option the
    command line leaves unset, whose value (None, or () for a multi-value option) `RuntimeParam.coerce` answers
    without coercing. `why` has ~15 such options; their adapters were ~20 ms of a small diagnosis. A value that
    is given goes through exactly the coercion Typer would have built (same conversions, same error messages).
    An Enum option without a parser (`-o`) is coerced by Typer's adapter with `coerce_cli_choice` alone; that
    function is called directly, and only a value it refuses goes to the adapter (which refuses it with Typer's
    message). `kueuediag checks` then imports no pydantic at all (its `-o` has a default).
    A number written plainly (`--timeout 30`, `--jobs 2`: digits, for a float with one decimal point) inside the
    option's range is converted by `int`/`float`, as pydantic converts it; any other spelling, a value out of
    range and a clamping option go to Typer's adapter, which converts or refuses them with its own message.
    Raises ImportError when this Typer has no such internals.
    """
    from typer._coercion import RuntimeParam, build_runtime_param
    from typer._param_types import coerce_cli_choice

    @dataclass(frozen=True)
    class DeferredRuntimeParam(RuntimeParam):
        descriptor: Any = None

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            annotation = self.annotation
            if (annotation is int or annotation is float) and type(value) is str:
                number = _plain_number(value, annotation, self.parameter_info)
                if number is not None:
                    return number
            if isinstance(annotation, type) and issubclass(annotation, Enum) and self.parameter_info.parser is None:
                try:
                    return coerce_cli_choice(value, choices=list(annotation),
                                             case_sensitive=self.parameter_info.case_sensitive, ctx=ctx)
                except ValueError:
                    pass  # refused: Typer's own coercion refuses it, with its message
            built = self.__dict__.get("_built")
            if built is None:
                built = build_runtime_param(self.descriptor)
                object.__setattr__(self, "_built", built)
            return built._coerce_value(value, param=param, ctx=ctx)

    return DeferredRuntimeParam


_PLAIN_INT = re.compile(r"[0-9]{1,18}")
_PLAIN_FLOAT = re.compile(r"[0-9]{1,15}(?:\.[0-9]{1,15})?")


def _plain_number(text: str, kind: type[int] | type[float], info: Any) -> int | float | None:
    """`text` as `kind` when it is written plainly and inside the option's range (`info`: Typer's
    ParameterInfo), else None: the caller leaves it to Typer's coercion."""
    if getattr(info, "clamp", True) or not (_PLAIN_INT if kind is int else _PLAIN_FLOAT).fullmatch(text):
        return None
    number = kind(text)
    low, high = getattr(info, "min", None), getattr(info, "max", None)
    if (low is not None and number < low) or (high is not None and number > high):
        return None
    return number


def build_app() -> typer.Typer:
    app = typer.Typer(
        cls=_RootGroup,  # its commands are COMMANDS, each imported and built when first used
        name="kueuediag",
        help="Why is my Kueue workload pending? A ranked, evidence-backed verdict from a snapshot or a live cluster.",
        no_args_is_help=True,
        add_completion=True,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )

    @app.callback()
    def _root(
        version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                     help="Print the version and exit."),
    ) -> None:
        """kueuediag: diagnose pending Kueue workloads."""

    return app


def _run(prog_name: str) -> None:
    """One command in its own process: the console entries' body.

    The cyclic GC is paused for the process: a command imports what it runs after parsing its options (the
    checks, their analyses and the result records: ~100,000 objects, none of them garbage) and the
    collector rescanned them again and again while they were being built, ~0.08 s of a small `why` (a fifth of
    its start); the commands that build large object graphs paused it already (`why`, `health`, `snapshot`).
    """
    gc.disable()
    from kueuediag.cli.common import _ProcessEnd, silence_stdout
    from kueuediag.cli.watch import optional_watch_value

    _ProcessEnd.fast_exit = True
    from typer import Abort
    from typer._click.exceptions import ClickException

    app = build_app()
    code: int = 0
    try:
        # not standalone: click would print a usage error as three lines (usage, hint, error); we print one
        result = app(args=optional_watch_value(sys.argv[1:]), prog_name=prog_name, complete_var=COMPLETE_VAR,
                     standalone_mode=False)
        code = result if isinstance(result, int) and not isinstance(result, bool) else 0
    except ClickException as exc:
        code = usage_error(exc, prog_name)
    except Abort:  # Ctrl-D at a prompt
        print(f"{prog_name}: error: aborted", file=sys.stderr)
        code = 1
    except BrokenPipeError:  # `kueuediag ... | head`
        silence_stdout()
    except SystemExit as exc:
        code = _exit_code(exc.code)
    finally:
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            silence_stdout()
    _exit_now(code)


def usage_error(exc: Exception, prog_name: str = PROG) -> int:
    """Print a click usage error as ONE line (`kueuediag: error: …; see 'kueuediag why --help'`); its exit code.

    Every bad invocation (unknown option or command, a value the option's type refuses, a missing argument)
    ends the same way as every other input error: one line on stderr, exit 2 (ExitCode.USAGE).
    """
    from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError

    from kueuediag.errors import clip

    if isinstance(exc, NoArgsIsHelpError):  # a bare `kueuediag`: the help is the answer (on stderr, exit 2)
        exc.show()
        return exc.exit_code
    message = exc.format_message() if isinstance(exc, ClickException) else str(exc)
    message = " ".join(message.split())
    hint = ""
    ctx = getattr(exc, "ctx", None) if isinstance(exc, UsageError) else None
    if ctx is not None and ctx.command.get_help_option(ctx) is not None:
        path = ctx.command_path
        if prog_name != PROG and path.startswith(PROG):
            path = prog_name + path[len(PROG):]
        hint = f" (see '{path} {ctx.help_option_names[0]}')"
    print(f"{PROG if prog_name == PROG else prog_name}: error: {clip(message, 900)}{hint}", file=sys.stderr)
    return exc.exit_code if isinstance(exc, ClickException) else 2


def _exit_code(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    print(value, file=sys.stderr)  # sys.exit("message") semantics
    return 1


def _exit_now(code: int) -> None:
    """End the process without tearing down the object graph.

    A diagnosis of a large cluster leaves millions of small objects behind; freeing them one by one at
    interpreter exit took about a tenth of the run (the commands hand them to `retain_until_exit`, so they are
    not freed when the command returns either). The output is flushed and the atexit handlers run (the
    kubernetes client removes the temporary certificate files it wrote), then the process ends.
    """
    import atexit
    import os

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass
    atexit._run_exitfuncs()
    os._exit(code)


def main() -> None:
    _run(PROG)


def kubectl_main() -> None:
    """`kubectl kueuediag …`: kubectl finds the `kubectl-kueuediag` executable on PATH and runs it."""
    _run(PLUGIN_PROG)


def kubectl_complete_main() -> None:
    """`kubectl_complete-kueuediag`: kubectl (1.26+) runs it to complete `kubectl kueuediag …` on TAB.

    kubectl passes the plugin's words (the last one being completed, possibly empty) and reads cobra's
    completion protocol back: one candidate per line (`value<TAB>description`), then `:<directive>`
    (4 = no file completion).
    """
    from typer._click.shell_completion import CompletionItem, ShellComplete
    from typer.main import get_command

    words = sys.argv[1:]
    incomplete = words[-1] if words else ""

    class _Cobra(ShellComplete):
        name = "cobra"
        source_template = ""

        def source_vars(self) -> dict[str, str]:
            return {}

        def get_completion_args(self) -> tuple[list[str], str]:
            return words[:-1], incomplete

        def format_completion(self, item: CompletionItem) -> str:
            return f"{item.value}\t{item.help}" if item.help else str(item.value)

    try:
        text = _Cobra(get_command(build_app()), {}, PLUGIN_PROG, COMPLETE_VAR).complete()
    except Exception:  # noqa: BLE001 - a completion failure must never break the user's shell
        text = ""
    sys.stdout.write((text + "\n" if text else "") + ":4\n")
