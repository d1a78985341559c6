"""A group commit still running at the writer's deadline (mps.actors.persistence.LateWrite): its
senders are answered 503 at once and marked stale, and no actor that sent a unit in it reloads
before the write has ended (mps.actors.commits, mps.actors.runtime.hold_until); storage itself
refuses a refund that would take more than the payment has left (mps.persistence.refund_store).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from mps.actors.commits import undo_on_failure
from mps.actors.payment import PaymentActor
from mps.actors.persistence import LateWrite, PersistenceActor
from mps.actors.runtime import AsyncioActor, Detached, ask, stop
from mps.bootstrap import Overrides
from mps.domain.ids import new_id
from mps.errors import Conflict, Unavailable
from mps.persistence.database import Database
from mps.persistence.refund_store import RefundExceedsPayment, pending_refunds, refund_insert
from mps.persistence.statements import WriteUnit
from tests.conftest import Clock
from tests.fakes import GatedDatabase, wait_until
from tests.helpers import Member, sign_up
from tests.money import (
    balance,
    owner_with_paid_payment,
    paid_payment,
    refund_by_actor,
    services,
    stored_refunds,
)

PATIENCE = 30.0


def _inserts_refund(unit: WriteUnit) -> bool:
    return any(st.sql.startswith("INSERT INTO refunds") for st in unit)


@pytest.fixture
async def shop(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application], clock: Clock
) -> AsyncIterator[tuple[TestClient[Any, Any], GatedDatabase]]:
    wrapped: list[GatedDatabase] = []

    def wrap(real: Database) -> Database:
        # Only batches holding a refund's insert are held; every other write passes (the
        # outbox relay's, say), so the batch held is the refund's and no other.
        wrapped.append(GatedDatabase(real))
        wrapped[-1].holds = lambda units: any(_inserts_refund(unit) for unit in units)
        return wrapped[-1]

    app = make_app(Overrides(clock=clock, wrap_database=wrap))
    client: TestClient[Any, Any] = await aiohttp_client(app)
    yield client, wrapped[0]
    # A test that failed with a write held must still let the app shut down.
    wrapped[0].hold.set()


def _running(kind: type[AsyncioActor]) -> list[AsyncioActor]:
    return [actor for actor in AsyncioActor._running if isinstance(actor, kind)]


@pytest.mark.both_backends
async def test_a_payment_reloads_only_after_a_late_refund_write_has_ended_when_it_landed(
    shop: tuple[TestClient[Any, Any], GatedDatabase],
) -> None:
    client, db = shop
    member = await sign_up(client)
    payment_id = (await paid_payment(client, member, "2500"))["id"]
    [writer] = _running(PersistenceActor)
    assert isinstance(writer, PersistenceActor)
    writer.deadline = 0.5

    # given a refund of 2000 whose write outlives the writer's deadline: answered 503
    db.hold.clear()
    with pytest.raises(Unavailable):
        await asyncio.wait_for(refund_by_actor(client, member, payment_id, 2000), PATIENCE)
    assert db.waiting_writes == 1
    [stale] = _running(PaymentActor)

    # when another refund of 2000 arrives while that write is still running
    second = asyncio.ensure_future(refund_by_actor(client, member, payment_id, 2000))
    await wait_until(lambda: not stale.is_alive())

    # then the stale payment has stopped but not ended, so nothing reloaded: the refund waits
    assert not stale.task.done()
    assert not second.done()

    # and once the write lands, the fresh incarnation counts it and refuses the second
    db.hold.set()
    with pytest.raises(Conflict) as refused:
        await asyncio.wait_for(second, PATIENCE)
    assert refused.value.code == "refund_exceeds_remaining"
    assert await stored_refunds(client, payment_id) == [(2000, "PENDING")]
    assert await balance(client, member) == {"available": 500, "pending": 0, "reserved": 2000}


async def _refunded(
    client: TestClient[Any, Any], amount: int
) -> tuple[Member, str, Callable[[int], Awaitable[Any]]]:
    """A paid payment of 2500 with a refund of `amount` made through its actor: the payment's
    member and id, and a step that writes another refund of it straight to storage (as if
    another incarnation of the actor had decided it), a copy of the stored one but its amount."""
    member, payment = await owner_with_paid_payment(client)
    made = await asyncio.wait_for(refund_by_actor(client, member, payment["id"], amount), PATIENCE)
    svc = services(client)
    [stored] = await pending_refunds(svc.database, member.company_id, payment["id"])
    assert stored.id == made.refund.id

    async def write_beside(other: int) -> Any:
        return await svc.actors.commit(
            refund_insert(replace(stored, id=new_id("re"), amount_minor=other))
        )

    return member, payment["id"], write_beside


@pytest.mark.both_backends
async def test_storage_refuses_a_refund_insert_past_what_the_payment_has_left(
    client: TestClient[Any, Any],
) -> None:
    _member, payment_id, write_beside = await _refunded(client, 2000)

    # when a refund of 1000 is written with 500 left, then storage refuses it whole
    with pytest.raises(RefundExceedsPayment):
        await write_beside(1000)

    # and one that fits what is left is written
    await write_beside(500)
    assert await stored_refunds(client, payment_id) == [(2000, "PENDING"), (500, "PENDING")]


@pytest.mark.both_backends
async def test_a_refund_storage_refuses_is_answered_409_and_the_payment_reloads(
    client: TestClient[Any, Any],
) -> None:
    member, payment_id, write_beside = await _refunded(client, 500)

    # given storage holding a refund of 1500 the payment's actor never decided (memory behind)
    await write_beside(1500)

    # when the actor lets through a refund of 1000 that storage has no room for
    with pytest.raises(Conflict) as refused:
        await asyncio.wait_for(refund_by_actor(client, member, payment_id, 1000), PATIENCE)

    # then the refusal is the contract's 409, nothing was written, and the payment reloaded:
    # it now counts the stored 1500 and lets through exactly what is left
    assert refused.value.code == "refund_exceeds_remaining"
    with pytest.raises(Conflict):
        await asyncio.wait_for(refund_by_actor(client, member, payment_id, 501), PATIENCE)
    assert (
        await asyncio.wait_for(refund_by_actor(client, member, payment_id, 500), PATIENCE)
    ).refund
    assert await stored_refunds(client, payment_id) == [
        (500, "PENDING"),
        (1500, "PENDING"),
        (500, "PENDING"),
    ]


class Sender(AsyncioActor):
    """Commits a unit whose write outlives its answer, as the writer reports one."""

    def __init__(self, landing: asyncio.Future[None]) -> None:
        super().__init__()
        self.landing = landing
        self.stale = False

    def _mark_stale(self) -> None:
        self.stale = True

    async def receive(self, message: Any) -> Any:
        async def commit() -> None:
            with undo_on_failure(stale=self._mark_stale):
                raise LateWrite("the database did not confirm the write in time", self.landing)

        return Detached(commit())


async def test_an_actor_whose_write_outlived_its_answer_ends_only_after_that_write_has() -> None:
    landing: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    actor = Sender.launch(landing)

    # given a unit answered LateWrite while its write goes on
    with pytest.raises(LateWrite):
        await asyncio.wait_for(ask(actor.actor_ref, "commit"), PATIENCE)

    # then the actor is stale and may not passivate, and a stop does not end its task
    assert actor.stale
    assert not actor.can_passivate()
    stopping = asyncio.ensure_future(stop(actor.actor_ref))
    await wait_until(lambda: not actor.is_alive())
    assert not actor.task.done()

    # until the write has ended: then the task ends, and the writer's future was never cancelled
    landing.set_result(None)
    assert await asyncio.wait_for(stopping, PATIENCE)
    await asyncio.wait_for(actor.task, PATIENCE)
    assert not landing.cancelled()
