"""Bounded HTTP reads: every response body is read against a deadline and a size cap.

A per-request socket timeout does not bound a request: a server that sends one byte every two seconds never
trips a 15 s read timeout, and a 20,000-series Prometheus answer arrives quickly but costs minutes and
gigabytes to decode. Both the Kubernetes transport and the Prometheus client therefore read bodies here, in
chunks, re-arming the socket timeout to what is left before each read and counting bytes, so that one
``--timeout`` holds for the whole run. No HTTP library is imported at module level (the caller passes the
urllib3 response), keeping ``--help`` and snapshot-only runs fast.
"""

from __future__ import annotations

import email.utils
import time
import zlib
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

CHUNK = 64 * 1024
MIN_SOCKET_TIMEOUT = 0.05


class BodyTimeout(TimeoutError):
    """The response body did not arrive completely before the request's deadline."""


class BodyTooLarge(Exception):
    """The response body exceeded the size cap for its kind of request."""

    def __init__(self, limit: int, wire: int | None = None) -> None:
        self.limit = limit
        self.wire = wire
        """bytes read off the wire before the body was refused, when it came compressed (else None)"""
        super().__init__(f"response larger than {human_bytes(limit)} (the bound for one response)")


def human_bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            value = n / size
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} B"


def read_body(response: Any, *, deadline: float, max_bytes: int,
              clock: Callable[[], float] = time.monotonic) -> bytes:
    """Read a urllib3 response body in chunks until EOF, `deadline` (a `clock` value) or `max_bytes`.

    Before each chunk the socket timeout is set to the time left, so a stalled server cannot hold one read
    past the deadline either. The connection is released (closed) on every failure.

    A gzipped body (``Content-Encoding: gzip``, what kube-apiserver sends for large answers when asked) is read as
    it travelled and decompressed here, never more than `max_bytes` of output: urllib3's own decoding keeps reading
    the socket within one call until some output appears (a gzip header, or one byte dripped at a time, would hold
    it past the deadline), and inflates a whole chunk before any size check. A stream cut short gives what it
    decompressed so far, as an uncompressed body cut short gives its first bytes.
    """
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS) if _gzipped(response) else None
    reader = getattr(response, "read1", None) or response.read  # read1: whatever has arrived (read(n) would block
    # until n bytes, one drip at a time)
    read = partial(reader, CHUNK, decode_content=False) if inflate is not None else partial(reader, CHUNK)
    chunks: list[bytes] = []
    size = wire = 0
    try:
        while True:
            left = deadline - clock()
            if left <= 0:
                raise BodyTimeout(f"response body incomplete after the deadline ({wire} bytes read)")
            _arm(response, left)
            try:
                raw = read()
            except TimeoutError:
                raise BodyTimeout(f"response body stalled ({wire} bytes read)") from None
            except Exception as exc:  # urllib3 wraps socket timeouts in its own ReadTimeoutError
                if "timed out" in str(exc).lower():
                    raise BodyTimeout(f"response body stalled ({wire} bytes read)") from None
                raise
            if not raw:
                return b"".join(chunks)
            wire += len(raw)
            out = raw
            if inflate is not None:
                if inflate.eof:  # bytes after the gzip stream: read to the end (the connection is reused), kept out
                    out = b""
                else:
                    try:  # at most one byte past the bound: the output stops there
                        out = inflate.decompress(raw, max_bytes - size + 1)
                    except zlib.error:  # not gzip after all: what was inflated so far, as a body cut short
                        _close(response)
                        return b"".join(chunks)
            size += len(out)
            if size > max_bytes or wire > max_bytes:
                raise BodyTooLarge(max_bytes, wire if inflate is not None else None)
            chunks.append(out)
    except BaseException:
        _close(response)
        raise


def _gzipped(response: Any) -> bool:
    headers = getattr(response, "headers", None)
    encoding = headers.get("content-encoding", "") if headers is not None else ""
    return isinstance(encoding, str) and encoding.strip().lower() in ("gzip", "x-gzip")


def _arm(response: Any, seconds: float) -> None:
    """Best effort: re-arm the socket's timeout to the time left (urllib3 keeps the connection on .connection)."""
    conn = getattr(response, "connection", None) or getattr(response, "_connection", None)
    sock = getattr(conn, "sock", None)
    if sock is not None:
        try:
            sock.settimeout(max(MIN_SOCKET_TIMEOUT, seconds))
        except OSError:
            pass


def _close(response: Any) -> None:
    for name in ("release_conn", "close"):
        fn = getattr(response, name, None)
        if callable(fn):
            try:
                fn()
            except Exception:  # noqa: BLE001 - closing a broken connection may fail in many ways
                pass


def retry_after(headers: Mapping[str, str] | None, now: Callable[[], float] = time.time) -> float | None:
    """Seconds asked for by a ``Retry-After`` header (delta-seconds or HTTP date), or None."""
    if not headers:
        return None
    value = next((v for k, v in headers.items() if k.lower() == "retry-after"), None)
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now())


def backoff_delay(attempt: int, *, base: float, cap: float, asked: float | None, left: float) -> float | None:
    """How long to wait before retry `attempt` (1-based), or None when waiting would cross the deadline.

    Exponential backoff capped at `cap`; a server's ``Retry-After`` is honoured when it fits in the time left
    and otherwise ends the retries at once, instead of sleeping into (or past) the deadline.
    """
    delay: float = min(cap, base * 2.0 ** (attempt - 1))
    if asked is not None:
        delay = max(delay, asked)
    if delay >= left:
        return None
    return delay
