"""This node's part in a cluster: which shards it owns, decided by RabbitMQ, not by us.

Each shard has one durable queue with single-active-consumer (classic by default, quorum with
`MPS_SHARD_QUEUE_TYPE=quorum`; docs/cluster.md, "Settings", says why classic). Every node consumes
every shard queue; the broker makes one consumer active per queue and, when that node's connection
drops, makes another one active. A node learns it is a shard's active consumer when a message of
that queue reaches it, and takes the shard then: it bumps the shard's epoch in storage (which
fences every former owner's commits, mps.persistence.shard_store) and starts serving the shard's
actors. To make sure an unowned shard is taken even without traffic, nodes probe the shards no
heartbeat claims: the probe reaches whoever is active.

Messages of a shard queue:

- `probe`: nothing to do but take the shard.
- `http`: a client's request that reached another node which could not pass it straight to the
  owner (mps.cluster.peers: the owner was not known, or did not run it); run here through this
  node's own peer listener, answer sent back to the asking node's reply queue
  (mps.cluster.forwarding).
- any other kind registered in `services` (the rate-limit leases of mps.cluster.leases): its
  handler's answer is sent back the same way.

A message is acknowledged when its work starts, not when it ends: a node that dies mid-request
never has it run a second time elsewhere (the asking node answers 503 once another node has
taken the shard, or at its deadline; a node that only went silent for a while is waited for, as
it may still run the request). Messages not started yet when a node dies go back to the queue
and reach the next owner.

Losing the connection to the broker loses every shard at once: the broker may make someone else
active the moment it notices. Requests waiting on an answer through it are answered 503 at once,
and so is any request passed on while it is down; the connection comes back by itself
(`ClusterTimings.reconnect_every`), consumes the shard queues again as a standby and probes them,
so the node serves again without a restart. Whatever aio-pika or aiormq raises on the way
(a closed channel, a reset socket, CONNECTION_FORCED) becomes `Unavailable` here, at the one
place this node publishes a request (`ask`), never a 500.

Handing a shard over on purpose (balancing, shutdown) is clean: the node holds new messages of
that shard, waits for the work in flight, stops the shard's actors, then cancels its consumer
and returns the held messages to the queue for the next owner.

Balancing: RabbitMQ 3.10 ignores consumer priorities for single-active-consumer queues, so the
application balances. From the heartbeats each node knows how many nodes serve and how many
shards each holds; a node holding more than its share hands surplus shards over, one after the
other and only while some node is below its share (else a shard would only pass between full
nodes), and consumes their queues again a few seconds later, as a standby at the back of the line.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import aio_pika
import aio_pika.abc
import aio_pika.exceptions

from mps.actors.shards import ShardRouter
from mps.adapters.broker import with_query_defaults
from mps.cluster.asks import Asks, OwnerLost, Service
from mps.cluster.heartbeats import Heartbeats
from mps.cluster.membership import Membership
from mps.cluster.ownership import Ownership, TakeShard
from mps.cluster.peers import PeerClient, PeerKey
from mps.cluster.queues import HEARTBEAT_KEY, HTTP, cluster_exchange, delete_cluster, shard_queue
from mps.cluster.timings import ClusterTimings
from mps.cluster.versions import SPOKEN, Versions
from mps.errors import ShardMoved, Unavailable

__all__ = [
    "HTTP",
    "ClusterNode",
    "ClusterTimings",
    "OwnerLost",
    "cluster_exchange",
    "delete_cluster",
    "shard_queue",
]

logger = logging.getLogger(__name__)


class ClusterNode(Ownership, Heartbeats, Asks):
    """This node in the cluster. Its parts live beside it: taking and handing over shards
    (mps.cluster.ownership), heartbeats, probes and balance (mps.cluster.heartbeats), passing
    requests to owners and running those passed here (mps.cluster.asks); starting, stopping and
    the connection's loss are here."""

    def __init__(
        self,
        url: str,
        node_id: str,
        router: ShardRouter,
        take: TakeShard,
        *,
        name: str = "mps",
        queue_type: str = "classic",
        timings: ClusterTimings | None = None,
        secret: bytes,
    ) -> None:
        self.url = url
        self.node_id = node_id
        self.name = name
        self.queue_type = queue_type
        self.router = router
        self._take_epoch = take
        self.timings = timings or ClusterTimings()
        # Passes requests straight to their owners; signs and checks with the cluster's secret.
        self.peers = PeerClient(PeerKey(secret))
        # The peer protocol versions this node speaks (this release's; a test may make a node
        # speak others, as a release to come would), and the peers already warned about for
        # sharing none with it (mps.cluster.versions).
        self.protocol: Versions = SPOKEN
        self._unspoken: set[tuple[str, Versions]] = set()
        # This node's peer listener: as other nodes reach it (in heartbeats), and as it reaches
        # itself (to run what the broker brings).
        self.peer_address: str | None = None
        self.peer_port: int | None = None
        self._peer_local: str | None = None
        self._peer_ready = asyncio.Event()
        self.services: dict[str, Service] = {}
        self.membership = Membership(node_id, router.shard_count, self.timings.node_timeout)
        self.draining = False
        self.connected = False
        self.joined = False
        self._connection: aio_pika.abc.AbstractRobustConnection | None = None
        self._consuming: aio_pika.abc.AbstractChannel | None = None
        self._publishing: aio_pika.abc.AbstractChannel | None = None
        self._exchange: aio_pika.abc.AbstractExchange | None = None
        self._queues: dict[int, aio_pika.abc.AbstractQueue] = {}
        self._consumers: dict[int, str] = {}
        self._reply_queue: str | None = None
        self._replies: dict[str, asyncio.Future[bytes]] = {}
        # correlation -> the node that said it started running that passed request, and when
        # that notice arrived.
        self._started: dict[str, tuple[str, float]] = {}
        self._taking: dict[int, asyncio.Future[None]] = {}
        self._held: dict[int, list[aio_pika.abc.AbstractIncomingMessage]] = {}
        # Passed requests running, by shard: a hand-over waits for them.
        self._running: dict[int, set[asyncio.Task[Any]]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._later: set[asyncio.Task[None]] = set()
        self._sent_at: float | None = None
        self.round_trip: float | None = None
        self.heard_self_at: float | None = None
        # correlation -> the shard asked, for `_started`'s requests.
        self._shards_asked: dict[str, int] = {}
        # Requests waiting on a peer listener's answer, and the node and shard each waits on;
        # those whose shard another node took are cut short (mps.cluster.asks).
        self._on_peers: dict[asyncio.Task[Any], tuple[str, int]] = {}
        self._cut: set[asyncio.Task[Any]] = set()
        # Shard changes, for the metrics: taken, handed over, taken from a lost peer, and
        # dropped at once (the broker lost, or storage fenced a commit).
        self.taken = 0
        self.handed_over = 0
        self.taken_from_lost = 0
        self.dropped = 0
        # Requests sent to shard queues (passed requests, leases): how often the broker carried
        # what a peer listener could not.
        self.asked = 0

    async def start(self) -> None:
        self._connection = await aio_pika.connect_robust(
            with_query_defaults(
                self.url,
                heartbeat=str(self.timings.broker_heartbeat),
                reconnect_interval=str(self.timings.reconnect_every),
            ),
            client_properties={"connection_name": f"mps {self.node_id}"},
        )
        self._connection.close_callbacks.add(self._on_connection_lost)
        self._connection.reconnect_callbacks.add(self._on_reconnected)
        self._publishing = await self._connection.channel(publisher_confirms=False)
        self._consuming = await self._connection.channel(publisher_confirms=False)
        await self._consuming.set_qos(prefetch_count=256)
        self._exchange = await self._consuming.declare_exchange(
            cluster_exchange(self.name),
            aio_pika.ExchangeType.TOPIC,
            durable=True,
        )
        replies = await self._consuming.declare_queue(exclusive=True, auto_delete=True)
        await replies.consume(self._on_reply, no_ack=True)
        self._reply_queue = replies.name
        beats = await self._consuming.declare_queue(exclusive=True, auto_delete=True)
        await beats.bind(self._exchange, HEARTBEAT_KEY)
        await beats.consume(self._on_heartbeat, no_ack=True)
        for index in range(self.router.shard_count):
            self._queues[index] = await self._consuming.declare_queue(
                shard_queue(self.name, index),
                durable=True,
                arguments={"x-queue-type": self.queue_type, "x-single-active-consumer": True},
            )
        for index in range(self.router.shard_count):
            await self._consume(index)
        self.connected = self.joined = True
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._beat(), name="cluster heartbeat"),
            loop.create_task(self._balance(), name="cluster balance"),
        ]
        await self._probe(set(range(self.router.shard_count)))

    async def drain(self) -> None:
        """Hand every shard over and stop taking any: for a clean shutdown. Requests that
        reach this node meanwhile are passed to the new owners."""
        self.draining = True
        await self._send_heartbeat()
        for index in list(self._consumers):
            if not self.router.owns_shard(index):
                await self._cancel_consumer(index)
        await asyncio.gather(*(self._hand_over(i, again=False) for i in list(self.router.owned)))
        logger.info("node %s handed over its shards", self.node_id)

    async def close(self) -> None:
        for task in [*self._tasks, *self._later]:
            task.cancel()
        await asyncio.gather(*self._tasks, *self._later, return_exceptions=True)
        for waiting in self._replies.values():
            if not waiting.done():
                waiting.set_exception(ShardMoved())
        await self.peers.close()
        if self._connection is not None:
            await self._connection.close()
        self.connected = self.joined = False

    def _on_connection_lost(self, *_args: Any) -> None:
        if not self.connected:
            return
        self.connected = self.joined = False
        owned = sorted(self.router.owned)
        if owned:
            logger.warning(
                "node %s lost the broker; dropping its %d shards", self.node_id, len(owned)
            )
        # The broker may have made another node active for each of them already.
        self.dropped += len(owned)
        self.router.drop_all()
        self._held.clear()
        # Their answers would come back through this connection: none will.
        for waiting in self._replies.values():
            if not waiting.done():
                waiting.set_exception(Unavailable("the connection to the cluster was lost; retry"))

    def _on_reconnected(self, *_args: Any) -> None:
        # The robust channel consumes again the queues it was consuming (as a standby at the back
        # of each line); a queue whose stand-by came due while the broker was away is consumed
        # here; probes then tell which shards are now ours.
        self.connected = self.joined = True
        self._later_call(0, self._rejoin)

    async def _rejoin(self) -> None:
        if not self.draining:
            for index in range(self.router.shard_count):
                if index not in self._consumers:
                    await self._consume(index)
        await self._probe(set(range(self.router.shard_count)))

    def _later_call(self, delay: float, work: Callable[[], Awaitable[None]]) -> None:
        # A factory, not a coroutine: the node may close before the delay is over, and a
        # coroutine made now would then be dropped unawaited (a warning, an error in tests).
        async def run() -> None:
            await asyncio.sleep(delay)
            try:
                await work()
            except Exception as exc:
                # The broker went away meanwhile: reconnecting consumes and probes again.
                logger.info("deferred cluster work failed: %s", exc)

        task = asyncio.get_running_loop().create_task(run())
        self._later.add(task)
        task.add_done_callback(self._later.discard)

    def lost(self, shards: frozenset[int]) -> None:
        """Storage refused a commit for `shards`: another node took them. Drop them now."""
        for index in shards:
            if self.router.owns_shard(index):
                self.dropped += 1
            self.router.drop(index)
