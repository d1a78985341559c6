"""A new payment whose random reference another payment holds already is committed again under a
fresh one, never answered 500 (mps.actors.references): at creation by the company actor, and for
a multi-use link's child at checkout by the payment actor.

The actors are started directly with a scripted reference generator, so a collision is forced
without patching anything.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest

from mps.actors.company import CompanyActor, CreatePayment
from mps.actors.context import ActorContext
from mps.actors.payment import Checkout, Outcome
from mps.actors.references import REFERENCE_ATTEMPTS
from mps.actors.runtime import ActorRef, ask, stop
from mps.adapters.processor import SimulatorProcessor
from mps.domain.clock import Clock, iso
from mps.domain.ids import payment_reference
from mps.domain.payments import NewPayment
from mps.errors import KeyAlreadyStored
from mps.persistence.database import Database
from mps.persistence.payment_store import ReferenceTaken
from mps.persistence.queries.idempotency import store_response
from mps.persistence.statements import Statement
from tests.actors import CARD, PUBLIC_URL, actor_context, company_actor, payment_actor

pytestmark = pytest.mark.both_backends

COMPANY = "co_references"
TAKEN = "PAY-TAKEN00001"
FRESH = "PAY-FRESH00001"
LATER = "9999-12-31T23:59:59.999Z"


class ScriptedReferences:
    """Hands out the scripted references first, then random ones; counts every draw."""

    def __init__(self, *scripted: str) -> None:
        self.scripted = list(scripted)
        self.draws = 0

    def __call__(self) -> str:
        self.draws += 1
        return self.scripted.pop(0) if self.scripted else payment_reference()


@dataclass
class StoresReference:
    """An idempotency record that stores, under its key, the reference of the payment it is
    asked to present: what a replay of the request would show."""

    key: str
    now: str
    presented: list[str] = field(default_factory=list)

    def statements(self, result: Any) -> list[Statement]:
        assert isinstance(result, Outcome)
        self.presented.append(result.payment.reference)
        return store_response(
            {
                "company_id": COMPANY,
                "idem_key": self.key,
                "fingerprint": "fp",
                "status_code": 201,
                "headers": "{}",
                "body": result.payment.reference,
                "created_at": self.now,
                "expires_at": LATER,
            }
        )

    def discard(self) -> None:
        self.presented.pop()


@pytest.fixture
async def context(database: Database, clock: Clock) -> AsyncIterator[ActorContext]:
    async with actor_context(database, clock) as context:
        yield context


@pytest.fixture
async def company(
    context: ActorContext,
) -> AsyncIterator[tuple[ActorRef[CompanyActor], ScriptedReferences]]:
    """A created company whose actor draws from a script; its first payment will get TAKEN."""
    references = ScriptedReferences(TAKEN)
    async with company_actor(context, COMPANY, "References Ltd", references=references) as ref:
        yield ref, references


async def stored_references(database: Database) -> list[str]:
    rows = await database.fetch("SELECT reference FROM payments ORDER BY created_at, id")
    return [r["reference"] for r in rows]


async def created_events(database: Database) -> list[dict[str, Any]]:
    rows = await database.fetch(
        "SELECT data FROM events WHERE type = 'payment.created' ORDER BY created_at, id"
    )
    return [orjson.loads(r["data"])["data"]["object"] for r in rows]


async def test_payment_create_commits_under_a_fresh_reference_when_its_reference_is_taken(
    database: Database,
    clock: Clock,
    company: tuple[ActorRef[CompanyActor], ScriptedReferences],
) -> None:
    # given a payment holding TAKEN, and a generator that draws TAKEN again, then FRESH
    ref, references = company
    first: Outcome = await ask(ref, CreatePayment("test", NewPayment(100, "USD")))
    assert first.payment.reference == TAKEN
    references.scripted = [TAKEN, FRESH]
    record = StoresReference("key-1", iso(clock()))

    # when
    second: Outcome = await ask(
        ref, CreatePayment("test", NewPayment(250, "USD"), idempotency=record)
    )

    # then the payment, its event and its stored response all name the fresh reference
    assert second.payment.reference == FRESH
    assert second.events[0]["data"]["object"]["reference"] == FRESH
    assert second.events[0]["data"]["object"]["payUrl"] == f"{PUBLIC_URL}/pay/{FRESH}"
    assert await stored_references(database) == [TAKEN, FRESH]
    assert [e["reference"] for e in await created_events(database)] == [TAKEN, FRESH]
    assert record.presented == [TAKEN, FRESH]
    body = await database.fetchval(
        "SELECT body FROM idempotency_keys WHERE company_id = $1 AND idem_key = $2",
        COMPANY,
        "key-1",
    )
    assert body == FRESH
    assert references.draws == 3


async def test_a_taken_reference_in_a_burst_of_creates_is_retried_alone(
    database: Database, company: tuple[ActorRef[CompanyActor], ScriptedReferences]
) -> None:
    # given a payment holding TAKEN, and a burst whose tenth create draws TAKEN
    ref, references = company
    await ask(ref, CreatePayment("test", NewPayment(100, "USD")))
    references.scripted = [payment_reference() for _ in range(9)] + [TAKEN]

    # when the burst shares group commits (the colliding unit among others)
    outcomes: list[Outcome] = await asyncio.gather(
        *(ask(ref, CreatePayment("test", NewPayment(200 + n, "USD"))) for n in range(30))
    )

    # then every create committed, each under its own reference, and only one was drawn again
    mine = [o.payment.reference for o in outcomes]
    assert TAKEN not in mine
    assert sorted(await stored_references(database)) == sorted([TAKEN, *mine])
    assert len(set(mine)) == 30
    assert references.draws == 1 + 30 + 1


async def test_payment_create_fails_after_a_bounded_number_of_taken_references(
    database: Database, company: tuple[ActorRef[CompanyActor], ScriptedReferences]
) -> None:
    # given a payment holding TAKEN, and a generator that draws nothing else
    ref, references = company
    await ask(ref, CreatePayment("test", NewPayment(100, "USD")))
    references.scripted = [TAKEN] * 10
    draws_before = references.draws

    # when
    with pytest.raises(ReferenceTaken):
        await ask(ref, CreatePayment("test", NewPayment(250, "USD")))

    # then it gave up after a few draws, stored nothing of it, and the actor carries on
    assert references.draws - draws_before == REFERENCE_ATTEMPTS
    assert await stored_references(database) == [TAKEN]
    references.scripted = [FRESH]
    after: Outcome = await ask(ref, CreatePayment("test", NewPayment(300, "USD")))
    assert after.payment.reference == FRESH


async def test_payment_create_is_not_retried_when_its_idempotency_key_was_stored_first(
    company: tuple[ActorRef[CompanyActor], ScriptedReferences], context: ActorContext
) -> None:
    # given a key that holds a live response already (another request committed under it)
    ref, references = company
    record = await _stored_first(context, "key-2")
    references.scripted = [FRESH]

    # when
    with pytest.raises(KeyAlreadyStored):
        await ask(ref, CreatePayment("test", NewPayment(100, "USD"), idempotency=record))

    # then no other reference was drawn, and nothing of the request was stored
    assert references.draws == 1
    assert await stored_references(context.database) == []


async def test_a_taken_reference_is_retried_before_an_idempotency_key_stored_first_refuses(
    company: tuple[ActorRef[CompanyActor], ScriptedReferences], context: ActorContext
) -> None:
    # given a payment holding TAKEN, and the request's key holding a live response already
    ref, references = company
    await ask(ref, CreatePayment("test", NewPayment(100, "USD")))
    record = await _stored_first(context, "key-3")
    references.scripted = [TAKEN, FRESH]
    draws_before = references.draws

    # when: the reference collides first; the retry then meets the key's row
    with pytest.raises(KeyAlreadyStored):
        await ask(ref, CreatePayment("test", NewPayment(250, "USD"), idempotency=record))

    # then the key's refusal ended it at once: one more draw, no payment under either reference
    assert references.draws - draws_before == 2
    assert await stored_references(context.database) == [TAKEN]


async def test_checkout_of_a_multi_use_link_gives_the_child_a_fresh_reference_when_taken(
    context: ActorContext, company: tuple[ActorRef[CompanyActor], ScriptedReferences]
) -> None:
    # given a multi-use link holding TAKEN, and a payment actor that draws TAKEN for its child
    ref, _ = company
    link: Outcome = await ask(
        ref, CreatePayment("test", NewPayment(500, "EUR", allow_multiple=True))
    )
    assert link.payment.reference == TAKEN
    references = ScriptedReferences(TAKEN, FRESH)
    payment = payment_actor(
        ref, COMPANY, link.payment.id, context, SimulatorProcessor(), references=references
    )

    try:
        # when
        child: Outcome = await ask(payment, Checkout(CARD, email="buyer@example.com", phone=None))
    finally:
        await stop(payment)

    # then the child was paid under the fresh reference, and its events show it
    assert child.payment.reference == FRESH
    assert child.payment.status == "PAID"
    assert child.payment.link_payment_id == link.payment.id
    assert {e["data"]["object"]["reference"] for e in child.events} == {FRESH}
    assert await stored_references(context.database) == [TAKEN, FRESH]
    assert references.draws == 2


async def _stored_first(context: ActorContext, key: str) -> StoresReference:
    """A request's record for `key`, under which some earlier request stored a live response
    already."""
    now = iso(context.clock())
    row = {
        "company_id": COMPANY,
        "idem_key": key,
        "fingerprint": "fp",
        "status_code": 201,
        "headers": "{}",
        "body": "stored first",
        "created_at": now,
        "expires_at": LATER,
    }
    await context.commit(*store_response(row))
    return StoresReference(key, now)
