"""Frozen result records: built by plain Python when every value already has its field's type, validated by
pydantic when one does not.

kueuediag's result vocabulary (:mod:`kueuediag.models`) is declared here as classes with annotated fields and
defaults, read the way pydantic reads a model. Importing pydantic and defining a model class cost ~0.2 s of CPU on
the VM that measures issue 11 — two thirds of the 0.3 s a small ``why`` may take — while a diagnosis almost only
builds records whose values already have their fields' exact types (plain strings, enum members, records, tuples
of records), which validation keeps unchanged. So a :class:`Record`:

* checks each value against its field's annotation in a generated ``__init__`` (one per class, compiled on the
  class's first instance): exact type, or ``None`` where the field allows it, every item of a ``tuple[X, ...]``,
  string keys of a ``dict[str, Any]`` (copied, as validation copies it), the text of a ``str`` subclass (a
  ``StrEnum`` member) for a ``str`` field;
* hands anything else — a list for a tuple, an int for a float or an enum, a dict for a record, a wrong type, a
  missing required field or an unknown one — to a pydantic model built from the same annotations (on first need,
  :func:`validator`), so it is converted or refused exactly as pydantic's lax mode does, with pydantic's
  :class:`pydantic.ValidationError`. The pydantic model reads a record given for a record field by its
  attributes; its result is turned back into records.

Whichever way an instance was built it is the same: equal, the same fields in field order (``__dict__`` holds
exactly the fields), the same ``model_fields_set`` (the fields the call named), the same dump and repr
(``tests/test_make.py`` compares both ways for every class). Instances are frozen, hashable when their values
are, picklable (a diagnosis split over two processes sends its runs back), and answer the parts of pydantic's
model interface kueuediag and its check plugins use: ``model_fields``, ``model_fields_set``, ``model_copy``,
``model_dump``, ``model_dump_json``, ``model_validate``, ``model_json_schema``.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Iterable, Iterator
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, dataclass_transform, get_args, get_origin

if TYPE_CHECKING:
    from pydantic import BaseModel

_MISSING: Any = type("_Missing", (), {"__repr__": lambda self: "MISSING", "__slots__": ()})()
"""a field's default when it has none (it is required)"""

_R = TypeVar("_R", bound="Record")


class FrozenInstanceError(AttributeError):
    """A field of a record was set or deleted: records are frozen (``model_copy(update=...)`` builds a changed
    copy)."""


class FieldInfo:
    """One field of a record: its name, its (resolved) annotation, its default or default factory, and the
    description the JSON schema carries."""

    __slots__ = ("name", "annotation", "default", "default_factory", "description")

    def __init__(self, name: str, annotation: Any, default: Any = _MISSING,
                 default_factory: Callable[[], Any] | None = None, description: str | None = None) -> None:
        self.name, self.annotation, self.default = name, annotation, default
        self.default_factory, self.description = default_factory, description

    def is_required(self) -> bool:
        return self.default is _MISSING and self.default_factory is None

    def __repr__(self) -> str:
        return f"FieldInfo({self.name!r}, {self.annotation!r}, required={self.is_required()})"


class _Declared:
    """What :func:`Field` leaves in a class body until the class is made."""

    __slots__ = ("default", "default_factory", "description")

    def __init__(self, default: Any, default_factory: Callable[[], Any] | None, description: str | None) -> None:
        self.default, self.default_factory, self.description = default, default_factory, description


def Field(default: Any = _MISSING, *, default_factory: Callable[[], Any] | None = None,  # noqa: N802 - pydantic's
          description: str | None = None) -> Any:
    """A field's default (or default factory) with its description, as pydantic's ``Field`` declares them."""
    return _Declared(default, default_factory, description)


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(Field,))
class _RecordType(type):
    """The records' metaclass: it gives the class its ``model_fields``, as pydantic's does (and tells a type
    checker that a record's constructor takes its fields as keywords)."""

    @property
    def model_fields(cls) -> dict[str, FieldInfo]:
        return fields_of(cls)  # type: ignore[arg-type]


