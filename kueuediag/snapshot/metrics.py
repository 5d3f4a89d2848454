"""Prometheus data stored in a snapshot: an OpenMetrics parser, a memoised series store, and a writer.

Snapshots keep metrics under ``metrics/**/*.om`` as OpenMetrics text — the format ``promtool tsdb
create-blocks-from openmetrics`` backfills: ``# TYPE``/``# HELP``/``# UNIT`` lines, counter samples named
``<family>_total``, timestamps in **seconds** (floats allowed) and a mandatory final ``# EOF`` line. The live
collector writes Prometheus range-query results in the same format (:func:`to_openmetrics`), so a diagnosis
can be replayed from disk and a fixture can be loaded into a real Prometheus.

Files ending in ``.prom``/``.txt`` without ``# EOF`` are read as the Prometheus text exposition format
(timestamps in milliseconds, no ``# EOF``), which is what ``curl .../metrics`` or a federation dump gives.
Samples without a timestamp (a single scrape) are stamped with the snapshot's capture time.

The store keys every series by metric name plus its frozen label set and keeps points sorted by time; checks
ask ``select(name, **label_filters)`` and use the pure helpers below (:func:`increase_per_interval` handles
counter resets like PromQL's ``increase`` does, without its extrapolation).

Malformed input raises :class:`kueuediag.errors.InputError` naming ``file:line``.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import field
from operator import itemgetter

from kueuediag.errors import InputError
from kueuediag.records import dataclass
from kueuediag.snapshot.model import Snapshot

Labels = tuple[tuple[str, str], ...]
"""Sorted (name, value) pairs: hashable and deterministic."""
Point = tuple[float, float]
"""(timestamp in seconds since the epoch, value)"""

METRIC_TYPES = frozenset(
    {"counter", "gauge", "histogram", "gaugehistogram", "summary", "info", "stateset", "unknown", "untyped"}
)
_SUFFIXES: dict[str, tuple[str, ...]] = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_count", "_sum", "_created"),
    "gaugehistogram": ("_bucket", "_gcount", "_gsum"),
    "summary": ("_count", "_sum", "_created"),
    "info": ("_info",),
}

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_NAME_RE = re.compile(_NAME)
_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_VALUE_RE = re.compile(rf"(?:{_NUMBER}|[+-]?Inf|NaN)")
_TS_RE = re.compile(_NUMBER)
_SAMPLE_HEAD = re.compile(rf"({_NAME})(\{{)?")
_LABEL_RE = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\\n]|\\.)*)"\s*')
_META_RE = re.compile(rf"# (TYPE|HELP|UNIT) ({_NAME})(?: (.*))?$")
_UNESCAPE = re.compile(r"\\(.)")


@dataclass(frozen=True)
class Series:
    """One time series: metric (sample) name, its labels and its points sorted by time."""

    name: str
    labels: Labels
    points: tuple[Point, ...]

    def label(self, key: str, default: str = "") -> str:
        for k, v in self.labels:
            if k == key:
                return v
        return default

    @property
    def labels_dict(self) -> dict[str, str]:
        return dict(self.labels)

    def latest(self) -> Point | None:
        return self.points[-1] if self.points else None

    def span(self) -> tuple[float, float] | None:
        """(first timestamp, last timestamp)."""
        return (self.points[0][0], self.points[-1][0]) if self.points else None

    def selector(self) -> str:
        """PromQL-style selector for evidence: ``kueue_pending_workloads{cluster_queue="a"}``."""
        inner = ",".join(f'{k}="{_escape(v)}"' for k, v in self.labels)
        return f"{self.name}{{{inner}}}" if inner else self.name


LabelFilter = str | Iterable[str] | None
"""Exact value, any of several values, or None for "label absent or empty"."""


@dataclass
class MetricStore:
    """All series of a snapshot, by sample name; ``select`` results are memoised."""

    series: dict[str, dict[Labels, list[Point]]] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)
    """family name → OpenMetrics type"""
    help: dict[str, str] = field(default_factory=dict)
    _cache: dict[tuple[str, tuple[tuple[str, object], ...]], list[Series]] = field(
        default_factory=dict, repr=False)
    _index: dict[tuple[str, str], dict[str, list[Labels]]] = field(default_factory=dict, repr=False)

    def names(self) -> list[str]:
        return sorted(self.series)

    def has(self, name: str) -> bool:
        return bool(self.series.get(name))

    def type_of(self, name: str) -> str | None:
        """The declared type of a sample name (``kueue_admitted_workloads_total`` → ``counter``)."""
        if name in self.types:
            return self.types[name]
        for family, typ in self.types.items():
            if name.startswith(family) and name[len(family):] in _SUFFIXES.get(typ, ()):
                return typ
        return None

    def select(self, name: str, **label_filters: LabelFilter) -> list[Series]:
        """Series named ``name`` whose labels match every filter (sorted by labels).

        A counter may be asked for by family name: ``select("kueue_admitted_workloads")`` finds the
        ``_total`` samples.
        """
        if name not in self.series and f"{name}_total" in self.series:
            name = f"{name}_total"
        key = (name, tuple(sorted((k, _freeze(v)) for k, v in label_filters.items())))
        if key in self._cache:
            return self._cache[key]
        by_labels = self.series.get(name, {})
        # one exact label value picks the candidates from an index: a per-ClusterQueue select must not sort and
        # test every ClusterQueue's series
        exact = next(((k, v) for k, v in label_filters.items() if isinstance(v, str)), None)
        candidates = self._labelled(name, exact[0]).get(exact[1], []) if exact else sorted(by_labels)
        out: list[Series] = []
        for labels in candidates:
            lbl = dict(labels)
            if all(_label_matches(lbl.get(k, ""), want) for k, want in label_filters.items()):
                out.append(Series(name=name, labels=labels, points=tuple(by_labels[labels])))
        self._cache[key] = out
        return out

    def _labelled(self, name: str, label: str) -> dict[str, list[Labels]]:
        """Label sets of ``name`` (sorted) by their value of ``label`` ("" when absent), built once."""
        found = self._index.get((name, label))
        if found is None:
            found = defaultdict(list)
            for labels in sorted(self.series.get(name, {})):
                found[dict(labels).get(label, "")].append(labels)
            self._index[(name, label)] = found = dict(found)
        return found

    def time_range(self) -> tuple[float, float] | None:
        """(earliest, latest) timestamp over every series."""
        lo, hi = math.inf, -math.inf
        for by_labels in self.series.values():
            for points in by_labels.values():
                if points:
                    lo, hi = min(lo, points[0][0]), max(hi, points[-1][0])
        return None if lo == math.inf else (lo, hi)

    def __bool__(self) -> bool:
        return any(self.series.values())


def _freeze(v: LabelFilter) -> object:
    if v is None or isinstance(v, str):
        return v
    return tuple(sorted(v))


def _label_matches(actual: str, want: LabelFilter) -> bool:
    if want is None:
        return actual == ""
    if isinstance(want, str):
        return actual == want
    return actual in set(want)


# --- parsing ------------------------------------------------------------------------------------------------


def parse_metrics(texts: Mapping[str, str], default_time: float | None = None,
                  max_series: int | None = None) -> MetricStore:
    """Parse every file of ``snapshot.metrics_text`` into one store (series from several files are merged).

    More than ``max_series`` distinct series is an input error naming the file that crossed the bound.
    """
    store = MetricStore()
    raw: dict[str, dict[Labels, list[Point]]] = defaultdict(lambda: defaultdict(list))
    for path in sorted(texts):
        _parse_file(path, texts[path], default_time, store, raw)
        if max_series is not None:
            count = sum(len(by_labels) for by_labels in raw.values())
            if count > max_series:
                raise InputError(f"{path}: {count:,} metric series so far, more than the bound of {max_series:,} "
                                 "(raise it with --max-series)")
    for name, by_labels in raw.items():
        store.series[name] = {labels: _sorted_unique(points) for labels, points in by_labels.items()}
    return store


def metric_store(snap: Snapshot) -> MetricStore:
    """The snapshot's metrics, parsed once and memoised on the snapshot (empty when there are none)."""
    return snap.memo("metric-store",
                     lambda: parse_metrics(snap.metrics_text, default_time=snap.now.timestamp(),
                                           max_series=snap.limits.max_series))


