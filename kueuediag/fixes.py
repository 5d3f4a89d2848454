"""Every remediation is checked against the model before it is printed.

Checks attach structured fixes (:class:`~kueuediag.models.Fix`): plain words plus, when the change can be
expressed on snapshot objects, a :class:`~kueuediag.models.Patch` (JSON merge patch, JSON patch, or delete).
The engine calls :func:`verify` once per diagnosis: each patch is applied to a *copy* of the snapshot, the target
is diagnosed again with the same checks, and the fix is labelled

* ``verified`` — the finding's cause is gone for the target;
* ``stop-gap`` — the check declared it relief rather than a cure, or the patch did not remove the cause alone
  but the check asked for it to be kept as a stop-gap;
* dropped — a patch that does not make the cause go away is never printed.

The printed ``kubectl`` command is generated from the same patch (:func:`command`), so the text and what was
checked cannot disagree. Remediations that are only text (the checks' older `remediation` strings) are sorted by
:func:`classify`: a command that changes the cluster but cannot be applied to a snapshot (cordon, drain, an
upgrade) is a ``stop-gap`` when the check says so or when it only relieves the symptom (node operations);
read-only commands and prose are ``advice`` (next steps, not fixes).
"""

from __future__ import annotations

import copy
import json
import re
import shlex
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

from kueuediag.models import Finding, Fix, FixStatus, Patch, replaced
from kueuediag.snapshot.held import Held
from kueuediag.snapshot.model import Snapshot
from kueuediag.snapshot.reader import RawSnapshot

_KUBECTL = re.compile(r"kubectl(?:\s+-n\s+\S+)?\s+(\w[\w-]*)")
_MUTATING = frozenset({"delete", "patch", "edit", "label", "annotate", "scale", "apply", "replace", "set",
                       "cordon", "drain", "uncordon", "taint", "rollout", "create"})
_RELIEF = frozenset({"cordon", "drain", "uncordon", "taint"})
"""node operations: they relieve a placement problem now; the cause (packing, sizing) stays"""
UNSIMULATED = {
    "rollout": "a restart changes no object a snapshot holds, so re-diagnosing cannot show its effect; it only "
               "helps a wedged controller",
    **dict.fromkeys(_RELIEF, "a node operation relieves the placement now; the cause (packing, sizing, a broken "
                             "node) stays"),
}
"""why a cluster change that is printed as a stop-gap cannot be checked on a snapshot copy"""
RELIEF = "it relieves the symptom now; the cause named above stays"
"""the reason of a stop-gap the check itself declared"""
_PLACEHOLDER = re.compile(r"<[a-z][^>]*>|\.\.\.|…")

KIND_RESOURCES = {
    "ClusterQueue": "clusterqueue", "LocalQueue": "localqueue", "ResourceFlavor": "resourceflavor",
    "Workload": "workload", "Cohort": "cohort", "Deployment": "deployment", "Pod": "pod", "Job": "job",
    "Node": "node", "Namespace": "namespace", "JobSet": "jobset",
}


def command(patch: Patch) -> str:
    """The kubectl command that performs `patch` (what the user copies)."""
    resource = KIND_RESOURCES.get(patch.kind, patch.kind.lower())
    ns = f" -n {patch.namespace}" if patch.namespace else ""
    flags = "".join(f" {f}" for f in patch.flags)
    if patch.create:
        return f"echo '{json.dumps(patch.create, separators=(',', ':'))}' | kubectl create -f -"
    if patch.delete:
        return f"kubectl delete {resource} {patch.name}{ns}{flags}"
    if patch.json_ops:
        body = json.dumps(list(patch.json_ops), separators=(",", ":"))
        return f"kubectl patch {resource} {patch.name}{ns} --type json -p '{body}'{flags}"
    body = json.dumps(patch.merge, separators=(",", ":"))
    return f"kubectl patch {resource} {patch.name}{ns} --type merge -p '{body}'{flags}"


_CREATE = re.compile(r"^echo '(?P<body>\{.*\})' \| kubectl create -f -$")
"""the one-line form of `kubectl create` for a whole object (what :func:`command` prints for a create)"""


