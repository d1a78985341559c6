"""The message broker: RabbitMQ through aio-pika in production, an in-process stand-in otherwise.

Both implement `Broker`: durable named queues bound to routing keys on one topic exchange, with
at-least-once delivery to a handler, delayed publishing, and a `ping` that makes a real round
trip. The in-process broker keeps nothing across a restart (`durable` is False): what relies on
it for work must be able to find that work again in storage (mps.actors.webhooks).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import aio_pika
import aio_pika.abc

from mps.domain.ids import random_base62
from mps.errors import Unavailable
from mps.faults import is_infrastructure_fault

__all__ = [
    "DELAY_LEVELS_MS",
    "AmqpBroker",
    "Broker",
    "Handler",
    "MemoryBroker",
    "delay_level",
    "delay_queue_name",
    "open_broker",
    "with_query_defaults",
]

logger = logging.getLogger(__name__)

Handler = Callable[[bytes], Awaitable[None]]
EXCHANGE = "mps"


# A parked queue in process keeps at most this many messages (the oldest go first).
PARKED_LIMIT = 10_000
# The waits RabbitMQ delays a message by, in ms: one queue per level and destination, so any
# delay costs a bounded set of queues. They include every wait of the webhook retry schedule.
DELAY_LEVELS_MS = (
    50,
    200,
    1_000,
    5_000,
    30_000,
    60_000,
    300_000,
    1_800_000,
    7_200_000,
    21_600_000,
    43_200_000,
    86_400_000,
)


def delay_level(delay: float) -> int:
    """The longest level not above `delay` (the shortest level when all are above)."""
    wanted = delay * 1000
    fitting = [level for level in DELAY_LEVELS_MS if level <= wanted]
    return fitting[-1] if fitting else DELAY_LEVELS_MS[0]


class Broker(Protocol):
    # Whether a published message survives a restart of this process.
    durable: bool

    async def connect(self) -> None: ...

    async def close(self) -> None: ...

    async def publish(
        self, routing_key: str, body: bytes, *, delay: float = 0.0, settled: bool = False
    ) -> None:
        """Send `body` to the queues bound to `routing_key`, after `delay` seconds when given.

        A delay may be served in steps (RabbitMQ waits in fixed levels, `delay_level`), so the
        message can arrive a little early: a consumer that must not act before a moment checks
        it and publishes the message again with the rest of the wait.

        With `settled`, return only once the message is safe: confirmed by RabbitMQ (it is
        persistent, so it outlives a broker restart), or, in process, handled by its consumer,
        since nothing in memory outlives this process."""
        ...

    async def subscribe(
        self, queue: str, routing_key: str, handler: Handler, *, prefetch: int = 1
    ) -> None:
        """Consume the durable `queue` bound to `routing_key`: up to `prefetch` messages at once
        (1 keeps their order); each is acknowledged when `handler` returns and redelivered when
        it raises."""
        ...

    async def declare(self, queue: str, routing_key: str) -> None:
        """A durable queue bound to `routing_key` that keeps its messages until someone
        consumes them (a dead-letter queue, or a work queue declared before its consumer)."""
        ...

    async def subscribe_broadcast(self, routing_key: str, handler: Handler) -> None:
        """Every node gets every message of `routing_key` (a queue of this node's own, gone with
        its connection). For notices such as revocations, not for work: a node that is down
        misses them, so a subscriber must cope (see `on_reconnect`)."""
        ...

    def on_reconnect(self, callback: Callable[[], None]) -> None:
        """Call `callback` after the connection to the broker was lost and made again: broadcast
        messages sent meanwhile were missed."""
        ...

    async def ping(self) -> None:
        """Publish to ourselves and wait for it to come back; raises when the broker is down.
        Callers bound the wait with `asyncio.timeout`."""
        ...


class MemoryBroker:
    """Same interface, one process: messages go to in-memory queues served by tasks."""

    durable = False

    def __init__(self) -> None:
        self._bindings: dict[str, list[_Inbox]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._timers: set[asyncio.TimerHandle] = set()
        # Messages of declared queues that nobody consumes, by queue: dead letters.
        self.parked: dict[str, deque[bytes]] = {}

    async def connect(self) -> None:
        return None

    async def close(self) -> None:
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    async def publish(
        self, routing_key: str, body: bytes, *, delay: float = 0.0, settled: bool = False
    ) -> None:
        if delay > 0:
            loop = asyncio.get_running_loop()

            def fire() -> None:
                self._timers.discard(timer)
                self._route(routing_key, body, None)

            timer = loop.call_later(delay, fire)
            self._timers.add(timer)
            return
        if not settled:
            self._route(routing_key, body, None)
            return
        handled = asyncio.get_running_loop().create_future()
        if self._route(routing_key, body, handled):
            await handled

    def _route(self, routing_key: str, body: bytes, handled: asyncio.Future[None] | None) -> bool:
        """Put `body` in every queue bound to `routing_key`; whether any consumer will handle it
        (and so resolve `handled`)."""
        consumed = False
        for inbox in self._bindings.get(routing_key, []):
            if isinstance(inbox, deque):
                inbox.append(body)
            else:
                inbox.put_nowait((body, handled if not consumed else None))
                consumed = True
        if handled is not None and not consumed:
            handled.set_result(None)
        return consumed

    async def subscribe(
        self, queue: str, routing_key: str, handler: Handler, *, prefetch: int = 1
    ) -> None:
        inbox: asyncio.Queue[tuple[bytes, asyncio.Future[None] | None]] = asyncio.Queue()
        self._bindings.setdefault(routing_key, []).append(inbox)
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self._serve(inbox, handler, prefetch)))

    async def declare(self, queue: str, routing_key: str) -> None:
        if queue in self.parked:
            return
        parked: deque[bytes] = deque(maxlen=PARKED_LIMIT)
        self.parked[queue] = parked
        self._bindings.setdefault(routing_key, []).append(parked)

    @staticmethod
    async def _serve(
        inbox: asyncio.Queue[tuple[bytes, asyncio.Future[None] | None]],
        handler: Handler,
        prefetch: int,
    ) -> None:
        slots = asyncio.Semaphore(prefetch)
        running: set[asyncio.Task[None]] = set()

        async def handle(body: bytes, handled: asyncio.Future[None] | None) -> None:
            try:
                await handler(body)
            except Exception:
                logger.exception("broker handler failed; the message is redelivered")
                await asyncio.sleep(0.1)
                inbox.put_nowait((body, handled))
            else:
                if handled is not None and not handled.done():
                    handled.set_result(None)
            finally:
                slots.release()

        try:
            while True:
                body, handled = await inbox.get()
                await slots.acquire()
                task = asyncio.get_running_loop().create_task(handle(body, handled))
                running.add(task)
                task.add_done_callback(running.discard)
        finally:
            for task in running:
                task.cancel()

    async def subscribe_broadcast(self, routing_key: str, handler: Handler) -> None:
        await self.subscribe(f"broadcast.{random_base62(12)}", routing_key, handler)

    def on_reconnect(self, callback: Callable[[], None]) -> None:
        # One process: the connection cannot be lost.
        return None

    async def ping(self) -> None:
        return None


_Inbox = asyncio.Queue[tuple[bytes, asyncio.Future[None] | None]] | deque[bytes]


# Seconds between attempts to reach the broker again after the connection is lost.
RECONNECT_EVERY = 1.0
# Seconds a message whose handler met an outage waits before it is requeued.
REQUEUE_AFTER = 1.0


class AmqpBroker:
    durable = True

    def __init__(self, url: str) -> None:
        self._url = url
        self._connection: aio_pika.abc.AbstractRobustConnection | None = None
        self._channel: aio_pika.abc.AbstractChannel | None = None
        self._exchange: aio_pika.abc.AbstractExchange | None = None
        # Delay queues declared so far, by name (see `_delay_queue`).
        self._delays: set[str] = set()

    async def connect(self) -> None:
        # Reconnect every second, not aio-pika's five: webhook deliveries wait meanwhile.
        self._connection = await aio_pika.connect_robust(
            with_query_defaults(self._url, reconnect_interval=str(RECONNECT_EVERY)),
            client_properties={"connection_name": "mps webhooks"},
        )
        self._channel = await self._connection.channel(publisher_confirms=True)
        await self._channel.set_qos(prefetch_count=64)
        self._exchange = await self._channel.declare_exchange(
            EXCHANGE, aio_pika.ExchangeType.TOPIC, durable=True
        )

    async def close(self) -> None:
        if self._connection is not None:
            await self._connection.close()
        self._connection = self._channel = self._exchange = None
        self._delays.clear()

    def _parts(self) -> tuple[aio_pika.abc.AbstractChannel, aio_pika.abc.AbstractExchange]:
        if self._channel is None or self._exchange is None:
            msg = "broker is not connected"
            raise RuntimeError(msg)
        return self._channel, self._exchange

    async def publish(
        self, routing_key: str, body: bytes, *, delay: float = 0.0, settled: bool = False
    ) -> None:
        # Every publish is persistent and confirmed (the channel has publisher confirms), so
        # `settled` asks nothing more of RabbitMQ.
        channel, exchange = self._parts()
        message = aio_pika.Message(body, delivery_mode=aio_pika.DeliveryMode.PERSISTENT)
        if delay > 0:
            queue = await self._delay_queue(channel, routing_key, delay)
            await channel.default_exchange.publish(message, routing_key=queue)
            return
        await exchange.publish(message, routing_key=routing_key)

    async def _delay_queue(
        self, channel: aio_pika.abc.AbstractChannel, routing_key: str, delay: float
    ) -> str:
        """A queue where messages wait the level of `delay` (its message TTL), then dead-letter
        to `routing_key` on the exchange. One per level and destination, each FIFO with a
        single TTL, so no message waits behind a longer one; durable, so a wait survives a
        restart of either side."""
        ttl = delay_level(delay)
        name = delay_queue_name(routing_key, ttl)
        if name not in self._delays:
            await channel.declare_queue(
                name,
                durable=True,
                arguments={
                    "x-message-ttl": ttl,
                    "x-dead-letter-exchange": EXCHANGE,
                    "x-dead-letter-routing-key": routing_key,
                    # An unused delay level (a changed retry scale) goes away by itself.
                    "x-expires": max(ttl * 4, 3_600_000),
                },
            )
            self._delays.add(name)
        return name

    async def declare(self, queue: str, routing_key: str) -> None:
        channel, exchange = self._parts()
        declared = await channel.declare_queue(queue, durable=True)
        await declared.bind(exchange, routing_key)

    async def subscribe(
        self, queue: str, routing_key: str, handler: Handler, *, prefetch: int = 1
    ) -> None:
        _, exchange = self._parts()
        assert self._connection is not None
        # A channel of its own: the prefetch window is per channel.
        channel = await self._connection.channel()
        await channel.set_qos(prefetch_count=prefetch)
        declared = await channel.declare_queue(queue, durable=True)
        await declared.bind(exchange, routing_key)

        async def consume(message: aio_pika.abc.AbstractIncomingMessage) -> None:
            # Acknowledged only after the handler finished: a crash mid-way redelivers.
            try:
                async with message.process(requeue=True):
                    try:
                        await handler(message.body)
                    except Exception as exc:
                        if _is_fault(exc):
                            # Held a moment before it goes back to its queue: through an
                            # outage, redelivery is a slow retry, not a tight loop.
                            await asyncio.sleep(REQUEUE_AFTER)
                        raise
            except Exception as exc:
                if not _is_fault(exc):
                    raise
                # The database or the broker failed under the handler: the message is back in
                # its queue and runs again; an outage is a line in the log, not a traceback.
                logger.warning("%s: handler failed, message requeued: %r", queue, exc)

        await declared.consume(consume)

    async def subscribe_broadcast(self, routing_key: str, handler: Handler) -> None:
        channel, exchange = self._parts()
        # Server-named, exclusive, deleted with the connection: this node's own copy of each
        # message. The robust connection declares it again after a reconnect.
        declared = await channel.declare_queue(exclusive=True, auto_delete=True)
        await declared.bind(exchange, routing_key)

        async def consume(message: aio_pika.abc.AbstractIncomingMessage) -> None:
            async with message.process(requeue=False):
                await handler(message.body)

        await declared.consume(consume)

    def on_reconnect(self, callback: Callable[[], None]) -> None:
        if self._connection is None:
            msg = "broker is not connected"
            raise RuntimeError(msg)
        self._connection.reconnect_callbacks.add(lambda *_args: callback())

    async def ping(self) -> None:
        channel, exchange = self._parts()
        probe = await channel.declare_queue(exclusive=True, auto_delete=True)
        key = f"ping.{random_base62(12)}"
        await probe.bind(exchange, key)
        try:
            await exchange.publish(aio_pika.Message(b"ping"), routing_key=key)
            returned: asyncio.Future[None] = asyncio.get_running_loop().create_future()

            async def on_message(message: aio_pika.abc.AbstractIncomingMessage) -> None:
                await message.ack()
                if not returned.done():
                    returned.set_result(None)

            tag = await probe.consume(on_message)
            try:
                await returned
            finally:
                # Cancelled before the queue goes, or the broker cancels it and says so in the log.
                with contextlib.suppress(Exception):
                    await probe.cancel(tag)
        finally:
            with contextlib.suppress(Exception):
                await probe.delete(if_unused=False, if_empty=False)


def delay_queue_name(routing_key: str, level_ms: int) -> str:
    return f"{routing_key}.delay.{level_ms}"


def open_broker(url: str) -> Broker:
    if url.startswith("memory://"):
        return MemoryBroker()
    if url.startswith(("amqp://", "amqps://")):
        return AmqpBroker(url)
    msg = f"unsupported broker URL scheme: {url.split(':', 1)[0]}"
    raise ValueError(msg)


def _is_fault(error: BaseException) -> bool:
    return isinstance(error, Unavailable) or is_infrastructure_fault(error)


def with_query_defaults(url: str, **defaults: str) -> str:
    """`url` with each of `defaults` as a query parameter unless it names that one itself."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query)
    named = {k for k, _ in query}
    added = [(k, v) for k, v in defaults.items() if k not in named]
    return urlunsplit(parts._replace(query=urlencode([*query, *added])))
