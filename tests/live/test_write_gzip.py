"""The archive writer's gzip stream: members compressed apart (on worker threads, in blocks) concatenate to one
valid gzip member holding exactly the tar bytes `tarfile` streams, read back by `gzip`, by `tarfile` in streaming
mode (as the snapshot reader reads) and by the gzip tool."""

from __future__ import annotations

import gzip
import io
import random
import shutil
import subprocess
import tarfile
import zlib
from pathlib import Path

import pytest

from kueuediag.live import targz
from kueuediag.live.targz import TarGzWriter
from kueuediag.live.write import GZIP_LEVEL

MTIME = 1_700_000_000


def _files() -> dict[str, bytes]:
    rnd = random.Random(7)
    text = b"".join(b'{"kind":"Pod","metadata":{"name":"p-%d"},"spec":{"nodeName":"n-%d"}},' % (i, i % 97)
                    for i in range(20_000))
    noise = bytes(rnd.getrandbits(8) for _ in range(150_000))
    return {"manifest.json": b"{}\n", "objects/a.json": text[:70_000], "objects/b.json": noise,
            "objects/c.json": text[70_000:], "objects/empty.json": b"", "logs/x.log": noise[:10] + b"\xff\x00"}


def _tarfile_bytes(files: dict[str, bytes], top: str = "snap") -> bytes:
    """What `tarfile` writes in streaming mode for these members (the writer's reference)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w|") as tf:
        for rel, data in files.items():
            info = tarfile.TarInfo(f"{top}/{rel}")
            info.size, info.mtime, info.mode = len(data), MTIME, 0o600
            tf.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _targz(files: dict[str, bytes], workers: int) -> bytes:
    out = io.BytesIO()
    with TarGzWriter(out, "snap", GZIP_LEVEL, MTIME, workers) as writer:
        for rel, data in files.items():
            writer.add(rel, data)
        writer.close()
    return out.getvalue()


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("block", [512, 4096, 65_536, 1 << 24])
def test_members_concatenate_to_the_tar_tarfile_writes(workers: int, block: int,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(targz, "BLOCK", block)
    files = _files()
    written = _targz(files, workers)
    assert gzip.decompress(written) == _tarfile_bytes(files)  # checks the CRC and the size in the trailer
    d = zlib.decompressobj(zlib.MAX_WBITS | 16)
    assert d.decompress(written) == _tarfile_bytes(files) and d.eof and d.unused_data == b""  # one member
    assert written[4:8] == MTIME.to_bytes(4, "little")


def test_an_archive_without_members_is_a_valid_empty_tar() -> None:
    written = _targz({}, 2)
    assert gzip.decompress(written) == _tarfile_bytes({})
    with tarfile.open(fileobj=io.BytesIO(written), mode="r|gz") as tf:
        assert list(tf) == []


def test_members_compressed_apart_compress_about_as_well_as_one_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(targz, "BLOCK", 64 * 1024)
    files = {f"objects/f{i}.json": b"".join(_files()[k] for k in ("objects/a.json", "objects/c.json"))[i:]
             for i in range(4)}
    single = zlib.compress(_tarfile_bytes(files), GZIP_LEVEL)
    assert len(_targz(files, 2)) < 1.1 * len(single) + 200


def test_the_archive_reads_back_in_streaming_mode_and_with_gzip(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(targz, "BLOCK", 10_000)
    files = {f"objects/f{i}.json": bytes([65 + i % 26]) * (i * 7919) for i in range(40)}
    written = _targz(files, 2)
    with tarfile.open(fileobj=io.BytesIO(written), mode="r|*") as tf:
        back = {m.name: tf.extractfile(m).read() for m in tf if m.isfile()}  # type: ignore[union-attr]
    assert back == {f"snap/{rel}": data for rel, data in files.items()}
    if shutil.which("gzip"):
        path = tmp_path / "x.tar.gz"
        path.write_bytes(written)
        subprocess.run(["gzip", "-t", str(path)], check=True)
