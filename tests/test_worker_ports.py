"""Each worker's own port (MPS_WORKER_PORT, mps.workers): with `run.py --workers N`, worker i
listens on MPS_WORKER_PORT + i - 1 besides the port the workers share, so a balancer can send a
company's requests to the worker that owns its shard rather than to a random one.

One `run.py --workers 2` on the real Postgres and RabbitMQ serves the module's tests that need
running workers (they only add companies and payments of their own). The passing between the
workers is read from their metrics ports: `mps_passed_requests_total` counts on the worker that
passed a request on, `mps_peer_requests_total{outcome="ran"}` on the owner that ran it.
"""

from __future__ import annotations

import base64
import secrets
import socket
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import orjson
import pytest

from mps.config import ConfigError, load_settings
from mps.domain.shards import SHARD_COUNT, shard_of
from mps.workers import plan_workers
from tests.cluster import drop_schema, node_at, require_reachable
from tests.conftest import AMQP_URL, PG_URL
from tests.helpers import free_port, free_ports
from tests.server import RunningServer
from tests.test_balancer import Nginx, require_nginx
from tests.test_workers import (
    API,
    Workers,
    _count,
    _creates,
    _run,
    _sign_up,
    _worker_env,
)

CREATES = f"{API}/merchant/payments"
# Creates sent in each case: enough that a stray pass would show, few enough to stay quick.
SENT = 8
# How long two started workers may take to own every shard, half each, on a busy machine.
BALANCED_WITHIN = 90.0


@dataclass
class OwnPorts:
    """`run.py --workers 2` with MPS_WORKER_PORT: the workers, and worker i's own port at
    `ports[i - 1]`."""

    workers: Workers
    ports: list[int]

    def url(self, index: int) -> str:
        return f"http://127.0.0.1:{self.ports[index - 1]}"

    def node(self, index: int) -> dict[str, object] | None:
        """Worker `index`'s own account of itself (GET /health on its own port); None while it
        does not answer."""
        return node_at(self.url(index))

    def owner_of(self, company: str) -> int:
        """The index (1 or 2) of the worker owning the company's shard, as its own port says."""
        shard = shard_of(company)
        for index in (1, 2):
            node = self.node(index)
            if node is not None and shard in _shards(node):
                return index
        msg = f"neither worker owns shard {shard}"
        raise AssertionError(msg)

    async def passing(self, http: aiohttp.ClientSession, index: int) -> tuple[float, float]:
        """Worker `index`'s requests passed on to an owner, and passed here and run."""
        metrics = await self.workers.metrics(http, index)
        assert metrics is not None, f"worker {index}'s metrics port does not answer"
        return (
            _total(metrics, "mps_passed_requests_total"),
            _total(metrics, "mps_peer_requests_total", outcome="ran"),
        )

    async def created(self, http: aiohttp.ClientSession, index: int) -> float:
        """The creates worker `index` answered 201 itself."""
        metrics = await self.workers.metrics(http, index)
        assert metrics is not None, f"worker {index}'s metrics port does not answer"
        return _count(metrics, "POST", CREATES, "201")


def _shards(node: dict[str, object]) -> list[int]:
    shards = node.get("ownedShards")
    return [int(s) for s in shards] if isinstance(shards, list) else []


def _total(metrics: str, name: str, **labels: str) -> float:
    """The sum of the series `name` whose labels include `labels` (0 when there is none)."""
    total = 0.0
    for line in metrics.splitlines():
        series, _, value = line.rpartition(" ")
        if series.partition("{")[0] != name:
            continue
        if all(f'{label}="{wanted}"' in series for label, wanted in labels.items()):
            total += float(value)
    return total


def _company_of(headers: dict[str, str]) -> str:
    """The company a session's bearer token names (its JWT's `cid`), as a balancer reads it."""
    payload = headers["Authorization"].removeprefix("Bearer ").split(".")[1]
    claims = orjson.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return str(claims["cid"])


