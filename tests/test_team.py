"""Team (decisions 3, 9): built-in and custom roles, role changes that take effect on the next
request, the last owner, the ownership transfer, and the audit trail's hash chain."""

from __future__ import annotations

import csv
import io
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient

from mps.persistence.statements import Statement
from tests.helpers import (
    Member,
    add_member,
    assert_envelope,
    assert_refused,
    create_payment,
    owner_and_member,
    post_as,
    sign_up,
    two_companies,
)
from tests.log_guard import remember
from tests.money import services

pytestmark = pytest.mark.both_backends


async def _call(
    client: TestClient[Any, Any], member: Member, method: str, path: str, **body: Any
) -> Any:
    return await client.request(method, f"/api/v1{path}", json=body or None, headers=member.headers)


async def _set_role(client: TestClient[Any, Any], by: Member, member_id: str, role_id: str) -> Any:
    """The answer to `by` giving the member the role."""
    return await _call(client, by, "PATCH", f"/team/members/{member_id}", roleId=role_id)


async def _role(
    client: TestClient[Any, Any], member: Member, name: str, *scopes: str
) -> dict[str, Any]:
    response = await _call(client, member, "POST", "/team/roles", name=name, scopes=list(scopes))
    body: dict[str, Any] = await response.json()
    assert response.status == 201, body
    return body


async def test_roles_list_the_built_in_ones_and_the_companys_own(
    client: TestClient[Any, Any],
) -> None:
    owner = await sign_up(client)
    custom = await _role(client, owner, "Support", "payments:read", "customers:read")

    roles = await (await _call(client, owner, "GET", "/team/roles")).json()
    scopes = await (await _call(client, owner, "GET", "/team/roles/scopes")).json()

    by_id = {r["id"]: r for r in roles["data"]}
    assert {"role_owner", "role_admin", "role_finance", "role_developer", "role_viewer"} <= set(
        by_id
    )
    assert by_id["role_owner"]["builtin"] is True and by_id["role_owner"]["memberCount"] == 1
    assert by_id[custom["id"]]["scopes"] == ["customers:read", "payments:read"]
    assert by_id[custom["id"]]["builtin"] is False
    assert "audit:read" in [s["scope"] for s in scopes["data"]]


async def test_a_role_change_takes_effect_on_the_next_request(
    client: TestClient[Any, Any],
) -> None:
    owner, member = await owner_and_member(client, "role_viewer", "ann@example.com")
    assert (await create_payment_status(client, member)) == 403

    response = await _set_role(client, owner, member.user_id, "role_finance")

    assert response.status == 200, await response.text()
    assert (await response.json())["roleId"] == "role_finance"
    assert (await create_payment_status(client, member)) == 201


async def test_a_custom_roles_new_scopes_take_effect_on_the_next_request(
    client: TestClient[Any, Any],
) -> None:
    owner = await sign_up(client)
    role = await _role(client, owner, "Readers", "payments:read")
    member = await add_member(client, owner, "ann@example.com", role["id"])
    assert (await create_payment_status(client, member)) == 403

    response = await _call(
        client, owner, "PATCH", f"/team/roles/{role['id']}",
        scopes=["payments:read", "payments:write"],
    )  # fmt: skip

    assert response.status == 200, await response.text()
    assert (await create_payment_status(client, member)) == 201


async def create_payment_status(client: TestClient[Any, Any], member: Member) -> int:
    response = await post_as(
        client, member, "/api/v1/merchant/payments", {"amountMinor": "100", "currency": "USD"}
    )
    return response.status


async def test_a_role_held_by_a_member_cannot_be_deleted(client: TestClient[Any, Any]) -> None:
    owner = await sign_up(client)
    role = await _role(client, owner, "Readers", "payments:read")
    member = await add_member(client, owner, "ann@example.com", role["id"])

    held = await _call(client, owner, "DELETE", f"/team/roles/{role['id']}")
    await _set_role(client, owner, member.user_id, "role_viewer")
    freed = await _call(client, owner, "DELETE", f"/team/roles/{role['id']}")
    builtin = await _call(client, owner, "DELETE", "/team/roles/role_viewer")

    await assert_refused(held, 409, "role_in_use")
    assert freed.status == 200 and (await freed.json())["deleted"] is True
    assert builtin.status == 409


async def test_deleting_a_role_revokes_the_invitations_that_offer_it(
    client: TestClient[Any, Any],
) -> None:
    # given a custom role offered by a pending invitation, and another for a built-in role
    owner = await sign_up(client)
    role = await _role(client, owner, "Readers", "payments:read")
    offered = await _call(client, owner, "POST", "/team/invitations", email="a@example.com",
                          roleId=role["id"])  # fmt: skip
    other = await _call(client, owner, "POST", "/team/invitations", email="b@example.com",
                        roleId="role_viewer")  # fmt: skip
    mail = await client.get("/api/v1/dev/mailbox", params={"to": "a@example.com"})
    token = (await mail.json())["data"][0]["link"].rsplit("/", 1)[1]
    remember(token)

    # when the role is deleted
    deleted = await _call(client, owner, "DELETE", f"/team/roles/{role['id']}")

    # then its invitation is REVOKED and its link refused; the other stays PENDING
    assert deleted.status == 200
    listed = await _call(client, owner, "GET", "/team/invitations")
    status = {i["id"]: i["status"] for i in (await listed.json())["data"]}
    assert status[(await offered.json())["id"]] == "REVOKED"
    assert status[(await other.json())["id"]] == "PENDING"
    accepted = await client.post(f"/api/v1/team/invitations/token/{token}/accept")
    assert accepted.status == 409


