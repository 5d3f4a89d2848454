"""Kueue controller logs as structured lines.

The snapshot keeps logs as raw text per file (``snapshot.logs_text``: ``{path: text}``). This module turns
each line into a :class:`LogLine`, whatever the encoder that wrote it (kueue-facts §10):

* **zap JSON** (production mode, Kueue's default): one object per line with ``level``, ``ts`` (RFC3339Nano
  string or float epoch seconds), ``logger``, ``caller``, ``msg``, ``error``, ``stacktrace`` and key/values.
  logr ``V(n)`` is zap level ``-n`` and prints as ``"info"`` (V0), ``"debug"`` (V1), ``"Level(-2)"`` (V2),
  ``"Level(-3)"`` (V3) and so on. Object references are ``{"name": ..., "namespace": ...}``.
* **zap console** (development mode): ``TS\\tLEVEL\\tLOGGER\\tCALLER\\tMSG\\t{json key/values}``; logger and
  caller are omitted when empty; levels are ``INFO``, ``DEBUG``, ``LEVEL(-2)``, ``ERROR``...
* **klog** headers (client-go, e.g. leader election): ``E1203 20:18:40.916670  1 leaderelection.go:340] msg``.
* anything else (a ``panic:`` and its goroutine dump, shell noise) is kept as a plain text line.

``kubectl logs --timestamps`` prefixes are stripped. Parsing never raises on odd lines: logs are evidence,
and a truncated line must not hide the rest.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from functools import lru_cache
from sys import intern
from typing import Any

import msgspec

from kueuediag import jsonload
from kueuediag.memo import remember
from kueuediag.models import Patch
from kueuediag.records import dataclass
from kueuediag.snapshot.k8s import labels, meta
from kueuediag.snapshot.model import Snapshot
from kueuediag.timeutil import parse_time_lenient

WorkloadRef = tuple[str | None, str]
"""(namespace, name) of a Workload named by a log line."""

ERROR_LEVELS = frozenset({"error", "dpanic", "panic", "fatal"})
_NAMED_LEVELS = {
    "debug": 1, "info": 0, "warn": 0, "warning": 0, "error": 0, "dpanic": 0, "panic": 0, "fatal": 0,
}
_LEVEL_N = re.compile(r"^level\((-?\d+)\)$", re.IGNORECASE)
_TS_PREFIX = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2}))\s+(?=\{)")
_CONSOLE_TS = re.compile(r"^(\d{4}-\d{2}-\d{2}T\S+|\d+(?:\.\d+)?(?:e[+-]?\d+)?)$", re.IGNORECASE)
_CALLER = re.compile(r"^\S+\.go:\d+$")
_KLOG = re.compile(
    r"^([IWEF])(\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?\s+\d+\s+([^\]\s]+:\d+)\]\s?(.*)$"
)
_KLOG_SEVERITY = {"I": "info", "W": "warn", "E": "error", "F": "fatal"}

_WORKLOAD_KEYS = ("workload", "Workload", "preemptingWorkload", "targetWorkload", "wl")
_EVENT_OBJECT_KEYS = ("object", "involvedObject", "regarding")
_CQ_KEYS = ("clusterQueue", "ClusterQueue", "cluster-queue", "targetClusterQueue", "cq")
_REF_KEYS = frozenset((*_WORKLOAD_KEYS, *_EVENT_OBJECT_KEYS, *_CQ_KEYS))
_CORE_KEYS = frozenset({
    "level", "ts", "logger", "caller", "msg", "error", "stacktrace", "M", "L", "T", "N", "C",
})


class LogLine(msgspec.Struct, frozen=True, gc=False):
    """One line of a controller log, normalised across encoders.

    A frozen msgspec Struct: a snapshot holds hundreds of thousands of lines, so each is slotted (no
    ``__dict__``), built in C (a frozen dataclass pays an ``object.__setattr__`` per field) and not tracked by
    the garbage collector (its values are text, numbers, times and JSON data: no cycles). Equal when every field
    is equal.
    """

    file: str
    lineno: int
    text: str
    """the line, or the whole file it is in (then `start`/`stop` say where): `raw` is the line either way"""
    format: str
    """json | console | klog | text"""
    ts: datetime | None
    level: str
    """the level as written (``info``, ``Level(-3)``, ``ERROR``...), empty for plain text"""
    verbosity: int | None
    """logr V-level: 0 info/warn/error, 1 debug, n for Level(-n); None for plain text"""
    severity: str
    """info | debug | warn | error | dpanic | panic | fatal | text"""
    logger: str
    caller: str
    msg: str
    error: str = ""
    stacktrace: str = ""
    kept_fields: Mapping[str, Any] | None = None
    """the structured fields of a console line; None for a JSON line, whose fields are read again from `raw`
    when asked (`fields`): a production log's fields would otherwise take more memory than the log itself"""
    _refs: tuple[tuple[WorkloadRef, ...], tuple[str, ...]] | None = None
    """what the line names (a JSON line's at parse time, while its values are at hand; else on first use)"""
    start: int = 0
    stop: int = -1

    def __repr__(self) -> str:  # `text` may be a whole file
        return (f"LogLine({self.location}, format={self.format!r}, ts={self.ts!r}, level={self.level!r}, "
                f"logger={self.logger!r}, caller={self.caller!r}, msg={self.msg!r}, error={self.error!r})")

    @property
    def bare(self) -> bool:
        """A JSON line with no field beyond level, time, logger, caller, message, error and stack (worked out
        from the line when asked: parsing reads only the keys a LogLine keeps)."""
        return self.format == "json" and self.kept_fields is None and _json_bare(self.raw)

    @property
    def raw(self) -> str:
        """The line as written (a slice of its file's text: a snapshot's lines are not kept twice)."""
        return self.text if self.stop < 0 else self.text[self.start:self.stop]

    @property
    def fields(self) -> Mapping[str, Any]:
        """The line's structured fields (everything but level, time, logger, caller, message, error, stack)."""
        if self.kept_fields is not None:
            return self.kept_fields
        if self.format != "json":
            return {}
        return _json_fields(self.raw)

    def _named(self) -> tuple[tuple[WorkloadRef, ...], tuple[str, ...]]:
        refs = self._refs
        if refs is None:
            fields = self.fields
            refs = (_workload_refs(fields, self.logger), _cq_refs(fields, self.logger)) if fields else ((), ())
            msgspec.structs.force_setattr(self, "_refs", refs)  # a cache of what the frozen fields determine
        return refs

    @property
    def workloads(self) -> tuple[WorkloadRef, ...]:
        """every Workload the line names (workload, preemptingWorkload, targetWorkload, controller-runtime's
        Workload key), worked out on first use: most lines are only ever counted or matched by message"""
        refs = self._refs
        return (self._named() if refs is None else refs)[0]

    @property
    def cluster_queues(self) -> tuple[str, ...]:
        """every ClusterQueue the line names (clusterQueue, targetClusterQueue...), on first use"""
        refs = self._refs
        return (self._named() if refs is None else refs)[1]

    @property
    def workload(self) -> WorkloadRef | None:
        workloads = self.workloads
        return workloads[0] if workloads else None

    @property
    def cluster_queue(self) -> str | None:
        cluster_queues = self.cluster_queues
        return cluster_queues[0] if cluster_queues else None

    @property
    def location(self) -> str:
        """``file:line`` for evidence."""
        return f"{self.file}:{self.lineno}"

    @property
    def is_error(self) -> bool:
        return self.severity in ERROR_LEVELS

    def field_text(self, key: str) -> str:
        """A field as text (object refs as ``ns/name``), empty when absent."""
        if self.kept_fields is None and self.format == "json":
            raw = self.raw
            return "" if _surely_lacks(raw, key) else _as_text(_json_field(raw, key))
        return _as_text(self.fields.get(key))

    def structured(self) -> bool:
        """Whether the line has any structured field."""
        if self.kept_fields is not None:
            return bool(self.kept_fields)
        return self.format == "json" and not self.bare

    def has_field(self, key: str) -> bool:
        """Whether the line has the structured field `key` (a JSON line is parsed again only when its text
        holds the key)."""
        if self.kept_fields is None and self.format == "json":
            raw = self.raw
            return not _surely_lacks(raw, key) and _json_has(raw, key)
        return key in self.fields

    def names_workload(self, namespace: str | None, name: str) -> bool:
        for ns, n in self.workloads:
            if n == name and (ns is None or namespace is None or ns == namespace):
                return True
        if self.format == "text" or not self.workloads:
            return bool(name) and re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])", self.raw) is not None
        return False

    def names_cluster_queue(self, cq: str) -> bool:
        return cq in self.cluster_queues