def _sorted_unique(points: list[Point]) -> list[Point]:
    points.sort(key=itemgetter(0))
    if len(set(map(itemgetter(0), points))) == len(points):
        return points  # the common case, every timestamp once: no per-point pass
    out: list[Point] = []
    for p in points:
        if out and out[-1][0] == p[0]:
            out[-1] = p  # the same sample twice (overlapping range queries): keep the later one
        else:
            out.append(p)
    return out


def _is_openmetrics(path: str, text: str) -> bool:
    if path.lower().endswith(".om"):
        return True
    return any(line.strip() == "# EOF" for line in text.splitlines()[-3:])


def _parse_file(
    path: str, text: str, default_time: float | None, store: MetricStore,
    raw: dict[str, dict[Labels, list[Point]]],
) -> None:
    openmetrics = _is_openmetrics(path, text)
    ts_scale = 1.0 if openmetrics else 0.001
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    saw_eof = False
    current_family: str | None = None
    current_type = "unknown"
    # A range query writes each series as a run of lines that differ only in value and timestamp: while the
    # `name{labels}` text repeats, only the value and timestamp are parsed (and checked like the full parser does).
    run_head = ""
    run_points: list[Point] = []
    run_counter = False
    n_lines = len(lines)
    i = 0
    while i < n_lines:
        line = lines[i]
        i += 1
        lineno = i
        if saw_eof:
            raise InputError(f"{path}:{lineno}: data after '# EOF' (OpenMetrics ends with exactly one '# EOF' line)")
        stripped = line.rstrip("\r")
        if run_head and stripped.startswith(run_head):
            point = _run_point(stripped[len(run_head):], ts_scale, default_time)
            if point is not None and not (run_counter and (point[1] < 0 or math.isnan(point[1]))):
                run_points.append(point)
                continue
        where = f"{path}:{lineno}"
        if not stripped.strip():
            continue
        if stripped.startswith("#"):
            run_head = ""
            if stripped == "# EOF":
                if not openmetrics:
                    raise InputError(f"{where}: '# EOF' in a Prometheus text file (name it .om)")
                saw_eof = True
                continue
            meta = _META_RE.match(stripped)
            if meta is None:
                if openmetrics and stripped.startswith("# ") and stripped.split()[1:2] in (
                        ["TYPE"], ["HELP"], ["UNIT"]):
                    raise InputError(f"{where}: malformed metadata line {_clip(stripped)!r}")
                continue  # free comment (Prometheus text format)
            kind, family, rest = meta.group(1), meta.group(2), meta.group(3) or ""
            if kind == "TYPE":
                typ = rest.strip()
                if typ not in METRIC_TYPES:
                    raise InputError(f"{where}: unknown metric type {typ!r} for {family}")
                declared = store.types.get(family)
                if declared is not None and declared != typ:
                    raise InputError(f"{where}: {family} declared as {typ} but earlier as {declared}")
                store.types[family] = typ
                current_family, current_type = family, typ
            elif kind == "HELP":
                store.help[family] = _UNESCAPE.sub(lambda m: "\n" if m.group(1) == "n" else m.group(1), rest)
            continue
        name, labels, value, ts = _parse_sample(where, stripped)
        if ts is None:
            if default_time is None:
                raise InputError(f"{where}: sample {name} has no timestamp and no capture time is known")
            t = default_time
        else:
            t = ts * ts_scale
        typ = _type_for(name, current_family, current_type, store)
        if typ == "counter" and (value < 0 or math.isnan(value)):
            raise InputError(f"{where}: counter {name} has invalid value {value!r} (counters are >= 0)")
        run_points = raw[name][labels]
        run_points.append((t, value))
        run_head, run_counter = _head_of(stripped), typ == "counter"
        if run_head:
            i = _take_run(lines, i, run_head, run_counter, ts_scale, run_points)
    if openmetrics and not saw_eof:
        last = len(lines)
        raise InputError(f"{path}:{last}: missing final '# EOF' line (required by OpenMetrics and promtool)")


