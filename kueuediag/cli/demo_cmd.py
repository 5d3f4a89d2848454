"""`kueuediag demo [SCENARIO]`: run `why` on a snapshot bundled inside the package."""

from __future__ import annotations

import typer

from kueuediag.cli import options as opt
from kueuediag.cli.common import handle_errors, settings_from_flags


def _complete_example(incomplete: str) -> list[str]:
    from kueuediag.examples import list_examples

    return [e.name for e in list_examples() if e.name.startswith(incomplete)]


def register(app: typer.Typer) -> None:
    @app.command("demo")
    @handle_errors
    def demo(
        scenario: str | None = typer.Argument(None, autocompletion=_complete_example,
                                              help="Example name (see --list); default: the first one."),
        list_: bool = typer.Option(False, "--list", help="List the bundled examples."),
        output: opt.OutputFormat | None = opt.OUTPUT,
        quiet: bool | None = opt.QUIET,
        verbose: bool | None = opt.VERBOSE,
        no_color: bool | None = opt.NO_COLOR,
        width: int | None = opt.WIDTH,
    ) -> None:
        """Diagnose a bundled example cluster snapshot (no cluster needed)."""
        from kueuediag.cli.why_cmd import diagnose_and_print
        from kueuediag.errors import InputError
        from kueuediag.examples import find_example, list_examples

        examples = list_examples()
        if list_:
            for ex in examples:
                ns = f" -n {ex.namespace}" if ex.namespace else ""
                typer.echo(f"{ex.name:<24} {ex.title}\n{'':<24} kueuediag why {ex.target}{ns} --from example:{ex.name}")
            raise typer.Exit(0)
        if not examples:
            raise InputError("this installation has no bundled examples")
        ex = find_example(scenario) if scenario else examples[0]
        typer.echo(f"$ kueuediag why {ex.target}{' -n ' + ex.namespace if ex.namespace else ''} "
                   f"--from example:{ex.name}", err=True)
        settings = settings_from_flags(None, output=output.value if output else None, quiet=quiet,
                                       verbose=verbose, no_color=no_color, width=width, exit_zero=True)
        code = diagnose_and_print(target=ex.target, namespace=ex.namespace, source=f"example:{ex.name}", now=None,
                                  settings=settings)
        raise typer.Exit(code)
