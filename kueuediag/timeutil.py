"""RFC3339 timestamps as Kubernetes writes them, and durations for humans."""

from __future__ import annotations

import functools
from datetime import UTC, datetime, timedelta

from kueuediag.errors import InputError


def parse_time(value: object) -> datetime | None:
    """Parse an RFC3339 timestamp (`2026-01-02T03:04:05Z`, with or without fractions/offset).

    Returns None for None/empty; raises InputError for junk.
    """
    if value is None or value == "":
        return None
    if type(value) is str and len(value) == 20 and value[19] == "Z" and value[10] == "T":
        try:  # the form Kubernetes writes (`2026-01-02T03:04:05Z`): read by the parser below, without the rewrites
            return datetime.fromisoformat(value)
        except ValueError:
            pass
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if not isinstance(value, str):
        raise InputError(f"invalid timestamp {value!r}")
    text = value.strip()
    if text.endswith("Z") or text.endswith("z"):
        text = text[:-1] + "+00:00"
    # Python < 3.11 style guard: trim nanoseconds to microseconds.
    if "." in text:
        head, _, tail = text.partition(".")
        digits = ""
        rest = tail
        while rest and rest[0].isdigit():
            digits, rest = digits + rest[0], rest[1:]
        text = f"{head}.{digits[:6].ljust(6, '0')}{rest}"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise InputError(f"invalid timestamp {value!r}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def parse_time_lenient(value: object) -> datetime | None:
    """Like parse_time but returns None instead of raising (for optional, informative fields)."""
    try:
        return parse_time(value)
    except InputError:
        return None


@functools.lru_cache(maxsize=8192)
def format_rfc3339(moment: datetime) -> str:
    """`moment` in UTC as Kubernetes writes times. Cached: a fleet scan formats the same condition and release
    times for every pending workload of a ClusterQueue (a datetime is immutable and hashes by its instant)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def human_duration(seconds: float | timedelta | None) -> str:
    """`3h12m`, `45s`, `2d4h` — what an on-call engineer reads at a glance."""
    if seconds is None:
        return "unknown"
    if isinstance(seconds, timedelta):
        seconds = seconds.total_seconds()
    sign = "-" if seconds < 0 else ""
    total = int(abs(seconds))
    days, rem = divmod(total, 86400)
    hours, rem = divmod(rem, 3600)
    minutes, secs = divmod(rem, 60)
    if days:
        return f"{sign}{days}d{hours}h"
    if hours:
        return f"{sign}{hours}h{minutes:02d}m"
    if minutes:
        return f"{sign}{minutes}m{secs:02d}s" if minutes < 10 and secs else f"{sign}{minutes}m"
    return f"{sign}{secs}s"


@functools.lru_cache(maxsize=256)
def parse_duration(text: str) -> timedelta:
    """Parse `90s`, `15m`, `2h`, `1d`, `1h30m` (as used by --since and thresholds). Cached (pure, and the result is
    immutable): KD301 reads its two window options for every pending workload of a fleet scan."""
    import re

    if not text or not re.fullmatch(r"(\d+(\.\d+)?[smhd])+", text.strip()):
        raise InputError(f"invalid duration {text!r} (use e.g. 30s, 15m, 2h, 1d)")
    total = 0.0
    for num, _, unit in re.findall(r"(\d+(\.\d+)?)([smhd])", text):
        total += float(num) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[unit]
    return timedelta(seconds=total)
