"""Clusters for the tests: real `run.py` nodes on one Postgres schema and one RabbitMQ.

    cluster = LocalCluster(tmp_path, 3, database_url, amqp_url)
    with cluster:
        cluster.wait_balanced()
        owner = cluster.owner_of(company_id)

Every node runs in development mode with shared secrets (so a session made by one is valid on
all), the broker heartbeat short (so a paused node loses its shards in seconds) and the rate
limits off. The cluster's queues carry a name of the tests' own, so a developer's cluster on the
same broker is never touched: each cluster has a name of its own (test runs may overlap), and its
queues are deleted when it stops. Each node's peer listener is on a port the cluster chose
(`peer_url`), and the nodes share `CLUSTER_SECRET`, so a test can call a peer listener itself.
In-process apps (pytest-aiohttp) join a cluster with `serve_passed_requests`, which gives their
test server the peer listener run.py opens.
"""

from __future__ import annotations

import asyncio
import secrets
import signal
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.request import urlopen

import aiohttp
import asyncpg
import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from mps.cluster.listener import listen_for_peers
from mps.cluster.node import ClusterNode, delete_cluster
from mps.domain.shards import SHARD_COUNT, shard_of
from mps.http.keys import SERVICES
from tests.conftest import AMQP_URL, PG_URL, REQUIRE_SERVICES
from tests.helpers import eventually, free_port
from tests.server import RUN_PY, RunningServer

__all__ = [
    "CLUSTER_SECRET",
    "LocalCluster",
    "NodeMember",
    "OwnClusterNode",
    "balanced_cluster",
    "company_and_its_owner",
    "delete_cluster_queues",
    "drop_schema",
    "in_halves",
    "in_process_beside_one_node",
    "new_cluster_name",
    "node_at",
    "node_of_its_own_cluster",
    "require_reachable",
    "serve_passed_requests",
    "sign_up_on",
]

# What the `own_cluster_node` fixture gives a test: it starts a node of a cluster of its own.
OwnClusterNode = Callable[
    ..., AbstractAsyncContextManager[tuple[TestClient[Any, Any], ClusterNode]]
]

SESSION_SECRET = "cluster-test-session-secret-0123456789abcdef"
ENCRYPTION_KEY = "cluster-test-encryption-key-0123456789abcdef"
CLUSTER_SECRET = "cluster-test-peer-secret-0123456789abcdefgh"


