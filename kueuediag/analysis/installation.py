"""The Kueue installation a snapshot shows: its version, manager configuration and feature gates.

One owner for "which Kueue is this and how is it set up?" (STYLE §13). Every check that needs the version,
a feature gate or the Configuration reads :func:`installation`; the behaviour that changed across releases
is then looked up in the version table (:mod:`kueuediag.analysis.versions`), never by comparing version
numbers in place.

* **Version** — the snapshot manifest's ``kueueVersion``, else the controller Deployment/Pod image tag, else
  the ``git_version`` label of the ``kueue_build_info`` metric, else unknown. An object read as
  ``kueue.x-k8s.io/v1beta2`` still gives a lower bound (:attr:`Installation.floor`).
* **Feature gates** — explicit values (``--feature-gates`` on the manager container, which Kueue applies
  over the Configuration's ``featureGates``) over the per-release default from the version table.
* **Configuration** — :func:`kueuediag.analysis.kueue_config.kueue_config`.
"""

from __future__ import annotations

from dataclasses import field

from kueuediag.analysis.kueue_config import KueueConfig, kueue_config
from kueuediag.analysis.versions import Version, behaviour, gate_default, has_behaviour, parse_version
from kueuediag.records import dataclass
from kueuediag.snapshot.k8s import meta
from kueuediag.snapshot.logs import container_args, controller_objects, flag_value, manager_container
from kueuediag.snapshot.metrics import metric_store
from kueuediag.snapshot.model import Snapshot

# --- version -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KueueVersion:
    version: str | None
    source: str
    """manifest.json kueueVersion | the controller Deployment/Pod image | kueue_build_info | unknown"""

    @property
    def parsed(self) -> Version | None:
        return parse_version(self.version)


def kueue_version(snap: Snapshot) -> KueueVersion:
    """The Kueue version: the snapshot manifest, else the controller image tag, else kueue_build_info."""

    def find() -> KueueVersion:
        if snap.manifest.kueue_version and parse_version(snap.manifest.kueue_version):
            return KueueVersion(snap.manifest.kueue_version, "manifest.json kueueVersion")
        for kind in ("Deployment", "Pod"):
            for obj in snap.of_kind(kind):
                m = meta(obj)
                spec = obj.get("spec") or {}
                if kind == "Deployment":
                    spec = ((spec.get("template") or {}).get("spec")) or {}
                for c in spec.get("containers") or ():
                    image = str(c.get("image") or "")
                    repo, _, tag = image.split("@", 1)[0].rpartition(":")
                    if repo.endswith("/kueue") and parse_version(tag):
                        return KueueVersion(tag, f"{kind} {m.get('namespace')}/{m.get('name')} image {image}")
        for series in metric_store(snap).select("kueue_build_info"):
            git_version = series.label("git_version")
            if parse_version(git_version):
                return KueueVersion(git_version, f"metric {series.selector()}")
        return KueueVersion(None, "unknown")

    return snap.memo("kueue-version", find)


def version_floor(snap: Snapshot) -> str | None:
    """A lower bound on the Kueue version from the served API: an object read as kueue.x-k8s.io/v1beta2
    proves the release that started serving it (version table row ``v1beta2-api``)."""
    for kind in ("ClusterQueue", "Cohort", "Workload", "LocalQueue", "ResourceFlavor"):
        if any(h.api_version.endswith("kueue.x-k8s.io/v1beta2") for h in snap.entries(kind)):
            return behaviour("v1beta2-api").first
    return None


