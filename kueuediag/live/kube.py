"""A read-only Kubernetes API client: kubernetes' ApiClient for auth, raw GETs and raw JSON for speed.

The `kubernetes` package is used only to load credentials the way kubectl does (``--kubeconfig``,
``--context``, ``KUBECONFIG``, in-cluster service account) and to sign requests. Responses are decoded as
plain JSON (no model objects: they are slow, lossy for CRDs and drop unknown fields).

Guarantees:

* **GET only.** Every request goes through :meth:`KubeClient._send`, which refuses any other method.
  Secrets are never requested (:meth:`KubeClient._send` refuses ``/secrets`` paths too).
* **Bounded.** One overall deadline holds for every phase: the transport reads bodies in chunks against the
  time left and a size cap (:mod:`kueuediag.live.bounded`), 429/5xx answers, truncated bodies and connection
  errors are retried with exponential backoff until the deadline (a ``Retry-After`` longer than the time left
  ends the retries at once instead of sleeping past it); past the deadline every call raises
  :class:`DeadlineExceeded` and the collector diagnoses with what it has.
* **Paginated LISTs** (``limit``/``continue``), restarting from scratch while time is left once a ``continue``
  token expires (410).
* **Accountable.** Every exchange lands in :attr:`KubeClient.log` (method, path, status, bytes, seconds) for
  ``--verbose`` and for tests that prove GET-only and bounded request counts.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import field
from functools import partial
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

from kueuediag import jsonload
from kueuediag.errors import ClusterUnavailable, InputError
from kueuediag.live.bounded import BodyTooLarge, backoff_delay, read_body, retry_after
from kueuediag.records import dataclass

ALLOWED_METHODS = frozenset({"GET"})
"""GET covers get, list and watch; nothing else is ever sent."""

KUEUE_GROUP = "kueue.x-k8s.io"
VISIBILITY_GROUP = "visibility.kueue.x-k8s.io"
KUEUE_VERSION_PREFERENCE = ("v1beta2", "v1beta1")
RETRYABLE = frozenset({429, 500, 502, 503, 504})
CONNECT_RETRIES = 4
"""connection failures (refused, reset, stalled body) are retried this often; 429/5xx until the deadline"""
TRUNCATED_RETRIES = 3
"""a body that is not JSON is fetched this many times in all (a proxy cutting answers is not transient)"""
MAX_BODY_BYTES = 64 * 1024 * 1024
"""The largest response accepted: a 500-item LIST page of pods, or 32 MiB of controller logs, fits."""
READER_SWITCH_INTERVAL = 0.0005
"""seconds: how long the page reader may wait for the interpreter while a pipelined LIST's previous page is
processed"""


class _LoweredSwitchInterval:
    """The interpreter's switch interval lowered to `READER_SWITCH_INTERVAL` while any pipelined LIST runs.

    The reader thread takes a page's body in chunks as they arrive, and each chunk costs it the interpreter
    lock back from the thread processing the page before. At CPython's default switch interval (5 ms) it waits
    up to that long per chunk: a large `snapshot -A` spent a fifth longer in its requests, and the API server
    sat idle meanwhile. Nested and concurrent LISTs share one lowered interval; the last one out restores the
    process's own.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._before = 0.0

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        with self._lock:
            if self._users == 0:
                self._before = sys.getswitchinterval()
                sys.setswitchinterval(min(self._before, READER_SWITCH_INTERVAL))
            self._users += 1
        try:
            yield
        finally:
            with self._lock:
                self._users -= 1
                if self._users == 0:
                    sys.setswitchinterval(self._before)


_responsive_reader = _LoweredSwitchInterval()


T = TypeVar("T")


def in_background(fn: Callable[[], T], name: str) -> Future[T]:
    """`fn()` on a daemon thread of its own (a LIST's next page, a controller's log): a run that ends or is interrupted
    (Ctrl-C) while a request is still in flight exits at once, where a pool's worker thread is joined at exit (up to
    a request's timeout and its retries)."""
    result: Future[T] = Future()

    def run() -> None:
        if result.set_running_or_notify_cancel():
            try:
                result.set_result(fn())
            except BaseException as exc:  # noqa: BLE001 - handed to whoever waits for the result
                result.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return result


