"""Kueue releases: version parsing and the table of behaviour that changed across releases.

Every behaviour kueuediag models differently per Kueue release is a row in ``kueuediag/data/versions.yaml``
(rendered as docs/versions.md): ResourceFlavor tolerations in flavor assignment, when pod-group pods past
their grace stop holding quota, the fair-sharing rounding fixes, ``FastQuotaReleaseInPodIntegration``,
WaitForPodsReady on by default, TAS admission, the v1beta2 API, and the default of every feature gate per
release (v0.5 to v0.19). Code asks :func:`has_behaviour` / :func:`gate_default` instead of comparing
version numbers itself, so one table answers for the whole tool and a wrong row is fixed in one place.

The semver helper (:func:`parse_version`, :func:`satisfies`, :func:`is_fixed`) understands ``v0.13.2``,
``0.13.2``, pre-releases (``v0.14.0-rc.1`` < ``v0.14.0``), ``v0.20.0-devel`` and ``git describe`` strings
(``v0.13.2-12-gabc1234`` counts as v0.13.2).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache, lru_cache, total_ordering
from typing import Any

from kueuediag.datafile import data_yaml
from kueuediag.records import dataclass

# --- semver ------------------------------------------------------------------------------------------------

_VERSION = re.compile(
    r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?(?:-(?P<pre>[0-9A-Za-z.-]+?))?(?:\+[0-9A-Za-z.-]+)?\s*$"
)
_DESCRIBE = re.compile(r"-\d+-g[0-9a-f]{6,40}(?:-dirty)?$")


@total_ordering
@dataclass(frozen=True)
class Version:
    major: int
    minor: int
    patch: int
    pre: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"v{self.major}.{self.minor}.{self.patch}" + (f"-{'.'.join(self.pre)}" if self.pre else "")

    @property
    def line(self) -> tuple[int, int]:
        """The release line (``(0, 13)`` for v0.13.x)."""
        return self.major, self.minor

    def _key(self) -> tuple[int, int, int, int, tuple[tuple[int, int | str], ...]]:
        pre = tuple((0, int(p)) if p.isdigit() else (1, p) for p in self.pre)
        # a release sorts after all its pre-releases
        return self.major, self.minor, self.patch, 0 if self.pre else 1, pre

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() < other._key()


@lru_cache(maxsize=1024)
def parse_version(text: str | None) -> Version | None:
    """``v0.13.2`` → Version(0, 13, 2); None for junk (image digests, ``latest``). Cached: the version table's
    constraints are re-read for every target."""
    if not text:
        return None
    t = _DESCRIBE.sub("", text.strip())
    m = _VERSION.match(t)
    if not m:
        return None
    pre = tuple(m.group("pre").split(".")) if m.group("pre") else ()
    return Version(int(m.group(1)), int(m.group(2)), int(m.group(3) or 0), pre)


_COMPARATOR = re.compile(r"^\s*(>=|<=|>|<|==|=|!=)?\s*(\S+)\s*$")


def satisfies(version: str | Version, spec: str) -> bool:
    """``satisfies("v0.13.4", ">=v0.13.0, <v0.13.5")`` — comma-separated comparators, all must hold.

    Raises ValueError on an unparsable spec (a bug in our data, not in the user's input).
    """
    v = version if isinstance(version, Version) else parse_version(version)
    if v is None:
        raise ValueError(f"not a version: {version!r}")
    for part in spec.split(","):
        if not part.strip():
            continue
        m = _COMPARATOR.match(part)
        bound = parse_version(m.group(2)) if m else None
        if m is None or bound is None:
            raise ValueError(f"bad version constraint {part!r}")
        op = m.group(1) or "=="
        ok = {
            ">=": v >= bound, "<=": v <= bound, ">": v > bound, "<": v < bound,
            "==": v == bound, "=": v == bound, "!=": v != bound,
        }[op]
        if not ok:
            return False
    return True


def is_fixed(version: str | Version, fixed_in: Sequence[str]) -> bool:
    """Whether `version` contains a fix released in `fixed_in` (the mainline release and its cherry-picks).

    The highest entry is the mainline release: every version at or above it is fixed. A lower entry is a
    cherry-pick: it fixes only later patches of its own release line (v0.13.5 fixes v0.13.6, not v0.12.9).
    """
    v = version if isinstance(version, Version) else parse_version(version)
    if v is None:
        raise ValueError(f"not a version: {version!r}")
    fixes = sorted(f for f in (parse_version(x) for x in fixed_in) if f is not None)
    if not fixes:
        return False
    if v >= fixes[-1]:
        return True
    return any(v.line == f.line and v >= f for f in fixes[:-1])


def fixed_version_for(version: str | Version, fixed_in: Sequence[str]) -> str:
    """The release to upgrade to: the cherry-pick on the same line if any, else the mainline release."""
    v = version if isinstance(version, Version) else parse_version(version)
    fixes = sorted(f for f in (parse_version(x) for x in fixed_in) if f is not None)
    if v is not None:
        for f in fixes:
            if f.line == v.line:
                return str(f)
    return str(fixes[-1]) if fixes else "?"


# --- the table ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Behaviour:
    """One row of the version table: a behaviour Kueue gained in `since` (mainline release + cherry-picks)."""

    id: str
    title: str
    since: tuple[str, ...]
    before: str
    after: str
    refs: tuple[str, ...]
    source: str
    gate: str | None = None
    """the feature gate that switches the new behaviour (when there is one)"""

    @property
    def first(self) -> str:
        """The mainline release that introduced the behaviour (the highest entry of `since`)."""
        return str(max(v for v in (parse_version(s) for s in self.since) if v is not None))

    def present_in(self, version: str | Version) -> bool:
        """Whether `version` has the new behaviour (see :func:`is_fixed` for cherry-picks)."""
        return is_fixed(version, self.since)

    def upgrade_to(self, version: str | Version | None) -> str:
        """The release that brings the behaviour to `version`: its line's cherry-pick, else the mainline one."""
        return fixed_version_for(version, self.since) if version is not None else self.first


@dataclass(frozen=True)
class GateStage:
    since: Version
    stage: str
    """alpha | beta | ga | deprecated | removed"""
    default: bool | None
    """None once removed"""


@dataclass(frozen=True)
class ApiRename:
    kind: str
    v1beta1: str
    v1beta2: str


@dataclass(frozen=True)
class VersionTable:
    behaviours: dict[str, Behaviour]
    gates: dict[str, tuple[GateStage, ...]]
    renames: tuple[ApiRename, ...]


_GATE_VALUE = re.compile(r"^(alpha|beta|ga|deprecated) (on|off)$|^removed$")


@cache
def table() -> VersionTable:
    """The parsed ``data/versions.yaml`` (read once; a malformed row raises: it is our bug, not the user's)."""
    raw: dict[str, Any] = data_yaml("versions.yaml")
    behaviours: dict[str, Behaviour] = {}
    for row in raw["behaviours"]:
        since = tuple(str(s) for s in row["since"])
        if not since or any(parse_version(s) is None for s in since):
            raise ValueError(f"versions.yaml: bad `since` in {row['id']!r}")
        behaviours[row["id"]] = Behaviour(
            id=row["id"], title=row["title"], since=since, before=str(row["before"]).strip(),
            after=str(row["after"]).strip(), refs=tuple(row.get("refs") or ()), source=str(row["source"]),
            gate=row.get("gate"))
    gates: dict[str, tuple[GateStage, ...]] = {}
    for name, stages in raw["feature_gates"].items():
        parsed: list[GateStage] = []
        for ver, value in stages.items():
            m = _GATE_VALUE.match(str(value))
            v = parse_version(str(ver))
            if m is None or v is None:
                raise ValueError(f"versions.yaml: bad stage {ver}: {value} for gate {name}")
            parsed.append(GateStage(v, m.group(1) or "removed", None if m.group(2) is None else m.group(2) == "on"))
        gates[str(name)] = tuple(sorted(parsed, key=lambda s: s.since))
    renames = tuple(ApiRename(str(r["kind"]), str(r["v1beta1"]), str(r["v1beta2"])) for r in raw["api_renames"])
    return VersionTable(behaviours, gates, renames)


def behaviour(behaviour_id: str) -> Behaviour:
    """A row of the table by id (KeyError for an unknown id: a typo in our code)."""
    return table().behaviours[behaviour_id]


@lru_cache(maxsize=4096)
def has_behaviour(version: str | Version | None, behaviour_id: str) -> bool | None:
    """Whether Kueue `version` has the behaviour; None when the version is unknown (callers must say so).
    Cached: the table is fixed, and every known issue asks it for every target."""
    row = behaviour(behaviour_id)
    v = version if isinstance(version, Version) or version is None else parse_version(version)
    if v is None:
        return None
    return row.present_in(v)


def gate_stage(gate: str, version: str | Version | None) -> GateStage | None:
    """The stage of a feature gate at a release; None when the gate does not exist there (or is unknown).

    For an unknown version the newest stage is returned: callers that care must check the version first.
    """
    stages = table().gates.get(gate)
    if not stages:
        return None
    v = version if isinstance(version, Version) or version is None else parse_version(version)
    if v is None:
        found: GateStage | None = stages[-1]
    else:
        # a patch release carries its line's gates: compare on the release line (v0.17.3 has v0.17's gates)
        found = next((s for s in reversed(stages) if s.since.line <= v.line), None)
    return None if found is None or found.stage == "removed" else found


def gate_default(gate: str, version: str | Version | None) -> bool | None:
    """The default of a feature gate at a Kueue release (None: the gate does not exist there or is unknown)."""
    stage = gate_stage(gate, version)
    return None if stage is None else stage.default


def gate_introduced(gate: str) -> str | None:
    """The first release line that knows the gate (``v0.17.0``), or None for an unknown gate."""
    stages = table().gates.get(gate)
    return str(stages[0].since) if stages else None


def gate_defaults(version: str | Version | None) -> dict[str, bool]:
    """Every gate that exists at `version` → its default there."""
    out: dict[str, bool] = {}
    for gate in table().gates:
        d = gate_default(gate, version)
        if d is not None:
            out[gate] = d
    return out