class Record(metaclass=_RecordType):
    """A frozen record with typed fields (see the module's text)."""

    __slots__ = ("__dict__", "_given")
    model_config: ClassVar[dict[str, Any]] = {"frozen": True, "extra": "forbid"}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declared: dict[str, tuple[Any, _Declared]] = {}
        for base in reversed(cls.__mro__[1:]):
            declared.update(base.__dict__.get("__record_declared__", {}))
        for name, annotation in cls.__dict__.get("__annotations__", {}).items():
            if _is_class_var(annotation):
                continue
            value = cls.__dict__.get(name, _MISSING)
            declared[name] = (annotation, value if isinstance(value, _Declared) else _Declared(value, None, None))
            if name in cls.__dict__:
                delattr(cls, name)  # as pydantic: a field is an instance's, not the class's
        type.__setattr__(cls, "__record_declared__", declared)
        if "__init__" not in cls.__dict__:  # each class compiles its own on its first instance (_compile)
            type.__setattr__(cls, "__init__", _first_init)

    def __init__(self, /, **values: Any) -> None:
        # the first instance compiles the class's own __init__ (_compile) and builds itself through it
        cls = type(self)
        if "__record_init__" not in cls.__dict__:
            _compile(cls)
        cls.__dict__["__record_init__"](self, **values)

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"{type(self).__name__} is frozen: {name} cannot be set (model_copy builds a "
                                  "changed copy)")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"{type(self).__name__} is frozen: {name} cannot be deleted")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash((type(self), *self.__dict__.values()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.__dict__.items())})"

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        yield from self.__dict__.items()

    def __reduce__(self) -> tuple[Any, ...]:
        return assemble, (type(self), self.__dict__.copy(), set(_given(self)))

    @property
    def model_fields_set(self) -> set[str]:
        """The fields the building call named (the others took their defaults)."""
        return _given(self)

    def model_copy(self: _R, *, update: dict[str, Any] | None = None, deep: bool = False) -> _R:
        """A copy with `update` applied, unvalidated (as pydantic's ``model_copy``): the updated names join the
        fields set."""
        values = self.__dict__.copy()
        if deep:
            import copy

            values = copy.deepcopy(values)
        if update:
            values.update(update)
        given = _given(self)
        return assemble(type(self), values, given | update.keys() if update else given)

    def model_dump(self, *, mode: str = "python", exclude: set[str] | None = None) -> dict[str, Any]:
        """The fields as plain data, records as dicts. ``mode="json"``: enums as their values, tuples as lists,
        any other value JSON has no type for as its text."""
        json = mode == "json"
        return {k: _dump(v, json) for k, v in self.__dict__.items() if not exclude or k not in exclude}

    def model_dump_json(self) -> str:
        """The JSON mode dump as compact JSON text (pydantic's layout: no spaces)."""
        import json

        return json.dumps(self.model_dump(mode="json"), separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def model_validate(cls: type[_R], obj: Any) -> _R:
        """An instance of `cls` from a mapping of its fields (validated as the constructor validates it), or `obj`
        itself when it already is one."""
        if isinstance(obj, cls):
            return obj
        if isinstance(obj, dict):
            return cls(**obj)
        return validated(cls, obj, attributes=True)

    @classmethod
    def model_json_schema(cls) -> dict[str, Any]:
        """The JSON schema pydantic writes for the record (its validator's)."""
        return validator(cls).model_json_schema()


def _is_class_var(annotation: Any) -> bool:
    if isinstance(annotation, str):
        return annotation.startswith(("ClassVar", "typing.ClassVar"))
    return annotation is ClassVar or get_origin(annotation) is ClassVar


_new = object.__new__
_set = object.__setattr__
_first_init = Record.__dict__["__init__"]
_given: Callable[[Record], set[str]] = Record.__dict__["_given"].__get__
"""a record's fields set (the slot behind ``model_fields_set``)"""


def assemble(cls: type[_R], values: dict[str, Any], given: Iterable[str] | None = None) -> _R:
    """An instance of `cls` holding `values` as they are: every field of `cls`, in field order, each value already
    of its field's type — only for values the caller knows are (plain strings, records), never for a plugin's or
    the user's input. `given`: the fields the equivalent constructor call names, default all."""
    obj = _new(cls)
    _set(obj, "__dict__", values)
    _set(obj, "_given", set(values if given is None else given))
    return obj


def fields_of(cls: type[Record]) -> dict[str, FieldInfo]:
    """`cls`'s fields in order, their annotations resolved in the module that defines the class (on first use)."""
    got: dict[str, FieldInfo] | None = cls.__dict__.get("__record_fields__")
    if got is None:
        module = sys.modules[cls.__module__].__dict__
        local = {c.__name__: c for c in cls.__mro__}
        got = {}
        for name, (annotation, declared) in cls.__dict__["__record_declared__"].items():
            try:
                resolved = eval(annotation, module, local) if isinstance(annotation, str) else annotation  # noqa: S307
            except Exception as exc:  # a name the module does not define: the class cannot be used
                raise TypeError(f"{cls.__qualname__}.{name}: cannot resolve its annotation {annotation!r}: "
                                f"{exc}") from None
            got[name] = FieldInfo(name, resolved, declared.default, declared.default_factory, declared.description)
        type.__setattr__(cls, "__record_fields__", got)
    return got


# ---- the generated __init__ --------------------------------------------------------------------------------------

def _compile(cls: type[Record]) -> None:
    """Give `cls` its ``__record_init__``: straight-line checks of each field's value against its annotation
    (:func:`_check`), the value kept or the default taken; any value the checks cannot keep sends the whole call
    to :func:`_validate_into`. A class whose body defines its own ``__init__`` keeps it."""
    names: dict[str, Any] = {"_slow": _validate_into, "_set": _set, "_str": str.__str__, "_tuple": tuple,
                             "_dict": dict, "_str_t": str, "_isinstance": isinstance}
    lines = ["def __record_init__(__s, /, **kw):", "    d = {}", "    n = 0"]
    for i, (name, info) in enumerate(fields_of(cls).items()):
        check = _check(info.annotation, "v", names, i)
        key = repr(name)
        lines.append(f"    if {key} in kw:")
        if check is None:
            lines.append("        return _slow(__s, kw)")
        else:
            lines += ["        n += 1", f"        v = kw[{key}]", *("        " + c for c in check),
                      f"        d[{key}] = v"]
        lines.append("    else:")
        if info.default_factory is not None:
            names[f"F{i}"] = info.default_factory
            lines.append(f"        d[{key}] = F{i}()")
        elif info.default is _MISSING:
            lines.append("        return _slow(__s, kw)")
        elif isinstance(info.default, (str, bool, int, float, Enum, type(None), tuple)):
            names[f"D{i}"] = info.default
            lines.append(f"        d[{key}] = D{i}")
        else:  # a mutable default: the validator copies it as pydantic does
            lines.append("        return _slow(__s, kw)")
    lines += ["    if n != len(kw):", "        return _slow(__s, kw)",
              "    _set(__s, '__dict__', d)", "    _set(__s, '_given', set(kw))"]
    exec("\n".join(lines), names)  # noqa: S102 - our own text, from the class's annotations
    init = names["__record_init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    type.__setattr__(cls, "__record_init__", init)
    if cls.__dict__.get("__init__") is _first_init:
        type.__setattr__(cls, "__init__", init)


def _check(annotation: Any, var: str, names: dict[str, Any], i: int) -> list[str] | None:
    """Lines that keep `var` as validation would keep it, or ``return _slow(__s, kw)`` otherwise; None when the
    annotation has no such simple reading (the field is then always validated)."""
    slow = "return _slow(__s, kw)"
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is types.UnionType and len(args) == 2 and type(None) in args:
        inner = _check(next(a for a in args if a is not type(None)), var, names, i)
        return None if inner is None else [f"if {var} is not None:", *("    " + line for line in inner)]
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item = args[0]
        if get_origin(item) is dict and get_args(item) == (str, Any):  # each mapping copied, as validation does
            return [f"if type({var}) is not _tuple:", f"    {slow}", f"for x in {var}:",
                    "    if type(x) is not _dict:", f"        {slow}", "    for k in x:",
                    "        if type(k) is not _str_t:", f"            {slow}",
                    f"{var} = _tuple([_dict(x) for x in {var}])"]
        if not _exact(item):
            return None
        names[f"T{i}"] = item
        return [f"if type({var}) is not _tuple:", f"    {slow}", f"for x in {var}:",
                f"    if {_not_kept('x', item, f'T{i}')}:", f"        {slow}"]
    if origin is dict and args == (str, Any):
        return [f"if type({var}) is not _dict:", f"    {slow}", f"for x in {var}:",
                "    if type(x) is not _str_t:", f"        {slow}", f"{var} = _dict({var})"]
    if annotation is Any:
        return []
    if annotation is str:  # validation keeps a str subclass's (a StrEnum member's) text, as a plain str
        return [f"if type({var}) is not _str_t:", f"    if _isinstance({var}, _str_t):", f"        {var} = _str({var})",
                "    else:", f"        {slow}"]
    if _exact(annotation):
        names[f"A{i}"] = annotation
        return [f"if {_not_kept(var, annotation, f'A{i}')}:", f"    {slow}"]
    return None


def _not_kept(var: str, annotation: type[Any], name: str) -> str:
    """The test that `var` is not kept as it is: not exactly of the type, nor (for a record field) an instance of
    a subclass, which pydantic keeps too."""
    if issubclass(annotation, Record):
        return f"type({var}) is not {name} and not _isinstance({var}, {name})"
    return f"type({var}) is not {name}"


def _exact(annotation: Any) -> bool:
    """A type whose exact instances validation keeps as they are."""
    return isinstance(annotation, type) and (annotation in (str, bool, int, float)
                                             or issubclass(annotation, (Enum, Record)))


# ---- pydantic, for the values the generated checks do not keep ---------------------------------------------------

def validator(cls: type[Record]) -> type[BaseModel]:
    """The pydantic model of `cls` (built on first need): the same fields, defaults and descriptions, frozen, no
    extra fields, record fields given by the pydantic models of their records (which read a record instance by its
    attributes)."""
    got: type[BaseModel] | None = cls.__dict__.get("__record_validator__")
    if got is None:
        import pydantic

        fields: dict[str, Any] = {}
        for name, info in fields_of(cls).items():
            if info.default_factory is not None:
                spec = pydantic.Field(default_factory=info.default_factory, description=info.description)
            elif info.default is _MISSING:
                spec = pydantic.Field(description=info.description)
            else:
                spec = pydantic.Field(default=info.default, description=info.description)
            fields[name] = (_validator_type(info.annotation), spec)
        got = pydantic.create_model(
            cls.__name__, __config__=pydantic.ConfigDict(frozen=True, extra="forbid", from_attributes=True),
            __doc__=cls.__doc__, __module__=cls.__module__, **fields)
        assert got is not None
        _RECORD_OF[got] = cls
        type.__setattr__(cls, "__record_validator__", got)
    return got


_RECORD_OF: dict[type[Any], type[Record]] = {}
"""each pydantic model :func:`validator` built, to the record class it validates"""


def _validator_type(annotation: Any) -> Any:
    """`annotation` with every record class in it replaced by its pydantic model."""
    if isinstance(annotation, type) and issubclass(annotation, Record):
        return validator(annotation)
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is types.UnionType:
        mapped = [_validator_type(a) for a in args]
        out = mapped[0]
        for a in mapped[1:]:
            out = out | a
        return out
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return tuple[_validator_type(args[0]), ...]  # type: ignore[misc]
    return annotation


def validated(cls: type[_R], values: Any, *, attributes: bool = False) -> _R:
    """`values` (a mapping of field names, or with `attributes` an object read by its attributes) validated by
    `cls`'s pydantic model (:func:`validator`) and turned into a `cls` instance: what the constructor builds when
    a value is not of its field's exact type, and what the tests compare the generated checks with."""
    model = validator(cls)
    done = model.model_validate(values, from_attributes=True) if attributes else model(**values)
    out: _R = _from_validator(done)
    return out


def _validate_into(obj: Record, values: dict[str, Any]) -> None:
    """The generated ``__init__``'s way out: build `obj` from `values` through pydantic (or fail as it fails)."""
    done = validated(type(obj), values)
    _set(obj, "__dict__", done.__dict__)
    _set(obj, "_given", _given(done))


def _from_validator(value: Any) -> Any:
    """A value pydantic validated, with every pydantic model instance in it turned into its record."""
    record = _RECORD_OF.get(type(value))
    if record is not None:
        return assemble(record, {k: _from_validator(v) for k, v in value.__dict__.items()}, value.model_fields_set)
    if type(value) is tuple:
        return tuple(_from_validator(v) for v in value)
    return value


def _dump(value: Any, json: bool) -> Any:
    if isinstance(value, Record):
        return value.model_dump(mode="json" if json else "python")
    if isinstance(value, dict):
        return {k: _dump(v, json) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_dump(v, json) for v in value] if json else tuple(_dump(v, json) for v in value)
    if isinstance(value, list):
        return [_dump(v, json) for v in value]
    if json:
        if isinstance(value, Enum):
            return value.value
        if value is None or isinstance(value, (str, int, float)):
            return value
        return str(value)
    return value
