"""One parametrised runner over every per-check case file, and the contract that each check has a firing
and a clear case."""

from __future__ import annotations

import pytest

from kueuediag.registry import builtin

from .case_runner import Case, case_problems, load_cases, run_case

CASES = load_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case(case: Case) -> None:
    _, findings = run_case(case)
    problems = case_problems(case, findings)
    assert not problems, "\n".join(problems)


def test_every_check_has_firing_and_clear_cases() -> None:
    by_check: dict[str, tuple[int, int]] = {}
    for c in CASES:
        fire, clear = by_check.get(c.check, (0, 0))
        by_check[c.check] = (fire + (1 if c.expect else 0), clear + (0 if c.expect else 1))
    missing = []
    for cls in builtin():
        fire, clear = by_check.get(cls.code, (0, 0))
        if fire == 0 or clear == 0:
            missing.append(f"{cls.code} ({fire} firing, {clear} clear)")
    assert not missing, f"checks without both a firing and a clear case: {missing}"
