"""The CLI contract: exit codes, stdout/stderr separation, output formats, no tracebacks."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kueuediag.cli import COMMANDS, build_app
from kueuediag.errors import EXIT_CODE_MEANINGS, ExitCode

ROOT = Path(__file__).resolve().parent.parent
BASIC = str(ROOT / "fixtures" / "snapshots" / "basic")


@pytest.fixture()
def runner() -> CliRunner:
    return CliRunner()


def _invoke(runner: CliRunner, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(build_app(), list(args), env={"NO_COLOR": "1"})
    return result.exit_code, result.stdout, result.stderr


def test_why_json_goes_to_stdout_only(runner: CliRunner) -> None:
    code, out, err = _invoke(runner, "why", "job/resnet-train", "-n", "team-a", "--from", BASIC, "-o", "json")
    assert code == ExitCode.OK
    doc = json.loads(out)
    assert doc["schema"] == "kueuediag/why/v1"
    assert doc["workload"]["name"] == "job-resnet-train-3c1d2"
    assert doc["workload"]["owner"] == {"kind": "Job", "name": "resnet-train"}
    assert doc["verdict"]["cause"] == "not-pending"
    assert {c["code"] for c in doc["checks"]} >= {"KD002"}
    assert err == ""


def test_target_not_found_exit_3_with_suggestions(runner: CliRunner) -> None:
    code, out, err = _invoke(runner, "why", "job/resnet-trian", "--from", BASIC)
    assert code == ExitCode.NOT_FOUND
    assert out == ""
    assert "not found" in err and "job/resnet-train -n team-a" in err


def test_bad_input_exit_2_one_line(runner: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "objects").mkdir()
    (tmp_path / "objects" / "x.yaml").write_text("kind: [\n")
    code, out, err = _invoke(runner, "why", "job/x", "--from", str(tmp_path))
    assert code == ExitCode.USAGE
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("kueuediag: error: ") and "invalid YAML" in err
    assert "Traceback" not in err


def test_bad_flags_exit_2(runner: CliRunner) -> None:
    code, _, err = _invoke(runner, "why", "job/resnet-train", "--from", BASIC, "-o", "xml")
    assert code == ExitCode.USAGE and "'xml' is not one of 'terminal', 'json', 'markdown', 'junit'" in err
    code, _, err = _invoke(runner, "why", "job/resnet-train", "--from", BASIC, "--select", "KD999")
    assert code == ExitCode.USAGE and "unknown check" in err
    code, _, err = _invoke(runner, "why", "job/resnet-train", "--from", BASIC, "--now", "soon")
    assert code == ExitCode.USAGE and "invalid timestamp" in err


def test_markdown_and_junit(runner: CliRunner) -> None:
    code, out, _ = _invoke(runner, "why", "workload/job-resnet-train-3c1d2", "--from", BASIC, "-o", "markdown")
    assert code == 0 and out.startswith("## kueuediag verdict: `not-pending`") and "| KD002 | workload-state |" in out
    code, out, _ = _invoke(runner, "why", "job-resnet-train-3c1d2", "--from", BASIC, "-o", "junit")
    assert code == 0 and out.startswith("<testsuite") and 'name="KD002 workload-state"' in out


def test_terminal_output_no_color_has_no_escape_codes(runner: CliRunner) -> None:
    code, out, _ = _invoke(runner, "why", "job/resnet-train", "--from", BASIC, "--no-color")
    assert code == 0
    assert "\x1b[" not in out
    assert "VERDICT The workload is not pending  (not-pending)" in out and "admitted by ClusterQueue team-a" in out


def test_fail_on_and_exit_zero(runner: CliRunner) -> None:
    # not-pending never trips the gate
    code, _, _ = _invoke(runner, "why", "job/resnet-train", "--from", BASIC, "--fail-on", "info")
    assert code == ExitCode.OK


def test_explain_and_checks(runner: CliRunner) -> None:
    code, out, _ = _invoke(runner, "explain", "KD002")
    assert code == 0 and out.startswith("# KD002 workload-state") and "## How to fix" in out
    code, out, _ = _invoke(runner, "explain", "waiting-for-quota")
    assert code == 0 and "# cause `waiting-for-quota`" in out and "Layer: kueue" in out
    code, _, err = _invoke(runner, "explain", "KD9999")
    assert code == ExitCode.NOT_FOUND and "no check or cause" in err
    code, out, _ = _invoke(runner, "checks", "-o", "json")
    assert code == 0 and any(r["code"] == "KD002" for r in json.loads(out))


def test_version(runner: CliRunner) -> None:
    from kueuediag import __version__

    code, out, _ = _invoke(runner, "--version")
    assert code == 0 and out.strip() == f"kueuediag {__version__}"


def test_readme_exit_code_table_matches_enum() -> None:
    readme = (ROOT / "README.md").read_text()
    rows = dict(re.findall(r"^\| (\d) \| (.+?) \|$", readme, flags=re.M))
    assert {int(k) for k in rows} == {int(c) for c in ExitCode}
    for code, meaning in EXIT_CODE_MEANINGS.items():
        assert rows[str(int(code))] == meaning


HELP_MUST_NOT_IMPORT = (
    "kubernetes", "prometheus_api_client", "urllib3", "pandas",  # live collection only
    "rich",  # terminal rendering only
    "pydantic", "pydantic_core",  # validation of result records; Typer's option coercion (see cli._RootGroup)
    "yaml",  # snapshot and data-table parsing
    "importlib.metadata",  # the check plugin scan
    "kueuediag.models", "kueuediag.engine", "kueuediag.snapshot", "kueuediag.analysis", "kueuediag_checks",
)
"""what printing help must not import: the modules that made `--help`/`why --help` slow (issue 9, issue 11)"""


@pytest.mark.parametrize("args", [["--help"], ["why", "--help"], ["snapshot", "--help"], ["health", "--help"],
                                  ["checks", "--help"]], ids=" ".join)
def test_help_does_not_import_heavy_modules(args: list[str]) -> None:
    """Through the real console entry (`main`, which ends the process with `os._exit` after the atexit hooks)."""
    code = (
        "import atexit, os, sys\n"
        f"heavy = {HELP_MUST_NOT_IMPORT!r}\n"
        "def report():\n"
        "    loaded = sorted({h for h in heavy for m in sys.modules if m == h or m.startswith(h + '.')})\n"
        "    sys.stdout.write('HEAVY=' + ','.join(loaded) + '\\n')\n"
        "atexit.register(report)\n"
        f"sys.argv = ['kueuediag', *{args!r}]\n"
        "from kueuediag.cli import main\n"
        "main()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "NO_COLOR": "1"})
    assert out.returncode == 0, out.stderr
    assert "Usage: kueuediag" in out.stdout
    assert out.stdout.strip().splitlines()[-1] == "HEAVY="


def test_snapshot_path_does_not_import_kubernetes() -> None:
    code = (
        "import sys\n"
        "from kueuediag.cli import build_app\n"
        f"args = ['why', 'job/resnet-train', '--from', {BASIC!r}, '-o', 'json']\n"
        "try:\n    build_app()(args, prog_name='kueuediag')\n"
        "except SystemExit:\n    pass\n"
        "print('HEAVY=' + ','.join(m for m in ('kubernetes', 'prometheus_api_client') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "HEAVY=\n" in out.stdout + "\n"


SNAPSHOT_WHY_MUST_NOT_IMPORT = (
    "kubernetes", "prometheus_api_client", "urllib3", "requests", "pandas",  # live collection only
    "rich", "markdown_it", "pygments",  # terminal rendering only: -o json prints no table
    # the other commands: each is imported and built when it is run or listed (kueuediag.cli.COMMANDS)
    *(f"kueuediag.cli.{module}" for name, module in COMMANDS if name != "why"),
    "pickle",  # only a diagnosis split over two processes sends runs back (kueuediag.split_runs)
    # the result records keep values of their fields' exact types without pydantic (kueuediag.frozen): pydantic,
    # ~0.2 s of a small why, is imported only for a value that needs validating; its plugin loader (which imports
    # importlib.metadata and scans every distribution) never runs
    "pydantic", "pydantic_core", "importlib.metadata",
    # the package's data files are read from the folder beside it (kueuediag.pkgdata), not through
    # importlib.resources' readers (which import zipfile)
    "importlib.resources", "importlib.readers", "zipfile",
)
"""what a diagnosis read from a snapshot, printed as JSON, must not import (issue 11, cold start)"""


def test_every_command_is_listed_in_order_and_built_when_looked_up(runner: CliRunner) -> None:
    """The root group imports and builds a command when it is first looked up (kueuediag.cli.COMMANDS): help
    still lists all of them, in order, with their summaries; a mistyped name still gets its suggestion."""
    import typer.main

    group = typer.main.get_command(build_app())
    assert list(group.commands) == [name for name, _ in COMMANDS]  # type: ignore[attr-defined]
    out = runner.invoke(build_app(), ["--help"])
    listed = [line.split()[0] for line in out.stdout.split("Commands")[1].splitlines()[1:] if line[:3].strip()]
    assert listed == [name for name, _ in COMMANDS]
    assert "Explain why a workload is pending" in out.stdout and "Fleet health" in out.stdout
    why = group.commands["why"]  # type: ignore[attr-defined]
    assert why.name == "why" and any("--from" in p.opts for p in why.params)
    assert group.commands["why"] is why  # type: ignore[attr-defined]  # built once
    code, _, err = _invoke(runner, "healht")
    assert code == 2 and "Did you mean 'health'?" in err


@pytest.mark.parametrize(("source", "numbers"), [("example:fair-sharing-anomaly", []), (str(BASIC), []),
                                                 (str(BASIC), ["--timeout", "30", "--width", "100"])],
                         ids=["example", "directory", "numeric-options"])
def test_snapshot_json_why_does_not_import_live_or_terminal_modules(source: str, numbers: list[str]) -> None:
    """Through the real console entry: the verdict is printed whole, and no module of the live collectors or of
    the terminal renderer was imported for it (nor pydantic for plainly written numbers: `_plain_number`)."""
    target = ["job/rlhf-ppo-70b-r3", "-n", "team-alignment"] if source.startswith("example:") else [
        "job/resnet-train", "-n", "team-a"]
    out = _run_cli_reporting_imports(SNAPSHOT_WHY_MUST_NOT_IMPORT,
                                     ["why", *target, "--from", source, "-o", "json", "--exit-zero", *numbers])
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["verdict"]["cause"]
    assert out.stderr.strip().splitlines()[-1] == "HEAVY="


def test_option_values_are_coerced_as_typer_coerces_them() -> None:
    """Options the command line leaves unset build no coercion (cli._deferred_coercion); a value that is given
    is converted and refused exactly as Typer's own coercion does."""
    bad = subprocess.run([sys.executable, "-m", "kueuediag", "why", "x", "--width", "abc"], capture_output=True,
                         text=True)
    assert bad.returncode == 2
    assert bad.stderr.strip() == ("kueuediag: error: Invalid value for '--width': Input should be a valid integer, "
                                  "unable to parse string as an integer (see 'kueuediag why --help')")
    choice = subprocess.run([sys.executable, "-m", "kueuediag", "why", "x", "-o", "yaml"], capture_output=True,
                            text=True)
    assert choice.returncode == 2
    assert choice.stderr.strip() == ("kueuediag: error: Invalid value for '-o' / '--output': Value error, 'yaml' is "
                                     "not one of 'terminal', 'json', 'markdown', 'junit'. (see 'kueuediag why --help')")
    ok = subprocess.run([sys.executable, "-m", "kueuediag", "why", "job/resnet-train", "-n", "team-a", "--from",
                         str(BASIC), "--width", "100", "--timeout", "2.5", "-o", "JSON", "--exit-zero"],
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["workload"]["owner"] == {"kind": "Job", "name": "resnet-train"}


@pytest.mark.parametrize("value", ["30", "2.5", "0.1", "0.05", "007", "12.000", "1e3", "1_000", " 3", "3.", ".5",
                                   "-1", "+4", "1" * 20, "inf", "nan", "abc", ""])
def test_plainly_written_numbers_skip_typers_adapter_and_agree_with_it(value: str) -> None:
    """A number written plainly is converted without building Typer's pydantic adapter (`_plain_number`); for every
    spelling, the option's value or its refusal is exactly what Typer's own coercion gives: a float option with a
    minimum (`--timeout`, ≥ 0.1) and an int option (`--width`)."""
    import typer.main
    from typer._coercion import build_runtime_param

    group = typer.main.get_command(build_app())
    ctx = group.make_context("kueuediag", ["why", "x"], resilient_parsing=True)
    why = group.get_command(ctx, "why")  # type: ignore[attr-defined]
    params = {p.name: p for p in why.params if p.name in ("timeout", "width")}
    assert len(params) == 2
    for param in params.values():
        ours = param._runtime_param
        typers = build_runtime_param(ours.descriptor)
        results = []
        for runtime in (ours, typers):
            try:
                got: object = runtime._coerce_value(value, param=param, ctx=ctx)
                results.append((type(got).__name__, repr(got)))
            except Exception as exc:  # noqa: BLE001 - Typer's refusal: its type and message must be the same
                results.append((type(exc).__name__, str(exc)))
        assert results[0] == results[1], (param.name, results)


CHECKS_MUST_NOT_IMPORT = (
    "pydantic", "pydantic_core", "yaml", "rich", "kubernetes",
    "kueuediag.models", "kueuediag.engine", "kueuediag.analysis", "kueuediag_checks",
    "importlib.metadata",  # no plugin besides the built-ins is declared (kueuediag.entry_scan reads the files)
    "importlib.resources", "zipfile",  # the catalogue is read from the data folder beside the package (pkgdata)
)
"""what listing the checks must not import: it reads the generated catalogue (issue 11, cold start)"""


@pytest.mark.parametrize("args", [["checks"], ["checks", "-o", "json"]], ids=" ".join)
def test_checks_lists_the_catalogue_without_pydantic_or_the_checks(args: list[str]) -> None:
    """`-o` is an Enum option with a default: its value is coerced without a pydantic adapter
    (cli._deferred_coercion), so `checks` imports no pydantic at all."""
    out = _run_cli_reporting_imports(CHECKS_MUST_NOT_IMPORT, args)
    assert out.returncode == 0, out.stderr
    assert "KD101" in out.stdout
    assert out.stderr.strip().splitlines()[-1] == "HEAVY="
    bad = subprocess.run([sys.executable, "-m", "kueuediag", "checks", "-o", "xml"], capture_output=True, text=True)
    assert bad.returncode == 2
    assert bad.stderr.strip() == ("kueuediag: error: Invalid value for '-o' / '--output': Value error, 'xml' is not "
                                  "one of 'text', 'json'. (see 'kueuediag checks --help')")


def test_process_exit_skips_teardown_but_keeps_output_and_exit_codes(tmp_path: Path) -> None:
    """The console entry ends the process without freeing the object graph: stdout must still be complete,
    stderr flushed, and every documented exit code kept."""
    import json as _json

    kd = [sys.executable, "-m", "kueuediag"]
    ok = subprocess.run([*kd, "demo", "healthy", "-o", "json"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert _json.loads(ok.stdout)["verdict"]["cause"] == "not-pending"  # the whole document arrived
    gate = subprocess.run([*kd, "why", "job/vit-h14-finetune-e3", "-n", "team-vision", "--from",
                           "example:stuck-preemption-target", "--fail-on", "high", "-o", "json"],
                          capture_output=True, text=True)
    assert gate.returncode == 1 and _json.loads(gate.stdout)["verdict"]["cause"] == "stuck-preemption-target"
    missing = subprocess.run([*kd, "why", "job/no-such-job", "-n", "team-bio", "--from", "example:healthy"],
                             capture_output=True, text=True)
    assert missing.returncode == 3 and missing.stderr.startswith("kueuediag: error:"), missing.stderr
    bad = subprocess.run([*kd, "why", "job/x", "--from", str(tmp_path / "absent.tar.gz")],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stderr


@pytest.mark.parametrize("env, code", [({}, ExitCode.FINDINGS), ({"KUEUEDIAG_EXIT_ZERO": "1"}, ExitCode.OK)])
def test_an_unset_flag_leaves_the_environment_setting_in_force(env: dict[str, str], code: ExitCode) -> None:
    """`--exit-zero` not given is None ("not given"), not False: KUEUEDIAG_EXIT_ZERO applies (the CLI spares
    flags Typer's coercion only where no command reads the value, see kueuediag.cli._spare_coercion)."""
    args = ["why", "job/rlhf-ppo-70b-r3", "-n", "team-alignment", "--from", "example:fair-sharing-anomaly",
            "--fail-on", "info", "-q"]
    result = CliRunner().invoke(build_app(), args, env={"NO_COLOR": "1", **env})
    assert result.exit_code == code, result.stderr
    assert "rlhf-ppo-70b-r3 is pending" in result.stdout


def _run_cli_reporting_imports(heavy: tuple[str, ...], args: list[str]) -> subprocess.CompletedProcess[str]:
    """Run `kueuediag ARGS` in a fresh interpreter that prints, as its last stderr line, which of `heavy` (and
    their submodules) it imported: ``HEAVY=`` followed by the list, empty when none."""
    code = (
        "import atexit, sys\n"
        f"heavy = {heavy!r}\n"
        "def report():\n"
        "    loaded = sorted({h for h in heavy for m in sys.modules if m == h or m.startswith(h + '.')})\n"
        "    sys.stderr.write('HEAVY=' + ','.join(loaded) + '\\n')\n"
        "atexit.register(report)\n"
        f"sys.argv = ['kueuediag', *{args!r}]\n"
        "from kueuediag.cli import main\n"
        "main()\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
