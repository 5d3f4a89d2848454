"""Doc pages generated from check docstrings and the cause catalog (docs/checks/, `kueuediag explain`)."""

from __future__ import annotations

import difflib
import textwrap

from kueuediag.analysis.known_issues import KnownIssue, known_issues
from kueuediag.causes import BY_SLUG, CAUSES
from kueuediag.check import DOC_SECTIONS, Check
from kueuediag.errors import TargetNotFound


def find_doc_subject(what: str) -> type[Check] | str:
    from kueuediag.registry import discover

    classes = discover()
    key = what.strip()
    for cls in classes:
        if key.upper() == cls.code or key.lower() == cls.name:
            return cls
    if key.lower() in BY_SLUG:
        return key.lower()
    names = [c.code for c in classes] + [c.name for c in classes] + list(BY_SLUG)
    raise TargetNotFound(f"no check or cause named {what!r}",
                         difflib.get_close_matches(key, names, n=5, cutoff=0.4))


def check_page(cls: type[Check]) -> str:
    doc = cls.doc()
    lines = [f"# {cls.code} {cls.name}", "", doc.get("summary", ""), "",
             f"- Family: {cls.family()}",
             f"- Needs: {', '.join(p.value for p in cls.requires) or 'objects only'}"
             + ("" if cls.needs_workload else " (runs without a Workload too)")
             + (f"; also reads {', '.join(p.value for p in cls.reads)} when present" if cls.reads else ""),
             f"- Default severity: {cls.default_severity.label}"]
    if cls.options:
        lines.append("- Options: " + ", ".join(f"`{k}` (default {v})" for k, v in cls.options.items()))
    for section in DOC_SECTIONS:
        lines += ["", f"## {section}", "", textwrap.dedent(doc.get(section, "")).strip()]
    return "\n".join(lines).rstrip() + "\n"


def cause_page(slug: str) -> str:
    c = BY_SLUG[slug]
    return "\n".join([
        f"# cause `{c.slug}`: {c.title}", "",
        f"- Layer: {c.layer.value}", f"- Ranking tier: {c.tier.value}", f"- Owning check: {c.owner}",
        "- First screen: " + (f"a next step ({c.next_step.value}): no change to cluster objects cures it"
                              if c.next_step is not None else
                              "a checked fix (a change kueuediag applies to a copy of the snapshot, or a stop-gap)"),
        *([f"- Documentation: {c.docs}"] if c.docs else []), "",
        "## What it means", "", c.description, "", "## What to do", "", c.remediation, "",
    ])


def causes_index() -> str:
    lines = ["# Cause catalog", "", "Generated from kueuediag/causes.py. Every finding names one of these.", "",
             "Each cause has one owning check: only it emits findings for the cause; other checks contribute evidence "
             "to its finding (docs/ranking.md).", "",
             "The last column is what the verdict box shows: a fix checked on a copy of the snapshot (or a stop-gap "
             "saying why), or, for causes no change to cluster objects cures, the kind of next step.", "",
             "| cause | layer | tier | owner | meaning | first screen |", "|---|---|---|---|---|---|"]
    for c in CAUSES:
        shown = f"next step: {c.next_step.value}" if c.next_step is not None else "checked fix"
        lines.append(f"| `{c.slug}` | {c.layer.value} | {c.tier.value} | {c.owner} | {c.title} | {shown} |")
    return "\n".join(lines) + "\n"


def checks_index(classes: list[type[Check]]) -> str:
    lines = ["# Checks", "", "Generated from the check docstrings (`python -m kueuediag.docs`). "
             "Do not edit by hand; a test fails when these pages are stale.", "",
             "| code | check | family | summary |", "|---|---|---|---|"]
    for cls in classes:
        summary = (cls.doc().get("summary") or "").splitlines()[0] if cls.doc().get("summary") else ""
        lines.append(f"| [{cls.code}]({cls.code}.md) | {cls.name} | {cls.family()} | {summary} |")
    return "\n".join(lines) + "\n"


def _on_off(value: bool | None) -> str:
    return "-" if value is None else ("on" if value else "off")


