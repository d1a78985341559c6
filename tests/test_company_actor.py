"""The company actor against real storage: ordering, crashes and passivation
(mps.actors.company)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from typing import Any

import orjson
import pytest

from mps.actors.company import CompanyActor, CreateCompany, UpdateSettings
from mps.actors.context import ActorContext
from mps.actors.directory import ActorDirectory
from mps.actors.persistence import PersistenceActor
from mps.actors.runtime import ActorRef, ask, stop
from mps.auth.keyring import Keyring
from mps.domain.clock import Clock
from mps.domain.company import Company
from mps.domain.scopes import OWNER_ROLE
from mps.errors import NotFound
from mps.persistence.database import Database, IntegrityConflict
from tests.actors import KEYRING, PUBLIC_URL
from tests.fakes import RefusingDatabase

pytestmark = pytest.mark.both_backends

PATIENCE = 60.0


class FlakyClock:
    """The test clock, which can be told to fail once, as any dependency of a command might."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.fail_next = False

    def __call__(self) -> datetime:
        if self.fail_next:
            self.fail_next = False
            msg = "the clock is unreadable"
            raise OSError(msg)
        now: datetime = self.clock()
        return now


@pytest.fixture
def clock(clock: Clock) -> FlakyClock:
    """The test clock, able to fail once here: the actors of `context` read it."""
    return FlakyClock(clock)


@pytest.fixture
async def spawn(context: ActorContext) -> AsyncIterator[Callable[[str], ActorRef[CompanyActor]]]:
    started: list[ActorRef[CompanyActor]] = []

    def start(company_id: str) -> ActorRef[CompanyActor]:
        ref = CompanyActor.start(company_id, context, KEYRING, public_url=PUBLIC_URL)
        started.append(ref)
        return ref

    yield start
    for ref in started:
        await stop(ref)


async def stored_company(database: Database, company_id: str) -> tuple[int, dict[str, Any]]:
    row = await database.fetchrow("SELECT version, data FROM companies WHERE id = $1", company_id)
    assert row is not None
    return row["version"], orjson.loads(row["data"])


async def count(database: Database, table: str) -> int:
    value: int = await database.fetchval(f"SELECT COUNT(*) FROM {table}")
    return value


def create(name: str = "Acme Ltd") -> CreateCompany:
    return CreateCompany(name=name, owner_email="owner@example.com", owner_name="Owner")


async def test_company_actor_applies_settings_in_order_when_a_thousand_arrive_at_once(
    database: Database, spawn: Callable[[str], ActorRef[CompanyActor]]
) -> None:
    # given
    ref = spawn("cmp_order")
    await ask(ref, create())

    # when: every command is queued, in order, before the actor handles the first
    futures = [
        ref.ask(UpdateSettings(mode="test", changes={"settlement_delay_sec": i}), block=False)
        for i in range(1_000)
    ]
    async with asyncio.timeout(PATIENCE):
        replies: list[Company] = await asyncio.gather(*futures)

    # then
    assert [c.version for c in replies] == list(range(2, 1_002))
    assert [c.settings["test"].settlement_delay_sec for c in replies] == list(range(1_000))
    version, data = await stored_company(database, "cmp_order")
    assert version == 1_001
    assert data["settings"]["test"]["settlementDelaySec"] == 999


async def test_create_company_leaves_no_row_when_its_unit_fails_part_way(
    database: Database,
    refusing: RefusingDatabase,
    companies: ActorDirectory[str, CompanyActor],
) -> None:
    # given: the unit writing company, owner and membership is rejected after all three ran
    refusing.refuse = lambda _unit: True

    # when
    with pytest.raises(IntegrityConflict):
        await companies.ask("cmp_broken", create())

    # then: nothing of it was stored, and the next incarnation agrees with storage
    assert await count(database, "companies") == 0
    assert await count(database, "users") == 0
    assert await count(database, "members") == 0
    with pytest.raises(NotFound):
        await companies.ask("cmp_broken", UpdateSettings(mode="test", changes={}))
    owner = await companies.ask("cmp_broken", create())
    member = await database.fetchrow(
        "SELECT company_id, role_id FROM members WHERE user_id = $1", owner
    )
    assert member == {"company_id": "cmp_broken", "role_id": OWNER_ROLE}


async def test_company_actor_keeps_the_committed_snapshot_when_a_command_crashes_before_commit(
    database: Database,
    clock: FlakyClock,
    companies: ActorDirectory[str, CompanyActor],
) -> None:
    # given
    await companies.ask("cmp_crash", create())
    await companies.ask(
        "cmp_crash", UpdateSettings(mode="test", changes={"settlement_delay_sec": 5})
    )

    # when: the new settings are computed, then the command fails before they are committed
    clock.fail_next = True
    with pytest.raises(OSError, match="unreadable"):
        await companies.ask(
            "cmp_crash", UpdateSettings(mode="test", changes={"payout_schedule": "daily"})
        )
    after = await companies.ask(
        "cmp_crash", UpdateSettings(mode="test", changes={"settlement_delay_sec": 6})
    )

    # then: the next command started from version 2, without the change that never committed
    assert after.version == 3
    assert after.settings["test"].payout_schedule == "manual"
    assert after.settings["test"].settlement_delay_sec == 6
    assert companies.activations == 2
    version, data = await stored_company(database, "cmp_crash")
    assert version == 3
    assert data["settings"]["test"]["payoutSchedule"] == "manual"


async def test_company_actor_reloads_its_settings_from_storage_when_reactivated_after_passivation(
    database: Database, companies: ActorDirectory[str, CompanyActor]
) -> None:
    # given: settings changed, then the actor passivated
    await companies.ask("cmp_idle", create())
    await companies.ask(
        "cmp_idle", UpdateSettings(mode="live", changes={"payout_schedule": "weekly"})
    )
    companies.passivate("cmp_idle")
    assert not companies.is_active("cmp_idle")

    # when
    reply = await companies.ask(
        "cmp_idle", UpdateSettings(mode="test", changes={"settlement_delay_sec": 60})
    )

    # then: the new incarnation started from what was stored, version and all
    assert companies.activations == 2
    assert reply.version == 3
    assert reply.settings["live"].payout_schedule == "weekly"
    assert reply.settings["test"].settlement_delay_sec == 60
    version, data = await stored_company(database, "cmp_idle")
    assert version == 3
    assert data["settings"]["live"]["payoutSchedule"] == "weekly"


async def test_a_burst_of_payment_creates_for_one_company_shares_group_commits(
    database: Database, clock: Any
) -> None:
    from mps.actors.company import CreatePayment
    from mps.domain.payments import NewPayment

    # given a company
    writer = PersistenceActor.launch(database)
    context = ActorContext(database, writer.actor_ref, clock)
    keyring = Keyring(b"s" * 32, b"e" * 32)
    company = CompanyActor.launch("co_burst", context, keyring, public_url="http://x")
    try:
        await ask(company.actor_ref, CreateCompany("Burst", "burst@example.com", None))
        commits_before = writer.commits

        # when 100 creates arrive at once
        outcomes = await asyncio.gather(
            *(
                ask(company.actor_ref, CreatePayment("test", NewPayment(100 + n, "USD")))
                for n in range(100)
            )
        )

        # then each got its own committed payment, in fewer transactions than payments
        assert len({o.payment.id for o in outcomes}) == 100
        stored = await database.fetchval(
            "SELECT COUNT(*) FROM payments WHERE company_id = 'co_burst'"
        )
        assert stored == 100
        assert writer.commits - commits_before < 100
    finally:
        await stop(company.actor_ref)
        await stop(writer.actor_ref)
