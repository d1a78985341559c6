"""Passing requests between nodes: straight to an owner's peer listener, or through a shard's
queue with the answer back on the asker's reply queue; and running what others pass here.
Part of ClusterNode (mps.cluster.node), whose docstring tells the whole story.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import aio_pika
import aio_pika.abc
import aio_pika.exceptions

from mps.cluster.forwarding import MAY_HAVE_RUN, Answer, Passed
from mps.cluster.parts import NodePart
from mps.cluster.peers import NotRun, PeerClient, PeerKey
from mps.cluster.queues import FAILED, HTTP, STARTED, shard_queue
from mps.cluster.versions import UnspokenVersion, Versions
from mps.domain.ids import random_base62
from mps.errors import Unavailable

# A FAILED reply's body when the request did not run at all (passing it again is safe), and how
# long the asker lets the shard settle before it does.
NOT_RUN = b"not-run"
PASS_AGAIN_AFTER = 0.1

# The node's log, whichever part of it writes.
logger = logging.getLogger("mps.cluster.node")

# What aio-pika and aiormq raise when the connection or channel under a publish is gone or going
# (a closed channel, a reset socket, CONNECTION_FORCED, a frame cut short): their own list.
_BROKER_ERRORS: tuple[type[BaseException], ...] = aio_pika.exceptions.CONNECTION_EXCEPTIONS


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


class OwnerLost(TimeoutError):
    """Another node took the shard of the node running a passed request: that node's commits
    for it are refused from then on, and its answer, if one comes, is not waited for."""

    def __init__(self, node: str) -> None:
        super().__init__(f"node {node} lost the shard while running the request")


# Serves one kind of request sent to a shard's owner: the request's body in, the answer's out.
Service = Callable[[bytes], Awaitable[bytes]]


class Asks(NodePart):
    """ClusterNode's part that passes requests to shards' owners and runs those passed to it."""

    peers: PeerClient
    peer_port: int | None
    asked: int
    _peer_local: str | None
    _peer_ready: asyncio.Event
    _connection: aio_pika.abc.AbstractRobustConnection | None
    _reply_queue: str | None
    _replies: dict[str, asyncio.Future[bytes]]
    # correlation -> the node that said it started running that passed request, and when that
    # notice arrived.
    _started: dict[str, tuple[str, float]]
    # correlation -> the shard asked.
    _shards_asked: dict[str, int]
    # Requests waiting on a peer listener's answer, and the node and shard each waits on; and
    # those cut short because another node took that shard.
    _on_peers: dict[asyncio.Task[Any], tuple[str, int]]
    _cut: set[asyncio.Task[Any]]

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
        `Unavailable` (503, Retry-After) when no answer can come: another node took the shard
        while its owner ran it, the owner did not answer within `forward_within`, or the broker
        is away when needed. An owner that is slow (a commit waiting on a lock, an event loop
        stalled for seconds) is waited for, since its answer is the request's real outcome;
        it is told the deadline, and does not start the request past it.

        Straight to the owner's peer listener when a heartbeat names it; through the shard's
        queue when none does (the shard is between owners, its owner drains) or the node named
        did not run it (the shard moved on since; it refused our signature; it could not be
        reached). The queue then brings it to whoever owns the shard, once it does: a request
        never runs on a node that does not own its shard, and is never sent on a second hop.

        Written in the highest peer protocol version this node and the owner both speak, read
        from the owner's heartbeat; to an owner that shares none (mps.cluster.versions) nothing
        is sent, and the client gets 503 with Retry-After."""
        deadline = time.monotonic() + self.timings.forward_within
        passed = replace(
            passed, deadline_ms=int((time.time() + self.timings.forward_within) * 1000)
        )
        while True:
            try:
                return await self._forward_once(index, passed, deadline)
            except NotRun as exc:
                # Refused unrun by the node the broker chose (the shard moved on while the
                # request travelled, as in a rolling restart): nothing ran, so it may be
                # passed again once the shard has settled on its next owner.
                if deadline - time.monotonic() <= PASS_AGAIN_AFTER:
                    msg = "the node that serves this account could not run the request; retry"
                    raise Unavailable(msg) from exc
                logger.info("passing a request again: %s", exc)
                await asyncio.sleep(PASS_AGAIN_AFTER)

    async def _forward_once(self, index: int, passed: Passed, deadline: float) -> Answer:
        """One pass: straight to the peer a heartbeat names, else (or when it did not run it)
        through the shard's queue. Raises NotRun when the queue's consumer refused it unrun."""
        started = time.monotonic()
        within = deadline - started
        owner = self.membership.owner_of(index, started)
        if owner is not None and owner.peer is not None:
            version = self.protocol.agree(owner.protocol)
            if version is None:
                # Neither the peer listener nor the queue (whose consumer is that owner) would
                # carry a frame the owner can read: nothing is sent, so a retry is safe.
                self.warn_unspoken(owner.node, owner.peer, owner.protocol)
                msg = (
                    "the node that serves this account runs a release this node cannot pass "
                    "requests to; retry"
                )
                raise Unavailable(msg)
            try:
                return await self._run_on_peer(
                    owner.node, index, owner.peer, passed, within, version
                )
            except NotRun as exc:
                logger.info("passing a request through the broker: %s", exc)
            within = deadline - time.monotonic()
            if within <= 0:
                msg = "the node that serves this account did not answer in time; retry"
                raise Unavailable(msg)
        # Whoever the broker makes the shard's consumer reads it: the version every node heard
        # speaks (during a roll, the older release's).
        version = self.membership.common_version(self.protocol, time.monotonic())
        try:
            answer = await self.ask(
                index, HTTP, passed.encode(version or self.protocol.high), within
            )
        except OwnerLost:
            msg = f"the node that served this account lost it while running it; {MAY_HAVE_RUN}"
            raise Unavailable(msg) from None
        except TimeoutError:
            msg = f"the node that serves this account did not answer in time; {MAY_HAVE_RUN}"
            raise Unavailable(msg) from None
        return Answer.decode(answer)

    async def _run_on_peer(
        self, node: str, index: int, address: str, passed: Passed, within: float, version: int
    ) -> Answer:
        """`peers.run`, cut short with `Unavailable` when another node takes shard `index`
        meanwhile (`_fail_orphans`): a hung owner's kernel still takes the request, and nothing
        else would end the wait before `within`. Silence alone does not end it: an owner whose
        loop stalled a few seconds still answers, with the request's real outcome. Once the
        shard is taken the owner's commits are refused, yet one made before may stand, so the
        request is not passed again; the client's keyed retry reaches the shard's next owner.

        Not a task of its own per request: the request's task is noted, and cancelled should
        its owner be lost; the cancellation is told apart from any other by `_cut`."""
        task = asyncio.current_task()
        if task is None:  # pragma: no cover - always called from a request's task
            return await self.peers.run(address, passed, within=within, version=version)
        self._on_peers[task] = (node, index)
        try:
            return await self.peers.run(address, passed, within=within, version=version)
        except asyncio.CancelledError:
            if task not in self._cut:
                raise
            task.uncancel()
            msg = f"the node that served this account lost it while running it; {MAY_HAVE_RUN}"
            raise Unavailable(msg) from None
        finally:
            self._on_peers.pop(task, None)
            self._cut.discard(task)

    def warn_unspoken(self, node: str, peer: str | None, versions: Versions) -> None:
        """Say once per peer and versions that it shares no peer protocol version with this
        node: requests for its shards are answered 503 until one of the two is upgraded."""
        if (node, versions) in self._unspoken:
            return
        self._unspoken.add((node, versions))
        logger.warning(
            "peer node %s at %s speaks peer protocol version %s and this node %s: with no "
            "version in common, requests for its shards are answered 503 until one of them "
            "runs a release that shares one (a release and the next always do)",
            node,
            peer or "(no peer listener)",
            versions,
            self.protocol,
        )

    def warn_unreadable(self, version: int | None) -> None:
        """Say once per version that a frame came through the broker in a version this node
        does not speak (its asker runs a release two or more apart)."""
        heard = ("(through the broker)", Versions(version or 0, version or 0))
        if heard in self._unspoken:
            return
        self._unspoken.add(heard)
        logger.warning(
            "a request through the broker (a passed request, a lease) is in peer protocol "
            "version %s, which this node (speaking %s) cannot read: not run",
            version,
            self.protocol,
        )

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
        self._shards_asked[correlation] = index
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
            self._shards_asked.pop(correlation, None)
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
            if message.body == NOT_RUN:
                waiting.set_exception(NotRun("the node the broker chose did not run it"))
                return
            msg = "the node that serves this account could not run the request; retry"
            waiting.set_exception(Unavailable(msg))
            return
        waiting.set_result(message.body)

    def _fail_orphans(self, now: float) -> None:
        """Passed requests whose shard another node has taken since will get no answer worth
        waiting for (the owner acknowledges a request when it starts it, so it is not run
        again, and its commits for the shard are refused from the take on): answer them now
        rather than at their deadline, so their clients retry on the shard's new owner.

        Silence is not enough: a node whose loop stalls for a few seconds (a long collection, a
        burst of CPU) is not heard from meanwhile, yet runs the request when it wakes; cut
        short on silence, the client would be told to retry what then takes effect."""
        for correlation, (node, _at) in list(self._started.items()):
            index = self._shards_asked.get(correlation)
            if index is None or not self._taken_from(node, index, now):
                continue
            waiting = self._replies.get(correlation)
            if waiting is not None and not waiting.done():
                waiting.set_exception(OwnerLost(node))
        for task, (node, index) in list(self._on_peers.items()):
            if not task.done() and self._taken_from(node, index, now):
                self._cut.add(task)
                task.cancel()

    def _taken_from(self, node: str, index: int, now: float) -> bool:
        """Whether `node` is lost for shard `index`: silent for the membership's timeout, and a
        node other than it owns the shard now (this one, or one whose heartbeat claims it).

        A node still heard from is waited for even once its shard has moved: it is handing its
        shards over (a rolling restart) and finishes what it accepted first, so its answer is the
        request's real outcome, which cutting the wait short would turn into an unknown one.

        Never this node itself: what it runs answers from this process (or fails with the
        broker's loss), and another's heartbeat claiming the shard may be one sent before that
        node handed it over here, still within the timeout."""
        if node == self.node_id:
            return False
        heard = self.membership.heard_at(node)
        if heard is not None and now - heard <= self.membership.timeout:
            return False
        if self.router.owns_shard(index):
            return True
        return self.membership.claimed_by_another(index, node, now)

    async def _answer(
        self, message: aio_pika.abc.AbstractIncomingMessage, service: Service
    ) -> None:
        if message.reply_to is None:
            return
        try:
            answer = await service(message.body)
        except UnspokenVersion:
            # Said once already (warn_unreadable); answered at once, so the asker falls back
            # now instead of at its deadline.
            await self._reply(message, b"", kind=FAILED)
            return
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
        try:
            passed, version = Passed.read(message.body)
        except Exception:
            # Whatever the frame's fault, the asker is told at once rather than left waiting.
            logger.exception("a request passed to this node could not be read")
            await self._reply(message, b"", kind=FAILED)
            return
        if version is None or not self.protocol.accepts(version):
            # Written for nodes of another release: not run, and the asker answers 503.
            self.warn_unreadable(version)
            await self._reply(message, b"", kind=FAILED)
            return
        # Tell the asker who runs it: should this node die, the asker stops waiting for it.
        await self._reply(message, self.node_id.encode(), kind=STARTED)
        try:
            async with asyncio.timeout(within):
                await self._peer_ready.wait()
            assert self._peer_local is not None
            # Through this node's own peer listener, as any passed request: its HTTP stack runs
            # it, and refuses it (not run) if the shard moved away meanwhile.
            answer = await self.peers.run(
                self._peer_local, passed, within=within, version=self.protocol.high
            )
        except NotRun as exc:
            logger.info("a request passed to this node did not run: %s", exc)
            await self._reply(message, NOT_RUN, kind=FAILED)
            return
        except Exception:
            logger.exception("a request passed to this node failed")
            await self._reply(message, b"", kind=FAILED)
            return
        # In the version asked, which the asker reads.
        await self._reply(message, answer.encode(version))