class KubeError(Exception):
    """A request that ended in an HTTP error after retries."""

    def __init__(self, status: int, path: str, message: str = "") -> None:
        self.status = status
        self.path = path
        self.message = message
        super().__init__(f"GET {path}: HTTP {status}{': ' + message if message else ''}")


class Forbidden(KubeError):
    """403: the caller's RBAC does not allow this read."""


class NotFound(KubeError):
    """404: no such object, resource or API group."""


class Expired(KubeError):
    """410 Gone: a LIST continue token (or watch resourceVersion) has expired."""


class GaveUp(KubeError):
    """429/5xx answers (or a ``Retry-After``) outlasted the time left: this request failed, later ones may not."""


class DeadlineExceeded(Exception):
    """The overall collection deadline (``--timeout``) has passed."""


class KueueNotInstalled(ClusterUnavailable):
    """The kueue.x-k8s.io API group is not served by this cluster."""


@dataclass(frozen=True)
class RequestRecord:
    method: str
    path: str
    status: int
    """HTTP status, or 0 for a connection error / timeout"""
    bytes: int
    """the body's bytes as read (decompressed)"""
    seconds: float
    attempt: int = 1
    wire: int | None = None
    """bytes received on the wire when the API server compressed the body (gzip), else None"""


@dataclass
class ClientStats:
    requests: int = 0
    bytes: int = 0
    """the bodies' bytes as read (decompressed)"""
    wire: int = 0
    """bytes received on the wire: fewer than `bytes` when the API server compressed large answers"""
    retries: int = 0
    errors: int = 0
    by_status: dict[int, int] = field(default_factory=dict)
    seconds: float = 0.0
    """time spent in requests (sending, waiting, reading the bodies): the transfer, without decoding"""

    def summary(self) -> str:
        statuses = ", ".join(f"{k}×{v}" for k, v in sorted(self.by_status.items()))
        compressed = f" ({self.wire} on the wire)" if self.wire != self.bytes else ""
        return (f"{self.requests} requests, {self.bytes} bytes{compressed}, {self.retries} retries"
                + (f" (HTTP {statuses})" if statuses else "") + f", {self.seconds:.2f} s transferring")


@dataclass(frozen=True)
class Response:
    status: int
    headers: Mapping[str, str]
    body: bytes
    wire: int | None = None
    """bytes received on the wire when the body came compressed (``Content-Encoding: gzip``), else None"""


Transport = Callable[[str, str, list[tuple[str, str]], float], Response]
"""(method, path, query, timeout_seconds) → Response; raises OSError-like errors on connection failure."""


