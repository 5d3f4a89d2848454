"""kueuediag's ``@dataclass``: the standard library's, with ``__repr__``, ``__eq__`` and ``__hash__`` shared.

Python 3.11 builds every method of a dataclass by compiling its source text (one ``exec`` per method), and a
frozen dataclass has six: ~1 ms per class on the VM that measures issue 11, and kueuediag defines ~170 at
import, so a small ``why`` spent ~0.15 s of its start compiling them. Here :func:`dataclasses.dataclass` still
makes the class (fields, defaults, ``default_factory``, ``__init__``, ``__post_init__``, ``frozen``,
``__match_args__``), so :func:`dataclasses.fields`, :func:`dataclasses.replace` and :func:`dataclasses.asdict`
work as before; only the three methods that need no per-class code are closures over one
:func:`operator.attrgetter` instead of compiled text. They behave as the generated ones do: the same repr text,
equality only with an instance of the same class comparing the ``compare`` fields as a tuple, the same hash
value (the hash of that tuple, of the ``hash`` fields) and the same rules for when a class gets one (a frozen
class does, a mutable one is unhashable, a method the class body defines is kept).
"""

from __future__ import annotations

import dataclasses
import reprlib
from collections.abc import Callable
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform, overload

_T = TypeVar("_T")


def _getter(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """A function returning these attributes of an object as a tuple (attrgetter returns a bare value for one)."""
    if not names:
        return lambda obj: ()
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    many: Callable[[Any], tuple[Any, ...]] = attrgetter(*names)
    return many


def _methods(cls: type, frozen: bool) -> None:
    """Give a class made by :func:`dataclasses.dataclass` (``repr=False, eq=False``) what those flags left out."""
    own = cls.__dict__
    fields = dataclasses.fields(cls)
    if "__repr__" not in own:
        shown = [f.name for f in fields if f.repr]
        values = _getter(shown)

        @reprlib.recursive_repr("...")
        def __repr__(self: Any) -> str:
            text = ", ".join(f"{n}={v!r}" for n, v in zip(shown, values(self), strict=True))
            return f"{type(self).__qualname__}({text})"

        __repr__.__qualname__ = f"{cls.__qualname__}.__repr__"
        cls.__repr__ = __repr__  # type: ignore[assignment]
    explicit_hash = not ("__hash__" not in own or (own["__hash__"] is None and "__eq__" in own))
    if "__eq__" not in own:
        compared = _getter([f.name for f in fields if f.compare])

        def __eq__(self: Any, other: object) -> bool:
            if other.__class__ is self.__class__:
                return compared(self) == compared(other)
            return NotImplemented

        __eq__.__qualname__ = f"{cls.__qualname__}.__eq__"
        cls.__eq__ = __eq__  # type: ignore[assignment]
    if explicit_hash:
        return
    if frozen:
        hashed = _getter([f.name for f in fields if (f.compare if f.hash is None else f.hash)])

        def __hash__(self: Any) -> int:
            return hash(hashed(self))

        __hash__.__qualname__ = f"{cls.__qualname__}.__hash__"
        cls.__hash__ = __hash__  # type: ignore[assignment]
    else:
        cls.__hash__ = None  # type: ignore[assignment]  # mutable and comparable: unhashable, as dataclasses do


@overload
def dataclass(cls: type[_T], /, *, frozen: bool = False) -> type[_T]: ...


@overload
def dataclass(cls: None = None, /, *, frozen: bool = False) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def dataclass(cls: type[_T] | None = None, /, *, frozen: bool = False) -> type[_T] | Callable[[type[_T]], type[_T]]:
    """``@dataclass`` or ``@dataclass(frozen=True)``, as the standard library's, at about half the start-up cost."""

    def wrap(c: type[_T]) -> type[_T]:
        made = dataclasses.dataclass(c, frozen=frozen, repr=False, eq=False)
        _methods(made, frozen)
        return made

    return wrap if cls is None else wrap(cls)
