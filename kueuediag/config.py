"""Layered configuration, one precedence:

defaults < ``[tool.kueuediag]`` in pyproject.toml or ``.kueuediag.yaml`` (nearest, searching upward from the
working directory) < ``KUEUEDIAG_*`` environment variables < command-line flags.

Per-code overrides (`select`, `ignore`, `severity`) take a code (``KD101``), a family (``KD1``/``KD1xx`` or
its name, ``quota``), a check slug, or — for ``ignore`` — a cause slug.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import field
from pathlib import Path
from typing import Any

from kueuediag.errors import InputError, shown
from kueuediag.models import Severity
from kueuediag.records import dataclass

ENV_PREFIX = "KUEUEDIAG_"


FORMATS = ("terminal", "json", "markdown", "junit")
"""the output formats (`-o`); `md` is accepted as an alias of markdown"""


@dataclass
class Settings:
    """Every flag of `why`, `demo` and `snapshot`, settable in the config file and the environment too."""

    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    severity: dict[str, Severity] = field(default_factory=dict)
    check_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    fail_on: Severity | None = None
    output: str = "terminal"
    exit_zero: bool = False
    color: bool | None = None
    """None: decide from the terminal (TTY, TERM=dumb, NO_COLOR); False: `--no-color` / `color: false`"""
    verbose: bool = False
    quiet: bool = False
    width: int | None = None
    """terminal width; None: follow COLUMNS / the terminal"""
    kubeconfig: str | None = None
    context: str | None = None
    as_user: str | None = None
    """kubectl's `--as`: impersonate this user (config key `as`)"""
    as_groups: list[str] = field(default_factory=list)
    """kubectl's `--as-group` (config key `as_group`)"""
    kueue_namespace: str = "kueue-system"
    since: str | None = None
    """how far back for logs and metrics; None: the command's default (why 2h, snapshot 6h)"""
    timeout: float = 60.0
    limits: dict[str, Any] = field(default_factory=dict)
    """snapshot read bounds given by config, environment or flags (kueuediag.snapshot.limits.Limits)"""
    prometheus_url: str | None = None
    prometheus_header: list[str] = field(default_factory=list)
    prometheus_ca: str | None = None
    prometheus_insecure: bool = False
    redact_map: str | None = None
    """a `snapshot --redact` mapping: `why` then accepts real names for a redacted snapshot"""
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