# --- parsing ------------------------------------------------------------------------------------------------


def parse_level(level: str) -> tuple[int | None, str]:
    """``"Level(-3)"`` → (3, "debug"); ``"info"`` → (0, "info"); ``"ERROR"`` → (0, "error")."""
    text = level.strip()
    low = text.lower()
    if low in _NAMED_LEVELS:
        return _NAMED_LEVELS[low], ("warn" if low == "warning" else low)
    m = _LEVEL_N.match(text)
    if m:
        n = -int(m.group(1))
        if n <= 0:
            return 0, "info"
        return n, "debug"
    return None, low or "text"


_level = lru_cache(maxsize=256)(parse_level)
"""`parse_level` for log lines: a log has a handful of distinct level strings."""


_RFC3339 = re.compile(r"^(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(?:\.(\d+))?(?:[Zz]|\+00:?00)$")


def parse_ts(value: Any) -> datetime | None:
    """RFC3339(Nano) string or float/int epoch seconds (zap's EpochTimeEncoder)."""
    if isinstance(value, str):
        if len(value) >= 20 and value[-1] in "Zz" and value[16] == ":" and value[13] == ":" and value[10] in "Tt ":
            try:  # the common case, a zap ISO8601 time in UTC: C code, a tenth of the time of the regex below
                parsed = datetime.fromisoformat(value)
                if parsed.tzinfo is UTC and parsed.second == int(value[17:19]):
                    return parsed
            except ValueError:
                pass
        m = _RFC3339.match(value)
        if m:  # the UTC forms, without the general parser's per-character work
            try:
                return datetime(int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4)),
                                int(m.group(5)), int(m.group(6)), int((m.group(7) or "0")[:6].ljust(6, "0")),
                                tzinfo=UTC)
            except ValueError:
                return None
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            return datetime.fromtimestamp(float(value), tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"\d+(\.\d+)?(e[+-]?\d+)?", text, re.IGNORECASE):
            return parse_ts(float(text))
        return parse_time_lenient(text)
    return None