class LocalCluster:
    def __init__(
        self,
        folder: Path,
        size: int,
        database_url: str,
        amqp_url: str,
        *,
        heartbeat: int = 2,
        env: dict[str, str] | None = None,
        node_env: list[dict[str, str]] | None = None,
        run_py: list[Path] | None = None,
        started: int | None = None,
    ) -> None:
        """`env` is every node's; `node_env[i]`, when given, node i's alone; `run_py[i]`, when
        given, the run.py node i runs (another release's, `release_before`). Entering starts
        the first `started` nodes (all by default); a test starts the others
        (`nodes[i].start()`), and leaving stops every node started."""
        self.started = size if started is None else started
        broker = f"{amqp_url}{'&' if '?' in amqp_url else '?'}heartbeat={heartbeat}"
        self.amqp_url = amqp_url
        self.name = new_cluster_name()
        self.peer_ports = [free_port() for _ in range(size)]
        self.nodes = [
            RunningServer(
                _folder(folder / f"node{i + 1}"),
                env={
                    "MPS_NODE_ID": f"node{i + 1}",
                    "MPS_DATABASE_URL": database_url,
                    "MPS_BROKER_URL": broker,
                    "MPS_CLUSTER": "on",
                    "MPS_CLUSTER_NAME": self.name,
                    "MPS_SESSION_SECRET": SESSION_SECRET,
                    "MPS_ENCRYPTION_KEY": ENCRYPTION_KEY,
                    "MPS_CLUSTER_SECRET": CLUSTER_SECRET,
                    "MPS_PEER_PORT": str(self.peer_ports[i]),
                    "MPS_RATE_LIMIT_SCALE": "0",
                    "MPS_ACCESS_LOG": "off",
                    **(env or {}),
                    **(node_env[i] if node_env is not None else {}),
                },
                ready_within=30.0,
                run_py=run_py[i] if run_py is not None else RUN_PY,
            )
            for i in range(size)
        ]

    def __enter__(self) -> Self:
        # Side by side, as an operator starts a cluster: each node's start is mostly waiting
        # (its imports, its migrations under their lock, its broker connection).
        try:
            for node in self.nodes[: self.started]:
                node.launch()
            for node in self.nodes[: self.started]:
                node.wait_ready()
        except BaseException:
            self.__exit__(None, None, None)  # no node of a cluster that failed to start is left
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for node in self.nodes:
            if node._process is None:
                continue
            if node.process.poll() is None:
                node.process.send_signal(signal.SIGCONT)
            # Reaped even when it ended by itself, so its log is closed.
            node.kill()
        delete_cluster_queues(self.amqp_url, self.name)

    def urls(self) -> list[str]:
        return [node.base_url for node in self.nodes]

    def peer_url(self, index: int) -> str:
        """The base URL of the node's peer listener."""
        return f"http://127.0.0.1:{self.peer_ports[index]}"

    def node_state(self, index: int) -> dict[str, Any] | None:
        """The node's own account of itself (GET /health from loopback); None if it does not
        answer."""
        return node_at(self.nodes[index].base_url)

    def owned(self, alive: list[int] | None = None) -> dict[int, list[int]]:
        """The shards each answering node says it owns, by node index."""
        found: dict[int, list[int]] = {}
        for index in alive if alive is not None else range(len(self.nodes)):
            state = self.node_state(index)
            if state is not None:
                found[index] = state.get("ownedShards", [])
        return found

    def wait_balanced(self, within: float = 20.0, alive: list[int] | None = None) -> float:
        """Wait until the answering nodes in `alive` (all by default) own every shard exactly
        once, each its share at most; returns how long it took."""
        started = time.monotonic()
        nodes = alive if alive is not None else list(range(len(self.nodes)))
        share = -(-SHARD_COUNT // len(nodes))
        while True:
            owned = self.owned(nodes)
            every = [s for shards in owned.values() for s in shards]
            if (
                len(owned) == len(nodes)
                and sorted(every) == list(range(SHARD_COUNT))
                and all(0 < len(shards) <= share for shards in owned.values())
            ):
                return time.monotonic() - started
            if time.monotonic() - started > within:
                msg = f"not balanced within {within}s: {owned}"
                raise AssertionError(msg)
            time.sleep(0.1)

    def owner_of(self, company_id: str, alive: list[int] | None = None) -> int:
        shard = shard_of(company_id)
        for index, shards in self.owned(alive).items():
            if shard in shards:
                return index
        msg = f"nobody owns shard {shard}"
        raise AssertionError(msg)

    def wait_owned(self, company_id: str, by: list[int], within: float) -> float:
        """Wait until one of the nodes `by` owns the company's shard; returns how long."""
        started = time.monotonic()
        while True:
            try:
                self.owner_of(company_id, by)
                return time.monotonic() - started
            except AssertionError:
                if time.monotonic() - started > within:
                    raise
            time.sleep(0.1)

    def pause(self, index: int) -> None:
        self.nodes[index].process.send_signal(signal.SIGSTOP)

    def resume(self, index: int) -> None:
        self.nodes[index].process.send_signal(signal.SIGCONT)


def node_at(base_url: str) -> dict[str, Any] | None:
    """The own account of itself (GET /health) of the node or worker at `base_url`; None while
    it does not answer."""
    try:
        with urlopen(f"{base_url}/api/v1/health", timeout=2) as response:
            state: dict[str, Any] = orjson.loads(response.read())["node"]
            return state
    except OSError:
        return None


def require_reachable(port: int, what: str) -> None:
    """Skips the test when nothing answers on loopback `port`; fails it instead when this run
    requires the services (MPS_REQUIRE_SERVICES), so a missing service cannot pass quietly."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            pass
    except OSError:
        if REQUIRE_SERVICES:
            pytest.fail(f"{what} is required by this test run and is not reachable")
        pytest.skip(f"{what} is not reachable")


@contextmanager
def balanced_cluster(
    folder: Path, size: int, env: dict[str, str] | None = None
) -> Iterator[LocalCluster]:
    """`size` nodes on the test PostgreSQL server, in a schema of their own that is dropped
    afterwards, and the test RabbitMQ, once every shard has its owner."""
    require_reachable(5432, f"PostgreSQL at {PG_URL}")
    require_reachable(5672, f"RabbitMQ at {AMQP_URL}")
    schema = f"t_{secrets.token_hex(6)}"
    try:
        with LocalCluster(folder, size, f"{PG_URL}?schema={schema}", AMQP_URL, env=env) as nodes:
            nodes.wait_balanced()
            yield nodes
    finally:
        drop_schema(schema)


def drop_schema(schema: str) -> None:
    """Drop a test's Postgres schema, with everything in it."""

    async def drop() -> None:
        admin = await asyncpg.connect(PG_URL)
        try:
            await admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        finally:
            await admin.close()

    # Torn down while a test's event loop may still be set on this thread.
    worker = threading.Thread(target=asyncio.run, args=(drop(),))
    worker.start()
    worker.join(30)


def new_cluster_name() -> str:
    return f"mps-test-{secrets.token_hex(4)}"


def delete_cluster_queues(amqp_url: str, name: str) -> None:
    """Delete a test cluster's queues and exchange from the broker (they are durable)."""
    # Called from fixtures of async tests, whose loop is running on this thread.
    worker = threading.Thread(target=asyncio.run, args=(delete_cluster(amqp_url, name),))
    worker.start()
    worker.join(30)


def _folder(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


async def serve_passed_requests(client: TestClient[Any, Any], folder: Path | None = None) -> str:
    """Give an in-process app of a cluster the peer listener on which its node runs what other
    nodes pass to it, as run.py does (mps.serve); its address ("host:port")."""
    del folder  # a port needs no folder; kept for the callers that name one
    server = client.server
    assert server.runner is not None
    cluster = client.app[SERVICES].cluster if client.app is not None else None
    assert cluster is not None, "the app is not part of a cluster (broker_url must be amqp://)"
    await listen_for_peers(server.runner, cluster, "127.0.0.1")
    assert cluster.peer_address is not None
    return cluster.peer_address


@dataclass(frozen=True)
class NodeMember:
    """The first member of a company signed up on a node over HTTP: their session and company."""

    token: str
    company: str

    def headers(self, **extra: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}", **extra}


async def sign_up_on(http: aiohttp.ClientSession, base: str, email: str) -> NodeMember:
    """Sign up through the node at `base` (its dev mailbox holds the code) and verify there."""
    api = f"{base}/api/v1"
    async with http.post(f"{api}/auth/signup", json={"companyName": "Acme", "email": email}) as r:
        assert r.status == 201, await r.text()
        signup = await r.json()
    async with http.get(f"{api}/dev/mailbox", params={"to": email}) as r:
        code = (await r.json())["data"][0]["otp"]
    async with http.post(
        f"{api}/auth/otp/verify", json={"loginId": signup["loginId"], "code": code}
    ) as r:
        assert r.status == 200, await r.text()
        session = await r.json()
    return NodeMember(session["sessionToken"], signup["companyId"])


async def company_and_its_owner(
    cluster: LocalCluster, http: aiohttp.ClientSession, email: str
) -> tuple[NodeMember, int, list[int]]:
    """A company signed up through the cluster's first node; the index of the node that owns
    its shard, and those of the other nodes."""
    member = await sign_up_on(http, cluster.urls()[0], email)
    owner = cluster.owner_of(member.company)
    return member, owner, [i for i in range(len(cluster.nodes)) if i != owner]


async def in_halves(node: ClusterNode, cluster: LocalCluster) -> bool:
    """Whether an in-process `node` and the one node of `cluster` each own half the shards."""
    mine = set(node.router.owned)
    theirs = set((await asyncio.to_thread(cluster.owned)).get(0, []))
    return len(mine) == len(theirs) == SHARD_COUNT // 2 and not mine & theirs


@asynccontextmanager
async def in_process_beside_one_node(
    cluster: LocalCluster,
    aiohttp_client: Callable[..., Any],
    make_app: Callable[..., web.Application],
    role: str,
) -> AsyncIterator[TestClient[Any, Any]]:
    """A client of an in-process node of `cluster` (node id `<cluster name>-<role>`) serving
    passed requests, with `cluster`'s one run.py node started: once the two own half the shards
    each. Both are stopped on leaving."""
    # Starting and stopping a node waits for it: off the event loop, which serves the app.
    await asyncio.to_thread(cluster.__enter__)
    client: TestClient[Any, Any] | None = None
    try:
        client = await aiohttp_client(
            make_app(
                broker_url=cluster.amqp_url,
                cluster_name=cluster.name,
                node_id=f"{cluster.name}-{role}",
                session_secret=SESSION_SECRET.encode(),
                encryption_key=ENCRYPTION_KEY.encode(),
                cluster_secret=CLUSTER_SECRET.encode(),
                rate_limit_scale=0.0,
            )
        )
        await serve_passed_requests(client)
        node = client.app[SERVICES].cluster
        assert node is not None
        await eventually(
            lambda: in_halves(node, cluster), within=30, what="the two nodes share the shards"
        )
        yield client
    finally:
        if client is not None:
            await client.close()
        await asyncio.to_thread(cluster.__exit__, None, None, None)


@asynccontextmanager
async def node_of_its_own_cluster(
    aiohttp_client: Callable[..., Any],
    make_app: Callable[..., web.Application],
    amqp_url: str,
    **settings: Any,
) -> AsyncIterator[tuple[TestClient[Any, Any], ClusterNode]]:
    """A client of an in-process node made with `settings`, the one node of a cluster named
    for it alone (its queues deleted afterwards); and the node."""
    name = new_cluster_name()
    client: TestClient[Any, Any] = await aiohttp_client(
        make_app(broker_url=amqp_url, cluster_name=name, node_id=name, **settings)
    )
    try:
        node = client.app[SERVICES].cluster if client.app is not None else None
        assert node is not None
        yield client, node
    finally:
        await client.close()
        await asyncio.to_thread(delete_cluster_queues, amqp_url, name)
