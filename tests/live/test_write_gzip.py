"""The archive writer's parallel gzip stream: one valid gzip member whatever the block boundaries, read back
byte for byte by `gzip`, by `tarfile` in streaming mode (as the snapshot reader reads) and by the gzip tool."""

from __future__ import annotations

import gzip
import io
import random
import shutil
import subprocess
import tarfile
import zlib
from pathlib import Path
from typing import Any, cast

import pytest

from kueuediag.live.write import GZIP_LEVEL, ParallelGzip


def _gzip(chunks: list[bytes], workers: int, block: int) -> bytes:
    out = io.BytesIO()
    gz = ParallelGzip(out, GZIP_LEVEL, mtime=1_700_000_000, workers=workers)
    gz.BLOCK = block
    with gz:
        for c in chunks:
            gz.write(c)
    return out.getvalue()


def _data() -> list[bytes]:
    rnd = random.Random(7)
    text = b"".join(b'{"kind":"Pod","metadata":{"name":"p-%d"},"spec":{"nodeName":"n-%d"}},' % (i, i % 97)
                    for i in range(20_000))
    noise = bytes(rnd.getrandbits(8) for _ in range(150_000))
    return [text[:1], text[1:70_000], noise, text[70_000:], b"", noise[:10]]


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("block", [1, 4096, 65_536, 1 << 24])
def test_blocks_concatenate_to_one_gzip_member(workers: int, block: int) -> None:
    if block == 1:  # one-byte blocks: only a short input (each block is a deflate block of its own)
        chunks = [b"abc", b"", b"abcabcabc" * 20]
    else:
        chunks = _data()
    data = b"".join(chunks)
    written = _gzip(chunks, workers, block)
    assert gzip.decompress(written) == data  # checks the CRC and the size in the trailer
    d = zlib.decompressobj(zlib.MAX_WBITS | 16)
    assert d.decompress(written) == data and d.eof and d.unused_data == b""  # one member, nothing after it


def test_empty_stream_is_a_valid_gzip_file() -> None:
    assert gzip.decompress(_gzip([], 2, 1024)) == b""


def test_primed_blocks_compress_about_as_well_as_one_stream() -> None:
    data = b"".join(_data()[:2]) * 8
    single = zlib.compress(data, GZIP_LEVEL)
    parallel = _gzip([data], 2, 64 * 1024)
    assert gzip.decompress(parallel) == data
    assert len(parallel) < 1.1 * len(single) + 200


def test_a_tar_through_the_stream_reads_back_in_streaming_mode(tmp_path: Path) -> None:
    files = {f"snap/objects/f{i}.json": bytes([65 + i % 26]) * (i * 7919) for i in range(40)}
    out = io.BytesIO()
    gz = ParallelGzip(out, GZIP_LEVEL, workers=2)
    gz.BLOCK = 10_000
    with gz, tarfile.open(fileobj=cast(Any, gz), mode="w|") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    with tarfile.open(fileobj=io.BytesIO(out.getvalue()), mode="r|*") as tf:
        back = {m.name: tf.extractfile(m).read() for m in tf if m.isfile()}  # type: ignore[union-attr]
    assert back == files
    if shutil.which("gzip"):
        path = tmp_path / "x.tar.gz"
        path.write_bytes(out.getvalue())
        subprocess.run(["gzip", "-t", str(path)], check=True)


def test_a_failure_mid_way_stops_the_workers_and_writes_no_trailer() -> None:
    out = io.BytesIO()
    with pytest.raises(RuntimeError), ParallelGzip(out, GZIP_LEVEL, workers=2) as gz:
        gz.write(b"x" * 3_000_000)
        raise RuntimeError("encoding failed")
    with pytest.raises((EOFError, OSError)):
        gzip.decompress(out.getvalue())
