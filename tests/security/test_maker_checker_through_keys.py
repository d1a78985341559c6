"""Maker-checker through API keys (decisions 2, 9): the requester of an approval is the person.

A request made with a key keeps `requestedBy` the key's id (the contract's field) and names the
key's creator in `requestedByUserId`. The rule "the requester cannot vote" then holds for that
person: neither their session nor any key votes on it (keys never vote: the team routes take a
session). The person behind the key may cancel it, as a member cancels their own request.
"""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from mps.persistence import approval_store
from tests.approvals import ask_payout, ask_refund, refunds_held_above, set_policy, vote
from tests.helpers import (
    Member,
    add_member,
    assert_refused,
    read_as,
    sign_up,
)
from tests.keys import allow_key_access, bearer, create_key
from tests.money import ACCOUNT, balance, paid_payment, payouts, services

pytestmark = pytest.mark.both_backends

# A member who runs payouts and the developer settings, but not the team.
PAYOUT_CLERK = ["payouts:read", "payouts:write", "settings:read", "settings:write"]


async def _role(client: TestClient[Any, Any], owner: Member, name: str, scopes: list[str]) -> str:
    response = await client.post(
        "/api/v1/team/roles", json={"name": name, "scopes": scopes}, headers=owner.headers
    )
    body = await response.json()
    assert response.status == 201, body
    role_id: str = body["id"]
    return role_id


async def _clerk_with_a_payout_key(
    client: TestClient[Any, Any],
) -> tuple[Member, Member, dict[str, Any], str]:
    """The owner (with money and a bank account, and a payout policy above 10.00) and a
    payout clerk who turned key access on and holds a payout key."""
    owner = await sign_up(client)
    await paid_payment(client, owner, "10000")
    account = await client.post(
        "/api/v1/merchant/bank-accounts", json=ACCOUNT, headers=owner.headers
    )
    account_id: str = (await account.json())["id"]
    assert (await set_policy(client, owner, "payout.create", "1000")).status == 200
    role_id = await _role(client, owner, "payout clerk", PAYOUT_CLERK)
    clerk = await add_member(client, owner, "clerk@example.com", role_id)
    await allow_key_access(client, clerk)
    key = await create_key(client, clerk, ["payouts:read", "payouts:write"], "backend")
    return owner, clerk, key, account_id


async def test_a_member_cannot_approve_the_payout_they_requested_through_their_own_key(
    client: TestClient[Any, Any],
) -> None:
    # given a payout clerk (no team:write) who cannot change the approval policy, but turned key
    # access on and made a payout key
    owner, clerk, key, account = await _clerk_with_a_payout_key(client)
    policy = await set_policy(client, clerk, "payout.create", "999999")
    assert policy.status == 403

    # when the key asks for a payout above the threshold
    held = await ask_payout(client, bearer(key["key"]), account, "5000")
    body = await held.json()
    assert held.status == 202, body
    request = body["approvalRequest"]

    # then the request names the key and the person behind it
    assert request["requestedBy"] == key["id"]
    assert request["requestedByUserId"] == clerk.user_id

    # when the clerk approves it, then rejects it
    approved = await vote(client, clerk, request["id"], "approve")
    rejected = await vote(client, clerk, request["id"], "reject")

    # then both are refused as the requester's own vote, and nothing was paid out
    await assert_refused(approved, 403, "requester_cannot_vote")
    await assert_refused(rejected, 403, "requester_cannot_vote")
    assert await payouts(client, owner) == []

    # and another member with the action's scope still decides it
    done = await vote(client, owner, request["id"], "approve")
    shown = await done.json()
    assert done.status == 200, shown
    assert shown["status"] == "EXECUTED" and [v["userId"] for v in shown["votes"]] == [
        owner.user_id
    ]
    assert len(await payouts(client, owner)) == 1


