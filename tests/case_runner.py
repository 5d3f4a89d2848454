"""kueuediag's own case files (fixtures/cases/KD*.yaml), run by the one runner in kueuediag.testing.

The format is documented there and in docs/contributing.md. The built-in check list is used, so an installed
plugin cannot change these results.
"""

from __future__ import annotations

from pathlib import Path

from kueuediag import testing
from kueuediag.models import Finding, Verdict
from kueuediag.registry import builtin
from kueuediag.testing import Case, case_problems, match_expectation

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

__all__ = ["FIXTURES", "Case", "case_problems", "load_cases", "match_expectation", "run_case"]


def load_cases() -> list[Case]:
    return testing.load_cases(FIXTURES / "cases", FIXTURES, "KD*.yaml")


def run_case(case: Case) -> tuple[Verdict, list[Finding]]:
    return testing.run_case(case, builtin())