def commands_in(text: str) -> list[str]:
    """kubectl commands quoted in a remediation text (backticks), or the text itself when it is one."""
    quoted = re.findall(r"`([^`]+)`", text)
    found = [q for q in quoted if q.lstrip().startswith("kubectl ") or _CREATE.match(q.strip())]
    bare = re.sub(r"^stop-gap:\s*", "", text.strip(), flags=re.I)
    if not found and bare.startswith("kubectl ") and "`" not in bare:
        found = [bare.split("  #")[0].strip()]
    return found


_RESOURCE_KINDS = {v: k for k, v in KIND_RESOURCES.items()} | {
    "ns": "Namespace", "cq": "ClusterQueue", "lq": "LocalQueue", "rf": "ResourceFlavor", "wl": "Workload",
    "deploy": "Deployment", "po": "Pod"}


def parse_command(cmd: str) -> Patch | None:
    """`kubectl patch|label|annotate|delete …` on one named object → the Patch it performs, else None.

    This is how the checks' text remediations become checkable: a command that parses is applied to a copy of
    the snapshot like any structured fix. Anything else (edit, apply, rollout, a plugin) cannot be modelled.
    """
    created = _CREATE.match(cmd.strip())
    if created:
        try:
            obj = json.loads(created.group("body"))
        except ValueError:
            return None
        if not isinstance(obj, dict):
            return None
        items = _created(obj)
        metas = [i.get("metadata") for i in items]
        if not items or not all(isinstance(m, dict) and m.get("name") and i.get("kind")
                                for i, m in zip(items, metas, strict=True)):
            return None
        first = items[0]["metadata"]
        return Patch(kind=str(items[0]["kind"]), name=",".join(str(i["metadata"]["name"]) for i in items),
                    namespace=first.get("namespace"), create=obj)
    try:
        words = shlex.split(cmd)
    except ValueError:
        return None
    if len(words) < 4 or words[0] != "kubectl":
        return None
    ns = None
    rest: list[str] = []
    i = 1
    while i < len(words):
        if words[i] in ("-n", "--namespace") and i + 1 < len(words):
            ns, i = words[i + 1], i + 2
            continue
        rest.append(words[i])
        i += 1
    if len(rest) < 3:
        return None
    verb, resource, name, args = rest[0], rest[1].split(".")[0].lower(), rest[2], rest[3:]
    kind = _RESOURCE_KINDS.get(resource) or _RESOURCE_KINDS.get(resource.rstrip("s"))
    if kind is None or "/" in name or name.startswith("-"):
        return None
    if verb == "delete":
        return Patch(kind=kind, name=name, namespace=ns, delete=True,
                    flags=tuple(a for a in args if a.startswith("--")))
    if verb in ("label", "annotate"):
        field = "labels" if verb == "label" else "annotations"
        changes: dict[str, Any] = {}
        for a in args:
            if a.startswith("-"):
                continue
            if a.endswith("-") and "=" not in a:
                changes[a[:-1]] = None
            elif "=" in a:
                key, _, value = a.partition("=")
                changes[key] = value
            else:
                return None
        return Patch(kind=kind, name=name, namespace=ns, merge={"metadata": {field: changes}}) \
            if changes else None
    if verb == "patch" and "--type" in args and "-p" in args:
        kind_of_patch = args[args.index("--type") + 1] if args.index("--type") + 1 < len(args) else ""
        try:
            body = json.loads(args[args.index("-p") + 1])
        except (ValueError, IndexError):
            return None
        if kind_of_patch == "merge" and isinstance(body, dict):
            return Patch(kind=kind, name=name, namespace=ns, merge=body)
        if kind_of_patch == "json" and isinstance(body, list):
            return Patch(kind=kind, name=name, namespace=ns, json_ops=tuple(body))
    return None


