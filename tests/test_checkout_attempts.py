"""A checkout never charges a card twice, and never holds other shoppers behind a slow card
(mps.actors.attempts): the attempt is recorded before the processor is asked, under an
idempotency key the processor remembers; a fault between the approval and its booking is healed
by the shopper's retry or by the sweep, booking the one approval once; the call runs outside the
payment actor's turn, and a cancel or an expiry meeting it still leaves exactly one winner."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient

from mps.adapters.processor import CardInput, SimulatorProcessor
from mps.persistence.database import Database, Fences, UnitOutcome
from mps.persistence.statements import Row, WriteUnit
from tests.conftest import Clock
from tests.fakes import Serving, WrappedDatabase, app_database, wait_until
from tests.helpers import (
    TEST_CARD,
    Member,
    assert_refused,
    create_payment,
    pending_payment,
    read_object,
    sign_up,
)
from tests.money import balance, movements, sandbox_key, services, simulate, until
from tests.processors import TestProcessor

pytestmark = pytest.mark.both_backends

HELD_CARD = "5555555555554444"
CARD = CardInput("4242424242424242", 12, 2099, "123")


class BookingFails(WrappedDatabase):
    """While `armed`, the next group commit that books an approved attempt fails as a lost
    connection: before it is written, or (`lands`) after it was written. Counts the reads of
    overdue payments, so a test knows when the expiry scheduler has made a pass."""

    def __init__(self, real: Database) -> None:
        super().__init__(real)
        self.armed = False
        self.lands = False
        self.expiry_passes = 0
        self.link_reads = 0

    async def write(
        self, units: Sequence[WriteUnit], fences: Fences | None = None
    ) -> list[UnitOutcome]:
        books = any(
            st.sql.startswith("UPDATE checkout_attempts") and st.params[0] == "APPROVED"
            for unit in units
            for st in unit
        )
        if self.armed and books:
            self.armed = False
            if self.lands:
                await self.real.write(units, fences)
            msg = "the connection was lost before the commit was confirmed"
            raise ConnectionResetError(msg)
        return await self.real.write(units, fences)

    async def _fetch(self, sql: str, *params: Any) -> list[Row]:
        if "expires_at <= $1" in sql:
            self.expiry_passes += 1
        if sql == "SELECT * FROM payments WHERE reference = $1":
            self.link_reads += 1  # a checkout request reached its handler
        return await self.real.fetch(sql, *params)


@pytest.fixture
def processor() -> TestProcessor:
    return TestProcessor()


@pytest.fixture
async def shop(serving: Serving, processor: TestProcessor) -> TestClient[Any, Any]:
    return await serving.paying_through(processor, BookingFails)


async def _pay(
    client: TestClient[Any, Any],
    reference: str,
    number: str = "4242424242424242",
    headers: dict[str, str] | None = None,
) -> Any:
    return await client.post(
        f"/api/v1/checkout/{reference}/pay",
        json={"card": {**TEST_CARD, "number": number}},
        headers=headers or {},
    )


async def _booking_fails(
    shop: TestClient[Any, Any], lands: bool = False
) -> tuple[Member, dict[str, Any]]:
    """A new member's payment of 2500, and the app's database armed to fail the commit that
    books its approval: before writing it, or (`lands`) after."""
    member, payment = await pending_payment(shop, amountMinor="2500")
    database = app_database(shop, BookingFails)
    database.armed, database.lands = True, lands
    return member, payment


async def _event_types(client: TestClient[Any, Any], member: Member) -> list[str]:
    rows = await services(client).database.fetch(
        "SELECT data FROM events WHERE company_id = $1 ORDER BY created_at, id", member.company_id
    )
    return [orjson.loads(r["data"])["type"] for r in rows]


async def _credits(client: TestClient[Any, Any], member: Member, payment_id: str) -> int:
    return len(await movements(client, member, sourceId=payment_id, type="payment"))


async def _attempts(client: TestClient[Any, Any], payment_id: str) -> list[str]:
    rows = await services(client).database.fetch(
        "SELECT status FROM checkout_attempts WHERE payment_id = $1 ORDER BY created_at, id",
        payment_id,
    )
    return [r["status"] for r in rows]


# --- the processor -----------------------------------------------------------------------------


async def test_the_simulator_answers_a_repeated_key_without_charging_again() -> None:
    simulator = SimulatorProcessor()

    first = await simulator.authorize(CARD, 2500, "USD", idempotency_key="att_1")
    again = await simulator.authorize(CARD, 2500, "USD", idempotency_key="att_1")
    other = await simulator.authorize(CARD, 2500, "USD", idempotency_key="att_2")

    assert first == again == other and first.approved
    assert simulator.charges == 2
    assert await simulator.recall("att_1") == first


async def test_the_simulator_recalls_nothing_for_a_key_it_never_took_and_then_refuses_it() -> None:
    simulator = SimulatorProcessor()

    recalled = await simulator.recall("att_lost")
    late = await simulator.authorize(CARD, 2500, "USD", idempotency_key="att_lost")

    assert recalled is None
    assert not late.approved
    assert simulator.charges == 0


# --- a fault between approval and booking ------------------------------------------------------


@pytest.mark.parametrize("lands", [False, True], ids=["lost-before-writing", "written-answer-lost"])
async def test_a_retry_under_the_same_key_after_the_booking_failed_charges_the_card_once(
    shop: TestClient[Any, Any],
    processor: TestProcessor,
    lands: bool,
) -> None:
    # given a payment, and a database that fails the commit booking the approval
    member, payment = await _booking_fails(shop, lands)
    key = {"Idempotency-Key": "pay-once-1"}

    # when the shopper's checkout is approved but not booked, and the shopper retries
    lost = await _pay(shop, payment["reference"], headers=key)
    await assert_refused(lost, 503)
    retried = await _pay(shop, payment["reference"], headers=key)

    # then the retry answers the payment PAID, the card was charged once, and booked once
    assert retried.status == 200, await retried.text()
    assert (await retried.json())["status"] == "PAID"
    assert sum(processor.charged.values()) == 1
    assert (await read_object(shop, member, "payments", payment["id"]))["status"] == "PAID"
    assert await _credits(shop, member, payment["id"]) == 1
    assert await balance(shop, member) == {"available": 2500, "pending": 0, "reserved": 0}
    assert await _event_types(shop, member) == ["payment.created", "payment.completed"]
    assert await _attempts(shop, payment["id"]) == ["APPROVED"]


async def test_a_retry_without_a_key_after_the_booking_failed_books_the_first_charge_only(
    shop: TestClient[Any, Any], processor: TestProcessor
) -> None:
    # given a payment, and a database that fails the commit booking the approval
    member, payment = await _booking_fails(shop)

    # when the shopper's checkout is approved but not booked, and the shopper pays again
    lost = await _pay(shop, payment["reference"])
    assert lost.status == 503
    retried = await _pay(shop, payment["reference"])

    # then the first approval was booked before the retry was decided: the payment is PAID
    # (the retry meets it so: 409, as for any payment no longer PENDING) and charged once
    await assert_refused(retried, 409, "invalid_state")
    assert sum(processor.charged.values()) == 1
    assert (await read_object(shop, member, "payments", payment["id"]))["status"] == "PAID"
    assert await _credits(shop, member, payment["id"]) == 1
    assert await _event_types(shop, member) == ["payment.created", "payment.completed"]


async def test_an_approval_nobody_retries_is_booked_once_by_the_sweep(
    shop: TestClient[Any, Any],
    processor: TestProcessor,
    clock: Clock,
) -> None:
    # given an approval whose booking failed, and a shopper who never comes back
    member, payment = await _booking_fails(shop)
    lost = await _pay(shop, payment["reference"])
    assert lost.status == 503

    # when longer than any authorization takes has passed
    clock.advance(seconds=60)

    # then the expiry scheduler's pass has the payment's actor book it, once
    async def paid() -> bool:
        return bool(
            (await read_object(shop, member, "payments", payment["id"]))["status"] == "PAID"
        )

    await until(paid)
    assert sum(processor.charged.values()) == 1
    assert await _credits(shop, member, payment["id"]) == 1
    assert await _attempts(shop, payment["id"]) == ["APPROVED"]


# --- the call runs outside the actor's turn ----------------------------------------------------


async def test_a_multi_use_link_pays_a_second_shopper_while_the_first_card_is_held(
    shop: TestClient[Any, Any], processor: TestProcessor
) -> None:
    # given a multi-use link, and a first shopper whose card's authorization is held
    member, link = await pending_payment(shop, amountMinor="700", allowMultiplePayments=True)
    processor.hold.add(HELD_CARD)
    first = asyncio.create_task(_pay(shop, link["reference"], HELD_CARD))
    await wait_until(lambda: processor.held == 1)

    # when a second shopper pays the same link
    async with asyncio.timeout(5):
        second = await _pay(shop, link["reference"])

    # then the second is paid while the first is still held, and the first then completes
    assert second.status == 200, await second.text()
    assert not first.done()
    processor.release.set()
    first_response = await first
    assert first_response.status == 200, await first_response.text()
    firsts, seconds = await first_response.json(), await second.json()
    assert firsts["status"] == seconds["status"] == "PAID"
    assert firsts["reference"] != seconds["reference"]
    assert sum(processor.charged.values()) == 2
    assert (await read_object(shop, member, "payments", link["id"]))["status"] == "PENDING"


async def test_a_cancel_during_a_held_authorization_is_409_and_the_payment_ends_paid(
    shop: TestClient[Any, Any], processor: TestProcessor
) -> None:
    # given a payment whose checkout's authorization is held
    member, payment = await pending_payment(shop)
    processor.hold.add(HELD_CARD)
    checkout = asyncio.create_task(_pay(shop, payment["reference"], HELD_CARD))
    await wait_until(lambda: processor.held == 1)

    # when the merchant cancels it meanwhile
    async with asyncio.timeout(5):
        cancel = await shop.post(
            f"/api/v1/merchant/payments/{payment['id']}/cancel", headers=member.headers
        )

    # then the cancel is refused at once, and the approved checkout is the one winner
    await assert_refused(cancel, 409, "invalid_state")
    processor.release.set()
    paid = await checkout
    assert paid.status == 200, await paid.text()
    assert (await read_object(shop, member, "payments", payment["id"]))["status"] == "PAID"
    assert await _event_types(shop, member) == ["payment.created", "payment.completed"]


async def test_a_forced_expiry_during_a_held_authorization_is_409_and_the_payment_ends_paid(
    shop: TestClient[Any, Any], processor: TestProcessor
) -> None:
    # given a payment whose checkout's authorization is held
    member = await sign_up(shop)
    key = await sandbox_key(shop, member, "payments:write")
    payment = await create_payment(shop, member)
    processor.hold.add(HELD_CARD)
    checkout = asyncio.create_task(_pay(shop, payment["reference"], HELD_CARD))
    await wait_until(lambda: processor.held == 1)

    # when the sandbox forces its expiry meanwhile
    async with asyncio.timeout(5):
        expired = await simulate(shop, key, "payment.expired", paymentId=payment["id"])

    # then the expiry is refused, and the checkout wins
    await assert_refused(expired, 409, "invalid_state")
    processor.release.set()
    assert (await checkout).status == 200
    assert (await read_object(shop, member, "payments", payment["id"]))["status"] == "PAID"


@pytest.mark.parametrize(
    ("card", "status", "ends"),
    [(HELD_CARD, 200, "PAID"), ("4000000000000002", 402, "EXPIRED")],
    ids=["approved", "declined"],
)
async def test_a_due_expiry_waits_for_the_authorization_in_flight_and_wins_only_if_declined(
    shop: TestClient[Any, Any],
    processor: TestProcessor,
    clock: Clock,
    card: str,
    status: int,
    ends: str,
) -> None:
    # given a payment whose checkout's authorization is held
    member, payment = await pending_payment(shop, expiresInSec=60)
    processor.hold.add(card)
    checkout = asyncio.create_task(_pay(shop, payment["reference"], card))
    await wait_until(lambda: processor.held == 1)

    # when its expiry passes, and the scheduler has made a whole pass since
    clock.advance(seconds=120)
    database = app_database(shop, BookingFails)
    passes = database.expiry_passes
    await wait_until(lambda: database.expiry_passes >= passes + 2)

    # then the payment waited for the card's answer; the answer decides, the expiry follows a
    # decline
    assert (await read_object(shop, member, "payments", payment["id"]))["status"] == "PENDING"
    processor.release.set()
    assert (await checkout).status == status

    async def settled() -> bool:
        return bool((await read_object(shop, member, "payments", payment["id"]))["status"] == ends)

    await until(settled)
    types = await _event_types(shop, member)
    assert types.count("payment.completed") + types.count("payment.expired") == 1


async def test_a_second_checkout_in_flight_joins_it_under_the_same_key_and_is_409_without(
    shop: TestClient[Any, Any], processor: TestProcessor
) -> None:
    # given a payment whose checkout's authorization, sent with an Idempotency-Key, is held
    member, payment = await pending_payment(shop)
    processor.hold.add(HELD_CARD)
    key = {"Idempotency-Key": "checkout-attempt-1"}
    first = asyncio.create_task(_pay(shop, payment["reference"], HELD_CARD, key))
    await wait_until(lambda: processor.held == 1)

    # when the shopper retries under the same key, and the same card and another card are
    # submitted again without one
    again = asyncio.create_task(_pay(shop, payment["reference"], HELD_CARD, key))
    async with asyncio.timeout(5):
        same_card = await _pay(shop, payment["reference"], HELD_CARD)
        other = await _pay(shop, payment["reference"])

    # then the submissions without the key are refused while the card is processed; the retry
    # under the key gets the one attempt's answer
    for refused in (same_card, other):
        await assert_refused(refused, 409, "invalid_state")
    processor.release.set()
    answers = [await first, await again]
    assert [a.status for a in answers] == [200, 200]
    assert {(await a.json())["status"] for a in answers} == {"PAID"}
    assert sum(processor.charged.values()) == 1
    assert processor.held == 1
    assert await _event_types(shop, member) == ["payment.created", "payment.completed"]
