"""Idempotency-Key (decisions 16): one mechanism for every POST."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import ClientResponse, web
from aiohttp.test_utils import TestClient

from mps.bootstrap import Overrides
from mps.http.keys import SERVICES
from mps.persistence.database import Database
from tests.approvals import ask_payout, set_policy
from tests.conftest import Clock
from tests.fakes import RecordingDatabase
from tests.helpers import (
    TEST_CARD,
    Member,
    assert_refused,
    owner_and_admin,
    pending_payment,
    post_as,
    sign_in,
    sign_up,
)
from tests.money import ACCOUNT, paid_payment

pytestmark = pytest.mark.both_backends

BODY = {"amountMinor": "2500", "currency": "USD"}


async def _count_payments(client: TestClient[Any, Any], company_id: str) -> int:
    count: int = await client.app[SERVICES].database.fetchval(
        "SELECT COUNT(*) FROM payments WHERE company_id = $1", company_id
    )
    return count


async def test_fifty_concurrent_requests_with_one_key_create_one_payment(
    client: TestClient[Any, Any],
) -> None:
    # given
    member = await sign_up(client)
    headers = {**member.headers, "Idempotency-Key": "order-17"}

    # when
    responses = await asyncio.gather(
        *(client.post("/api/v1/merchant/payments", json=BODY, headers=headers) for _ in range(50))
    )

    # then one payment exists and every answer is its creation, byte for byte
    assert await _count_payments(client, member.company_id) == 1
    bodies = {await r.read() for r in responses}
    assert len(bodies) == 1
    assert {r.status for r in responses} == {201}
    assert len({r.headers["X-Request-Id"] for r in responses}) == 1
    replayed = [r for r in responses if r.headers.get("Idempotent-Replayed") == "true"]
    assert len(replayed) == 49


async def test_replay_returns_the_original_response_and_sends_no_event(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)
    headers = {**member.headers, "Idempotency-Key": "k1"}
    first = await client.post("/api/v1/merchant/payments", json=BODY, headers=headers)

    second = await client.post("/api/v1/merchant/payments", json=BODY, headers=headers)

    assert second.status == 201
    assert await second.read() == await first.read()
    assert second.headers["X-Request-Id"] == first.headers["X-Request-Id"]
    assert second.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers
    events = await client.app[SERVICES].database.fetchval(
        "SELECT COUNT(*) FROM events WHERE company_id = $1 AND type = 'payment.created'",
        member.company_id,
    )
    assert events == 1


async def test_same_key_with_a_different_request_is_422(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)
    headers = {**member.headers, "Idempotency-Key": "k1"}
    await client.post("/api/v1/merchant/payments", json=BODY, headers=headers)

    response = await client.post(
        "/api/v1/merchant/payments", json={**BODY, "amountMinor": "9999"}, headers=headers
    )

    await assert_refused(response, 422, "idempotency_key_reuse")
    assert await _count_payments(client, member.company_id) == 1


async def test_a_failed_attempt_is_not_kept(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)
    headers = {**member.headers, "Idempotency-Key": "k1"}

    failed = await client.post(
        "/api/v1/merchant/payments", json={**BODY, "currency": "XAU"}, headers=headers
    )
    retried = await client.post("/api/v1/merchant/payments", json=BODY, headers=headers)

    assert failed.status == 400
    assert retried.status == 201
    assert "Idempotent-Replayed" not in retried.headers


async def test_the_key_is_committed_with_what_it_created(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)
    headers = {**member.headers, "Idempotency-Key": "k1"}

    response = await client.post("/api/v1/merchant/payments", json=BODY, headers=headers)

    row = await client.app[SERVICES].database.fetchrow(
        "SELECT * FROM idempotency_keys WHERE company_id = $1 AND idem_key = 'k1'",
        member.company_id,
    )
    assert row is not None
    assert row["status_code"] == 201
    keyring = client.app[SERVICES].keyring
    assert keyring.unseal(row["body"], "idempotent-response") == await response.read()


async def test_a_stored_response_carrying_a_new_api_key_rests_sealed(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)
    headers = {**member.headers, "Idempotency-Key": "key-1"}
    body = {"name": "ci", "scopes": ["analytics:read"]}

    first = await client.post("/api/v1/merchant/api-keys", json=body, headers=headers)
    again = await client.post("/api/v1/merchant/api-keys", json=body, headers=headers)

    secret = (await first.json())["key"]
    assert await again.read() == await first.read()
    rows = await client.app[SERVICES].database.fetch("SELECT body FROM idempotency_keys")
    assert secret not in str(rows)


async def test_keys_are_scoped_per_company(client: TestClient[Any, Any]) -> None:
    one = await sign_up(client)
    two = await sign_up(client, "two@example.com", "Two")

    a = await client.post(
        "/api/v1/merchant/payments", json=BODY, headers={**one.headers, "Idempotency-Key": "same"}
    )
    b = await client.post(
        "/api/v1/merchant/payments", json=BODY, headers={**two.headers, "Idempotency-Key": "same"}
    )

    assert (await a.json())["id"] != (await b.json())["id"]


@pytest.mark.parametrize("key", ["", "x" * 256, "caf\u00e9"])
async def test_a_malformed_key_is_400(client: TestClient[Any, Any], key: str) -> None:
    member = await sign_up(client)

    response = await client.post(
        "/api/v1/merchant/payments",
        json=BODY,
        headers={**member.headers, "Idempotency-Key": key.encode().decode("latin-1")},
    )

    assert response.status == 400
    assert await _count_payments(client, member.company_id) == 0


async def test_cancel_with_a_key_replays_instead_of_409(client: TestClient[Any, Any]) -> None:
    member, payment = await pending_payment(client)
    headers = {**member.headers, "Idempotency-Key": "cancel-1"}
    path = f"/api/v1/merchant/payments/{payment['id']}/cancel"

    first = await client.post(path, headers=headers)
    second = await client.post(path, headers=headers)

    assert first.status == second.status == 200
    assert await first.read() == await second.read()


async def test_checkout_double_submit_with_one_key_charges_once(
    client: TestClient[Any, Any],
) -> None:
    member, link = await pending_payment(client, allowMultiplePayments=True)
    path = f"/api/v1/checkout/{link['reference']}/pay"

    responses = await asyncio.gather(
        *(
            client.post(path, json={"card": TEST_CARD}, headers={"Idempotency-Key": "attempt-1"})
            for _ in range(5)
        )
    )

    assert {r.status for r in responses} == {200}
    listed = await client.get(
        "/api/v1/merchant/payments", params={"linkPaymentId": link["id"]}, headers=member.headers
    )
    assert len((await listed.json())["data"]) == 1


async def _used_a_day_ago(
    client: TestClient[Any, Any], clock: Clock, key: str
) -> tuple[Member, ClientResponse]:
    """A new member who created a payment under `key` a day (and a second) ago, and the answer
    they got then."""
    member = await sign_up(client)
    headers = {**member.headers, "Idempotency-Key": key}
    first = await client.post("/api/v1/merchant/payments", json=BODY, headers=headers)
    clock.advance(hours=24, seconds=1)
    return member, first


async def test_keys_older_than_a_day_are_deleted_and_can_be_used_again(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    from mps.actors.schedulers.housekeeping import Housekeeping

    # given a key used a day ago
    member, first = await _used_a_day_ago(client, clock, "old")

    # when housekeeping runs
    services = client.app[SERVICES]
    deleted = await Housekeeping(services.actors, 600).run_once()

    # then the key's row is gone and the key serves a new, different request
    assert first.status == 201
    assert deleted[0] == 1
    remaining = await services.database.fetchval("SELECT COUNT(*) FROM idempotency_keys")
    assert remaining == 0
    headers = {**(await sign_in(client, member)).headers, "Idempotency-Key": "old"}
    other = {**BODY, "amountMinor": "2501"}
    again = await client.post("/api/v1/merchant/payments", json=other, headers=headers)
    assert again.status == 201
    assert (await again.json())["id"] != (await first.json())["id"]


async def test_a_key_past_its_day_serves_a_new_request_before_housekeeping_deletes_it(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    # given a key used a day ago whose row housekeeping has not deleted yet
    member, first = await _used_a_day_ago(client, clock, "stale")
    headers = {**(await sign_in(client, member)).headers, "Idempotency-Key": "stale"}

    # when a different request uses the key
    other = {**BODY, "amountMinor": "2501"}
    again = await client.post("/api/v1/merchant/payments", json=other, headers=headers)
    replay = await client.post("/api/v1/merchant/payments", json=other, headers=headers)

    # then it runs (no 422), its response replaces the expired one, and replays from then on
    assert first.status == 201
    assert again.status == 201
    assert (await again.json())["amountMinor"] == other["amountMinor"]
    assert replay.headers.get("Idempotent-Replayed") == "true"
    assert await replay.read() == await again.read()


# Every change a key covers commits in the unit that stores the key's response (decisions 16):
# a crash between two commits could otherwise leave the change without the key, and a retry
# would then meet the change (409) instead of its replay.


@pytest.fixture
async def recorded(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application], clock: Clock
) -> tuple[TestClient[Any, Any], RecordingDatabase]:
    databases: list[RecordingDatabase] = []

    def wrap(real: Database) -> Database:
        databases.append(RecordingDatabase(real))
        return databases[0]

    client: TestClient[Any, Any] = await aiohttp_client(
        make_app(Overrides(clock=clock, wrap_database=wrap))
    )
    return client, databases[0]


def _unit_storing(db: RecordingDatabase, key: str) -> list[str]:
    """The SQL of the one unit that stored `key`'s response: the first to carry its insert. (A
    repeat on a route that commits its key is sent to its actor too, and its unit, carrying
    the same insert, is refused whole: the key holds a response, or the change is made.)"""
    unit, *_refused = [
        u
        for u in db.units
        if any(st.sql.startswith("INSERT INTO idempotency_keys") and key in st.params for st in u)
    ]
    return [st.sql for st in unit]


def _writes(sqls: list[str], prefix: str) -> bool:
    return any(sql.startswith(prefix) for sql in sqls)


async def _twice(
    client: TestClient[Any, Any], path: str, member: Member, key: str
) -> tuple[ClientResponse, ClientResponse]:
    headers = {**member.headers, "Idempotency-Key": key}
    first = await client.post(path, json={}, headers=headers)
    again = await client.post(path, json={}, headers=headers)
    assert first.status == 200, await first.text()
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert await again.read() == await first.read()
    return first, again


async def test_revoking_an_invitation_stores_its_key_with_the_revocation(
    recorded: tuple[TestClient[Any, Any], RecordingDatabase],
) -> None:
    client, db = recorded
    owner = await sign_up(client)
    invited = await post_as(
        client,
        owner,
        "/api/v1/team/invitations",
        {"email": "new@example.com", "roleId": "role_finance"},
    )
    path = f"/api/v1/team/invitations/{(await invited.json())['id']}/revoke"

    first, _ = await _twice(client, path, owner, "revoke-1")

    assert (await first.json())["status"] == "REVOKED"
    assert _writes(_unit_storing(db, "revoke-1"), "UPDATE invitations SET status")


async def _payout(client: TestClient[Any, Any], owner: Member, amount: str) -> ClientResponse:
    """A payout of `amount` USD to the owner's one bank account (made on first use)."""
    listed = await client.get("/api/v1/merchant/bank-accounts", headers=owner.headers)
    accounts = (await listed.json())["data"]
    if not accounts:
        made = await client.post(
            "/api/v1/merchant/bank-accounts", json=ACCOUNT, headers=owner.headers
        )
        accounts = [await made.json()]
    return await ask_payout(client, owner, accounts[0]["id"], amount)


