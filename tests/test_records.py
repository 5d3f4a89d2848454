"""kueuediag.records.dataclass behaves as the standard library's dataclass: it only builds three methods cheaper."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

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


def _frozen_bodies() -> list[tuple[str, Any]]:
    """Class bodies (a function returning a fresh class each call) that the frozen path builds itself."""

    def plain() -> type:
        class Plain:
            """Documented."""

            x: int
            y: str = "b"
            tags: list[str] = dataclasses.field(default_factory=list)
            note: str = dataclasses.field(default="", compare=False, repr=False)
            limit: ClassVar[int] = 3

            def double(self) -> int:
                return self.x * 2

        return Plain

    def undocumented() -> type:
        class Undocumented:
            a: int
            seen: dict[str, int] = dataclasses.field(default_factory=dict)

        return Undocumented

    def empty() -> type:
        class Empty:
            pass

        return Empty

    return [("plain", plain), ("undocumented", undocumented), ("empty", empty)]


def _field_rows(cls: type) -> list[tuple[Any, ...]]:
    return [(f.name, f.type, f.default, f.default_factory, f.init, f.repr, f.compare, f.hash, f.kw_only)
            for f in dataclasses.fields(cls)]


@pytest.mark.parametrize("name, body", _frozen_bodies(), ids=[n for n, _ in _frozen_bodies()])
def test_frozen_class_is_the_standard_frozen_class(name: str, body: Any) -> None:
    """The frozen path (its own __setattr__/__delattr__ closures, __init__ from the standard text) gives what
    `dataclasses.dataclass(frozen=True)` gives: signature, annotations, doc, fields, params, match args,
    construction, factories, the refusals and their messages, replace, pickle."""
    import copy
    import inspect
    import pickle

    std, ours = dataclasses.dataclass(frozen=True)(body()), records.dataclass(frozen=True)(body())
    assert records._plain(body())  # this body takes the frozen path
    assert str(inspect.signature(ours)) == str(inspect.signature(std))
    assert ours.__init__.__annotations__ == std.__init__.__annotations__
    assert ours.__init__.__globals__ is std.__init__.__globals__
    assert ours.__doc__ == std.__doc__
    assert _field_rows(ours) == _field_rows(std)
    # the parameters records.dataclass always passes (its repr and eq are not compiled, see _methods)
    assert repr(ours.__dataclass_params__) == repr(
        dataclasses.dataclass(frozen=True, repr=False, eq=False)(body()).__dataclass_params__)
    assert ours.__match_args__ == std.__match_args__
    for method in ("__init__", "__setattr__", "__delattr__"):
        assert getattr(ours, method).__qualname__ == getattr(std, method).__qualname__
    args = {"plain": (1,), "undocumented": (2,), "empty": ()}[name]
    a, b = std(*args), ours(*args)
    assert vars(a) == vars(b) and list(vars(a)) == list(vars(b))
    if name != "empty":
        first = dataclasses.fields(ours)[0].name
        assert dataclasses.replace(b, **{first: 9}) == ours(9, *args[1:])
        other = ours(*args)
        for f in dataclasses.fields(ours):
            if f.default_factory is not dataclasses.MISSING:  # a fresh object per instance, as the standard one
                assert getattr(other, f.name) is not getattr(b, f.name)
    for target in (a, b):  # the same refusals, with the same messages
        with pytest.raises(dataclasses.FrozenInstanceError) as refused:
            target.other = 1
        assert str(refused.value) == "cannot assign to field 'other'"
        with pytest.raises(dataclasses.FrozenInstanceError) as deleted:
            del target.other
        assert str(deleted.value) == "cannot delete field 'other'"
    with pytest.raises(TypeError) as std_err:
        std(*args, *range(9))
    with pytest.raises(TypeError) as our_err:
        ours(*args, *range(9))
    assert str(our_err.value) == str(std_err.value)
    assert copy.copy(b) == b and copy.deepcopy(b) == b
    assert pickle.loads(pickle.dumps(_Pickled(1, ("a",)))) == _Pickled(1, ("a",))


@records.dataclass(frozen=True)
class _Pickled:
    """A module-level frozen class (a local one cannot be pickled)."""

    a: int
    b: tuple[str, ...] = ()


def test_frozen_subclasses_follow_the_standard_rules() -> None:
    """A plain subclass may set its own attributes but not a field; dataclass subclasses are checked against the
    frozen base as the standard library checks them."""
    @records.dataclass(frozen=True)
    class Base:
        a: int

    class Plain(Base):
        pass

    p = Plain(1)
    p.extra = 2  # type: ignore[attr-defined]
    assert p.extra == 2  # type: ignore[attr-defined]
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'a'"):
        p.a = 3  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'a'"):
        del p.a  # type: ignore[misc]

    @records.dataclass(frozen=True)
    class Child(Base):
        b: str = "x"

    assert Child(1).b == "x" and [f.name for f in dataclasses.fields(Child)] == ["a", "b"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        Child(1).b = "y"  # type: ignore[misc]
    with pytest.raises(TypeError, match="cannot inherit non-frozen dataclass from a frozen one"):
        @records.dataclass
        class Mutable(Base):
            c: int = 0


def test_bodies_the_frozen_path_leaves_to_the_standard_decorator() -> None:
    """kw_only, init=False, InitVar, __post_init__, a dataclass base or a body's own __setattr__ go to the
    standard decorator, which handles them (and refuses what it refuses)."""
    @records.dataclass(frozen=True)
    class Post:
        a: int
        b: int = dataclasses.field(init=False, default=0)
        c: int = dataclasses.field(kw_only=True, default=1)

        def __post_init__(self) -> None:
            object.__setattr__(self, "b", self.a + 1)

    assert Post(1, c=5) == Post(1, c=5) and Post(1).b == 2 and Post(1, c=5).c == 5
    with pytest.raises(TypeError, match="Cannot overwrite attribute __setattr__"):
        @records.dataclass(frozen=True)
        class Own:
            a: int

            def __setattr__(self, name: str, value: Any) -> None:
                pass
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
        @records.dataclass(frozen=True)
        class Order:
            a: int = 0
            b: int  # type: ignore[misc]
