"""Exact Kubernetes resource quantities.

Kubernetes quantities are parsed into :class:`decimal.Decimal` so that `100m + 900m == 1` holds exactly and
`1Ei` does not lose precision. Every suffix the API server accepts is supported: decimal SI
(`n u m "" k M G T P E`), binary (`Ki Mi Gi Ti Pi Ei`) and decimal exponents (`1e3`, `2.5E-2`).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation, localcontext
from functools import lru_cache

from kueuediag.errors import InputError

_BINARY = {
    "Ki": Decimal(1024),
    "Mi": Decimal(1024) ** 2,
    "Gi": Decimal(1024) ** 3,
    "Ti": Decimal(1024) ** 4,
    "Pi": Decimal(1024) ** 5,
    "Ei": Decimal(1024) ** 6,
}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
_RE = re.compile(
    r"^(?P<sign>[+-]?)(?P<num>\d+(?:\.\d*)?|\.\d+)"
    r"(?:(?P<exp>[eE][+-]?\d+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$"
)

ZERO = Decimal(0)


class QuantityError(InputError):
    """A string that is not a valid Kubernetes quantity."""


def parse_quantity(value: object) -> Decimal:
    """Parse a Kubernetes quantity (string, int or float) into an exact Decimal.

    >>> parse_quantity("1500m")
    Decimal('1.500')
    >>> parse_quantity("1Gi") == 1024**3
    True
    """
    if isinstance(value, bool):
        raise QuantityError(f"invalid quantity {value!r}: booleans are not quantities")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, Decimal):
        return value
    if not isinstance(value, str):
        raise QuantityError(f"invalid quantity {value!r}: expected a string or number")
    return _parse_text(value)


@lru_cache(maxsize=4096)
def _parse_text(value: str) -> Decimal:
    """Parse a quantity string (cached: clusters repeat the same few quantities millions of times)."""
    text = value.strip()
    m = _RE.match(text)
    if not m:
        raise QuantityError(f"invalid quantity {value!r}")
    with localcontext() as ctx:
        ctx.prec = 60
        try:
            number = Decimal(m.group("num"))
        except InvalidOperation as exc:  # pragma: no cover - regex guarantees digits
            raise QuantityError(f"invalid quantity {value!r}") from exc
        if m.group("exp"):
            number = number.scaleb(int(m.group("exp")[1:]))
        else:
            suffix = m.group("suffix") or ""
            number = number * (_BINARY.get(suffix) or _DECIMAL[suffix])
        if m.group("sign") == "-":
            number = -number
    return number


def format_quantity(value: Decimal, resource: str = "") -> str:
    """Human form of a quantity: memory-like resources in binary units, fractional cpu in millicores."""
    if _is_bytes(resource):
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            unit = _BINARY[suffix]
            if abs(value) >= unit:
                scaled = (value / unit).quantize(Decimal("0.01")).normalize()
                return f"{format(scaled, 'f')}{suffix}"
    if resource == "cpu" and value != value.to_integral_value():
        return f"{format((value * 1000).normalize(), 'f')}m"
    return format(value.normalize(), "f")


def _is_bytes(resource: str) -> bool:
    return resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-")


def add_into(target: dict[str, Decimal], other: dict[str, Decimal], factor: int | Decimal = 1) -> None:
    """target += other × factor, per resource name."""
    for name, qty in other.items():
        target[name] = target.get(name, ZERO) + qty * factor


def parse_resource_list(raw: object, where: str = "") -> dict[str, Decimal]:
    """Parse a ResourceList mapping (`{"cpu": "2", "memory": "4Gi"}`), naming `where` in errors."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise QuantityError(f"{where or 'resource list'}: expected a mapping, got {type(raw).__name__}")
    out: dict[str, Decimal] = {}
    for name, val in raw.items():
        try:
            out[str(name)] = parse_quantity(val)
        except QuantityError as exc:
            raise QuantityError(f"{where + ': ' if where else ''}{name}: {exc}") from None
    return out
