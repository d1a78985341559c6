"""The low findings of the second security pass: generic delivery errors, existing identities
protected at sign-up, NFKC email normalisation, a 0700 production data directory, and
trailing-dot webhook hosts refused."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.test_utils import TestClient

from mps.config import ConfigError, load_settings
from mps.http.keys import SERVICES
from mps.webhooks.targets import GuardedResolver, UnsafeTarget, check_url
from tests.helpers import answered, latest_code, post_as, production_env, sign_up

# "owner@example.com" with its letters in their full-width forms (U+FF41 onwards).
FULL_WIDTH_OWNER = (
    "".join(chr(ord(c) + 0xFEE0) if c.isalpha() else c for c in "owner@example") + ".com"
)


class _Internal(AbstractResolver):
    async def resolve(self, host: str, port: int = 0, family: Any = 0) -> list[ResolveResult]:
        return [
            ResolveResult(hostname=host, host="10.1.2.3", port=port, family=2, proto=0, flags=0)
        ]

    async def close(self) -> None:
        pass


async def test_a_refused_delivery_names_the_host_but_never_what_it_resolved_to() -> None:
    # given: a merchant's host that resolves into our private network
    guarded = GuardedResolver(allow_private=False, resolver=_Internal())

    # when
    with pytest.raises(UnsafeTarget) as refused:
        await guarded.resolve("hooks.merchant.example", 443)

    # then
    assert "hooks.merchant.example" in str(refused.value)
    assert "10.1.2.3" not in str(refused.value)


async def test_signing_up_with_an_existing_email_attaches_no_company_before_the_code(
    client: TestClient[Any, Any],
) -> None:
    # given: a member of one company
    victim = await sign_up(client, "victim@example.com", "Victim Ltd")

    # when: someone else signs up with that address
    response = await client.post(
        "/api/v1/auth/signup", json={"companyName": "Evil Ltd", "email": "victim@example.com"}
    )

    # then: nothing is attached to the person until the mailed code is entered
    assert response.status == 201
    signup = await response.json()
    database = client.app[SERVICES].database
    owned = await database.fetch(
        "SELECT company_id FROM members WHERE user_id = $1", victim.user_id
    )
    assert [r["company_id"] for r in owned] == [victim.company_id]
    assert (
        await database.fetchval("SELECT COUNT(*) FROM companies WHERE id = $1", signup["companyId"])
        == 0
    )

    # and when the person themselves enters the code, the company is theirs
    code = await latest_code(client, "victim@example.com")
    verified = await client.post(
        "/api/v1/auth/otp/verify", json={"loginId": signup["loginId"], "code": code}
    )
    session = await answered(verified, 200)
    assert session["user"]["id"] == victim.user_id
    assert session["company"] == {**session["company"], "id": signup["companyId"]}
    assert session["company"]["name"] == "Evil Ltd"


async def test_a_full_width_email_is_folded_to_the_same_person(
    client: TestClient[Any, Any],
) -> None:
    # given
    member = await sign_up(client, "owner@example.com")

    # when: the address is typed in full-width forms (NFKC folds them)
    login = await client.post("/api/v1/auth/login", json={"email": FULL_WIDTH_OWNER})

    # then: the code goes to the member, and opens their session
    assert login.status == 200
    code = await latest_code(client, "owner@example.com")
    verified = await client.post(
        "/api/v1/auth/otp/verify", json={"loginId": (await login.json())["loginId"], "code": code}
    )
    assert verified.status == 200
    assert (await verified.json())["user"]["id"] == member.user_id


async def test_a_confusable_email_is_refused_rather_than_made_a_separate_person(
    client: TestClient[Any, Any],
) -> None:
    # given: a Cyrillic o (U+043E) where the member's address has a Latin "o"
    await sign_up(client, "owner@example.com")

    # when
    response = await client.post(
        "/api/v1/auth/signup", json={"companyName": "Look-alike", "email": "\u043ewner@example.com"}
    )

    # then
    assert response.status == 400
    assert (await response.json())["errors"][0]["field"] == "email"


def test_production_makes_its_data_directory_for_its_owner_only(tmp_path: Path) -> None:
    # given
    data_dir = tmp_path / "data"
    env = production_env()

    # when
    load_settings(["--data-dir", str(data_dir)], env)

    # then: 0700, and one that others can write is refused as in development
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    data_dir.chmod(0o777)
    with pytest.raises(ConfigError, match="can be written by group or others"):
        load_settings(["--data-dir", str(data_dir)], env)


@pytest.mark.parametrize(
    "url", ["https://hooks.example.com./events", "https://hooks.example.com.:8443/events"]
)
def test_a_webhook_host_ending_in_a_dot_is_refused(url: str) -> None:
    with pytest.raises(UnsafeTarget, match="dot"):
        check_url(url, allow_private=False, require_https=True)


async def test_registering_a_webhook_endpoint_with_a_trailing_dot_host_is_a_400(
    client: TestClient[Any, Any],
) -> None:
    owner = await sign_up(client)

    endpoint = {"url": "https://hooks.example.com./events", "events": ["*"]}
    response = await post_as(client, owner, "/api/v1/merchant/webhooks", endpoint)

    assert response.status == 400
    assert (await response.json())["errors"][0]["field"] == "url"
