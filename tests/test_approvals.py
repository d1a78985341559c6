"""Maker-checker approvals (decisions 9): an action above its policy's threshold makes a request
instead of running; members vote; reaching the count runs the action exactly once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from mps.actors.company import VoteOnApproval
from tests.approvals import ask_payout, ask_refund, refunds_held_above, set_policy, vote
from tests.conftest import Clock
from tests.helpers import (
    Member,
    add_member,
    answered,
    assert_envelope,
    assert_refused,
    audit_actions,
    event_types,
    owner_and_admin,
    post_as,
    read_as,
    sign_in,
    sign_up,
)
from tests.money import ACCOUNT, balance, paid_payment, payouts, services

pytestmark = pytest.mark.both_backends


async def _account(client: TestClient[Any, Any], member: Member) -> str:
    response = await client.post(
        "/api/v1/merchant/bank-accounts", json=ACCOUNT, headers=member.headers
    )
    account_id: str = (await response.json())["id"]
    return account_id


async def _setup(client: TestClient[Any, Any]) -> tuple[Member, Member, str]:
    owner, admin = await owner_and_admin(client)
    await paid_payment(client, owner, "10000")
    account = await _account(client, owner)
    assert (await set_policy(client, owner, "payout.create", "1000")).status == 200
    return owner, admin, account


async def test_policies_default_to_off_and_are_set_and_audited(
    client: TestClient[Any, Any],
) -> None:
    owner = await sign_up(client)

    before = await (
        await client.get("/api/v1/team/approvals/policies", headers=owner.headers)
    ).json()
    response = await set_policy(client, owner, "refund.create", "50000", 2)
    unknown = await set_policy(client, owner, "rocket.launch", "1")

    assert {p["action"]: p["enabled"] for p in before["data"]} == {
        "payout.create": False,
        "refund.create": False,
        "card.issue": False,
        "card.fund": False,
    }
    body = await response.json()
    assert response.status == 200, body
    assert body["thresholds"] == {"USD": "50000"} and body["requiredApprovals"] == 2
    assert unknown.status == 404
    assert "approval_policy.updated" in await audit_actions(client, owner)


async def test_a_payout_above_the_threshold_waits_for_approval_and_runs_once_approved(
    client: TestClient[Any, Any],
) -> None:
    owner, admin, account = await _setup(client)

    small = await ask_payout(client, owner, account, "1000")
    held = await ask_payout(client, owner, account, "5000")

    assert small.status == 201
    body = await held.json()
    assert held.status == 202, body
    request = body["approvalRequest"]
    assert request["status"] == "PENDING" and request["action"] == "payout.create"
    assert request["requestedBy"] == owner.user_id and request["requiredApprovals"] == 1
    assert len(await payouts(client, owner)) == 1
    assert await balance(client, owner) == {"available": 9000, "pending": 0, "reserved": 1000}

    approved = await vote(client, admin, request["id"])

    done = await approved.json()
    assert approved.status == 200, done
    assert done["status"] == "EXECUTED" and done["result"]["amountMinor"] == "5000"
    assert done["votes"][0]["userId"] == admin.user_id
    assert len(await payouts(client, owner)) == 2
    assert await balance(client, owner) == {"available": 4000, "pending": 0, "reserved": 6000}
    types = await event_types(client, owner)
    assert "approval.requested" in types and "approval.executed" in types


async def test_voting_rules_requester_scope_and_one_vote_each(
    client: TestClient[Any, Any],
) -> None:
    owner, admin, account = await _setup(client)
    await set_policy(client, owner, "payout.create", "1000", required=2)
    viewer = await add_member(client, owner, "viewer@example.com", "role_viewer")
    request = (await (await ask_payout(client, owner, account, "5000")).json())["approvalRequest"]

    own = await vote(client, owner, request["id"])
    unscoped = await vote(client, viewer, request["id"])
    first = await vote(client, admin, request["id"])
    twice = await vote(client, admin, request["id"])

    assert own.status == 403 and unscoped.status == 403
    assert_envelope(await unscoped.json(), 403, "insufficient_scope")
    assert first.status == 200 and (await first.json())["status"] == "PENDING"
    await assert_refused(twice, 409, "duplicate")
    assert len(await payouts(client, owner)) == 0


async def test_one_rejection_rejects_and_the_requester_can_cancel(
    client: TestClient[Any, Any],
) -> None:
    owner, admin, account = await _setup(client)
    first = (await (await ask_payout(client, owner, account, "5000")).json())["approvalRequest"]
    second = (await (await ask_payout(client, owner, account, "6000")).json())["approvalRequest"]

    rejected = await vote(client, admin, first["id"], "reject")
    not_theirs = await client.post(
        f"/api/v1/team/approvals/requests/{second['id']}/cancel", headers=admin.headers
    )
    cancelled = await client.post(
        f"/api/v1/team/approvals/requests/{second['id']}/cancel", headers=owner.headers
    )
    late = await vote(client, admin, second["id"])

    assert (await rejected.json())["status"] == "REJECTED"
    assert not_theirs.status == 403
    assert (await cancelled.json())["status"] == "CANCELLED"
    await assert_refused(late, 409, "invalid_state")
    assert await payouts(client, owner) == []
    listed = await client.get(
        "/api/v1/team/approvals/requests", params={"status": "REJECTED"}, headers=owner.headers
    )
    assert [r["id"] for r in (await listed.json())["data"]] == [first["id"]]


async def test_voting_on_a_decided_request_answers_409_naming_its_status_when_it_exists(
    client: TestClient[Any, Any],
) -> None:
    # given an executed, a rejected and a cancelled request
    owner, admin, account = await _setup(client)
    third = await add_member(client, owner, "third@example.com", "role_admin")
    executed = (await (await ask_payout(client, owner, account, "5000")).json())["approvalRequest"]
    rejected = (await (await ask_payout(client, owner, account, "2000")).json())["approvalRequest"]
    cancelled = (await (await ask_payout(client, owner, account, "3000")).json())["approvalRequest"]
    assert (await vote(client, admin, executed["id"])).status == 200
    assert (await vote(client, admin, rejected["id"], "reject")).status == 200
    cancel = f"/api/v1/team/approvals/requests/{cancelled['id']}/cancel"
    assert (await client.post(cancel, headers=owner.headers)).status == 200

    # when another member votes on each, and the requester cancels the executed one
    answers = {
        "EXECUTED": await vote(client, third, executed["id"]),
        "REJECTED": await vote(client, third, rejected["id"], "reject"),
        "CANCELLED": await vote(client, third, cancelled["id"]),
    }
    recancel = await client.post(
        f"/api/v1/team/approvals/requests/{executed['id']}/cancel", headers=owner.headers
    )
    unknown = await vote(client, third, "apr_doesnotexist")

    # then each is 409 naming its status; a request that does not exist stays 404
    for status, response in answers.items():
        body = await response.json()
        assert_envelope(body, 409, "invalid_state")
        assert status in body["message"]
    body = await recancel.json()
    assert_envelope(body, 409, "invalid_state")
    assert "EXECUTED" in body["message"]
    assert_envelope(await unknown.json(), 404, "not_found")


async def test_a_request_expires_after_72_hours(client: TestClient[Any, Any], clock: Clock) -> None:
    owner, _, account = await _setup(client)
    request = (await (await ask_payout(client, owner, account, "5000")).json())["approvalRequest"]

    clock.advance(hours=72, seconds=1)
    await services(client).approvals.run_once()
    owner = await sign_in(client, owner)

    path = f"/api/v1/team/approvals/requests/{request['id']}"
    assert (await read_as(client, owner, path))["status"] == "EXPIRED"


async def test_an_action_refused_when_it_runs_leaves_the_request_failed(
    client: TestClient[Any, Any],
) -> None:
    owner, admin, account = await _setup(client)
    request = (await (await ask_payout(client, owner, account, "9500")).json())["approvalRequest"]
    # the balance no longer covers it by the time it is approved
    assert (await ask_payout(client, owner, account, "1000")).status == 201

    response = await vote(client, admin, request["id"])

    done = await response.json()
    assert done["status"] == "FAILED" and done["error"]["code"] == "balance_insufficient"
    assert done["error"]["statusCode"] == 409
    assert len(await payouts(client, owner)) == 1


async def test_a_refund_above_the_threshold_waits_for_approval(
    client: TestClient[Any, Any],
) -> None:
    owner, admin, payment = await refunds_held_above(client, "2000")

    held = await ask_refund(client, owner, payment["id"], "5000")
    request = (await held.json())["approvalRequest"]
    done = await (await vote(client, admin, request["id"])).json()

    assert held.status == 202
    assert done["status"] == "EXECUTED" and done["result"]["paymentId"] == payment["id"]
    assert await balance(client, owner) == {"available": 5000, "pending": 0, "reserved": 5000}


async def test_concurrent_votes_run_the_action_once(client: TestClient[Any, Any]) -> None:
    owner, _, account = await _setup(client)
    await set_policy(client, owner, "payout.create", "1000", required=2)
    voters = [
        await add_member(client, owner, f"admin{n}@example.com", "role_admin") for n in range(4)
    ]
    request = (await (await ask_payout(client, owner, account, "5000")).json())["approvalRequest"]

    answers = await asyncio.gather(*(vote(client, v, request["id"]) for v in voters))

    assert len(await payouts(client, owner)) == 1
    assert await balance(client, owner) == {"available": 5000, "pending": 0, "reserved": 5000}
    statuses = sorted(a.status for a in answers)
    assert statuses.count(200) >= 2


async def test_an_approved_action_a_crash_kept_from_running_runs_once_after(
    client: TestClient[Any, Any],
) -> None:
    # given a request approved in storage whose action never ran (the node died in between)
    owner, admin, account = await _setup(client)
    request = (await (await ask_payout(client, owner, account, "5000")).json())["approvalRequest"]
    app = services(client)
    approved = await app.shards.ask_company(
        owner.company_id,
        VoteOnApproval(
            "test", request["id"], admin.user_id, frozenset({"payouts:write"}), "approve"
        ),
    )
    assert approved.status == "APPROVED" and await payouts(client, owner) == []

    # when the scheduler finds it, twice over, and someone runs it once more by hand
    await app.approvals.run_once()
    await app.approvals.run_once()
    again = await app.approvals.execute(approved)

    # then the payout exists once and the request says what it returned
    assert len(await payouts(client, owner)) == 1
    assert again.status == "EXECUTED" and again.result is not None
    path = f"/api/v1/team/approvals/requests/{request['id']}"
    assert (await read_as(client, owner, path))["status"] == "EXECUTED"


async def test_card_issuing_and_funding_above_their_thresholds_wait_for_approval(
    client: TestClient[Any, Any],
) -> None:
    owner, admin = await owner_and_admin(client)
    await paid_payment(client, owner, "10000")
    await set_policy(client, owner, "card.issue", "1000")
    await set_policy(client, owner, "card.fund", "500")
    body = {"cardholderName": "Ann", "currency": "USD"}

    small = await post_as(
        client, owner, "/api/v1/merchant/cards", {**body, "initialFundingMinor": "1000"}
    )
    held = await client.post(
        "/api/v1/merchant/cards",
        json={
            **body,
            "controls": {"spendingLimits": [{"amountMinor": "5000", "interval": "daily"}]},
        },
        headers=owner.headers,
    )
    card = await small.json()
    topped = await post_as(
        client, owner, f"/api/v1/merchant/cards/{card['id']}/fund", {"amountMinor": "600"}
    )

    assert small.status == 201 and held.status == 202 and topped.status == 202
    issued = await (await vote(client, admin, (await held.json())["approvalRequest"]["id"])).json()
    funded = await (
        await vote(client, admin, (await topped.json())["approvalRequest"]["id"])
    ).json()
    assert issued["status"] == "EXECUTED" and issued["result"]["id"].startswith("card_")
    assert funded["status"] == "EXECUTED" and funded["result"]["balanceMinor"] == "1600"
    assert await balance(client, owner) == {"available": 8400, "pending": 0, "reserved": 0}


async def test_an_action_the_balance_cannot_cover_is_refused_at_once_not_put_to_a_vote(
    client: TestClient[Any, Any],
) -> None:
    # given 10,000 available, a policy holding payouts above 1,000 and card fundings above 1,000,
    # and a card
    owner, _, account = await _setup(client)
    assert (await set_policy(client, owner, "card.fund", "1000")).status == 200
    issued = await client.post(
        "/api/v1/merchant/cards",
        json={"cardholderName": "Ann Lee", "currency": "USD"},
        headers=owner.headers,
    )
    card = await answered(issued)

    # when a payout and a card funding each ask for more than is available
    payout = await ask_payout(client, owner, account, "900000")
    funding = await client.post(
        f"/api/v1/merchant/cards/{card['id']}/fund",
        json={"amountMinor": "900000"},
        headers=owner.headers,
    )

    # then both are refused now with the reason, and nobody is asked to vote
    assert_envelope(await payout.json(), 409, "balance_insufficient")
    assert_envelope(await funding.json(), 409, "balance_insufficient")
    listed = await client.get("/api/v1/team/approvals/requests", headers=owner.headers)
    assert (await listed.json())["data"] == []
