"""The payment, card and invoice actors' turns never wait: each decides from memory, reserves
its change there, and hands its unit over (mps.actors.commits.UnitChain); the next message is
decided against the reservation while the unit commits, and the caller's reply waits for the
commit. A unit refused gives the reservation back; one of unknown outcome makes the actor
reload; one actor's units commit in the order they were decided."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from mps.actors.attempts import SettleAttempts
from mps.actors.card import AuthorizeCard, WithdrawFromCard
from mps.actors.commits import UnitChain
from mps.actors.invoice import MarkInvoicePaid, VoidInvoice
from mps.actors.payment import Cancel, RefundOutcome
from mps.adapters.processor import Authorization
from mps.domain.clock import iso
from mps.domain.ids import new_id
from mps.errors import Conflict, Unavailable
from mps.persistence.attempt_store import StoredAttempt, attempt_insert
from mps.persistence.database import IntegrityConflict
from mps.persistence.statements import WriteUnit
from tests.conftest import Clock
from tests.fakes import RefusingDatabase, Serving, app_database, wait_until
from tests.helpers import Member, pending_payment, sign_up
from tests.money import balance, paid_payment, refund_by_actor, services, stored_refunds
from tests.processors import TestProcessor

pytestmark = pytest.mark.both_backends

PATIENCE = 30.0


class HeldDatabase(RefusingDatabase):
    """A refusing database (tests/fakes.py) that also tells the refunds it wrote."""

    def refund_amounts(self) -> list[int]:
        """The amounts of the refunds written, in the order their units committed."""
        return [
            int(st.params[5])
            for unit in self.written
            for st in unit
            if st.sql.startswith("INSERT INTO refunds")
        ]


class RecallHeld(TestProcessor):
    """The test processor, whose `recall` waits until the test lets it answer."""

    def __init__(self) -> None:
        super().__init__()
        self.recall_gate = asyncio.Event()
        self.recalls = 0

    async def recall(self, idempotency_key: str) -> Authorization | None:
        self.recalls += 1
        await self.recall_gate.wait()
        return await super().recall(idempotency_key)


def _inserts_refund(unit: WriteUnit) -> bool:
    return any(st.sql.startswith("INSERT INTO refunds") for st in unit)


@pytest.fixture
def processor() -> RecallHeld:
    return RecallHeld()


@pytest.fixture
async def shop(serving: Serving, processor: RecallHeld) -> AsyncIterator[TestClient[Any, Any]]:
    client = await serving.paying_through(processor, HeldDatabase)
    yield client
    # A test that failed with the writer or a recall held must still let the app shut down.
    app_database(client, HeldDatabase).hold.set()
    processor.recall_gate.set()


@pytest.fixture
def writer(shop: TestClient[Any, Any]) -> HeldDatabase:
    """The database the app's writer commits through."""
    return app_database(shop, HeldDatabase)


async def _refund(shop: TestClient[Any, Any], member: Member, payment_id: str, amount: int) -> Any:
    """The payment actor's answer to a refund of `amount`, waited for no longer than PATIENCE."""
    return await asyncio.wait_for(refund_by_actor(shop, member, payment_id, amount), PATIENCE)


async def _refunds_in_full(shop: TestClient[Any, Any], member: Member, payment_id: str) -> None:
    """Refund the whole 2500 of the payment, which must be accepted and reserve all of it."""
    made = await _refund(shop, member, payment_id, 2500)
    assert made.refund.amount_minor == 2500
    assert await balance(shop, member) == {"available": 0, "pending": 0, "reserved": 2500}


async def _ask_card(shop: TestClient[Any, Any], member: Member, card_id: str, message: Any) -> Any:
    """The card actor's answer to `message`, asked in the caller's own task."""
    return await services(shop).shards.ask_card(member.company_id, card_id, message)


