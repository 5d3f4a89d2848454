"""A .tar.gz written member by member, each member compressed on worker threads while the next one is encoded.

Each member is compressed on its own (cut into 1 MiB blocks, each primed with the 32 KiB before it in the same
member and ended on a byte boundary, as pigz writes); the members' deflate segments, written one after the other
and the last one finished, are one valid deflate stream, and the gzip trailer's CRC-32 runs over the members in
the order they are added. The tar bytes inside are exactly those `tarfile` writes in streaming mode (`w|`): the
same headers, the same padding, the same end of archive.
"""

from __future__ import annotations

import os
import struct
import sys
import tarfile
import zlib
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import BinaryIO

BLOCK = 1024 * 1024
WINDOW = 32 * 1024
_ENCODING = sys.getfilesystemencoding()  # what tarfile.open(mode="w|") writes names with


def member_parts(name: str, data: bytes, mtime: int) -> tuple[bytes, bytes, bytes]:
    """One tar member as `tarfile` streams it, in three parts: the header (PAX, mode 0600), the data, zeros to the next
    block."""
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = mtime
    info.mode = 0o600
    return (info.tobuf(tarfile.DEFAULT_FORMAT, _ENCODING, "surrogateescape"), data,
            tarfile.NUL * (-len(data) % tarfile.BLOCKSIZE))


def _deflate(block: memoryview, window: memoryview, level: int) -> bytes:
    """Raw deflate of one block, primed with the window before it, ended on a byte boundary (not finished)."""
    if len(window):
        c = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS, 8, zlib.Z_DEFAULT_STRATEGY, window)
    else:
        c = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS)
    return c.compress(block) + c.flush(zlib.Z_SYNC_FLUSH)


class TarGzWriter:
    """Writes tar members, in the order they are added, into `fh` as one gzip member; `top` is the archive's top
    folder, `mtime` every member's and the gzip header's time. Compression runs on worker threads (zlib releases
    the interpreter while it compresses); at most a few members' blocks wait at once, so compressing one member
    overlaps encoding the next. Use it as a context manager: leaving it stops the workers (after `close`, which
    finishes the stream, or on an error, which abandons it)."""

    def __init__(self, fh: BinaryIO, top: str, level: int, mtime: int, workers: int | None = None) -> None:
        self._fh = fh
        self._top = top
        self._level = level
        self._mtime = mtime
        self._workers = workers or min(4, os.cpu_count() or 1)
        self._pool = ThreadPoolExecutor(max_workers=self._workers, thread_name_prefix="kueuediag-gzip")
        self._pending: deque[tuple[list[Future[bytes]], int]] = deque()
        self._waiting = 0
        """bytes of the pending members"""
        self._crc = 0
        self._size = 0
        fh.write(b"\x1f\x8b\x08\x00" + struct.pack("<I", mtime & 0xFFFFFFFF) + b"\x00\xff")

    def __enter__(self) -> TarGzWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def add(self, rel: str, data: bytes) -> None:
        """Queue the member `top/rel` holding `data`; write the members whose compression is done, and wait for
        the oldest only when more than two blocks' worth of bytes per worker are waiting (a snapshot's many small
        files would otherwise make the encoding thread wait for every few of them)."""
        head, data, pad = member_parts(f"{self._top}/{rel}", data, self._mtime)
        # A small member is framed in one piece; a large one's header, data and padding are compressed as pieces of
        # their own (deflate segments ended on byte boundaries follow each other in any number), not copied together.
        pieces = (head + data + pad,) if len(data) < BLOCK else (head, data, pad)
        blocks: list[Future[bytes]] = []
        size = 0
        for piece in pieces:
            view = memoryview(piece)
            self._crc = zlib.crc32(view, self._crc)  # releases the interpreter on large buffers, like the compression
            blocks += [self._pool.submit(_deflate, view[i:i + BLOCK], view[max(0, i - WINDOW):i], self._level)
                       for i in range(0, len(piece), BLOCK)]
            size += len(piece)
        self._pending.append((blocks, size))
        self._waiting += size
        while self._pending and (all(f.done() for f in self._pending[0][0])
                                 or self._waiting > 2 * self._workers * BLOCK):
            self._write_oldest()

    def _write_oldest(self) -> None:
        blocks, size = self._pending.popleft()
        self._waiting -= size
        for block in blocks:
            self._fh.write(block.result())
        self._size += size

    def close(self) -> None:
        """The members still waiting, then tarfile's end of archive (two zero blocks, zeros to a whole record)
        as the finished last block, and the gzip trailer."""
        while self._pending:
            self._write_oldest()
        end = tarfile.BLOCKSIZE * 2
        end += -(self._size + end) % tarfile.RECORDSIZE
        tail = tarfile.NUL * end
        c = zlib.compressobj(self._level, zlib.DEFLATED, -zlib.MAX_WBITS)
        self._fh.write(c.compress(tail) + c.flush(zlib.Z_FINISH))
        self._crc = zlib.crc32(tail, self._crc)
        self._size += len(tail)
        self._fh.write(struct.pack("<II", self._crc, self._size & 0xFFFFFFFF))
