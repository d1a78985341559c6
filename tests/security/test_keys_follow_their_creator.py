"""An API key acts for the member who created it (decisions 2, 3): what it may do is always
within what that member may do now.

A key's effective scopes are its own scopes intersected with its creator's current role, worked
out each time the key is verified; a role change drops every cached credential of the company on
every node, so a downgrade takes effect on the key's next request. Removing a member revokes
their keys in the same unit as the removal, audited. The key list names each key's creator.
"""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from mps.actors.company import CreateApiKey
from mps.errors import Forbidden
from tests.helpers import (
    Member,
    add_member,
    assert_envelope,
    assert_refused,
    owner_and_admin,
    owner_and_member,
    post_as,
    sign_up,
)
from tests.keys import allow_key_access, bearer, create_key
from tests.money import paid_payment, services

pytestmark = pytest.mark.both_backends

PAYMENT = {"amountMinor": "2500", "currency": "USD"}


async def _refund(client: TestClient[Any, Any], key: str, payment_id: str) -> Any:
    return await client.post(
        "/api/v1/merchant/refunds",
        json={"paymentId": payment_id, "amountMinor": "100"},
        headers=bearer(key),
    )


async def _listed(client: TestClient[Any, Any], owner: Member, key_id: str) -> dict[str, Any]:
    response = await client.get("/api/v1/merchant/api-keys", headers=owner.headers)
    found: dict[str, Any] = next(k for k in (await response.json())["data"] if k["id"] == key_id)
    return found


async def test_a_key_can_no_longer_create_payments_once_its_creator_is_downgraded_to_viewer(
    client: TestClient[Any, Any],
) -> None:
    # given an admin's key that has created a payment (so it is verified and cached)
    owner, admin = await owner_and_admin(client)
    await allow_key_access(client, owner)
    key = await create_key(
        client, admin, ["payments:read", "payments:write", "refunds:write"], "backend"
    )
    before = await client.post(
        "/api/v1/merchant/payments", json=PAYMENT, headers=bearer(key["key"])
    )
    assert before.status == 201, await before.text()

    # when the owner makes the admin a viewer
    changed = await client.patch(
        f"/api/v1/team/members/{admin.user_id}",
        json={"roleId": "role_viewer"},
        headers=owner.headers,
    )
    assert changed.status == 200, await changed.text()
    created = await client.post(
        "/api/v1/merchant/payments", json=PAYMENT, headers=bearer(key["key"])
    )
    refunded = await _refund(client, key["key"], (await before.json())["id"])
    read = await client.get("/api/v1/merchant/payments", headers=bearer(key["key"]))

    # then the key writes nothing a viewer could not, and still reads what a viewer may
    await assert_refused(created, 403, "insufficient_scope")
    await assert_refused(refunded, 403, "insufficient_scope")
    assert read.status == 200

    # and made admin again, the key writes again: its own scopes were never changed
    await client.patch(
        f"/api/v1/team/members/{admin.user_id}",
        json={"roleId": "role_admin"},
        headers=owner.headers,
    )
    again = await client.post("/api/v1/merchant/payments", json=PAYMENT, headers=bearer(key["key"]))
    assert again.status == 201
    assert (await _listed(client, owner, key["id"]))["scopes"] == key["scopes"]


async def test_removing_a_member_revokes_their_keys_in_the_same_unit_and_audits_it(
    client: TestClient[Any, Any],
) -> None:
    # given an admin with two keys (one each mode) that work, and the owner's own key
    owner, admin = await owner_and_admin(client)
    await allow_key_access(client, owner)
    key = await create_key(client, admin, ["payments:write", "refunds:write"], "backend")
    live = await post_as(
        client,
        admin,
        "/api/v1/merchant/api-keys",
        {"name": "live", "scopes": ["analytics:read"], "mode": "live"},
    )
    live_key = await live.json()
    owners_key = await create_key(client, owner, ["payments:write"], "backend")
    payment = await client.post(
        "/api/v1/merchant/payments", json=PAYMENT, headers=bearer(key["key"])
    )
    assert payment.status == 201

    # when the owner removes the admin
    removed = await client.delete(f"/api/v1/team/members/{admin.user_id}", headers=owner.headers)
    assert removed.status == 200, await removed.text()
    created = await client.post(
        "/api/v1/merchant/payments", json=PAYMENT, headers=bearer(key["key"])
    )
    refunded = await _refund(client, key["key"], (await payment.json())["id"])
    pinged = await client.get("/api/v1/developer/ping", headers=bearer(live_key["key"]))
    owners = await client.post(
        "/api/v1/merchant/payments", json=PAYMENT, headers=bearer(owners_key["key"])
    )

    # then the admin's keys are revoked (401) and the owner's is not
    assert created.status == 401 and refunded.status == 401 and pinged.status == 401
    assert_envelope(await created.json(), 401)
    assert owners.status == 201
    listed = await _listed(client, owner, key["id"])
    assert listed["revokedAt"] is not None and listed["createdBy"] == admin.user_id
    assert (await _listed(client, owner, live_key["id"]))["revokedAt"] is not None
    assert (await _listed(client, owner, owners_key["id"]))["revokedAt"] is None

    # and the trail records each revocation after the removal, in the removal's unit
    trail = await client.get("/api/v1/team/audit", headers=owner.headers)
    entries = (await trail.json())["data"]
    removal = next(e for e in entries if e["action"] == "member.removed")
    revoked = [e for e in entries if e["action"] == "api_key.revoked"]
    assert {e["target"]["id"] for e in revoked} == {key["id"], live_key["id"]}
    for entry in revoked:
        assert entry["details"] == {"reason": "member_removed", "createdBy": admin.user_id}
        assert entry["requestId"] == removal["requestId"]
        assert entry["actor"] == {"type": "user", "id": owner.user_id}


