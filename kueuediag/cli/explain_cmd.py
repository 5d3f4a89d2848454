"""`kueuediag explain CODE|CAUSE`: a check's doc page (its docstring) or a cause's catalog entry."""

from __future__ import annotations

import typer

from kueuediag.cli.common import handle_errors


def register(app: typer.Typer) -> None:
    @app.command("explain")
    @handle_errors
    def explain(what: str = typer.Argument(..., help="A check code (KD101), a check name, or a cause slug.")) -> None:
        """Document a check or a cause."""
        from kueuediag.docs import cause_page, check_page, find_doc_subject

        subject = find_doc_subject(what)
        typer.echo(check_page(subject) if not isinstance(subject, str) else cause_page(subject))
