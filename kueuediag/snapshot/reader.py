"""Read snapshot format v1 from a directory, a .tar.gz/.tgz/.tar, or a single YAML/JSON file.

See docs/snapshot-format.md. The reader only turns bytes into Python objects and reports *where* input is
broken; indexing and normalisation happen in :mod:`kueuediag.snapshot.model`.

Everything it reads is bounded (:mod:`kueuediag.snapshot.limits`): bytes in total and per file, files, objects,
log lines and YAML alias expansion. Only regular files are read (a symlink to ``/dev/zero`` or a FIFO is skipped,
with a warning), and an archive is streamed once, in member order, reading only the members that will be used.
"""

from __future__ import annotations

import mmap
import os
import re
import stat
import tarfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from kueuediag import jsonload
from kueuediag.errors import InputError, clip, shown
from kueuediag.records import dataclass
from kueuediag.snapshot.held import Held, InMemory, OpenFile, split_list
from kueuediag.snapshot.limits import DEFAULT_LIMITS, FLAG_NAMES, Limits

if TYPE_CHECKING:
    import yaml

FORMAT = "kueuediag-snapshot/v1"
OBJECT_SUFFIXES = (".yaml", ".yml", ".json")
METRIC_SUFFIXES = (".om", ".txt", ".prom")
LOG_SUFFIXES = (".log", ".txt", ".jsonl")
LAYOUT_TOPS = ("objects", "metrics", "logs")

_ANCHOR = re.compile(r"(?:^|[\s\[{,:-])&[^\s\[\]{},]")
_PARSE_ERRORS = (ValueError, TypeError, OverflowError, RecursionError)
"""What a parser may raise on hostile text: Python's int-to-string limit (ValueError), json's RecursionError on
100,000-deep arrays, a YAML timestamp with month 13 (ValueError); the YAML reader adds its own errors (libyaml's
nesting limit among them), caught where a YAML file is read: a snapshot of JSON files imports no YAML reader."""


@dataclass
class RawSnapshot:
    """Everything read from disk, before indexing."""

    source: str
    manifest: dict[str, Any] = field(default_factory=dict)
    objects: list[dict[str, Any] | Held] = field(default_factory=list)
    """in file order; the items of a JSON List of a bulk kind are Held (decoded on first use)"""
    metrics: dict[str, str] = field(default_factory=dict)
    """path → OpenMetrics text"""
    logs: dict[str, str] = field(default_factory=dict)
    """path → raw log text"""
    origins: dict[int, str] = field(default_factory=dict)
    """id(object) → the file it was read from (valid while `objects` holds the object)"""
    warnings: list[str] = field(default_factory=list)
    """input that was read in a degraded way (bytes replaced, files skipped, logs cut)"""

    def dicts(self) -> list[dict[str, Any]]:
        """Every object decoded (a collected snapshot holds only decoded objects: this is then free)."""
        return [o.obj() if isinstance(o, Held) else o for o in self.objects]


class _Budget:
    """Counts what the reader spends against the limits; exceeding one is an input error naming the flag."""

    def __init__(self, source: str, limits: Limits) -> None:
        self.source = source
        self.limits = limits
        self.bytes = 0
        self.files = 0
        self.log_lines = 0
        self.notes: list[str] = []
        """warnings found while reading bytes (before the RawSnapshot's own list is at hand)"""

    def exceeded(self, what: str, limit_name: str) -> InputError:
        limit = getattr(self.limits, limit_name)
        return InputError(f"{what}, more than the bound of {limit:,} (raise it with {FLAG_NAMES[limit_name]})")

    def file(self) -> None:
        self.files += 1
        if self.files > self.limits.max_files:
            raise self.exceeded(f"{self.source}: more than {self.limits.max_files:,} files", "max_files")

    def spend(self, n: int) -> None:
        self.bytes += n
        if self.bytes > self.limits.max_bytes:
            raise self.exceeded(f"{self.source}: {self.bytes:,} bytes read", "max_bytes")


