"""The bundled snapshots the whole-bundle tests walk: fixture snapshots, scenarios, incidents and the demo examples
(`kueuediag why -f example:NAME`), and every target in one of them."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from kueuediag.config import Settings
from kueuediag.engine import diagnose
from kueuediag.models import Verdict
from kueuediag.registry import builtin
from kueuediag.snapshot.kueue import workloads
from kueuediag.snapshot.loader import load_snapshot
from kueuediag.snapshot.model import Snapshot
from kueuediag.target import resolve

ROOT = Path(__file__).resolve().parent.parent


def bundled_sources() -> list[Path]:
    fx = ROOT / "fixtures"
    dirs = [p for sub in ("snapshots", "scenarios", "incidents") for p in sorted((fx / sub).iterdir()) if p.is_dir()]
    return dirs + sorted((ROOT / "kueuediag" / "data" / "examples").glob("*.tar.gz"))


def source_id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def targets(snap: Snapshot) -> list[tuple[str, str | None]]:
    """Every Workload, Job, JobSet and Pod as a (`kind/name`, namespace) target."""
    out: list[tuple[str, str | None]] = [(f"workload/{w.name}", w.namespace) for w in workloads(snap)]
    for kind in ("Job", "JobSet", "Pod"):
        out += [(f"{kind.lower()}/{o['metadata']['name']}", o["metadata"].get("namespace"))
                for o in snap.of_kind(kind)]
    return out


@cache
def snapshot(source: Path) -> Snapshot:
    return load_snapshot(str(source))


@cache
def verdicts(source: Path) -> dict[tuple[str, str | None], Verdict]:
    """The verdict of every target of `source`, computed once per test session: the whole-bundle tests (every
    target, admitted-not-running, remediation names) read the same verdicts instead of diagnosing three times."""
    snap = snapshot(source)
    classes = builtin()
    return {(text, ns): diagnose(snap, resolve(snap, text, ns), classes, Settings()) for text, ns in targets(snap)}
