"""Write a RawSnapshot in snapshot format v1 — a directory or a .tar.gz — exactly as reader.py reads it.

Layout::

    manifest.json                      format, capturedAt, cluster, kueueVersion, errors, namespaces, ...
    objects/cluster/<kind>.json        cluster-scoped objects, one `kind: List` per kind
    objects/namespaces/<ns>/<kind>.json
    metrics/<name>.om                  OpenMetrics text (ends with `# EOF`)
    logs/<ns>/<pod>/<container>.log    raw controller logs

Objects are written as JSON: on a large cluster, dumping and loading YAML takes about 7× as long (the reader
still accepts YAML, so `kubectl get -o yaml` folders and older snapshots keep working).
Files are written with mode 0600 (directories 0700): a snapshot describes a cluster. Writes are atomic and
safe in parallel: an archive is written to a temporary file with a unique name next to the target and renamed
over it; a directory is filled under a unique temporary name and renamed into place, so a reader never sees a
half-written snapshot and two writers never share a temporary file.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from datetime import date, datetime
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from kueuediag.errors import InputError
from kueuediag.live.targz import TarGzWriter
from kueuediag.snapshot.reader import FORMAT, RawSnapshot

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


GZIP_LEVEL = 3
"""zlib's fastest strategy at its best ratio: on the generated cluster's archive (60 MB of tar) 0.14 s of CPU
against 0.32 s at gzip's default 6, for an archive 28 % larger (level 1: as fast, 33 % larger); the compression
is what `snapshot -A` waits for once the last answer is in"""


def _json_value(value: Any) -> Any:
    """YAML-read objects carry timestamps as datetimes: write them back as Kubernetes writes them (RFC 3339)."""
    if isinstance(value, datetime):
        text = value.isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def _list_json(doc: dict[str, Any]) -> bytes:
    """Compact UTF-8 JSON of one List, with orjson (several times faster than :mod:`json` on a large cluster's
    Workloads and Jobs); what orjson refuses (integers beyond 64 bits, lone surrogates) is written by :mod:`json`,
    to the same text. Keys that are not strings (YAML-read objects) take orjson's slower path for them."""
    for option in (orjson.OPT_UTC_Z, orjson.OPT_NON_STR_KEYS | orjson.OPT_UTC_Z):
        try:  # the newline written by orjson: `+ b"\n"` would copy the whole file once more
            return orjson.dumps(doc, default=_json_value, option=option | orjson.OPT_APPEND_NEWLINE)
        except (TypeError, orjson.JSONEncodeError):
            continue
    return (json.dumps(doc, ensure_ascii=False, separators=(",", ":"), default=_json_value) + "\n").encode()


def _safe(part: str) -> str:
    cleaned = _SAFE.sub("_", part).strip("._") or "_"
    return cleaned[:120]


def snapshot_files(raw: RawSnapshot) -> dict[str, bytes]:
    """relative path → content for every file of the snapshot."""
    return {f.rel: f.encode() for f in iter_snapshot_files(raw)}


def object_files(objs: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """relative path → the objects of that List file (one per namespace and kind), in the order given."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    paths: dict[tuple[Any, Any], str] = {}
    for obj in objs:
        ns = (obj.get("metadata") or {}).get("namespace")
        kind = obj.get("kind")
        where = paths.get((ns, kind))
        if where is None:
            name = _safe(str(kind or "Unknown").lower())
            where = paths[(ns, kind)] = f"objects/namespaces/{_safe(ns)}/{name}.json" if ns else \
                f"objects/cluster/{name}.json"
        groups[where].append(obj)
    return groups


def list_file(objs: list[dict[str, Any]]) -> bytes:
    """The content of one List file."""
    return _list_json({"apiVersion": "v1", "kind": "List", "items": objs})


class SnapshotFile(NamedTuple):
    rel: str
    """the path inside the snapshot"""
    encode: Callable[[], bytes]
    """its content (encoded when called: writing one file overlaps compressing the one before)"""


def iter_snapshot_files(raw: RawSnapshot) -> Iterator[SnapshotFile]:
    """Every file of the snapshot, in the order they are written."""
    manifest = dict(raw.manifest)
    manifest.setdefault("format", FORMAT)
    manifest.setdefault("errors", [])
    yield SnapshotFile("manifest.json", lambda: (json.dumps(manifest, indent=2, sort_keys=False) + "\n").encode())
    for where, objs in sorted(object_files(raw.dicts()).items()):
        yield SnapshotFile(where, partial(list_file, objs))
    for rel, text in sorted(raw.metrics.items()):
        yield SnapshotFile(_under("metrics", rel, (".om", ".txt", ".prom"), ".om"), text.encode)
    for rel, text in sorted(raw.logs.items()):
        yield SnapshotFile(_under("logs", rel, (".log", ".txt", ".jsonl"), ".log"), text.encode)


def _under(top: str, rel: str, suffixes: tuple[str, ...], default: str) -> str:
    parts = [p for p in rel.replace("\\", "/").split("/") if p and p not in (".", "..")]
    if parts and parts[0] == top:
        parts = parts[1:]
    parts = [_safe(p) for p in parts] or ["data"]
    if not parts[-1].lower().endswith(suffixes):
        parts[-1] += default
    return "/".join([top, *parts])


def write_snapshot(raw: RawSnapshot, path: str | os.PathLike[str]) -> Path:
    """Write to `path`: a .tar.gz/.tgz archive when the name says so, else a directory (created)."""
    p = Path(path)
    files = iter_snapshot_files(raw)
    try:
        if is_archive(p):
            p.parent.mkdir(parents=True, exist_ok=True)
            _write_tar(p, files)
        else:
            _write_dir(p, files)
    except OSError as exc:
        raise InputError(f"{p}: cannot write snapshot: {exc.strerror or exc}") from None
    return p


def is_archive(path: Path) -> bool:
    return path.name.lower().endswith((".tar.gz", ".tgz"))


def _write_dir(p: Path, files: Iterable[SnapshotFile]) -> None:
    if p.exists() and not p.is_dir():
        raise InputError(f"{p}: exists and is not a directory (use a new directory or FILE.tar.gz)")
    if p.exists() and any(p.iterdir()):
        raise InputError(f"{p}: directory is not empty (refusing to mix snapshots)")
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=p.parent, prefix=f".{p.name}.", suffix=".partial"))  # mode 0700
    try:
        for f in files:
            target = tmp / f.rel
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(f.encode())
        try:
            os.rename(tmp, p)  # replaces an empty directory; fails if another writer got there first
        except OSError:
            if p.exists() and any(p.iterdir()):
                raise InputError(f"{p}: directory is not empty (another snapshot was written there)") from None
            raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _archive_top(p: Path) -> str:
    """The archive's top folder: its file name without the suffix."""
    top = p.name[:-7] if p.name.lower().endswith(".tar.gz") else p.name[:-4]
    top = _safe(top) or "snapshot"
    if top in ("objects", "metrics", "logs"):  # the reader would take these for the snapshot's own folders
        top = f"snapshot-{top}"
    return top


def _write_tar(p: Path, files: Iterable[SnapshotFile]) -> None:
    if p.is_dir():
        raise InputError(f"{p}: is a directory (an archive name must be a file)")
    fd, tmp_name = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".partial")  # unique, mode 0600
    try:
        with os.fdopen(fd, "wb") as fh, TarGzWriter(fh, _archive_top(p), GZIP_LEVEL, int(time.time())) as out:
            for f in files:  # each file compressed on the worker threads while the next one is encoded
                out.add(f.rel, f.encode())
            out.close()
        os.replace(tmp_name, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
