"""OWASP API1:2023, broken object level authorization.

Every object belongs to a company and a mode (decisions 0, 1): another tenant's id answers
exactly as an id that does not exist (404, never a 403 that reveals it exists), a filter cannot
widen a list past the caller's tenancy, and an action on another tenant's object changes nothing.
"""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from tests.helpers import (
    Member,
    assert_envelope,
    create_payment,
    live_session,
    pay,
    read_as,
    read_object,
    two_companies,
)
from tests.keys import bearer, create_key

pytestmark = pytest.mark.both_backends


async def _owned_objects(client: TestClient[Any, Any], owner: Member) -> dict[str, str]:
    """A payment paid by a customer, that customer, and an API key used once: one of each."""
    payment = await create_payment(client, owner, customerEmail="buyer@example.com")
    assert (await pay(client, payment["reference"])).status == 200
    customers = await client.get("/api/v1/merchant/customers", headers=owner.headers)
    customer_id = (await customers.json())["data"][0]["id"]
    key = await create_key(client, owner, ["analytics:read"], "server")
    ping = await client.get("/api/v1/developer/ping", headers=bearer(key["key"]))
    assert ping.status == 200
    return {
        "payment": payment["id"],
        "customer": customer_id,
        "key": key["id"],
        "secret": key["key"],
    }


def _reads(objects: dict[str, str]) -> list[str]:
    return [
        f"/api/v1/merchant/payments/{objects['payment']}",
        f"/api/v1/merchant/customers/{objects['customer']}",
        f"/api/v1/merchant/customers/{objects['customer']}/payments",
        f"/api/v1/merchant/api-keys/{objects['key']}/logs",
    ]


def _unknown(path: str) -> str:
    """The same path naming an id of the same shape that was never issued."""
    head, _, tail = path.removeprefix("/api/v1/merchant/").partition("/")
    object_id, _, rest = tail.partition("/")
    prefix = object_id.split("_")[0]
    forged = f"{prefix}_{'0' * (len(object_id) - len(prefix) - 1)}"
    return f"/api/v1/merchant/{head}/{forged}" + (f"/{rest}" if rest else "")


def _comparable(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k not in {"requestId", "timestamp", "message"}}


async def test_another_company_gets_the_same_404_for_each_object_as_for_an_unknown_id(
    client: TestClient[Any, Any],
) -> None:
    # given every kind of object the owner's company holds
    owner, stranger = await two_companies(client)
    objects = await _owned_objects(client, owner)

    for path in _reads(objects):
        # when the stranger reads it by id, and reads an id that was never issued
        theirs = await client.get(path, headers=stranger.headers)
        unknown = await client.get(_unknown(path), headers=stranger.headers)

        # then both answers are the same 404: nothing reveals the object exists
        assert theirs.status == 404, path
        assert unknown.status == 404, _unknown(path)
        body = await theirs.json()
        assert_envelope(body, 404, "not_found")
        assert _comparable(body) == _comparable(await unknown.json())
        assert objects["payment"] not in body["message"]


async def test_another_company_cannot_cancel_a_payment_or_revoke_a_key_and_both_stay_unchanged(
    client: TestClient[Any, Any],
) -> None:
    # given
    owner, stranger = await two_companies(client)
    payment = await create_payment(client, owner)
    objects = await _owned_objects(client, owner)

    # when
    cancel = await client.post(
        f"/api/v1/merchant/payments/{payment['id']}/cancel", headers=stranger.headers
    )
    revoke = await client.post(
        f"/api/v1/merchant/api-keys/{objects['key']}/revoke", headers=stranger.headers
    )

    # then
    assert cancel.status == 404 and revoke.status == 404
    assert_envelope(await cancel.json(), 404, "not_found")
    assert_envelope(await revoke.json(), 404, "not_found")
    assert (await read_object(client, owner, "payments", payment["id"]))["status"] == "PENDING"
    keys = await client.get("/api/v1/merchant/api-keys", headers=owner.headers)
    assert [k["revokedAt"] for k in (await keys.json())["data"]] == [None]
    ping = await client.get("/api/v1/developer/ping", headers=bearer(objects["secret"]))
    assert ping.status == 200


