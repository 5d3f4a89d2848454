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
import io
import json
import os
import re
import shutil
import struct
import tarfile
import tempfile
import time
import zlib
from collections import defaultdict, deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import date, datetime
from pathlib import Path
from typing import Any, BinaryIO, cast

import orjson

from kueuediag.errors import InputError
from kueuediag.snapshot.reader import FORMAT, RawSnapshot

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


GZIP_LEVEL = 6
"""gzip's own default: half the CPU of tarfile's level 9 on a large snapshot, for an archive about 3 % larger"""


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
        try:
            return orjson.dumps(doc, default=_json_value, option=option) + b"\n"
        except (TypeError, orjson.JSONEncodeError):
            continue
    return (json.dumps(doc, ensure_ascii=False, separators=(",", ":"), default=_json_value) + "\n").encode()


def _safe(part: str) -> str:
    cleaned = _SAFE.sub("_", part).strip("._") or "_"
    return cleaned[:120]


def snapshot_files(raw: RawSnapshot) -> dict[str, bytes]:
    """relative path → content for every file of the snapshot."""
    return dict(iter_snapshot_files(raw))


def iter_snapshot_files(raw: RawSnapshot) -> Iterator[tuple[str, bytes]]:
    """(relative path, content) of every file of the snapshot, in the order they are written; each file is
    encoded when it is asked for, so writing (and compressing) one overlaps encoding the next."""
    manifest = dict(raw.manifest)
    manifest.setdefault("format", FORMAT)
    manifest.setdefault("errors", [])
    yield "manifest.json", (json.dumps(manifest, indent=2, sort_keys=False) + "\n").encode()
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    paths: dict[tuple[Any, Any], str] = {}
    for obj in raw.dicts():
        ns = (obj.get("metadata") or {}).get("namespace")
        kind = obj.get("kind")
        where = paths.get((ns, kind))
        if where is None:
            name = _safe(str(kind or "Unknown").lower())
            where = paths[(ns, kind)] = f"objects/namespaces/{_safe(ns)}/{name}.json" if ns else \
                f"objects/cluster/{name}.json"
        groups[where].append(obj)
    for where, objs in sorted(groups.items()):
        yield where, _list_json({"apiVersion": "v1", "kind": "List", "items": objs})
    for rel, text in sorted(raw.metrics.items()):
        yield _under("metrics", rel, (".om", ".txt", ".prom"), ".om"), text.encode()
    for rel, text in sorted(raw.logs.items()):
        yield _under("logs", rel, (".log", ".txt", ".jsonl"), ".log"), text.encode()


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
    name = p.name.lower()
    try:
        if name.endswith((".tar.gz", ".tgz")):
            p.parent.mkdir(parents=True, exist_ok=True)
            _write_tar(p, files)
        else:
            _write_dir(p, files)
    except OSError as exc:
        raise InputError(f"{p}: cannot write snapshot: {exc.strerror or exc}") from None
    return p


def _write_dir(p: Path, files: Iterable[tuple[str, bytes]]) -> None:
    if p.exists() and not p.is_dir():
        raise InputError(f"{p}: exists and is not a directory (use a new directory or FILE.tar.gz)")
    if p.exists() and any(p.iterdir()):
        raise InputError(f"{p}: directory is not empty (refusing to mix snapshots)")
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=p.parent, prefix=f".{p.name}.", suffix=".partial"))  # mode 0700
    try:
        for rel, data in files:
            target = tmp / rel
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
        try:
            os.rename(tmp, p)  # replaces an empty directory; fails if another writer got there first
        except OSError:
            if p.exists() and any(p.iterdir()):
                raise InputError(f"{p}: directory is not empty (another snapshot was written there)") from None
            raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _write_tar(p: Path, files: Iterable[tuple[str, bytes]]) -> None:
    top = p.name[:-7] if p.name.lower().endswith(".tar.gz") else p.name[:-4]
    top = _safe(top) or "snapshot"
    if top in ("objects", "metrics", "logs"):  # the reader would take these for the snapshot's own folders
        top = f"snapshot-{top}"
    if p.is_dir():
        raise InputError(f"{p}: is a directory (an archive name must be a file)")
    now = int(time.time())
    fd, tmp_name = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".partial")  # unique, mode 0600
    try:
        with os.fdopen(fd, "wb") as fh:
            gz = ParallelGzip(fh, GZIP_LEVEL, mtime=now)
            # "w|" (a stream) only ever calls write(); the stubs ask for a seekable file object
            with gz, tarfile.open(fileobj=cast(Any, gz), mode="w|") as tf:
                for rel, data in files:
                    info = tarfile.TarInfo(f"{top}/{rel}")
                    info.size = len(data)
                    info.mtime = now
                    info.mode = 0o600
                    tf.addfile(info, io.BytesIO(data))
        os.replace(tmp_name, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise


class ParallelGzip:
    """A write-only gzip stream (one member, as `gzip` writes it) whose compression runs on worker threads.

    Compressing was a third of `snapshot`'s time after the collection, on one core. zlib releases the
    interpreter while it compresses, so the stream is cut into blocks compressed side by side, each primed with
    the 32 KiB before it (the window deflate would have seen) and ended on a byte boundary (a sync flush), the
    last one finished: their concatenation is one valid deflate stream, as pigz writes it. Meanwhile the
    caller's thread encodes the next file. Blocks are written in order; the CRC and size are the whole data's.
    """

    BLOCK = 1024 * 1024
    WINDOW = 32 * 1024

    def __init__(self, fh: BinaryIO, level: int, *, mtime: int = 0, workers: int | None = None) -> None:
        self._fh = fh
        self._level = level
        self._workers = workers or min(4, os.cpu_count() or 1)
        self._pool = ThreadPoolExecutor(max_workers=self._workers)
        self._pending: deque[Future[bytes]] = deque()
        self._buf = bytearray()
        self._window = b""
        self._crc = 0
        self._size = 0
        self._closed = False
        fh.write(b"\x1f\x8b\x08\x00" + struct.pack("<I", mtime & 0xFFFFFFFF) + b"\x00\xff")

    def write(self, data: bytes | bytearray | memoryview) -> int:
        self._buf += data
        while len(self._buf) >= self.BLOCK:
            block = bytes(self._buf[:self.BLOCK])
            del self._buf[:self.BLOCK]
            self._submit(block, last=False)
        return len(data)

    def _submit(self, block: bytes, *, last: bool) -> None:
        self._crc = zlib.crc32(block, self._crc)
        self._size += len(block)
        self._pending.append(self._pool.submit(_deflate, block, self._window, self._level, last))
        self._window = block[-self.WINDOW:]
        while len(self._pending) > 2 * self._workers or (last and self._pending):
            self._fh.write(self._pending.popleft().result())

    def close(self) -> None:
        """Compress what is left, finish the stream and write the trailer (the file object stays open)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._submit(bytes(self._buf), last=True)
            self._fh.write(struct.pack("<II", self._crc, self._size & 0xFFFFFFFF))
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> ParallelGzip:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self.close()
        else:  # failed mid-way: the partial file is deleted, only stop the workers
            self._closed = True
            self._pool.shutdown(wait=True, cancel_futures=True)


def _deflate(block: bytes, window: bytes, level: int, last: bool) -> bytes:
    """Raw deflate of one block, primed with the window before it; ends byte-aligned, or finished if `last`."""
    if window:
        c = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS, 8, zlib.Z_DEFAULT_STRATEGY, window)
    else:
        c = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS)
    return c.compress(block) + c.flush(zlib.Z_FINISH if last else zlib.Z_SYNC_FLUSH)