def _head_of(line: str) -> str:
    """The ``name{labels}`` text of a sample line the parser accepted ("" when it has an exemplar or comment,
    whose braces could be mistaken for the label set's)."""
    if "#" in line:
        return ""
    close = line.rfind("}")
    return line[:close + 1] if close >= 0 else line[:line.find(" ")]


_RUN_BODY = re.compile(r"(?:[0-9.eE+-]+ [0-9.eE+-]+\n)*")
"""the lines of a run after their head: a plain number and a plain timestamp each (no NaN, Inf or exemplar)"""


def _take_run(lines: list[str], start: int, head: str, counter: bool, ts_scale: float,
              points: list[Point]) -> int:
    """Append the points of the lines from `start` on that repeat `head` (a range query's series), all at once
    when every one of them is ``head value timestamp`` with plain numbers; return the index of the first line not
    taken (`start` when they are not all plain: the line-by-line path then reads and checks each one).

    Over the characters ``0-9 . e E + -`` Python's `float` accepts exactly what `_NUMBER` matches, so the
    conversion checks what the line-by-line path checks (a token it refuses sends the run back there)."""
    prefix = head + " "
    end = start
    n = len(lines)
    while end < n and lines[end].startswith(prefix):
        end += 1
    if end - start < 2:
        return start
    k = len(prefix)
    body = "\n".join([ln[k:] for ln in lines[start:end]]) + "\n"
    if _RUN_BODY.fullmatch(body) is None:
        return start
    tokens = body.split()
    try:
        values = list(map(float, tokens[0::2]))
        stamps = list(map(float, tokens[1::2]))
    except ValueError:
        return start
    if counter and values and min(values) < 0:
        return start  # the line-by-line path reports the negative counter sample
    if ts_scale != 1.0:
        stamps = [t * ts_scale for t in stamps]
    points.extend(zip(stamps, values, strict=True))
    return end


