"""kueuediag.records.dataclass behaves as the standard library's dataclass: it only builds three methods cheaper."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from kueuediag import records


def _pair(frozen: bool) -> tuple[Any, Any]:
    """The same class body made by both decorators."""

    def body() -> type:
        class Point:
            x: int
            y: str = "b"
            tags: list[str] = dataclasses.field(default_factory=list)
            note: str = dataclasses.field(default="", compare=False, repr=False)

        return Point

    return dataclasses.dataclass(frozen=frozen)(body()), records.dataclass(frozen=frozen)(body())


@pytest.mark.parametrize("frozen", [False, True])
def test_same_repr_eq_fields_replace(frozen: bool) -> None:
    std, ours = _pair(frozen)
    args: tuple[tuple[Any, ...], ...] = ((1,), (2, "q", ["a"], "n"))
    for given in args:
        a, b = std(*given), ours(*given)
        assert repr(a) == repr(b)
        assert dataclasses.astuple(a) == dataclasses.astuple(b)
        assert dataclasses.asdict(a) == dataclasses.asdict(b)
        assert [f.name for f in dataclasses.fields(b)] == ["x", "y", "tags", "note"]
        assert dataclasses.replace(b, x=9).x == 9
        assert dataclasses.replace(b, x=9) != b
    # the compare=False field does not take part in equality; another class never equals
    assert ours(1, note="a") == ours(1, note="b")
    assert ours(1) != ours(2)
    assert ours(1) != std(1)
    assert ours(1).__eq__(std(1)) is NotImplemented
    assert ours(1, "b", ["x"]) == ours(1, "b", ["x"])
    assert ours.__match_args__ == std.__match_args__
    assert ours.__repr__.__qualname__ == "_pair.<locals>.body.<locals>.Point.__repr__"


def test_frozen_hash_is_the_standard_hash_and_assignment_refused() -> None:
    std, ours = _pair(True)
    a, b = std(1, "b", []), ours(1, "b", [])
    with pytest.raises(TypeError):  # a list field: unhashable, exactly as the standard one
        hash(a)
    with pytest.raises(TypeError):
        hash(b)

    @dataclasses.dataclass(frozen=True)
    class S:
        a: int
        b: str = "z"
        c: int = dataclasses.field(default=0, hash=False)

    @records.dataclass(frozen=True)
    class R:
        a: int
        b: str = "z"
        c: int = dataclasses.field(default=0, hash=False)

    assert hash(S(3)) == hash(R(3)) == hash((3, "z"))
    assert hash(R(3, c=1)) == hash(R(3, c=2))
    assert {R(1), R(1), R(2)} == {R(1), R(2)}
    with pytest.raises(dataclasses.FrozenInstanceError):
        R(1).a = 2  # type: ignore[misc]


def test_one_field_and_no_field() -> None:
    @records.dataclass(frozen=True)
    class One:
        a: int

    @records.dataclass(frozen=True)
    class Zero:
        pass

    assert hash(One(5)) == hash((5,)) and One(5) == One(5) and One(5) != One(6)
    assert repr(One(5)) == "test_one_field_and_no_field.<locals>.One(a=5)"
    assert Zero() == Zero() and hash(Zero()) == hash(()) and repr(Zero()).endswith("Zero()")


def test_mutable_is_unhashable_and_methods_of_the_body_are_kept() -> None:
    @records.dataclass
    class M:
        a: int

    @records.dataclass(frozen=True)
    class Own:
        a: int

        def __repr__(self) -> str:
            return "own"

        def __eq__(self, other: object) -> bool:
            return True

        def __hash__(self) -> int:
            return 7

    @records.dataclass(frozen=True)
    class EqOnly:
        a: int

        def __eq__(self, other: object) -> bool:
            return isinstance(other, EqOnly)

    assert M.__hash__ is None
    m = M(1)
    m.a = 2
    assert m == M(2)
    assert repr(Own(1)) == "own" and Own(1) == Own(2) and hash(Own(1)) == 7
    assert EqOnly(1) == EqOnly(2) and hash(EqOnly(1)) == hash((1,))  # a frozen class gets the field hash


def test_recursive_repr_does_not_loop() -> None:
    @records.dataclass
    class Node:
        child: Any = None

    n = Node()
    n.child = n
    assert repr(n) == "test_recursive_repr_does_not_loop.<locals>.Node(child=...)"
