"""Exit codes and the exceptions that map onto them.

The exit-code contract is part of the CLI's public API: CI gates key on it. The README carries the same
table and a test keeps both in step.
"""

from __future__ import annotations

import reprlib
from enum import IntEnum
from typing import Any


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
    """The cluster could not be reached (no kubeconfig, connection refused, auth failed), Kueue is not installed,
    or the target itself could not be read (a forbidden or failed LIST: the message names the permission)."""
    SAVE_FAILED = 5
    """`why --save PATH`: the verdict was printed, but the snapshot could not be written to PATH."""


EXIT_CODE_MEANINGS: dict[ExitCode, str] = {
    ExitCode.OK: "verdict produced (whatever it says)",
    ExitCode.FINDINGS: "`--fail-on SEVERITY` was given and a finding reached that severity",
    ExitCode.USAGE: (
        "usage or input error (bad flag, unreadable snapshot, junk in the target's own Workload, job or queues)"
    ),
    ExitCode.NOT_FOUND: "target not found (closest names are listed on stderr)",
    ExitCode.UNAVAILABLE: "cluster unreachable, Kueue not installed, or the target could not be read "
                          "(the missing permission or failed request is named)",
    ExitCode.SAVE_FAILED: "`why --save`: the verdict was printed but the snapshot could not be written",
}


MAX_MESSAGE = 1000
"""Longest error message printed; anything longer is cut (a message is one line a human reads)."""


class _BoundedRepr(reprlib.Repr):
    """reprlib with integers bounded too: ``repr`` of a 5,000-digit int raises in Python >= 3.11."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel, self.maxdict, self.maxlist, self.maxtuple, self.maxset = 2, 3, 3, 3, 3
        self.maxstring, self.maxother, self.maxlong = 48, 48, 24

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 128:
            return f"<{'-' if x < 0 else ''}integer of ~{int(x.bit_length() * 0.30103)} digits>"
        return super().repr_int(x, level)


_REPR = _BoundedRepr()


def shown(value: Any, limit: int = 60) -> str:
    """A value as it may appear in an error message: a bounded, one-line repr.

    Never materialises the whole value: a YAML alias bomb or a 100,000-deep list renders in constant time.
    """
    try:
        text = _REPR.repr(value)
    except Exception:  # noqa: BLE001 - a value whose repr fails is still named by its type
        text = f"<{type(value).__name__}>"
    text = one_line(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def clip(value: Any, limit: int = 80) -> str:
    """A name or message from the input as plain text (strings unquoted), one line, at most `limit` characters."""
    if not isinstance(value, str):
        return shown(value, limit)
    text = one_line(value[: limit * 4])
    return text if len(text) <= limit else text[: limit - 1] + "…"


def one_line(text: str) -> str:
    """Control characters (newlines first) escaped so a message stays one line on any terminal."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


class KueuediagError(Exception):
    """Base class: an error the CLI reports as one line with a documented exit code.

    The message is made one line (control characters escaped) and cut at MAX_MESSAGE characters, whatever the
    caller put in it.
    """

    exit_code: ExitCode = ExitCode.USAGE

    def __init__(self, message: str = "") -> None:
        text = one_line(str(message))
        if len(text) > MAX_MESSAGE:
            text = text[: MAX_MESSAGE - 1] + "…"
        super().__init__(text)


class InputError(KueuediagError):
    """Malformed or unreadable input (snapshot, config, flags).

    ``source`` (the file) and ``field`` say where, when known; :class:`MalformedObject` adds the object.
    """

    exit_code = ExitCode.USAGE

    def __init__(self, message: str = "", *, source: str | None = None, field: str | None = None) -> None:
        super().__init__(message)
        self.source = source
        self.field = field


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


class TargetUnreadable(KueuediagError):
    """The target could not be looked up because the collection of its kind failed (403, timeout, 5xx).

    Never reported as "not found": the object may well exist. The message names what failed and the
    permission that is missing.
    """

    exit_code = ExitCode.UNAVAILABLE


class SaveFailed(KueuediagError):
    """`why --save` could not write the snapshot; the verdict was printed before this is reported."""

    exit_code = ExitCode.SAVE_FAILED


class ClusterUnavailable(KueuediagError):
    """Live mode could not talk to the cluster at all."""

    exit_code = ExitCode.UNAVAILABLE
