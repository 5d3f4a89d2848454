"""Narrow client-behaviour tests replayed from pytest-recording (vcrpy) cassettes.

The cassettes in tests/live/cassettes/test_client_cassettes/ were recorded against the local API server
(tests/live/apiserver.py) with injected faults:

    python -m pytest tests/live/test_client_cassettes.py --record-mode=rewrite

CI replays them with the default `--record-mode=none`: no server runs and nothing is sent over the network
(the kubeconfig points at a closed port; vcrpy answers from the cassette, matching method, path and query).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kueuediag.live.kube import Forbidden, KubeClient
from tests.live.apiserver import TOKEN, Fault
from tests.live.conftest import ServerFactory

CLOSED = "http://127.0.0.1:9"


@contextmanager
def kubeconfig(record_mode: str, api_server: ServerFactory, tmp_path: Path, faults: list[Fault]) -> Iterator[str]:
    if record_mode == "none":
        p = tmp_path / "kubeconfig.json"
        p.write_text('{"apiVersion":"v1","kind":"Config","current-context":"t","clusters":[{"name":"prod-gpu-1",'
                     f'"cluster":{{"server":"{CLOSED}"}}}}],"contexts":[{{"name":"t","context":{{"cluster":'
                     f'"prod-gpu-1","user":"u"}}}}],"users":[{{"name":"u","user":{{"token":"{TOKEN}"}}}}]}}')
        yield str(p)
        return
    with api_server(secrets=False) as srv:
        srv.cluster.faults.extend(faults)
        yield str(srv.kubeconfig(tmp_path))


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.mark.vcr
def test_429_retry_after(record_mode: str, api_server: ServerFactory, tmp_path: Path) -> None:
    faults = [Fault(path="/namespaces/team-a/localqueues$", status=429, times=2, headers={"Retry-After": "2"})]
    with kubeconfig(record_mode, api_server, tmp_path, faults) as kc:
        sleeps = Sleeps()
        c = KubeClient.from_kubeconfig(kc, sleep=sleeps, backoff=0.1)
        lqs = c.list_items("/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/localqueues")
    assert [q["metadata"]["name"] for q in lqs] == ["team-a-queue"]
    assert sleeps == [2.0, 2.0]  # Retry-After wins over the 0.1s/0.2s backoff
    assert [r.status for r in c.log] == [429, 429, 200]


@pytest.mark.vcr
def test_410_expired_continue_restarts(record_mode: str, api_server: ServerFactory, tmp_path: Path) -> None:
    faults = [Fault(path="^/api/v1/nodes$", status=410, times=1, query="continue=")]
    with kubeconfig(record_mode, api_server, tmp_path, faults) as kc:
        c = KubeClient.from_kubeconfig(kc, sleep=Sleeps(), page_size=3)
        nodes = c.list_items("/api/v1/nodes")
    assert sorted(n["metadata"]["name"] for n in nodes) == [
        "cpu-node-1", "gke-a100-pool-1", "gke-a100-pool-2", "gke-a100-pool-3"]
    assert [r.status for r in c.log] == [200, 410, 200, 200]
    assert "continue=" in c.log[1].path and "continue=" not in c.log[2].path


@pytest.mark.vcr
def test_500_then_success_and_403_not_retried(record_mode: str, api_server: ServerFactory, tmp_path: Path) -> None:
    faults = [Fault(path="^/apis/kueue.x-k8s.io$", status=500, times=1),
              Fault(path="^/api/v1/nodes$", status=403)]
    with kubeconfig(record_mode, api_server, tmp_path, faults) as kc:
        sleeps = Sleeps()
        c = KubeClient.from_kubeconfig(kc, sleep=sleeps, backoff=0.5)
        assert c.kueue_version() == "v1beta2"
        with pytest.raises(Forbidden) as err:
            c.list_items("/api/v1/nodes")
    assert sleeps == [0.5]
    assert err.value.status == 403 and "forbidden" in err.value.message
    assert [r.status for r in c.log] == [500, 200, 403]
