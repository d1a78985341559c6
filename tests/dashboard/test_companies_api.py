"""The companies a signed-in person belongs to, and moving the session to another of them: what
the dashboard's company picker calls (GET /auth/companies, POST /auth/session/company)."""

from __future__ import annotations

from typing import Any

from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient

from tests.helpers import Member, add_member, assert_envelope, sign_up


async def _pat_in_two_companies(client: TestClient[Any, Any]) -> tuple[Member, Member]:
    """Pat, who owns Blue Mug Coffee and is a developer at Red Kettle Tea; and Red Kettle Tea's
    owner."""
    pat = await sign_up(client, "pat@example.com", "Blue Mug Coffee")
    other_owner = await sign_up(client, "sam@example.com", "Red Kettle Tea")
    await add_member(client, other_owner, "pat@example.com", "role_developer")
    return pat, other_owner


async def _move(client: TestClient[Any, Any], member: Member, company_id: str) -> ClientResponse:
    """Ask to move `member`'s session to the company; the answer, unchecked."""
    return await client.post(
        "/api/v1/auth/session/company", json={"companyId": company_id}, headers=member.headers
    )


async def _move_to_a_stranger(
    client: TestClient[Any, Any],
) -> tuple[Member, Member, ClientResponse]:
    """Pat, who owns Blue Mug Coffee only, asks to move to Red Kettle Tea: Pat, Red Kettle Tea's
    owner, and the answer."""
    pat = await sign_up(client, "pat@example.com", "Blue Mug Coffee")
    stranger = await sign_up(client, "sam@example.com", "Red Kettle Tea")
    return pat, stranger, await _move(client, pat, stranger.company_id)


async def test_a_member_of_two_companies_sees_both_and_which_is_current(
    client: TestClient[Any, Any],
) -> None:
    # given a person who owns one company and is a developer in another
    first, _ = await _pat_in_two_companies(client)

    # when they list their companies
    response = await client.get("/api/v1/auth/companies", headers=first.headers)

    # then both are there, with the role held in each
    body = await response.json()
    assert response.status == 200
    assert [(c["name"], c["role"]["id"], c["current"]) for c in body["data"]] == [
        ("Blue Mug Coffee", "role_owner", True),
        ("Red Kettle Tea", "role_developer", False),
    ]


async def test_moving_the_session_to_another_company_ends_the_old_token(
    client: TestClient[Any, Any],
) -> None:
    first, other_owner = await _pat_in_two_companies(client)

    response = await _move(client, first, other_owner.company_id)

    moved = await response.json()
    assert response.status == 200, moved
    assert moved["company"] == {"id": other_owner.company_id, "name": "Red Kettle Tea"}
    assert moved["role"]["id"] == "role_developer"
    assert moved["mode"] == "test" and moved["previousSessionEnded"] is True
    me = await client.get(
        "/api/v1/auth/me", headers={"Authorization": f"Bearer {moved['sessionToken']}"}
    )
    assert (await me.json())["company"]["id"] == other_owner.company_id
    old = await client.get("/api/v1/auth/me", headers=first.headers)
    assert old.status == 401


async def test_moving_to_a_company_the_person_is_not_in_is_refused_and_changes_nothing(
    client: TestClient[Any, Any],
) -> None:
    first, _, response = await _move_to_a_stranger(client)

    assert_envelope(await response.json(), 403, "not_a_member")
    still = await client.get("/api/v1/auth/me", headers=first.headers)
    assert still.status == 200


async def test_company_routes_need_a_session(client: TestClient[Any, Any]) -> None:
    listed = await client.get("/api/v1/auth/companies")
    moved = await client.post("/api/v1/auth/session/company", json={"companyId": "co_x"})

    assert_envelope(await listed.json(), 401)
    assert_envelope(await moved.json(), 401)


async def test_the_old_token_refused_after_a_move_says_it_moved_to_another_company(
    client: TestClient[Any, Any],
) -> None:
    first, other_owner = await _pat_in_two_companies(client)
    moved = await _move(client, first, other_owner.company_id)
    assert moved.status == 200

    old = await client.get("/api/v1/auth/me", headers=first.headers)

    refused = await old.json()
    assert_envelope(refused, 401)
    assert "another company" in refused["message"]


async def test_a_refused_move_opens_no_session_in_the_company_asked_for(
    client: TestClient[Any, Any],
) -> None:
    first, stranger, refused = await _move_to_a_stranger(client)

    assert refused.status == 403
    audit = await client.get(
        "/api/v1/team/audit", params={"action": "session.opened"}, headers=stranger.headers
    )
    opened = (await audit.json())["data"]
    assert audit.status == 200 and opened, opened
    assert first.user_id not in {entry["actor"]["id"] for entry in opened}