def _run_point(rest: str, ts_scale: float, default_time: float | None) -> Point | None:
    """(time, value) from the ``" value [timestamp]"`` after a repeated head; None when it is not in the simple
    form (the full parser then reads the line and reports what is wrong)."""
    parts = rest.split(" ")
    if parts[0] or not 2 <= len(parts) <= 3 or "#" in rest or not _is_plain_number(parts[1], _VALUE_RE):
        return None
    if len(parts) == 3:
        if not _is_plain_number(parts[2], _TS_RE):
            return None
        return float(parts[2]) * ts_scale, float(parts[1])
    if default_time is None:
        return None
    return default_time, float(parts[1])


def _is_plain_number(text: str, pattern: re.Pattern[str]) -> bool:
    """`pattern` fully matches `text`; ASCII digits alone (most values and every timestamp of a range query)
    are answered without the regex."""
    return (text.isascii() and text.isdigit()) or pattern.fullmatch(text) is not None


def _type_for(name: str, family: str | None, family_type: str, store: MetricStore) -> str:
    if family is not None and (name == family or name[len(family):] in _SUFFIXES.get(family_type, ())) \
            and name.startswith(family):
        return family_type
    return store.type_of(name) or "unknown"


_LBL = r'[a-zA-Z_][a-zA-Z0-9_]*="[^"\\\n]*"'
_FAST_SAMPLE = re.compile(rf"({_NAME})(?:\{{((?:{_LBL}(?:,{_LBL})*,?)?)\}})? ([^ #]+)(?: ([^ #]+))?$")
_FAST_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"\\\n]*)"')
_label_cache: dict[str, Labels | None] = {}


def _fast_labels(text: str) -> Labels | None:
    """Labels of the common, escape-free form; None when a label repeats (the slow path reports it)."""
    if text in _label_cache:
        return _label_cache[text]
    pairs = _FAST_LABEL.findall(text)
    keys = [k for k, _ in pairs]
    result: Labels | None = tuple(sorted(pairs)) if len(set(keys)) == len(keys) else None
    if len(_label_cache) < 100_000:
        _label_cache[text] = result
    return result


