"""The approval requests waiting for the signed-in member's vote (`awaitingMyVote=true`): the
server applies the voting rules, so the dashboard's inbox and Home read one filtered page."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from tests.approvals import ask_payout, set_policy
from tests.helpers import Member, add_member, assert_envelope, post_as, sign_up
from tests.money import ACCOUNT, paid_payment

pytestmark = pytest.mark.both_backends

REQUESTS = "/api/v1/team/approvals/requests"


async def _company(
    client: TestClient[Any, Any], owner_email: str, name: str, required: int = 2
) -> tuple[Member, str]:
    """A company with money, a bank account and payouts above 1000 held for `required` votes."""
    owner = await sign_up(client, owner_email, name)
    await paid_payment(client, owner, "10000")
    account = await post_as(client, owner, "/api/v1/merchant/bank-accounts", ACCOUNT)
    policy = await set_policy(client, owner, "payout.create", "1000", required)
    assert policy.status == 200, await policy.text()
    return owner, (await account.json())["id"]


async def _held(client: TestClient[Any, Any], member: Member, account: str) -> str:
    response = await ask_payout(client, member, account, "2000")
    body = await response.json()
    assert response.status == 202, body
    request_id: str = body["approvalRequest"]["id"]
    return request_id


async def _awaiting(client: TestClient[Any, Any], member: Member, **query: str) -> Any:
    response = await client.get(
        REQUESTS, params={"awaitingMyVote": "true", **query}, headers=member.headers
    )
    body = await response.json()
    assert response.status == 200, body
    return body


def _ids(body: Any) -> list[str]:
    return [r["id"] for r in body["data"]]


async def test_awaiting_my_vote_lists_only_requests_the_member_can_still_vote_on(
    client: TestClient[Any, Any],
) -> None:
    # given: two held payouts asked by the owner; the admin votes on the older one
    owner, account = await _company(client, "owner@example.com", "Acme Ltd")
    admin = await add_member(client, owner, "admin@example.com", "role_admin")
    viewer = await add_member(client, owner, "viewer@example.com", "role_viewer")
    older = await _held(client, owner, account)
    newer = await _held(client, owner, account)
    vote = await post_as(client, admin, f"{REQUESTS}/{older}/approve", {})
    assert vote.status == 200, await vote.text()

    # when
    for_admin = await _awaiting(client, admin)
    for_owner = await _awaiting(client, owner)
    for_viewer = await _awaiting(client, viewer)
    unfiltered = await _awaiting(client, admin, awaitingMyVote="false")

    # then: voted, own and out-of-scope requests are left out; false filters nothing
    assert _ids(for_admin) == [newer]
    assert _ids(for_owner) == []
    assert _ids(for_viewer) == []
    assert _ids(unfiltered) == [newer, older]


async def test_awaiting_my_vote_leaves_out_decided_requests(
    client: TestClient[Any, Any],
) -> None:
    owner, account = await _company(client, "owner@example.com", "Acme Ltd", required=1)
    admin = await add_member(client, owner, "admin@example.com", "role_admin")
    other_admin = await add_member(client, owner, "second@example.com", "role_admin")
    decided = await _held(client, owner, account)
    open_one = await _held(client, owner, account)
    assert (await post_as(client, admin, f"{REQUESTS}/{decided}/reject", {})).status == 200

    waiting = await _awaiting(client, other_admin)

    assert _ids(waiting) == [open_one]


async def test_awaiting_my_vote_never_shows_another_companys_requests(
    client: TestClient[Any, Any],
) -> None:
    # given: two companies, each with a held payout and an admin who could vote on it
    acme, acme_account = await _company(client, "owner@acme.example", "Acme Ltd")
    globex, globex_account = await _company(client, "owner@globex.example", "Globex Ltd")
    acme_admin = await add_member(client, acme, "admin@acme.example", "role_admin")
    globex_admin = await add_member(client, globex, "admin@globex.example", "role_admin")
    acme_request = await _held(client, acme, acme_account)
    globex_request = await _held(client, globex, globex_account)

    # when
    for_acme = await _awaiting(client, acme_admin)
    for_globex = await _awaiting(client, globex_admin)

    # then
    assert _ids(for_acme) == [acme_request]
    assert _ids(for_globex) == [globex_request]


async def test_awaiting_my_vote_pages_by_cursor_without_duplicates_or_skips(
    client: TestClient[Any, Any],
) -> None:
    # given: five held payouts, the admin's vote already on the middle one
    owner, account = await _company(client, "owner@example.com", "Acme Ltd")
    admin = await add_member(client, owner, "admin@example.com", "role_admin")
    made = [await _held(client, owner, account) for _ in range(5)]
    assert (await post_as(client, admin, f"{REQUESTS}/{made[2]}/approve", {})).status == 200
    expected = [r for r in reversed(made) if r != made[2]]

    # when: pages of two, each following the previous page's cursor
    seen: list[str] = []
    pages = 0
    cursor: str | None = None
    while True:
        query = {"limit": "2", **({"cursor": cursor} if cursor else {})}
        body = await _awaiting(client, admin, **query)
        seen += _ids(body)
        pages += 1
        cursor = body["nextCursor"]
        assert body["hasMore"] is (cursor is not None)
        if cursor is None:
            break

    # then
    assert seen == expected
    assert pages == 2


@pytest.mark.parametrize("text", ["yes", "1", "TRUE", ""])
async def test_awaiting_my_vote_refuses_anything_but_true_or_false(
    client: TestClient[Any, Any], text: str
) -> None:
    owner = await sign_up(client)

    response = await client.get(REQUESTS, params={"awaitingMyVote": text}, headers=owner.headers)

    body = await response.json()
    assert_envelope(body, 400)
    assert "awaitingMyVote" in str(body), body
