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
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from sys import intern
from typing import Any

import msgspec

from kueuediag import jsonload
from kueuediag.models import Patch
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


@dataclass(frozen=True, slots=True)
class LogLine:
    """One line of a controller log, normalised across encoders.

    Slotted: a snapshot holds hundreds of thousands of lines, and a per-instance ``__dict__`` cost ~1 kB each.
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
    kept_fields: Mapping[str, Any] | None = field(default=None, repr=False)
    """the structured fields of a console line; None for a JSON line, whose fields are read again from `raw`
    when asked (`fields`): a production log's fields would otherwise take more memory than the log itself"""
    _refs: tuple[tuple[WorkloadRef, ...], tuple[str, ...]] | None = field(default=None, init=False, repr=False,
                                                                          compare=False)
    start: int = field(default=0, repr=False)
    stop: int = field(default=-1, repr=False)
    bare: bool = field(default=False, repr=False)
    """a JSON line with no field beyond level, time, logger, caller, message, error and stack"""

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
            object.__setattr__(self, "_refs", refs)  # a cache of what the frozen fields determine
        return refs

    @property
    def workloads(self) -> tuple[WorkloadRef, ...]:
        """every Workload the line names (workload, preemptingWorkload, targetWorkload, controller-runtime's
        Workload key), worked out on first use: most lines are only ever counted or matched by message"""
        return self._named()[0]

    @property
    def cluster_queues(self) -> tuple[str, ...]:
        """every ClusterQueue the line names (clusterQueue, targetClusterQueue...), on first use"""
        return self._named()[1]

    @property
    def workload(self) -> WorkloadRef | None:
        return self.workloads[0] if self.workloads else None

    @property
    def cluster_queue(self) -> str | None:
        return self.cluster_queues[0] if self.cluster_queues else None

    @property
    def location(self) -> str:
        """``file:line`` for evidence."""
        return f"{self.file}:{self.lineno}"

    @property
    def is_error(self) -> bool:
        return self.severity in ERROR_LEVELS

    def field_text(self, key: str) -> str:
        """A field as text (object refs as ``ns/name``), empty when absent."""
        if self._surely_lacks(key):
            return ""
        if self.kept_fields is None and self.format == "json":
            return _as_text(_json_field(self.raw, key))
        return _as_text(self.fields.get(key))

    def _surely_lacks(self, key: str) -> bool:
        """A JSON line whose text does not hold `key` has no such field: known without parsing it again."""
        return self.kept_fields is None and self.format == "json" and f'"{key}"' not in self.raw

    def structured(self) -> bool:
        """Whether the line has any structured field (known without parsing a JSON line again)."""
        if self.kept_fields is not None:
            return bool(self.kept_fields)
        return self.format == "json" and not self.bare

    def has_field(self, key: str) -> bool:
        """Whether the line has the structured field `key` (a JSON line is parsed again only when its text
        holds the key)."""
        return not self._surely_lacks(key) and key in self.fields

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


_NAMED_NONE: tuple[tuple[WorkloadRef, ...], tuple[str, ...]] = ((), ())
_SharedRefs = dict[tuple[tuple[WorkloadRef, ...], tuple[str, ...]], tuple[tuple[WorkloadRef, ...], tuple[str, ...]]]
"""One copy of each distinct (workloads, cluster queues) the lines of a file name: a log names the same few
thousand objects over and over."""


def parse_log_text(path: str, text: str, year: int | None = None) -> list[LogLine]:
    """Parse one log file. `year` completes klog timestamps (which carry none); callers pass the snapshot's
    capture year (the current UTC year is only a fallback)."""
    out: list[LogLine] = []
    named: _SharedRefs = {}
    pos = 0
    for i, chunk in enumerate(text.splitlines(keepends=True), start=1):
        start, pos = pos, pos + len(chunk)
        line = chunk.rstrip("\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029").rstrip("\r")
        if not line.strip():
            continue
        parsed = parse_log_line(path, i, line, year, named)
        # the line's text becomes a slice of the file's (kept by the snapshot anyway), not a copy of it
        object.__setattr__(parsed, "text", text)
        object.__setattr__(parsed, "start", start)
        object.__setattr__(parsed, "stop", start + len(line))
        out.append(parsed)
    return out


def parse_log_line(path: str, lineno: int, line: str, year: int | None = None,
                   shared: _SharedRefs | None = None) -> LogLine:
    """One line; `shared` keeps one copy of each distinct set of objects the lines of a file name."""
    body = line
    prefix_ts: datetime | None = None
    m = _TS_PREFIX.match(body) if body[:1].isdigit() else None
    if m:  # kubectl logs --timestamps
        prefix_ts = parse_time_lenient(m.group(1))
        body = body[m.end():]
    stripped = body.strip()
    if stripped.startswith("{") and stripped.endswith("}"):
        try:
            obj = jsonload.loads(stripped)
        except (ValueError, RecursionError):
            obj = None
        if isinstance(obj, dict):
            return _from_json(path, lineno, line, obj, prefix_ts, {} if shared is None else shared)
    if "\t" in body:
        console = _from_console(path, lineno, line, body)
        if console is not None:
            return console
    km = _KLOG.match(stripped)
    if km:
        return _from_klog(path, lineno, line, km, year)
    return LogLine(file=path, lineno=lineno, text=line, format="text", ts=prefix_ts, level="", verbosity=None,
                   severity="text", logger="", caller="", msg=stripped)