async def test_list_filters_naming_another_companys_objects_return_nothing_of_theirs(
    client: TestClient[Any, Any],
) -> None:
    # given the owner's multi-use link, paid once by a known customer
    owner, stranger = await two_companies(client)
    link = await create_payment(client, owner, allowMultiplePayments=True)
    assert (await pay(client, link["reference"], email="buyer@example.com")).status == 200

    # when the stranger filters their own lists by the owner's link and customer
    by_link = await client.get(
        "/api/v1/merchant/payments",
        params={"linkPaymentId": link["id"]},
        headers=stranger.headers,
    )
    by_email = await client.get(
        "/api/v1/merchant/payments",
        params={"customerEmail": "buyer@example.com"},
        headers=stranger.headers,
    )
    customers = await client.get(
        "/api/v1/merchant/customers",
        params={"email": "buyer@example.com"},
        headers=stranger.headers,
    )

    # then each answers an empty page, while the owner sees the child payment
    for response in (by_link, by_email, customers):
        assert response.status == 200
        assert (await response.json())["data"] == []
    owned = await client.get(
        "/api/v1/merchant/payments", params={"linkPaymentId": link["id"]}, headers=owner.headers
    )
    assert len((await owned.json())["data"]) == 1


async def test_a_live_mode_session_cannot_reach_test_mode_objects_by_id_or_list(
    client: TestClient[Any, Any], member: Member
) -> None:
    # given test-mode objects and the same member's live-mode session
    objects = await _owned_objects(client, member)
    live = await live_session(client, member)

    # when
    reads = [await client.get(path, headers=live.headers) for path in _reads(objects)[:3]]
    cancel = await client.post(
        f"/api/v1/merchant/payments/{objects['payment']}/cancel", headers=live.headers
    )

    # then
    assert [r.status for r in reads] == [404, 404, 404]
    assert cancel.status == 404
    for listing in ("payments", "customers"):
        assert (await read_as(client, live, f"/api/v1/merchant/{listing}"))["data"] == [], listing


async def test_a_test_key_cannot_drive_another_companys_payment_through_the_sandbox(
    client: TestClient[Any, Any],
) -> None:
    # given the owner's pending payment and a stranger's test key that may write payments
    owner, stranger = await two_companies(client)
    payment = await create_payment(client, owner)
    key = (await create_key(client, stranger, ["payments:write"]))["key"]

    # when the stranger simulates each transition on the owner's payment
    answers = [
        await client.post(
            f"/api/v1/developer/sandbox/{kind}",
            json={"paymentId": payment["id"]},
            headers=bearer(key),
        )
        for kind in ("payment.completed", "payment.expired", "payment.reversed")
    ]

    # then none finds it, and it is still pending
    assert [a.status for a in answers] == [404, 404, 404]
    assert (await read_object(client, owner, "payments", payment["id"]))["status"] == "PENDING"


async def test_another_companys_idempotency_key_replays_nothing_of_theirs(
    client: TestClient[Any, Any],
) -> None:
    # given the owner created a payment under an Idempotency-Key
    owner, stranger = await two_companies(client)
    theirs = await create_payment(client, owner, headers={"Idempotency-Key": "order-1"})

    # when the stranger sends the same request under the same key
    mine = await create_payment(client, stranger, headers={"Idempotency-Key": "order-1"})

    # then the stranger gets a payment of their own, not the owner's stored answer
    assert mine["id"] != theirs["id"] and mine["reference"] != theirs["reference"]
    got = await client.get(f"/api/v1/merchant/payments/{mine['id']}", headers=stranger.headers)
    assert got.status == 200
