"""A money commit whose outcome is unknown (the database took the write, then the connection
died before it said so) never leaves an actor deciding from memory that differs from storage:
the company's books and the payment's refunds are loaded again before the next decision."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from mps.bootstrap import Overrides
from mps.persistence.database import Database, Fences, UnitOutcome
from mps.persistence.statements import WriteUnit
from tests.conftest import Clock
from tests.fakes import WrappedDatabase
from tests.helpers import assert_refused, post_as
from tests.money import balance, owner_with_paid_payment, paid_payment, refund

pytestmark = pytest.mark.both_backends


class LandsThenFails(WrappedDatabase):
    """While `armed`, the next group commit holding a statement that starts with `prefix` is
    written for real, and then reported as a lost connection."""

    def __init__(self, real: Database) -> None:
        super().__init__(real)
        self.armed = False
        self.prefix = "INSERT INTO refunds"

    async def write(
        self, units: Sequence[WriteUnit], fences: Fences | None = None
    ) -> list[UnitOutcome]:
        outcomes = await self.real.write(units, fences)
        if self.armed and any(st.sql.startswith(self.prefix) for unit in units for st in unit):
            self.armed = False
            msg = "the connection was lost before the commit was confirmed"
            raise ConnectionResetError(msg)
        return outcomes


async def test_refund_of_unknown_outcome_is_decided_again_from_storage(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application], clock: Clock
) -> None:
    # given 3500 available over two payments, and a database that loses its answer once
    flaky: list[LandsThenFails] = []

    def wrap(real: Database) -> Database:
        flaky.append(LandsThenFails(real))
        return flaky[0]

    app = make_app(Overrides(clock=clock, wrap_database=wrap))
    client: TestClient[Any, Any] = await aiohttp_client(app)
    member, first = await owner_with_paid_payment(client, "2500")
    await paid_payment(client, member, "1000")
    response = await client.post(
        "/api/v1/merchant/bank-accounts",
        json={
            "accountHolderName": "Acme",
            "accountNumber": "000123456789",
            "bankCode": "110000000",
            "currency": "USD",
            "country": "US",
        },
        headers=member.headers,
    )
    account = await response.json()

    # when a refund of the whole first payment lands but is answered 503
    flaky[0].armed = True
    lost = await refund(client, member, first["id"], "2500")

    # then the client was told to retry, and every later decision counts what landed
    await assert_refused(lost, 503)
    assert await balance(client, member) == {"available": 1000, "pending": 0, "reserved": 2500}
    again = await refund(client, member, first["id"], "1")
    await assert_refused(again, 409, "refund_exceeds_remaining")
    too_much = await post_as(
        client,
        member,
        "/api/v1/merchant/payouts",
        {"amountMinor": "1001", "currency": "USD", "bankAccountId": account["id"]},
    )
    await assert_refused(too_much, 409, "balance_insufficient")
