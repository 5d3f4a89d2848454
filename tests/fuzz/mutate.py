"""Mutation operators over a snapshot held as ``{relative path: bytes}``.

Each operator returns a new file map and a short description (kept in failure reports so a crasher can be
minimised and replayed). Values that YAML/JSON writers cannot express directly (100,000-deep nesting, integers
longer than Python's int-to-string limit) go in as sentinels and are spliced into the text after dumping.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml

Files = dict[str, bytes]

DEEP = "__KDFUZZ_DEEP__"
HUGE = "__KDFUZZ_HUGEINT__"
HOT_KEYS = frozenset({
    "uid", "namespace", "name", "labels", "annotations", "ownerReferences", "creationTimestamp",
    "deletionTimestamp", "resourceVersion", "priority", "queueName", "clusterQueue", "lastTransitionTime",
    "conditions", "count", "nominalQuota", "requests", "limits", "kind", "apiVersion", "nodeName", "value",
    "podSets", "admission", "resourceGroups", "flavors", "capturedAt", "timestamp", "lastTimestamp", "eventTime",
    "terminationGracePeriodSeconds", "deletionGracePeriodSeconds", "schedulingGates", "taints", "allocatable",
})
SWAPS: tuple[Any, ...] = (
    {}, [], {"k": "v"}, ["x", 1], [{"a": 1}], 0, -1, 1, 2**64, -(10**30), 1.5, -0.0, float("inf"), float("-inf"),
    float("nan"), True, False, None, "", "x", "junk value", "\u202eevil\u0000nul", "line one\nline two",
    "ü" * 3 + "\U0001f680", "a" * 5000, "2026-13-45T99:99:99Z", "-5", "1e400", DEEP, HUGE,
)


@dataclass
class Mutant:
    files: Files
    what: list[str] = field(default_factory=list)
    container: str = "dir"
    """dir | tar.gz"""
    ops: list[str] = field(default_factory=list)
    """the operators applied, by function name"""


def _object_files(files: Files) -> list[str]:
    return [p for p in files if p.lower().endswith((".yaml", ".yml", ".json")) and p != "manifest.json"]


def _load(path: str, data: bytes) -> list[Any]:
    if path.endswith(".json"):
        return [json.loads(data)]
    return [d for d in yaml.load_all(data, Loader=yaml.CSafeLoader)]


def _dump(path: str, docs: list[Any], rng: random.Random) -> bytes:
    if path.endswith(".json"):
        text = json.dumps(docs[0], ensure_ascii=rng.random() < 0.5)
    else:
        text = yaml.dump_all(docs, Dumper=yaml.CSafeDumper, allow_unicode=rng.random() < 0.5, sort_keys=False)
    depth = rng.choice((50, 999, 5000, 100_000))
    text = text.replace(f'"{DEEP}"', "[" * depth + "]" * depth).replace(DEEP, "[" * depth + "]" * depth)
    digits = "9" * rng.choice((25, 400, 5000))
    text = text.replace(f'"{HUGE}"', digits).replace(HUGE, digits)
    return text.encode("utf-8", "surrogatepass")


def _objects(doc: Any) -> list[dict[str, Any]]:
    if isinstance(doc, dict) and isinstance(doc.get("items"), list):
        return [i for i in doc["items"] if isinstance(i, dict)]
    return [doc] if isinstance(doc, dict) else []


def _paths(obj: Any, limit: int = 3000) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    stack: list[tuple[tuple[Any, ...], Any]] = [((), obj)]
    while stack and len(out) < limit:
        path, node = stack.pop()
        if path:
            out.append(path)
        if isinstance(node, dict):
            stack.extend((path + (k,), v) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((path + (i,), v) for i, v in enumerate(node))
    return out


def _parent(obj: Any, path: tuple[Any, ...]) -> Any:
    for key in path[:-1]:
        obj = obj[key]
    return obj


def _pick_path(rng: random.Random, obj: dict[str, Any]) -> tuple[Any, ...] | None:
    paths = _paths(obj)
    if not paths:
        return None
    hot = [p for p in paths if p[-1] in HOT_KEYS or (len(p) > 1 and p[-2] in HOT_KEYS)]
    return rng.choice(hot if hot and rng.random() < 0.6 else paths)


def _edit_value(rng: random.Random, obj: dict[str, Any]) -> str:
    path = _pick_path(rng, obj)
    if path is None:
        return "no-op"
    parent = _parent(obj, path)
    key = path[-1]
    op = rng.random()
    where = ".".join(map(str, path))
    if op < 0.7:
        value = rng.choice(SWAPS)
        parent[key] = copy.deepcopy(value)
        return f"set {where} = {str(value)[:30]!r}"
    if op < 0.85:
        del parent[key]
        return f"delete {where}"
    if isinstance(parent[key], list) and parent[key]:
        parent[key].extend(copy.deepcopy(parent[key]) * rng.choice((1, 3)))
        return f"duplicate items of {where}"
    if isinstance(parent, dict):
        parent[f"{key}x"] = parent.pop(key)
        return f"rename {where}"
    parent.insert(key, copy.deepcopy(parent[key]))
    return f"duplicate {where}"


def object_value(rng: random.Random, m: Mutant) -> None:
    """Type swaps, deletions, duplications and renames inside one Kubernetes object."""
    candidates = _object_files(m.files)
    if not candidates:
        return
    path = rng.choice(candidates)
    try:
        docs = _load(path, m.files[path])
    except (ValueError, yaml.YAMLError):
        return
    objs = [o for d in docs for o in _objects(d)]
    if not objs:
        return
    for _ in range(rng.choice((1, 1, 1, 2, 4))):
        desc = _edit_value(rng, rng.choice(objs))
        m.what.append(f"{path}: {desc}")
    m.files[path] = _dump(path, docs, rng)


def duplicate_object(rng: random.Random, m: Mutant) -> None:
    """The same object twice (another file), with an odd resourceVersion."""
    candidates = _object_files(m.files)
    if not candidates:
        return
    path = rng.choice(candidates)
    try:
        objs = [o for d in _load(path, m.files[path]) for o in _objects(d)]
    except (ValueError, yaml.YAMLError):
        return
    if not objs:
        return
    obj = copy.deepcopy(rng.choice(objs))
    if isinstance(obj.get("metadata"), dict):
        obj["metadata"]["resourceVersion"] = rng.choice(("9" * 30, "-1", "abc", 12, None, ["1"]))
    new = f"objects/zz-dup-{rng.randrange(1000)}.yaml"
    m.files[new] = _dump(new, [obj], rng)
    m.what.append(f"duplicate an object of {path} into {new}")


def byte_level(rng: random.Random, m: Mutant) -> None:
    """Truncation, byte flips, invalid UTF-8, NUL bytes, chunk deletion or repetition, in any file."""
    path = rng.choice(sorted(m.files))
    data = bytearray(m.files[path])
    op = rng.randrange(6)
    pos = rng.randrange(len(data) + 1)
    if op == 0:
        del data[pos:]
        desc = f"truncate at {pos}"
    elif op == 1:
        for _ in range(rng.randint(1, 8)):
            if data:
                i = rng.randrange(len(data))
                data[i] ^= 1 << rng.randrange(8)
        desc = "flip bits"
    elif op == 2:
        data[pos:pos] = rng.choice((b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\x00", b"\xef\xbb\xbf"))
        desc = f"insert bad bytes at {pos}"
    elif op == 3:
        end = min(len(data), pos + rng.randint(1, 200))
        del data[pos:end]
        desc = f"delete {pos}:{end}"
    elif op == 4:
        end = min(len(data), pos + rng.randint(1, 200))
        data[pos:pos] = data[pos:end] * rng.randint(2, 20)
        desc = f"repeat {pos}:{end}"
    else:
        data[pos:pos] = rng.choice((b"\n---\n", b"\n- ", b": {", b'"', b"\t", b"&a ", b"*a", b"!!python/object:x "))
        desc = f"insert syntax at {pos}"
    m.files[path] = bytes(data)
    m.what.append(f"{path}: {desc}")


def alias_bomb(rng: random.Random, m: Mutant) -> None:
    """A billion-laughs YAML object whose expansion a metadata field references."""
    levels = rng.choice((4, 9, 12))
    width = rng.choice((4, 9))
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    bomb = "\n".join("  " + ln for ln in lines)
    field_ = rng.choice(("labels", "uid", "namespace", "ownerReferences", "annotations"))
    # anchors precede their aliases: the bomb sits in spec, the reference in metadata
    text = (f"apiVersion: v1\nkind: Pod\nspec:\n{bomb}\nmetadata:\n  name: bomb\n  namespace: default\n"
            f"  {field_}: *a{levels - 1}\n")
    m.files[f"objects/zz-bomb-{levels}x{width}.yaml"] = text.encode()
    m.what.append(f"alias bomb {levels} levels x {width} in metadata.{field_}")


_BAD_METRICS = (
    'kueue_pending_workloads{cluster_queue="a"} NaN 1700000000',
    'kueue_pending_workloads{cluster_queue="a"} 1e999 1700000000',
    'kueue_pending_workloads{cluster_queue="a"} 1 1e999',
    'kueue_pending_workloads{cluster_queue="a"} 1 -1e300',
    'kueue_pending_workloads{cluster_queue="a",cluster_queue="b"} 1 1700000000',
    'kueue_admitted_workloads_total{cluster_queue="a"} -3 1700000000',
    'kueue_pending_workloads{cluster_queue="a\\q"} 1 1700000000',
    'kueue_pending_workloads{cluster_queue="' + "x" * 20000 + '"} 1 1700000000',
    "# TYPE kueue_pending_workloads gauge",
    "# TYPE kueue_pending_workloads counter",
    "# TYPE kueue_x nonsense",
    "# HELP",
    "kueue_pending_workloads",
    "kueue_pending_workloads{",
    "{}",
    "kueue_pending_workloads{cluster_queue=\"a\"} 1 1700000000 # {trace_id=\"x\"} 1",
    "# EOF",
    "\u202ekueue 1",
)


def _insert_lines(rng: random.Random, m: Mutant, top: str, default: str, empty: bytes,
                  make: Callable[[], bytes]) -> str:
    """Insert 1-3 made-up lines at random places of a file under `top` (or a new `default` file)."""
    files = [p for p in m.files if p.startswith(top)]
    path = rng.choice(files) if files else default
    lines = m.files.get(path, empty).split(b"\n")
    for _ in range(rng.randint(1, 3)):
        lines.insert(rng.randrange(len(lines) + 1), make())
    m.files[path] = b"\n".join(lines)
    return path


def metrics(rng: random.Random, m: Mutant) -> None:
    """Malformed OpenMetrics: odd values and timestamps, duplicate labels, conflicting types, late # EOF."""

    def make() -> bytes:
        line = rng.choice(_BAD_METRICS)
        if rng.random() < 0.2:
            line = "\n".join([line] * rng.choice((100, 5000)))
        return line.encode("utf-8", "surrogatepass")

    path = _insert_lines(rng, m, "metrics/", "metrics/fuzz.om", b"# EOF\n", make)
    m.what.append(f"{path}: malformed metric lines")


