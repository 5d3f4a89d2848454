"""Bounded memo tables: how kueuediag remembers an answer per distinct value without letting memory grow.

A full table keeps what it holds and answers the rest without remembering them. It is never emptied to start
again: kueuediag's inputs name the same values round after round (a controller log names the pending heads in
every scheduling cycle; a cluster's objects repeat images, volume names and reasons), so a table emptied when
full and refilled in the same order misses on every lookup once the distinct values outnumber it.
"""

from __future__ import annotations

from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


def remember(table: dict[K, V], key: K, value: V, limit: int) -> V:
    """`value`, stored under `key` while `table` holds fewer than `limit` keys."""
    if len(table) < limit:
        table[key] = value
    return value