def _balanced(own: OwnPorts) -> bool:
    """Whether worker i answers on its own port as `…-w<i>`, and the two own every shard
    between them, half each (so no shard moves while the tests run)."""
    nodes = [own.node(index) for index in (1, 2)]
    if None in nodes:
        return False
    names = [str(node["id"]).rsplit("-", 1)[1] for node in nodes if node is not None]
    every = sorted(shard for node in nodes if node is not None for shard in _shards(node))
    halves = all(len(_shards(node)) == SHARD_COUNT // 2 for node in nodes if node is not None)
    return names == ["w1", "w2"] and every == list(range(SHARD_COUNT)) and halves


@pytest.fixture(scope="module")
def own(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnPorts]:
    require_reachable(5432, f"PostgreSQL at {PG_URL}")
    require_reachable(5672, f"RabbitMQ at {AMQP_URL}")
    schema = f"t_{secrets.token_hex(6)}"
    workers = Workers(
        tmp_path_factory.mktemp("worker-ports"), f"{PG_URL}?schema={schema}", AMQP_URL
    )
    workers.metrics_port, first = free_ports(2), free_ports(2)
    workers.env["MPS_METRICS_PORT"] = str(workers.metrics_port)
    workers.env["MPS_WORKER_PORT"] = str(first)
    running = OwnPorts(workers, [first, first + 1])
    try:
        workers.start()
        deadline = time.monotonic() + BALANCED_WITHIN
        while not _balanced(running):
            assert workers.process is not None
            assert workers.process.poll() is None, workers.log_text()[-3000:]
            assert time.monotonic() < deadline, (
                f"the workers did not own the shards half each on their own ports:\n"
                f"{workers.log_text()[-3000:]}"
            )
            time.sleep(0.2)
        yield running
    finally:
        workers.close()
        drop_schema(schema)


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    # A new connection per request, so that the kernel picks a worker for each on the shared
    # port.
    connector = aiohttp.TCPConnector(force_close=True)
    async with aiohttp.ClientSession(connector=connector) as session:
        yield session


# --- settings ---------------------------------------------------------------------------------


def test_each_worker_is_given_the_next_own_port_beside_its_peer_and_metrics_ports(
    tmp_path: Path,
) -> None:
    # given
    env = _worker_env(
        tmp_path, MPS_PEER_PORT="9100", MPS_METRICS_PORT="9200", MPS_WORKER_PORT="9300"
    )
    settings = load_settings(["--workers", "3"], env)

    # when
    planned = plan_workers(settings, ["run.py"], ["--workers", "3"], env)

    # then
    workers = [load_settings(w.command[1:], w.env) for w in planned]
    assert [(w.peer_port, w.metrics_port, w.worker_port) for w in workers] == [
        (9100, 9200, 9300),
        (9101, 9201, 9301),
        (9102, 9202, 9302),
    ]


def test_workers_without_mps_worker_port_have_no_own_port(tmp_path: Path) -> None:
    env = _worker_env(tmp_path)
    settings = load_settings(["--workers", "2"], env)

    planned = plan_workers(settings, ["run.py"], [], env)

    assert [load_settings(w.command[1:], w.env).worker_port for w in planned] == [None, None]
    assert not [w for w in planned if "MPS_WORKER_PORT" in w.env]


@pytest.mark.parametrize(
    ("settings", "refusal"),
    [
        ({"MPS_PEER_PORT": "9100", "MPS_WORKER_PORT": "9101"}, "MPS_PEER_PORT and MPS_WORKER_PORT"),
        (
            {"MPS_METRICS_PORT": "9200", "MPS_WORKER_PORT": "9199"},
            "MPS_METRICS_PORT and MPS_WORKER_PORT",
        ),
    ],
)
def test_own_ports_overlapping_the_peer_or_metrics_ports_are_refused(
    tmp_path: Path, settings: dict[str, str], refusal: str
) -> None:
    env = _worker_env(tmp_path, **settings)
    loaded = load_settings(["--workers", "2"], env)

    with pytest.raises(ConfigError, match=f"{refusal} overlap: each of the 2 workers"):
        plan_workers(loaded, ["run.py"], [], env)


@pytest.mark.parametrize(
    ("first", "shared"),
    [("65535", "8080"), ("8079", "8080")],
    ids=["past-65535", "over-the-shared-port"],
)
def test_own_ports_past_65535_or_over_the_shared_port_are_refused(
    tmp_path: Path, first: str, shared: str
) -> None:
    env = _worker_env(tmp_path, MPS_WORKER_PORT=first, MPS_PORT=shared)
    loaded = load_settings(["--workers", "2"], env)

    with pytest.raises(ConfigError, match=f"MPS_WORKER_PORT={first} gives the 2 workers ports"):
        plan_workers(loaded, ["run.py"], [], env)


@pytest.mark.parametrize("value", ["0", "port", "65536", "-1", "8080"])
def test_an_mps_worker_port_that_is_not_a_port_beside_the_service_is_refused(
    tmp_path: Path, value: str
) -> None:
    with pytest.raises(ConfigError, match="MPS_WORKER_PORT must"):
        load_settings([], _worker_env(tmp_path, MPS_WORKER_PORT=value, MPS_PORT="8080"))


def test_run_py_refuses_overlapping_own_ports_with_exit_2_before_starting_a_worker(
    tmp_path: Path,
) -> None:
    refused = _run(
        tmp_path,
        "--workers",
        "2",
        **_worker_env(tmp_path, MPS_PEER_PORT="9100", MPS_WORKER_PORT="9101"),
    )

    assert refused.returncode == 2, refused.stderr[-2000:]
    assert "run.py: MPS_PEER_PORT and MPS_WORKER_PORT overlap" in refused.stderr
    assert "worker 1 started" not in refused.stderr
    assert "Traceback" not in refused.stderr


def test_a_single_node_ignores_mps_worker_port(tmp_path: Path) -> None:
    # given
    port = free_port()

    # when
    with RunningServer(tmp_path, env={"MPS_WORKER_PORT": str(port)}) as server:
        served = server.call(f"{API}/health/live")

        # then: it serves on its port alone
        assert served
        with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port)):
            pass