async def _paid(shop: TestClient[Any, Any], amount: str = "2500") -> tuple[Member, str]:
    member = await sign_up(shop)
    payment = await paid_payment(shop, member, amount)
    return member, payment["id"]


async def test_a_unit_chain_sends_each_unit_only_once_the_one_before_it_has_ended() -> None:
    # given a chain whose first unit's commit is held
    sent: list[str] = []
    release = asyncio.Event()
    stale: list[bool] = []
    chain = UnitChain(stale=lambda: stale.append(True))

    async def first() -> str:
        sent.append("first")
        await release.wait()
        return "first"

    async def second() -> str:
        sent.append("second")
        return "second"

    # when two units are handed over in turn, and the second's work is started first
    one, two = chain.submit(first), chain.submit(second)
    second_work = asyncio.ensure_future(two)
    first_work = asyncio.ensure_future(one)
    await wait_until(lambda: sent == ["first"])

    # then the second is not sent while the first is out (its work, started first, would
    # have been sent first), and is once the first has committed
    assert sent == ["first"] and not second_work.done()
    release.set()
    answers = await asyncio.wait_for(asyncio.gather(first_work, second_work), PATIENCE)
    assert list(answers) == ["first", "second"]
    assert sent == ["first", "second"] and stale == []


async def test_a_payment_decides_its_next_refund_against_one_whose_commit_is_held(
    shop: TestClient[Any, Any], writer: HeldDatabase
) -> None:
    # given a paid payment of 2500, and a writer that holds every commit
    member, payment_id = await _paid(shop)
    writer.hold.clear()

    # when a refund of 1000 is asked for, and then one of 2000 and one of 1500
    first = asyncio.ensure_future(refund_by_actor(shop, member, payment_id, 1000))
    with pytest.raises(Conflict):
        await _refund(shop, member, payment_id, 2000)
    third = asyncio.ensure_future(refund_by_actor(shop, member, payment_id, 1500))

    # then the 2000 was refused (1000 reserved of 2500) while the first still waited for the
    # writer; once it goes on, both refunds commit, the first one first
    assert not first.done()
    await wait_until(lambda: writer.waiting_writes > 0, PATIENCE)
    writer.hold.set()
    made = await asyncio.wait_for(asyncio.gather(first, third), PATIENCE)
    assert [outcome.refund.amount_minor for outcome in made] == [1000, 1500]
    assert all(isinstance(outcome, RefundOutcome) for outcome in made)
    assert writer.refund_amounts() == [1000, 1500]
    assert await balance(shop, member) == {"available": 0, "pending": 0, "reserved": 2500}


async def test_a_refund_refused_at_the_writer_gives_its_reservation_back_and_moves_no_money(
    shop: TestClient[Any, Any], writer: HeldDatabase
) -> None:
    # given a paid payment of 2500 whose next refund's unit the writer refuses
    member, payment_id = await _paid(shop)
    writer.refuse = _inserts_refund

    # when the whole amount is refunded
    with pytest.raises(IntegrityConflict):
        await _refund(shop, member, payment_id, 2500)

    # then nothing is reserved or stored, and the whole amount can be refunded again (the
    # payment gave its reservation back; the books, theirs)
    assert await stored_refunds(shop, payment_id) == []
    assert await balance(shop, member) == {"available": 2500, "pending": 0, "reserved": 0}
    await _refunds_in_full(shop, member, payment_id)


