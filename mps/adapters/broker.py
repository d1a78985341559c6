"""The message broker: RabbitMQ through aio-pika in production, an in-process stand-in otherwise.

Both implement `Broker`: durable named queues bound to routing keys on one topic exchange, with
at-least-once delivery to a handler, and a `ping` that makes a real round trip.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

import aio_pika
import aio_pika.abc

from mps.domain.ids import random_base62

__all__ = ["AmqpBroker", "Broker", "Handler", "MemoryBroker", "open_broker"]

logger = logging.getLogger(__name__)

Handler = Callable[[bytes], Awaitable[None]]
EXCHANGE = "mps"


class Broker(Protocol):
    async def connect(self) -> None: ...

    async def close(self) -> None: ...

    async def publish(self, routing_key: str, body: bytes) -> None: ...

    async def subscribe(self, queue: str, routing_key: str, handler: Handler) -> None: ...

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

    def __init__(self) -> None:
        self._bindings: dict[str, list[asyncio.Queue[bytes]]] = {}
        self._tasks: list[asyncio.Task[None]] = []

    async def connect(self) -> None:
        return None

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    async def publish(self, routing_key: str, body: bytes) -> None:
        for queue in self._bindings.get(routing_key, []):
            queue.put_nowait(body)

    async def subscribe(self, queue: str, routing_key: str, handler: Handler) -> None:
        inbox: asyncio.Queue[bytes] = asyncio.Queue()
        self._bindings.setdefault(routing_key, []).append(inbox)
        self._tasks.append(asyncio.get_running_loop().create_task(self._serve(inbox, handler)))

    @staticmethod
    async def _serve(inbox: asyncio.Queue[bytes], handler: Handler) -> None:
        while True:
            body = await inbox.get()
            try:
                await handler(body)
            except Exception:
                logger.exception("broker handler failed; the message is redelivered")
                inbox.put_nowait(body)
                await asyncio.sleep(0.1)

    async def subscribe_broadcast(self, routing_key: str, handler: Handler) -> None:
        await self.subscribe(f"broadcast.{random_base62(12)}", routing_key, handler)

    def on_reconnect(self, callback: Callable[[], None]) -> None:
        # One process: the connection cannot be lost.
        return None

    async def ping(self) -> None:
        return None


class AmqpBroker:
    def __init__(self, url: str) -> None:
        self._url = url
        self._connection: aio_pika.abc.AbstractRobustConnection | None = None
        self._channel: aio_pika.abc.AbstractChannel | None = None
        self._exchange: aio_pika.abc.AbstractExchange | None = None

    async def connect(self) -> None:
        self._connection = await aio_pika.connect_robust(self._url)
        self._channel = await self._connection.channel(publisher_confirms=True)
        await self._channel.set_qos(prefetch_count=64)
        self._exchange = await self._channel.declare_exchange(
            EXCHANGE, aio_pika.ExchangeType.TOPIC, durable=True
        )

    async def close(self) -> None:
        if self._connection is not None:
            await self._connection.close()
        self._connection = self._channel = self._exchange = None

    def _parts(self) -> tuple[aio_pika.abc.AbstractChannel, aio_pika.abc.AbstractExchange]:
        if self._channel is None or self._exchange is None:
            msg = "broker is not connected"
            raise RuntimeError(msg)
        return self._channel, self._exchange

    async def publish(self, routing_key: str, body: bytes) -> None:
        _, exchange = self._parts()
        message = aio_pika.Message(body, delivery_mode=aio_pika.DeliveryMode.PERSISTENT)
        await exchange.publish(message, routing_key=routing_key)

    async def subscribe(self, queue: str, routing_key: str, handler: Handler) -> None:
        channel, exchange = self._parts()
        declared = await channel.declare_queue(queue, durable=True)
        await declared.bind(exchange, routing_key)

        async def consume(message: aio_pika.abc.AbstractIncomingMessage) -> None:
            # Acknowledged only after the handler finished: a crash mid-way redelivers.
            async with message.process(requeue=True):
                await handler(message.body)

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


def open_broker(url: str) -> Broker:
    if url.startswith("memory://"):
        return MemoryBroker()
    if url.startswith(("amqp://", "amqps://")):
        return AmqpBroker(url)
    msg = f"unsupported broker URL scheme: {url.split(':', 1)[0]}"
    raise ValueError(msg)