async def test_a_key_loses_what_its_creators_custom_role_loses_and_keeps_the_rest(
    client: TestClient[Any, Any],
) -> None:
    # given a member whose custom role writes payments and refunds, and their key for both
    owner = await sign_up(client)
    await allow_key_access(client, owner)
    scopes = ["payments:read", "payments:write", "refunds:read", "refunds:write"]
    scopes += ["settings:read", "settings:write"]
    role = await post_as(client, owner, "/api/v1/team/roles", {"name": "cashier", "scopes": scopes})
    role_id = (await role.json())["id"]
    cashier = await add_member(client, owner, "cashier@example.com", role_id)
    key = await create_key(client, cashier, ["payments:write", "refunds:write"], "backend")
    paid = await paid_payment(client, owner, "10000")
    assert (await _refund(client, key["key"], paid["id"])).status == 201

    # when the role loses refunds:write
    narrowed = await client.patch(
        f"/api/v1/team/roles/{role_id}",
        json={"scopes": ["payments:read", "payments:write", "settings:read", "settings:write"]},
        headers=owner.headers,
    )
    assert narrowed.status == 200, await narrowed.text()
    refunded = await _refund(client, key["key"], paid["id"])
    created = await client.post(
        "/api/v1/merchant/payments", json=PAYMENT, headers=bearer(key["key"])
    )

    # then the key can no longer refund, and still creates payments
    await assert_refused(refunded, 403, "insufficient_scope")
    assert created.status == 201


async def test_the_key_and_the_key_list_name_who_created_each_key(
    client: TestClient[Any, Any],
) -> None:
    # given keys made by the owner and by a developer
    owner, developer = await owner_and_member(client, "role_developer", "dev@example.com")

    # when each makes one, and the owner revokes the developer's
    owners = await create_key(client, owner, ["payments:write"], "backend")
    developers = await create_key(client, developer, ["analytics:read"], "backend")
    revoked = await client.post(
        f"/api/v1/merchant/api-keys/{developers['id']}/revoke", headers=owner.headers
    )

    # then every view of a key says who created it
    assert owners["createdBy"] == owner.user_id
    assert developers["createdBy"] == developer.user_id
    assert (await revoked.json())["createdBy"] == developer.user_id
    listed = await client.get("/api/v1/merchant/api-keys", headers=owner.headers)
    creators = {k["id"]: k["createdBy"] for k in (await listed.json())["data"]}
    assert creators == {owners["id"]: owner.user_id, developers["id"]: developer.user_id}


async def test_a_removed_member_cannot_create_a_key_even_from_a_session_still_cached(
    client: TestClient[Any, Any],
) -> None:
    # given a member removed a moment ago, whose session another node may still hold
    owner, admin = await owner_and_admin(client)
    removed = await client.delete(f"/api/v1/team/members/{admin.user_id}", headers=owner.headers)
    assert removed.status == 200

    # when a key creation in their name reaches the company actor
    command = CreateApiKey(
        created_by=admin.user_id,
        creator_scopes=frozenset({"payments:write"}),
        name="late",
        type="secret",
        mode="test",
        scopes=("payments:write",),
    )

    # then it is refused, and no key is made
    with pytest.raises(Forbidden):
        await services(client).shards.ask_company(owner.company_id, command)
    listed = await client.get("/api/v1/merchant/api-keys", headers=owner.headers)
    assert (await listed.json())["data"] == []
