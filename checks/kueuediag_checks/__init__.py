"""The built-in kueuediag checks, published through the `kueuediag.checks` entry point.

`builtin_checks()` is the one explicit list: no registration by import side effects.
"""

from __future__ import annotations

from importlib import import_module

from kueuediag.check import Check

_MODULES: tuple[tuple[str, str], ...] = (
    ("kueuediag_checks.workload_state", "WorkloadState"),
    ("kueuediag_checks.quota", "QuotaCheck"),
    ("kueuediag_checks.queue_position", "QueuePosition"),
    ("kueuediag_checks.fragmentation", "Fragmentation"),
    ("kueuediag_checks.release_state", "ReleaseState"),
    ("kueuediag_checks.guarantee_violation", "GuaranteeViolation"),
)


def builtin_checks() -> list[type[Check]]:
    out: list[type[Check]] = []
    for module, cls in _MODULES:
        out.append(getattr(import_module(module), cls))
    return out
