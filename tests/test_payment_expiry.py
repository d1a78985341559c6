"""Expiry lands within seconds of expiresAt, also after downtime (decisions 4)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from mps.http.keys import SERVICES
from tests.conftest import Clock
from tests.helpers import Member, create_payment, eventually, pay, pending_payment, sign_up

pytestmark = pytest.mark.both_backends


Serve = Callable[[float], Awaitable[TestClient[Any, Any]]]


@pytest.fixture
def serve(aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]) -> Serve:
    """Starts a new app whose expiry loop passes every `interval` seconds: a short one to see
    the loop expire payments, an hour to keep it out of the way."""

    async def start(interval: float) -> TestClient[Any, Any]:
        client: TestClient[Any, Any] = await aiohttp_client(make_app(expiry_interval=interval))
        return client

    return start


async def _status(client: TestClient[Any, Any], member: Member, payment_id: str) -> str:
    got = await client.get(f"/api/v1/merchant/payments/{payment_id}", headers=member.headers)
    assert got.status == 200, await got.text()
    status: str = (await got.json())["status"]
    return status


async def _status_soon(
    client: TestClient[Any, Any], member: Member, payment_id: str, want: str
) -> str:
    status = ""
    for _ in range(100):
        status = await _status(client, member, payment_id)
        if status == want:
            break
        await asyncio.sleep(0.05)
    return status


async def test_a_pending_payment_expires_after_expires_at(serve: Serve, clock: Clock) -> None:
    client = await serve(0.05)
    member, payment = await pending_payment(client, expiresInSec=60)
    untouched = await create_payment(client, member, expiresInSec=600)

    clock.advance(seconds=61)

    assert await _status_soon(client, member, payment["id"], "EXPIRED") == "EXPIRED"
    assert await _status(client, member, untouched["id"]) == "PENDING"
    paid_late = await pay(client, payment["reference"])
    assert paid_late.status == 409


async def test_checkout_after_expires_at_loses_to_expiry_even_before_the_sweep(
    serve: Serve, clock: Clock
) -> None:
    # the sweep runs rarely here, so only the actor's own check can refuse the late checkout
    client = await serve(3600)
    member, payment = await pending_payment(client, expiresInSec=60)

    clock.advance(seconds=60)
    response = await pay(client, payment["reference"])

    assert response.status == 409
    assert await _status(client, member, payment["id"]) == "EXPIRED"


async def test_payments_that_expired_while_the_service_was_down_expire_on_start(
    serve: Serve, clock: Clock
) -> None:
    # given a payment created before a shutdown
    first = await serve(3600)
    member, payment = await pending_payment(first, expiresInSec=60)
    await first.close()

    # when the service starts again after its expiry passed
    clock.advance(minutes=5)
    second = await serve(0.05)

    # then it is expired at once
    assert await _status_soon(second, member, payment["id"], "EXPIRED") == "EXPIRED"


async def test_no_expiry_payments_never_expire(serve: Serve, clock: Clock) -> None:
    from mps.actors.schedulers.expiry import PaymentExpiry

    # given a payment without expiry, one that expires in a minute to show the pass looks, and
    # an app whose own expiry loop, after its first pass, sleeps for an hour
    client = await serve(3600)
    member, payment = await pending_payment(client, noExpiry=True)
    expiring = await create_payment(client, member, expiresInSec=60)
    services = client.app[SERVICES]
    expiry = PaymentExpiry(services.database, services.shards, clock, interval=3600)

    # when a year passes and an expiry pass runs
    clock.advance(days=365)
    await expiry.run_once()

    # then only the payment with an expiry expired (from storage: a year later the session
    # itself has long expired)
    rows = await services.database.fetch(
        "SELECT id, status FROM payments WHERE company_id = $1", member.company_id
    )
    assert {r["id"]: r["status"] for r in rows} == {
        payment["id"]: "PENDING",
        expiring["id"]: "EXPIRED",
    }
    assert expiry.expired == 1


async def test_a_backlog_larger_than_one_batch_is_drained_without_waiting(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    from mps.actors.schedulers.expiry import PaymentExpiry

    # given 25 overdue payments and an expiry loop that takes 10 at a time and otherwise
    # sleeps for an hour
    member = await sign_up(client)
    payments = [await create_payment(client, member, expiresInSec=60) for _ in range(25)]
    clock.advance(seconds=61)
    services = client.app[SERVICES]
    expiry = PaymentExpiry(services.database, services.shards, clock, interval=3600, batch=10)

    # when it starts
    expiry.start()
    try:
        # Polled for the fact, with a bound far below the hour a second pass would wait, so
        # that a busy machine's slow commits cannot be mistaken for a pass that slept.
        async def all_expired() -> bool:
            return expiry.expired == 25

        await eventually(all_expired, within=60, every=0.02, what="25 payments expired")
    finally:
        await expiry.close()

    # then every payment expired in the first passes, none waited for the hour
    assert expiry.expired == 25
    statuses = await services.database.fetch(
        "SELECT DISTINCT status FROM payments WHERE company_id = $1", member.company_id
    )
    assert [r["status"] for r in statuses] == ["EXPIRED"]
    assert len(payments) == 25
