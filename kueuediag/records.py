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
import sys
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
        if frozen and _plain(c):
            made = _frozen(c)
        else:
            made = dataclasses.dataclass(c, frozen=frozen, repr=False, eq=False)
        _methods(made, frozen)
        return made

    return wrap if cls is None else wrap(cls)


_FACTORY: Any = getattr(dataclasses, "_HAS_DEFAULT_FACTORY", None)
"""the default a parameter with a default factory shows (``<factory>``): the standard library's own marker"""


def _plain(c: type) -> bool:
    """Whether a frozen class can be made by :func:`_frozen`: no dataclass among its bases, no ``__init__``,
    ``__setattr__``, ``__delattr__`` or ``__post_init__`` of its own or inherited, and no field that is
    keyword-only, left out of ``__init__``, an ``InitVar`` or named ``self`` (read conservatively from the class
    body: a name that merely mentions them sends the class to the standard decorator, which handles them all)."""
    if _FACTORY is None or any(dataclasses.is_dataclass(b) for b in c.__mro__[1:]):
        return False
    own = c.__dict__
    if "__init__" in own or "__setattr__" in own or "__delattr__" in own or hasattr(c, "__post_init__"):
        return False
    notes = own.get("__annotations__", {})
    if "self" in notes or any("InitVar" in str(a) or "KW_ONLY" in str(a) for a in notes.values()):
        return False
    return not any(isinstance(v, dataclasses.Field) and (not v.init or v.kw_only is True) for v in own.values())


def _frozen(c: type[_T]) -> type[_T]:
    """``dataclasses.dataclass(c, frozen=True, repr=False, eq=False)`` for a class :func:`_plain` accepts.

    The standard decorator compiles a frozen class's ``__setattr__`` and ``__delattr__`` from source text, one
    ``exec`` each, though neither needs per-class code: here they are closures that refuse exactly what the
    compiled ones refuse (any attribute of an instance of the class itself, a field's name on a subclass's, with
    the same FrozenInstanceError message). The fields, defaults, factories, ``__match_args__``, ``fields()``,
    ``replace()`` and ``asdict()`` come from the standard decorator (run without ``__init__``); ``__init__`` is
    compiled from the text the standard library writes for a frozen class (same parameters, annotations and
    defaults, ``object.__setattr__`` per field, factories called when the argument is left out); the class's
    ``__dataclass_params__`` say it is frozen, so a subclass is held to the same rules. A small `why` defines
    ~90 frozen classes: ~0.5 ms each less on the VM that measures issue 11.
    """
    undocumented = not c.__dict__.get("__doc__")
    if undocumented:  # the standard decorator would document it by the signature of an __init__ it does not have
        c.__doc__ = "-"
    made = dataclasses.dataclass(c, init=False, repr=False, eq=False)
    cls: Any = made  # its methods are replaced below
    fields = dataclasses.fields(cls)
    cls.__dataclass_params__.frozen = True  # as the standard decorator records them (repr, eq: see _methods)
    cls.__dataclass_params__.init = True
    module = sys.modules.get(cls.__module__)
    init = _init(fields, module.__dict__ if module is not None else {})
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = init
    names = tuple(f.name for f in fields)

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    __setattr__.__qualname__ = f"{cls.__qualname__}.__setattr__"
    __delattr__.__qualname__ = f"{cls.__qualname__}.__delattr__"
    cls.__setattr__ = __setattr__
    cls.__delattr__ = __delattr__
    if undocumented:  # documented as the standard decorator documents it: the constructor's signature
        import inspect

        signature = inspect.signature(init)  # the class's, with `self`: cheaper than inspect.signature(cls)
        signature = signature.replace(parameters=list(signature.parameters.values())[1:])
        cls.__doc__ = cls.__name__ + str(signature).replace(" -> None", "")
    return made


def _init(fields: tuple[dataclasses.Field[Any], ...], module_globals: dict[str, Any]) -> Callable[..., None]:
    """A frozen dataclass's ``__init__``, from the text the standard library writes for these fields (all of them
    parameters, none keyword-only; the values reach it as closure variables, its globals are the module's)."""
    closure: dict[str, Any] = {"__dataclass_builtins_object__": object, "_HAS_DEFAULT_FACTORY": _FACTORY,
                               "_return_type": None}
    params, body, seen_default = ["self"], [], False
    for f in fields:
        closure[f"_type_{f.name}"] = f.type
        value = f.name
        if f.default_factory is not dataclasses.MISSING:
            closure[f"_dflt_{f.name}"] = f.default_factory
            params.append(f"{f.name}:_type_{f.name}=_HAS_DEFAULT_FACTORY")
            value = f"_dflt_{f.name}() if {f.name} is _HAS_DEFAULT_FACTORY else {f.name}"
            seen_default = True
        elif f.default is not dataclasses.MISSING:
            closure[f"_dflt_{f.name}"] = f.default
            params.append(f"{f.name}:_type_{f.name}=_dflt_{f.name}")
            seen_default = True
        elif seen_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
        else:
            params.append(f"{f.name}:_type_{f.name}")
        body.append(f"  __dataclass_builtins_object__.__setattr__(self,{f.name!r},{value})")
    text = (f"def __create_fn__({', '.join(closure)}):\n"
            f" def __init__({','.join(params)})->_return_type:\n" + "\n".join(body or ["  pass"]) +
            "\n return __init__")
    ns: dict[str, Any] = {}
    # dont_inherit: this module's `from __future__ import annotations` would turn the annotations into strings
    exec(compile(text, "<string>", "exec", dont_inherit=True), module_globals, ns)
    made: Callable[..., None] = ns["__create_fn__"](**closure)
    return made