_Named = tuple[tuple[WorkloadRef, ...], tuple[str, ...]]
"""(workloads, cluster queues) a line names"""
_NAMED_NONE: _Named = ((), ())
_Where = tuple[str, int, int]
"""(text, start, stop) of a LogLine: the line itself (0, -1), or the file it is a slice of"""
_UNSET = msgspec.UNSET


_Text = str | None | msgspec.UnsetType
_Time = str | float | None | msgspec.UnsetType
_RefValue = msgspec.Raw
_NO_VALUE = msgspec.Raw()
"""an absent reference key (a present one is its JSON text, ``null`` included)"""


class _Head(msgspec.Struct, gc=False):
    """What a LogLine takes from a JSON line: the core keys (`_CORE_KEYS`), then the keys that can name objects
    (`_REF_KEYS`, then the name and namespace the workload and cluster-queue loggers write).

    `_HEAD` decodes a line into it reading these keys alone (the others are skipped in C, and a line's fields are
    not kept: see `LogLine.kept_fields`): the core values as text (a time also as a number), the references as
    the JSON text they are written as (`_PerFile.of_head` reads each distinct one once). A line msgspec refuses,
    or whose core values have other shapes (a number as level...), is read the general way, into a dict, and
    `_head_of` makes a head from it (its references as parsed values). An absent core key is UNSET, an absent
    reference `_NO_VALUE`.
    """

    level: _Text = _UNSET
    L: _Text = _UNSET
    ts: _Time = _UNSET
    T: _Time = _UNSET
    logger: _Text = _UNSET
    N: _Text = _UNSET
    caller: _Text = _UNSET
    C: _Text = _UNSET
    msg: _Text = _UNSET
    M: _Text = _UNSET
    error: _Text = _UNSET
    stacktrace: _Text = _UNSET
    # _WORKLOAD_KEYS, _EVENT_OBJECT_KEYS, _CQ_KEYS in that order, then name and namespace (`_REFS_AT`)
    workload: _RefValue = _NO_VALUE
    Workload: _RefValue = _NO_VALUE
    preemptingWorkload: _RefValue = _NO_VALUE  # noqa: N815 - the key as Kueue writes it
    targetWorkload: _RefValue = _NO_VALUE  # noqa: N815
    wl: _RefValue = _NO_VALUE
    object: _RefValue = _NO_VALUE
    involvedObject: _RefValue = _NO_VALUE  # noqa: N815
    regarding: _RefValue = _NO_VALUE
    clusterQueue: _RefValue = _NO_VALUE  # noqa: N815
    ClusterQueue: _RefValue = _NO_VALUE
    cluster_queue: _RefValue = msgspec.field(default=_NO_VALUE, name="cluster-queue")
    targetClusterQueue: _RefValue = _NO_VALUE  # noqa: N815
    cq: _RefValue = _NO_VALUE
    name: _RefValue = _NO_VALUE
    namespace: _RefValue = _NO_VALUE


_HEAD = msgspec.json.Decoder(_Head)
_HEAD_KEYS: tuple[str, ...] = _Head.__struct_encode_fields__
_HEAD_ATTRS: dict[str, str] = dict(zip(_HEAD_KEYS, _Head.__struct_fields__, strict=True))
_REFS_AT = len(_CORE_KEYS)
_HEAD_REF_KEYS = _HEAD_KEYS[_REFS_AT:]
_REFS_KEY = msgspec.json.Encoder()
"""a head's references as JSON text: a key that hashes and compares as one string"""


def _read_head(body: str) -> _Head | None:
    """A JSON object's head, None when msgspec refuses the line or a value's shape (the general way decides)."""
    if not _shallow(body):
        return None
    try:
        return _HEAD.decode(body)
    except (msgspec.DecodeError, ValueError, RecursionError):  # ValueError: surrogates
        return None


def _head_of(obj: Mapping[str, Any]) -> _Head:
    """The head of a JSON line read the general way (its values as they are, of any shape)."""
    return _Head(**{_HEAD_ATTRS[k]: v for k, v in obj.items() if k in _HEAD_ATTRS})


_Core = tuple[str, int | None, str, str, str, str]
"""level, verbosity, severity, logger, caller and message of a LogLine"""


def _core(level: Any, logger: Any, caller: Any, msg: Any) -> _Core:
    """The LogLine fields a JSON line's level, logger, caller and message give (the texts interned: a log
    repeats a few dozen of each)."""
    text = _as_text(level)
    verbosity, severity = _level(text)
    return intern(text), verbosity, severity, intern(_as_text(logger)), intern(_as_text(caller)), \
        intern(_as_text(msg))