# --- running workers --------------------------------------------------------------------------


async def test_each_worker_answers_on_its_own_port_and_both_still_on_the_shared_one(
    own: OwnPorts, http: aiohttp.ClientSession
) -> None:
    # when
    first, second = own.node(1), own.node(2)
    shared = await own.workers.views(http)

    # then: each own port is one worker, a node of its own with its own shards
    assert first is not None and second is not None
    assert str(first["id"]).endswith("-w1") and str(second["id"]).endswith("-w2")
    assert not set(_shards(first)) & set(_shards(second))
    # and the shared port reaches both, as before
    assert sorted(shared) == sorted([str(first["id"]), str(second["id"])])


async def test_a_create_sent_to_its_owners_own_port_is_served_there_and_passed_nowhere(
    own: OwnPorts, http: aiohttp.ClientSession
) -> None:
    # given
    headers = await _sign_up(http, own.workers.base, "owner@worker-ports.example")
    owner = own.owner_of(_company_of(headers))
    passing = [await own.passing(http, index) for index in (1, 2)]
    served = await own.created(http, owner)

    # when
    statuses = await _creates(http, own.url(owner), headers, "to-owner", SENT)

    # then: every create answered by the owner itself; neither worker passed anything
    assert statuses == [201] * SENT
    assert await own.created(http, owner) == served + SENT
    assert [await own.passing(http, index) for index in (1, 2)] == passing


async def test_a_create_sent_to_the_other_workers_own_port_is_passed_to_the_owner_and_answered(
    own: OwnPorts, http: aiohttp.ClientSession
) -> None:
    # given
    headers = await _sign_up(http, own.workers.base, "other@worker-ports.example")
    owner = own.owner_of(_company_of(headers))
    other = 3 - owner
    (other_passed, _), (owner_passed, owner_ran) = (
        await own.passing(http, other),
        await own.passing(http, owner),
    )

    # when
    statuses = await _creates(http, own.url(other), headers, "to-other", SENT)

    # then: answered 201, each passed once over the peer hop and run by the owner
    assert statuses == [201] * SENT
    assert (await own.passing(http, other))[0] == other_passed + SENT
    assert await own.passing(http, owner) == (owner_passed, owner_ran + SENT)


def _in_front_of_workers(folder: Path, own: OwnPorts) -> Nginx:
    """deploy/nginx.conf, unchanged but for its addresses, in front of the workers: node1 and
    node2 are the workers' own ports, fed to the map from their metrics ports; node3, which
    the map never names, is the shared port (so `any` and the backups reach both)."""
    return Nginx(
        folder,
        [f"127.0.0.1:{port}" for port in (*own.ports, own.workers.port)],
        [f"http://127.0.0.1:{own.workers.metrics_port + index}/metrics" for index in (0, 1)],
    )


async def test_the_nginx_example_in_front_of_the_workers_sends_a_session_to_its_owner(
    own: OwnPorts, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    # given: a company, and the balancer's map written from the workers' metrics
    require_nginx()
    headers = await _sign_up(http, own.workers.base, "nginx@worker-ports.example")
    company = _company_of(headers)
    owner = own.owner_of(company)
    nginx = _in_front_of_workers(tmp_path, own)
    assert f"\n{shard_of(company)} node{owner};\n" in f"\n{nginx.write_map()}"
    passing = [await own.passing(http, index) for index in (1, 2)]

    with nginx:
        # when
        statuses = await _creates(http, nginx.url, headers, "through-nginx", SENT)

        # then: nginx sent each to the owner's own port, and no worker passed one on
        assert statuses == [201] * SENT
        for nth in range(SENT):
            line = nginx.line_for(f"POST {CREATES}", nth)
            assert line["upstream"] == nginx.addresses[owner - 1]
        assert [await own.passing(http, index) for index in (1, 2)] == passing
