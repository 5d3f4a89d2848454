"""Layered configuration, one precedence:

defaults < ``[tool.kueuediag]`` in pyproject.toml or ``.kueuediag.yaml`` (nearest, searching upward from the
working directory) < ``KUEUEDIAG_*`` environment variables < command-line flags.

Per-code overrides (`select`, `ignore`, `severity`) take a code (``KD101``), a family (``KD1``/``KD1xx`` or
its name, ``quota``), a check slug, or — for ``ignore`` — a cause slug.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kueuediag.errors import InputError
from kueuediag.models import Severity

ENV_PREFIX = "KUEUEDIAG_"


@dataclass
class Settings:
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    severity: dict[str, Severity] = field(default_factory=dict)
    check_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    fail_on: Severity | None = None
    output: str = "terminal"
    limits: dict[str, Any] = field(default_factory=dict)
    """snapshot read bounds by name (kueuediag.snapshot.limits.Limits), validated when a snapshot is read"""
    source: list[str] = field(default_factory=list)
    """where settings came from, for --verbose"""


def _as_list(value: Any, key: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise InputError(f"config {key}: expected a list of strings or a comma-separated string")


def _apply(settings: Settings, data: Mapping[str, Any], origin: str) -> None:
    known = {"select", "ignore", "severity", "checks", "fail_on", "fail-on", "output", "limits"}
    unknown = set(data) - known
    if unknown:
        raise InputError(
            f"{origin}: unknown setting(s) {', '.join(sorted(unknown))} (known: {', '.join(sorted(known))})")
    if "select" in data:
        settings.select = _as_list(data["select"], "select")
    if "ignore" in data:
        settings.ignore = _as_list(data["ignore"], "ignore")
    if "severity" in data:
        sev = data["severity"]
        if isinstance(sev, str):
            sev = dict(item.split("=", 1) for item in _as_list(sev, "severity") if "=" in item)
        if not isinstance(sev, dict):
            raise InputError(f"{origin}: severity must map code/family to a severity")
        for key, value in sev.items():
            try:
                settings.severity[str(key)] = Severity.parse(str(value))
            except ValueError as exc:
                raise InputError(f"{origin}: severity {key}: {exc}") from None
    if "checks" in data:
        checks = data["checks"]
        if not isinstance(checks, dict) or not all(isinstance(v, dict) for v in checks.values()):
            raise InputError(f"{origin}: checks must map a code to a table of options")
        for code, opts in checks.items():
            settings.check_options.setdefault(str(code), {}).update(opts)
    fail_on = data.get("fail_on", data.get("fail-on"))
    if fail_on is not None:
        try:
            settings.fail_on = Severity.parse(str(fail_on))
        except ValueError as exc:
            raise InputError(f"{origin}: fail_on: {exc}") from None
    if "output" in data:
        settings.output = str(data["output"])
    if "limits" in data:
        if not isinstance(data["limits"], dict):
            raise InputError(f"{origin}: limits must map a bound (max_bytes, max_objects, ...) to a value")
        settings.limits.update({str(k): v for k, v in data["limits"].items()})
    settings.source.append(origin)


def _read_yaml_config(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: invalid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a mapping")
    return data


def find_config_file(start: Path) -> tuple[Path, dict[str, Any]] | None:
    for folder in (start, *start.parents):
        yml = folder / ".kueuediag.yaml"
        if yml.is_file():
            return yml, _read_yaml_config(yml)
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            try:
                doc = tomllib.loads(pyproject.read_text())
            except tomllib.TOMLDecodeError as exc:
                raise InputError(f"{pyproject}: invalid TOML ({exc})") from None
            section = doc.get("tool", {}).get("kueuediag")
            if isinstance(section, dict):
                return pyproject, section
    return None


def load_settings(cwd: Path | None = None, env: Mapping[str, str] | None = None,
                  flags: Mapping[str, Any] | None = None, config_file: Path | None = None) -> Settings:
    settings = Settings()
    if config_file is not None:
        found = find_config_file(config_file.parent) if config_file.name == "pyproject.toml" else None
        if config_file.name != "pyproject.toml":
            if not config_file.is_file():
                raise InputError(f"{config_file}: no such config file")
            found = (config_file, _read_yaml_config(config_file))
    else:
        found = find_config_file(cwd or Path.cwd())
    if found:
        _apply(settings, found[1], str(found[0]))
    env = os.environ if env is None else env
    env_data = {k[len(ENV_PREFIX):].lower(): v for k, v in env.items()
                if k.startswith(ENV_PREFIX) and k[len(ENV_PREFIX):].lower() in ("select", "ignore", "severity",
                                                                               "fail_on", "output")}
    if env_data:
        _apply(settings, env_data, "environment")
    if flags:
        _apply(settings, {k: v for k, v in flags.items() if v not in (None, [], "")}, "flags")
    return settings