def _parse_sample(where: str, line: str) -> tuple[str, Labels, float, float | None]:
    fast = _FAST_SAMPLE.match(line)
    if fast is not None and _VALUE_RE.fullmatch(fast.group(3)) and (
            fast.group(4) is None or _TS_RE.fullmatch(fast.group(4))):
        fast_labels = _fast_labels(fast.group(2) or "")
        if fast_labels is not None:
            stamp = fast.group(4)
            return fast.group(1), fast_labels, float(fast.group(3)), float(stamp) if stamp is not None else None
    head = _SAMPLE_HEAD.match(line)
    if head is None:
        raise InputError(f"{where}: expected a metric name at the start of {_clip(line)!r}")
    name = head.group(1)
    pos = head.end()
    labels: list[tuple[str, str]] = []
    if head.group(2):
        seen: set[str] = set()
        while True:
            if pos < len(line) and line[pos] == "}":
                pos += 1
                break
            m = _LABEL_RE.match(line, pos)
            if m is None:
                raise InputError(f"{where}: malformed label set in {_clip(line)!r}")
            key = m.group(1)
            if key in seen:
                raise InputError(f"{where}: duplicate label {key!r} in {name}")
            seen.add(key)
            labels.append((key, _unescape(m.group(2))))
            pos = m.end()
            if pos < len(line) and line[pos] == ",":
                pos += 1
            elif pos < len(line) and line[pos] == "}":
                continue
            else:
                raise InputError(f"{where}: expected ',' or '}}' in label set of {_clip(line)!r}")
    rest = line[pos:]
    exemplar = rest.find(" # ")
    if exemplar >= 0:
        rest = rest[:exemplar]
    if not rest.startswith(" "):
        raise InputError(f"{where}: expected a space before the value in {_clip(line)!r}")
    fields = rest.split()
    if not 1 <= len(fields) <= 2:
        raise InputError(f"{where}: expected 'value [timestamp]' after {name}, got {rest.strip()!r}")
    if not _VALUE_RE.fullmatch(fields[0]):
        raise InputError(f"{where}: invalid sample value {fields[0]!r} for {name}")
    value = float(fields[0])
    ts: float | None = None
    if len(fields) == 2:
        if not _TS_RE.fullmatch(fields[1]):
            raise InputError(f"{where}: invalid timestamp {fields[1]!r} for {name}")
        ts = float(fields[1])
    return name, tuple(sorted(labels)), value, ts


def _unescape(text: str) -> str:
    return _UNESCAPE.sub(lambda m: "\n" if m.group(1) == "n" else m.group(1), text)


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _clip(text: str, n: int = 80) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


# --- helpers over series ------------------------------------------------------------------------------------


def latest(series: Series) -> Point | None:
    """The newest (timestamp, value)."""
    return series.latest()


def value_at(series: Series, t: float) -> float | None:
    """The last value at or before ``t`` (None before the first point). A binary search: callers sweep every
    sample time of long histories, so a linear scan here made them quadratic."""
    i = bisect_right(series.points, t, key=_time_of)
    return series.points[i - 1][1] if i else None


def _time_of(point: Point) -> float:
    return point[0]


def in_range(series: Series, start: float | None = None, end: float | None = None) -> Series:
    """The series restricted to ``start <= t <= end`` (a range-query window over stored data)."""
    pts = tuple(p for p in series.points if (start is None or p[0] >= start) and (end is None or p[0] <= end))
    return Series(series.name, series.labels, pts)


def time_range(series: Iterable[Series]) -> tuple[float, float] | None:
    """(earliest, latest) timestamp over several series."""
    spans = [s.span() for s in series]
    real = [s for s in spans if s is not None]
    if not real:
        return None
    return min(s[0] for s in real), max(s[1] for s in real)


def _delta(prev: float, cur: float) -> float:
    """Counter increase between two samples; a drop means the counter restarted from zero."""
    return cur - prev if cur >= prev else cur


def increase_events(series: Series, start: float | None = None, end: float | None = None) -> list[Point]:
    """(timestamp, increase) at every sample where a counter went up, resets handled.

    With ``start``, points before it only serve as the baseline; with ``end``, later points are ignored.
    """
    out: list[Point] = []
    pts = series.points
    for (_, prev), (t, cur) in zip(pts, pts[1:], strict=False):
        if start is not None and t <= start:
            continue
        if end is not None and t > end:
            break
        d = _delta(prev, cur)
        if d > 0:
            out.append((t, d))
    return out


def increase_per_interval(
    series: Series, step: float, start: float | None = None, end: float | None = None,
) -> list[Point]:
    """Counter increase per interval: ``[(interval_end, increase), ...]``, counter resets handled.

    Intervals are right-closed ``(start + i*step, start + (i+1)*step]`` like ``increase(x[step])`` evaluated
    at each interval end, but exact (no extrapolation): every increase between two consecutive samples is
    booked in the interval holding the later sample. ``start``/``end`` default to the series' span.
    """
    if step <= 0:
        raise ValueError("step must be positive")
    span = series.span()
    if span is None:
        return []
    lo = span[0] if start is None else start
    hi = span[1] if end is None else end
    n = max(1, math.ceil((hi - lo) / step - 1e-9))
    buckets = [0.0] * n
    for t, d in increase_events(series, lo, hi):
        i = min(n - 1, max(0, math.ceil((t - lo) / step - 1e-9) - 1))
        buckets[i] += d
    return [(lo + (i + 1) * step, v) for i, v in enumerate(buckets)]