async def _held_payout(
    client: TestClient[Any, Any], required: int, amount: str = "5000"
) -> tuple[Member, Member, str]:
    """An owner with 10,000 paid in, an admin, and the id of the request that holds the owner's
    payout of `amount` for `required` approvals (the threshold is 1,000)."""
    owner, admin = await owner_and_admin(client)
    await paid_payment(client, owner, "10000")
    assert (await set_policy(client, owner, "payout.create", "1000", required)).status == 200
    held = await _payout(client, owner, amount)
    assert held.status == 202, await held.text()
    return owner, admin, (await held.json())["approvalRequest"]["id"]


@pytest.mark.parametrize(("by", "route", "required", "status", "written"), [
    ("owner", "cancel", 1, "CANCELLED", "UPDATE approval_requests SET status"),
    ("admin", "reject", 1, "REJECTED", "INSERT INTO approval_votes"),
    ("admin", "approve", 2, "PENDING", "INSERT INTO approval_votes"),
])  # fmt: skip
async def test_a_cancel_or_a_vote_that_does_not_approve_stores_its_key_with_its_change(
    recorded: tuple[TestClient[Any, Any], RecordingDatabase],
    by: str,
    route: str,
    required: int,
    status: str,
    written: str,
) -> None:
    client, db = recorded
    owner, admin, request_id = await _held_payout(client, required)

    path = f"/api/v1/team/approvals/requests/{request_id}/{route}"
    first, _ = await _twice(client, path, owner if by == "owner" else admin, "key-1")

    assert (await first.json())["status"] == status
    assert _writes(_unit_storing(db, "key-1"), written)


