"""A money command retried with its Idempotency-Key is answered from its stored response, and
the retry touches nobody else's traffic: its unit, refused by the stored key, leaves the
company's books and open payouts exactly as they were (mps.actors.commits)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from mps.bootstrap import Overrides
from mps.persistence.database import Database
from tests.conftest import Clock
from tests.fakes import SlowDatabase
from tests.helpers import Member, create_payment, pay
from tests.money import ACCOUNT, balance, owner_with_paid_payment, paid_payment

pytestmark = pytest.mark.both_backends

# Every group commit and read 50 ms slower: commits overlap, as on a distant database.
LATENCY = 0.05


async def _post(
    client: TestClient[Any, Any], member: Member, path: str, key: str, **body: Any
) -> tuple[int, dict[str, Any]]:
    response = await client.post(
        f"/api/v1{path}", json=body, headers={**member.headers, "Idempotency-Key": key}
    )
    return response.status, await response.json()


async def test_same_key_retries_of_money_commands_beside_checkouts_never_answer_503(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application], clock: Clock
) -> None:
    # given a company with money, a slow database, and a payout, a refund and a card funding
    # each made once under its own key
    def slow(real: Database) -> Database:
        return SlowDatabase(real, LATENCY)

    client: TestClient[Any, Any] = await aiohttp_client(
        make_app(Overrides(clock=clock, wrap_database=slow))
    )
    member, refunded = await owner_with_paid_payment(client, "5000")
    await paid_payment(client, member, "20000")
    status, account = await _post(client, member, "/merchant/bank-accounts", "ba-1", **ACCOUNT)
    assert status == 201, account
    status, card = await _post(
        client, member, "/merchant/cards", "card-1", cardholderName="Ann Lee", currency="USD"
    )
    assert status == 201, card
    commands = {
        "payout": (
            "/merchant/payouts",
            {"amountMinor": "3000", "currency": "USD", "bankAccountId": account["id"]},
        ),
        "refund": ("/merchant/refunds", {"paymentId": refunded["id"], "amountMinor": "1000"}),
        "fund": (f"/merchant/cards/{card['id']}/fund", {"amountMinor": "2000"}),
    }
    first: dict[str, dict[str, Any]] = {}
    for name, (path, body) in commands.items():
        status, first[name] = await _post(client, member, path, f"{name}-key", **body)
        assert status in (200, 201), first[name]
    before = await balance(client, member)
    shoppers = [await create_payment(client, member, amountMinor="700") for _ in range(30)]

    # when 30 shoppers pay while each money command is retried five times with its key
    async def retry(name: str) -> list[tuple[int, dict[str, Any]]]:
        path, body = commands[name]
        return [await _post(client, member, path, f"{name}-key", **body) for _ in range(5)]

    checkouts, *retried = await asyncio.gather(
        asyncio.gather(*(pay(client, shopper["reference"]) for shopper in shoppers)),
        *(retry(name) for name in commands),
    )

    # then nobody was told to come back later: every checkout was paid, every retry answered
    # the first result, and only the checkouts moved money
    assert [response.status for response in checkouts] == [200] * 30
    for name, answers in zip(commands, retried, strict=True):
        assert [status for status, _ in answers] == [status for status, _ in answers[:1]] * 5
        assert {answer.get("id") for _, answer in answers} == {first[name].get("id")}, name
    after = await balance(client, member)
    assert after["available"] == before["available"] + 30 * 700
    assert after["reserved"] == before["reserved"]
