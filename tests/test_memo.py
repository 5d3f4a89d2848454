"""kueuediag.memo: a full table keeps what it holds and answers the rest without storing them."""

from kueuediag.memo import remember


def test_a_full_table_keeps_its_keys_and_stores_no_more() -> None:
    table: dict[str, int] = {}
    assert [remember(table, k, len(k), 2) for k in ("a", "bb", "ccc", "a")] == [1, 2, 3, 1]
    assert table == {"a": 1, "bb": 2}
