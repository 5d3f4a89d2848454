"""A .tar.gz written member by member, each member compressed on worker threads as soon as its bytes are known.

The writer encodes the next file while the worker threads compress the ones before; a member may also be
compressed before its turn and added later. Each member is compressed on its own (cut into 1 MiB blocks, each
primed with the 32 KiB before it in the same member and ended on a byte boundary, as pigz writes); the members' deflate
segments, written one after the other and the last one finished, are one valid deflate stream, and the gzip
trailer's CRC is combined from the members' own. The tar bytes inside are exactly those `tarfile` writes in
streaming mode (`w|`): the same headers, the same padding, the same end of archive.
"""

from __future__ import annotations

import os
import struct
import sys
import tarfile
import zlib
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import BinaryIO

BLOCK = 1024 * 1024
WINDOW = 32 * 1024
_ENCODING = sys.getfilesystemencoding()  # what tarfile.open(mode="w|") writes names with


def member_bytes(name: str, data: bytes, mtime: int) -> bytes:
    """One tar member as `tarfile` streams it: the header (PAX, mode 0600), the data, zeros to the next block."""
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = mtime
    info.mode = 0o600
    pad = -len(data) % tarfile.BLOCKSIZE
    return info.tobuf(tarfile.DEFAULT_FORMAT, _ENCODING, "surrogateescape") + data + tarfile.NUL * pad


class Compressed:
    """One member's deflate segment: its blocks (compressing on the pool), its CRC-32 and its length."""

    def __init__(self, pool: ThreadPoolExecutor, data: bytes, level: int) -> None:
        view = memoryview(data)
        self.size = len(data)
        self.crc = zlib.crc32(view)  # releases the interpreter on large buffers, like the compression
        self.blocks: list[Future[bytes]] = [
            pool.submit(_deflate, view[i:i + BLOCK], view[max(0, i - WINDOW):i], level)
            for i in range(0, len(data), BLOCK)
        ]

    def done(self) -> bool:
        return all(f.done() for f in self.blocks)


def _deflate(block: memoryview, window: memoryview, level: int) -> bytes:
    """Raw deflate of one block, primed with the window before it, ended on a byte boundary (not finished)."""
    if len(window):
        c = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS, 8, zlib.Z_DEFAULT_STRATEGY, window)
    else:
        c = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS)
    return c.compress(block) + c.flush(zlib.Z_SYNC_FLUSH)


class MemberCompressor:
    """Compresses tar members on worker threads (zlib releases the interpreter while it compresses); safe to call
    from several threads. `top` is the archive's top folder, `mtime` every member's and the gzip header's time."""

    def __init__(self, top: str, level: int, mtime: int, workers: int | None = None) -> None:
        self.top = top
        self.level = level
        self.mtime = mtime
        self.workers = workers or min(4, os.cpu_count() or 1)
        self.pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="kueuediag-gzip")

    def compress(self, rel: str, data: bytes) -> Compressed:
        return Compressed(self.pool, member_bytes(f"{self.top}/{rel}", data, self.mtime), self.level)

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


class TarGzWriter:
    """Writes members (compressed beforehand or just now) in the order they are added, as one gzip member.

    At most a few members' blocks wait at once, so compressing the next member overlaps encoding it; a member
    compressed long ago is written as it is.
    """

    def __init__(self, fh: BinaryIO, compressor: MemberCompressor) -> None:
        self._fh = fh
        self._compressor = compressor
        self._pending: deque[Compressed] = deque()
        self._waiting = 0
        """bytes of the pending members"""
        self._crc = 0
        self._size = 0
        fh.write(b"\x1f\x8b\x08\x00" + struct.pack("<I", compressor.mtime & 0xFFFFFFFF) + b"\x00\xff")

    def add(self, member: Compressed) -> None:
        """Queue `member`; write the members whose compression is done, and wait for the oldest only when more
        than two blocks' worth of bytes per worker are waiting (a snapshot's many small files would otherwise
        make the encoding thread wait for every few of them)."""
        self._pending.append(member)
        self._waiting += member.size
        while self._pending and (self._pending[0].done() or self._waiting > 2 * self._compressor.workers * BLOCK):
            self._write(self._pending.popleft())

    def _write(self, member: Compressed) -> None:
        self._waiting -= member.size
        for block in member.blocks:
            self._fh.write(block.result())
        self._crc = crc32_combine(self._crc, member.crc, member.size)
        self._size += member.size

    def close(self) -> None:
        """The members still waiting, then tarfile's end of archive (two zero blocks, zeros to a whole record)
        as the finished last block, and the gzip trailer."""
        while self._pending:
            self._write(self._pending.popleft())
        end = tarfile.BLOCKSIZE * 2
        end += -(self._size + end) % tarfile.RECORDSIZE
        tail = tarfile.NUL * end
        c = zlib.compressobj(self._compressor.level, zlib.DEFLATED, -zlib.MAX_WBITS)
        self._fh.write(c.compress(tail) + c.flush(zlib.Z_FINISH))
        self._crc = crc32_combine(self._crc, zlib.crc32(tail), len(tail))
        self._size += len(tail)
        self._fh.write(struct.pack("<II", self._crc, self._size & 0xFFFFFFFF))


# --- CRC-32 of a concatenation from its parts' CRCs (zlib's crc32_combine, which Python's zlib does not expose)
_POLY = 0xEDB88320  # CRC-32's polynomial, bit-reversed as zlib computes it


def _multmodp(a: int, b: int) -> int:
    """a × b modulo the CRC polynomial, in the reflected bit order of CRC-32 values (x^0 is the top bit)."""
    m = 1 << 31
    p = 0
    while True:
        if a & m:
            p ^= b
            if not a & (m - 1):
                break
        m >>= 1
        b = (b >> 1) ^ _POLY if b & 1 else b >> 1
    return p


def _powers() -> Iterator[int]:
    p = 1 << 30  # x^1
    while True:
        yield p
        p = _multmodp(p, p)


_X2N = [p for p, _ in zip(_powers(), range(32), strict=False)]
"""x^(2^k) modulo the polynomial, k = 0..31"""


def crc32_combine(crc1: int, crc2: int, len2: int) -> int:
    """CRC-32 of A + B from crc1 = crc32(A), crc2 = crc32(B) and len(B): crc1 shifted over len2 zero bytes
    (multiplied by x^(8·len2)), plus crc2."""
    if len2 <= 0:
        return crc1
    p = 1 << 31  # x^0
    n, k = len2, 3  # x^(8·len2) = product of x^(2^k) over the set bits of len2, shifted by 3
    while n:
        if n & 1:
            p = _multmodp(_X2N[k & 31], p)
        n >>= 1
        k += 1
    return _multmodp(p, crc1) ^ crc2