def read_snapshot(path: str | os.PathLike[str], limits: Limits = DEFAULT_LIMITS,
                  parse_files: ParseFiles | None = None) -> RawSnapshot:
    """Read a snapshot from `path` (directory, tarball or single object file); a layout's object files are
    parsed by `parse_files` (default `parse_in_order`; :mod:`kueuediag.snapshot.split_load` parses a large
    snapshot's in two processes)."""
    parse_files = parse_files or parse_in_order
    p = Path(path)
    budget = _Budget(str(p), limits)
    try:
        st = p.stat()
    except OSError as exc:
        if not p.exists():
            raise InputError(f"{p}: no such file or directory") from None
        raise InputError(f"{p}: cannot read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raw = RawSnapshot(source=str(p))
        return _read_tree(raw, _dir_entries(p, budget, raw), budget, parse_files)
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{p}: not a regular file (a device, FIFO or socket is never read)")
    name = p.name.lower()
    if name.endswith((".tar.gz", ".tgz", ".tar")):
        raw = RawSnapshot(source=str(p))
        return _read_tree(raw, _tar_entries(p, budget, raw), budget, parse_files)
    if name.endswith(OBJECT_SUFFIXES):
        raw = RawSnapshot(source=str(p))
        data = _read_regular(p, p.name, budget, tail=False)
        _add_objects(raw, p.name, parse_objects(p.name, data, limits), budget)
        return raw
    raise InputError(f"{p}: not a snapshot (expected a directory, .tar.gz/.tgz, or a .yaml/.yml/.json file)")


# --- where the bytes come from ------------------------------------------------------------------------------


_WANTED_SUFFIXES = OBJECT_SUFFIXES + METRIC_SUFFIXES + LOG_SUFFIXES


def _wanted(rel: str) -> bool:
    """Could this path be read as part of a snapshot (manifest, object, metrics or log file)?"""
    if not rel or rel.startswith(".") or "/." in rel:
        return False
    return rel == "manifest.json" or rel.lower().endswith(_WANTED_SUFFIXES)


def _is_log(rel: str) -> bool:
    return rel.startswith("logs/") and rel.lower().endswith(LOG_SUFFIXES)


MAP_AT_BYTES = 4 << 20
"""A JSON object file this large is mapped, not read: its Lists' items are held as slices of the mapping
(:mod:`kueuediag.snapshot.held`) and the pages go back to the page cache once the items are indexed."""


@dataclass
class Mapped:
    """A large JSON object file, mapped: split into items, then unmapped; its held items are read back by
    offset from `file`."""

    map: mmap.mmap
    file: OpenFile


FileData = bytes | Mapped
ParseFiles = Callable[[Sequence[tuple[str, FileData]], Limits], Iterable[list[dict[str, Any] | Held]]]
"""Parses object files: each file's `parse_objects`, in file order (a file's error raised at its turn)."""


def parse_in_order(files: Sequence[tuple[str, FileData]], limits: Limits) -> Iterator[list[dict[str, Any] | Held]]:
    return (parse_objects(rel, data, limits) for rel, data in files)


def _read_regular(full: Path, rel: str, budget: _Budget, tail: bool) -> bytes | Mapped:
    """Read one regular file within the per-file bound (a log keeps its tail), never blocking on a FIFO."""
    try:
        fd = os.open(full, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise InputError(f"{rel}: cannot read: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as fh:
        size = os.fstat(fd).st_size
        if not tail and rel.lower().endswith(".json") and MAP_AT_BYTES <= size <= budget.limits.max_file_bytes:
            budget.spend(size)
            try:
                return Mapped(mmap.mmap(fd, size, prot=mmap.PROT_READ), OpenFile(rel, os.dup(fd)))
            except (OSError, ValueError):
                budget.bytes -= size  # not mappable (a special file system): read it
        return _bounded_read(fh, size, rel, budget, tail)


def _bounded_read(fh: IO[bytes], size: int, rel: str, budget: _Budget, tail: bool) -> bytes:
    limit = budget.limits.max_file_bytes
    if size > limit:
        if not tail:
            raise budget.exceeded(f"{rel}: {size:,} bytes", "max_file_bytes")
        fh.seek(size - limit)
        data = fh.read(limit)
        cut = data.find(b"\n")
        data = data[cut + 1:] if cut >= 0 else data
        budget.spend(len(data))
        budget.notes.append(_tail_note(rel, len(data), size))
        return data
    data = fh.read(limit + 1)
    if len(data) > limit:  # the file grew while being read
        raise budget.exceeded(f"{rel}: more than {limit:,} bytes", "max_file_bytes")
    budget.spend(len(data))
    return data


def _dir_entries(root: Path, budget: _Budget, raw: RawSnapshot) -> Iterator[tuple[str, bytes | Mapped]]:
    skipped: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for fn in sorted(filenames):
            full = Path(dirpath) / fn
            rel = full.relative_to(root).as_posix()
            budget.file()
            if not _wanted(rel):
                continue
            try:
                st = full.stat()  # follows a symlink: only a link to a regular file is read
            except OSError:
                skipped.append(rel)
                continue
            if not stat.S_ISREG(st.st_mode):
                skipped.append(rel)
                continue
            yield rel, _read_regular(full, rel, budget, tail=_is_log(rel))
    if skipped:
        raw.warnings.append(f"skipped {len(skipped)} file(s) that are not regular files (devices, FIFOs, sockets, "
                            f"broken links): {', '.join(shown(s, 80) for s in skipped[:3])}")


def _tar_entries(p: Path, budget: _Budget, raw: RawSnapshot) -> Iterator[tuple[str, bytes]]:
    """Stream the archive once, in member order; read only members that may be used.

    Member sizes are known from their headers before their bytes are decompressed, so the byte bound holds for
    members that are skipped over too (a gzip bomb is refused, not inflated).
    """
    read: list[tuple[str, bytes]] = []
    tops: set[str] = set()
    flat = False
    try:
        with open(p, "rb") as fh, tarfile.open(fileobj=fh, mode="r|*") as tf:
            for m in tf:
                budget.file()
                budget.spend(m.size if m.isfile() else 0)
                if not m.isfile():
                    continue
                parts = [x for x in m.name.split("/") if x and x != "."]  # str ops: pathlib costs 1 ms a member
                if not parts:
                    continue
                tops.add(parts[0])
                flat = flat or len(parts) == 1
                rel = "/".join(parts)
                stripped = "/".join(parts[1:]) if len(parts) > 1 else rel
                if not (_wanted(rel) or _wanted(stripped)):
                    continue
                limit = budget.limits.max_file_bytes
                logish = _is_log(rel) or _is_log(stripped)
                if m.size > limit and not logish:
                    raise budget.exceeded(f"{p}: member {clip(rel, 80)} has {m.size:,} bytes", "max_file_bytes")
                member = tf.extractfile(m)
                if member is None:
                    continue
                if m.size > limit:
                    data = _stream_tail(member, limit)
                    budget.notes.append(_tail_note(rel, len(data), m.size))
                else:
                    data = member.read()
                read.append((rel, data))
    except (tarfile.TarError, EOFError, OSError, ValueError, OverflowError) as exc:
        raise InputError(f"{p}: unreadable or truncated archive ({shown(str(exc), 120)})") from None
    # `tar czf snap.tgz snap/` puts everything under one top folder: strip it when every member shares it.
    strip = len(tops) == 1 and not flat and next(iter(tops)) not in LAYOUT_TOPS
    for rel, data in read:
        name = rel.split("/", 1)[1] if strip else rel
        if _wanted(name):
            yield name, data


def _stream_tail(member: IO[bytes], limit: int) -> bytes:
    """The last `limit` bytes of a longer stream, from its first full line, in bounded memory."""
    keep = b""
    while True:
        chunk = member.read(1 << 20)
        if not chunk:
            break
        keep = (keep + chunk)[-limit:]
    cut = keep.find(b"\n")
    return keep[cut + 1:] if cut >= 0 else keep


def _tail_note(rel: str, kept: int, size: int) -> str:
    return f"{rel}: {size:,} bytes, only the last {kept:,} read (raise it with {FLAG_NAMES['max_file_bytes']})"


# --- what the bytes are -------------------------------------------------------------------------------------


def _read_tree(raw: RawSnapshot, entries: Iterable[tuple[str, FileData]], budget: _Budget,
               parse_files: ParseFiles) -> RawSnapshot:
    """Every file read first (a large JSON file is only mapped), then the object files parsed in file order."""
    source = raw.source
    seen_layout = False
    loose: list[tuple[str, FileData]] = []
    layout: list[tuple[str, FileData]] = []
    for rel, data in entries:
        top = rel.split("/", 1)[0]
        lower = rel.lower()
        if rel == "manifest.json":
            raw.manifest = _parse_manifest(source, _plain(data))
            seen_layout = True
        elif top == "objects" and lower.endswith(OBJECT_SUFFIXES):
            layout.append((rel, data))
            seen_layout = True
        elif top == "metrics" and lower.endswith(METRIC_SUFFIXES):
            raw.metrics[rel] = _side_text(raw, rel, _plain(data))
            seen_layout = True
        elif top == "logs" and lower.endswith(LOG_SUFFIXES):
            raw.logs[rel] = _bounded_log(raw, rel, _side_text(raw, rel, _plain(data)), budget)
            seen_layout = True
        elif lower.endswith(OBJECT_SUFFIXES) and top not in ("metrics", "logs"):
            loose.append((rel, data))
    raw.warnings.extend(budget.notes)
    # Without a layout, a plain folder of kubectl output (one file per object, Lists, nested folders): read it all
    # as objects.
    files = layout if seen_layout else loose
    for (rel, _), objs in zip(files, parse_files(files, budget.limits), strict=True):
        _add_objects(raw, rel, objs, budget)
    if not raw.objects and not raw.metrics and not raw.logs:
        raise InputError(f"{source}: no Kubernetes objects, metrics or logs found (see docs/snapshot-format.md)")
    return raw


def _add_objects(raw: RawSnapshot, rel: str, objs: list[dict[str, Any] | Held], budget: _Budget) -> None:
    raw.objects.extend(objs)
    for obj in objs:
        if not isinstance(obj, Held):
            raw.origins[id(obj)] = rel
    if len(raw.objects) > budget.limits.max_objects:
        raise budget.exceeded(f"{raw.source}: more than {budget.limits.max_objects:,} objects", "max_objects")


def _text(rel: str, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{rel}: not UTF-8 text (byte {exc.start})") from None


def _side_text(raw: RawSnapshot, rel: str, data: bytes) -> str:
    """Logs and metrics are evidence, not the object graph: a bad byte is replaced (and reported), not fatal."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", "replace")
        raw.warnings.append(f"{rel}: not valid UTF-8 (first bad byte at offset {exc.start}); "
                            f"{text.count(chr(0xFFFD)):,} character(s) replaced with U+FFFD")
        return text


def _bounded_log(raw: RawSnapshot, rel: str, text: str, budget: _Budget) -> str:
    """Keep the newest lines when the snapshot's logs exceed max_log_lines."""
    n = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    room = budget.limits.max_log_lines - budget.log_lines
    if n <= room:
        budget.log_lines += n
        return text
    keep = max(room, 0)
    budget.log_lines += keep
    raw.warnings.append(f"{rel}: {n:,} log lines, only the last {keep:,} kept (raise it with --max-log-lines)")
    if keep == 0:
        return ""
    body = text[:-1] if text.endswith("\n") else text
    return "\n".join(body.rsplit("\n", keep)[-keep:]) + "\n"


def _parse_manifest(source: str, data: bytes) -> dict[str, Any]:
    try:
        manifest = jsonload.loads(data)
    except _PARSE_ERRORS as exc:
        raise InputError(f"{source}/manifest.json: invalid JSON ({_parse_problem(exc)})") from None
    if not isinstance(manifest, dict):
        raise InputError(f"{source}/manifest.json: expected a JSON object")
    fmt = manifest.get("format")
    if fmt is not None and fmt != FORMAT:
        raise InputError(f"{source}/manifest.json: unsupported format {shown(fmt)} (this kueuediag reads {FORMAT})")
    errors = manifest.get("errors", [])
    if not isinstance(errors, list) or not all(isinstance(e, dict) for e in errors):
        raise InputError(f"{source}/manifest.json: 'errors' must be a list of {{what, error}} objects")
    return manifest


def _parse_problem(exc: BaseException, *, yaml_error: bool = False) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if yaml_error:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return clip(str(problem), 120)
    return clip(str(exc), 120)


def parse_objects(rel: str, data: bytes | Mapped, limits: Limits = DEFAULT_LIMITS,
                  by_offset: bool = False) -> list[dict[str, Any] | Held]:
    """Parse one kubectl output file: a single object, a `kind: List`, or multi-document YAML.

    A JSON List is split into its items and those of a bulk kind are held undecoded (:mod:`.held`): read back
    by offset from a mapped file, else as slices of the bytes (by offset in them too with `by_offset`).
    """
    if rel.lower().endswith(".json"):
        if isinstance(data, Mapped):
            items = split_list(data.map, rel, data.file)
            plain = data.map[:] if items is None else b""
            unmap(data)
            if items is None:
                return _parse_documents(rel, plain, limits)
        else:
            items = split_list(data, rel, InMemory(data) if by_offset else None)
        if items is not None:
            where = f"{rel} (document 1)"
            for j, item in enumerate(items):
                if not isinstance(item, Held):
                    _check_object(f"{where} item {j + 1}", item)
            return items
    return _parse_documents(rel, _plain(data), limits)


def unmap(data: Mapped) -> None:
    """Unmap a file once it is split: its held items are read back by offset (unless a slice of the map still
    refers to it)."""
    try:
        data.map.close()
    except BufferError:
        pass


def _plain(data: bytes | Mapped) -> bytes:
    return data.map[:] if isinstance(data, Mapped) else data


def _parse_documents(rel: str, data: bytes, limits: Limits) -> list[dict[str, Any] | Held]:
    docs: list[Any]
    if rel.lower().endswith(".json"):
        try:
            docs = [jsonload.loads_utf8(data)] if data.strip() else []
        except UnicodeDecodeError:
            _text(rel, data)  # raises: bytes that are not UTF-8 are reported as such, not as a JSON syntax error
            raise
        except _PARSE_ERRORS as exc:
            if not _text(rel, data).strip():  # only Unicode whitespace: nothing to read, as before
                docs = []
            else:
                raise InputError(f"{rel}: invalid JSON ({_parse_problem(exc)})") from None
    else:
        import yaml  # only a YAML file needs the YAML reader

        from kueuediag.yamlload import safe_load_all

        text = _text(rel, data)
        try:
            if "&" in text and _ANCHOR.search(text):
                _check_aliases(rel, text, limits.max_alias_nodes)
            docs = list(safe_load_all(text))
        except InputError:
            raise
        except (*_PARSE_ERRORS, yaml.YAMLError) as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}" if mark is not None else ""
            problem = _parse_problem(exc, yaml_error=isinstance(exc, yaml.YAMLError))
            raise InputError(f"{rel}: invalid YAML{where} ({problem})") from None
    out: list[dict[str, Any]] = []
    for i, doc in enumerate(docs):
        if doc is None:
            continue
        _flatten(rel, i, doc, out)
    return list(out)


def _check_aliases(rel: str, text: str, limit: int) -> None:
    """Refuse a YAML document whose aliases expand to more than `limit` nodes (a "billion laughs" bomb).

    The composed node graph shares aliased nodes, so its expanded size is computed in time linear in the graph.
    """
    import yaml

    from kueuediag.yamlload import LOADER

    for doc in yaml.compose_all(text, Loader=LOADER):
        if doc is None:
            continue
        sizes: dict[int, int] = {}
        distinct = 0
        stack: list[tuple[yaml.Node, bool]] = [(doc, False)]
        while stack:
            node, expanded = stack.pop()
            if id(node) in sizes:
                continue
            children = _children(node, yaml.SequenceNode, yaml.MappingNode)
            if not expanded:
                distinct += 1
                stack.append((node, True))
                stack.extend((c, False) for c in children if id(c) not in sizes)
                continue
            sizes[id(node)] = 1 + sum(sizes.get(id(c), 1) for c in children)
        if sizes.get(id(doc), 0) - distinct > limit:
            raise InputError(f"{rel}: YAML aliases expand to more than {limit:,} extra nodes "
                             f"(raise it with {FLAG_NAMES['max_alias_nodes']}; kubectl never writes aliases)")


def _children(node: yaml.Node, sequence: type[yaml.Node], mapping: type[yaml.Node]) -> list[yaml.Node]:
    if isinstance(node, sequence):
        return list(node.value)
    if isinstance(node, mapping):
        return [n for pair in node.value for n in pair]
    return []


def _flatten(rel: str, index: int, doc: Any, out: list[dict[str, Any]]) -> None:
    where = f"{rel} (document {index + 1})"
    if not isinstance(doc, dict):
        raise InputError(f"{where}: expected a Kubernetes object, got {type(doc).__name__}")
    kind = doc.get("kind")
    if isinstance(kind, str) and (kind == "List" or kind.endswith("List")) and "items" in doc:
        items = doc.get("items") or []
        if not isinstance(items, list):
            raise InputError(f"{where}: 'items' must be a list")
        list_version = doc.get("apiVersion")
        item_kind = kind[:-4] if kind != "List" else None
        for j, item in enumerate(items):
            if not isinstance(item, dict):
                raise InputError(f"{where}: item {j + 1} is not an object")
            # `kubectl get x -o json` on typed lists may omit kind/apiVersion on items.
            if item_kind and "kind" not in item:
                item["kind"] = item_kind
            if list_version and "apiVersion" not in item and item_kind:
                item["apiVersion"] = list_version
            _check_object(f"{where} item {j + 1}", item)
            out.append(item)
        return
    _check_object(where, doc)
    out.append(doc)


def _check_object(where: str, obj: dict[str, Any]) -> None:
    if not isinstance(obj.get("kind"), str) or not obj["kind"]:
        raise InputError(f"{where}: object has no 'kind'", source=where, field="kind")
    kind = clip(obj["kind"], 60)
    if not isinstance(obj.get("apiVersion"), str) or not obj["apiVersion"]:
        raise InputError(f"{where}: {kind} has no 'apiVersion'", source=where, field="apiVersion")
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        raise InputError(f"{where}: {kind} has no metadata.name", source=where, field="metadata.name")
