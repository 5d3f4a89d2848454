"""Exit codes and the exceptions that map onto them.

The exit-code contract is part of the CLI's public API: CI gates key on it. The README carries the same
table and a test keeps both in step.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes of every kueuediag command."""

    OK = 0
    """A verdict (or the requested listing) was produced."""
    FINDINGS = 1
    """`health` or `why --fail-on`: findings at or above the gate severity were found."""
    USAGE = 2
    """Usage or input error: bad flags, unreadable or malformed snapshot, junk quantities."""
    NOT_FOUND = 3
    """The target workload (or check code / cause) does not exist in the snapshot."""
    UNAVAILABLE = 4
    """Live mode: the cluster could not be reached at all (no kubeconfig, connection refused, auth failed)."""


EXIT_CODE_MEANINGS: dict[ExitCode, str] = {
    ExitCode.OK: "verdict produced (whatever it says)",
    ExitCode.FINDINGS: "`--fail-on SEVERITY` was given and a finding reached that severity",
    ExitCode.USAGE: (
        "usage or input error (bad flag, unreadable snapshot, junk in the target's own Workload, job or queues)"
    ),
    ExitCode.NOT_FOUND: "target not found (closest names are listed on stderr)",
    ExitCode.UNAVAILABLE: "live mode: cluster unreachable or Kueue not installed",
}


class KueuediagError(Exception):
    """Base class: an error the CLI reports as one line with a documented exit code."""

    exit_code: ExitCode = ExitCode.USAGE


class InputError(KueuediagError):
    """Malformed or unreadable input (snapshot, config, flags)."""

    exit_code = ExitCode.USAGE


class MalformedObject(InputError):
    """One object in the snapshot is malformed (a junk quantity, a field of the wrong type).

    It carries the object's identity so the engine can tell whether the diagnosis depends on it: junk in the
    target's own Workload or job is exit 2; junk in an unrelated object makes only the checks that read it
    "could not check" (naming object and field), and the rest of the diagnosis goes on.
    """

    def __init__(self, message: str, kind: str, namespace: str | None, name: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.namespace = namespace
        self.name = name

    @property
    def ref(self) -> str:
        return f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"


class TargetNotFound(KueuediagError):
    """The target could not be resolved to any object in the snapshot."""

    exit_code = ExitCode.NOT_FOUND

    def __init__(self, message: str, suggestions: list[str] | None = None) -> None:
        super().__init__(message)
        self.suggestions = suggestions or []


class ClusterUnavailable(KueuediagError):
    """Live mode could not talk to the cluster at all."""

    exit_code = ExitCode.UNAVAILABLE
