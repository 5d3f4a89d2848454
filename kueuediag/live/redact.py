"""`--redact`: consistent pseudonyms that keep the diagnosis.

Replaced: namespaces, object names, node names, label and annotation values, image names and the cluster
name. Every identifier maps to one pseudonym for the whole snapshot (``team-a`` → ``ns-1`` wherever it
appears: metadata, ``spec.queueName``, ``LocalQueue.spec.clusterQueue``, ``cohortName``, ``nodeName``,
ownerReferences, flavor names in ClusterQueue specs and Workload admissions, flavor ``nodeLabels`` values
and the node labels they match, topology assignments, condition and event messages, controller logs,
metric label values, log file paths). Pseudonyms are deterministic for a given snapshot: objects are
visited in a stable order and numbered per category (``clusterqueue-1``, ``node-3``, ``value-7``).

Kept as is: label and annotation KEYS, resource names (``cpu``, ``nvidia.com/gpu``...), UIDs, numbers,
booleans, Kubernetes and Kueue vocabulary (phases, condition types and reasons, enums), the Kueue and
Kubernetes system namespaces and the Kueue controller's own objects, and the values of a few well-known
labels that carry no user data (``control-plane``, ``kubernetes.io/os``...).

Exactness comes from *exact-match* replacement of identifier strings anywhere in an object, plus
whole-token replacement inside free text (messages, notes, log lines, metric label values): a token is a run
of name characters; ``team-a/job-x``, ``host:port`` and ``user@host`` are rewritten part by part, but a token
that is a resource name, a label key or an API group (``nvidia.com/gpu``, ``kueue.x-k8s.io/queue-name``) is
never rewritten inside — a LocalQueue named ``gpu`` does not turn ``nvidia.com/gpu`` into anything else.
Names learned from structure (object names, queue, cohort, flavor and node references, event reporting
instances) are replaced even when they look like vocabulary (a ClusterQueue named ``default``). IP addresses
(v4 and v6) anywhere are replaced by consistent documentation addresses (``192.0.2.N``, ``2001:db8::N``).

Dotted DNS names (node names such as ``ip-10-0-1-2.ec2.internal``, service hostnames, FQDNs in messages and
logs) are replaced by structure where the field is known (a Node's name and its Hostname / InternalDNS /
ExternalDNS addresses, ``nodeName``, an event's ``reportingInstance`` and ``source.host``) and by pattern in
free text: a lower-case dotted name ending in a DNS top-level or cluster-internal label (``.internal``,
``.local``, ``.svc``, ``.com``, ``.io``...) becomes ``host-N``. API groups and the prefixes of label keys and
resource names are not host names: those seen in the snapshot (apiVersion groups, label/annotation/selector
keys, resource names), the Kubernetes ones (``*.k8s.io``, ``*.kubernetes.io``), the job frameworks' groups and
Kueue's own services in its namespace are kept (`_kept_domain`). Images are replaced whole, registry host
included: a private registry's host (an ECR account and region, ``registry.corp.example``) names the
organisation. Public registry hosts (``docker.io``, ``ghcr.io``, ``quay.io``, ``nvcr.io``...) in free text are
kept: they identify nobody (docs/security.md).
Redaction runs after sanitization, so secrets are already gone.
"""

from __future__ import annotations

import copy
import ipaddress
import json
import os
import re
from collections.abc import Iterable
from dataclasses import field
from pathlib import Path
from typing import Any

from kueuediag.errors import InputError
from kueuediag.records import dataclass
from kueuediag.snapshot.held import Held
from kueuediag.snapshot.reader import RawSnapshot

