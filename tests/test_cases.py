"""One parametrised runner over every per-check case file, and the contract that each check has a firing
and a clear case."""

from __future__ import annotations

import pytest

from kueuediag.registry import discover

from .case_runner import Case, load_cases, match_expectation, run_case

CASES = load_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case(case: Case) -> None:
    _, findings = run_case(case)
    causes = sorted(f.cause for f in findings)
    expected_causes = sorted(e["cause"] for e in case.expect)
    assert causes == expected_causes, (
        f"{case.id}: causes {causes} != expected {expected_causes}; "
        + "; ".join(f"{f.cause}: {f.title}" for f in findings)
    )
    unmatched = list(findings)
    for exp in case.expect:
        errors: list[str] = []
        for f in unmatched:
            problems = match_expectation(f, exp)
            if not problems:
                unmatched.remove(f)
                break
            errors.append(f"{f.cause}/{f.title}: {'; '.join(problems)}")
        else:
            pytest.fail(f"{case.id}: no finding matches {exp}: {errors}")


def test_every_check_has_firing_and_clear_cases() -> None:
    by_check: dict[str, tuple[int, int]] = {}
    for c in CASES:
        fire, clear = by_check.get(c.check, (0, 0))
        by_check[c.check] = (fire + (1 if c.expect else 0), clear + (0 if c.expect else 1))
    missing = []
    for cls in discover():
        fire, clear = by_check.get(cls.code, (0, 0))
        if fire == 0 or clear == 0:
            missing.append(f"{cls.code} ({fire} firing, {clear} clear)")
    assert not missing, f"checks without both a firing and a clear case: {missing}"