# --- feature gates -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FeatureGates:
    """The manager's feature gates: explicit settings over the defaults of the installed release."""

    explicit: dict[str, bool] = field(default_factory=dict)
    """gates set by `--feature-gates` on the manager container or `featureGates` in the Configuration"""
    sources: dict[str, str] = field(default_factory=dict)
    """gate → where it was set"""
    version: str | None = None
    """the Kueue version whose defaults apply (None: unknown, the newest known defaults are assumed)"""

    def default(self, gate: str) -> bool | None:
        """The gate's default at :attr:`version` (None: the gate does not exist in that release)."""
        return gate_default(gate, self.version)

    def enabled(self, gate: str) -> bool | None:
        """Explicit value, else the release's default (None for a gate that release does not know)."""
        if gate in self.explicit:
            return self.explicit[gate]
        return self.default(gate)

    def source(self, gate: str) -> str:
        """Where the gate's value comes from, for evidence."""
        if gate in self.sources:
            return self.sources[gate]
        return f"default of Kueue {self.version}" if self.version else "default of the newest known Kueue " \
            "(version unknown)"

    def describe(self) -> str:
        if not self.explicit:
            return "defaults (no --feature-gates, no featureGates in the Configuration)"
        return ",".join(f"{k}={'true' if v else 'false'}" for k, v in sorted(self.explicit.items()))


def parse_feature_gates(text: str) -> dict[str, bool]:
    """``A=true,B=false`` → {A: True, B: False} (junk entries are skipped)."""
    out: dict[str, bool] = {}
    for part in text.split(","):
        name, sep, value = part.strip().partition("=")
        if sep and name and value.strip().lower() in ("true", "false"):
            out[name.strip()] = value.strip().lower() == "true"
    return out


def feature_gates(snap: Snapshot) -> FeatureGates:
    """The manager's feature gates (memoised): Configuration `featureGates`, overridden by `--feature-gates`."""

    def build() -> FeatureGates:
        explicit: dict[str, bool] = {}
        sources: dict[str, str] = {}
        cfg = kueue_config(snap)
        raw_gates = cfg.raw.get("featureGates")
        if isinstance(raw_gates, dict):
            for k, v in raw_gates.items():
                if isinstance(v, bool):
                    explicit[str(k)] = v
                    sources[str(k)] = f"{cfg.source} featureGates"
        for obj in controller_objects(snap):
            c = manager_container(obj)
            value = flag_value(container_args(c), "--feature-gates") if c else None
            if value:
                m = meta(obj)
                where = f"{obj.get('kind')}/{m.get('namespace')}/{m.get('name')} --feature-gates"
                for k, v in parse_feature_gates(value).items():
                    explicit[k] = v
                    sources[k] = where
                break
        return FeatureGates(explicit, sources, kueue_version(snap).version)

    return snap.memo("installation-feature-gates", build)


# --- the installation --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Installation:
    version: KueueVersion
    floor: str | None
    """a lower bound on the version when it is unknown (from the served API)"""
    config: KueueConfig
    gates: FeatureGates

    @property
    def known(self) -> bool:
        return self.version.parsed is not None

    def has(self, behaviour_id: str) -> bool | None:
        """Whether this Kueue has a behaviour of the version table; None when the version is unknown and the
        lower bound does not settle it (the caller must say the conclusion depends on the version)."""
        found = has_behaviour(self.version.parsed, behaviour_id)
        if found is None and self.floor is not None and has_behaviour(self.floor, behaviour_id):
            return True
        return found

    def wait_for_pods_ready(self) -> bool | None:
        """Whether WaitForPodsReady is on: the Configuration when it says so, else the release default (on since
        the version-table row ``wait-for-pods-ready-default-on``, unless the DisableWaitForPodsReady gate is
        set); None when the Configuration is silent and the version unknown."""
        configured = self.config.wait_for_pods_ready.enabled
        if configured is not None:
            return configured
        row = behaviour("wait-for-pods-ready-default-on")
        default_on = self.has(row.id)
        if default_on and row.gate and self.gates.enabled(row.gate):
            return False
        return default_on

    def unknown_note(self, behaviour_id: str) -> str:
        """What to tell the user when :meth:`has` is None."""
        row = behaviour(behaviour_id)
        floor = f" (it serves kueue.x-k8s.io/v1beta2, so it is >= {self.floor})" if self.floor else ""
        return (f"the Kueue version is unknown{floor}: this conclusion depends on it — {row.title} since "
                f"{' / '.join(row.since)}")


def installation(snap: Snapshot) -> Installation:
    """The Kueue installation the snapshot shows (memoised)."""
    return snap.memo("installation", lambda: Installation(
        version=kueue_version(snap), floor=version_floor(snap), config=kueue_config(snap),
        gates=feature_gates(snap)))
