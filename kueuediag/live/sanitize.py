"""Strip what a snapshot must never carry, whatever `--redact` says.

* environment variable values (``env[].value``; ``valueFrom`` references are kept, they name no secret
  material) and ``envFrom`` entirely;
* command-line arguments that look like secrets (``--password=...``, ``--token ...``, ``-p=...``, URLs with
  user:password@) — the value is replaced, the flag name stays;
* the ``kubectl.kubernetes.io/last-applied-configuration`` annotation (a full copy of the object, env included);
* ``managedFields`` reduced to manager, time and operation;
* Secrets are dropped outright, and ConfigMap data values are removed.

Resource requests, node selectors, tolerations, affinities, labels and conditions are kept: the diagnosis
needs them. Sanitizing never mutates its input.
"""

from __future__ import annotations

import copy
import re
from typing import Any

REDACTED = "<redacted>"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
SECRET_WORDS = ("password", "passwd", "secret", "token", "apikey", "api-key", "api_key", "credential",
                "private-key", "private_key", "access-key", "access_key", "auth", "bearer", "passphrase",
                "client-key", "cert-key", "session-key", "signing-key", "webhook-url", "dsn")
_FLAG = re.compile(r"^(-{1,2}[A-Za-z0-9_.-]+)(=)(.*)$", re.DOTALL)
_URL_CRED = re.compile(r"([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s:]+:[^/@\s]+@")
_INLINE = re.compile(
    r"(?i)\b([A-Za-z0-9_.-]*(?:password|passwd|secret|token|apikey|api_key|api-key|credential|passphrase)"
    r"[A-Za-z0-9_.-]*)(\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|[^\s&;,]+)")
_SENSITIVE_ENV_KEY = re.compile(r"(?i)(password|passwd|secret|token|apikey|api_key|credential|passphrase)")


def _secretish(flag: str) -> bool:
    f = flag.lstrip("-").lower()
    return any(w in f for w in SECRET_WORDS) or f in ("p", "k", "key", "pw", "pass", "pwd")


def sanitize_args(args: list[Any]) -> list[Any]:
    """Replace secret-looking values in a container's command/args, keeping flag names."""
    out: list[Any] = []
    redact_next = False
    for arg in args:
        if not isinstance(arg, str):
            out.append(arg)
            redact_next = False
            continue
        if redact_next and not arg.startswith("-"):
            out.append(REDACTED)
            redact_next = False
            continue
        redact_next = False
        m = _FLAG.match(arg)
        if m and _secretish(m.group(1)):
            out.append(f"{m.group(1)}={REDACTED}")
            continue
        if arg.startswith("-") and "=" not in arg and _secretish(arg):
            out.append(arg)
            redact_next = True
            continue
        out.append(_scrub_text(arg))
    return out


def _scrub_text(text: str) -> str:
    text = _URL_CRED.sub(lambda m: m.group(1) + REDACTED + "@", text)
    return _INLINE.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)


def _sanitize_container(c: dict[str, Any]) -> None:
    env = c.get("env")
    if isinstance(env, list):
        for var in env:
            if isinstance(var, dict) and "value" in var:
                var["value"] = REDACTED
    c.pop("envFrom", None)
    for key in ("command", "args"):
        if isinstance(c.get(key), list):
            c[key] = sanitize_args(c[key])
    lifecycle = c.get("lifecycle")
    if isinstance(lifecycle, dict):
        c["lifecycle"] = {k: {"redacted": True} for k in lifecycle}
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        p = c.get(probe)
        if isinstance(p, dict) and isinstance(p.get("exec"), dict):
            p["exec"] = {"command": [REDACTED]}
        if isinstance(p, dict) and isinstance(p.get("httpGet"), dict):
            p["httpGet"].pop("httpHeaders", None)


def _sanitize_pod_spec(spec: Any) -> None:
    if not isinstance(spec, dict):
        return
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for c in spec.get(key) or ():
            if isinstance(c, dict):
                _sanitize_container(c)


def _walk_pod_specs(node: Any, depth: int = 0) -> None:
    """Find every pod spec (Pod.spec, Job.spec.template.spec, Workload podSets, JobSet replicatedJobs...)."""
    if depth > 12:
        return
    if isinstance(node, dict):
        if isinstance(node.get("containers"), list):
            _sanitize_pod_spec(node)
        for value in node.values():
            _walk_pod_specs(value, depth + 1)
    elif isinstance(node, list):
        for item in node:
            _walk_pod_specs(item, depth + 1)


def sanitize_metadata(meta: dict[str, Any]) -> None:
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        annotations.pop(LAST_APPLIED, None)
        for k, v in list(annotations.items()):
            if isinstance(v, str):
                annotations[k] = _scrub_text(v)
    mf = meta.get("managedFields")
    if isinstance(mf, list):
        meta["managedFields"] = [
            {k: e[k] for k in ("manager", "operation", "time", "subresource") if k in e}
            for e in mf if isinstance(e, dict)
        ]


def sanitize_object(obj: dict[str, Any]) -> dict[str, Any]:
    """A sanitized deep copy of one Kubernetes object."""
    out = copy.deepcopy(obj)
    meta = out.get("metadata")
    if isinstance(meta, dict):
        sanitize_metadata(meta)
    kind = out.get("kind")
    if kind == "ConfigMap":
        for key in ("data", "binaryData"):
            if isinstance(out.get(key), dict):
                out[key] = dict.fromkeys(out[key], REDACTED)
    for key in ("spec", "status"):
        if key in out:
            _walk_pod_specs(out[key])
    if kind == "Event":
        for key in ("message", "note"):
            if isinstance(out.get(key), str):
                out[key] = _scrub_text(out[key])
    return out


def is_sensitive_env_key(name: str) -> bool:
    return bool(_SENSITIVE_ENV_KEY.search(name))
