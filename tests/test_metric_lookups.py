"""The per-target metric lookups answer exactly what the plain scans answer: `select` through its label index,
`sums_at` as one sweep, `value_at` as a binary search."""

from __future__ import annotations

from kueuediag.snapshot.metrics import Series, parse_metrics, sum_at, sums_at, value_at

TEXT = "".join(
    f'kueue_pending_workloads{{cluster_queue="{cq}",status="{st}"{role}}} {v} {t}\n'
    for cq in ("team-b", "team-a", "team-c")
    for st in ("active", "inadmissible")
    for role in ("", ',replica_role="follower"')
    for v, t in ((1, 100), (0 if st == "active" else 3, 160), (2, 220))
) + 'kueue_pending_workloads{status="active"} 9 100\n'


def _brute(store_series: dict[tuple[tuple[str, str], ...], list[tuple[float, float]]],
           **want: str | None | tuple[str, ...]) -> list[tuple[tuple[str, str], ...]]:
    def ok(labels: tuple[tuple[str, str], ...]) -> bool:
        lbl = dict(labels)
        for k, v in want.items():
            actual = lbl.get(k, "")
            if v is None and actual != "" or isinstance(v, str) and actual != v \
                    or isinstance(v, tuple) and actual not in v:
                return False
        return True

    return [labels for labels in sorted(store_series) if ok(labels)]


def test_select_by_label_index_equals_a_scan_of_every_series() -> None:
    store = parse_metrics({"m.prom": TEXT})
    raw = store.series["kueue_pending_workloads"]
    for want in ({"cluster_queue": "team-a"}, {"cluster_queue": "team-b", "status": "inadmissible"},
                 {"cluster_queue": "team-c", "replica_role": None}, {"cluster_queue": ""},
                 {"status": "active", "cluster_queue": ("team-a", "team-c")}, {"cluster_queue": "nope"},
                 {"replica_role": ("follower",)}):
        got = store.select("kueue_pending_workloads", **want)  # type: ignore[arg-type]
        assert [s.labels for s in got] == _brute(raw, **want), want  # type: ignore[arg-type]
        assert all(s.points == tuple(raw[s.labels]) for s in got)
    assert [s.label("cluster_queue") for s in store.select("kueue_pending_workloads", status="active",
                                                            cluster_queue="")] == [""]


def test_sums_at_equals_sum_at_at_each_time() -> None:
    a = Series("x", (("a", "1"),), ((100.0, 1.0), (160.0, 0.0), (160.0, 5.0), (220.0, 2.0)))
    b = Series("x", (("a", "2"),), ((130.0, 4.0), (400.0, 1.0)))
    empty = Series("x", (("a", "3"),), ())
    times = [50.0, 100.0, 120.0, 130.0, 160.0, 200.0, 220.0, 399.0, 400.0, 1000.0]
    assert sums_at([a, b, empty], times) == [sum_at([a, b, empty], t) for t in times]
    assert sums_at([a, b], times)[:4] == [None, 1.0, 1.0, 5.0]
    assert [value_at(a, t) for t in (99.0, 100.0, 160.0, 161.0)] == [None, 1.0, 5.0, 5.0]