async def test_role_names_are_unique_and_scopes_known(client: TestClient[Any, Any]) -> None:
    owner = await sign_up(client)
    await _role(client, owner, "Support", "payments:read")

    again = await _call(client, owner, "POST", "/team/roles", name="support", scopes=[])
    builtin = await _call(client, owner, "POST", "/team/roles", name="admin", scopes=[])
    unknown = await _call(client, owner, "POST", "/team/roles", name="X", scopes=["fly:write"])

    assert again.status == 409 and builtin.status == 409
    assert_envelope(await again.json(), 409, "duplicate")
    assert unknown.status == 400


async def test_the_last_owner_can_be_neither_demoted_nor_removed(
    client: TestClient[Any, Any],
) -> None:
    owner, admin = await owner_and_member(client, "role_admin", "ann@example.com")

    demoted = await _set_role(client, admin, owner.user_id, "role_viewer")
    removed = await _call(client, admin, "DELETE", f"/team/members/{owner.user_id}")
    self_demoted = await _set_role(client, owner, owner.user_id, "role_admin")

    for response in (demoted, removed, self_demoted):
        await assert_refused(response, 409, "last_owner")


async def test_the_owner_role_is_given_only_by_a_transfer(client: TestClient[Any, Any]) -> None:
    owner, admin = await owner_and_member(client, "role_admin", "ann@example.com")

    granted = await _set_role(client, owner, admin.user_id, "role_owner")
    by_admin = await _call(client, admin, "POST", "/team/transfer-ownership", userId=admin.user_id)
    transferred = await _call(
        client, owner, "POST", "/team/transfer-ownership", userId=admin.user_id
    )

    await assert_refused(granted, 409, "owner_transfer_required")
    assert by_admin.status == 403
    body = await transferred.json()
    assert transferred.status == 200, body
    assert body["owner"]["userId"] == admin.user_id and body["owner"]["roleId"] == "role_owner"
    assert body["previousOwner"]["roleId"] == "role_admin"
    # the former owner is now an admin: the transfer's own route refuses them
    again = await _call(client, owner, "POST", "/team/transfer-ownership", userId=owner.user_id)
    assert again.status == 403


async def test_nobody_grants_a_role_beyond_their_own_scopes(client: TestClient[Any, Any]) -> None:
    owner = await sign_up(client)
    lead = await _role(client, owner, "Team lead", "team:read", "team:write", "payments:read")
    manager = await add_member(client, owner, "lead@example.com", lead["id"])
    member = await add_member(client, owner, "ann@example.com", "role_viewer")

    wider = await _set_role(client, manager, member.user_id, "role_finance")
    own_role = await _call(
        client, manager, "POST", "/team/roles", name="Writers", scopes=["payments:write"]
    )

    assert wider.status == 403 and own_role.status == 403
    assert_envelope(await wider.json(), 403, "insufficient_scope")


async def test_a_removed_member_loses_their_session_at_once(client: TestClient[Any, Any]) -> None:
    owner, member = await owner_and_member(client, "role_finance", "ann@example.com")
    assert (await _call(client, member, "GET", "/merchant/payments")).status == 200

    removed = await _call(client, owner, "DELETE", f"/team/members/{member.user_id}")

    assert removed.status == 200 and (await removed.json())["removed"] is True
    assert (await _call(client, member, "GET", "/merchant/payments")).status == 401
    listed = await (await _call(client, owner, "GET", "/team/members")).json()
    assert [m["userId"] for m in listed["data"]] == [owner.user_id]


async def test_member_rows_carry_an_id_that_the_member_routes_take(
    client: TestClient[Any, Any],
) -> None:
    # given a team of two
    owner, member = await owner_and_member(client, "role_finance", "ann@example.com")

    # when the members are listed, and one is changed by the row's id
    listed = await (await _call(client, owner, "GET", "/team/members")).json()
    rows = {m["userId"]: m for m in listed["data"]}
    changed = await _set_role(client, owner, rows[member.user_id]["id"], "role_viewer")

    # then every row's id is its userId, and the routes take it
    assert all(m["id"] == m["userId"] for m in listed["data"])
    assert set(rows) == {owner.user_id, member.user_id}
    assert changed.status == 200, await changed.json()