class KubeClient:
    """Read-only, paginating, retrying GET client over an authenticated transport."""

    def __init__(
        self,
        transport: Transport,
        *,
        timeout: float = 60.0,
        request_timeout: float = 15.0,
        max_retries: int | None = None,
        backoff: float = 0.25,
        max_backoff: float = 8.0,
        page_size: int = 500,
        cluster: str | None = None,
        default_namespace: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._transport = transport
        self._clock = clock
        self._sleep = sleep
        self.deadline = clock() + timeout
        self.request_timeout = request_timeout
        self.max_retries = max_retries
        """None: retry 429/5xx until the deadline and connection failures CONNECT_RETRIES times"""
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.page_size = page_size
        self.cluster = cluster
        self.default_namespace = default_namespace
        self.log: list[RequestRecord] = []
        self.stats = ClientStats()
        self._record_lock = threading.Lock()
        """requests may run on several threads (a LIST's next page, the controller's log): one count"""

    # --- construction -----------------------------------------------------------------------------------
    @classmethod
    def from_kubeconfig(cls, kubeconfig: str | None = None, context: str | None = None,
                        impersonate_user: str | None = None, impersonate_groups: Sequence[str] = (),
                        **kwargs: Any) -> KubeClient:
        """Load credentials like kubectl: explicit file, KUBECONFIG, ~/.kube/config, then in-cluster.

        `impersonate_user`/`impersonate_groups` are kubectl's `--as`/`--as-group`: the API server then answers
        with that identity's permissions (what a researcher can see), and the collector's 403 handling applies.
        """
        api_client, cluster, namespace, compression = _load_api_client(kubeconfig, context)
        if impersonate_user or impersonate_groups:
            _impersonate(api_client, impersonate_user, impersonate_groups)
        kwargs.setdefault("cluster", cluster)
        kwargs.setdefault("default_namespace", namespace)
        return cls(_kubernetes_transport(api_client, compression=compression), **kwargs)

    # --- time ---------------------------------------------------------------------------------------------
    def remaining(self) -> float:
        return self.deadline - self._clock()

    def _check_deadline(self, path: str) -> float:
        left = self.remaining()
        if left <= 0:
            raise DeadlineExceeded(f"--timeout reached before GET {path}")
        return left

    # --- the one place a request is sent ------------------------------------------------------------------
    def _send(self, method: str, path: str, query: list[tuple[str, str]] | None = None) -> Response:
        assert method in ALLOWED_METHODS, f"kueuediag is read-only: refusing {method} {path}"
        if method not in ALLOWED_METHODS:  # also under python -O
            raise RuntimeError(f"kueuediag is read-only: refusing {method} {path}")
        if resource_of(path) == "secrets":
            raise RuntimeError(f"kueuediag never reads Secrets: refusing GET {path}")
        query = list(query or [])
        shown = path + ("?" + urlencode(query) if query else "")
        attempt = 0
        while True:
            attempt += 1
            left = self._check_deadline(shown)
            start = self._clock()
            try:
                resp = self._transport(method, path, query, min(self.request_timeout, left))
            except DeadlineExceeded:
                raise
            except BodyTooLarge as exc:  # not transient: retrying would read the same huge answer again
                self._record(method, shown, 0, exc.limit, start, attempt, exc.wire)
                raise KubeError(0, shown, str(exc)) from None
            except Exception as exc:  # connection refused, reset, read timeout, slow body, TLS failure
                self._record(method, shown, 0, 0, start, attempt)
                unreachable = f"cannot reach the Kubernetes API ({shown}): {_short(exc)}"
                limit = CONNECT_RETRIES if self.max_retries is None else self.max_retries
                if attempt > limit or not self._backoff(attempt, None):
                    raise ClusterUnavailable(unreachable) from None
                continue
            self._record(method, shown, resp.status, len(resp.body), start, attempt, resp.wire)
            if resp.status in RETRYABLE and not self._out_of_retries(attempt):
                if not self._backoff(attempt, resp.headers):
                    asked = retry_after(resp.headers)
                    wait = f"; the server asked to retry after {asked:g}s" if asked is not None else ""
                    raise GaveUp(resp.status, shown, f"gave up after {attempt} attempt(s){wait}: waiting would "
                                                     "cross the --timeout")
                continue
            return resp

    def _out_of_retries(self, attempt: int) -> bool:
        return self.max_retries is not None and attempt > self.max_retries

    def _record(self, method: str, path: str, status: int, size: int, start: float, attempt: int,
                wire: int | None = None) -> None:
        seconds = self._clock() - start
        with self._record_lock:
            self.log.append(RequestRecord(method, path, status, size, round(seconds, 4), attempt, wire))
            self.stats.seconds += seconds
            self.stats.requests += 1
            self.stats.bytes += size
            self.stats.wire += size if wire is None else wire
            self.stats.by_status[status] = self.stats.by_status.get(status, 0) + 1
            if attempt > 1:
                self.stats.retries += 1
            if status == 0 or status >= 400:
                self.stats.errors += 1

    def _backoff(self, attempt: int, headers: Mapping[str, str] | None) -> bool:
        """Sleep before the next attempt; False when the wait would cross the deadline (give up now)."""
        asked = retry_after(headers)
        delay = backoff_delay(attempt, base=self.backoff, cap=self.max_backoff, asked=asked, left=self.remaining())
        if delay is None:
            return False
        self._sleep(delay)
        return True

    # --- typed helpers ------------------------------------------------------------------------------------
    def get_raw(self, path: str, query: list[tuple[str, str]] | None = None) -> Response:
        resp = self._send("GET", path, query)
        if resp.status >= 400:
            raise _error_for(resp, path)
        return resp

    def get(self, path: str, query: list[tuple[str, str]] | None = None) -> dict[str, Any]:
        """GET one JSON document; a body that is not JSON (cut off mid-way) is fetched again while time is left."""
        attempt = 0
        while True:
            attempt += 1
            resp = self.get_raw(path, query)
            try:
                return _decode(resp.body, path)
            except KubeError:
                if self._out_of_retries(attempt) or attempt >= TRUNCATED_RETRIES or not self._backoff(attempt, None):
                    raise

    def get_text(self, path: str, query: list[tuple[str, str]] | None = None, limit_bytes: int = 0) -> str:
        """GET a text body (pod logs); `limit_bytes` is passed as the server-side limitBytes when set."""
        q = list(query or [])
        if limit_bytes:
            q.append(("limitBytes", str(limit_bytes)))
        return self.get_raw(path, q).body.decode("utf-8", errors="replace")

    def list_items(
        self,
        path: str,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        kind: str | None = None,
        api_version: str | None = None,
        max_restarts: int = 5,
        on_page: Callable[[list[dict[str, Any]]], None] | None = None,
    ) -> list[dict[str, Any]]:
        """Paginated LIST; items get `kind`/`apiVersion` filled in (the API server omits them).

        A 410 on a continue token restarts the LIST from the first page (up to `max_restarts` times, and never
        past the deadline: every page goes through the deadline check). `on_page` is called with each page's
        items while the next page is being fetched (one request in flight, on one worker thread), so decoding
        the next answer overlaps with processing this one (the worker gets the interpreter back promptly:
        `_responsive_reader`); after a restart it sees the first pages again."""
        restarts = 0
        while True:
            try:
                return self._list_once(path, label_selector, field_selector, kind, api_version, on_page)
            except Expired:
                restarts += 1
                if restarts > max_restarts:
                    raise
                # The continue token expired mid-way: the server compacted past our snapshot. Start over.

    def _list_once(self, path: str, label_selector: str | None, field_selector: str | None,
                   kind: str | None, api_version: str | None,
                   on_page: Callable[[list[dict[str, Any]]], None] | None = None) -> list[dict[str, Any]]:
        def query(token: str | None) -> list[tuple[str, str]]:
            q: list[tuple[str, str]] = [("limit", str(self.page_size))]
            if label_selector:
                q.append(("labelSelector", label_selector))
            if field_selector:
                q.append(("fieldSelector", field_selector))
            if token:
                q.append(("continue", token))
            return q

        items: list[dict[str, Any]] = []
        with contextlib.ExitStack() as stack:
            if on_page is not None:
                stack.enter_context(_responsive_reader.held())
            doc = self.get(path, query(None))
            while True:
                page = _page_items(doc, kind, api_version)
                token = (doc.get("metadata") or {}).get("continue") or None
                ahead: Future[dict[str, Any]] | None = None
                if token and on_page is not None:
                    ahead = in_background(partial(self.get, path, query(token)), "kueuediag-page")
                items.extend(page)
                if on_page is not None:
                    on_page(page)
                if not token:
                    return items
                doc = ahead.result() if ahead is not None else self.get(path, query(token))

    # --- discovery ----------------------------------------------------------------------------------------
    def group_versions(self, group: str) -> list[str]:
        """Versions served for an API group, preferred first; [] when the group is not served (404)."""
        try:
            doc = self.get(f"/apis/{group}")
        except NotFound:
            return []
        versions = [v.get("version") for v in doc.get("versions") or () if isinstance(v, dict)]
        preferred = (doc.get("preferredVersion") or {}).get("version")
        out = [v for v in versions if isinstance(v, str)]
        if preferred in out:
            out.remove(preferred)
            out.insert(0, preferred)
        return out

    def resources(self, group: str, version: str) -> dict[str, dict[str, Any]]:
        """kind → APIResource (name/plural, namespaced, verbs) for one group version (subresources dropped)."""
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        doc = self.get(path)
        out: dict[str, dict[str, Any]] = {}
        for r in doc.get("resources") or ():
            if isinstance(r, dict) and "/" not in str(r.get("name", "")) and r.get("kind"):
                out[str(r["kind"])] = r
        return out

    def kueue_version(self) -> str:
        """The Kueue API version to read: v1beta2 when served, else v1beta1. Raises KueueNotInstalled."""
        served = self.group_versions(KUEUE_GROUP)
        if not served:
            raise KueueNotInstalled(
                "Kueue is not installed on this cluster: the API group kueue.x-k8s.io is not served "
                "(GET /apis/kueue.x-k8s.io returned 404)")
        for v in KUEUE_VERSION_PREFERENCE:
            if v in served:
                return v
        raise KueueNotInstalled(
            f"this cluster serves kueue.x-k8s.io {', '.join(served)}; kueuediag reads "
            f"{' or '.join(KUEUE_VERSION_PREFERENCE)} (Kueue v0.9 or newer)")


def _page_items(doc: dict[str, Any], kind: str | None, api_version: str | None) -> list[dict[str, Any]]:
    """The items of one LIST answer, with the `kind`/`apiVersion` the API server leaves out filled in."""
    list_kind = doc.get("kind") or ""
    item_kind = kind or (list_kind[:-4] if list_kind.endswith("List") else None)
    item_version = api_version or doc.get("apiVersion")
    out = []
    for item in doc.get("items") or ():
        if not isinstance(item, dict):
            continue
        if item_kind and not item.get("kind"):
            item["kind"] = item_kind
        if item_version and not item.get("apiVersion"):
            item["apiVersion"] = item_version
        out.append(item)
    return out


def resource_of(path: str) -> str | None:
    """The resource a request path addresses: /api/v1/namespaces/x/pods/p/log → "pods"."""
    segs = [seg for seg in path.split("?")[0].split("/") if seg]
    if not segs:
        return None
    rest = segs[2:] if segs[0] == "api" else segs[3:] if segs[0] == "apis" else segs
    if rest[:1] == ["namespaces"] and len(rest) >= 3:
        rest = rest[2:]
    return rest[0] if rest else None


def resource_path(group: str, version: str, plural: str, namespace: str | None = None,
                  name: str | None = None) -> str:
    base = f"/apis/{group}/{version}" if group else f"/api/{version}"
    if namespace:
        base += f"/namespaces/{quote(namespace, safe='')}"
    base += f"/{plural}"
    if name:
        base += f"/{quote(name, safe='')}"
    return base


def _decode(body: bytes, path: str) -> dict[str, Any]:
    try:
        doc = jsonload.loads(body)
    except ValueError:
        raise KubeError(200, path, "response is not JSON") from None
    if not isinstance(doc, dict):
        raise KubeError(200, path, "response is not a JSON object")
    return doc


def _error_for(resp: Response, path: str) -> KubeError:
    message = ""
    try:
        status_doc = json.loads(resp.body)
        if isinstance(status_doc, dict):
            message = str(status_doc.get("message") or "")
    except ValueError:
        message = resp.body[:200].decode("utf-8", errors="replace").strip()
    cls = {403: Forbidden, 404: NotFound, 410: Expired}.get(resp.status, KubeError)
    return cls(resp.status, path, message)


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:200]


