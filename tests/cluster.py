"""Clusters for the tests: real `run.py` nodes on one Postgres schema and one RabbitMQ.

    cluster = LocalCluster(tmp_path, 3, database_url, amqp_url)
    with cluster:
        cluster.wait_balanced()
        owner = cluster.owner_of(company_id)

Every node runs in development mode with shared secrets (so a session made by one is valid on
all), the broker heartbeat short (so a paused node loses its shards in seconds) and the rate
limits off. The cluster's queues carry a name of the tests' own, so a developer's cluster on the
same broker is never touched: each cluster has a name of its own (test runs may overlap), and its
queues are deleted when it stops. In-process apps (pytest-aiohttp) join a cluster with
`serve_passed_requests`, which gives their test server the private socket run.py opens.
"""

from __future__ import annotations

import asyncio
import secrets
import signal
import tempfile
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.request import urlopen

import orjson
from aiohttp import web
from aiohttp.test_utils import TestClient

from mps.cluster.node import delete_cluster
from mps.domain.shards import SHARD_COUNT, shard_of
from mps.http.keys import SERVICES
from tests.server import RunningServer

__all__ = ["LocalCluster", "delete_cluster_queues", "new_cluster_name", "serve_passed_requests"]

SESSION_SECRET = "cluster-test-session-secret-0123456789abcdef"
ENCRYPTION_KEY = "cluster-test-encryption-key-0123456789abcdef"


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
    ) -> None:
        broker = f"{amqp_url}{'&' if '?' in amqp_url else '?'}heartbeat={heartbeat}"
        self.amqp_url = amqp_url
        self.name = new_cluster_name()
        self.nodes = [
            RunningServer(
                _folder(folder / f"node{i + 1}"),
                env={
                    "MPS_NODE_ID": f"node{i + 1}",
                    "MPS_DATABASE_URL": database_url,
                    "MPS_BROKER_URL": broker,
                    "MPS_CLUSTER_NAME": self.name,
                    "MPS_SESSION_SECRET": SESSION_SECRET,
                    "MPS_ENCRYPTION_KEY": ENCRYPTION_KEY,
                    "MPS_RATE_LIMIT_SCALE": "0",
                    "MPS_ACCESS_LOG": "off",
                    **(env or {}),
                },
                ready_within=30.0,
            )
            for i in range(size)
        ]

    def __enter__(self) -> Self:
        for node in self.nodes:
            node.start()
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

    def node_state(self, index: int) -> dict[str, Any] | None:
        """The node's own account of itself (GET /health from loopback); None if it does not
        answer."""
        try:
            with urlopen(f"{self.nodes[index].base_url}/api/v1/health", timeout=2) as response:
                state: dict[str, Any] = orjson.loads(response.read())["node"]
                return state
        except OSError:
            return None

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


async def serve_passed_requests(client: TestClient[Any, Any], folder: Path | None = None) -> None:
    """Give an in-process app of a cluster the private socket on which its node runs what other
    nodes pass to it, as run.py does (mps.serve)."""
    server = client.server
    assert server.runner is not None
    # A short path of its own: a socket's path may not be longer than about 100 bytes.
    path = str(
        Path(
            tempfile.mkdtemp(
                prefix="mps-", dir=folder if folder is not None and len(str(folder)) < 60 else None
            )
        )
        / "n.sock"
    )
    await web.UnixSite(server.runner, path).start()
    cluster = client.app[SERVICES].cluster if client.app is not None else None
    assert cluster is not None, "the app is not part of a cluster (broker_url must be amqp://)"
    cluster.dispatch.serve_at(path)