async def test_the_approving_vote_stores_its_key_with_the_action_it_ran(
    recorded: tuple[TestClient[Any, Any], RecordingDatabase],
) -> None:
    client, db = recorded
    owner, admin, request_id = await _held_payout(client, 1)

    path = f"/api/v1/team/approvals/requests/{request_id}/approve"
    first, _ = await _twice(client, path, admin, "vote-1")

    # then the replay shows the request as its action left it, and the key's unit is the
    # action's: the payout and the request EXECUTED
    assert (await first.json())["status"] == "EXECUTED"
    unit = _unit_storing(db, "vote-1")
    assert _writes(unit, "INSERT INTO payouts")
    assert _writes(unit, "UPDATE approval_requests SET status")
    payouts = await client.get("/api/v1/merchant/payouts", headers=owner.headers)
    assert len((await payouts.json())["data"]) == 1


async def test_an_approving_vote_whose_action_is_refused_stores_its_key_with_the_failure(
    recorded: tuple[TestClient[Any, Any], RecordingDatabase],
) -> None:
    client, db = recorded
    owner, admin, request_id = await _held_payout(client, 1, amount="9500")
    # the balance no longer covers it by the time it is approved (10,000 paid, 1,000 paid out)
    assert (await _payout(client, owner, "1000")).status == 201

    path = f"/api/v1/team/approvals/requests/{request_id}/approve"
    first, _ = await _twice(client, path, admin, "vote-1")

    assert (await first.json())["status"] == "FAILED"
    unit = _unit_storing(db, "vote-1")
    assert _writes(unit, "UPDATE approval_requests SET status")
    assert not _writes(unit, "INSERT INTO payouts")