def _odd_log_lines(rng: random.Random) -> list[str]:
    odd: Any = rng.choice(SWAPS)
    if odd == DEEP:
        odd = []
    try:
        encoded = json.dumps(odd)
    except ValueError:
        encoded = '"x"'
    return [
        '{"level":' + encoded + ',"ts":' + encoded + ',"msg":' + encoded + ',"workload":' + encoded + "}",
        '{"level":"info","ts":"2026-01-01T00:00:00Z","msg":"x","workload":{"name":' + encoded
        + ',"namespace":' + encoded + '},"clusterQueue":' + encoded + "}",
        "{" * 5000 + "}" * 5000,
        '{"a":' + "[" * 100_000 + "]" * 100_000 + "}",
        "E1399 25:61:61.999999       1 x.go:1] bad date",
        "2026-01-01T00:00:00Z\tLevel(-99999999999999999999)\tlogger\tcaller.go:1\tmsg\t{\"a\":" + encoded + "}",
        "1e999\tINFO\tmsg",
        "x" * rng.choice((100, 200_000)),
        "\u202e\u0000 weird",
        '{"level":"info","ts":1e400,"msg":"big"}',
        '{"level":"info","ts":-1e300,"msg":"neg"}',
    ]


def logs(rng: random.Random, m: Mutant) -> None:
    """Odd controller log lines, and sometimes a non-UTF-8 byte."""

    def make() -> bytes:
        if rng.random() < 0.1:
            return b"bad byte \xff\xfe here"
        return rng.choice(_odd_log_lines(rng)).encode("utf-8", "surrogatepass")

    path = _insert_lines(rng, m, "logs/", "logs/kueue-controller-manager.log", b"", make)
    m.what.append(f"{path}: odd log lines")


