"""API10, unsafe consumption of APIs: what the service takes from third parties it bounds and
checks. Built today: the card processor adapter (mps.adapters.processor), called by the payment
actor at checkout, and the credentials broadcast read from the broker (mps.auth.credentials).
Not built yet: webhook delivery (no merchant endpoint is called or read) and any real processor
adapter beyond the simulator; their tests come with them.

The payment actor is started directly with a fake processor, as tests/test_payment_references.py
starts it, and a processor deadline of 0.2 s instead of its 10 s.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from mps.actors.company import CompanyActor, CreatePayment
from mps.actors.context import ActorContext
from mps.actors.payment import Checkout, Outcome, PaymentActor
from mps.actors.runtime import ActorRef, ask, stop
from mps.adapters.processor import (
    Authorization,
    CardInput,
    Processor,
    RefundResult,
    SimulatorProcessor,
)
from mps.domain.clock import Clock
from mps.domain.payments import NewPayment
from mps.errors import Unavailable
from mps.persistence.database import Database
from tests.actors import CARD, actor_context, company_actor, payment_actor

pytestmark = pytest.mark.both_backends

COMPANY = "co_unsafe_consumption"


class HangingProcessor:
    """A processor that accepts the connection and never answers."""

    def __init__(self) -> None:
        self.calls = 0

    async def authorize(
        self, card: CardInput, amount_minor: int, currency: str, *, idempotency_key: str
    ) -> Authorization:
        self.calls += 1
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def recall(self, idempotency_key: str) -> Authorization | None:
        self.calls += 1
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def refund(
        self, refund_id: str, payment_id: str, amount_minor: int, currency: str
    ) -> RefundResult:
        self.calls += 1
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


@pytest.fixture
async def context(database: Database, clock: Clock) -> AsyncIterator[ActorContext]:
    async with actor_context(database, clock) as context:
        yield context


@pytest.fixture
async def company(context: ActorContext) -> AsyncIterator[ActorRef[CompanyActor]]:
    async with company_actor(context, COMPANY, "Consumption Ltd") as ref:
        yield ref


@pytest.fixture
async def pending(company: ActorRef[CompanyActor]) -> Outcome:
    """A created company holding one PENDING test-mode payment."""
    outcome: Outcome = await ask(company, CreatePayment("test", NewPayment(2500, "USD")))
    return outcome


def _payment_actor(
    company: ActorRef[CompanyActor], context: ActorContext, outcome: Outcome, processor: Processor
) -> ActorRef[PaymentActor]:
    return payment_actor(
        company, COMPANY, outcome.payment.id, context, processor, processor_deadline=0.2
    )


async def test_a_processor_that_never_answers_is_cut_off_at_the_checkout_deadline(
    company: ActorRef[CompanyActor], context: ActorContext, pending: Outcome
) -> None:
    # given a payment whose processor hangs, and a short deadline
    hanging = HangingProcessor()
    actor = _payment_actor(company, context, pending, hanging)

    # when a shopper checks out
    with pytest.raises(Unavailable) as refused:
        await asyncio.wait_for(ask(actor, Checkout(CARD, None, None, mode="test")), 5)

    # then the shopper gets a retryable 503 that names no processor internals
    assert hanging.calls == 1
    assert refused.value.code == "processor_timeout"
    assert "4242" not in str(refused.value)
    await stop(actor)


async def test_a_payment_stays_payable_after_its_processor_timed_out(
    company: ActorRef[CompanyActor], context: ActorContext, pending: Outcome
) -> None:
    # given a checkout that timed out against a hanging processor
    hung = _payment_actor(company, context, pending, HangingProcessor())
    with pytest.raises(Unavailable):
        await ask(hung, Checkout(CARD, None, None, mode="test"))
    await stop(hung)

    # when the shopper retries once the processor answers again
    actor = _payment_actor(company, context, pending, SimulatorProcessor())
    paid: Outcome = await ask(actor, Checkout(CARD, None, None, mode="test"))

    # then the timeout recorded no charge and left nothing half-done
    assert pending.payment.status == "PENDING"
    assert paid.payment.status == "PAID"
    await stop(actor)
