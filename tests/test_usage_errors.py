"""Every bad invocation of every command ends with ONE line on stderr and exit 2 (ExitCode.USAGE).

Click prints a usage error as three lines (usage, a "Try … --help" hint, the error); kueuediag prints it as one
line, the same shape as every other input error, with the help hint folded in. The invocations run through the
real entry point (`kueuediag.cli.main`) in a forked child, so the exit path is the installed console script's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kueuediag.errors import ExitCode
from tests.fuzz.harness import run_cli

BASIC = str(Path(__file__).resolve().parent.parent / "fixtures" / "snapshots" / "basic")

# (argv, words the one line must contain, the command whose --help it points at or None)
BAD: list[tuple[list[str], tuple[str, ...], str | None]] = [
    (["why", "x", "--timeout", "nan"], ("--timeout",), "kueuediag why"),
    (["why", "x", "--timeout", "0"], ("--timeout", "0.1"), "kueuediag why"),
    (["why", "x", "--bogus"], ("No such option: --bogus",), "kueuediag why"),
    (["why", "x", "-o", "yaml"], ("'yaml' is not one of",), "kueuediag why"),
    (["why", "x", "--width", "3"], ("--width",), "kueuediag why"),
    (["why", "-o"], ("'-o' requires an argument",), None),
    (["why", "x", "y", "--from", BASIC], ("unexpected extra argument",), "kueuediag why"),
    (["health", "--bogus"], ("No such option: --bogus",), "kueuediag health"),
    (["health", "-o", "nope"], ("'nope' is not one of",), "kueuediag health"),
    (["health", "--watch-count", "0"], ("--watch-count",), "kueuediag health"),
    (["health", "--from"], ("requires an argument",), None),
    (["rules", "--bogus"], ("No such option: --bogus",), "kueuediag rules"),
    (["rules", "--guarantee-minutes", "zero"], ("--guarantee-minutes", "valid integer"), "kueuediag rules"),
    (["rules", "--stuck-minutes", "0"], ("--stuck-minutes",), "kueuediag rules"),
    (["demo", "--bogus"], ("No such option: --bogus",), "kueuediag demo"),
    (["demo", "-o", "xml"], ("'xml' is not one of",), "kueuediag demo"),
    (["checks", "-o", "yaml"], ("'yaml' is not one of",), "kueuediag checks"),
    (["checks", "extra"], ("unexpected extra argument",), "kueuediag checks"),
    (["explain"], ("Missing argument",), "kueuediag explain"),
    (["explain", "KD101", "--bogus"], ("No such option: --bogus",), "kueuediag explain"),
    (["snapshot", "--bogus"], ("No such option: --bogus",), "kueuediag snapshot"),
    (["snapshot", "--timeout", "-1"], ("--timeout",), "kueuediag snapshot"),
    (["completion"], ("Missing argument 'shell'",), "kueuediag completion"),
    (["completion", "tcsh"], ("'tcsh' is not one of",), "kueuediag completion"),
    (["nosuchcommand"], ("No such command 'nosuchcommand'",), "kueuediag"),
    (["--bogus"], ("No such option: --bogus",), "kueuediag"),
]


@pytest.mark.parametrize("argv,words,helped", BAD, ids=[" ".join(a)[:60] for a, _, _ in BAD])
def test_usage_error_is_one_line_exit_2(argv: list[str], words: tuple[str, ...], helped: str | None) -> None:
    out = run_cli(argv, timeout=60)
    assert out.code == ExitCode.USAGE, (out.code, out.stderr)
    assert out.stdout == ""
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and out.stderr.endswith("\n"), out.stderr
    line = lines[0]
    assert line.startswith("kueuediag: error: "), line
    assert "Traceback" not in line and "Usage:" not in line and "Try '" not in line
    for word in words:
        assert word in line, line
    if helped is not None:
        assert line.endswith(f"(see '{helped} --help')"), line


def test_bare_command_still_prints_the_help() -> None:
    """`kueuediag` alone is a request for the overview, not a typo: the help text, exit 2 as before."""
    out = run_cli([], timeout=60)
    assert out.code == ExitCode.USAGE
    assert out.stderr.startswith("Usage: kueuediag [OPTIONS] COMMAND") and "Commands:" in out.stderr


def test_exit_codes_of_commands_pass_through_the_entry_point() -> None:
    """Not standalone mode: a command's own typer.Exit code still reaches the process exit status."""
    found = run_cli(["why", "job/resnet-trian", "--from", BASIC], timeout=60)
    assert found.code == ExitCode.NOT_FOUND and "not found" in found.stderr
    ok = run_cli(["why", "job/resnet-train", "-n", "team-a", "--from", BASIC, "-o", "json"], timeout=60)
    assert ok.code == ExitCode.OK and '"kueuediag/why/v1"' in ok.stdout
    assert run_cli(["--version"], timeout=60).stdout.startswith("kueuediag ")
