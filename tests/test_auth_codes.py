"""One-time codes: 6 digits, 10 minutes, 5 wrong tries per login, stored hashed (decisions 2)."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from mps.http.keys import SERVICES
from tests.conftest import Clock
from tests.helpers import assert_envelope, assert_refused, latest_code, sign_up


async def _login(client: TestClient[Any, Any], email: str) -> str:
    response = await client.post("/api/v1/auth/login", json={"email": email})
    assert response.status == 200
    login_id: str = (await response.json())["loginId"]
    return login_id


async def _verify(
    client: TestClient[Any, Any], login_id: str, code: str, company_id: str | None = None
) -> Any:
    body = {"loginId": login_id, "code": code}
    if company_id is not None:
        body["companyId"] = company_id
    return await client.post("/api/v1/auth/otp/verify", json=body)


async def _ann_and_a_stranger(
    client: TestClient[Any, Any], wrong_tries: int = 0
) -> tuple[str, str, str]:
    """Ann's login and its code, with `wrong_tries` wrong codes spent on it already, and the
    company of Bob, whom she is not a member of."""
    await sign_up(client, "ann@example.com", "Ann's")
    stranger = await sign_up(client, "bob@example.com", "Bob's")
    login_id = await _login(client, "ann@example.com")
    code = await latest_code(client, "ann@example.com")
    for _ in range(wrong_tries):
        assert (await _verify(client, login_id, _wrong(code))).status == 400
    return login_id, code, stranger.company_id


async def _ann_signing_in(client: TestClient[Any, Any]) -> tuple[str, str]:
    """Ann, a member, has asked to sign in: her login, and the code mailed for it."""
    await sign_up(client, "ann@example.com")
    login_id = await _login(client, "ann@example.com")
    return login_id, await latest_code(client, "ann@example.com")


def _wrong(code: str) -> str:
    return f"{(int(code) + 1) % 1_000_000:06d}"


async def test_login_sends_a_six_digit_code_to_a_member(client: TestClient[Any, Any]) -> None:
    await sign_up(client, "ann@example.com")

    login_id = await _login(client, "ann@example.com")

    code = await latest_code(client, "ann@example.com")
    assert len(code) == 6 and code.isdigit()
    assert (await _verify(client, login_id, code)).status == 200


async def test_login_for_an_unknown_email_looks_the_same_and_sends_nothing(
    client: TestClient[Any, Any],
) -> None:
    await sign_up(client, "ann@example.com")

    known = await client.post("/api/v1/auth/login", json={"email": "ann@example.com"})
    unknown = await client.post("/api/v1/auth/login", json={"email": "nobody@example.com"})

    assert known.status == unknown.status == 200
    assert set(await known.json()) == set(await unknown.json())
    mailbox = await client.get("/api/v1/dev/mailbox", params={"to": "nobody@example.com"})
    assert (await mailbox.json())["data"] == []


async def test_a_code_works_once(client: TestClient[Any, Any]) -> None:
    login_id, code = await _ann_signing_in(client)

    first = await _verify(client, login_id, code)
    second = await _verify(client, login_id, code)

    assert first.status == 200
    await assert_refused(second, 400, "invalid_code")


async def test_a_code_expires_after_ten_minutes(client: TestClient[Any, Any], clock: Clock) -> None:
    login_id, code = await _ann_signing_in(client)

    clock.advance(minutes=10, seconds=1)
    response = await _verify(client, login_id, code)

    assert response.status == 400


async def test_five_wrong_codes_kill_the_login_even_for_the_right_code(
    client: TestClient[Any, Any],
) -> None:
    # given
    login_id, code = await _ann_signing_in(client)

    # when
    for _ in range(5):
        assert (await _verify(client, login_id, _wrong(code))).status == 400

    # then
    response = await _verify(client, login_id, code)
    await assert_refused(response, 400, "invalid_code")


async def test_a_fresh_code_does_not_reset_the_wrong_tries(client: TestClient[Any, Any]) -> None:
    # given four wrong tries
    login_id, code = await _ann_signing_in(client)
    for _ in range(4):
        await _verify(client, login_id, _wrong(code))

    # when a fresh code is requested and one more wrong try is made
    fresh = await client.post("/api/v1/auth/otp/request", json={"loginId": login_id})
    assert fresh.status == 200
    new_code = await latest_code(client, "ann@example.com")
    await _verify(client, login_id, _wrong(new_code))

    # then even the fresh code is refused
    assert (await _verify(client, login_id, new_code)).status == 400


async def test_a_fresh_code_replaces_the_previous_one(client: TestClient[Any, Any]) -> None:
    login_id, old_code = await _ann_signing_in(client)

    # (a fresh code equals the old one once in a million draws; draw again then)
    new_code = old_code
    while new_code == old_code:
        await client.post("/api/v1/auth/otp/request", json={"loginId": login_id})
        new_code = await latest_code(client, "ann@example.com")

    assert (await _verify(client, login_id, old_code)).status == 400
    assert (await _verify(client, login_id, new_code)).status == 200


async def test_codes_are_stored_only_as_a_keyed_hash(client: TestClient[Any, Any]) -> None:
    login_id, code = await _ann_signing_in(client)

    row = await client.app[SERVICES].database.fetchrow(
        "SELECT * FROM logins WHERE id = $1", login_id
    )

    assert row is not None
    assert code not in str(row)
    assert len(row["code_hash"]) == 64


async def test_concurrent_wrong_codes_never_exceed_five_tries(
    client: TestClient[Any, Any],
) -> None:
    import asyncio

    login_id, code = await _ann_signing_in(client)

    await asyncio.gather(*(_verify(client, login_id, _wrong(code)) for _ in range(12)))

    failed = await client.app[SERVICES].database.fetchval(
        "SELECT failed_attempts FROM logins WHERE id = $1", login_id
    )
    assert failed == 5


async def test_code_requests_are_limited_per_email_across_logins(
    client: TestClient[Any, Any],
) -> None:
    # given the development limit of 100 codes per email in 5 minutes, three of them spent by
    # the sign-up and two logins (one budget per email, whichever route mails the code)
    await sign_up(client, "ann@example.com")
    logins = [await _login(client, "ann@example.com") for _ in range(2)]
    statuses = []

    # when fresh codes are requested through two logins for the same email
    for n in range(98):
        response = await client.post("/api/v1/auth/otp/request", json={"loginId": logins[n % 2]})
        statuses.append(response.status)

    # then the 101st code is refused although neither login reached its own limit
    assert statuses[:97] == [200] * 97
    assert statuses[97] == 429


@pytest.mark.both_backends
async def test_a_wrong_company_id_does_not_spend_the_code(client: TestClient[Any, Any]) -> None:
    # given a member of two companies and a stranger's company
    first = await sign_up(client, "ann@example.com", "First")
    second = await sign_up(client, "ann@example.com", "Second")
    stranger = await sign_up(client, "bob@example.com", "Bob's")
    login_id = await _login(client, "ann@example.com")
    code = await latest_code(client, "ann@example.com")

    # when the code is first sent with a company she is not in
    refused = await _verify(client, login_id, code, stranger.company_id)

    # then it is refused without spending the code, which then opens the company she names
    await assert_refused(refused, 403, "not_a_member")
    chosen = await _verify(client, login_id, code, second.company_id)
    assert chosen.status == 200
    assert (await chosen.json())["company"]["id"] == second.company_id
    assert first.company_id != second.company_id


def _without_request(body: dict[str, Any]) -> dict[str, Any]:
    """An error body without the fields that differ on every request."""
    return {k: v for k, v in body.items() if k not in ("requestId", "timestamp")}


@pytest.mark.both_backends
async def test_verify_answers_a_wrong_code_the_same_when_the_company_id_is_anyones(
    client: TestClient[Any, Any],
) -> None:
    # given a member, a stranger's company and an email without an account
    ann = await sign_up(client, "ann@example.com", "Ann's")
    bob = await sign_up(client, "bob@example.com", "Bob's")
    member_login = await _login(client, "ann@example.com")
    code = await latest_code(client, "ann@example.com")
    nobody_login = await _login(client, "nobody@example.com")
    probes = [
        (member_login, None),
        (member_login, ann.company_id),
        (member_login, bob.company_id),
        (member_login, "co_doesnotexist00000000000"),
        (nobody_login, None),
        (nobody_login, bob.company_id),
    ]

    # when a wrong code is sent with each
    answers = []
    for login_id, company_id in probes:
        response = await _verify(client, login_id, _wrong(code), company_id)
        answers.append((response.status, await response.json()))

    # then every answer is the same 400, so none tells membership or account apart
    assert answers[0][0] == 400
    assert_envelope(answers[0][1], 400, "invalid_code")
    first = (400, _without_request(answers[0][1]))
    assert all((status, _without_request(body)) == first for status, body in answers), answers


@pytest.mark.both_backends
async def test_wrong_codes_naming_a_stranger_company_use_up_the_tries_when_probing(
    client: TestClient[Any, Any],
) -> None:
    # given a member's login and a company she is not in
    login_id, code, stranger = await _ann_and_a_stranger(client)

    # when five wrong codes are sent naming the stranger's company
    for _ in range(5):
        assert (await _verify(client, login_id, _wrong(code), stranger)).status == 400

    # then the login is dead: even the right code is refused
    failed = await client.app[SERVICES].database.fetchval(
        "SELECT failed_attempts FROM logins WHERE id = $1", login_id
    )
    assert failed == 5
    response = await _verify(client, login_id, code)
    await assert_refused(response, 400, "invalid_code")


@pytest.mark.both_backends
async def test_the_right_code_naming_a_stranger_company_costs_no_try_when_refused(
    client: TestClient[Any, Any],
) -> None:
    # given a member's login with four wrong tries spent, and a company she is not in
    login_id, code, stranger = await _ann_and_a_stranger(client, wrong_tries=4)

    # when the right code is sent twice naming the stranger's company
    refusals = [await _verify(client, login_id, code, stranger) for _ in range(2)]

    # then both are 403 and the code still opens her own company
    assert [r.status for r in refusals] == [403, 403]
    assert (await _verify(client, login_id, code)).status == 200
