"""The ranking policy: which finding is *the* verdict.

Order (documented in docs/ranking.md):

1. Findings about the target before cluster-wide context.
2. Cause tier, like Kueue's KEP-10852 precedence: ``blocker`` (can never run as submitted) before ``root``
   causes, before ``waiting`` mechanics, before ``symptom`` (guarantee violation), before ``context``.
   ``not-pending`` is last — but when nothing else fired about the target it becomes the verdict.
3. Severity, then confidence, then the cause's position in the catalog (stable), then the check code.

A guarantee violation is a symptom: when it fires together with a root cause, the root cause wins and the
headline says it explains the violation. Only when nothing explains it does ``guarantee-violation`` lead.
"""

from __future__ import annotations

from kueuediag.causes import BY_SLUG, CAUSES, TIER_ORDER, Tier
from kueuediag.models import Finding, Layer, RankedFinding, Severity

_CATALOG_POS = {c.slug: i for i, c in enumerate(CAUSES)}  # plugin causes sort after the built-in ones


def sort_key(f: Finding) -> tuple[int, int, int, int, int, str]:
    c = BY_SLUG[f.cause]
    tier = TIER_ORDER[c.tier]
    # Info-level findings never outrank real ones in a lower tier: they are observations, not causes.
    if f.severity is Severity.INFO and c.tier is not Tier.NONE:
        tier = TIER_ORDER[Tier.CONTEXT]
    pos = _CATALOG_POS.get(f.cause, len(_CATALOG_POS))
    return (0 if f.about_target else 1, tier, -int(f.severity), -int(f.confidence), pos, f.code)


def rank(findings: list[Finding]) -> list[RankedFinding]:
    ordered = sorted(findings, key=sort_key)
    return [RankedFinding(rank=i + 1, layer=BY_SLUG[f.cause].layer, finding=f) for i, f in enumerate(ordered)]


def verdict_cause(ranked: list[RankedFinding]) -> tuple[str, Layer]:
    if not ranked:
        return "unknown", Layer.NONE
    top = ranked[0].finding
    return top.cause, ranked[0].layer