def manifest(rng: random.Random, m: Mutant) -> None:
    """Type swaps in manifest.json fields."""
    try:
        doc = json.loads(m.files.get("manifest.json", b"{}"))
    except ValueError:
        doc = {}
    if not isinstance(doc, dict):
        doc = {}
    key = rng.choice(("format", "capturedAt", "cluster", "kueueVersion", "namespaces", "errors", "collector"))
    value = rng.choice(SWAPS + ([{"what": 1, "error": None}], [{"what": ["x"]}], ["a", {"b": 1}]))
    doc[key] = copy.deepcopy(value)
    text = json.dumps(doc)
    depth = rng.choice((50, 5000))
    text = text.replace(f'"{DEEP}"', "[" * depth + "]" * depth).replace(f'"{HUGE}"', "9" * 5000)
    m.files["manifest.json"] = text.encode("utf-8", "surrogatepass")
    m.what.append(f"manifest.json: {key} = {str(value)[:30]!r}")


Operator = Callable[[random.Random, Mutant], None]
OPERATORS: tuple[tuple[Operator, int], ...] = (
    (object_value, 45), (duplicate_object, 5), (byte_level, 15), (alias_bomb, 3), (metrics, 10), (logs, 10),
    (manifest, 7),
)


def mutate(rng: random.Random, files: Files, first: Operator | None = None) -> Mutant:
    """One to three operators applied to a copy of ``files``; sometimes packed as a .tar.gz.

    ``first`` forces the first operator, so a short campaign can give every mutation kind the same budget.
    """
    m = Mutant(files=dict(files))
    ops, weights = zip(*OPERATORS, strict=True)
    chosen = rng.choices(ops, weights=weights, k=rng.choice((1, 1, 1, 2, 3)))
    if first is not None:
        chosen[0] = first
    for op in chosen:
        m.ops.append(op.__name__)
        try:
            op(rng, m)
        except (ValueError, RecursionError, yaml.YAMLError):  # an earlier operator left text no parser reads
            m.what.append(f"{op.__name__}: skipped (unparsable input)")
    if rng.random() < 0.15:
        m.container = "tar.gz"
    return m