KEEP_NAMESPACES = frozenset({"kube-system", "kube-public", "kube-node-lease", "kueue-system"})
KEEP_LABEL_VALUE_KEYS = frozenset({
    "control-plane", "kubernetes.io/os", "kubernetes.io/arch", "app.kubernetes.io/component",
    "app.kubernetes.io/part-of", "app.kubernetes.io/managed-by", "kueue.x-k8s.io/managed",
    "kueue.x-k8s.io/pod-group-total-count", "kueue.x-k8s.io/podset", "kueue.x-k8s.io/job-uid",
    "kueue.x-k8s.io/podset-required-topology", "kueue.x-k8s.io/podset-preferred-topology",
    "kueue.x-k8s.io/podset-unconstrained-topology", "kueue.x-k8s.io/retriable-in-group",
    "kueue.x-k8s.io/pod-suspending-parent", "kueue.x-k8s.io/priority-boost",
    "node.kubernetes.io/exclude-from-external-load-balancers",
})
FREE_TEXT_KEYS = frozenset({"message", "note", "description"})
IMAGE_KEYS = frozenset({"image", "imageID"})
REF_KEYS = {
    "queueName": "localqueue", "localQueueName": "localqueue", "clusterQueue": "clusterqueue",
    "cohortName": "cohort", "cohort": "cohort", "parentName": "cohort", "nodeName": "node",
    "nominatedNodeName": "node", "priorityClassName": "priorityclass", "topologyName": "topology",
    "serviceAccountName": "serviceaccount", "serviceAccount": "serviceaccount", "hostname": "node",
    "preemptingWorkload": "workload", "host": "node", "reportingInstance": "node",
}
VOCABULARY_KEYS = frozenset({
    "type", "status", "reason", "phase", "effect", "operator", "queueingStrategy", "stopPolicy",
    "whenCanBorrow", "whenCanPreempt", "reclaimWithinCohort", "withinClusterQueue", "policy",
    "restartPolicy", "imagePullPolicy", "protocol", "kind", "apiVersion", "result", "action",
    "reportingController", "source", "component", "state", "priorityClassSource",
    "preference", "mode", "qosClass", "dnsPolicy", "schedulerName", "terminationMessagePolicy",
    "preemptionPolicy", "completionMode", "podReplacementPolicy", "apiGroup", "group", "resource",
    "subresource", "manager", "fieldsType", "level", "controllerName", "podSetUpdates",
})
RESOURCE_NAMES = frozenset({"cpu", "memory", "pods", "ephemeral-storage", "storage", "nvidia.com/gpu", "amd.com/gpu",
                            "google.com/tpu"})
STATIC_KEEP = frozenset({
    "", "true", "false", "none", "default", "main", "kueue", "kueue-system", "kube-system", "Never", "Always",
    "OnFailure", "IfNotPresent", *RESOURCE_NAMES,
})
_UID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_NUMBERISH = re.compile(r"^[+-]?\d+(\.\d+)?([eE][+-]?\d+)?[a-zA-Z]{0,2}$")
_NAMEISH = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,251}[A-Za-z0-9])?$")
_TOKEN = re.compile(r"[A-Za-z0-9_:][A-Za-z0-9_.:/@%-]*")
"""a run of name characters in free text (names, ns/name keys, host:port, user@host, IPv4/IPv6 addresses)"""
_IP_HINT = re.compile(r"\d\.\d|:[0-9A-Fa-f]*:")
_COMPOUND = re.compile(r"([/:@])")
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')
METRIC_NAME_LABELS = {"cluster_queue": "clusterqueue", "local_queue": "localqueue", "cohort": "cohort",
                      "parent_cohort": "cohort", "namespace": "ns", "exported_namespace": "ns", "node": "node",
                      "flavor": "resourceflavor"}
"""Kueue metric labels that carry object names (kueue-facts §5)"""
_DNS = re.compile(r"^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+([a-z][a-z0-9-]{0,61}[a-z0-9])$")
"""a lower-case dotted DNS name; group 1 is its last label"""
DNS_LAST_LABELS = frozenset({
    "internal", "local", "localdomain", "lan", "svc", "cluster", "corp", "home", "intranet", "private",
    "com", "net", "org", "io", "dev", "cloud", "ai", "app", "co", "edu", "gov", "biz", "info", "tech", "sh",
    "us", "uk", "de", "eu", "fr", "jp", "cn", "in", "ca", "au", "nl", "ch", "se", "kr", "br", "es", "it", "example",
})
"""the last labels that make a dotted word a host name in free text (`scheduler.go`, `config.yaml` are files,
`spec.template.spec` a field path)"""
KEPT_DOMAIN_SUFFIXES = ("k8s.io", "kubernetes.io", "kb.io", "kubeflow.org", "ray.io", "codeflare.dev")
"""Kubernetes, Kueue and job-framework API groups (and their webhooks' names): vocabulary, never hosts"""
KEPT_REGISTRIES = frozenset({"docker.io", "ghcr.io", "quay.io", "gcr.io", "nvcr.io", "mcr.microsoft.com",
                             "public.ecr.aws", "registry.k8s.io"})