@lru_cache(maxsize=4096)
def classify(text: str) -> Fix:
    """A text-only remediation → a Fix with an honest status (see the module docstring).

    Pure and its Fix frozen, so it is cached: `health --all-pending` verifies the same remediation texts (a
    queue's commands, the recipes) for thousands of workloads."""
    stop_gap = text.lower().startswith("stop-gap")
    cmds = commands_in(text)
    verbs = {m.group(1) for c in cmds for m in [_KUBECTL.match(c.strip())] if m}
    verbs |= {"create" for c in cmds if _CREATE.match(c.strip())}
    changes = bool(verbs & _MUTATING)
    copyable = [c for c in cmds if not _PLACEHOLDER.search(c)]
    mutating = [c for c in copyable
                if _CREATE.match(c.strip()) or ((m := _KUBECTL.match(c.strip())) and m.group(1) in _MUTATING)]
    cmd = (mutating or copyable)[0] if (mutating or copyable) else None
    text = re.sub(r"^stop-gap:\s*", "", text.strip(), flags=re.I) if stop_gap else text
    text = text[:1].upper() + text[1:]
    patch = parse_command(cmd) if cmd and changes else None
    if patch is not None:
        return Fix(text=text, command=cmd, patch=patch, status=FixStatus.UNVERIFIED, stop_gap=stop_gap)
    unsimulated = sorted(verbs & UNSIMULATED.keys())
    if changes and (stop_gap or unsimulated):
        return Fix(text=text, command=cmd, status=FixStatus.STOP_GAP, stop_gap=True,
                    reason=UNSIMULATED[unsimulated[0]] if unsimulated else RELIEF)
    if changes and cmd is not None:
        return Fix(text=text, command=cmd, status=FixStatus.UNVERIFIED, stop_gap=stop_gap)
    if stop_gap:
        return Fix(text=text, command=cmd, status=FixStatus.STOP_GAP, stop_gap=True, reason=RELIEF)
    return Fix(text=text, command=cmd if not changes else None, status=FixStatus.ADVICE)


ADMIN_CHOICES = {
    "namespace-not-selected": "This undoes a choice of the ClusterQueue's administrator (spec.namespaceSelector "
                              "decides which namespaces may use it): ask the ClusterQueue's owner first.",
    "not-managed": "If the namespace is outside managedJobsNamespaceSelector or the integration is off, that is the "
                   "Kueue administrator's choice (Kueue manager config): ask them before changing it.",
    "localqueue-stopped": "Someone stopped this LocalQueue on purpose (spec.stopPolicy): ask the namespace's queue "
                          "owner why before resuming it.",
    "clusterqueue-inactive": "If the ClusterQueue was stopped (spec.stopPolicy), that was deliberate: ask the Kueue "
                             "administrators before resuming it.",
    "deactivated": "The Workload was deactivated (spec.active=false) by Kueue after too many requeues or by a "
                   "person: find out why before reactivating it, or it will fail the same way.",
}
"""causes whose fix may undo a deliberate administrator choice: the fix says so and names whom to ask"""


def all_fixes(finding: Finding) -> list[Fix]:
    """The finding's structured fixes, then its text remediations (each once, in the check's order); fixes that
    change the cluster for a cause an administrator may have chosen carry a note saying whom to ask."""
    out = list(finding.fixes)
    texts = {f.text for f in out}
    patches = {command(f.patch): f.patch for f in out if f.patch is not None}
    for c in (classify(t) for t in finding.remediation if t not in texts):
        same = patches.get(c.command or "")
        out.append(replaced(c, patch=same) if same is not None else c)  # e.g. with its assumed object
    note = ADMIN_CHOICES.get(finding.cause)
    if note:
        out = [replaced(x, note=x.note or note)
               if x.status is not FixStatus.ADVICE or x.patch is not None else x for x in out]
    return out