class _PerFile:
    """What the lines of one file share, worked out once: the LogLine fields of each distinct (level, logger,
    caller, message), one copy of each distinct (workloads, cluster queues), and the answer for each distinct
    set of reference values a head holds (a log names the same few thousand objects over and over: the readers
    run once per set, not once per line)."""

    _MAX = 65536
    """distinct keys each table remembers (:func:`kueuediag.memo.remember`: a file with more keeps the ones it has
    and works out the rest line by line)"""

    def __init__(self) -> None:
        self._cores: dict[tuple[str | None | msgspec.UnsetType, ...], _Core] = {}
        self._answers: dict[_Named, _Named] = {}
        self._by_head: dict[bytes, _Named] = {}

    def core(self, level: _Text, logger: _Text, caller: _Text, msg: _Text) -> _Core:
        """`_core` of a head's values (text, None or UNSET alone: no two of them are equal keys yet different
        texts, as ``1``, ``1.0`` and ``true`` would be)."""
        key = (level, logger, caller, msg)
        got = self._cores.get(key)
        if got is None:
            got = remember(self._cores, key, _core(level, logger, caller, msg), self._MAX)
        return got

    def of_fields(self, fields: Mapping[str, Any], logger: str) -> _Named:
        if _REF_KEYS.isdisjoint(fields) and not logger.startswith(("workload", "cluster-queue")):
            return _NAMED_NONE  # no key that can name an object (what the two readers below would find)
        named = (_workload_refs(fields, logger), _cq_refs(fields, logger))
        return self._answers.setdefault(named, named) if named != _NAMED_NONE else _NAMED_NONE

    def of_head(self, head: _Head, logger: str) -> _Named:
        """`of_fields` of the references of a head `_HEAD` decoded, each parsed by the parser the whole line goes
        through (the same values), once per distinct text."""
        values = msgspec.structs.astuple(head)[_REFS_AT:]
        key = _REFS_KEY.encode((logger, values))
        named = self._by_head.get(key)
        if named is None:
            fields = {k: jsonload.loads(memoryview(v)) for k, v in zip(_HEAD_REF_KEYS, values, strict=True)
                      if len(v)}
            named = remember(self._by_head, key, self.of_fields(fields, logger), self._MAX)
        return named


