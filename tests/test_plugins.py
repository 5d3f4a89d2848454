"""Third-party checks are first-class: an example plugin (tests/plugin_example/, its own pyproject, code prefix XY
and cause) is installed as a distribution on sys.path — a dist-info with its entry points, the way pip lays it
out — and must be listed by `checks`, documented by `explain`, run by `why` with its own cause, and tested with
kueuediag.testing. Broken plugins are reported and everything else still runs."""

from __future__ import annotations

import json
import shutil
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kueuediag import causes
from kueuediag.cli import build_app
from kueuediag.errors import ExitCode
from kueuediag.registry import builtin, discover_all
from kueuediag.testing import assert_case, load_cases

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE / "plugin_example"
FIXTURES = HERE.parent / "fixtures"
WHY = ["why", "job/sweep-41", "-n", "ml", "--from", str(FIXTURES / "snapshots" / "healthy-burst")]


def _install(site: Path, dist: str, entry_points: dict[str, str]) -> None:
    """Lay out a distribution's metadata the way an installer does: NAME-VERSION.dist-info with entry points."""
    info = site / f"{dist.replace('-', '_')}-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1.0\n")
    lines = ["[kueuediag.checks]", *(f"{k} = {v}" for k, v in entry_points.items())]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The example plugin installed from its pyproject into a fresh site directory on sys.path."""
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    root = tmp_path / "site"
    shutil.copytree(EXAMPLE / "xy_checks", root / "xy_checks")
    _install(root, project["name"], project["entry-points"]["kueuediag.checks"])
    monkeypatch.syspath_prepend(str(root))
    for mod in [m for m in sys.modules if m.split(".")[0] == "xy_checks"]:
        del sys.modules[mod]
    saved = dict(causes.BY_SLUG)
    yield root
    causes.BY_SLUG.clear()
    causes.BY_SLUG.update(saved)
    for mod in [m for m in sys.modules if m.split(".")[0] == "xy_checks"]:
        del sys.modules[mod]


def test_the_example_plugin_is_listed_documented_and_run(site: Path) -> None:
    runner = CliRunner()
    listed = runner.invoke(build_app(), ["checks"])
    assert listed.exit_code == 0
    [row] = [line for line in listed.stdout.splitlines() if line.startswith("XY101")]
    assert "team-label" in row and "xy" in row and "pending jobs" in row

    doc = runner.invoke(build_app(), ["explain", "XY101"])
    assert doc.exit_code == 0 and doc.stdout.startswith("# XY101 team-label")
    assert "## How to fix" in doc.stdout and "kubectl label namespace" in doc.stdout
    cause_doc = runner.invoke(build_app(), ["explain", "missing-team-label"])
    assert cause_doc.exit_code == 0 and "Owning check: XY101" in cause_doc.stdout
    assert "https://example.com/kueuediag-example-plugin#missing-team-label" in cause_doc.stdout

    out = runner.invoke(build_app(), [*WHY, "-o", "json"])
    assert out.exit_code == 0, out.stderr
    doc_json = json.loads(out.stdout)
    [finding] = [f for f in doc_json["findings"] if f["code"] == "XY101"]
    assert finding["cause"] == "missing-team-label" and finding["layer"] == "submission"
    assert finding["title"] == "Job/sweep-41 in namespace ml carries no team label"
    assert finding["docs"] == "https://example.com/kueuediag-example-plugin#xy101"
    assert finding["remediation"] == ["Label the job or its namespace: `kubectl label namespace <ns> team=<team>`."]
    # a blocker of the plugin's own outranks waiting for quota
    assert doc_json["verdict"]["cause"] == "missing-team-label"
    assert next(c for c in doc_json["checks"] if c["code"] == "XY101")["result"] == "fired"


def test_a_plugin_author_runs_yaml_cases_like_the_built_ins(site: Path) -> None:
    from xy_checks import TeamLabel

    cases = load_cases(EXAMPLE / "cases", FIXTURES)
    assert [c.expect != [] for c in cases] == [True, False]
    fired = assert_case(cases[0], [TeamLabel])
    assert fired.cause == "missing-team-label"
    clear = assert_case(cases[1], [TeamLabel])
    assert clear.runs[0].evidence[0].observed == "namespace label team=bio"


def test_broken_plugins_are_reported_and_everything_else_runs(site: Path) -> None:
    _install(site, "broken-plugin", {"broken": "xy_missing_module:Nope"})
    _install(site, "kd-squatter", {"squat": "xy_checks:Squatter"})
    _install(site, "xy-copycat", {"copy": "xy_checks:CopyCat"})
    with (site / "xy_checks" / "__init__.py").open("a") as fh:
        fh.write("\n\nclass Squatter(TeamLabel):\n    __doc__ = TeamLabel.__doc__\n    code = 'KD999'\n"
                 "    name = 'squatter'\n    causes = ()\n\n\n"
                 "class CopyCat(TeamLabel):\n    __doc__ = TeamLabel.__doc__\n    code = 'XY102'\n"
                 "    name = 'copycat'\n    causes = ()\n")
    found = discover_all()
    errors = {e.name: e.error for e in found.errors}
    assert errors["broken"].startswith("failed to load: ModuleNotFoundError: No module named 'xy_missing_module'")
    assert errors["squat"] == "KD999: the prefix KD is reserved for kueuediag's built-in checks"
    assert errors["copy"] == "XY102: prefix XY is already used by kueuediag-example-plugin"
    codes = [c.code for c in found.classes]
    assert "XY101" in codes and {c.code for c in builtin()} <= set(codes)

    runner = CliRunner()
    listed = runner.invoke(build_app(), ["checks"])
    assert listed.exit_code == 0 and "XY101" in listed.stdout
    assert "BROKEN plugin broken (xy_missing_module:Nope): failed to load: ModuleNotFoundError" in listed.stdout
    out = runner.invoke(build_app(), [*WHY, "-o", "json"])
    assert out.exit_code == ExitCode.OK
    assert "kueuediag: warning: check plugin broken (xy_missing_module:Nope) left out" in out.stderr
    assert json.loads(out.stdout)["verdict"]["cause"] == "missing-team-label"


def test_a_plugin_cause_cannot_redefine_a_built_in_one(site: Path) -> None:
    with (site / "xy_checks" / "__init__.py").open("a") as fh:
        fh.write("\n\nclass Hijack(TeamLabel):\n    __doc__ = TeamLabel.__doc__\n    code = 'ZZ103'\n"
                 "    name = 'hijack'\n    causes = (Cause('fragmentation', Layer.KUEUE, Tier.ROOT, 't', 'd', 'r'),)\n")
    _install(site, "hijacker", {"hijack": "xy_checks:Hijack"})
    errors = {e.name: e.error for e in discover_all().errors}
    assert errors["hijack"] == "cause 'fragmentation' clashes with a built-in cause"
    assert causes.cause("fragmentation").owner == "KD201"


def test_a_check_whose_docstring_lacks_sections_is_refused() -> None:
    """The docstring is the doc page: a class without its fixed sections is refused, naming the missing ones."""
    from kueuediag.check import Check, validate_check_class

    class Half(Check):
        """Finds half a thing.

        What it detects:
            Something.

        Evidence:
            A field.
        """

        code = "XY123"
        name = "half-a-thing"

        def run(self, snapshot: object, target: object) -> list[object]:  # type: ignore[override]
            return []

    with pytest.raises(ValueError, match="XY123 half-a-thing: docstring lacks section[(]s[)]: Why the workload "
                                         "stays pending, How to fix, Example$"):
        validate_check_class(Half)
    for cls in builtin():
        validate_check_class(cls)