# --- the kubernetes package, imported only here --------------------------------------------------------
def _load_api_client(kubeconfig: str | None, context: str | None) -> tuple[Any, str | None, str | None, bool]:
    """(ApiClient, cluster name, context namespace, whether to ask for compressed answers). Raises
    ClusterUnavailable with a one-line reason."""
    import importlib

    k8s_client: Any = importlib.import_module("kubernetes.client")
    k8s_config: Any = importlib.import_module("kubernetes.config")
    ConfigException: Any = importlib.import_module("kubernetes.config.config_exception").ConfigException

    cfg = k8s_client.Configuration()
    cfg.retries = False  # retries are ours (bounded, Retry-After aware)
    cluster: str | None = None
    namespace: str | None = None
    compression = True
    explicit = kubeconfig or os.environ.get("KUBECONFIG")
    default_file = os.path.expanduser("~/.kube/config")
    in_cluster = bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
    try:
        if explicit or os.path.exists(default_file) or not in_cluster:
            files = kubeconfig or os.environ.get("KUBECONFIG") or default_file
            k8s_config.load_kube_config(config_file=files, context=context, client_configuration=cfg,
                                        persist_config=False)
            contexts, current = k8s_config.list_kube_config_contexts(config_file=files)
            chosen = next((c for c in contexts if c.get("name") == context), current) if context else current
            if chosen:
                ctx = chosen.get("context") or {}
                cluster = ctx.get("cluster") or chosen.get("name")
                namespace = ctx.get("namespace")
                compression = not _compression_disabled(k8s_config, files, ctx.get("cluster"))
        else:
            k8s_config.load_incluster_config(client_configuration=cfg)
            cluster = "in-cluster"
            try:
                with open("/var/run/secrets/kubernetes.io/serviceaccount/namespace") as fh:
                    namespace = fh.read().strip() or None
            except OSError:
                namespace = None
    except (ConfigException, OSError, TypeError, ValueError) as exc:
        raise ClusterUnavailable(f"cannot load Kubernetes credentials: {_short(exc)}") from None
    return k8s_client.ApiClient(configuration=cfg), cluster, namespace, compression


