"""The fuzz suite in CI: a short mutation campaign, property tests on the parsers, and every kept crasher.

The long campaign runs by hand: `python -m tests.fuzz --count 10000` (see tests/fuzz/).
"""

from __future__ import annotations

import gc
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kueuediag.errors import InputError, shown
from kueuediag.snapshot.logs import parse_log_text
from kueuediag.snapshot.metrics import parse_metrics
from kueuediag.snapshot.reader import parse_objects
from tests.fuzz.campaign import campaign
from tests.fuzz.harness import preload, run_cli, why_argv
from tests.fuzz.mutate import OPERATORS
from tests.fuzz.seeds import load_seeds

REGRESSIONS = Path(__file__).resolve().parent / "fuzz_regressions"
CASES: list[dict[str, Any]] = yaml.safe_load((REGRESSIONS / "index.yaml").read_text())


def test_every_regression_file_is_listed() -> None:
    listed = {c["file"] for c in CASES}
    on_disk = {p.name for p in REGRESSIONS.iterdir() if p.name != "index.yaml"}
    assert listed == on_disk


@pytest.fixture(scope="module")
def warm_fork_server() -> Iterator[None]:
    """Children forked from a warmed-up parent: each replay costs a diagnosis, not a cold start."""
    seed = min(load_seeds(), key=lambda s: sum(len(b) for b in s.files.values()))
    preload(seed.files, seed.target, seed.namespace)
    yield
    gc.unfreeze()


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_fuzz_regression(case: dict[str, Any], warm_fork_server: None) -> None:
    """A minimised crasher from a fuzz run: now a one-line error naming the file, object and field."""
    outcome = run_cli(why_argv(REGRESSIONS / case["file"], case["target"], case["namespace"]), timeout=30)
    assert outcome.problem() is None, outcome.problem()
    assert outcome.code == case["exit"], outcome.stderr
    assert case["stderr"] in outcome.stderr, outcome.stderr
    assert outcome.stderr.startswith(f"kueuediag: error: {case['file']}") or "alias" in case["file"] \
        or case["file"] in outcome.stderr, outcome.stderr


def test_mutation_campaign() -> None:
    """70 mutated fixture snapshots, 10 starting with each mutation kind (about 15 s of CPU): each gives a
    verdict or a one-line error, in bounded time and memory. Set KUEUEDIAG_FUZZ_SEED to replay another
    campaign; the long run is `python -m tests.fuzz --count 10000`."""
    seed = int(os.environ.get("KUEUEDIAG_FUZZ_SEED", "20261201"))
    result = campaign(random.Random(seed), count=10 * len(OPERATORS), timeout=30, per_kind=True)
    assert result.tried == 10 * len(OPERATORS)
    assert result.kinds >= {op.__name__ for op, _ in OPERATORS} | {"container:dir", "container:tar.gz"}
    assert {c for c in result.exit_codes} <= {0, 2, 3}
    assert 0 in result.exit_codes and 2 in result.exit_codes  # the campaign reached both outcomes
    assert result.failures == [], "\n".join(result.failures)


_FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_LINE = st.one_of(
    st.text(max_size=200),
    st.builds(lambda name, lbl, value, ts: f'{name}{{cluster_queue="{lbl}"}} {value} {ts}',
              st.sampled_from(["kueue_pending_workloads", "kueue_admitted_workloads_total", "x", ""]),
              st.text(max_size=10), st.sampled_from(["1", "NaN", "-1", "+Inf", "1e999", "x", "9" * 400]),
              st.sampled_from(["1700000000", "1e999", "-1e300", "", "x"])),
    st.sampled_from(["# EOF", "# TYPE kueue_pending_workloads gauge", "# TYPE kueue_pending_workloads counter",
                     "# HELP x \\n", "# UNIT", "# TYPE x nonsense"]),
)


@_FAST
@given(st.lists(_LINE, max_size=20), st.sampled_from(["metrics/a.om", "metrics/a.prom"]))
def test_metrics_parser_only_raises_input_errors(lines: list[str], path: str) -> None:
    try:
        parse_metrics({path: "\n".join(lines)}, default_time=1_700_000_000.0, max_series=1000)
    except InputError as exc:
        assert "\n" not in str(exc) and len(str(exc)) <= 1000


_LOG_VALUE = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                          lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                      max_size=3), max_leaves=10)


@_FAST
@given(st.lists(st.one_of(
    st.text(max_size=120),
    st.builds(lambda d: __import__("json").dumps(d, allow_nan=True),
              st.dictionaries(st.sampled_from(["level", "ts", "msg", "workload", "clusterQueue", "logger", "error",
                                               "name", "namespace"]), _LOG_VALUE, max_size=6)),
    st.builds(lambda a, b: f"{a}\t{b}\tlogger\tx.go:1\tmsg", st.text(max_size=30), st.text(max_size=30)),
), max_size=10))
def test_log_parser_never_raises(lines: list[str]) -> None:
    parsed = parse_log_text("logs/k.log", "\n".join(lines), year=2026)
    for line in parsed:
        line.names_workload("ns", "w")
        assert isinstance(line.msg, str)


@_FAST
@given(st.binary(max_size=300) | st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")),
       st.sampled_from(["objects/a.yaml", "objects/a.json"]))
def test_object_parser_only_raises_input_errors(data: bytes, rel: str) -> None:
    try:
        objs = parse_objects(rel, data)
    except InputError as exc:
        assert "\n" not in str(exc)
    else:
        assert all(isinstance(o.get("kind"), str) for o in objs)


@_FAST
@given(_LOG_VALUE)
def test_values_render_bounded_and_on_one_line(value: Any) -> None:
    text = shown(value)
    assert len(text) <= 60 and text.isprintable()
