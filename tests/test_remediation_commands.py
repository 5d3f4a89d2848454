"""Suggested kubectl commands must run: custom resources (Workloads, ClusterQueues …) are field-selectable only
by metadata.name and metadata.namespace, so a suggestion must never field-select them by another field."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# field selectors the API server supports for the built-in kinds kueuediag names in its advice
BUILTIN_FIELDS = {"metadata.name", "metadata.namespace", "spec.nodeName", "status.phase", "involvedObject.name",
                  "involvedObject.kind", "involvedObject.namespace", "involvedObject.uid", "reason", "type"}
CUSTOM = re.compile(r"kubectl get (workloads?|clusterqueues?|localqueues?|cohorts?|resourceflavors?|cq|lq|wl)\b"
                    r"[^`'\"\n]*--field-selector[ =]([\w.]+)")


def test_no_suggestion_field_selects_a_custom_resource_by_an_unsupported_field() -> None:
    offenders = []
    for path in [*ROOT.glob("kueuediag/**/*.py"), *ROOT.glob("checks/**/*.py"), ROOT / "README.md",
                 *ROOT.glob("docs/**/*.md")]:
        for m in CUSTOM.finditer(path.read_text()):
            if m.group(2) not in {"metadata.name", "metadata.namespace"}:
                offenders.append(f"{path.relative_to(ROOT)}: {m.group(0)}")
    assert offenders == []


def test_the_builtin_field_list_is_what_the_check_allows() -> None:
    # sanity: the pattern catches the form the quota check once printed
    bad = "kubectl get workloads -A --field-selector status.admission.clusterQueue=vision-a100"
    m = CUSTOM.search(bad)
    assert m and m.group(2) == "status.admission.clusterQueue" and m.group(2) not in BUILTIN_FIELDS