"""public registry hosts: kept in free text (they identify nobody); the repository path after them is not"""
KEPT_DOMAINS = frozenset({"nvidia.com", "amd.com", "intel.com", "habana.ai", "google.com", "cloud.google.com",
                          "aws.amazon.com", *KEPT_REGISTRIES})
"""device-plugin resource prefixes and public registry hosts"""
LOG_NAME_KEYS = {"clusterQueue": "clusterqueue", "localQueue": "localqueue", "cohort": "cohort",
                 "workload": "workload", "job": "job", "node": "node", "namespace": "ns"}
"""structured controller-log keys whose value is an object reference ({name, namespace}) or a namespace"""


@dataclass
class Redactor:
    """Build the mapping over a whole snapshot first (`learn`), then rewrite (`apply`)."""

    keep_namespaces: frozenset[str] = KEEP_NAMESPACES
    mapping: dict[str, str] = field(default_factory=dict)
    categories: dict[str, dict[str, str]] = field(default_factory=dict)
    keep: set[str] = field(default_factory=lambda: set(STATIC_KEEP))
    _counters: dict[str, int] = field(default_factory=dict)
    _taken: set[str] = field(default_factory=set)
    _pattern: re.Pattern[str] | None = None
    _not_in_text: set[str] = field(default_factory=set)
    resources: set[str] = field(default_factory=lambda: set(RESOURCE_NAMES))
    """resource names (and label keys): never replaced, and never rewritten inside"""
    ips: dict[str, str] = field(default_factory=dict)
    domains: set[str] = field(default_factory=set)
    """API groups and label-key / resource-name prefixes seen in the snapshot: never host names"""
    hosts: dict[str, str] = field(default_factory=dict)

    # --- learning ----------------------------------------------------------------------------------------
    def _add(self, value: Any, category: str, structural: bool = False) -> None:
        """Learn a pseudonym for `value`. A `structural` name (read from a field that holds an object name)
        is replaced even when the same word is vocabulary elsewhere (a ClusterQueue named `default`)."""
        if not isinstance(value, str) or value in self.mapping:
            return
        if not (self._redactable(value) or (structural and self._structural_ok(value))):
            return
        n = self._counters.get(category, 0)
        while True:
            n += 1
            candidate = f"{category}-{n}"
            if candidate not in self._taken:
                break
        self._counters[category] = n
        self.mapping[value] = candidate
        self.categories.setdefault(category, {})[value] = candidate
        self._pattern = None

    def _structural_ok(self, value: str) -> bool:
        return bool(value) and value not in self.resources and value.lower() not in ("true", "false") \
            and not _UID.match(value) and not _NUMBERISH.match(value) and value not in self.keep_namespaces

    def _redactable(self, value: str) -> bool:
        return not (value in self.keep or value.lower() in ("true", "false") or _UID.match(value)
                    or _NUMBERISH.match(value) or value in self.keep_namespaces)

    def _collect_vocabulary(self, node: Any, depth: int = 0) -> None:
        if depth > 40:
            return
        if isinstance(node, dict):
            for k, v in node.items():
                if k in VOCABULARY_KEYS and isinstance(v, str):
                    self.keep.add(v)
                if k in ("apiVersion", "apiGroup", "group") and isinstance(v, str) and "." in v:
                    self.domains.add(v.partition("/")[0])  # kueue.x-k8s.io/v1beta2 → kueue.x-k8s.io
                if k in ("requests", "limits", "resourceUsage", "allocatable", "capacity", "total",
                         "flavors") and isinstance(v, dict):
                    self.resources.update(str(x) for x in v)  # resource names are the keys
                if k == "coveredResources" and isinstance(v, list):
                    self.resources.update(str(x) for x in v)
                if k == "resources" and isinstance(v, list):
                    self.resources.update(str(r.get("name")) for r in v if isinstance(r, dict) and r.get("name"))
                if k in ("labels", "annotations", "nodeSelector", "nodeLabels", "matchLabels") and isinstance(v, dict):
                    self.resources.update(str(x) for x in v if "/" in str(x))  # qualified keys: never rewritten
                if k == "levels" and isinstance(v, list):  # Topology levels: node label keys
                    self.keep.update(str(x.get("nodeLabel")) if isinstance(x, dict) else str(x) for x in v)
                self._collect_vocabulary(v, depth + 1)
        elif isinstance(node, list):
            for item in node:
                self._collect_vocabulary(item, depth + 1)

    def learn(self, raw: RawSnapshot) -> None:
        objs = sorted(raw.dicts(), key=_order)
        for obj in objs:
            self._taken.add(str((obj.get("metadata") or {}).get("name")))
            self._collect_vocabulary(obj)
        self.keep |= self.resources
        self.domains |= {r.partition("/")[0] for r in self.resources if "/" in r}
        # resource-group flavor lists are named objects, not resource names: do not keep their names
        if raw.manifest.get("cluster"):
            self._add(str(raw.manifest["cluster"]), "cluster")
        for obj in objs:
            if obj.get("kind") == "Namespace":
                self._add((obj.get("metadata") or {}).get("name"), "ns")
        for obj in objs:
            ns = (obj.get("metadata") or {}).get("namespace")
            if ns:
                self._add(ns, "ns")
        for obj in objs:
            if obj.get("kind") == "Node":
                self._add((obj.get("metadata") or {}).get("name"), "node", structural=True)
        for obj in objs:
            if obj.get("kind") == "Node":
                self._learn_addresses(obj)
        for obj in objs:
            self._learn_object(obj)
        for ns in raw.manifest.get("namespaces") or ():
            self._add(ns, "ns")
        # Names that only the metrics or the controller log mention (an object not collected, e.g. forbidden)
        for text in raw.metrics.values():
            self._learn_metric_labels(text)
        for text in raw.logs.values():
            self._learn_log_names(text)

    def _learn_addresses(self, node: dict[str, Any]) -> None:
        """A Node's host names (`status.addresses` of type Hostname, InternalDNS, ExternalDNS): by structure,
        whatever their shape (a bare `worker-3` too); IP addresses are handled as IPs."""
        status = node.get("status")
        for a in (status.get("addresses") if isinstance(status, dict) else None) or ():
            if isinstance(a, dict) and a.get("type") in ("Hostname", "InternalDNS", "ExternalDNS"):
                self._add(a.get("address"), "host", structural=True)

    def _learn_metric_labels(self, text: str) -> None:
        for line in text.splitlines():
            if line.startswith("#") or "{" not in line:
                continue
            metric, _, rest = line.partition("{")
            for name, value in _LABEL.findall(rest.partition("}")[0]):
                category = METRIC_NAME_LABELS.get(name)
                if name == "name" and metric.startswith("kueue_local_queue"):
                    category = "localqueue"
                if category and value not in self.keep_namespaces:
                    self._add(value, category, structural=True)

    def _learn_log_names(self, text: str) -> None:
        for line in text.splitlines():
            stripped = line.strip()
            if not stripped.startswith("{"):
                continue
            try:
                doc = json.loads(stripped)
            except ValueError:
                continue
            if not isinstance(doc, dict):
                continue
            for key, category in LOG_NAME_KEYS.items():
                value = doc.get(key)
                if isinstance(value, dict):
                    ns = value.get("namespace")
                    if isinstance(ns, str) and ns not in self.keep_namespaces:
                        self._add(ns, "ns", structural=True)
                        self._add(value.get("name"), category, structural=True)
                    elif ns is None:
                        self._add(value.get("name"), category, structural=True)
                elif isinstance(value, str) and category == "ns" and value not in self.keep_namespaces:
                    self._add(value, category, structural=True)

    def _learn_object(self, obj: dict[str, Any]) -> None:
        kind = str(obj.get("kind") or "object")
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace")
        system = ns in self.keep_namespaces
        if kind == "ProvisioningRequest" and not system:
            self._learn_derived(str(meta.get("name") or ""), "provisioningrequest")
        if not system and kind not in ("PendingWorkloadsSummary",):
            self._add(meta.get("name"), _category(kind), structural=True)
        for ref in meta.get("ownerReferences") or ():
            if isinstance(ref, dict) and not system:
                self._add(ref.get("name"), _category(str(ref.get("kind") or "owner")), structural=True)
        for key, value in (meta.get("labels") or {}).items():
            if key not in KEEP_LABEL_VALUE_KEYS and not (system and _kueue_or_k8s_key(key)):
                self._add(value, "value")
        for key, value in (meta.get("annotations") or {}).items():
            if key in KEEP_LABEL_VALUE_KEYS or not isinstance(value, str):
                continue
            if _NAMEISH.match(value) and len(value) <= 253:
                self._add(value, "value")
        self._learn_refs(obj, kind, 0)

    def _learn_derived(self, name: str, category: str) -> None:
        """Kueue names a ProvisioningRequest `<workload>-<admission check>-<attempt>`, and kueuediag finds it by
        that name: its pseudonym is built the same way from the parts' pseudonyms, keeping the link."""
        if name in self.mapping:
            return
        head, sep, attempt = name.rpartition("-")
        if not sep or not attempt.isdigit():
            return
        for check, check_pseudo in self.categories.get("admissioncheck", {}).items():
            workload_name = head.removesuffix(f"-{check}")
            if workload_name != head and workload_name in self.categories.get("workload", {}):
                pseudo = f"{self.mapping[workload_name]}-{check_pseudo}-{attempt}"
                self.mapping[name] = pseudo
                self.categories.setdefault(category, {})[name] = pseudo
                self._pattern = None
                return

    def _learn_refs(self, node: Any, kind: str, depth: int) -> None:
        if depth > 40:
            return
        if isinstance(node, dict):
            for k, v in node.items():
                if k in REF_KEYS and isinstance(v, str):
                    if not (k == "reportingInstance" and _is_system_instance(v)):
                        self._add(v, REF_KEYS[k], structural=True)
                elif k in ("involvedObject", "regarding", "related", "priorityClassRef", "targetRef") \
                        and isinstance(v, dict):
                    if v.get("namespace") not in self.keep_namespaces:
                        self._add(v.get("name"), _category(str(v.get("kind") or "object")), structural=True)
                    self._add(v.get("namespace"), "ns")
                elif k in ("nodeSelector", "nodeLabels", "matchLabels") and isinstance(v, dict):
                    for lk, lv in v.items():
                        if lk not in KEEP_LABEL_VALUE_KEYS:
                            self._add(lv, "value")
                elif k == "values" and isinstance(v, list):
                    for x in v:
                        self._add(x, "value")
                elif k in ("tolerations", "taints") and isinstance(v, list):
                    for t in v:
                        if isinstance(t, dict):
                            self._add(t.get("value"), "value")
                elif k == "flavors" and isinstance(v, list):  # ClusterQueue/Cohort resource groups, usage
                    for f in v:
                        if isinstance(f, dict):
                            self._add(f.get("name"), "resourceflavor", structural=True)
                elif k == "flavors" and isinstance(v, dict):  # podSetAssignments: resource → flavor
                    for fv in v.values():
                        self._add(fv, "resourceflavor", structural=True)
                elif k in ("flavorsUsage", "flavorsReservation", "flavorUsage") and isinstance(v, list):
                    for f in v:
                        if isinstance(f, dict):
                            self._add(f.get("name"), "resourceflavor", structural=True)
                elif k in ("admissionChecks",) and isinstance(v, list):
                    for a in v:
                        self._add(a.get("name") if isinstance(a, dict) else a, "admissioncheck")
                elif k in IMAGE_KEYS and isinstance(v, str) and not _public_kueue_image(v):
                    self._add(v, "image")
                elif k == "images" and isinstance(v, list):  # Node.status.images[].names
                    for im in v:
                        for n in (im.get("names") or []) if isinstance(im, dict) else ():
                            self._add(n, "image")
                elif k == "topologyAssignment" and isinstance(v, dict):
                    self._learn_topology(v)
                if k not in ("metadata",):
                    self._learn_refs(v, kind, depth + 1)
        elif isinstance(node, list):
            for item in node:
                self._learn_refs(item, kind, depth + 1)

    def _learn_topology(self, node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "levels":
                    continue
                if isinstance(v, str) and k in ("prefix", "suffix", "universal"):
                    self._add(v, "value")
                self._learn_topology(v)
        elif isinstance(node, list):
            for item in node:
                if isinstance(item, str):
                    self._add(item, "value")
                else:
                    self._learn_topology(item)

    # --- applying ---------------------------------------------------------------------------------------
    def text(self, value: str) -> str:
        """Replace identifiers and IP addresses embedded in free text, token by token (see the module doc)."""
        if value in self.mapping:
            return self.mapping[value]
        if self._pattern is None:
            self._pattern = _TOKEN  # marks the in-text word set as current
            plain = {w for c in ("value", "annotation") for w in self.categories.get(c, {})
                     if not re.search(r"[0-9._-]", w)}
            self._not_in_text = plain | {w for w in self.mapping if len(w) < 3}
        return _TOKEN.sub(self._token, value)

    def _token(self, m: re.Match[str]) -> str:
        tok = m.group(0)
        core = tok.rstrip(".:/@-")  # sentence punctuation after a name
        return self._rewrite(core) + tok[len(core):]

    def _rewrite(self, tok: str) -> str:
        if not tok:
            return tok
        hit = self.mapping.get(tok)
        if hit is not None and tok not in self._not_in_text:
            return hit
        ip = self._ip(tok)
        if ip is not None:
            return ip
        if tok in self.resources:
            return tok
        if not _COMPOUND.search(tok):
            return self._host(tok)
        # namespace/name, host:port, user@host, image:tag: each part on its own
        parts = _COMPOUND.split(tok)
        out = []
        after_host = False  # the path of an image or URL on a host: repository and org name somebody
        for i, p in enumerate(parts):
            if p in "/:@":
                out.append(p)
                after_host = after_host and p == "/"  # a tag or digest (`:v0.19.2`, `@sha256`) is not a path
                continue
            rewritten = self._rewrite(p)
            if after_host and rewritten == p and p not in self.keep and _NAMEISH.match(p):
                rewritten = self._path(p)
            out.append(rewritten)
            nxt = parts[i + 1] if i + 1 < len(parts) else ""
            if nxt == "/" and (p in self.hosts or p in KEPT_REGISTRIES or (p in self.mapping and "." in p)):
                after_host = True
        return "".join(out)

    def _path(self, segment: str) -> str:
        """A path segment after a registry or host (`ghcr.io/ORG/REPO`): a consistent `path-N`."""
        known = self.hosts.get(segment)
        if known is None:
            known = f"path-{len(self.categories.get('path', {})) + 1}"
            self.hosts[segment] = known
            self.categories.setdefault("path", {})[segment] = known
        return known

    def _host(self, tok: str) -> str:
        """A dotted DNS name in free text → a consistent `host-N`; anything else (and kept domains) unchanged."""
        m = _DNS.match(tok)
        if m is None or m.group(1) not in DNS_LAST_LABELS or self._kept_domain(tok):
            return tok
        known = self.hosts.get(tok)
        if known is None:
            n = len(self.categories.get("host", {})) + 1
            known = f"host-{n}"
            while known in self._taken or known in self.mapping.values():
                n += 1
                known = f"host-{n}"
            self.hosts[tok] = known
            self.categories.setdefault("host", {})[tok] = known
        return known

    def _kept_domain(self, name: str) -> bool:
        """An API group, a label-key or resource-name prefix, a public registry, or a Kueue/Kubernetes system
        service (`kueue-webhook-service.kueue-system.svc`): vocabulary, not somebody's host."""
        if name in self.domains or name in KEPT_DOMAINS:
            return True
        if any(name == d or name.endswith("." + d) for d in KEPT_DOMAIN_SUFFIXES):
            return True
        labels = name.split(".")
        return any(label in self.keep_namespaces for label in labels[1:])

    def _ip(self, tok: str) -> str | None:
        """A consistent documentation address for an IP address (RFC 5737 / RFC 3849), None for anything else."""
        if not _IP_HINT.search(tok) and "::" not in tok:
            return None
        try:
            addr = ipaddress.ip_address(tok.split("%")[0])
        except ValueError:
            return None
        if addr.is_unspecified or addr.is_loopback:
            return tok
        known = self.ips.get(tok)
        if known is None:
            n = len(self.ips) + 1
            known = f"192.0.2.{n % 254 + 1}" if n < 254 and addr.version == 4 else (
                f"198.51.100.{n % 254 + 1}" if addr.version == 4 and n < 508 else f"2001:db8::{n:x}")
            if addr.version == 4 and n >= 508:
                known = f"203.0.113.{n % 254 + 1}"
            self.ips[tok] = known
            self.categories.setdefault("ip", {})[tok] = known
        return known

    def value(self, v: Any, key: str | None = None) -> Any:
        if isinstance(v, str):
            if v in self.mapping:
                return self.mapping[v]
            if key == "providerID":  # gce://project/zone/node: the project and zone are not ours to share
                return "redacted://" + self.text(v.rstrip("/").rpartition("/")[2])
            if key in VOCABULARY_KEYS or key in ("uid", "resourceVersion", "creationTimestamp"):
                return v
            return self.text(v)  # names embedded in messages, paths, URLs, selectors...
        if isinstance(v, dict):
            return {k: self.value(x, k) for k, x in v.items()}
        if isinstance(v, list):
            return [self.value(x, key) for x in v]
        return v

    def obj(self, obj: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = self.value(copy.deepcopy(obj))
        meta = out.get("metadata")
        if isinstance(meta, dict):
            meta.pop("generateName", None)
            ann = meta.get("annotations")
            if isinstance(ann, dict):
                for k, v in list(ann.items()):
                    if isinstance(v, str) and v == ((obj.get("metadata") or {}).get("annotations") or {}).get(k) \
                            and k not in KEEP_LABEL_VALUE_KEYS and not _kueue_or_k8s_key(k):
                        ann[k] = self._opaque(v)
        return out

    def _opaque(self, v: str) -> str:
        """An annotation value that is not an identifier (free text, JSON): a stable pseudonym."""
        rewritten = self.text(v)
        if rewritten != v or not v:
            return rewritten
        self._add(v, "annotation")
        return self.mapping.get(v, v)

    def logs(self, text: str) -> str:
        out = []
        for line in text.splitlines(keepends=True):
            stripped = line.strip()
            if stripped.startswith("{"):
                try:
                    doc = json.loads(stripped)
                except ValueError:
                    out.append(self.text(line))
                    continue
                out.append(json.dumps(self._log_value(doc), separators=(",", ":")) + "\n")
            else:
                out.append(self.text(line))
        return "".join(out)

    def _log_value(self, v: Any) -> Any:
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, dict):
            return {k: self._log_value(x) for k, x in v.items()}
        if isinstance(v, list):
            return [self._log_value(x) for x in v]
        return v

    def metrics(self, text: str) -> str:
        def label(m: re.Match[str]) -> str:
            raw_value = m.group(2)
            return f'{m.group(1)}="{self.text(raw_value)}"'

        return re.sub(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"', label, text)

    def path(self, rel: str) -> str:
        return "/".join(self.mapping.get(p, p) if "." not in p else _map_stem(self.mapping, p)
                        for p in rel.split("/"))

    def apply(self, raw: RawSnapshot) -> RawSnapshot:
        manifest = dict(raw.manifest)
        if manifest.get("cluster"):
            manifest["cluster"] = self.mapping.get(str(manifest["cluster"]), "cluster-1")
        if isinstance(manifest.get("namespaces"), list):
            manifest["namespaces"] = [self.mapping.get(n, n) for n in manifest["namespaces"]]
        manifest["errors"] = [{"what": self.text(str(e.get("what", ""))), "error": self.text(str(e.get("error", "")))}
                              for e in manifest.get("errors") or ()]
        if isinstance(manifest.get("notes"), list):
            manifest["notes"] = [self.text(str(n)) for n in manifest["notes"]]
        manifest["redacted"] = True
        objects: list[dict[str, Any] | Held] = [self.obj(o) for o in raw.dicts()]
        metrics = {self.path(k): self.metrics(v) for k, v in raw.metrics.items()}
        logs = {self.path(k): self.logs(v) for k, v in raw.logs.items()}
        return RawSnapshot(source=raw.source, manifest=manifest, objects=objects, metrics=metrics, logs=logs)

    def map_document(self) -> dict[str, Any]:
        """The mapping for `--redact-map` (owner only: it reverses the redaction)."""
        return {"format": "kueuediag-redaction-map/v1",
                "mapping": dict(sorted({**self.mapping, **self.ips, **self.hosts}.items())),
                "byCategory": {c: dict(sorted(m.items())) for c, m in sorted(self.categories.items())}}


def redact(raw: RawSnapshot, keep_namespaces: Iterable[str] = ()) -> tuple[RawSnapshot, dict[str, Any]]:
    """Redact a RawSnapshot; returns (redacted snapshot, mapping document)."""
    r = Redactor(keep_namespaces=KEEP_NAMESPACES | frozenset(keep_namespaces))
    r.learn(raw)
    out = r.apply(raw)
    return out, r.map_document()


def read_map(path: str | os.PathLike[str]) -> dict[str, str]:
    """The real-name → pseudonym table of a `snapshot --redact` map file (one-line error when unreadable)."""
    try:
        doc = json.loads(Path(path).read_text())
    except OSError as exc:
        raise InputError(f"{path}: cannot read the redaction map: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise InputError(f"{path}: not a redaction map (invalid JSON: {exc})") from None
    names = doc.get("mapping") if isinstance(doc, dict) else None
    if not isinstance(names, dict):
        raise InputError(f"{path}: not a redaction map (no 'mapping' table)")
    return {str(k): str(v) for k, v in names.items()}


def redact_target(recorded: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """A target (`{"target": "job/x", "namespace": "team-a"}`) with name and namespace replaced by pseudonyms."""
    text = str(recorded.get("target") or "")
    kind, sep, name = text.rpartition("/")
    ns = recorded.get("namespace")
    return {"target": f"{kind}{sep}{names.get(name, name)}",
            "namespace": names.get(str(ns), ns) if ns is not None else None}


def _order(obj: dict[str, Any]) -> tuple[int, str, str, str]:
    kind = str(obj.get("kind") or "")
    meta = obj.get("metadata") or {}
    rank = {"Namespace": 0, "Node": 1, "ClusterQueue": 2, "Cohort": 3, "ResourceFlavor": 4, "LocalQueue": 5,
            "Workload": 6}.get(kind, 9)
    return rank, kind, str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _category(kind: str) -> str:
    return re.sub(r"[^a-z0-9]", "", kind.lower()) or "object"


def _kueue_or_k8s_key(key: str) -> bool:
    prefix = key.partition("/")[0] if "/" in key else ""
    return prefix.endswith(("kueue.x-k8s.io", "kubernetes.io", "k8s.io"))


def _is_system_instance(instance: str) -> bool:
    """Reporting instances that name a component, not a machine (`kueue-controller-manager-…`)."""
    return instance.startswith(("kueue-controller-manager", "default-scheduler", "kube-"))


def _public_kueue_image(image: str) -> bool:
    return image.startswith(("registry.k8s.io/kueue/", "us-central1-docker.pkg.dev/k8s-staging-images/kueue/"))


def _map_stem(mapping: dict[str, str], part: str) -> str:
    stem, dot, ext = part.rpartition(".")
    return mapping.get(stem, stem) + dot + ext if stem else part
