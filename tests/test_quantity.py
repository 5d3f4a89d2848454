from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kueuediag.errors import InputError
from kueuediag.quantity import format_quantity, parse_quantity, parse_resource_list


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1", Decimal(1)),
        ("100m", Decimal("0.1")),
        ("1500m", Decimal("1.5")),
        ("2k", Decimal(2000)),
        ("1Ki", Decimal(1024)),
        ("1Mi", Decimal(1024**2)),
        ("512Gi", Decimal(512 * 1024**3)),
        ("1Ti", Decimal(1024**4)),
        ("1Pi", Decimal(1024**5)),
        ("1Ei", Decimal(1024**6)),
        ("1E", Decimal(10**18)),
        ("1e3", Decimal(1000)),
        ("2.5E-2", Decimal("0.025")),
        ("1.5G", Decimal(1_500_000_000)),
        ("5n", Decimal("5e-9")),
        ("10u", Decimal("1e-5")),
        ("+8", Decimal(8)),
        ("-1", Decimal(-1)),
        (".5", Decimal("0.5")),
        (8, Decimal(8)),
        (0.5, Decimal("0.5")),
    ],
)
def test_parse_quantity_suffixes(text: object, expected: Decimal) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize("junk", ["", "abc", "1.2.3", "10 Gi", "1Gb", "1KI", "Gi", "1e", "--1", True, None, [1]])
def test_junk_quantities_raise_input_error(junk: object) -> None:
    with pytest.raises(InputError, match="invalid quantity"):
        parse_quantity(junk)


def test_resource_list_error_names_the_place() -> None:
    with pytest.raises(InputError, match=r"^Pod a/b: memory: invalid quantity '4 gigs'$"):
        parse_resource_list({"cpu": "1", "memory": "4 gigs"}, "Pod a/b")


def test_millicores_sum_exactly() -> None:
    assert sum((parse_quantity("100m") for _ in range(10)), Decimal(0)) == parse_quantity("1")


@given(st.integers(min_value=0, max_value=10**12), st.sampled_from(["", "k", "M", "G", "T", "Ki", "Mi", "Gi", "Ti"]))
def test_integer_with_suffix_scales_exactly(n: int, suffix: str) -> None:
    factor = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
              "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}[suffix]
    assert parse_quantity(f"{n}{suffix}") == n * factor


@given(st.integers(min_value=0, max_value=10**9))
def test_milli_roundtrip(n: int) -> None:
    assert parse_quantity(f"{n}m") * 1000 == n


@given(st.decimals(min_value=0, max_value=10**6, places=3, allow_nan=False, allow_infinity=False))
def test_exponent_form_equals_plain(d: Decimal) -> None:
    plain = format(d, "f")
    assert parse_quantity(plain) == d
    assert parse_quantity(f"{plain}e0") == d


def test_format_quantity() -> None:
    assert format_quantity(Decimal(512 * 1024**3), "memory") == "512Gi"
    assert format_quantity(Decimal("0.5"), "cpu") == "500m"
    assert format_quantity(Decimal(8), "nvidia.com/gpu") == "8"
