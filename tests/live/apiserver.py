"""A local stand-in for the Kubernetes API server, serving a fixture snapshot with the API's conventions.

* discovery: ``/api``, ``/api/v1``, ``/apis``, ``/apis/{group}``, ``/apis/{group}/{version}``;
* list (cluster-wide and per namespace) and get for core, batch, apps, scheduling.k8s.io, events.k8s.io,
  kueue.x-k8s.io (the served versions are configurable); LIST items carry no kind/apiVersion, as on a
  real server; ``limit``/``continue`` pagination (opaque tokens), ``labelSelector`` (=, ==, !=, in, notin,
  exists, !exists) and ``fieldSelector`` (=, ==, != on dotted paths such as ``spec.nodeName``);
* the visibility API (stored PendingWorkloadsSummary objects, or computed from pending Workloads);
* pod logs ``/api/v1/namespaces/{ns}/pods/{pod}/log?container=&sinceSeconds=`` from the fixture's logs/;
* bearer-token auth (401 otherwise) and injectable faults (403/404/410/429/500/503, with Retry-After, for the
  first N matching requests), plus faults in how the real answer is delivered: a slow drip (one byte every
  `drip` seconds) and a truncated body (the first `truncate` bytes, framed as a complete response);
* every request is recorded (method, path, query, status) so tests can prove GET-only and count requests.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import socket
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

TOKEN = "kueuediag-test-token"

# (group, version, kind, plural, namespaced)
RESOURCES: list[tuple[str, str, str, str, bool]] = [
    ("", "v1", "Namespace", "namespaces", False),
    ("", "v1", "Node", "nodes", False),
    ("", "v1", "Pod", "pods", True),
    ("", "v1", "Event", "events", True),
    ("", "v1", "ConfigMap", "configmaps", True),
    ("", "v1", "Secret", "secrets", True),
    ("batch", "v1", "Job", "jobs", True),
    ("apps", "v1", "Deployment", "deployments", True),
    ("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False),
    ("events.k8s.io", "v1", "Event", "events", True),
    ("jobset.x-k8s.io", "v1alpha2", "JobSet", "jobsets", True),
]
KUEUE_KINDS: list[tuple[str, str, bool]] = [
    ("ClusterQueue", "clusterqueues", False), ("LocalQueue", "localqueues", True),
    ("Workload", "workloads", True), ("ResourceFlavor", "resourceflavors", False),
    ("Cohort", "cohorts", False), ("Topology", "topologies", False),
    ("WorkloadPriorityClass", "workloadpriorityclasses", False), ("AdmissionCheck", "admissionchecks", False),
    ("ProvisioningRequestConfig", "provisioningrequestconfigs", False),
    ("MultiKueueConfig", "multikueueconfigs", False), ("MultiKueueCluster", "multikueueclusters", False),
]


@dataclass
class Fault:
    """Answer `status` to the first `times` GETs whose path (and optional query substring) match.

    With `drip` or `truncate` set, the real answer is served instead (status 200 and the true body), delivered
    one byte every `drip` seconds, or cut to its first `truncate` bytes.
    """

    path: str
    status: int = 200
    times: int = 1_000_000
    query: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    hits: int = 0
    drip: float = 0.0
    truncate: int | None = None

    @property
    def delivery(self) -> bool:
        return self.drip > 0 or self.truncate is not None

    def matches(self, path: str, query: str) -> bool:
        return bool(re.search(self.path, path)) and (self.query is None or self.query in query) and \
            self.hits < self.times


GZIP_THRESHOLD = 128 * 1024
"""kube-apiserver compresses only responses this large (smaller ones cost more CPU than they save), at gzip level 1"""


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    status: int
    gzip: bool = False
    """the answer went gzipped (the request accepted it and the body reached the threshold)"""


class FakeCluster:
    def __init__(self, objects: Iterable[dict[str, Any]], logs: dict[str, str] | None = None,
                 kueue_versions: tuple[str, ...] = ("v1beta2", "v1beta1"), kueue_installed: bool = True,
                 visibility: bool = True, compression: bool = True) -> None:
        self.objects = [json.loads(json.dumps(o)) for o in objects]
        self.compression = compression
        """answer as kube-apiserver does with APIResponseCompression (on by default since 1.16): an API object or
        list of at least 128 KiB is gzipped at level 1 when the request accepts gzip; logs never are"""
        self.logs = logs or {}
        self.kueue_versions = kueue_versions
        self.kueue_installed = kueue_installed
        self.visibility = visibility
        self.faults: list[Fault] = []
        self.requests: list[Recorded] = []
        self.lock = threading.Lock()
        self.resource_version = 900000
        self.listed: dict[tuple[str, str, str | None, str, str], list[dict[str, Any]]] = {}
        """the items of each LIST's first page request, read again by its continue pages"""
        self.resources = list(RESOURCES)
        if kueue_installed:
            for v in kueue_versions:
                for kind, plural, namespaced in KUEUE_KINDS:
                    self.resources.append(("kueue.x-k8s.io", v, kind, plural, namespaced))

    # --- routing ----------------------------------------------------------------------------------------
    def handle(self, method: str, raw_path: str,
               headers: dict[str, str]) -> tuple[int, dict[str, str], bytes, Fault | None]:
        parts = urlsplit(raw_path)
        path, query_text = parts.path, parts.query
        query = dict(parse_qsl(query_text, keep_blank_values=True))
        delivery = None
        with self.lock:
            for fault in self.faults:
                if fault.delivery and fault.matches(path, query_text):
                    fault.hits += 1
                    delivery = fault
                    break
        status, hdrs, body = self._route(method, path, query, query_text, headers, delivery is not None)
        compressed = (self.compression and len(body) >= GZIP_THRESHOLD and
                      hdrs.get("Content-Type") == "application/json" and "gzip" in headers.get("accept-encoding", ""))
        if compressed:
            body = gzip.compress(body, compresslevel=1, mtime=0)
            hdrs = {**hdrs, "Content-Encoding": "gzip"}
        with self.lock:
            self.requests.append(Recorded(method, path, query, status, compressed))
        return status, hdrs, body, delivery

    def _route(self, method: str, path: str, query: dict[str, str], query_text: str,
               headers: dict[str, str], delivered: bool = False) -> tuple[int, dict[str, str], bytes]:
        if headers.get("authorization") != f"Bearer {TOKEN}":
            return _status(401, "Unauthorized")
        if method != "GET":
            return _status(405, f"method {method} not allowed by this test server")
        with self.lock:
            for fault in self.faults if not delivered else ():
                if not fault.delivery and fault.matches(path, query_text):
                    fault.hits += 1
                    s, h, b = _status(fault.status, f"injected {fault.status}")
                    return s, {**h, **fault.headers}, b
        if path == "/api":
            return _json({"kind": "APIVersions", "versions": ["v1"]})
        if path == "/apis":
            return _json({"kind": "APIGroupList", "apiVersion": "v1",
                          "groups": [self._group_doc(g) for g in self._groups()]})
        segs = [unquote(s) for s in path.strip("/").split("/")]
        if segs[0] == "api":
            group, rest = "", segs[1:]
        elif segs[0] == "apis" and len(segs) >= 2:
            group, rest = segs[1], segs[2:]
        else:
            return _status(404, "not found")
        if group == "visibility.kueue.x-k8s.io":
            return self._visibility(rest, query)
        if group and not rest:
            if group not in self._groups():
                return _status(404, f"the server could not find the requested resource ({group})")
            return _json(self._group_doc(group))
        if not rest:
            return _status(404, "not found")
        version, rest = rest[0], rest[1:]
        if not any(r[0] == group and r[1] == version for r in self.resources):
            return _status(404, "the server could not find the requested resource")
        if not rest:
            return _json({"kind": "APIResourceList", "apiVersion": "v1",
                          "groupVersion": f"{group}/{version}" if group else version,
                          "resources": [{"name": p, "singularName": k.lower(), "namespaced": n, "kind": k,
                                         "verbs": ["get", "list", "watch"]}
                                        for g, v, k, p, n in self.resources if g == group and v == version]})
        ns = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            ns, rest = rest[1], rest[2:]
        plural = rest[0]
        res = next((r for r in self.resources if r[0] == group and r[1] == version and r[3] == plural), None)
        if res is None:
            return _status(404, f"the server could not find the requested resource ({plural})")
        kind = res[2]
        if len(rest) == 1:
            return self._list(group, version, kind, ns, query)
        name = rest[1]
        if len(rest) == 3 and rest[2] == "log" and kind == "Pod":
            return self._log(ns or "", name, query)
        if len(rest) != 2:
            return _status(404, "not found")
        for obj in self._of_kind(kind, group):
            m = obj["metadata"]
            if m["name"] == name and m.get("namespace") == ns:
                return _json(self._as_version(obj, group, version))
        return _status(404, f'{plural} "{name}" not found')

    def _groups(self) -> list[str]:
        return sorted({r[0] for r in self.resources if r[0]} | ({"visibility.kueue.x-k8s.io"}
                                                                 if self.visibility and self.kueue_installed
                                                                 else set()))

    def _group_doc(self, group: str) -> dict[str, Any]:
        versions = (["v1beta2", "v1beta1"] if group == "visibility.kueue.x-k8s.io" else
                    sorted({r[1] for r in self.resources if r[0] == group},
                           key=lambda v: list(self.kueue_versions).index(v) if v in self.kueue_versions else 0))
        vs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": vs, "preferredVersion": vs[0]}

    def _of_kind(self, kind: str, group: str) -> list[dict[str, Any]]:
        out = []
        for o in self.objects:
            if o.get("kind") != kind:
                continue
            g = str(o.get("apiVersion", "")).rpartition("/")[0]
            if kind == "Event" and group in ("", "events.k8s.io"):
                out.append(o)
            elif g == group:
                out.append(o)
        return out

    @staticmethod
    def _as_version(obj: dict[str, Any], group: str, version: str) -> dict[str, Any]:
        out = dict(obj)
        out["apiVersion"] = f"{group}/{version}" if group else version
        return out

    # --- list ------------------------------------------------------------------------------------------
    def _list(self, group: str, version: str, kind: str, ns: str | None,
              query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        start = 0
        token = query.get("continue")
        if token:
            try:
                start = int(json.loads(base64.urlsafe_b64decode(token.encode()))["start"])
            except (ValueError, KeyError):
                return _status(400, "invalid continue token")
        # The matching items are selected and sorted once per LIST and kept for its continue pages, as a real
        # API server reads a LIST's pages from one snapshot: selecting again for every page would make a long
        # paginated LIST cost the square of its size (and the benchmark's transfer times with it).
        key = (group, kind, ns, query.get("labelSelector", ""), query.get("fieldSelector", ""))
        cached = self.listed.get(key) if token else None
        if cached is None:
            items = [o for o in self._of_kind(kind, group) if ns is None or o["metadata"].get("namespace") == ns]
            try:
                items = [o for o in items if label_match(query.get("labelSelector", ""), o)
                         and field_match(query.get("fieldSelector", ""), o)]
            except ValueError as exc:
                return _status(400, str(exc))
            items.sort(key=lambda o: (o["metadata"].get("namespace") or "", o["metadata"]["name"]))
            with self.lock:
                self.listed[key] = items
        else:
            items = cached
        limit = int(query.get("limit") or 0)
        page = items[start:start + limit] if limit else items[start:]
        meta: dict[str, Any] = {"resourceVersion": str(self.resource_version)}
        if limit and start + limit < len(items):
            meta["continue"] = base64.urlsafe_b64encode(json.dumps({"start": start + limit}).encode()).decode()
            meta["remainingItemCount"] = len(items) - start - limit
        stripped = []
        for o in page:
            item = {k: v for k, v in o.items() if k not in ("kind", "apiVersion")}
            stripped.append(item)
        return _json({"kind": f"{kind}List", "apiVersion": f"{group}/{version}" if group else version,
                      "metadata": meta, "items": stripped})

    # --- visibility -------------------------------------------------------------------------------------
    def _visibility(self, rest: list[str], query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        if not (self.visibility and self.kueue_installed):
            return _status(404, "not found")
        if not rest:
            return _json(self._group_doc("visibility.kueue.x-k8s.io"))
        version, rest = rest[0], rest[1:]
        api = f"visibility.kueue.x-k8s.io/{version}"
        if len(rest) == 3 and rest[0] == "clusterqueues" and rest[2] == "pendingworkloads":
            return self._pending(api, rest[1], None)
        if len(rest) == 5 and rest[0] == "namespaces" and rest[2] == "localqueues" and rest[4] == "pendingworkloads":
            return self._pending(api, rest[3], rest[1])
        return _status(404, "not found")

    def _pending(self, api: str, queue: str, ns: str | None) -> tuple[int, dict[str, str], bytes]:
        qkind = "LocalQueue" if ns else "ClusterQueue"
        for o in self.objects:
            m = o["metadata"]
            if o["kind"] == "PendingWorkloadsSummary" and m["name"] == queue and m.get("namespace") == ns:
                return _json({"kind": "PendingWorkloadsSummary", "apiVersion": api, "metadata": {},
                              "items": o.get("items") or []})
        if not any(o["kind"] == qkind and o["metadata"]["name"] == queue and o["metadata"].get("namespace") == ns
                   for o in self.objects):
            return _status(404, f'{qkind.lower()}s "{queue}" not found')
        lq_cq = {(o["metadata"].get("namespace"), o["metadata"]["name"]): o["spec"].get("clusterQueue")
                 for o in self.objects if o["kind"] == "LocalQueue"}
        pending = []
        for w in self.objects:
            if w["kind"] != "Workload":
                continue
            conds = {c["type"]: c["status"] for c in (w.get("status") or {}).get("conditions") or ()}
            if conds.get("QuotaReserved") == "True" or conds.get("Finished") == "True":
                continue
            wns, lq = w["metadata"].get("namespace"), w["spec"].get("queueName")
            if (ns and (wns, lq) == (ns, queue)) or (not ns and lq_cq.get((wns, lq)) == queue):
                pending.append(w)
        pending.sort(key=lambda w: (-(w["spec"].get("priority") or 0), w["metadata"]["creationTimestamp"]))
        items = []
        for i, w in enumerate(pending):
            items.append({"metadata": {"name": w["metadata"]["name"], "namespace": w["metadata"]["namespace"],
                                       "creationTimestamp": w["metadata"]["creationTimestamp"]},
                          "priority": w["spec"].get("priority") or 0, "localQueueName": w["spec"].get("queueName"),
                          "positionInClusterQueue": i, "positionInLocalQueue": i})
        return _json({"kind": "PendingWorkloadsSummary", "apiVersion": api, "metadata": {}, "items": items})

    # --- logs -------------------------------------------------------------------------------------------
    def _log(self, ns: str, pod: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        container = query.get("container", "")
        for rel, text in self.logs.items():
            parts = rel.split("/")
            if len(parts) >= 4 and parts[1] == ns and parts[2] == pod and parts[3].startswith(container):
                return 200, {"Content-Type": "text/plain"}, text.encode()
        if any(o["kind"] == "Pod" and o["metadata"]["name"] == pod for o in self.objects):
            return 200, {"Content-Type": "text/plain"}, b""
        return _status(404, f'pods "{pod}" not found')


# --- selectors --------------------------------------------------------------------------------------------
_SET = re.compile(r"^\s*([^\s!=]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")


def _split_selector(sel: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in sel:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return out


def label_match(selector: str, obj: dict[str, Any]) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for term in _split_selector(selector):
        term = term.strip()
        m = _SET.match(term)
        if m:
            values = {v.strip() for v in m.group(3).split(",")}
            has = m.group(1) in labels and labels[m.group(1)] in values
            if (m.group(2) == "in") != has:
                return False
        elif "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k.strip()) == v.strip():
                return False
        elif "=" in term:
            k, v = term.replace("==", "=").split("=", 1)
            if labels.get(k.strip()) != v.strip():
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


FIELDS = {"metadata.name", "metadata.namespace", "spec.nodeName", "status.phase", "involvedObject.kind",
          "involvedObject.name", "involvedObject.namespace", "involvedObject.uid", "regarding.name", "type",
          "reason", "spec.schedulerName"}


def field_match(selector: str, obj: dict[str, Any]) -> bool:
    for term in _split_selector(selector):
        term = term.strip()
        neg = "!=" in term
        k, v = (term.split("!=", 1) if neg else term.replace("==", "=").split("=", 1))
        k = k.strip()
        if k not in FIELDS:
            raise ValueError(f'field label not supported: {k}')
        cur: Any = obj
        for part in k.split("."):
            cur = cur.get(part) if isinstance(cur, dict) else None
        actual = "" if cur is None else str(cur)
        if neg == (actual == v.strip()):
            return False
    return True


# --- HTTP plumbing ----------------------------------------------------------------------------------------
def _json(doc: dict[str, Any], status: int = 200) -> tuple[int, dict[str, str], bytes]:
    return status, {"Content-Type": "application/json"}, json.dumps(doc).encode()


def _status(code: int, message: str) -> tuple[int, dict[str, str], bytes]:
    reason = {401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 410: "Expired", 429: "TooManyRequests",
              500: "InternalError", 503: "ServiceUnavailable", 405: "MethodNotAllowed",
              400: "BadRequest"}.get(code, "Unknown")
    if code == 403:
        message = f"forbidden: User \"researcher\" cannot list resource ({message})"
    return _json({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                  "message": message, "reason": reason, "code": code}, code)


class _Handler(BaseHTTPRequestHandler):
    cluster: FakeCluster
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _any(self) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        length = int(headers.get("content-length") or 0)
        if length:
            self.rfile.read(length)
        status, hdrs, body, delivery = self.server.cluster.handle(  # type: ignore[attr-defined]
            self.command, self.path, headers)
        if delivery is not None and delivery.truncate is not None:
            body = body[:delivery.truncate]
        self.send_response(status)
        for k, v in hdrs.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if delivery is None or not delivery.drip:
            self.wfile.write(body)
            return
        self.close_connection = True
        try:  # one byte at a time until the client gives up (or, at most, ten minutes)
            for i in range(min(len(body), int(600 / delivery.drip))):
                self.wfile.write(body[i:i + 1])
                self.wfile.flush()
                time.sleep(delivery.drip)
        except OSError:
            return

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any  # noqa: N815

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        return


class ApiServer:
    """Run a FakeCluster on 127.0.0.1 (free port) in a thread."""

    def __init__(self, cluster: FakeCluster) -> None:
        self.cluster = cluster
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.cluster = cluster  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> ApiServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def kubeconfig(self, directory: Path, namespace: str | None = None, disable_compression: bool = False) -> Path:
        ctx: dict[str, Any] = {"cluster": "prod-gpu-1", "user": "researcher"}
        if namespace:
            ctx["namespace"] = namespace
        entry: dict[str, Any] = {"server": self.url, "insecure-skip-tls-verify": True}
        if disable_compression:
            entry["disable-compression"] = True
        doc = {"apiVersion": "v1", "kind": "Config", "current-context": "test",
               "clusters": [{"name": "prod-gpu-1", "cluster": entry}],
               "contexts": [{"name": "test", "context": ctx}],
               "users": [{"name": "researcher", "user": {"token": TOKEN}}]}
        p = directory / "kubeconfig.yaml"
        p.write_text(json.dumps(doc))
        return p


def now_utc() -> datetime:
    return datetime.now(UTC)