async def test_team_routes_need_their_scopes(client: TestClient[Any, Any]) -> None:
    _, viewer = await owner_and_member(client, "role_viewer", "ann@example.com")

    read = await _call(client, viewer, "GET", "/team/members")
    write = await _call(client, viewer, "POST", "/team/roles", name="X", scopes=[])
    audit = await _call(client, viewer, "GET", "/team/audit")

    assert read.status == 200
    assert write.status == 403 and audit.status == 403


async def test_changes_are_audited_with_actor_ip_and_request_id(
    client: TestClient[Any, Any],
) -> None:
    owner, member = await owner_and_member(client, "role_viewer", "ann@example.com")
    changed = await _set_role(client, owner, member.user_id, "role_finance")
    await _call(client, owner, "PATCH", "/merchant/settings", payoutSchedule="weekly")

    response = await _call(client, owner, "GET", "/team/audit")

    entries = (await response.json())["data"]
    actions = [e["action"] for e in entries]
    assert actions[:2] == ["settings.updated", "member.role_changed"]
    assert "session.opened" in actions
    change = entries[1]
    assert change["actor"] == {"type": "user", "id": owner.user_id}
    assert change["target"] == {"type": "user", "id": member.user_id}
    assert change["details"] == {"fromRole": "role_viewer", "toRole": "role_finance"}
    assert change["requestId"] == changed.headers["X-Request-Id"] and change["ip"]
    assert entries[0]["details"]["changes"] == {"payout_schedule": "weekly"}
    filtered = await _call(client, owner, "GET", "/team/audit?action=member.role_changed")
    assert [e["id"] for e in (await filtered.json())["data"]] == [change["id"]]


async def test_the_chain_verifies_and_names_the_first_entry_edited_in_storage(
    client: TestClient[Any, Any],
) -> None:
    # given a trail of several entries
    owner = await sign_up(client)
    for name in ("One", "Two", "Three"):
        await _role(client, owner, name, "payments:read")
    valid = await (await _call(client, owner, "GET", "/team/audit/verify")).json()
    entries = (await (await _call(client, owner, "GET", "/team/audit")).json())["data"]
    tampered = next(e for e in entries if e["details"].get("name") == "Two")

    # when one row is edited directly in the database
    await services(client).actors.commit(
        Statement(
            "UPDATE audit_entries SET details = $1 WHERE id = $2",
            (orjson.dumps({"name": "Changed", "scopes": []}).decode(), tampered["id"]),
        )
    )
    broken = await (await _call(client, owner, "GET", "/team/audit/verify")).json()

    # then verify names it
    assert valid["valid"] is True and valid["checked"] == len(entries)
    assert broken["valid"] is False and broken["firstBrokenId"] == tampered["id"]


async def test_the_export_streams_every_entry_as_jsonl_or_csv(
    client: TestClient[Any, Any],
) -> None:
    owner = await sign_up(client)
    for name in ("One", "Two"):
        await _role(client, owner, name, "payments:read")
    listed = (await (await _call(client, owner, "GET", "/team/audit")).json())["data"]

    jsonl = await _call(client, owner, "GET", "/team/audit/export?format=jsonl")
    as_csv = await _call(client, owner, "GET", "/team/audit/export?format=csv")

    assert jsonl.status == 200 and "attachment" in jsonl.headers["Content-Disposition"]
    lines = [orjson.loads(line) for line in (await jsonl.read()).splitlines()]
    assert [e["id"] for e in lines] == [e["id"] for e in reversed(listed)]
    assert [e["seq"] for e in lines] == list(range(1, len(lines) + 1))
    rows = list(csv.DictReader(io.StringIO((await as_csv.read()).decode())))
    assert [r["id"] for r in rows] == [e["id"] for e in lines]
    assert rows[-1]["hash"] == lines[-1]["hash"]


async def test_another_companys_team_and_trail_are_not_visible(
    client: TestClient[Any, Any],
) -> None:
    owner, other = await two_companies(client)
    role = await _role(client, owner, "Support", "payments:read")

    listed = await (await _call(client, other, "GET", "/team/roles")).json()
    changed = await _call(client, other, "PATCH", f"/team/roles/{role['id']}", name="Mine")
    member = await _set_role(client, other, owner.user_id, "role_viewer")
    trail = await (await _call(client, other, "GET", "/team/audit")).json()

    assert role["id"] not in [r["id"] for r in listed["data"]]
    assert changed.status == 404 and member.status == 404
    assert all(e["actor"]["id"] != owner.user_id for e in trail["data"])
    assert await create_payment(client, owner)


async def test_a_manager_cannot_demote_or_remove_a_member_who_outranks_them(
    client: TestClient[Any, Any],
) -> None:
    owner = await sign_up(client)
    lead = await _role(client, owner, "Lead", "team:read", "team:write")
    manager = await add_member(client, owner, "lead@example.com", lead["id"])
    admin = await add_member(client, owner, "admin@example.com", "role_admin")

    demoted = await _set_role(client, manager, admin.user_id, lead["id"])
    removed = await _call(client, manager, "DELETE", f"/team/members/{admin.user_id}")

    for response in (demoted, removed):
        await assert_refused(response, 403, "insufficient_scope")