def sum_increase_per_interval(
    series: Sequence[Series], step: float, start: float, end: float,
) -> list[Point]:
    """:func:`increase_per_interval` summed over several series (``sum(increase(x[step]))``)."""
    n = max(1, math.ceil((end - start) / step - 1e-9))
    total = [0.0] * n
    for s in series:
        for i, (_, v) in enumerate(increase_per_interval(s, step, start, end)):
            total[i] += v
    return [(start + (i + 1) * step, v) for i, v in enumerate(total)]


def sum_at(series: Sequence[Series], t: float) -> float | None:
    """Sum of the series' values at ``t`` (None when no series has a value yet)."""
    values = [v for v in (value_at(s, t) for s in series) if v is not None]
    return sum(values) if values else None


def sums_at(series: Sequence[Series], times: Sequence[float]) -> list[float | None]:
    """:func:`sum_at` at each of ``times`` (ascending), in one sweep over the points."""
    pos = [0] * len(series)
    out: list[float | None] = []
    for t in times:
        total, seen = 0.0, False
        for i, s in enumerate(series):
            pts, j = s.points, pos[i]
            while j < len(pts) and pts[j][0] <= t:
                j += 1
            pos[i] = j
            if j:
                total += pts[j - 1][1]
                seen = True
        out.append(total if seen else None)
    return out


# --- writing ------------------------------------------------------------------------------------------------


def _fmt(value: float) -> str:
    v = float(value)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return repr(v)


def _fmt_ts(t: float) -> str:
    text = f"{float(t):.3f}".rstrip("0").rstrip(".")
    return text or "0"


def _family_of(name: str, types: Mapping[str, str]) -> tuple[str, str]:
    if name in types:
        typ = types[name]
        if typ == "counter" and name.endswith("_total"):
            return name[: -len("_total")], typ
        return name, typ
    for family, typ in types.items():
        if name.startswith(family) and name[len(family):] in _SUFFIXES.get(typ, ()):
            return family, typ
    if name.endswith("_total"):
        return name[: -len("_total")], "counter"
    return name, "gauge"


def to_openmetrics(
    series: Iterable[Series], types: Mapping[str, str] | None = None, help: Mapping[str, str] | None = None,
) -> str:
    """Render series as OpenMetrics text that ``promtool tsdb create-blocks-from openmetrics`` accepts.

    ``types`` maps family (or sample) names to a type; without it, ``*_total`` samples are counters and
    everything else is a gauge. Families are written contiguously, series sorted by labels, points by time,
    timestamps in seconds, and the text ends with ``# EOF``.
    """
    types = dict(types or {})
    help = dict(help or {})
    families: dict[str, tuple[str, list[Series]]] = {}
    for s in series:
        if not _NAME_RE.fullmatch(s.name):
            raise ValueError(f"invalid metric name {s.name!r}")
        family, typ = _family_of(s.name, types)
        if family in families and families[family][0] != typ:
            raise ValueError(f"{family}: conflicting types {families[family][0]} and {typ}")
        families.setdefault(family, (typ, []))[1].append(s)
    lines: list[str] = []
    for family in sorted(families):
        typ, members = families[family]
        if typ == "untyped":
            typ = "unknown"
        lines.append(f"# TYPE {family} {typ}")
        if family in help:
            lines.append(f"# HELP {family} {_escape(help[family])}")
        merged: dict[tuple[str, Labels], list[Point]] = defaultdict(list)
        for s in members:
            merged[(s.name, tuple(sorted(s.labels)))].extend(s.points)
        for (name, labels), points in sorted(merged.items()):
            inner = ",".join(f'{k}="{_escape(v)}"' for k, v in labels)
            sel = f"{name}{{{inner}}}" if inner else name
            for t, v in _sorted_unique(list(points)):
                lines.append(f"{sel} {_fmt(v)} {_fmt_ts(t)}")
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


__all__ = [
    "Labels",
    "MetricStore",
    "Point",
    "Series",
    "in_range",
    "increase_events",
    "increase_per_interval",
    "latest",
    "metric_store",
    "parse_metrics",
    "sum_at",
    "sums_at",
    "sum_increase_per_interval",
    "time_range",
    "to_openmetrics",
    "value_at",
]
