"""Steps the money tests share: paid payments, balances, the ledger's movements, sandbox keys."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp.test_utils import TestClient

from mps.http.keys import SERVICES
from mps.services import Services
from tests.helpers import Member, create_payment, pay, read_as, sign_up

# A bank account the payout tests open (decisions 5).
ACCOUNT = {
    "accountHolderName": "Acme Ltd",
    "accountNumber": "000123456789",
    "bankCode": "110000000",
    "currency": "USD",
    "country": "US",
}


def services(client: TestClient[Any, Any]) -> Services:
    found: Services = client.app[SERVICES]
    return found


async def paid_payment(
    client: TestClient[Any, Any], member: Member, amount: str = "2500", currency: str = "USD"
) -> dict[str, Any]:
    payment = await create_payment(client, member, amountMinor=amount, currency=currency)
    response = await pay(client, payment["reference"])
    assert response.status == 200, await response.text()
    return payment


async def owner_with_paid_payment(
    client: TestClient[Any, Any], amount: str = "2500", currency: str = "USD"
) -> tuple[Member, dict[str, Any]]:
    """The owner of a new company, and a payment of `amount` paid to them by card."""
    owner = await sign_up(client)
    return owner, await paid_payment(client, owner, amount, currency)


async def balance(
    client: TestClient[Any, Any], member: Member, currency: str = "USD"
) -> dict[str, int]:
    response = await client.get(
        "/api/v1/merchant/balance", params={"currency": currency}, headers=member.headers
    )
    assert response.status == 200, await response.text()
    body = await response.json()
    return {k: int(body[f"{k}Minor"]) for k in ("available", "pending", "reserved")}


async def every_item(
    client: TestClient[Any, Any], member: Member, path: str, **params: str
) -> list[dict[str, Any]]:
    """Every item of the listing at `path`, following its cursor to the end."""
    found: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        query = {"limit": "100", **params, **({"cursor": cursor} if cursor else {})}
        response = await client.get(path, params=query, headers=member.headers)
        assert response.status == 200, await response.text()
        body = await response.json()
        found += body["data"]
        cursor = body["nextCursor"]
        if cursor is None:
            return found


async def payouts(client: TestClient[Any, Any], member: Member) -> list[dict[str, Any]]:
    """The first page of the company's payouts, as `member` lists them."""
    listed = await read_as(client, member, "/api/v1/merchant/payouts")
    found: list[dict[str, Any]] = listed["data"]
    return found


async def movements(
    client: TestClient[Any, Any], member: Member, **params: str
) -> list[dict[str, Any]]:
    """Every movement of the ledger, following the cursor to the end, newest first."""
    return await every_item(client, member, "/api/v1/merchant/balance/transactions", **params)


async def refund(
    client: TestClient[Any, Any], member: Member, payment_id: str, amount: str, **extra: Any
) -> Any:
    return await client.post(
        "/api/v1/merchant/refunds",
        json={"paymentId": payment_id, "amountMinor": amount, **extra},
        headers=member.headers,
    )


async def refund_by_actor(
    client: TestClient[Any, Any], member: Member, payment_id: str, amount: int
) -> Any:
    """The payment actor's answer to a refund of `amount` asked of it directly, not through
    HTTP (a refused one raises). Asked in the caller's own task, so a test that sends several
    at once controls their order; the test bounds the wait."""
    from mps.actors.payment import CreateRefund

    return await services(client).shards.ask_payment(
        member.company_id, payment_id, CreateRefund("test", amount)
    )


async def stored_refunds(client: TestClient[Any, Any], payment_id: str) -> list[tuple[int, str]]:
    """The payment's refunds as storage holds them, oldest first: (amount, status)."""
    rows = await services(client).database.fetch(
        "SELECT amount_minor, status FROM refunds WHERE payment_id = $1 ORDER BY created_at, id",
        payment_id,
    )
    return [(int(r["amount_minor"]), r["status"]) for r in rows]


async def process_refunds(client: TestClient[Any, Any], clock: Any) -> None:
    """Let the processor answer every refund that is due, now (five seconds on)."""
    clock.advance(seconds=5)
    await services(client).money.process_refunds()


async def bank_steps(client: TestClient[Any, Any], clock: Any) -> None:
    """Let the simulated bank take every step that is due, after its delays (ten seconds on)."""
    clock.advance(seconds=10)
    await services(client).money.advance_payouts()


async def sandbox_key(client: TestClient[Any, Any], member: Member, *scopes: str) -> dict[str, str]:
    response = await client.post(
        "/api/v1/merchant/api-keys",
        json={"name": "sandbox", "scopes": list(scopes) or ["refunds:write"]},
        headers=member.headers,
    )
    assert response.status == 201, await response.text()
    return {"Authorization": f"Bearer {(await response.json())['key']}"}


async def simulate(
    client: TestClient[Any, Any], key: dict[str, str], kind: str, **body: Any
) -> Any:
    return await client.post(f"/api/v1/developer/sandbox/{kind}", json=body, headers=key)


async def authorize_card(
    client: TestClient[Any, Any], key: dict[str, str], card_id: str, amount: str, **extra: Any
) -> Any:
    """The sandbox's answer to an authorization of `amount` USD on the card, with `extra`
    fields (a merchant category, say), made with the test key `key`."""
    body = {"cardId": card_id, "amountMinor": amount, "currency": "USD", **extra}
    return await simulate(client, key, "card.authorization", **body)


async def until(condition: Any, within: float = 5.0) -> None:
    """Poll the async `condition` until it is true; fail after `within` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not await condition():
        assert loop.time() < deadline, "the condition did not hold in time"
        await asyncio.sleep(0.05)
