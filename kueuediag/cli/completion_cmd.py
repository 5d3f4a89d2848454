"""`kueuediag completion bash|zsh|fish`: print the shell completion script (as `kubectl completion` does).

The script is Typer's; it calls back into kueuediag for each TAB, which completes commands, options, the
`-o` formats, and targets and namespaces from the `--from` snapshot or the live cluster (kueuediag.cli.complete).
`--install-completion` on the root command installs it into the shell's rc file instead.
"""

from __future__ import annotations

from enum import Enum

import typer


class Shell(str, Enum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"


def completion_script(shell: str, prog_name: str = "kueuediag") -> str:
    from typer._completion_shared import get_completion_script

    from kueuediag.cli import COMPLETE_VAR

    return get_completion_script(prog_name=prog_name, complete_var=COMPLETE_VAR, shell=shell) + "\n"


def register(app: typer.Typer) -> None:
    @app.command("completion")
    def completion(shell: Shell = typer.Argument(..., help="The shell to print the script for.")) -> None:
        """Print the completion script: `source <(kueuediag completion bash)`, or save it for zsh/fish."""
        typer.echo(completion_script(shell.value), nl=False)