def _as_bool(value: Any, key: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise InputError(f"config {key}: expected true or false, got {value!r}")


def _as_str(value: Any, key: str) -> str:
    if isinstance(value, (dict, list)):
        raise InputError(f"config {key}: expected a string")
    return str(value)


def _as_float(value: Any, key: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(f"config {key}: expected a number, got {value!r}") from None
    if not math.isfinite(number) or number <= 0:  # nan would compare false and silently disable a deadline
        raise InputError(f"{key}: expected a positive number, got {shown(value)}")
    return number


def _as_width(value: Any, key: str) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise InputError(f"config {key}: expected a number of columns, got {value!r}") from None
    if number < 20:
        raise InputError(f"config {key}: at least 20 columns, got {number}")
    return number


def _as_output(value: Any, key: str) -> str:
    text = _as_str(value, key).strip().lower()
    text = "markdown" if text == "md" else text
    if text not in FORMATS:
        raise InputError(f"unknown output format {value!r} (use {', '.join(FORMATS)})")
    return text


def _as_since(value: Any, key: str) -> str:
    from kueuediag.timeutil import parse_duration

    text = _as_str(value, key).strip()
    parse_duration(text)  # validate early: a bad duration in a config file is the user's to fix
    return text


def _as_severity(value: Any, key: str) -> Severity:
    try:
        return Severity.parse(str(value))
    except ValueError as exc:
        raise InputError(f"{key}: {exc}") from None


_Converter = Callable[[Any, str], Any]
_SCALARS: dict[str, tuple[str, _Converter]] = {
    # config key → (Settings attribute, converter). Keys use underscores; dashes are accepted too.
    "select": ("select", _as_list),
    "ignore": ("ignore", _as_list),
    "fail_on": ("fail_on", _as_severity),
    "output": ("output", _as_output),
    "exit_zero": ("exit_zero", _as_bool),
    "color": ("color", _as_bool),
    "verbose": ("verbose", _as_bool),
    "quiet": ("quiet", _as_bool),
    "width": ("width", _as_width),
    "kubeconfig": ("kubeconfig", _as_str),
    "context": ("context", _as_str),
    "as": ("as_user", _as_str),
    "as_group": ("as_groups", _as_list),
    "kueue_namespace": ("kueue_namespace", _as_str),
    "since": ("since", _as_since),
    "timeout": ("timeout", _as_float),
    "prometheus_url": ("prometheus_url", _as_str),
    "prometheus_header": ("prometheus_header", _as_list),
    "prometheus_ca": ("prometheus_ca", _as_str),
    "prometheus_insecure": ("prometheus_insecure", _as_bool),
    "redact_map": ("redact_map", _as_str),
}
LIMIT_KEYS = frozenset({"max_bytes", "max_file_bytes", "max_files", "max_objects", "max_log_lines", "max_series",
                        "max_alias_nodes"})
"""the fields of kueuediag.snapshot.limits.Limits (a test keeps both in step; no import here keeps --help fast)"""
KNOWN_KEYS = frozenset({*_SCALARS, *LIMIT_KEYS, "limits", "severity", "checks", "no_color"})
"""every setting a config file, a `KUEUEDIAG_*` variable or a flag can carry"""


def _normalise(key: str) -> str:
    return str(key).strip().lower().replace("-", "_")


def _apply(settings: Settings, data: Mapping[str, Any], origin: str) -> None:
    data = {_normalise(k): v for k, v in data.items()}
    unknown = set(data) - KNOWN_KEYS
    if unknown:
        raise InputError(
            f"{origin}: unknown setting(s) {', '.join(sorted(unknown))} (known: {', '.join(sorted(KNOWN_KEYS))})")
    for key, (attr, convert) in _SCALARS.items():
        if key in data:
            setattr(settings, attr, convert(data[key], f"{origin}: {key}"))
    limits = data.get("limits") or {}
    if not isinstance(limits, dict):
        raise InputError(f"{origin}: limits must map a bound (max_bytes, max_objects, ...) to a value")
    for key, value in [*((k, data[k]) for k in LIMIT_KEYS if k in data), *limits.items()]:
        if _normalise(key) not in LIMIT_KEYS:
            raise InputError(f"{origin}: unknown limit {key!r} (known: {', '.join(sorted(LIMIT_KEYS))})")
        if value is not None:  # validated by kueuediag.snapshot.limits when a snapshot is read
            settings.limits[_normalise(key)] = value
    if "no_color" in data and _as_bool(data["no_color"], f"{origin}: no_color"):
        settings.color = False
    if "severity" in data:
        sev = data["severity"]
        if isinstance(sev, str):
            sev = dict(item.split("=", 1) for item in _as_list(sev, "severity") if "=" in item)
        if not isinstance(sev, dict):
            raise InputError(f"{origin}: severity must map code/family to a severity")
        for key, value in sev.items():
            settings.severity[str(key)] = _as_severity(value, f"{origin}: severity {key}")
    if "checks" in data:
        checks = data["checks"]
        if not isinstance(checks, dict) or not all(isinstance(v, dict) for v in checks.values()):
            raise InputError(f"{origin}: checks must map a code to a table of options")
        for code, opts in checks.items():
            settings.check_options.setdefault(str(code), {}).update(opts)
    settings.source.append(origin)


def _read_yaml_config(path: Path) -> dict[str, Any]:
    from kueuediag.yamlload import load_document  # only for a .kueuediag.yaml: a run without one reads no YAML

    data = load_document(path.read_text(), str(path)) or {}
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
            import tomllib  # only here: most runs find no config file at all

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
                if k.startswith(ENV_PREFIX) and k[len(ENV_PREFIX):].lower() in KNOWN_KEYS - {"checks"}}
    if env_data:
        _apply(settings, env_data, "environment")
    if flags:
        _apply(settings, {k: v for k, v in flags.items() if v not in (None, [], "")}, "flags")
    return settings