async def test_a_refund_decided_on_top_of_a_refused_one_is_never_written(
    shop: TestClient[Any, Any], writer: HeldDatabase
) -> None:
    # given a paid payment of 2500, a held writer, and a refusal armed for the first refund
    member, payment_id = await _paid(shop)
    writer.refuse = _inserts_refund
    writer.hold.clear()

    # when a refund of 1000 is decided, then one of 500 on top of its reservation, and the
    # writer goes on
    first = asyncio.ensure_future(refund_by_actor(shop, member, payment_id, 1000))
    second = asyncio.ensure_future(refund_by_actor(shop, member, payment_id, 500))
    await wait_until(lambda: writer.waiting_writes > 0, PATIENCE)
    writer.hold.set()
    answers = await asyncio.wait_for(
        asyncio.gather(first, second, return_exceptions=True), PATIENCE
    )

    # then the first is refused, the second (decided against a reservation that did not hold)
    # is told to retry and was never written, and the reloaded payment refunds in full
    assert isinstance(answers[0], IntegrityConflict), answers
    assert isinstance(answers[1], Unavailable) and answers[1].retry_after == 1, answers
    assert await stored_refunds(shop, payment_id) == []
    await _refunds_in_full(shop, member, payment_id)


async def test_a_payment_reloads_after_a_refund_of_unknown_outcome_and_counts_what_landed(
    shop: TestClient[Any, Any], writer: HeldDatabase
) -> None:
    # given a paid payment of 2500 whose next refund lands but is not acknowledged
    member, payment_id = await _paid(shop)
    writer.lose_ack = _inserts_refund
    with pytest.raises(Unavailable):
        await _refund(shop, member, payment_id, 2000)

    # when more is refunded than what storage leaves, then what it leaves
    with pytest.raises(Conflict):
        await _refund(shop, member, payment_id, 1000)

    async def rest() -> Any:
        # The company's books reload once the commit they lost has ended: until then 503.
        for _ in range(100):
            try:
                return await refund_by_actor(shop, member, payment_id, 500)
            except Unavailable:
                await asyncio.sleep(0.05)
        return await refund_by_actor(shop, member, payment_id, 500)

    made = await asyncio.wait_for(rest(), PATIENCE)

    # then the payment had reloaded what landed: the 2000 counts, the 500 fits, and the books
    # agree to the cent
    assert made.refund.amount_minor == 500
    assert await stored_refunds(shop, payment_id) == [(2000, "PENDING"), (500, "PENDING")]
    assert await balance(shop, member) == {"available": 0, "pending": 0, "reserved": 2500}


async def test_a_payment_takes_messages_while_the_processor_is_recalled_after_activation(
    shop: TestClient[Any, Any], processor: RecallHeld, writer: HeldDatabase, clock: Clock
) -> None:
    # given a PENDING payment with an attempt a fault left IN_FLIGHT, and a processor whose
    # recall is held
    member, payment = await pending_payment(shop, amountMinor="2500")
    found = services(shop)
    attempt = StoredAttempt(
        id=new_id("att"), company_id=member.company_id, payment_id=payment["id"],
        retry_key=None, child_id=None, email=None, phone=None, status="IN_FLIGHT",
        created_at=iso(clock()),
    )  # fmt: skip
    await found.actors.commit(attempt_insert(attempt))

    # when the payment is cancelled, and its actor is asked something else meanwhile
    cancel = asyncio.ensure_future(
        found.shards.ask_payment(member.company_id, payment["id"], Cancel("test"))
    )
    await wait_until(lambda: processor.recalls == 1, PATIENCE)
    woken = await asyncio.wait_for(
        found.shards.ask_payment(member.company_id, payment["id"], SettleAttempts()), PATIENCE
    )

    # then the actor answered while the recall was out, the cancel waited for the attempt's
    # settling, and once the processor says it took nothing, the attempt is VOID and the
    # payment CANCELLED
    assert woken is None
    assert not cancel.done()
    processor.recall_gate.set()
    cancelled = await asyncio.wait_for(cancel, PATIENCE)
    assert cancelled.payment.status == "CANCELLED"
    row = await found.database.fetchrow(
        "SELECT status FROM checkout_attempts WHERE id = $1", attempt.id
    )
    assert row is not None and row["status"] == "VOID"
    assert writer.waiting_writes == 0