async def test_the_owner_cannot_approve_the_refund_they_requested_through_their_own_key(
    client: TestClient[Any, Any],
) -> None:
    # given the owner with a refund policy above 20.00, key access on and a refund key
    owner, admin, payment = await refunds_held_above(client, "2000")
    await allow_key_access(client, owner)
    key = await create_key(client, owner, ["refunds:read", "refunds:write"], "backend")

    # when the key asks for a refund above the threshold and the owner approves it
    held = await ask_refund(client, bearer(key["key"]), payment["id"], "5000")
    request = (await held.json())["approvalRequest"]
    own = await vote(client, owner, request["id"], "approve")

    # then the owner's vote is refused and nothing is refunded
    assert held.status == 202
    assert request["requestedBy"] == key["id"] and request["requestedByUserId"] == owner.user_id
    await assert_refused(own, 403, "requester_cannot_vote")
    assert await balance(client, owner) == {"available": 10000, "pending": 0, "reserved": 0}

    # and the admin's approval runs it once
    done = await (await vote(client, admin, request["id"], "approve")).json()
    assert done["status"] == "EXECUTED" and done["result"]["paymentId"] == payment["id"]


async def test_a_key_cannot_vote_on_an_approval_request_at_all(
    client: TestClient[Any, Any],
) -> None:
    # given a request the owner made, and another member's key with the action's scope
    owner, _clerk, key, account = await _clerk_with_a_payout_key(client)
    held = await ask_payout(client, owner, account, "5000")
    request = (await held.json())["approvalRequest"]

    # when the key approves, rejects or cancels it
    answers = [
        await vote(client, bearer(key["key"]), request["id"], decision)
        for decision in ("approve", "reject")
    ]
    answers.append(
        await client.post(
            f"/api/v1/team/approvals/requests/{request['id']}/cancel",
            headers=bearer(key["key"]),
        )
    )

    # then every one needs a dashboard session, and the request is still open
    for answer in answers:
        await assert_refused(answer, 401, "session_required")
    path = f"/api/v1/team/approvals/requests/{request['id']}"
    assert (await read_as(client, owner, path))["status"] == "PENDING"


async def test_the_person_behind_a_key_may_cancel_the_request_it_made_and_nobody_else(
    client: TestClient[Any, Any],
) -> None:
    # given a payout request made by the clerk's key, and an admin
    owner, clerk, key, account = await _clerk_with_a_payout_key(client)
    admin = await add_member(client, owner, "admin@example.com", "role_admin")
    held = await ask_payout(client, bearer(key["key"]), account, "5000")
    request = (await held.json())["approvalRequest"]

    # when the admin, then the clerk, cancels it
    not_theirs = await client.post(
        f"/api/v1/team/approvals/requests/{request['id']}/cancel", headers=admin.headers
    )
    cancelled = await client.post(
        f"/api/v1/team/approvals/requests/{request['id']}/cancel", headers=clerk.headers
    )

    # then only the clerk's is taken
    assert not_theirs.status == 403
    body = await cancelled.json()
    assert cancelled.status == 200, body
    assert body["status"] == "CANCELLED" and body["requestedByUserId"] == clerk.user_id
    assert await payouts(client, owner) == []


async def test_a_request_made_by_a_key_names_its_creator_when_read_and_when_loaded_again(
    client: TestClient[Any, Any],
) -> None:
    # given a request the clerk's key made, and one the owner made from a session
    owner, clerk, key, account = await _clerk_with_a_payout_key(client)
    by_key = await ask_payout(client, bearer(key["key"]), account, "5000")
    by_owner = await ask_payout(client, owner, account, "6000")
    key_request = (await by_key.json())["approvalRequest"]
    owner_request = (await by_owner.json())["approvalRequest"]

    # when they are read through the API and loaded as a company actor loads them
    got = await client.get(
        f"/api/v1/team/approvals/requests/{key_request['id']}", headers=owner.headers
    )
    listed = await client.get("/api/v1/team/approvals/requests", headers=owner.headers)
    loaded = await approval_store.load_open(services(client).database, owner.company_id)

    # then each names the person who asked
    assert (await got.json())["requestedByUserId"] == clerk.user_id
    people = {r["id"]: r["requestedByUserId"] for r in (await listed.json())["data"]}
    assert people == {key_request["id"]: clerk.user_id, owner_request["id"]: owner.user_id}
    assert owner_request["requestedBy"] == owner.user_id
    assert loaded[key_request["id"]].requested_by_user == clerk.user_id
    assert loaded[owner_request["id"]].requested_by_user == owner.user_id
