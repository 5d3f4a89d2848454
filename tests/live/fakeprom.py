"""A misbehaving Prometheus HTTP API for fault tests (a real Prometheus cannot be made to misbehave on cue).

Modes: ``retry-after`` answers every query with 429 and ``Retry-After: 3600``; ``huge`` answers with
`series` series of `samples` points each (the size of a 20,000-series answer); ``drip`` sends a valid answer
one byte every `drip` seconds; ``series`` answers every query with the given `result` (a matrix). Every request
is counted.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakePrometheus:
    def __init__(self, mode: str, series: int = 20_000, samples: int = 120, drip: float = 0.5,
                 result: list[dict[str, Any]] | None = None) -> None:
        self.mode = mode
        self.result = result or []
        self.series = series
        self.samples = samples
        self.drip = drip
        self.requests = 0
        self._body: bytes | None = None
        handler = type("Handler", (_Handler,), {"prom": self})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def body(self) -> bytes:
        if self._body is None:
            if self.mode == "huge":
                result = [{"metric": {"__name__": "kueue_pending_workloads", "cluster_queue": f"cq-{i:05d}",
                                      "status": "active"},
                           "values": [[1_700_000_000 + 60 * j, "1"] for j in range(self.samples)]}
                          for i in range(self.series)]
            else:
                result = self.result
            self._body = json.dumps({"status": "success",
                                     "data": {"resultType": "matrix", "result": result}}).encode()
        return self._body

    def __enter__(self) -> FakePrometheus:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class _Handler(BaseHTTPRequestHandler):
    prom: FakePrometheus
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self.prom.requests += 1
        if self.prom.mode == "retry-after":
            body = b'{"status":"error","errorType":"unavailable","error":"too many requests"}'
            self.send_response(429)
            self.send_header("Retry-After", "3600")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        body = self.prom.body()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            if self.prom.mode == "drip":
                self.close_connection = True
                for i in range(len(body)):
                    self.wfile.write(body[i:i + 1])
                    self.wfile.flush()
                    time.sleep(self.prom.drip)
            else:
                self.wfile.write(body)
        except OSError:  # the client gave up: that is the point
            return

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        return