# --- applying patches to a copy of the snapshot ---------------------------------------------------------------
def _merge(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge(result.get(key), value)
    return result


def _json_patch(doc: dict[str, Any], ops: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """RFC 6902 subset: add, replace, remove (what fixes need)."""
    out = copy.deepcopy(doc)
    for op in ops:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in str(op["path"]).split("/")[1:]]
        parent: Any = out
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent[part]
        last = parts[-1]
        if isinstance(parent, list):
            index = len(parent) if last == "-" else int(last)
            if op["op"] == "add":
                parent.insert(index, op["value"])
            elif op["op"] == "replace":
                parent[index] = op["value"]
            else:
                del parent[index]
        elif op["op"] == "remove":
            parent.pop(last, None)
        else:
            parent[last] = op["value"]
    return out


def _identity(obj: dict[str, Any] | Held) -> tuple[Any, Any, Any]:
    """(kind, namespace, name) of a decoded object or a held one (which stays undecoded)."""
    if isinstance(obj, Held):
        return obj.kind, obj.namespace, obj.name
    meta = obj.get("metadata") or {}
    return obj.get("kind"), meta.get("namespace"), meta.get("name")


def _decoded(obj: dict[str, Any] | Held) -> dict[str, Any]:
    return obj.obj() if isinstance(obj, Held) else obj


def _matches(obj: dict[str, Any] | Held, patch: Patch) -> bool:
    kind, namespace, name = _identity(obj)
    return bool(kind == patch.kind and name == patch.name and (patch.namespace is None or namespace == patch.namespace))


def _is(obj: dict[str, Any] | Held, kind: str, namespace: str | None, name: str) -> bool:
    return _identity(obj) == (kind, namespace, name)


def _forget_pending(workload: dict[str, Any]) -> dict[str, Any]:
    """The target Workload as Kueue leaves it for the next scheduling attempt: its False conditions (the reasons
    it was pending, written before the change) are dropped; what it holds (True conditions) is kept."""
    out = copy.deepcopy(workload)
    status = out.get("status") or {}
    conds = status.get("conditions")
    if isinstance(conds, list):
        status["conditions"] = [c for c in conds if not (isinstance(c, dict) and c.get("status") == "False")]
    return out


def apply(raw: RawSnapshot, patch: Patch, pending: tuple[str | None, str] | None = None) -> RawSnapshot | None:
    """A copy of `raw` with `patch` applied; None when the named object is not in the snapshot (and the patch
    carries no `assumed` object for a partial snapshot), or when a create names an object that already exists.

    A patched object loses its `status` (controllers rewrite it from the new spec), and the target Workload
    (`pending`: namespace, name) loses the False conditions that recorded why it waited before the change, so the
    checks judge the new spec instead of stale messages."""
    objects: list[dict[str, Any] | Held] = []
    if patch.create:
        items = _created(patch.create)
        if any(_is(o, str(i.get("kind")), (i.get("metadata") or {}).get("namespace"),
                   str((i.get("metadata") or {}).get("name"))) for i in items for o in raw.objects):
            return None  # `kubectl create` fails on an existing object: the fix would not run
        # Kueue re-evaluates whether its queues are active when an object they reference appears
        kept = [_forget_active(_decoded(o)) if _identity(o)[0] in ("ClusterQueue", "LocalQueue") else o
                for o in raw.objects]
        return _with_target_reset(raw, [*kept, *copy.deepcopy(items)], pending)
    source = list(raw.objects)
    if patch.assumed and not any(_matches(obj, patch) for obj in raw.objects):
        source.append(copy.deepcopy(patch.assumed))
    hit = False
    for obj in source:
        if not _matches(obj, patch):
            objects.append(obj)
            continue
        hit = True
        if patch.delete:
            continue
        changed = _merge(_decoded(obj), patch.merge) if patch.merge else _decoded(obj)
        changed = _json_patch(changed, patch.json_ops) if patch.json_ops else copy.deepcopy(changed)
        changed.pop("status", None)  # written by controllers from the old spec: they rewrite it after the change
        objects.append(changed)
    if not hit:
        return None
    return _with_target_reset(raw, objects, pending)


def _created(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The objects one `kubectl create -f -` makes: the items of a List, else the object itself."""
    if obj.get("kind") == "List":
        return [i for i in obj.get("items") or () if isinstance(i, dict)]
    return [obj]


def _forget_active(queue: dict[str, Any]) -> dict[str, Any]:
    status = queue.get("status")
    conds = status.get("conditions") if isinstance(status, dict) else None
    if not isinstance(conds, list):
        return queue
    out = copy.deepcopy(queue)
    out["status"]["conditions"] = [c for c in conds if not (isinstance(c, dict) and c.get("type") == "Active")]
    return out


def _with_target_reset(raw: RawSnapshot, objects: list[dict[str, Any] | Held],
                       pending: tuple[str | None, str] | None) -> RawSnapshot:
    if pending is not None:
        objects = [_forget_pending(_decoded(o)) if _is(o, "Workload", *pending) else o for o in objects]
    return RawSnapshot(source=raw.source, manifest=raw.manifest, objects=objects, metrics=raw.metrics,
                       logs=raw.logs)


Rediagnose = Callable[[Snapshot, str], list[Finding]]
"""run check `code` for the same target on a patched snapshot; returns its findings"""


def verify(snap: Snapshot, findings: list[Finding], rediagnose: Rediagnose,
           pending: tuple[str | None, str] | None = None) -> list[Finding]:
    """Label every fix of every finding; drop patches that do not help.

    A patch is checked against the cause of the finding it belongs to: after applying it, the check that found
    the cause no longer finds it (see :func:`_resolved`). Every printed remediation is checked (`-v` prints
    them all); a re-diagnosis runs only the one owning check, so this stays cheap.
    """
    out: list[Finding] = []
    for f in findings:
        fixes = all_fixes(f)
        if any(x.patch for x in fixes):
            labelled = [_verified(snap, f, x, rediagnose, pending) for x in fixes]
            fixes = [x for x in labelled if x is not None]
        out.append(replaced(f, fixes=tuple(fixes)))
    return _same_command_same_status(out)


def _same_command_same_status(findings: list[Finding]) -> list[Finding]:
    """A text remediation quoting the exact command of a verified patch was checked by that patch."""
    verified = {x.command: x for f in findings for x in f.fixes
                if x.patch is not None and x.command and x.status in (FixStatus.VERIFIED, FixStatus.STOP_GAP)}
    out = []
    for f in findings:
        if not any(x.patch is None and x.command in verified for x in f.fixes):
            out.append(f)  # nothing to relabel (the common case): no copy
            continue
        fixes = tuple(replaced(verified[x.command], text=x.text)
                      if x.patch is None and x.command in verified else x for x in f.fixes)
        out.append(replaced(f, fixes=fixes))
    return out


def _verified(snap: Snapshot, finding: Finding, fix: Fix, rediagnose: Rediagnose,
              pending: tuple[str | None, str] | None) -> Fix | None:
    if fix.patch is None:
        return fix
    raw = apply(snap.raw, fix.patch, pending)
    if raw is None:  # the object is gone: never print a command naming it
        return None
    after = rediagnose(Snapshot(raw, now=snap.now), finding.code)
    # The check that found the cause must no longer find it. Other checks may still echo it from history (log
    # lines, metric series) that no patch can change; they are not the state the fix acts on.
    gone = all(resolved(finding, a) for a in after if a.cause == finding.cause
               and a.about_target == finding.about_target and a.code == finding.code)
    cmd = fix.command or command(fix.patch)
    if gone:
        return replaced(fix, status=FixStatus.STOP_GAP if fix.stop_gap else FixStatus.VERIFIED,
                        command=cmd, reason=fix.reason or (RELIEF if fix.stop_gap else ""))
    if fix.stop_gap:
        return replaced(fix, status=FixStatus.STOP_GAP, command=cmd,
                        reason=fix.reason or "re-diagnosing with the change applied still finds the cause: it only "
                                             "relieves it")
    return None


def resolved(before: Finding, after: Finding) -> bool:
    """Whether `after` (the same check and cause, re-diagnosed on the patched copy) no longer holds what `before`
    found. A finding made of independent blockers lists them in `data["blockers"]` (a namespace outside the
    managed selector, then a job to resubmit; an untolerated taint, then pods to re-release): a change that
    removes every blocker of `before` cured what was found, even when a follow-up step remains under the same
    cause. Without that list the cause must be gone altogether."""
    was, now = before.data.get("blockers"), after.data.get("blockers")
    if not isinstance(was, list) or not was or not isinstance(now, list):
        return False
    return not set(map(str, was)) & set(map(str, now))


def first_fix(findings: Iterable[Finding]) -> Fix | None:
    """The fix the verdict box shows: the first verified one of the top finding, else its first stop-gap,
    else its first unverified or advice line; None when the top finding has no remediation at all."""
    for f in findings:
        fixes = list(f.fixes)
        for status in (FixStatus.VERIFIED, FixStatus.STOP_GAP, FixStatus.UNVERIFIED, FixStatus.ADVICE):
            for x in fixes:
                if x.status is status:
                    return x
        return None
    return None