def versions_page() -> str:
    """docs/versions.md: the version table (kueuediag/data/versions.yaml) as the user reads it."""
    from kueuediag.analysis.versions import gate_defaults, table

    t = table()
    lines = ["# Kueue versions and the behaviour that changed", "",
             "Generated from kueuediag/data/versions.yaml (`python -m kueuediag.docs`); do not edit by hand.",
             "kueuediag reads the Kueue version from the snapshot manifest (`kueueVersion`), else the controller",
             "image tag, else the `kueue_build_info` metric. Every behaviour below is looked up by that version; when",
             "the version is unknown the findings that depend on it say so.", "",
             "A release list such as `v0.14.0 / v0.13.5` means: the mainline release and the cherry-picks that",
             "brought the change to later patches of an older release line.", "",
             "## Behaviour", "", "| behaviour | since | before | after | refs |", "|---|---|---|---|---|"]
    for b in t.behaviours.values():
        gate = f" (gate `{b.gate}`)" if b.gate else ""
        lines.append(f"| **{b.title}**{gate} `{b.id}` | {' / '.join(b.since)} | {b.before} | {b.after} | "
                     f"{', '.join(b.refs) or '-'}; {b.source} |")
    lines += ["", "## v1beta1 → v1beta2 field renames", "", "| kind | v1beta1 | v1beta2 |", "|---|---|---|"]
    lines += [f"| {r.kind} | `{r.v1beta1}` | `{r.v1beta2}` |" for r in t.renames]
    releases = [f"v0.{minor}.0" for minor in range(9, 20)]
    lines += ["", "## Feature-gate defaults per release", "",
              "`on`/`off`: the default; `-`: the gate does not exist in that release. Explicit `--feature-gates`",
              "or `featureGates` in the Configuration override these.", "",
              "| gate | " + " | ".join(r.removesuffix(".0") for r in releases) + " |",
              "|---|" + "---|" * len(releases)]
    per_release = {r: gate_defaults(r) for r in releases}
    for gate in sorted(t.gates, key=str.lower):
        cells = [_on_off(per_release[r].get(gate)) for r in releases]
        if set(cells) != {"-"}:
            lines.append(f"| {gate} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def messages_page() -> str:
    """docs/messages.md: the catalog of Kueue's messages, grouped by where Kueue writes them."""
    from kueuediag.analysis.messages import catalog, catalog_versions

    entries = catalog()
    versions = catalog_versions()
    lines = ["# What Kueue records: the message catalog", "",
             "Generated from kueuediag/data/messages.yaml (`python -m kueuediag.docs`); do not edit by hand.", "",
             f"{len(entries)} message templates Kueue writes on a Workload and around it, learned from Kueue's "
             f"source at every release from {versions[0]} to {versions[-1]} (the newest patch of each minor). "
             "KD801 (kueue-record) reads every recorded message against it: a message no template matches is "
             "reported verbatim as `unrecognised-kueue-message`, and each template maps to the cause kueuediag "
             "reports for it. `part` says where the text sits: the whole message, one reason inside "
             "`couldn't assign flavors to pod set <ps>: ...` (flavor), or a suffix the scheduler appends.", ""]
    groups: dict[str, list[str]] = {}
    for e in entries:
        reasons = ", ".join(f"`{r}`" for r in e.reasons)
        note = f" {e.note}" if e.note else ""
        groups.setdefault(e.condition, []).append(
            f"| `{e.id}` | {e.status} | {reasons} | {e.part} | `{e.template.replace('|', '&#124;')}` | "
            f"{e.versions} | `{e.cause}` | `{e.source}` |{note} |")
    for condition, rows in groups.items():
        lines += [f"## {condition}", "",
                  "| entry | status | reasons | part | template | versions | cause | source | note |",
                  "|---|---|---|---|---|---|---|---|---|", *rows, ""]
    return "\n".join(lines + _queue_status_lines()).rstrip() + "\n"


def _queue_status_lines() -> list[str]:
    """The `queue_status` section: what each queue kind carries in its status, and how Kueue reports a problem of an
    object that has no condition for it."""
    from kueuediag.analysis.messages import queue_status

    lines = ["## What the queue objects carry", "",
             "| kind | conditions | other status fields | problems reported elsewhere |", "|---|---|---|---|"]
    for qs in queue_status().values():
        conds = "; ".join(f"`{c.type}` {c.since} - {c.until} (`{c.source}`)" for c in qs.conditions) or \
            "none in any release"
        fields = "; ".join(f"`{f.field}` {f.since} - {f.until} (`{f.source}`){' — ' + f.note if f.note else ''}"
                           for f in qs.fields) or "-"
        signals = "; ".join(
            f"`{g.id}` ({g.problem}, {g.since} - {g.until}): workloads read entry `{g.workload_entry}`, the "
            f"controller logs `{g.log}` with error `{g.error}` → `{g.cause}` (`{g.source}`). {g.note}"
            for g in qs.signals) or "-"
        lines.append(f"| {qs.kind} | {conds} | {fields} | {signals} |")
    return [*lines, ""]

def known_issues_page() -> str:
    """docs/known-issues.md: KD902's table of upstream bugs, from kueuediag/data/known_issues.yaml."""
    issues = known_issues()
    lines = ["# Known upstream Kueue issues", "",
             "Generated from kueuediag/data/known_issues.yaml (`python -m kueuediag.docs`); KD902 (`known-issues`) "
             "matches a snapshot against it. Sources: the kubernetes-sigs/kueue release notes "
             "(CHANGELOG/CHANGELOG-0.9.md … CHANGELOG-0.19.md) and the linked issues and PRs.", "",
             "Confidence is graded by what the snapshot recorded: the bug's fingerprint in objects is **high**; an "
             "affected version with a matching log line and the required configuration, without object evidence, "
             "is **medium**; an affected version alone never fires.", "",
             f"{len(issues)} entries.", "",
             "| bug | refs | affected | fixed in | effect | signature |", "|---|---|---|---|---|---|"]
    for i in issues:
        affected = f">= {i.introduced}" if i.introduced else "all releases with the feature"
        fixed = ", ".join(i.fixed_in) if i.fixed_in else f"mitigated by {i.mitigation_gate} (>= {i.gate_since})"
        lines.append(f"| [{i.title}](#{i.id}) | {', '.join(i.issues + i.prs)} | {affected} | {fixed} | {i.effect} | "
                     f"{_signature_kinds(i)} |")
    for i in issues:
        lines += ["", f"## {i.id}", "", f"**{i.title}** ({', '.join(i.issues + i.prs)})", "", i.meaning, "",
                  f"- Affected: {'>= ' + i.introduced if i.introduced else 'every release with the feature'}, "
                  f"before the fix", f"- Fixed in: {', '.join(i.fixed_in) or '—'}"
                  + (f"; mitigated by the {i.mitigation_gate} gate (>= {i.gate_since})" if i.mitigation_gate else ""),
                  f"- Effect: {i.effect}"]
        lines += [f"- Requires: {r}" for r in _requirements(i)]
        lines += [f"- Object evidence: {e}" for e in _evidence_text(i)]
        lines += [f"- Log signature: {s.signature or '`' + (s.regex or '') + '`'}" for s in i.logs]
        lines += [f"- Workaround: {i.workaround}"]
        if i.changelog:
            lines += [f"- Release note: \"{i.changelog}\""]
    return "\n".join(lines) + "\n"


def _signature_kinds(i: KnownIssue) -> str:
    kinds = []
    if i.evidence or i.detector:
        kinds.append("objects")
    if i.logs:
        kinds.append("logs")
    if i.gates or i.config or i.required_objects:
        kinds.append("configuration")
    return " + ".join(kinds)


def _requirements(i: KnownIssue) -> list[str]:
    out = [f"feature gate {g}={'true' if v else 'false'}" for g, v in i.gates.items()]
    out += [f"Configuration `{p}` {', '.join(f'{k} {v}' for k, v in pred.items())}" for p, pred in i.config.items()]
    out += [f"a {c.kind} with " + "; ".join(f"`{p}` {', '.join(f'{k} {v}' for k, v in w.items())}"
                                            for p, w in c.where.items()) for c in i.required_objects]
    return out


def _evidence_text(i: KnownIssue) -> list[str]:
    if i.detector:
        return [f"detector `{i.detector}` (kueuediag/analysis/known_issues.py)"]
    out = []
    for alt in i.evidence:
        parts = []
        for c in alt:
            if c.controller:
                parts.append(f"the Kueue controller is {c.controller}")
                continue
            cond = "; ".join(f"`{p}` {', '.join(f'{k} {v}' for k, v in w.items())}" for p, w in c.where.items())
            extra = " whose Workload holds quota" if c.workload_holds_quota else (
                f" whose Workload is {c.workload_state}" if c.workload_state else "")
            parts.append(f"a {c.kind}{extra} with {cond}")
        out.append(" and ".join(parts))
    return out


def generated_pages() -> dict[str, str]:
    """relative path under docs/ → content."""
    from kueuediag.registry import discover

    classes = discover()
    pages = {f"checks/{cls.code}.md": check_page(cls) for cls in classes}
    pages["checks/README.md"] = checks_index(classes)
    pages["causes.md"] = causes_index()
    pages["versions.md"] = versions_page()
    pages["messages.md"] = messages_page()
    pages["known-issues.md"] = known_issues_page()
    return pages


def generated_files() -> dict[str, str]:
    """Every generated file, by path relative to the repository root: the docs pages, the built-in checks'
    catalogue that `kueuediag checks` lists without importing them (kueuediag/data/checks.json) and the JSON copy
    of the data tables (kueuediag/data/tables.json, see kueuediag.datafile)."""
    from kueuediag.datafile import COMPILED, compiled_text
    from kueuediag.registry import CATALOGUE, builtin, catalogue_text

    files = {f"docs/{rel}": text for rel, text in generated_pages().items()}
    files[f"kueuediag/data/{CATALOGUE}"] = catalogue_text(builtin())
    files[f"kueuediag/data/{COMPILED}"] = compiled_text()
    return files


def main() -> None:  # pragma: no cover - exercised via the docs staleness test
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    for rel, text in generated_files().items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path}")


if __name__ == "__main__":  # pragma: no cover
    main()
