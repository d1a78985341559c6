"""The broker interface on real RabbitMQ and in process (same behaviour, same interface)."""

from __future__ import annotations

import asyncio
import secrets

from mps.adapters.broker import AmqpBroker, Broker, MemoryBroker


async def _round_trip(broker: Broker) -> list[bytes]:
    received: list[bytes] = []
    done = asyncio.Event()
    key = f"test.{secrets.token_hex(4)}"

    async def handler(body: bytes) -> None:
        received.append(body)
        if len(received) == 3:
            done.set()

    await broker.subscribe(f"q.{key}", key, handler)
    for n in range(3):
        await broker.publish(key, f"m{n}".encode())
    async with asyncio.timeout(5):
        await done.wait()
    return received


async def test_rabbitmq_delivers_published_messages_in_order(amqp_url: str) -> None:
    broker = AmqpBroker(amqp_url)
    await broker.connect()
    try:
        async with asyncio.timeout(5):
            await broker.ping()
        received = await _round_trip(broker)
    finally:
        await broker.close()

    assert received == [b"m0", b"m1", b"m2"]


async def test_memory_broker_behaves_the_same() -> None:
    broker = MemoryBroker()
    await broker.connect()
    try:
        received = await _round_trip(broker)
    finally:
        await broker.close()

    assert received == [b"m0", b"m1", b"m2"]