def parse_log_text(path: str, text: str, year: int | None = None) -> list[LogLine]:
    """Parse one log file. `year` completes klog timestamps (which carry none); callers pass the snapshot's
    capture year (the current UTC year is only a fallback)."""
    out: list[LogLine] = []
    file = _PerFile()
    pos = 0
    for i, chunk in enumerate(text.splitlines(keepends=True), start=1):
        start, pos = pos, pos + len(chunk)
        line = chunk.rstrip("\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
        stripped = line.strip()
        if not stripped:
            continue
        # the line's text is a slice of the file's (kept by the snapshot anyway), not a copy of it
        where = (text, start, start + len(line))
        if stripped[0] == "{" and stripped[-1] == "}":  # what _parse does first with a zap JSON line, without
            head = _read_head(stripped)               # its prefix tests (a line msgspec refuses goes through it)
            if head is not None:
                out.append(_from_json(path, i, where, head, None, file))
                continue
        out.append(_parse(path, i, line, year, file, where, stripped))
    return out


def parse_log_line(path: str, lineno: int, line: str, year: int | None = None) -> LogLine:
    """One line, on its own."""
    return _parse(path, lineno, line, year, _PerFile(), (line, 0, -1))


def _parse(path: str, lineno: int, line: str, year: int | None, file: _PerFile, where: _Where,
           stripped: str | None = None) -> LogLine:
    """One line; `stripped` is ``line.strip()`` when the caller has it."""
    body = line
    prefix_ts: datetime | None = None
    m = _TS_PREFIX.match(body) if body[:1].isdigit() else None
    if m:  # kubectl logs --timestamps
        prefix_ts = parse_time_lenient(m.group(1))
        body = body[m.end():]
        stripped = body.strip()
    elif stripped is None:
        stripped = body.strip()
    if stripped.startswith("{") and stripped.endswith("}"):
        head = _read_head(stripped)
        if head is not None:
            return _from_json(path, lineno, where, head, prefix_ts, file)
        try:
            obj = jsonload.loads(stripped)
        except (ValueError, RecursionError):
            obj = None
        if isinstance(obj, dict):
            return _from_json(path, lineno, where, _head_of(obj), prefix_ts, file, obj)
    if "\t" in body:
        console = _from_console(path, lineno, where, body)
        if console is not None:
            return console
    km = _KLOG.match(stripped)
    if km:
        return _from_klog(path, lineno, where, km, year)
    return LogLine(file=path, lineno=lineno, text=where[0], format="text", ts=prefix_ts, level="", verbosity=None,
                   severity="text", logger="", caller="", msg=stripped, start=where[1], stop=where[2])


def _from_json(path: str, lineno: int, where: _Where, head: _Head, prefix_ts: datetime | None, file: _PerFile,
               fields: Mapping[str, Any] | None = None) -> LogLine:
    """A JSON line's LogLine from its head, however it was read; `fields` (the whole object, when the line was
    read the general way) serve the reference readers directly."""
    level = head.level if head.level is not _UNSET else "" if head.L is _UNSET else head.L
    logger = head.logger if head.logger is not _UNSET else "" if head.N is _UNSET else head.N
    caller = head.caller if head.caller is not _UNSET else "" if head.C is _UNSET else head.C
    msg = head.msg if head.msg is not _UNSET else "" if head.M is _UNSET else head.M
    ts = head.ts if head.ts is not _UNSET else None if head.T is _UNSET else head.T
    if fields is None:
        core = file.core(level, logger, caller, msg)
        named = file.of_head(head, core[3])  # what the line names, while its values are at hand
    else:
        core = _core(level, logger, caller, msg)
        named = file.of_fields(fields, core[3])
    return LogLine(
        path, lineno, where[0], "json", parse_ts(ts) or prefix_ts, *core,
        "" if head.error is _UNSET else _as_text(head.error),
        "" if head.stacktrace is _UNSET else _as_text(head.stacktrace),
        None, named, where[1], where[2],
    )


_SHALLOW = 200
"""JSON with fewer brackets than this is nested too shallowly for any parser's depth limit: msgspec, orjson and
:mod:`json` then accept and refuse the same lines (beyond it, only the general path decides)."""


def _shallow(body: str) -> bool:
    return len(body) < 2 * _SHALLOW or body.count("{") + body.count("[") < _SHALLOW  # a bracket is closed too


@lru_cache(maxsize=64)
def _one_field(key: str) -> msgspec.json.Decoder[Any]:
    """A decoder of one key of a JSON log line, kept as written (a Raw slice): the other keys are skipped in C
    (a signature's field pattern reads one key of tens of thousands of lines)."""
    struct = msgspec.defstruct("OneField", [("value", msgspec.Raw | msgspec.UnsetType,
                                              msgspec.field(default=msgspec.UNSET, name=key))], gc=False)
    return msgspec.json.Decoder(struct)


def _surely_lacks(raw: str, key: str) -> bool:
    """A JSON line whose text does not hold `key` has no such field: known without reading it again."""
    return f'"{key}"' not in raw


def _json_field(raw: str, key: str, default: Any = None) -> Any:
    """``_json_fields(raw).get(key, default)``, reading only that key. msgspec is stricter than orjson and
    :mod:`json` nowhere: a line it reads is a line they read the same, and the key's text is parsed by the same
    parser as the whole line would be; a line it refuses goes the general way."""
    if key in _CORE_KEYS:
        return default
    m = _TS_PREFIX.match(raw) if raw[:1].isdigit() else None
    body = raw[m.end():] if m else raw  # blanks beyond JSON's (which msgspec refuses) are left to the general way
    if _shallow(body):
        try:
            value = _one_field(key).decode(body).value
        except (msgspec.DecodeError, ValueError, RecursionError):  # ValueError: surrogates
            pass
        else:
            return default if value is _UNSET else jsonload.loads(memoryview(value))
    return _json_fields(raw).get(key, default)


def _json_has(raw: str, key: str) -> bool:
    """``key in _json_fields(raw)``, reading only whether that key is there: what `_json_field` reads without
    parsing the value it finds (a scan asks it of every line of the controller log, KD301's scheduling cycles)."""
    if key in _CORE_KEYS:
        return False
    m = _TS_PREFIX.match(raw) if raw[:1].isdigit() else None
    body = raw[m.end():] if m else raw
    if _shallow(body):
        try:
            return _one_field(key).decode(body).value is not _UNSET
        except (msgspec.DecodeError, ValueError, RecursionError):  # the general way decides, as in _json_field
            pass
    return key in _json_fields(raw)


_BARE = msgspec.json.Decoder(msgspec.defstruct(
    "Bare", [(_HEAD_ATTRS[k], msgspec.Raw | msgspec.UnsetType, msgspec.field(default=_UNSET, name=k))
             for k in _HEAD_KEYS[:_REFS_AT]], forbid_unknown_fields=True, gc=False))
"""decodes a JSON line that has no key beyond the core keys, refuses one that has (without building a dict)"""


def _json_bare(raw: str) -> bool:
    """``not _json_fields(raw)`` of a line that parsed as a JSON object (a JSON LogLine's), without parsing every
    value: msgspec refuses the first key beyond the core keys as soon as it meets it."""
    m = _TS_PREFIX.match(raw) if raw[:1].isdigit() else None
    body = raw[m.end():] if m else raw
    if _shallow(body):
        try:
            _BARE.decode(body)
        except msgspec.ValidationError:  # a key beyond the core keys
            return False
        except (msgspec.DecodeError, ValueError, RecursionError):  # ValueError: surrogates
            pass
        else:
            return True
    return not _json_fields(raw)


def _json_fields(raw: str) -> dict[str, Any]:
    """The fields of a JSON log line, parsed again from the line as written (see `LogLine.kept_fields`)."""
    m = _TS_PREFIX.match(raw)
    try:
        obj = jsonload.loads((raw[m.end():] if m else raw).strip())
    except (ValueError, RecursionError):
        return {}
    return {k: v for k, v in obj.items() if k not in _CORE_KEYS} if isinstance(obj, dict) else {}


def _from_console(path: str, lineno: int, where: _Where, body: str) -> LogLine | None:
    parts = body.split("\t")
    if len(parts) < 3 or not _CONSOLE_TS.match(parts[0].strip()):
        return None
    verbosity, severity = parse_level(parts[1])
    if verbosity is None and severity not in ERROR_LEVELS:
        return None
    rest = parts[2:]
    fields: dict[str, Any] = {}
    if len(rest) >= 2 and rest[-1].lstrip().startswith("{"):
        try:
            decoded = jsonload.loads(rest[-1])
        except (ValueError, RecursionError):
            decoded = None
        if isinstance(decoded, dict):
            fields = decoded
            rest = rest[:-1]
    logger = caller = ""
    if len(rest) >= 3:
        logger, caller, msg = rest[0], rest[1], "\t".join(rest[2:])
    elif len(rest) == 2:
        if _CALLER.match(rest[0]):
            caller, msg = rest
        else:
            logger, msg = rest
    else:
        msg = rest[0] if rest else ""
    error = _as_text(fields.pop("error", ""))
    stack = _as_text(fields.pop("stacktrace", ""))
    return LogLine(
        file=path, lineno=lineno, text=where[0], format="console", ts=parse_ts(parts[0]),
        level=parts[1].strip(), verbosity=verbosity, severity=severity, logger=logger, caller=caller,
        msg=msg.strip(), error=error, stacktrace=stack, kept_fields=fields, start=where[1], stop=where[2],
    )


def _from_klog(path: str, lineno: int, where: _Where, m: re.Match[str], year: int | None) -> LogLine:
    sev = _KLOG_SEVERITY[m.group(1)]
    ts: datetime | None = None
    try:
        ts = datetime(year or datetime.now(UTC).year, int(m.group(2)), int(m.group(3)), int(m.group(4)),
                      int(m.group(5)), int(m.group(6)), int((m.group(7) or "0").ljust(6, "0")), tzinfo=UTC)
    except ValueError:
        ts = None
    return LogLine(file=path, lineno=lineno, text=where[0], format="klog", ts=ts, level=m.group(1), verbosity=0,
                   severity=sev, logger="klog", caller=m.group(8), msg=m.group(9).strip(), start=where[1],
                   stop=where[2])


def _as_text(value: Any) -> str:
    if type(value) is str:
        return value
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "name" in value:
        ns = value.get("namespace")
        return f"{ns}/{value['name']}" if ns else str(value["name"])
    if isinstance(value, bool | int | float):
        return json.dumps(value)
    return json.dumps(value, sort_keys=True, default=str)


def _ref(value: Any) -> WorkloadRef | None:
    if isinstance(value, dict) and isinstance(value.get("name"), str) and value["name"]:
        ns = value.get("namespace")
        return (ns if isinstance(ns, str) and ns else None, value["name"])
    if isinstance(value, str) and value:
        ns, sep, name = value.rpartition("/")
        return (ns or None, name) if sep else (None, value)
    return None


def _workload_refs(fields: Mapping[str, Any], logger: str) -> tuple[WorkloadRef, ...]:
    out: list[WorkloadRef] = []
    for key in _WORKLOAD_KEYS:
        value = fields.get(key)
        if value is None:
            continue
        ref = _ref(value)
        if ref and ref not in out:
            out.append(ref)
    for key in _EVENT_OBJECT_KEYS:  # the v0.13 `"logger":"events"` mirror of events
        obj = fields.get(key)
        if isinstance(obj, dict) and obj.get("kind") == "Workload":
            ref = _ref(obj)
            if ref and ref not in out:
                out.append(ref)
    if not out and logger.startswith("workload") and isinstance(fields.get("name"), str):
        ns = fields.get("namespace")
        out.append((ns if isinstance(ns, str) else None, fields["name"]))
    return tuple(out)


def _cq_refs(fields: Mapping[str, Any], logger: str) -> tuple[str, ...]:
    out: list[str] = []
    for key in _CQ_KEYS:
        value = fields.get(key)
        if value is None:
            continue
        ref = _ref(value)
        if ref and ref[1] not in out:
            out.append(ref[1])
    if not out and logger.startswith("cluster-queue") and isinstance(fields.get("name"), str):
        out.append(fields["name"])
    return tuple(out)


class LineIndex:
    """Lines indexed by the Workloads and ClusterQueues they name, so asking "which of these lines name workload
    X" costs the lines that do, not all of them (KD501 asks it for every pending target of a `health` run).

    Answers exactly what :meth:`LogLine.names_workload` / :meth:`LogLine.names_cluster_queue` answer line by line.
    """

    def __init__(self, lines: Iterable[LogLine]) -> None:
        self.lines = tuple(lines)
        self._by_name: dict[str, list[int]] = {}
        self._loose: list[int] = []
        """lines naming no Workload through a field: matched by the name as a word"""
        self._cluster_queues: set[str] = set()
        for i, ln in enumerate(self.lines):
            refs = ln.workloads
            if not refs:
                self._loose.append(i)
            for n in {n for _, n in refs}:
                self._by_name.setdefault(n, []).append(i)
            self._cluster_queues.update(ln.cluster_queues)

    def naming_workload(self, namespace: str | None, name: str) -> list[LogLine]:
        """The lines that name the Workload, in their order."""
        picked = [i for i in self._by_name.get(name, ()) if self.lines[i].names_workload(namespace, name)]
        picked += [i for i in self._loose if self.lines[i].names_workload(namespace, name)]
        return [self.lines[i] for i in sorted(picked)]

    def names_workload(self, namespace: str | None, name: str) -> bool:
        return any(self.lines[i].names_workload(namespace, name) for i in self._by_name.get(name, ())) \
            or any(self.lines[i].names_workload(namespace, name) for i in self._loose)

    def names_cluster_queue(self, cluster_queue: str) -> bool:
        return cluster_queue in self._cluster_queues


# --- the snapshot's logs ------------------------------------------------------------------------------------


def log_lines(snap: Snapshot) -> list[LogLine]:
    """Every parsed line of every log file in the snapshot, in file order then line order (memoised)."""

    def build() -> list[LogLine]:
        year = snap.now.year
        out: list[LogLine] = []
        for path in sorted(snap.logs_text):
            out.extend(parse_log_text(path, snap.logs_text[path], year))
        return out

    return snap.memo("log-lines", build)


def workload_log_lines(snap: Snapshot, namespace: str | None, name: str) -> list[LogLine]:
    """Lines that name a Workload: structured lines through their object refs (indexed once), plain-text and klog
    lines by the name as a word."""

    def build() -> tuple[dict[str, list[LogLine]], list[LogLine]]:
        by_name: dict[str, list[LogLine]] = {}
        unstructured: list[LogLine] = []
        for ln in log_lines(snap):
            if ln.workloads:
                for _, n in set(ln.workloads):
                    by_name.setdefault(n, []).append(ln)
            elif ln.format in ("text", "klog") or not ln.structured():
                unstructured.append(ln)
        return by_name, unstructured

    by_name, unstructured = snap.memo("log-lines-by-workload", build)
    hits = [ln for ln in by_name.get(name, []) if ln.names_workload(namespace, name)]
    hits += [ln for ln in unstructured if ln.names_workload(namespace, name)]
    hits.sort(key=lambda ln: (ln.file, ln.lineno))
    return hits


def cluster_queue_log_lines(snap: Snapshot, cluster_queue: str) -> list[LogLine]:
    """Structured lines whose clusterQueue (or targetClusterQueue) is `cluster_queue`."""

    def build() -> dict[str, list[LogLine]]:
        out: dict[str, list[LogLine]] = {}
        for ln in log_lines(snap):
            for cq in ln.cluster_queues:
                out.setdefault(cq, []).append(ln)
        return out

    return snap.memo("log-lines-by-cq", build).get(cluster_queue, [])


@dataclass(frozen=True)
class LogLevelInfo:
    """What the controller's log level is, from the flag and from what the logs show."""

    max_seen: int | None
    """highest logr V-level among parsed lines (None: no structured lines)"""
    flag: int | None
    """``--zap-log-level`` of the Kueue manager container (None: not found)"""
    flag_raw: str | None = None
    flag_source: str | None = None
    """``Deployment/kueue-system/kueue-controller-manager`` or the Pod that carries the flag"""

    @property
    def effective(self) -> int | None:
        """The flag (quiet logs do not prove a low level), raised to what the logs show (the flag may have
        changed since those lines were written)."""
        if self.flag is not None and self.max_seen is not None:
            return max(self.flag, self.max_seen)
        return self.flag if self.flag is not None else self.max_seen


def zap_level_value(text: str) -> int | None:
    """``--zap-log-level`` value → logr V-level: ``debug`` 1, ``info`` 0, ``error`` -2, integers as is."""
    t = text.strip().strip("'\"").lower()
    named = {"debug": 1, "info": 0, "warn": -1, "error": -2, "dpanic": -3, "panic": -4, "fatal": -5}
    if t in named:
        return named[t]
    try:
        return int(t)
    except ValueError:
        return None


def flag_value(args: Iterable[str], flag: str) -> str | None:
    """Value of ``--flag=value`` or ``--flag value`` (last one wins, like Go's flag package)."""
    found: str | None = None
    tokens = _tokens(args)
    for i, tok in enumerate(tokens):
        for spelling in (flag, "-" + flag.lstrip("-")):
            if tok.startswith(spelling + "="):
                found = tok[len(spelling) + 1:]
            elif tok == spelling and i + 1 < len(tokens):
                found = tokens[i + 1]
    return found


def _tokens(args: Iterable[str]) -> list[str]:
    out: list[str] = []
    for a in args:
        a = str(a)
        if any(ch.isspace() for ch in a.strip()) and "--" in a:
            # `command: ["/bin/sh", "-c", "/manager --zap-log-level=2 ..."]`
            try:
                out.extend(shlex.split(a))
            except ValueError:
                out.extend(a.split())
        else:
            out.append(a)
    return out


def could_be_controller(name: str, lbls: dict[str, str]) -> bool:
    """What `is_kueue_controller` needs of an object's name and labels before it reads the containers: a pod
    that fails this is not the controller, whatever its images (so most pods need not be decoded)."""
    return (lbls.get("app.kubernetes.io/name") == "kueue" or lbls.get("control-plane") == "controller-manager"
            or name.startswith("kueue-controller-manager"))


def is_kueue_controller(obj: dict[str, Any]) -> bool:
    """A Kueue controller-manager Pod or Deployment (not KueueViz, not another kubebuilder operator)."""
    m = meta(obj)
    lbls = labels(obj)
    images = " ".join(c.get("image", "") for c in _containers(obj))
    if "kueueviz" in images or "kueueviz" in (m.get("name") or ""):
        return False
    if lbls.get("app.kubernetes.io/name") == "kueue" and lbls.get("app.kubernetes.io/component",
                                                                  "controller") in ("controller", "manager"):
        return True
    if lbls.get("control-plane") == "controller-manager" and (
            m.get("namespace") == "kueue-system" or "kueue" in images or "kueue" in (m.get("name") or "")):
        return True
    return (m.get("name") or "").startswith("kueue-controller-manager")


def _containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    spec = obj.get("spec") or {}
    if obj.get("kind") != "Pod":
        spec = ((spec.get("template") or {}).get("spec")) or {}
    return [c for c in spec.get("containers") or () if isinstance(c, dict)]


def manager_container(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The Kueue manager container: named ``manager``, else the one running a kueue image."""
    containers = _containers(obj)
    for c in containers:
        if c.get("name") == "manager":
            return c
    for c in containers:
        if "kueue" in str(c.get("image", "")):
            return c
    return containers[0] if containers else None


def controller_objects(snap: Snapshot) -> list[dict[str, Any]]:
    """Kueue controller Deployments first, then Pods (memoised)."""

    def build() -> list[dict[str, Any]]:
        deps = [d for d in snap.of_kind("Deployment") if is_kueue_controller(d)]
        pods = [p for p in (snap.obj(h) for h in snap.entries("Pod") if could_be_controller(h.name, h.labels))
                if is_kueue_controller(p)]
        return deps + pods

    return snap.memo("kueue-controller-objects", build)


def container_args(container: dict[str, Any]) -> list[str]:
    command = [str(a) for a in (container.get("command") or [])]
    return command + [str(a) for a in (container.get("args") or [])]


def log_level_info(snap: Snapshot) -> LogLevelInfo:
    """The controller's effective log level: ``--zap-log-level`` and the highest V seen (memoised)."""

    def build() -> LogLevelInfo:
        seen = [ln.verbosity for ln in log_lines(snap) if ln.verbosity is not None]
        flag: int | None = None
        raw: str | None = None
        source: str | None = None
        for obj in controller_objects(snap):
            c = manager_container(obj)
            if c is None:
                continue
            value = flag_value(container_args(c), "--zap-log-level")
            if value is not None:
                m = meta(obj)
                raw, flag = value, zap_level_value(value)
                source = f"{obj.get('kind')}/{m.get('namespace')}/{m.get('name')}"
                break
        return LogLevelInfo(max_seen=max(seen) if seen else None, flag=flag, flag_raw=raw, flag_source=source)

    return snap.memo("kueue-log-level", build)


def log_level_patch(snap: Snapshot, level: int) -> Patch | None:
    """The JSON patch that sets ``--zap-log-level=<level>`` on the Kueue controller Deployment's manager container
    (replacing the flag where it is, appending it to the args otherwise); None when the snapshot holds no such
    Deployment. Editing the pod template rolls the controller, so the new level applies without a restart."""
    for obj in controller_objects(snap):
        if obj.get("kind") != "Deployment":
            continue
        containers = _containers(obj)
        c = manager_container(obj)
        if c is None:
            continue
        index = next(i for i, x in enumerate(containers) if x is c)
        base = f"/spec/template/spec/containers/{index}"
        value = f"--zap-log-level={level}"
        ops: list[dict[str, Any]] = []
        for part in ("command", "args"):
            words = [str(a) for a in (c.get(part) or [])]
            for i, word in enumerate(words):
                if word.startswith(("--zap-log-level=", "-zap-log-level=")):
                    ops = [{"op": "replace", "path": f"{base}/{part}/{i}", "value": value}]
                elif word in ("--zap-log-level", "-zap-log-level") and i + 1 < len(words):
                    ops = [{"op": "replace", "path": f"{base}/{part}/{i + 1}", "value": str(level)}]
        if not ops:
            ops = ([{"op": "add", "path": f"{base}/args/-", "value": value}] if c.get("args")
                   else [{"op": "add", "path": f"{base}/args", "value": [value]}])
        m = meta(obj)
        return Patch(kind="Deployment", name=str(m.get("name")), namespace=m.get("namespace"),
                    json_ops=tuple(ops))
    return None
