"""Invitations (decisions 9): invite by email with a role; the emailed token lets the invitee
see, accept (and continue with a sign-in code) or reject it; seven days to answer."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from tests.conftest import Clock
from tests.helpers import (
    Member,
    add_member,
    assert_envelope,
    assert_refused,
    latest_code,
    post_as,
    sign_up,
    two_companies,
)
from tests.log_guard import remember

pytestmark = pytest.mark.both_backends


async def _invite(
    client: TestClient[Any, Any],
    member: Member,
    email: str = "New@Example.com",
    role: str = "role_finance",
) -> Any:
    return await client.post(
        "/api/v1/team/invitations", json={"email": email, "roleId": role}, headers=member.headers
    )


async def _token(client: TestClient[Any, Any], email: str = "new@example.com") -> str:
    response = await client.get("/api/v1/dev/mailbox", params={"to": email})
    link: str = (await response.json())["data"][0]["link"]
    assert "/invite/" in link
    token = link.rsplit("/", 1)[1]
    remember(token)  # the run fails should the token ever reach the log
    return token


async def _invited(client: TestClient[Any, Any]) -> tuple[Member, str]:
    """A new company's owner, and the token of the invitation they sent new@example.com."""
    owner = await sign_up(client)
    await _invite(client, owner)
    return owner, await _token(client)


async def test_an_invitation_is_pending_and_its_token_travels_only_in_the_email(
    client: TestClient[Any, Any],
) -> None:
    owner = await sign_up(client)

    response = await _invite(client, owner)

    body = await response.json()
    assert response.status == 201, body
    assert body["id"].startswith("invt_") and body["status"] == "PENDING"
    assert body["email"] == "new@example.com" and body["roleId"] == "role_finance"
    token = await _token(client)
    assert token not in str(body)
    listed = await client.get("/api/v1/team/invitations", headers=owner.headers)
    assert token not in await listed.text()
    shown = await client.get(f"/api/v1/team/invitations/token/{token}")
    view = await shown.json()
    assert view["company"]["name"] == "Acme Ltd" and view["role"]["name"] == "finance"
    assert view["email"] == "new@example.com" and view["status"] == "PENDING"


async def test_accepting_adds_the_member_and_continues_with_a_code(
    client: TestClient[Any, Any],
) -> None:
    owner, token = await _invited(client)

    accepted = await client.post(f"/api/v1/team/invitations/token/{token}/accept")

    body = await accepted.json()
    assert accepted.status == 200, body
    code = await latest_code(client, "new@example.com")
    verified = await client.post(
        "/api/v1/auth/otp/verify",
        json={"loginId": body["loginId"], "code": code, "companyId": body["companyId"]},
    )
    session = await verified.json()
    assert verified.status == 200, session
    assert session["role"]["id"] == "role_finance"
    again = await client.post(f"/api/v1/team/invitations/token/{token}/accept")
    assert again.status == 409
    members = await client.get("/api/v1/team/members", headers=owner.headers)
    emails = {m["email"]: m["roleId"] for m in (await members.json())["data"]}
    assert emails["new@example.com"] == "role_finance"
    listed = await client.get("/api/v1/team/invitations", headers=owner.headers)
    assert (await listed.json())["data"][0]["status"] == "ACCEPTED"


async def test_a_rejected_or_revoked_invitation_cannot_be_accepted(
    client: TestClient[Any, Any],
) -> None:
    owner = await sign_up(client)
    await _invite(client, owner, "a@example.com")
    rejected_token = await _token(client, "a@example.com")
    second = await (await _invite(client, owner, "b@example.com")).json()
    revoked_token = await _token(client, "b@example.com")

    rejected = await client.post(f"/api/v1/team/invitations/token/{rejected_token}/reject")
    revoked = await client.post(
        f"/api/v1/team/invitations/{second['id']}/revoke", headers=owner.headers
    )

    assert rejected.status == 200 and (await rejected.json())["status"] == "REJECTED"
    assert revoked.status == 200 and (await revoked.json())["status"] == "REVOKED"
    for token in (rejected_token, revoked_token):
        response = await client.post(f"/api/v1/team/invitations/token/{token}/accept")
        await assert_refused(response, 409, "invalid_state")


async def test_an_invitation_expires_after_seven_days(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    _, token = await _invited(client)

    clock.advance(days=7, seconds=1)

    shown = await (await client.get(f"/api/v1/team/invitations/token/{token}")).json()
    accepted = await client.post(f"/api/v1/team/invitations/token/{token}/accept")
    assert shown["status"] == "EXPIRED"
    assert accepted.status == 409


async def test_invitations_respect_the_owner_rule_and_the_inviters_scopes(
    client: TestClient[Any, Any],
) -> None:
    owner = await sign_up(client)
    response = await post_as(
        client, owner, "/api/v1/team/roles", {"name": "Lead", "scopes": ["team:read", "team:write"]}
    )
    lead = await add_member(client, owner, "lead@example.com", (await response.json())["id"])

    as_owner = await _invite(client, owner, role="role_owner")
    wider = await _invite(client, lead, role="role_finance")
    unknown = await _invite(client, owner, role="role_nothing")

    await assert_refused(as_owner, 409, "owner_transfer_required")
    await assert_refused(wider, 403, "insufficient_scope")
    assert unknown.status == 400


async def test_an_unknown_token_is_404_and_invitations_are_audited(
    client: TestClient[Any, Any],
) -> None:
    owner, token = await _invited(client)
    await client.post(f"/api/v1/team/invitations/token/{token}/accept")

    unknown = await client.get("/api/v1/team/invitations/token/not-a-token")
    trail = await client.get("/api/v1/team/audit", headers=owner.headers)

    assert unknown.status == 404
    actions = [e["action"] for e in (await trail.json())["data"]]
    assert "invitation.created" in actions and "invitation.accepted" in actions


async def test_another_companys_invitations_are_not_visible(client: TestClient[Any, Any]) -> None:
    owner, other = await two_companies(client)
    invitation = await (await _invite(client, owner)).json()

    listed = await client.get("/api/v1/team/invitations", headers=other.headers)
    revoked = await client.post(
        f"/api/v1/team/invitations/{invitation['id']}/revoke", headers=other.headers
    )

    assert (await listed.json())["data"] == []
    assert revoked.status == 404


async def test_inviting_a_member_is_409_but_someone_from_another_company_may_be_invited(
    client: TestClient[Any, Any],
) -> None:
    owner = await sign_up(client)
    await sign_up(client, email="elsewhere@example.com", company="Other Ltd")
    await add_member(client, owner, "team@example.com", "role_viewer")

    member_again = await _invite(client, owner, email="Team@Example.com")
    self_again = await _invite(client, owner, email=owner.email)
    outsider = await _invite(client, owner, email="elsewhere@example.com")

    assert_envelope(await member_again.json(), 409, "already_member")
    assert_envelope(await self_again.json(), 409, "already_member")
    assert outsider.status == 201, await outsider.text()