def _compression_disabled(k8s_config: Any, files: str, cluster: Any) -> bool:
    """The kubeconfig cluster entry's ``disable-compression: true`` (kubectl ≥ 1.26 honours it: the client then
    does not ask for gzip). The first file of KUBECONFIG naming the cluster wins, as for every other field."""
    if not cluster:
        return False
    merged = k8s_config.kube_config.KubeConfigMerger(files).config
    for entry in (merged.value.get("clusters") or []) if merged is not None else ():
        value = getattr(entry, "value", entry)
        if isinstance(value, dict) and value.get("name") == cluster:
            return (value.get("cluster") or {}).get("disable-compression") is True
    return False


def _impersonate(api_client: Any, user: str | None, groups: Sequence[str]) -> None:
    """Add `Impersonate-User` and one `Impersonate-Group` header per group to every request of `api_client`.

    The generated client flattens headers into a dict (one value per name), so repeated group headers are added
    after serialisation, as an urllib3 HTTPHeaderDict (sent as separate header lines, as kubectl does).
    """
    import importlib

    header_dict: Any = importlib.import_module("urllib3").HTTPHeaderDict
    if groups and not user:
        raise InputError("--as-group needs --as (the API server impersonates groups only with a user)")
    serialize = api_client.param_serialize

    def with_identity(*args: Any, **kwargs: Any) -> Any:
        method, url, headers, body, post = serialize(*args, **kwargs)
        hdrs = header_dict(headers or {})
        if user:
            hdrs["Impersonate-User"] = user
        for group in groups:
            hdrs.add("Impersonate-Group", group)
        return method, url, hdrs, body, post

    api_client.param_serialize = with_identity


