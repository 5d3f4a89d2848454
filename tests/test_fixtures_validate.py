"""Every kueue.x-k8s.io object in every fixture validates against the upstream CRD schema for its apiVersion.

Schemas come from ``<repo>/../shared/kueue-reference/kueue.x-k8s.io_*.yaml`` (the v0.19.2 CRDs, which serve both
v1beta1 and v1beta2). The OpenAPI v3 schema is turned into a JSON Schema (Draft 7):

* ``x-kubernetes-int-or-string: true`` → integer or string (the CRDs pair it with ``anyOf`` + a quantity pattern);
* ``nullable: true`` → null is allowed too;
* ``x-kubernetes-preserve-unknown-fields: true`` → open object; every other object with ``properties`` is
  *closed* (``additionalProperties: false``): the API server prunes unknown fields, so a real dump never has
  them, and a typo or a v1beta2 field in a v1beta1 object must fail here;
* every other ``x-kubernetes-*`` extension (list types, CEL validations, embedded resources) is ignored.

The same walk also refuses Secrets (and env vars that carry literal secret-looking values) in fixtures.
"""

from __future__ import annotations

import io
import json
import re
import tarfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
EXAMPLES = ROOT / "kueuediag" / "data" / "examples"
REFERENCE = ROOT.parent / "shared" / "kueue-reference"
GROUP = "kueue.x-k8s.io"
OBJECT_SUFFIXES = (".yaml", ".yml", ".json")
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar")
SECRETISH_ENV = re.compile(r"(PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIAL)", re.I)

Obj = dict[str, Any]
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


# --- collecting fixture files and their objects ------------------------------------------------------------


def _fixture_files() -> list[Path]:
    files: list[Path] = []
    for base in (FIXTURES, EXAMPLES):
        if not base.is_dir():
            continue
        for p in sorted(base.rglob("*")):
            if not p.is_file() or any(part.startswith(".") for part in p.relative_to(base).parts):
                continue
            name = p.name.lower()
            if name == "manifest.json" or name == "index.json":
                continue
            if name.endswith(ARCHIVE_SUFFIXES) or name.endswith(OBJECT_SUFFIXES):
                files.append(p)
    return files


def _docs(name: str, data: bytes) -> list[Any]:
    text = data.decode("utf-8")
    if name.lower().endswith(".json"):
        return [json.loads(text)] if text.strip() else []
    return [d for d in yaml.load_all(text, Loader=_LOADER) if d is not None]


def _flatten(doc: Any) -> Iterator[Obj]:
    if not isinstance(doc, dict) or not isinstance(doc.get("kind"), str):
        return  # not a Kubernetes object (e.g. a fixtures/cases file)
    kind = doc["kind"]
    if (kind == "List" or kind.endswith("List")) and isinstance(doc.get("items"), list):
        item_kind = kind[:-4] if kind != "List" else None
        for item in doc["items"]:
            if isinstance(item, dict):
                if item_kind and "kind" not in item:
                    item = {**item, "kind": item_kind, "apiVersion": item.get("apiVersion", doc.get("apiVersion"))}
                yield item
        return
    if isinstance(doc.get("apiVersion"), str):
        yield doc


def _objects_in(path: Path) -> list[tuple[str, Obj]]:
    """(where, object) for every Kubernetes object in a file or archive (parsed once per session)."""
    return _parse_file(path)


@cache
def _parse_file(path: Path) -> list[tuple[str, Obj]]:
    return list(_iter_objects(path))


def _iter_objects(path: Path) -> Iterator[tuple[str, Obj]]:
    """(where, object) for every Kubernetes object in a file or archive."""
    name = path.name.lower()
    if name.endswith(ARCHIVE_SUFFIXES):
        with tarfile.open(fileobj=io.BytesIO(path.read_bytes()), mode="r:*") as tf:
            for m in tf.getmembers():
                base = m.name.rsplit("/", 1)[-1].lower()
                if not m.isfile() or base in ("manifest.json", "index.json") or not base.endswith(OBJECT_SUFFIXES):
                    continue
                fh = tf.extractfile(m)
                if fh is None:
                    continue
                for doc in _docs(m.name, fh.read()):
                    for obj in _flatten(doc):
                        yield m.name, obj
        return
    for doc in _docs(path.name, path.read_bytes()):
        for obj in _flatten(doc):
            yield path.name, obj


# --- CRD schemas -> JSON Schema --------------------------------------------------------------------------