async def _card(shop: TestClient[Any, Any]) -> tuple[Member, str]:
    """A new member, and a card of theirs holding 3000 (funded from a paid payment)."""
    member = await sign_up(shop)
    await paid_payment(shop, member, "10000")
    body = {"cardholderName": "Ann Lee", "currency": "USD", "initialFundingMinor": "3000"}
    response = await shop.post("/api/v1/merchant/cards", json=body, headers=member.headers)
    assert response.status == 201, await response.text()
    card_id: str = (await response.json())["id"]
    return member, card_id


async def test_a_card_decides_its_next_message_against_an_authorization_whose_commit_is_held(
    shop: TestClient[Any, Any], writer: HeldDatabase
) -> None:
    # given a card holding 3000, and a writer that holds every commit
    member, card_id = await _card(shop)
    writer.hold.clear()

    # when 2000 is authorized, and then 2000 withdrawn
    spent = asyncio.ensure_future(
        _ask_card(shop, member, card_id, AuthorizeCard("test", 2000, "USD"))
    )
    with pytest.raises(Conflict) as refused:
        await asyncio.wait_for(
            _ask_card(shop, member, card_id, WithdrawFromCard("test", 2000)), PATIENCE
        )

    # then the withdrawal is refused against the 1000 left while the authorization still
    # waited for the writer, which then books it
    assert refused.value.code == "balance_insufficient"
    assert not spent.done()
    writer.hold.set()
    outcome = await asyncio.wait_for(spent, PATIENCE)
    assert outcome.authorization["approved"] is True
    assert outcome.balance == 1000


async def test_a_card_authorization_refused_at_the_writer_gives_the_balance_back(
    shop: TestClient[Any, Any], writer: HeldDatabase
) -> None:
    # given a card holding 3000 whose next authorization's unit the writer refuses
    member, card_id = await _card(shop)
    writer.refuse = lambda unit: any(
        st.sql.startswith("INSERT INTO card_authorizations") for st in unit
    )

    # when 3000 is authorized
    with pytest.raises(IntegrityConflict):
        await asyncio.wait_for(
            _ask_card(shop, member, card_id, AuthorizeCard("test", 3000, "USD")), PATIENCE
        )

    # then the card holds 3000 still: the whole of it can be withdrawn
    outcome = await asyncio.wait_for(
        _ask_card(shop, member, card_id, WithdrawFromCard("test", 3000)), PATIENCE
    )
    assert outcome.balance == 0


async def test_an_invoice_decides_its_next_change_against_one_whose_commit_is_held(
    shop: TestClient[Any, Any], writer: HeldDatabase
) -> None:
    # given an invoice, and a writer that holds every commit
    member = await sign_up(shop)
    body = {
        "currency": "USD",
        "customerEmail": "buyer@example.com",
        "items": [{"description": "Design work", "quantity": 1, "unitAmountMinor": "12500"}],
    }
    response = await shop.post("/api/v1/merchant/invoices", json=body, headers=member.headers)
    assert response.status == 201, await response.text()
    invoice_id = (await response.json())["id"]
    found = services(shop)
    writer.hold.clear()

    # when it is marked paid, and then voided
    paid = asyncio.ensure_future(
        found.shards.ask_invoice(
            member.company_id, invoice_id, MarkInvoicePaid("test", member.user_id)
        )
    )
    with pytest.raises(Conflict):
        await asyncio.wait_for(
            found.shards.ask_invoice(
                member.company_id, invoice_id, VoidInvoice("test", member.user_id)
            ),
            PATIENCE,
        )

    # then the void is refused against the invoice PAID in memory while its commit still
    # waited for the writer, which then commits it
    assert not paid.done()
    writer.hold.set()
    outcome = await asyncio.wait_for(paid, PATIENCE)
    assert outcome.invoice.status == "PAID"
    stored = await found.database.fetchrow("SELECT status FROM invoices WHERE id = $1", invoice_id)
    assert stored is not None and stored["status"] == "PAID"