def _kubernetes_transport(api_client: Any, max_body_bytes: int = MAX_BODY_BYTES,
                          compression: bool = True) -> Transport:
    """GETs through the kubernetes package's ApiClient (its auth, TLS and proxy settings), each body read bounded.

    Like kubectl, the client accepts gzip unless the kubeconfig's cluster says ``disable-compression: true``:
    kube-apiserver compresses API answers of 128 KiB or more (APIResponseCompression, on by default since 1.16),
    which is every full page of a cluster-wide LIST. The body is decompressed as it is read (urllib3, zlib outside
    the interpreter lock), and the size bound applies to the decompressed bytes.
    """
    accept = {"Accept": "application/json, */*"}
    if compression:
        accept["Accept-Encoding"] = "gzip"

    def send(method: str, path: str, query: list[tuple[str, str]], timeout: float) -> Response:
        assert method in ALLOWED_METHODS, f"kueuediag is read-only: refusing {method} {path}"
        deadline = time.monotonic() + timeout
        _m, url, headers, _body, _post = api_client.param_serialize(
            method=method, resource_path=path, query_params=query or None,
            header_params=dict(accept), auth_settings=["BearerToken"],
        )
        resp = api_client.call_api(method, url, header_params=headers, _request_timeout=timeout)
        raw = getattr(resp, "response", None)  # the urllib3 response, body not read yet (preload_content=False)
        if raw is not None:
            body = read_body(raw, deadline=deadline, max_bytes=max_body_bytes)
        else:  # pragma: no cover - older clients preload the body
            body = resp.read() or b""
        hdrs = {str(k): str(v) for k, v in (resp.getheaders() or {}).items()}
        wire = _wire_bytes(raw, hdrs)
        return Response(int(resp.status), hdrs, body if isinstance(body, bytes) else str(body).encode(), wire)

    return send


def _wire_bytes(raw: Any, headers: Mapping[str, str]) -> int | None:
    """Bytes the server sent for a body that came compressed (urllib3 counts what it pulled off the socket), else
    None: the body as read is what travelled."""
    encoding = next((v for k, v in headers.items() if k.lower() == "content-encoding"), "")
    tell = getattr(raw, "tell", None)
    if not encoding or encoding.lower() == "identity" or not callable(tell):
        return None
    try:
        return int(tell())
    except (TypeError, ValueError, OSError):
        return None
