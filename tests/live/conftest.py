from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from kueuediag.snapshot.reader import RawSnapshot, read_snapshot
from tests.live.apiserver import ApiServer, FakeCluster
from tests.live.fixture_gen import inject_secrets

LIVE_FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "snapshots" / "live"


@pytest.fixture(scope="session")
def live_raw() -> RawSnapshot:
    return read_snapshot(LIVE_FIXTURE)


ServerFactory = Callable[..., Any]


@pytest.fixture
def api_server(live_raw: RawSnapshot) -> Iterator[ServerFactory]:
    """`with api_server(**FakeCluster kwargs) as srv:` serves the live fixture (with secrets injected)."""

    @contextmanager
    def make(objects: list[dict[str, Any]] | None = None, secrets: bool = True, **kw: Any) -> Iterator[ApiServer]:
        objs = [dict(o) for o in (objects if objects is not None else live_raw.objects)]
        cluster = FakeCluster(objs, kw.pop("logs", live_raw.logs), **kw)
        if secrets:
            inject_secrets(cluster.objects)
        with ApiServer(cluster) as srv:
            yield srv

    yield make


@pytest.fixture
def vcr_config(record_mode: str) -> dict[str, Any]:
    """Cassettes match on method, path and query only: the recording server ran on a random local port.
    CI replays with the default `--record-mode=none`; re-record with `--record-mode=rewrite`."""
    return {
        "record_mode": record_mode,
        "match_on": ["method", "path", "query"],
        "filter_headers": ["authorization"],
        "decode_compressed_response": True,
    }
