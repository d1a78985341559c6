"""A company actor's activation: everything it holds read in one round trip
(mps.persistence.company_snapshot), the same state the separate loaders read."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from mps.actors.company import Balances, CompanyActor
from mps.actors.directory import ActorDirectory
from mps.domain.ledger import Balance
from mps.errors import NotFound
from mps.persistence import approval_store, audit_store, invoice_store, payout_store, team_store
from mps.persistence.company_snapshot import load_company
from mps.persistence.database import Database
from mps.persistence.queries import companies
from mps.services import Services
from tests.fakes import SlowDatabase
from tests.helpers import Member, add_member, answered, create_invoice, created, sign_up
from tests.money import ACCOUNT, balance, paid_payment, services

# Only the test moves money: a background pass beside its reads could change a balance.
pytestmark = [pytest.mark.both_backends, pytest.mark.slowed_passes]


@dataclass(frozen=True)
class Company:
    owner: Member
    admin: Member
    approval_id: str

    @property
    def id(self) -> str:
        return self.owner.company_id


@pytest.fixture
async def company(client: TestClient[Any, Any]) -> Company:
    """A company holding some of everything an activation loads: a teammate and a custom role,
    settled and unsettled money, a bank account, an open payout, an approval policy and a
    request under it with one vote of two, an invoice, and its audit trail."""
    owner = await sign_up(client)
    role = await created(
        client, owner, "/api/v1/team/roles", {"name": "Support", "scopes": ["payments:read"]}
    )
    await add_member(client, owner, "support@example.com", role["id"])
    admin = await add_member(client, owner, "admin@example.com", "role_admin")
    await paid_payment(client, owner, "10000")
    await answered(
        await client.patch(
            "/api/v1/merchant/settings", json={"settlementDelaySec": 3600}, headers=owner.headers
        ),
        200,
    )
    await paid_payment(client, owner, "3000")
    account = await created(client, owner, "/api/v1/merchant/bank-accounts", ACCOUNT)
    payout = {"currency": "USD", "bankAccountId": account["id"]}
    await created(client, owner, "/api/v1/merchant/payouts", {**payout, "amountMinor": "500"})
    await answered(
        await client.put(
            "/api/v1/team/approvals/policies/payout.create",
            json={"enabled": True, "thresholds": {"USD": "1000"}, "requiredApprovals": 2},
            headers=owner.headers,
        ),
        200,
    )
    held = await created(
        client, owner, "/api/v1/merchant/payouts", {**payout, "amountMinor": "5000"}, 202
    )
    request_id = held["approvalRequest"]["id"]
    await created(
        client,
        admin,
        f"/api/v1/team/approvals/requests/{request_id}/approve",
        {"comment": "ok"},
        200,
    )
    await create_invoice(
        client, owner, items=[{"description": "Work", "quantity": 1, "unitAmountMinor": "1000"}]
    )
    return Company(owner, admin, request_id)


@pytest.fixture
async def counted(client: TestClient[Any, Any]) -> AsyncIterator[tuple[SlowDatabase, Any]]:
    """Company actors of their own over the app's storage, each read they make recorded: an
    activation here is the one a restarted node makes."""
    app: Services = services(client)
    db = SlowDatabase(app.database, 0.0)
    context = replace(app.actors, database=db)
    directory: ActorDirectory[str, CompanyActor] = ActorDirectory(
        "company",
        lambda company_id: CompanyActor(
            company_id, context, app.keyring, public_url="http://127.0.0.1:8080"
        ),
        capacity=10,
        idle_after=300.0,
    )
    yield db, directory
    await directory.close()


async def _sum_of_postings(database: Database, company_id: str) -> dict[tuple[str, str], Balance]:
    """The balances as the postings and open settlements sum them (what activation read before
    the snapshots)."""
    books: dict[tuple[str, str], Balance] = {}
    for row in await database.fetch(
        "SELECT mode, currency, account, SUM(amount_minor) AS total FROM ledger_postings "
        "WHERE company_id = $1 AND account IN ('available', 'pending', 'reserved') "
        "GROUP BY mode, currency, account",
        company_id,
    ):
        key = (row["mode"], row["currency"])
        setattr(books.setdefault(key, Balance()), row["account"], int(row["total"]))
    for row in await database.fetch(
        "SELECT mode, currency, SUM(amount_minor) AS total FROM settlements "
        "WHERE company_id = $1 AND settled_at IS NULL GROUP BY mode, currency",
        company_id,
    ):
        books.setdefault((row["mode"], row["currency"]), Balance()).unsettled = int(row["total"])
    return books


async def test_a_company_actor_activates_in_one_read_when_a_restarted_node_first_asks_it(
    client: TestClient[Any, Any],
    company: Company,
    counted: tuple[SlowDatabase, ActorDirectory[str, CompanyActor]],
) -> None:
    # given a company with some of everything, and an actor of it nobody has activated yet
    db, directory = counted

    # when it is first asked
    reply = await directory.ask(company.id, Balances("test"))

    # then it read storage once (two round trips at most is the promise), and holds the
    # balances the app's own actor shows
    assert len(db.reads) == 1, db.reads
    shown = await balance(client, company.owner)
    usd = dict(reply)["USD"]
    assert {"available": usd.available, "pending": usd.pending, "reserved": usd.reserved} == shown


async def test_a_company_actor_activates_in_one_read_again_after_passivation(
    company: Company, counted: tuple[SlowDatabase, ActorDirectory[str, CompanyActor]]
) -> None:
    # given the company's actor, activated once and then passivated
    db, directory = counted
    before = await directory.ask(company.id, Balances("test"))
    directory.passivate(company.id)
    db.reads.clear()

    # when it is asked again
    after = await directory.ask(company.id, Balances("test"))

    # then the new incarnation read storage once, and found the same books
    assert directory.activations == 2
    assert len(db.reads) == 1, db.reads
    assert after == before


async def test_an_actor_of_no_company_activates_in_one_read_and_answers_not_found(
    counted: tuple[SlowDatabase, ActorDirectory[str, CompanyActor]],
) -> None:
    # given no company of this id
    db, directory = counted

    # when its actor is asked
    with pytest.raises(NotFound):
        await directory.ask("cmp_nobody", Balances("test"))

    # then it read once to learn so
    assert len(db.reads) == 1, db.reads


async def test_the_one_read_holds_what_the_separate_loaders_read_for_every_part_of_a_company(
    client: TestClient[Any, Any], company: Company
) -> None:
    # given a company with some of everything
    database = services(client).database

    # when it is loaded in one read
    loaded = await load_company(database, company.id)

    # then every part is what the separate loaders make of the same rows
    assert loaded is not None
    assert loaded.company == await companies.company(database, company.id)
    assert loaded.members == await companies.member_roles(database, company.id)
    assert len(loaded.members) == 3
    assert dict(loaded.books.committed) == await _sum_of_postings(database, company.id)
    assert loaded.books.committed[("test", "USD")].unsettled == 3000
    assert loaded.bank_accounts == await payout_store.load_bank_accounts(database, company.id)
    assert len(loaded.bank_accounts) == 1
    assert loaded.payouts == await payout_store.load_open_payouts(database, company.id)
    assert len(loaded.payouts) == 1
    assert loaded.invoice_numbers == await invoice_store.load_invoice_numbers(database, company.id)
    assert loaded.audit_head == await audit_store.load_head(database, company.id)
    assert loaded.audit_head.seq > 0
    assert loaded.roles == await team_store.load_roles(database, company.id)
    assert len(loaded.roles) == 1
    assert loaded.policies == await approval_store.load_policies(database, company.id)
    assert loaded.policies["payout.create"].required_approvals == 2
    assert loaded.approvals == await approval_store.load_open(database, company.id)
    [request] = loaded.approvals.values()
    assert request.id == company.approval_id
    assert [v.user_id for v in request.votes] == [company.admin.user_id]


async def test_the_one_read_finds_no_company_when_there_is_none(database: Database) -> None:
    assert await load_company(database, "cmp_nobody") is None