def _from_json(path: str, lineno: int, raw: str, obj: dict[str, Any], prefix_ts: datetime | None,
               shared: _SharedRefs) -> LogLine:
    # Every key is looked up once (a production log has ~10 of them a line, 100,000s of lines).
    level = _as_text(obj["level"] if "level" in obj else obj.get("L", ""))
    verbosity, severity = _level(level)
    logger = _as_text(obj["logger"] if "logger" in obj else obj.get("N", ""))
    line = LogLine(
        file=path, lineno=lineno, text=raw, format="json",
        ts=parse_ts(obj["ts"] if "ts" in obj else obj.get("T")) or prefix_ts,
        level=intern(level), verbosity=verbosity, severity=severity,
        logger=intern(logger),
        caller=intern(_as_text(obj["caller"] if "caller" in obj else obj.get("C", ""))),
        msg=intern(_as_text(obj["msg"] if "msg" in obj else obj.get("M", ""))),
        error=_as_text(obj.get("error", "")),
        stacktrace=_as_text(obj.get("stacktrace", "")),
    )
    # What the line names is worked out now, while the parsed line is at hand (its fields are not kept, see
    # kept_fields); none of the keys naming objects is a core key, so the whole object serves as the fields.
    object.__setattr__(line, "bare", all(k in _CORE_KEYS for k in obj))
    if _REF_KEYS.isdisjoint(obj) and not logger.startswith(("workload", "cluster-queue")):
        named = _NAMED_NONE  # no key that can name an object (what the two readers below would find)
    else:
        named = (_workload_refs(obj, logger), _cq_refs(obj, logger))
    object.__setattr__(line, "_refs", shared.setdefault(named, named) if named != _NAMED_NONE else _NAMED_NONE)
    return line




_SHALLOW = 200
"""JSON with fewer brackets than this is nested too shallowly for any parser's depth limit: msgspec, orjson and
:mod:`json` then accept and refuse the same lines (beyond it, only the general path decides)."""


def _shallow(body: str) -> bool:
    return body.count("{") + body.count("[") < _SHALLOW


@lru_cache(maxsize=64)
def _one_field(key: str) -> msgspec.json.Decoder[Any]:
    """A decoder of one key of a JSON log line, kept as written (a Raw slice): the other keys are skipped in C
    (a signature's field pattern reads one key of tens of thousands of lines)."""
    struct = msgspec.defstruct("OneField", [("value", msgspec.Raw | msgspec.UnsetType,
                                              msgspec.field(default=msgspec.UNSET, name=key))], gc=False)
    return msgspec.json.Decoder(struct)


def _json_field(raw: str, key: str) -> Any:
    """``_json_fields(raw).get(key)``, reading only that key. msgspec is stricter than orjson and :mod:`json`
    nowhere: a line it reads is a line they read the same, and the key's text is parsed by the same parser as
    the whole line would be; a line it refuses goes the general way."""
    if key in _CORE_KEYS:
        return None
    m = _TS_PREFIX.match(raw)
    body = (raw[m.end():] if m else raw).strip()
    if _shallow(body):
        try:
            value = _one_field(key).decode(body).value
        except (msgspec.DecodeError, RecursionError):
            pass
        else:
            return None if value is msgspec.UNSET else jsonload.loads(memoryview(value))
    return _json_fields(raw).get(key)


def _json_fields(raw: str) -> dict[str, Any]:
    """The fields of a JSON log line, parsed again from the line as written (see `LogLine.kept_fields`)."""
    m = _TS_PREFIX.match(raw)
    try:
        obj = jsonload.loads((raw[m.end():] if m else raw).strip())
    except (ValueError, RecursionError):
        return {}
    return {k: v for k, v in obj.items() if k not in _CORE_KEYS} if isinstance(obj, dict) else {}


def _from_console(path: str, lineno: int, raw: str, body: str) -> LogLine | None:
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
        file=path, lineno=lineno, text=raw, format="console", ts=parse_ts(parts[0]),
        level=parts[1].strip(), verbosity=verbosity, severity=severity, logger=logger, caller=caller,
        msg=msg.strip(), error=error, stacktrace=stack, kept_fields=fields,
    )


def _from_klog(path: str, lineno: int, raw: str, m: re.Match[str], year: int | None) -> LogLine:
    sev = _KLOG_SEVERITY[m.group(1)]
    ts: datetime | None = None
    try:
        ts = datetime(year or datetime.now(UTC).year, int(m.group(2)), int(m.group(3)), int(m.group(4)),
                      int(m.group(5)), int(m.group(6)), int((m.group(7) or "0").ljust(6, "0")), tzinfo=UTC)
    except ValueError:
        ts = None
    return LogLine(file=path, lineno=lineno, text=raw, format="klog", ts=ts, level=m.group(1), verbosity=0,
                   severity=sev, logger="klog", caller=m.group(8), msg=m.group(9).strip())


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
        return Patch(kind="Deployment", name=str(m.get("name")), namespace=m.get("namespace"), json_ops=tuple(ops))
    return None
