"""Bounds on what a snapshot may make kueuediag read, parse and keep (docs/snapshot-format.md#bounds).

A snapshot is untrusted input: a bug report attached to a ticket, a tarball from another team. Every resource a
reader spends is bounded here, with defaults an order of magnitude above the largest real cluster kueuediag is
measured on (bench/: 200 MB, 72,000 objects), and each bound can be raised with a flag or a config key.
"""

from __future__ import annotations

import math
from dataclasses import fields, replace
from typing import Any

from kueuediag.errors import InputError, shown
from kueuediag.records import dataclass

MiB = 1024 * 1024
GiB = 1024 * MiB


@dataclass(frozen=True)
class Limits:
    """Read bounds; the field names are the config keys (``limits: {max_bytes: 4Gi}``) and, dashed, the flags."""

    max_bytes: int = 2 * GiB
    """bytes read in total (after decompression, including archive members that are skipped over)"""
    max_file_bytes: int = 512 * MiB
    """bytes of one file; a longer log keeps its last max_file_bytes"""
    max_files: int = 200_000
    """files (or archive members) looked at"""
    max_objects: int = 1_000_000
    """Kubernetes objects"""
    max_log_lines: int = 2_000_000
    """controller log lines in total; beyond it the newest lines are kept"""
    max_series: int = 200_000
    """metric series"""
    max_alias_nodes: int = 10_000
    """nodes a YAML document's aliases may expand to (kubectl never writes aliases)"""


DEFAULT_LIMITS = Limits()
FLAG_NAMES = {f.name: "--" + f.name.replace("_", "-") for f in fields(Limits)}


def parse_limit(name: str, value: Any) -> int:
    """A positive whole number; byte bounds also take Kubernetes quantities (``512Mi``, ``2Gi``, ``1G``)."""
    from kueuediag.quantity import parse_quantity

    if isinstance(value, bool):
        raise InputError(f"{FLAG_NAMES.get(name, name)}: expected a positive whole number, got {shown(value)}")
    try:
        number = parse_quantity(value) if isinstance(value, str) else value
        if isinstance(number, float) and not math.isfinite(number):
            raise ValueError
        whole = int(number)
    except (InputError, ValueError, TypeError, OverflowError, ArithmeticError):
        raise InputError(f"{FLAG_NAMES.get(name, name)}: expected a positive whole number"
                         f"{' or a quantity such as 512Mi' if 'bytes' in name else ''}, got {shown(value)}") from None
    if whole != number or whole <= 0:
        raise InputError(f"{FLAG_NAMES.get(name, name)}: expected a positive whole number, got {shown(value)}")
    return whole


def limits_from(values: dict[str, Any], base: Limits = DEFAULT_LIMITS, origin: str = "limits") -> Limits:
    """``base`` with the given bounds replaced (unknown names are an input error)."""
    known = {f.name for f in fields(Limits)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise InputError(f"{origin}: unknown limit(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    return replace(base, **{k: parse_limit(k, v) for k, v in values.items() if v is not None})
