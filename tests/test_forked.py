"""Work in a forked child (kueuediag/forked.py): `in_two` must return or raise what the serial loop does, whichever
process ran each task and whatever happened to the child."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import pytest

from kueuediag.forked import Forked, in_two

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="a second process needs os.fork (POSIX)")
PARENT = os.getpid()


def _where(i: int) -> Callable[[], tuple[int, str]]:
    return lambda: (i, "here" if os.getpid() == PARENT else "child")


class Boom(Exception):
    pass


def _boom(i: int, *, only_in_child: bool = False) -> Callable[[], tuple[int, str]]:
    def task() -> tuple[int, str]:
        if not only_in_child or os.getpid() != PARENT:
            raise Boom(f"task {i}")
        return i, "here"
    return task


def test_values_come_back_in_order_from_both_processes() -> None:
    assert list(in_two([_where(i) for i in range(5)], {1, 3})) == \
        [(0, "here"), (1, "child"), (2, "here"), (3, "child"), (4, "here")]


def test_nothing_to_share_runs_serially() -> None:
    assert list(in_two([_where(0), _where(1)], set())) == [(0, "here"), (1, "here")]
    assert list(in_two([_where(0), _where(1)], {0, 1})) == [(0, "here"), (1, "here")]  # nothing left beside it


@pytest.mark.parametrize(("raising", "side", "expected"), [
    ({3}, {3}, "task 3"),  # raised in the child: run again here, raised here
    ({2}, {3}, "task 2"),  # raised here
    ({1, 2}, {1}, "task 1"),  # the child's is earlier
    ({1, 2}, {2}, "task 1"),  # this process's is earlier
])
def test_the_earliest_task_that_raises_is_raised(raising: set[int], side: set[int], expected: str) -> None:
    tasks = [_boom(i) if i in raising else _where(i) for i in range(5)]
    with pytest.raises(Boom, match=expected):
        list(in_two(tasks, side))


def test_a_task_that_fails_only_in_the_child_is_run_here() -> None:
    tasks = [_where(0), _boom(1, only_in_child=True), _where(2), _where(3)]
    assert list(in_two(tasks, {1, 3})) == [(0, "here"), (1, "here"), (2, "here"), (3, "here")]  # the child stopped at 1


def test_a_dead_child_s_tasks_are_run_here() -> None:
    calls: list[str] = []

    def dies_in_child() -> tuple[int, str]:
        if os.getpid() != PARENT:
            os._exit(3)
        calls.append("here")
        return 1, "here"

    assert list(in_two([_where(0), dies_in_child, _where(2)], {1})) == [(0, "here"), (1, "here"), (2, "here")]
    assert calls == ["here"]


def test_a_value_that_cannot_be_sent_is_worked_out_here() -> None:
    def lock() -> tuple[int, object]:
        return 1, threading.Lock() if os.getpid() != PARENT else "here"  # a lock does not pickle

    assert list(in_two([_where(0), lock], {1})) == [(0, "here"), (1, "here")]


def test_a_child_still_running_is_stopped() -> None:
    child = Forked.start(lambda: threading.Event().wait(60))
    assert child is not None
    pid = child._pid
    assert pid is not None
    child.stop()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped: no such child any more
