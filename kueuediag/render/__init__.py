"""Renderers: Verdict → text. JSON, Markdown and JUnit are pure; the terminal renderer imports rich lazily."""

from __future__ import annotations

from kueuediag.errors import InputError
from kueuediag.models import Verdict

FORMATS = ("terminal", "json", "markdown", "junit")


def verdict_line(verdict: Verdict) -> str:
    """`--quiet`: the verdict on one line (scripts, chat bots)."""
    return verdict.headline.replace("\n", " ")


def render(verdict: Verdict, fmt: str, *, color: bool = True, width: int | None = None, verbose: bool = False,
           boxes: bool = True) -> str:
    if fmt == "json":
        from kueuediag.render.json_out import render_json

        return render_json(verdict)
    if fmt in ("markdown", "md"):
        from kueuediag.render.markdown import render_markdown

        return render_markdown(verdict)
    if fmt == "junit":
        from kueuediag.render.junit import render_junit

        return render_junit(verdict)
    if fmt == "terminal":
        from kueuediag.render.terminal import render_terminal

        return render_terminal(verdict, color=color, width=width, verbose=verbose, boxes=boxes)
    raise InputError(f"unknown output format {fmt!r} (use {', '.join(FORMATS)})")
