"""`kueuediag demo [SCENARIO]`: run `why` on a snapshot bundled inside the package."""

from __future__ import annotations

import typer

from kueuediag.cli.common import handle_errors


def register(app: typer.Typer) -> None:
    @app.command("demo")
    @handle_errors
    def demo(
        scenario: str | None = typer.Argument(None, help="Example name (see --list); default: the first one."),
        list_: bool = typer.Option(False, "--list", help="List the bundled examples."),
        output: str | None = typer.Option(None, "-o", "--output", help="terminal | json | markdown | junit"),
        no_color: bool = typer.Option(False, "--no-color"),
        verbose: bool = typer.Option(False, "-v", "--verbose"),
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
        code = diagnose_and_print(
            target=ex.target, namespace=ex.namespace, source=f"example:{ex.name}", now=None, output=output,
            select=None, ignore=None, severity=None, config=None, fail_on=None, exit_zero=True,
            no_color=no_color, verbose=verbose,
        )
        raise typer.Exit(code)
