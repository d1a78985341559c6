"""Approval policies, held requests and votes, as the maker-checker tests set and cast them."""

from __future__ import annotations

from typing import Any

from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient

from tests.helpers import Member, owner_and_admin
from tests.money import paid_payment

__all__ = ["ask_payout", "ask_refund", "refunds_held_above", "set_policy", "vote"]

# A member (their session) or the headers of an API key.
Caller = Member | dict[str, str]


def _headers(caller: Caller) -> dict[str, str]:
    return caller.headers if isinstance(caller, Member) else caller


async def set_policy(
    client: TestClient[Any, Any], caller: Caller, action: str, threshold: str, required: int = 1
) -> ClientResponse:
    """The answer to turning on the policy that holds `action` above `threshold` USD until
    `required` approvals are given."""
    body = {"enabled": True, "thresholds": {"USD": threshold}, "requiredApprovals": required}
    path = f"/api/v1/team/approvals/policies/{action}"
    return await client.put(path, json=body, headers=_headers(caller))


async def ask_payout(
    client: TestClient[Any, Any], caller: Caller, account: str, amount: str
) -> ClientResponse:
    """The answer to a payout of `amount` USD to the bank account `account`."""
    body = {"amountMinor": amount, "currency": "USD", "bankAccountId": account}
    return await client.post("/api/v1/merchant/payouts", json=body, headers=_headers(caller))


async def ask_refund(
    client: TestClient[Any, Any], caller: Caller, payment_id: str, amount: str
) -> ClientResponse:
    """The answer to a refund of `amount` of the payment."""
    body = {"paymentId": payment_id, "amountMinor": amount}
    return await client.post("/api/v1/merchant/refunds", json=body, headers=_headers(caller))


async def refunds_held_above(
    client: TestClient[Any, Any], threshold: str
) -> tuple[Member, Member, dict[str, Any]]:
    """An owner and an admin of a company, and its payment of 100.00 USD paid in; refunds above
    `threshold` wait for one approval."""
    owner, admin = await owner_and_admin(client)
    payment = await paid_payment(client, owner, "10000")
    assert (await set_policy(client, owner, "refund.create", threshold)).status == 200
    return owner, admin, payment


async def vote(
    client: TestClient[Any, Any], caller: Caller, request_id: str, decision: str = "approve"
) -> ClientResponse:
    """The answer to `decision` (approve, reject or cancel) on the approval request."""
    path = f"/api/v1/team/approvals/requests/{request_id}/{decision}"
    return await client.post(path, json={"comment": "ok"}, headers=_headers(caller))
