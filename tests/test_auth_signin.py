"""Sign-in by emailed code, sessions and their rejections (decisions 2)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient

from mps.bootstrap import Overrides
from mps.persistence.database import Database, Fences, UnitOutcome
from mps.persistence.statements import WriteUnit
from tests.conftest import Clock
from tests.fakes import WrappedDatabase
from tests.helpers import latest_code, sign_up


async def test_signup_then_code_then_me_returns_the_owner(client: TestClient[Any, Any]) -> None:
    # given
    member = await sign_up(client, "Founder@Example.com", "Founders Inc")

    # when
    response = await client.get("/api/v1/auth/me", headers=member.headers)

    # then
    assert response.status == 200
    body = await response.json()
    assert body["ok"] is True and body["requestId"] == response.headers["X-Request-Id"]
    assert body["user"]["email"] == "founder@example.com"
    assert body["company"] == {
        "id": member.company_id,
        "name": "Founders Inc",
        "createdAt": body["company"]["createdAt"],
    }
    assert body["role"]["name"] == "owner"
    assert body["mode"] == "test" and body["livemode"] is False
    assert "payments:write" in body["scopes"] and "audit:read" in body["scopes"]


class CompanyInsertFails(WrappedDatabase):
    """The first group commit holding a company's insert fails before writing anything, as
    when the database goes away at that moment."""

    def __init__(self, real: Database) -> None:
        super().__init__(real)
        self.failed = False

    async def write(
        self, units: Sequence[WriteUnit], fences: Fences | None = None
    ) -> list[UnitOutcome]:
        creates = any(st.sql.startswith("INSERT INTO companies") for u in units for st in u)
        if creates and not self.failed:
            self.failed = True
            raise ConnectionResetError("the connection was lost before the commit")
        return await self.real.write(units, fences)


async def test_a_sign_up_whose_company_could_not_be_made_is_finished_by_retrying_the_code(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application], clock: Clock
) -> None:
    # given a sign-up whose code is entered while the database fails the company's creation
    client: TestClient[Any, Any] = await aiohttp_client(
        make_app(Overrides(clock=clock, wrap_database=CompanyInsertFails))
    )
    started = await client.post(
        "/api/v1/auth/signup", json={"companyName": "Retry Ltd", "email": "rae@example.com"}
    )
    assert started.status == 201, await started.text()
    login_id = (await started.json())["loginId"]
    code = await latest_code(client, "rae@example.com")
    verify = {"loginId": login_id, "code": code}
    failed = await client.post("/api/v1/auth/otp/verify", json=verify)
    assert failed.status == 503, await failed.text()
    assert failed.headers["Retry-After"] == "1"

    # when the person retries with the same code, as the 503 told them to
    retried = await client.post("/api/v1/auth/otp/verify", json=verify)

    # then the sign-up is finished: the company exists and they are its owner
    assert retried.status == 200, await retried.text()
    token = (await retried.json())["sessionToken"]
    me = await client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {token}"})
    body = await me.json()
    assert body["company"]["name"] == "Retry Ltd" and body["role"]["name"] == "owner"
    # and the code is spent for good once the company exists
    again = await client.post("/api/v1/auth/otp/verify", json=verify)
    assert again.status == 400