def _convert(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_convert(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key.startswith("x-kubernetes-") or key == "nullable":
            continue
        if key in ("properties", "patternProperties", "definitions"):
            out[key] = {k: _convert(v) for k, v in value.items()}
        elif key in ("items", "additionalProperties", "not", "allOf", "anyOf", "oneOf"):
            out[key] = _convert(value)
        elif key == "pattern" and isinstance(value, str) and "(?i)" in value:
            # Go RE2 accepts an inline flag after `^`; Python only at the start of the pattern.
            out[key] = "(?i)" + value.replace("(?i)", "")
        else:
            out[key] = value
    if schema.get("x-kubernetes-int-or-string") and "type" not in out and "anyOf" not in out:
        out["type"] = ["integer", "string"]
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    if "properties" in out and "additionalProperties" not in out and not preserve:
        out["additionalProperties"] = False
    if schema.get("nullable"):
        out = {"anyOf": [out, {"type": "null"}]}
    return out


@cache
def _crds() -> dict[str, Obj]:
    """kind → CRD document."""
    out: dict[str, Obj] = {}
    for p in sorted(REFERENCE.glob(f"{GROUP}_*.yaml")):
        crd = yaml.load(p.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        out[crd["spec"]["names"]["kind"]] = crd
    return out


@cache
def _validator(kind: str, version: str) -> Any:
    from jsonschema import Draft7Validator  # type: ignore[import-untyped,unused-ignore]

    crd = _crds().get(kind)
    if crd is None:
        return None
    for v in crd["spec"]["versions"]:
        if v["name"] == version:
            schema = _convert(v["schema"]["openAPIV3Schema"])
            schema["$schema"] = "http://json-schema.org/draft-07/schema#"
            Draft7Validator.check_schema(schema)
            return Draft7Validator(schema)
    return None


def _describe(obj: Obj) -> str:
    m = obj.get("metadata") or {}
    ns = f"{m.get('namespace')}/" if m.get("namespace") else ""
    return f"{obj.get('apiVersion')} {obj.get('kind')} {ns}{m.get('name')}"


def _secret_problems(obj: Obj) -> Iterator[str]:
    if obj.get("kind") == "Secret":
        yield f"{_describe(obj)}: fixtures must not contain Secret objects"
        return
    for path, container in _containers(obj):
        for env in container.get("env") or ():
            if isinstance(env, dict) and "value" in env and SECRETISH_ENV.search(str(env.get("name", ""))):
                yield (
                    f"{_describe(obj)}: {path} env {env.get('name')} carries a literal value; "
                    "use valueFrom.secretKeyRef in fixtures"
                )


def _containers(node: Any, path: str = "") -> Iterator[tuple[str, Obj]]:
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{path}.{key}" if path else key
            if key in ("containers", "initContainers") and isinstance(value, list):
                for i, c in enumerate(value):
                    if isinstance(c, dict):
                        yield f"{here}[{i}]", c
            else:
                yield from _containers(value, here)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _containers(item, f"{path}[{i}]")


FILES = _fixture_files()


def _file_id(p: Path) -> str:
    return p.relative_to(ROOT).as_posix()


def test_fixture_files_found() -> None:
    assert any(f.is_relative_to(FIXTURES) for f in FILES), "no fixture files found under fixtures/"


@pytest.mark.parametrize("path", FILES, ids=[_file_id(p) for p in FILES])
def test_no_secrets_in_fixture(path: Path) -> None:
    problems = [p for _, obj in _objects_in(path) for p in _secret_problems(obj)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", FILES, ids=[_file_id(p) for p in FILES])
def test_kueue_objects_validate_against_crds(path: Path) -> None:
    if not REFERENCE.is_dir():
        pytest.skip(f"upstream CRDs not available: {REFERENCE} does not exist (needs ../shared/kueue-reference)")
    problems: list[str] = []
    for where, obj in _objects_in(path):
        api = str(obj.get("apiVersion", ""))
        group, _, version = api.rpartition("/")
        if group != GROUP:
            continue
        kind = str(obj.get("kind"))
        validator = _validator(kind, version)
        if validator is None:
            problems.append(
                f"{where}: {_describe(obj)}: no CRD schema for kind {kind} version {version} in {REFERENCE.name}"
            )
            continue
        for err in sorted(validator.iter_errors(obj), key=lambda e: list(e.absolute_path)):
            at = ".".join(str(p) for p in err.absolute_path) or "<root>"
            problems.append(f"{where}: {_describe(obj)}: at {at}: {err.message[:300]}")
    assert not problems, f"{len(problems)} schema problem(s):\n" + "\n".join(problems[:40])


def test_schema_conversion_rejects_unknown_and_bad_quantities() -> None:
    """The converted schema is strict: an unknown spec field and a junk quantity both fail."""
    if not REFERENCE.is_dir():
        pytest.skip(f"upstream CRDs not available: {REFERENCE} does not exist")
    v = _validator("ClusterQueue", "v1beta2")
    good = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "q"},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": "8"}]}],
                }
            ],
        },
    }
    assert not list(v.iter_errors(good))
    renamed = json.loads(json.dumps(good))
    renamed["spec"]["cohort"] = "x"  # v1beta1 spelling, not valid in v1beta2
    assert list(v.iter_errors(renamed))
    junk = json.loads(json.dumps(good))
    junk["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "eight"
    assert list(v.iter_errors(junk))
    assert _validator("ClusterQueue", "v1beta1") is not None
    assert _validator("ClusterQueue", "v1alpha1") is None
