"""Helpers for testing checks — kueuediag's own and third-party plugins alike.

`findings_of` flattens a CheckResult into what the check said (its findings, and its contributions as the
findings they would become). The YAML case runner lives here too (see `load_cases` / `run_case`), so a plugin
author runs case files the way the built-in checks do.
"""

from __future__ import annotations

from kueuediag.merge import contribution_finding
from kueuediag.models import CheckResult, Finding


def findings_of(result: CheckResult | list[Finding], code: str = "", check: str = "") -> list[Finding]:
    """The findings a check returned plus its contributions (stamped with `code`/`check`) as findings."""
    if isinstance(result, list):
        return result
    return [*result.findings, *(contribution_finding(code, check, c) for c in result.contributions)]
