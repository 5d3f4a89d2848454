"""Read snapshot format v1 from a directory, a .tar.gz/.tgz (in memory), or a single YAML/JSON file.

See docs/snapshot-format.md. The reader only turns bytes into Python objects and reports *where* input is
broken; indexing and normalisation happen in :mod:`kueuediag.snapshot.model`.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from kueuediag.errors import InputError

FORMAT = "kueuediag-snapshot/v1"
OBJECT_SUFFIXES = (".yaml", ".yml", ".json")

try:  # libyaml is ~10x faster; fall back to the pure-Python loader.
    _YamlLoader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _YamlLoader = yaml.SafeLoader


@dataclass
class RawSnapshot:
    """Everything read from disk, before indexing."""

    source: str
    manifest: dict[str, Any] = field(default_factory=dict)
    objects: list[dict[str, Any]] = field(default_factory=list)
    metrics: dict[str, str] = field(default_factory=dict)
    """path → OpenMetrics text"""
    logs: dict[str, str] = field(default_factory=dict)
    """path → raw log text"""


def read_snapshot(path: str | os.PathLike[str]) -> RawSnapshot:
    """Read a snapshot from `path` (directory, tarball or single object file)."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such file or directory")
    if p.is_dir():
        return _read_tree(str(p), _dir_entries(p))
    name = p.name.lower()
    if name.endswith((".tar.gz", ".tgz", ".tar")):
        return _read_tar(p)
    if name.endswith(OBJECT_SUFFIXES):
        raw = RawSnapshot(source=str(p))
        raw.objects.extend(parse_objects(p.name, _read_bytes(p)))
        return raw
    raise InputError(f"{p}: not a snapshot (expected a directory, .tar.gz/.tgz, or a .yaml/.yml/.json file)")


def _read_bytes(p: Path) -> bytes:
    try:
        return p.read_bytes()
    except OSError as exc:
        raise InputError(f"{p}: cannot read: {exc.strerror or exc}") from None


def _dir_entries(root: Path) -> Iterator[tuple[str, bytes]]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for fn in sorted(filenames):
            full = Path(dirpath) / fn
            rel = full.relative_to(root).as_posix()
            if _interesting(rel):
                yield rel, _read_bytes(full)


def _read_tar(p: Path) -> RawSnapshot:
    try:
        data = p.read_bytes()
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tf:
            members = [m for m in tf.getmembers() if m.isfile()]
            entries: list[tuple[str, bytes]] = []
            for m in members:
                rel = _strip_top(m.name, members)
                if not _interesting(rel):
                    continue
                fh = tf.extractfile(m)
                if fh is None:
                    continue
                entries.append((rel, fh.read()))
    except (tarfile.TarError, EOFError, OSError, ValueError) as exc:
        raise InputError(f"{p}: unreadable or truncated archive ({exc})") from None
    return _read_tree(str(p), entries)


def _strip_top(name: str, members: list[tarfile.TarInfo]) -> str:
    """Archives made with `tar czf x.tgz dir/` have one top folder; strip it when every member shares it."""
    parts = PurePosixPath(name.lstrip("./")).parts
    if len(parts) > 1 and parts[0] not in ("objects", "metrics", "logs"):
        top = parts[0]
        if all(PurePosixPath(m.name.lstrip("./")).parts[:1] == (top,) for m in members):
            return PurePosixPath(*parts[1:]).as_posix()
    return PurePosixPath(*parts).as_posix() if parts else name


def _interesting(rel: str) -> bool:
    parts = PurePosixPath(rel).parts
    if any(part.startswith(".") for part in parts):
        return False
    return bool(parts)


def _read_tree(source: str, entries: Iterable[tuple[str, bytes]]) -> RawSnapshot:
    raw = RawSnapshot(source=source)
    seen_layout = False
    loose: list[tuple[str, bytes]] = []
    for rel, data in entries:
        parts = PurePosixPath(rel).parts
        top = parts[0]
        lower = rel.lower()
        if rel == "manifest.json":
            raw.manifest = _parse_manifest(source, data)
            seen_layout = True
        elif top == "objects" and lower.endswith(OBJECT_SUFFIXES):
            raw.objects.extend(parse_objects(rel, data))
            seen_layout = True
        elif top == "metrics" and lower.endswith((".om", ".txt", ".prom")):
            raw.metrics[rel] = _text(rel, data)
            seen_layout = True
        elif top == "logs" and lower.endswith((".log", ".txt", ".jsonl")):
            raw.logs[rel] = _text(rel, data)
            seen_layout = True
        elif lower.endswith(OBJECT_SUFFIXES) and top not in ("metrics", "logs"):
            loose.append((rel, data))
    if not seen_layout:
        # A plain folder of kubectl output (one file per object, Lists, nested folders): read it all as objects.
        for rel, data in loose:
            raw.objects.extend(parse_objects(rel, data))
    if not raw.objects and not raw.metrics and not raw.logs:
        raise InputError(f"{source}: no Kubernetes objects, metrics or logs found (see docs/snapshot-format.md)")
    return raw


def _text(rel: str, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{rel}: not UTF-8 text") from None


def _parse_manifest(source: str, data: bytes) -> dict[str, Any]:
    try:
        manifest = json.loads(data)
    except ValueError as exc:
        raise InputError(f"{source}/manifest.json: invalid JSON ({exc})") from None
    if not isinstance(manifest, dict):
        raise InputError(f"{source}/manifest.json: expected a JSON object")
    fmt = manifest.get("format")
    if fmt is not None and fmt != FORMAT:
        raise InputError(f"{source}/manifest.json: unsupported format {fmt!r} (this kueuediag reads {FORMAT})")
    errors = manifest.get("errors", [])
    if not isinstance(errors, list) or not all(isinstance(e, dict) for e in errors):
        raise InputError(f"{source}/manifest.json: 'errors' must be a list of {{what, error}} objects")
    return manifest


def parse_objects(rel: str, data: bytes) -> list[dict[str, Any]]:
    """Parse one kubectl output file: a single object, a `kind: List`, or multi-document YAML."""
    text = _text(rel, data)
    docs: list[Any]
    if rel.lower().endswith(".json"):
        try:
            docs = [json.loads(text)] if text.strip() else []
        except ValueError as exc:
            raise InputError(f"{rel}: invalid JSON ({exc})") from None
    else:
        try:
            docs = list(yaml.load_all(text, Loader=_YamlLoader))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}" if mark is not None else ""
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise InputError(f"{rel}: invalid YAML{where} ({problem})") from None
    out: list[dict[str, Any]] = []
    for i, doc in enumerate(docs):
        if doc is None:
            continue
        _flatten(rel, i, doc, out)
    return out


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
        raise InputError(f"{where}: object has no 'kind'")
    if not isinstance(obj.get("apiVersion"), str) or not obj["apiVersion"]:
        raise InputError(f"{where}: {obj['kind']} has no 'apiVersion'")
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        raise InputError(f"{where}: {obj['kind']} has no metadata.name")
