from __future__ import annotations

from pathlib import Path

import pytest

from kueuediag.config import load_settings
from kueuediag.errors import InputError
from kueuediag.models import Severity


def test_precedence_file_env_flags(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.kueuediag]\nselect = ["KD1"]\nignore = ["KD501"]\nfail_on = "low"\n'
        '[tool.kueuediag.severity]\nKD101 = "high"\n[tool.kueuediag.checks.KD101]\nviolation_minutes = 15\n')
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    s = load_settings(cwd=sub, env={})
    assert s.select == ["KD1"] and s.ignore == ["KD501"] and s.fail_on is Severity.LOW
    assert s.severity == {"KD101": Severity.HIGH} and s.check_options == {"KD101": {"violation_minutes": 15}}
    s = load_settings(cwd=sub, env={"KUEUEDIAG_SELECT": "KD2,KD3", "KUEUEDIAG_FAIL_ON": "high"})
    assert s.select == ["KD2", "KD3"] and s.fail_on is Severity.HIGH
    s = load_settings(cwd=sub, env={"KUEUEDIAG_SELECT": "KD2"}, flags={"select": ["KD9"]})
    assert s.select == ["KD9"]


def test_yaml_config_wins_over_pyproject_in_same_folder(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.kueuediag]\nselect = ["KD1"]\n')
    (tmp_path / ".kueuediag.yaml").write_text("select: [KD2]\n")
    assert load_settings(cwd=tmp_path, env={}).select == ["KD2"]


@pytest.mark.parametrize(("text", "message"), [
    ("select: [KD2\n", "invalid YAML"),
    ("- a\n", "expected a mapping"),
    ("colour: red\n", "unknown setting"),
    ("fail_on: worst\n", "unknown severity"),
])
def test_bad_config_is_an_input_error(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / ".kueuediag.yaml").write_text(text)
    with pytest.raises(InputError, match=message):
        load_settings(cwd=tmp_path, env={})
