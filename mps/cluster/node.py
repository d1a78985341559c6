"""This node's part in a cluster: which shards it owns, decided by RabbitMQ, not by us.

Each shard has one durable queue with single-active-consumer (classic by default, quorum with
`MPS_SHARD_QUEUE_TYPE=quorum`; see README, "Cluster", for why classic). Every node consumes every
shard queue; the broker makes one consumer active per queue and, when that node's connection
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
never has it run a second time elsewhere (the asking node times out and answers 503). Messages
not started yet when a node dies go back to the queue and reach the next owner.

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
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aio_pika
import aio_pika.abc
import aio_pika.exceptions
import orjson

from mps.actors.shards import ShardRouter
from mps.actors.webhooks.topology import Topology
from mps.adapters.broker import DELAY_LEVELS_MS, delay_queue_name, with_query_defaults
from mps.cluster.forwarding import Answer, Passed
from mps.cluster.membership import Heartbeat, Membership
from mps.cluster.peers import NotRun, PeerClient, PeerKey
from mps.domain.ids import random_base62
from mps.domain.shards import SHARD_COUNT
from mps.errors import ShardMoved, Unavailable

__all__ = ["ClusterNode", "ClusterTimings", "cluster_exchange", "delete_cluster", "shard_queue"]

logger = logging.getLogger(__name__)

HEARTBEAT_KEY = "heartbeat"
PROBE = "probe"
HTTP = "http"


def shard_queue(cluster: str, index: int) -> str:
    return f"{cluster}.shard.{index}"


def cluster_exchange(cluster: str) -> str:
    return f"{cluster}.cluster"


async def delete_cluster(url: str, cluster: str) -> None:
    """Remove a cluster's durable queues and exchange from the broker, for a cluster gone for
    good (its nodes stopped): a benchmark's or a test's."""
    connection = await aio_pika.connect(url)
    try:
        channel = await connection.channel()
        for index in range(SHARD_COUNT):
            await channel.queue_delete(shard_queue(cluster, index))
        await channel.exchange_delete(cluster_exchange(cluster))
        topology = Topology(cluster)
        for queue in topology.queues:
            await channel.queue_delete(queue)
        for level in DELAY_LEVELS_MS:
            await channel.queue_delete(delay_queue_name(topology.attempts, level))
    finally:
        await connection.close()


STARTED = "started"
# The owner took a passed request but could not run it: the asker answers 503 now, rather than
# at its deadline.
FAILED = "failed"

# What aio-pika and aiormq raise when the connection or channel under a publish is gone or going
# (a closed channel, a reset socket, CONNECTION_FORCED, a frame cut short): their own list.
_BROKER_ERRORS: tuple[type[BaseException], ...] = aio_pika.exceptions.CONNECTION_EXCEPTIONS


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


class OwnerLost(TimeoutError):
    """The node running a passed request is gone: no answer will come."""

    def __init__(self, node: str) -> None:
        super().__init__(f"node {node} stopped while running the request")


@dataclass(frozen=True)
class ClusterTimings:
    heartbeat: float = 1.0
    # A node not heard from for this long is taken for gone (its shards are probed).
    node_timeout: float = 3.5
    balance_every: float = 1.0
    # After handing a shard over, consume its queue again as a standby after this long.
    standby_after: float = 3.0
    # Handing a shard over waits at most this long for its work in flight.
    drain_within: float = 10.0
    # A passed request is answered 503 if its owner has not answered within this long.
    forward_within: float = 25.0
    # AMQP heartbeat: how soon the broker notices a node that stopped answering (SIGSTOP, a
    # network partition) and gives its shards to others; about twice this in practice.
    broker_heartbeat: int = 5
    # After losing the broker, try to connect again this often (aio-pika's default is 5 s, and
    # the node serves no shard until it is back).
    reconnect_every: float = 1.0


TakeShard = Callable[[int], Awaitable[int]]
# Serves one kind of request sent to a shard's owner: the request's body in, the answer's out.
Service = Callable[[bytes], Awaitable[bytes]]


class ClusterNode:
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
        # Requests sent to shard queues (passed requests, leases): how often the broker carried
        # what a peer listener could not.
        self.asked = 0

    # Starting and stopping.

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

    # Passing requests to owners.

    def serve_peers_at(self, host: str, port: int, *, listening_on: str) -> None:
        """This node's peer listener takes requests from now on, on `port` of the address
        `listening_on`: other nodes reach it at `host`:`port` (sent in heartbeats)."""
        self.peer_address = f"{_bracketed(host)}:{port}"
        self.peer_port = port
        # This node reaches itself on loopback when it listens on every address.
        local = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(  # noqa: S104
            listening_on, listening_on
        )
        self._peer_local = f"{_bracketed(local)}:{port}"
        self._peer_ready.set()

    @property
    def peer_key(self) -> PeerKey:
        return self.peers.key

    async def forward(self, index: int, passed: Passed) -> Answer:
        """Send `passed` to the owner of shard `index` and return its answer. Raises
        `Unavailable` (503, Retry-After) when no answer can come: the owner stopped while
        running it, did not answer within `forward_within`, or the broker is away when needed.

        Straight to the owner's peer listener when a heartbeat names it; through the shard's
        queue when none does (the shard is between owners, its owner drains) or the node named
        did not run it (the shard moved on since; it refused our signature; it could not be
        reached). The queue then brings it to whoever owns the shard, once it does: a request
        never runs on a node that does not own its shard, and is never sent on a second hop."""
        within = self.timings.forward_within
        started = time.monotonic()
        address = self.membership.peer_of(index, started)
        if address is not None:
            try:
                return await self.peers.run(address, passed, within=within)
            except NotRun as exc:
                logger.info("passing a request through the broker: %s", exc)
            within -= time.monotonic() - started
            if within <= 0:
                msg = "the node that serves this account did not answer in time; retry"
                raise Unavailable(msg)
        try:
            answer = await self.ask(index, HTTP, passed.encode(), within)
        except OwnerLost:
            msg = "the node that served this account stopped while running the request; retry"
            raise Unavailable(msg) from None
        except TimeoutError:
            msg = "the node that serves this account did not answer in time; retry"
            raise Unavailable(msg) from None
        return Answer.decode(answer)

    async def ask(self, index: int, kind: str, body: bytes, within: float) -> bytes:
        """Send a request of `kind` to the owner of shard `index`; its answer's body. Raises
        TimeoutError past `within` (the request is then dropped unrun if still queued), and
        `Unavailable` when the broker connection is down or goes down before the answer."""
        if self._publishing is None or self._reply_queue is None or not self._usable():
            msg = "this node is not connected to the cluster; retry"
            raise Unavailable(msg)
        self.asked += 1
        correlation = random_base62(16)
        waiting: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._replies[correlation] = waiting
        message = aio_pika.Message(
            body,
            type=kind,
            correlation_id=correlation,
            reply_to=self._reply_queue,
            # Not run at all once the asker has given up on it.
            expiration=within,
            # Whole milliseconds: a float in an AMQP table may travel as 32 bits, which cannot
            # hold today's epoch seconds to within a minute.
            headers={"deadline_ms": int((time.time() + within) * 1000)},
        )
        try:
            # The publish is inside the deadline too: a channel being restored could hold it.
            async with asyncio.timeout(within):
                try:
                    await self._publishing.default_exchange.publish(
                        message, routing_key=shard_queue(self.name, index)
                    )
                except Exception as exc:
                    # The connection went away before this node noticed (`connected` is still
                    # set until aio-pika runs its close callbacks): nothing was sent. The error
                    # is then whatever the connection was closed with, at times a bare
                    # Exception, so a failure on a connection found closed counts too.
                    if isinstance(exc, _BROKER_ERRORS) or not self._usable():
                        msg = "this node lost its connection to the cluster; retry"
                        raise Unavailable(msg) from exc
                    raise
                return await waiting
        finally:
            self._replies.pop(correlation, None)
            self._started.pop(correlation, None)
            # Failed while the publish was still running (the connection went away): the
            # publish's own error is what the caller gets, so this one is read here, or the
            # loop would log it as never retrieved.
            if waiting.done() and not waiting.cancelled():
                waiting.exception()

    @property
    def asking(self) -> int:
        """How many asks are waiting for their answer."""
        return len(self._replies)

    def _usable(self) -> bool:
        """Connected as far as this node and the socket under it know."""
        if not self.connected or self._connection is None:
            return False
        transport = self._connection.transport
        return transport is not None and not transport.connection.is_closed

    async def _on_reply(self, message: aio_pika.abc.AbstractIncomingMessage) -> None:
        correlation = message.correlation_id or ""
        if message.type == STARTED:
            if correlation in self._replies:
                self._started[correlation] = (message.body.decode(), time.monotonic())
            return
        waiting = self._replies.get(correlation)
        if waiting is None or waiting.done():
            return
        if message.type == FAILED:
            msg = "the node that serves this account could not run the request; retry"
            waiting.set_exception(Unavailable(msg))
            return
        waiting.set_result(message.body)

    def _fail_orphans(self, now: float) -> None:
        """Passed requests started by a node that is gone will never be answered (the owner
        acknowledges a request when it starts it, so it is not run again): answer them now
        rather than at their deadline, so their clients retry on the shard's new owner.

        A node is gone when nothing was heard of it for `node_timeout`, counting its notice
        that it started the request: just after this node reconnects to the broker, every other
        node's last heartbeat is old, yet one that started a request a moment ago is alive."""
        for correlation, (node, started_at) in list(self._started.items()):
            heard = max(self.membership.heard_at(node) or 0.0, started_at)
            if now - heard <= self.timings.node_timeout:
                continue
            waiting = self._replies.get(correlation)
            if waiting is not None and not waiting.done():
                waiting.set_exception(OwnerLost(node))

    # Shard messages.

    async def _consume(self, index: int) -> None:
        queue = self._queues[index]

        async def on_message(message: aio_pika.abc.AbstractIncomingMessage) -> None:
            await self._on_shard_message(index, message)

        self._consumers[index] = await queue.consume(on_message)

    async def _cancel_consumer(self, index: int) -> None:
        tag = self._consumers.pop(index, None)
        if tag is not None:
            with contextlib.suppress(Exception):
                await self._queues[index].cancel(tag)

    async def _on_shard_message(
        self, index: int, message: aio_pika.abc.AbstractIncomingMessage
    ) -> None:
        held = self._held.get(index)
        if held is not None:
            # Being handed over: the next owner runs it.
            held.append(message)
            return
        if message.consumer_tag != self._consumers.get(index):
            # Delivered to a consumer cancelled since (its task ran after the cancel): the
            # broker has made someone else active, so the message is theirs.
            await message.nack(requeue=True)
            return
        if not self.router.owns_shard(index):
            try:
                await self._take(index)
            except Exception:
                logger.exception("taking shard %d failed; its message goes back", index)
                await asyncio.sleep(1)
                await message.nack(requeue=True)
                return
        await message.ack()
        service = self.services.get(message.type or "")
        if service is not None:
            await self._answer(message, service)
            return
        if message.type != HTTP:
            return
        running = self._running.setdefault(index, set())
        task = asyncio.current_task()
        assert task is not None
        running.add(task)
        try:
            await self._run_passed(message)
        finally:
            running.discard(task)

    async def _answer(
        self, message: aio_pika.abc.AbstractIncomingMessage, service: Service
    ) -> None:
        if message.reply_to is None:
            return
        try:
            answer = await service(message.body)
        except Exception:
            logger.exception("a %s request to this node failed", message.type)
            return
        await self._reply(message, answer)

    async def _reply(
        self,
        message: aio_pika.abc.AbstractIncomingMessage,
        body: bytes,
        *,
        kind: str | None = None,
    ) -> None:
        if self._publishing is None or message.reply_to is None:
            return
        with contextlib.suppress(Exception):
            await self._publishing.default_exchange.publish(
                aio_pika.Message(body, correlation_id=message.correlation_id, type=kind),
                routing_key=message.reply_to,
            )

    async def _run_passed(self, message: aio_pika.abc.AbstractIncomingMessage) -> None:
        deadline = (message.headers or {}).get("deadline_ms")
        within = (deadline / 1000 if isinstance(deadline, int) else 0) - time.time()
        if within <= 0 or message.reply_to is None:
            return  # the asker gave up already
        # Tell the asker who runs it: should this node die, the asker stops waiting for it.
        await self._reply(message, self.node_id.encode(), kind=STARTED)
        try:
            async with asyncio.timeout(within):
                await self._peer_ready.wait()
            assert self._peer_local is not None
            # Through this node's own peer listener, as any passed request: its HTTP stack runs
            # it, and refuses it (not run) if the shard moved away meanwhile.
            answer = await self.peers.run(
                self._peer_local, Passed.decode(message.body), within=within
            )
        except NotRun as exc:
            logger.info("a request passed to this node did not run: %s", exc)
            await self._reply(message, b"", kind=FAILED)
            return
        except Exception:
            logger.exception("a request passed to this node failed")
            await self._reply(message, b"", kind=FAILED)
            return
        await self._reply(message, answer.encode())

    async def _take(self, index: int) -> None:
        taking = self._taking.get(index)
        if taking is None:
            taking = self._taking[index] = asyncio.ensure_future(self._take_now(index))
            taking.add_done_callback(lambda _f: self._taking.pop(index, None))
        await asyncio.shield(taking)

    async def _take_now(self, index: int) -> None:
        self.router.begin_change(index)
        try:
            epoch = await self._take_epoch(index)
            if not self.connected:
                # Lost the broker meanwhile: someone else may be the active consumer by now.
                return
            self.router.adopt(index, epoch)
            logger.info("node %s took shard %d (epoch %d)", self.node_id, index, epoch)
        finally:
            self.router.end_change(index)

    async def _hand_over(self, index: int, *, again: bool) -> None:
        """Give shard `index` to the next consumer in line, cleanly; with `again`, queue up as a
        standby for it afterwards."""
        if index in self._held or not self.router.owns_shard(index):
            return
        # New messages of the shard are held from now on. The requests passed here earlier
        # finish first, while local asks still go through: they ask this shard's actors, so
        # holding asks before they end would make each wait for the other.
        self._held[index] = []
        try:
            running = self._running.get(index)
            if running:
                await asyncio.wait(running, timeout=self.timings.drain_within)
            self.router.begin_change(index)
            await self.router.hand_over(index, drain_within=self.timings.drain_within)
            await self._cancel_consumer(index)
        finally:
            for message in self._held.pop(index, []):
                with contextlib.suppress(Exception):
                    await message.nack(requeue=True)
            self.router.end_change(index)
        logger.info("node %s handed shard %d over", self.node_id, index)
        # Whoever is next in line learns it at once rather than at the next probe round.
        await self._probe({index})
        if again:
            self._later_call(self.timings.standby_after, lambda: self._stand_by(index))

    async def _stand_by(self, index: int) -> None:
        if not self.draining and self.connected and index not in self._consumers:
            await self._consume(index)

    # Heartbeats, probes and balance.

    async def _beat(self) -> None:
        while True:
            try:
                await self._send_heartbeat()
                now = time.monotonic()
                await self._probe(self.membership.unclaimed(now, frozenset(self.router.owned)))
                self._fail_orphans(now)
            except Exception:
                logger.debug("heartbeat failed", exc_info=True)
            await asyncio.sleep(self.timings.heartbeat)

    async def _send_heartbeat(self) -> None:
        if self._exchange is None or not self.connected:
            return
        beat = Heartbeat(
            self.node_id, frozenset(self.router.owned), self.draining, peer=self.peer_address
        )
        started = time.monotonic()
        await self._exchange.publish(
            aio_pika.Message(orjson.dumps(beat.to_json()), expiration=10), routing_key=HEARTBEAT_KEY
        )
        self._sent_at = started

    async def _on_heartbeat(self, message: aio_pika.abc.AbstractIncomingMessage) -> None:
        now = time.monotonic()
        try:
            beat = Heartbeat.from_json(orjson.loads(message.body), now)
        except (ValueError, KeyError):
            return
        if beat.node == self.node_id:
            # Our own heartbeat back: a broker round trip, for /health.
            if self._sent_at is not None:
                self.round_trip = now - self._sent_at
            return
        self.membership.saw(beat)

    async def _probe(self, shards: set[int] | frozenset[int]) -> None:
        if self._publishing is None or not self.connected:
            return
        for index in sorted(shards):
            if self.router.owns_shard(index):
                continue
            await self._publishing.default_exchange.publish(
                aio_pika.Message(b"", type=PROBE, expiration=10),
                routing_key=shard_queue(self.name, index),
            )

    async def _balance(self) -> None:
        while True:
            await asyncio.sleep(self.timings.balance_every)
            if self.draining or not self.connected:
                continue
            try:
                now = time.monotonic()
                share = self.membership.share(now)
                surplus = len(self.router.owned) - share
                # Only towards a node below its share: the broker gives a shard handed over to
                # the next consumer in line, and without someone short of shards in that line it
                # would only pass between full nodes.
                room = sum(
                    max(share - len(h.owned), 0)
                    for h in self.membership.others(now)
                    if not h.draining
                )
                # The highest-numbered first: every node picks alike, so two nodes handing over
                # at once do not pass the same shards back and forth.
                for index in sorted(self.router.owned, reverse=True)[: max(min(surplus, room), 0)]:
                    await self._hand_over(index, again=True)
            except Exception:
                logger.exception("balancing failed")

    # Connection loss.

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
            self.router.drop(index)
