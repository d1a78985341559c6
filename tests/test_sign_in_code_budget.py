"""One code budget per person (decisions 15, "per email"): every route that mails a sign-in code
counts against the same per-email limit, and every try at a code counts per email across all
of its logins, on top of the 5 wrong tries each login allows.

The app runs with MPS_RATE_LIMIT_SCALE 0.1, so development's budgets are production's: 10 codes
per email in 5 minutes, 10 tries at a code per email in 15 minutes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from tests.helpers import add_member, assert_envelope, latest_code, post_as, sign_up

PRODUCTION_LIKE = {"rate_limit_scale": 0.1}


@pytest.fixture
async def client(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> TestClient[Any, Any]:
    """The app with production's sign-in budgets (see above)."""
    production_like: TestClient[Any, Any] = await aiohttp_client(make_app(**PRODUCTION_LIKE))
    return production_like


async def _mails(client: TestClient[Any, Any], email: str) -> list[dict[str, Any]]:
    response = await client.get("/api/v1/dev/mailbox", params={"to": email})
    data: list[dict[str, Any]] = (await response.json())["data"]
    return data


async def test_logins_for_one_email_stop_mailing_codes_once_its_budget_is_spent(
    client: TestClient[Any, Any],
) -> None:
    # given: a member whose sign-up mailed one code, and nine logins that mailed nine more
    await sign_up(client, "owner@example.com")
    for _ in range(9):
        response = await client.post("/api/v1/auth/login", json={"email": "owner@example.com"})
        assert response.status == 200, await response.text()

    # when: another login asks for the eleventh code
    refused = await client.post("/api/v1/auth/login", json={"email": "owner@example.com"})

    # then: it is throttled like a code request, and no eleventh code went out
    assert refused.status == 429
    assert refused.headers["Retry-After"]
    assert_envelope(await refused.json(), 429)
    assert len(await _mails(client, "owner@example.com")) == 10


async def test_a_code_request_is_refused_when_logins_spent_the_emails_budget(
    client: TestClient[Any, Any],
) -> None:
    # given: the budget spent by a sign-up and logins
    await sign_up(client, "owner@example.com")
    logins = []
    for _ in range(9):
        response = await client.post("/api/v1/auth/login", json={"email": "owner@example.com"})
        logins.append((await response.json())["loginId"])

    # when: a fresh code is asked for one of those logins
    refused = await client.post("/api/v1/auth/otp/request", json={"loginId": logins[0]})

    # then
    assert refused.status == 429
    assert len(await _mails(client, "owner@example.com")) == 10


async def test_logins_for_an_unknown_email_spend_its_budget_too_so_a_429_reveals_nothing(
    client: TestClient[Any, Any],
) -> None:
    # given: ten logins for an address with no account
    for _ in range(10):
        response = await client.post("/api/v1/auth/login", json={"email": "nobody@example.com"})
        assert response.status == 200

    # when
    refused = await client.post("/api/v1/auth/login", json={"email": "nobody@example.com"})

    # then: the same 429 a member's address gets
    assert refused.status == 429


async def test_accepting_an_invitation_is_refused_before_joining_when_the_budget_is_spent(
    client: TestClient[Any, Any],
) -> None:
    # given: an invitation to someone whose address has had ten logins already
    owner = await sign_up(client, "owner@example.com")
    invited = await post_as(
        client,
        owner,
        "/api/v1/team/invitations",
        {"email": "new@example.com", "roleId": "role_viewer"},
    )
    assert invited.status == 201, await invited.text()
    link = (await _mails(client, "new@example.com"))[0]["link"]
    token = link.rsplit("/", 1)[1]
    for _ in range(10):
        await client.post("/api/v1/auth/login", json={"email": "new@example.com"})

    # when
    refused = await client.post(f"/api/v1/team/invitations/token/{token}/accept")

    # then: throttled before anything was saved: the invitation is still open
    assert refused.status == 429
    shown = await client.get(f"/api/v1/team/invitations/token/{token}")
    assert (await shown.json())["status"] == "PENDING"


async def test_sign_up_counts_against_the_same_budget(
    client: TestClient[Any, Any],
) -> None:
    # given: ten logins for an address
    for _ in range(10):
        await client.post("/api/v1/auth/login", json={"email": "late@example.com"})

    # when: it signs up
    refused = await client.post(
        "/api/v1/auth/signup", json={"companyName": "Late Ltd", "email": "late@example.com"}
    )

    # then
    assert refused.status == 429
    assert await _mails(client, "late@example.com") == []


async def test_wrong_codes_count_per_email_across_logins(
    client: TestClient[Any, Any],
) -> None:
    # given: a member (whose sign-up spent one try), and six logins with two wrong codes each:
    # twelve more tries, each login well within its own five
    member = await sign_up(client, "owner@example.com")
    statuses = []
    for _ in range(6):
        login = await client.post("/api/v1/auth/login", json={"email": member.email})
        login_id = (await login.json())["loginId"]
        code = await latest_code(client, member.email)
        wrong = f"{(int(code) + 1) % 1_000_000:06d}"
        for _ in range(2):
            response = await client.post(
                "/api/v1/auth/otp/verify", json={"loginId": login_id, "code": wrong}
            )
            statuses.append(response.status)

    # when: a fresh login is tried with its right code
    login = await client.post("/api/v1/auth/login", json={"email": member.email})
    login_id = (await login.json())["loginId"]
    code = await latest_code(client, member.email)
    right = await client.post("/api/v1/auth/otp/verify", json={"loginId": login_id, "code": code})

    # then: the email's tries ran out after ten, whichever login they named, and stay out
    assert statuses[:9] == [400] * 9
    assert statuses[9:] == [429] * 3
    assert right.status == 429


async def test_a_member_added_by_the_team_signs_in_within_the_budget(
    client: TestClient[Any, Any],
) -> None:
    # given / when: the ordinary flow, well inside every budget
    owner = await sign_up(client, "owner@example.com")
    member = await add_member(client, owner, "viewer@example.com", "role_viewer")

    # then
    assert member.token
