"""The OpenMetrics parser, series store, counter helpers and writer of kueuediag.snapshot.metrics."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kueuediag.errors import InputError
from kueuediag.snapshot.metrics import (
    Series,
    in_range,
    increase_events,
    increase_per_interval,
    parse_metrics,
    sum_increase_per_interval,
    time_range,
    to_openmetrics,
    value_at,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

GOOD = """\
# TYPE kueue_admitted_workloads counter
# HELP kueue_admitted_workloads The total number of admitted workloads per 'cluster_queue'
kueue_admitted_workloads_total{cluster_queue="demo",priority_class="",replica_role="leader"} 3 1700000000
kueue_admitted_workloads_total{cluster_queue="demo",priority_class="",replica_role="leader"} 5 1700000060.5
kueue_admitted_workloads_total{cluster_queue="other",priority_class="high",replica_role="leader"} 1 1700000000
# TYPE kueue_pending_workloads gauge
kueue_pending_workloads{cluster_queue="demo",status="active"} 12 1700000000
kueue_pending_workloads{cluster_queue="demo",status="inadmissible"} 4 1700000000
kueue_pending_workloads{cluster_queue="de\\"mo\\\\x",status="active"} 1 1700000000 # {id="a"} 1 1700000000
# EOF
"""


def test_parses_types_labels_and_seconds_timestamps() -> None:
    store = parse_metrics({"metrics/kueue.om": GOOD})
    assert store.types == {"kueue_admitted_workloads": "counter", "kueue_pending_workloads": "gauge"}
    assert store.type_of("kueue_admitted_workloads_total") == "counter"
    assert store.help["kueue_admitted_workloads"].startswith("The total number")
    demo = store.select("kueue_admitted_workloads_total", cluster_queue="demo")
    assert len(demo) == 1
    assert demo[0].points == ((1700000000.0, 3.0), (1700000060.5, 5.0))
    assert demo[0].label("replica_role") == "leader"
    # a counter may be asked for by its family name
    assert store.select("kueue_admitted_workloads", cluster_queue="demo") == demo
    # label filters: exact, any-of, and None for an empty label
    assert [s.label("status") for s in store.select("kueue_pending_workloads", cluster_queue="demo")] == [
        "active", "inadmissible"]
    assert [s.label("cluster_queue") for s in store.select(
        "kueue_admitted_workloads_total", cluster_queue=["demo", "other"])] == ["demo", "other"]
    assert [s.label("cluster_queue") for s in store.select(
        "kueue_admitted_workloads_total", priority_class=None)] == ["demo"]
    escaped = store.select("kueue_pending_workloads", cluster_queue='de"mo\\x')
    assert escaped and escaped[0].latest() == (1700000000.0, 1.0)
    assert store.time_range() == (1700000000.0, 1700000060.5)


def test_select_is_memoised() -> None:
    store = parse_metrics({"metrics/kueue.om": GOOD})
    assert store.select("kueue_pending_workloads", status="active") is store.select(
        "kueue_pending_workloads", status="active")
    assert store.select("nope") == []


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        ("# TYPE a gauge\na{x=\"1\" 1 1\n# EOF\n", "m.om:2", "label set"),
        ("# TYPE a gauge\na{x=1} 1 1\n# EOF\n", "m.om:2", "label set"),
        ("# TYPE a gauge\na 1 1\na 2 2\n", "m.om:3", "missing final '# EOF'"),
        ("# TYPE a gauge\na 1 1\n# EOF\na 2 2\n", "m.om:4", "data after '# EOF'"),
        ("# TYPE a gauge\n# EOF\n# EOF\n", "m.om:3", "data after '# EOF'"),
        ("# TYPE a histogramm\n# EOF\n", "m.om:1", "unknown metric type"),
        ("# TYPE a gauge\na one 1\n# EOF\n", "m.om:2", "invalid sample value"),
        ("# TYPE a gauge\na 1 yesterday\n# EOF\n", "m.om:2", "invalid timestamp"),
        ("# TYPE a gauge\na 1 1 1\n# EOF\n", "m.om:2", "value [timestamp]"),
        ("# TYPE a counter\na_total -1 1\n# EOF\n", "m.om:2", "counters are >= 0"),
        ("# TYPE a gauge\n{x=\"1\"} 1 1\n# EOF\n", "m.om:2", "metric name"),
        ("# TYPE a gauge\na{x=\"1\",x=\"2\"} 1 1\n# EOF\n", "m.om:2", "duplicate label"),
        ("# TYPE a gauge\n# TYPE a counter\n# EOF\n", "m.om:2", "declared as counter"),
        ("# TYPE\n# EOF\n", "m.om:1", "malformed metadata"),
        # a bad line inside a run of the same series (read by the repeated-series shortcut) is still reported
        ("# TYPE a gauge\na{x=\"1\"} 1 1\na{x=\"1\"} one 2\n# EOF\n", "m.om:3", "invalid sample value"),
        ("# TYPE a gauge\na{x=\"1\"} 1 1\na{x=\"1\"} 1 2 3\n# EOF\n", "m.om:3", "value [timestamp]"),
        ("# TYPE a gauge\na{x=\"1\"} 1 1\na{x=\"1\"} 1 soon\n# EOF\n", "m.om:3", "invalid timestamp"),
        ("# TYPE a counter\na_total 1 1\na_total -1 2\n# EOF\n", "m.om:3", "counters are >= 0"),
        ("# TYPE a gauge\na 1 1\na 2 2\n# EOF\na 3 3\n# EOF\n", "m.om:5", "data after '# EOF'"),
    ],
)
def test_malformed_input_names_file_and_line(text: str, where: str, what: str) -> None:
    with pytest.raises(InputError) as err:
        parse_metrics({"m.om": text})
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(where + ":"), message
    assert what in message


def test_prometheus_text_format_uses_milliseconds_and_needs_no_eof() -> None:
    text = "# a free comment\n# TYPE up gauge\nup{job=\"kueue\"} 1 1700000000000\nup{job=\"x\"} 0\n"
    store = parse_metrics({"metrics/scrape.prom": text}, default_time=1700000123.0)
    assert store.select("up", job="kueue")[0].points == ((1700000000.0, 1.0),)
    # a sample without a timestamp is stamped with the capture time
    assert store.select("up", job="x")[0].points == ((1700000123.0, 0.0),)
    with pytest.raises(InputError, match="no timestamp"):
        parse_metrics({"metrics/scrape.prom": "up 1\n"})


def test_series_from_several_files_merge_sorted_and_deduplicated() -> None:
    a = "# TYPE g gauge\ng 1 30\ng 2 10\n# EOF\n"
    b = "# TYPE g gauge\ng 3 20\ng 9 30\n# EOF\n"
    store = parse_metrics({"metrics/a.om": a, "metrics/b.om": b})
    assert store.select("g")[0].points == ((10.0, 2.0), (20.0, 3.0), (30.0, 9.0))


def _counter(values: list[float], step: float = 60.0, t0: float = 0.0) -> Series:
    return Series("c_total", (), tuple((t0 + i * step, v) for i, v in enumerate(values)))


def test_increase_handles_counter_resets() -> None:
    # 0 1 2 | restart | 1 3  → increases 1, 1, 1 (the restart counts its new value), 2
    s = _counter([0, 1, 2, 1, 3])
    assert increase_events(s) == [(60.0, 1.0), (120.0, 1.0), (180.0, 1.0), (240.0, 2.0)]
    assert increase_per_interval(s, 120) == [(120.0, 2.0), (240.0, 3.0)]
    assert sum(v for _, v in increase_per_interval(s, 60)) == 5.0


def test_increase_per_interval_window_uses_earlier_points_as_baseline() -> None:
    s = _counter([5, 5, 6, 6, 8, 8, 8])  # t = 0..360
    # window (120, 360]: the point at 120 is the baseline, +2 at 240
    assert increase_per_interval(s, 120, start=120, end=360) == [(240.0, 2.0), (360.0, 0.0)]
    assert sum_increase_per_interval([s, s], 120, 0, 360) == [(120.0, 2.0), (240.0, 4.0), (360.0, 0.0)]
    with pytest.raises(ValueError):
        increase_per_interval(s, 0)


def test_value_at_and_time_range() -> None:
    s = _counter([1, 2, 3])
    assert in_range(s, 30, 120).points == ((60.0, 2.0), (120.0, 3.0))
    assert in_range(s).points == s.points
    assert value_at(s, -1) is None
    assert value_at(s, 90) == 2.0
    assert time_range([s, _counter([1], t0=500)]) == (0.0, 500.0)
    assert time_range([]) is None


def test_writer_round_trips() -> None:
    series = [
        Series("kueue_admitted_workloads_total", (("cluster_queue", "a"),),
               ((1700000000.0, 0.0), (1700000060.0, 2.0))),
        Series("kueue_pending_workloads", (("cluster_queue", 'q"x'), ("status", "active")),
               ((1700000000.0, 1.5), (1700000000.25, math.inf))),
    ]
    text = to_openmetrics(series)
    assert text.endswith("# EOF\n")
    assert "# TYPE kueue_admitted_workloads counter\n" in text
    assert "# TYPE kueue_pending_workloads gauge\n" in text
    assert 'kueue_admitted_workloads_total{cluster_queue="a"} 2 1700000060\n' in text
    assert 'kueue_pending_workloads{cluster_queue="q\\"x",status="active"} +Inf 1700000000.25\n' in text
    back = parse_metrics({"metrics/x.om": text})
    assert back.select("kueue_admitted_workloads_total")[0].points == series[0].points
    assert back.select("kueue_pending_workloads")[0].points == series[1].points


def test_fixture_metrics_parse() -> None:
    files = sorted(FIXTURES.glob("snapshots/*/metrics/**/*.om"))
    assert files, "expected OpenMetrics fixtures"
    for f in files:
        store = parse_metrics({f.name: f.read_text()})
        assert store, f"{f}: no series"
    trickle = parse_metrics({"kueue.om": (FIXTURES / "snapshots/slow-pod-preemption/metrics/kueue.om").read_text()})
    demo = trickle.select("kueue_admitted_workloads_total", cluster_queue="demo-cq")
    assert len(demo) == 1 and demo[0].label("replica_role") == "leader"
    span = demo[0].span()
    assert span is not None and span[1] - span[0] == 6 * 3600  # 6 h at a 60 s step
    assert len(demo[0].points) == 361
    per_15m = increase_per_interval(demo[0], 900)
    assert sum(v for _, v in per_15m) == 24  # one admission per 15 minutes


@pytest.mark.prometheus
@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_promtool_accepts_writer_output_and_fixtures(tmp_path: Path) -> None:
    series = [Series("kueue_admitted_workloads_total", (("cluster_queue", "a"),),
                     tuple((1700000000.0 + 60 * i, float(i // 15)) for i in range(120)))]
    files = [tmp_path / "written.om"]
    files[0].write_text(to_openmetrics(series))
    files += sorted(FIXTURES.glob("snapshots/*/metrics/**/*.om"))
    for i, f in enumerate(files):
        cmd = ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(f), str(tmp_path / f"db{i}")]
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        assert out.returncode == 0, f"{f}: {out.stderr}"


def test_runs_of_one_series_read_like_single_lines() -> None:
    """The repeated-series shortcut gives the same store as lines of distinct series would."""
    text = ("# TYPE a counter\n"
            'a_total{x="1"} 1 10\na_total{x="1"} 2 20\na_total{x="1"} 3 30 # {id="e"} 1 30\n'
            'a_total{x="1"} 4 40\na_total{x="1"}  5 50\n'
            'a_total{x="1",y="2"} 7 10\na_total 9 10\na_total 10\n'
            "# TYPE b gauge\nb -1 10\nb NaN 20\nb +Inf 30\n# EOF\n")
    store = parse_metrics({"m.om": text}, default_time=99.0)
    [one] = store.select("a_total", x="1", y=None)
    assert list(one.points) == [(10.0, 1.0), (20.0, 2.0), (30.0, 3.0), (40.0, 4.0), (50.0, 5.0)]
    assert [list(s.points) for s in store.select("a_total", x=None)] == [[(10.0, 9.0), (99.0, 10.0)]]
    [b] = store.select("b")
    assert b.points[0] == (10.0, -1.0) and math.isnan(b.points[1][1]) and b.points[2] == (30.0, math.inf)


def _run_lines(head: str, rows: list[str]) -> str:
    return "".join(f"{head} {row}\n" for row in rows)


@pytest.mark.parametrize(("rows", "error"), [
    (["1 10", "2 20", "1e 30", "4 40"], "m.om:4: invalid sample value '1e'"),
    (["1 10", "2 20", "-3 30", "4 40"], "m.om:4: counter a_total has invalid value -3.0"),
    (["1 10", "2 20", "3 3.0.0", "4 40"], "m.om:4: invalid timestamp '3.0.0'"),
    (["1 10", "2 20", "3 30 40", "4 40"], "m.om:4: expected 'value [timestamp]'"),
])
def test_a_run_with_a_bad_line_reports_that_line(rows: list[str], error: str) -> None:
    """A range query's run is read all at once only when every line in it is plain: any other line is read
    and checked on its own, and the error names it."""
    text = "# TYPE a counter\n" + _run_lines('a_total{x="1"}', rows) + "# EOF\n"
    with pytest.raises(InputError, match=re.escape(error)):
        parse_metrics({"m.om": text})


def test_runs_read_at_once_match_the_line_by_line_reading() -> None:
    """Exponents, signs, leading dots, CRLF endings, label values with spaces and a run broken by NaN give the
    points the line-by-line reading gives (each run checked against the store built from shuffled lines, which
    has no runs at all)."""
    rows = ["1 10", "+2.5 20", ".5 30", "5. 40", "1e3 50", "-0 60", "2E-2 70.5"]
    gauge_rows = ["-1 10", "1.5e+2 20", "NaN 30", "4 40", "5 50"]
    text = ("# TYPE a counter\n" + _run_lines('a_total{x="a b\tc"}', rows)
            + "# TYPE g gauge\n" + _run_lines("g", gauge_rows).replace("\n", "\r\n", 2)
            + _run_lines('g{k="v"}', gauge_rows[:2]) + "# EOF\n")
    store = parse_metrics({"m.om": text})
    shuffled = "\n".join(
        ["# TYPE a counter", *[f'a_total{{x="a b\tc"}} {r}' for r in rows[::2]],
         *[f'a_total{{x="a b\tc"}} {r}' for r in rows[1::2]],
         "# TYPE g gauge", *[f"g {r}" for r in gauge_rows[::-1]], *[f'g{{k="v"}} {r}' for r in gauge_rows[1::-1]],
         "# EOF"]) + "\n"
    expected = parse_metrics({"m.om": shuffled})
    for name in ("a_total", "g"):
        got = {s.labels: s.points for s in store.select(name)}
        want = {s.labels: s.points for s in expected.select(name)}
        assert got.keys() == want.keys()
        for labels, points in want.items():
            assert [p[0] for p in got[labels]] == [p[0] for p in points]
            assert [repr(p[1]) for p in got[labels]] == [repr(p[1]) for p in points]
    [a] = store.select("a_total")
    assert a.points == ((10.0, 1.0), (20.0, 2.5), (30.0, 0.5), (40.0, 5.0), (50.0, 1000.0), (60.0, -0.0),
                        (70.5, 0.02))
