"""The built-in kueuediag checks, published through the `kueuediag.checks` entry point.

`builtin_checks()` is the one explicit list: no registration by import side effects.
"""

from __future__ import annotations

from importlib import import_module

from kueuediag.check import Check

_MODULES: tuple[tuple[str, str], ...] = (
    ("kueuediag_checks.workload_state", "WorkloadState"),
    ("kueuediag_checks.log_patterns", "LogPatterns"),
    ("kueuediag_checks.system_health", "SystemHealth"),
    ("kueuediag_checks.known_issues", "KnownIssues"),
    ("kueuediag_checks.admission_rate", "AdmissionRate"),
    ("kueuediag_checks.preemption", "Preemption"),
    ("kueuediag_checks.fragmentation", "Fragmentation"),
    ("kueuediag_checks.release_state", "ReleaseState"),
    ("kueuediag_checks.guarantee_violation", "GuaranteeViolation"),
    ("kueuediag_checks.fair_sharing", "FairSharing"),
    ("kueuediag_checks.quota", "QuotaCheck"),
    ("kueuediag_checks.queue_position", "QueuePosition"),
    ("kueuediag_checks.queue_existence", "QueueExistence"),
    ("kueuediag_checks.queue_state", "QueueState"),
    ("kueuediag_checks.namespace_selection", "NamespaceSelection"),
    ("kueuediag_checks.resource_coverage", "ResourceCoverage"),
    ("kueuediag_checks.workload_activation", "WorkloadActivation"),
    ("kueuediag_checks.admission_checks", "AdmissionChecks"),
    ("kueuediag_checks.kueue_record", "KueueRecord"),
)


def builtin_checks() -> list[type[Check]]:
    out: list[type[Check]] = []
    for module, cls in _MODULES:
        out.append(getattr(import_module(module), cls))
    return out
