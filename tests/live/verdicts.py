"""Comparing a live verdict with the verdict from a full snapshot: what the diagnosis concludes."""

from __future__ import annotations

from kueuediag.models import Verdict

USAGE_SOURCES = ("(status.flavorsReservation)", "(recomputed from Workloads)")
"""how quota evidence names where its usage figure comes from: live `why` reads Kueue's record (ClusterQueue
status), a full snapshot recomputes it from every Workload"""


def same_conclusion(got: Verdict, expected: Verdict) -> None:
    """What the diagnosis concludes: cause, headline, every check's outcome, every finding's code, cause,
    severity and title, and the objects its evidence names."""
    assert got.cause == expected.cause
    assert got.headline == expected.headline
    assert [(r.code, r.outcome) for r in got.runs] == [(r.code, r.outcome) for r in expected.runs]
    assert [(r.finding.code, r.finding.cause, r.finding.severity, r.finding.title) for r in got.findings] == \
        [(r.finding.code, r.finding.cause, r.finding.severity, r.finding.title) for r in expected.findings]
    assert [[(e.source, e.ref, e.field) for e in r.finding.evidence] for r in got.findings] == \
        [[(e.source, e.ref, e.field) for e in r.finding.evidence] for r in expected.findings]


def same_observations(got: Verdict, expected: Verdict) -> None:
    """Every evidence line observes the same thing; only the named source of a quota usage figure may differ."""

    def observed(v: Verdict) -> list[list[str]]:
        return [[e.observed.replace(*USAGE_SOURCES) for e in r.finding.evidence] for r in v.findings]

    assert observed(got) == observed(expected)
