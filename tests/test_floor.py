"""The floor server of bench/floor.py does what a durable create must, and no less: it verifies
the session token, checks the body, and answers 201 only once the payment, its event and its
Idempotency-Key's stored response are committed (so a ratio to it is a fair one)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import asyncpg
import pytest

from bench.floor import SECRET_VARIABLE, floor_command, floor_tokens
from tests.conftest import PG_URL, REQUIRE_SERVICES
from tests.helpers import eventually, free_port
from tests.server import server_environment

ROOT = Path(__file__).resolve().parents[1]
CREATE = {"amountMinor": "1500", "currency": "USD", "description": "floor"}


@dataclass(frozen=True)
class Floor:
    base: str
    schema: str
    secret: bytes


@pytest.fixture
async def floor(tmp_path: Path) -> AsyncIterator[Floor]:
    try:
        admin = await asyncpg.connect(PG_URL)
    except (OSError, asyncpg.PostgresError) as exc:
        if REQUIRE_SERVICES:
            pytest.fail(f"PostgreSQL at {PG_URL} is required by this test run ({exc})")
        pytest.skip(f"PostgreSQL at {PG_URL} is not reachable ({exc})")
    port = free_port()
    schema = f"floor_{secrets.token_hex(6)}"
    secret = secrets.token_urlsafe(32)
    with (tmp_path / "floor.log").open("wb") as log:
        process = await asyncio.create_subprocess_exec(
            *floor_command(port, PG_URL, schema),
            cwd=ROOT,
            env=server_environment({SECRET_VARIABLE: secret}),
            stdout=log,
            stderr=asyncio.subprocess.STDOUT,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            async with aiohttp.ClientSession() as http:

                async def up() -> bool:
                    assert process.returncode is None, "the floor server ended; see floor.log"
                    try:
                        async with http.get(f"{base}/") as response:
                            return response.status == 200
                    except aiohttp.ClientError:
                        return False

                await eventually(up, within=30, what="the floor server answering")
            yield Floor(base, schema, secret.encode())
        finally:
            process.terminate()
            await asyncio.wait_for(process.wait(), 30)
            await admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            await admin.close()


async def test_the_floor_answers_201_once_the_payment_its_event_and_its_key_are_stored(
    floor: Floor,
) -> None:
    # given
    [token] = floor_tokens(floor.secret, 1)
    headers = {"Authorization": f"Bearer {token}"}

    # when
    async with aiohttp.ClientSession() as http:
        answers = []
        for number in range(3):
            async with http.post(
                f"{floor.base}/api/v1/merchant/payments",
                json=CREATE,
                headers={**headers, "Idempotency-Key": f"floor-{number}"},
            ) as response:
                answers.append((response.status, await response.json()))

    # then: every answer's rows are there already
    assert [status for status, _ in answers] == [201] * 3
    conn = await asyncpg.connect(PG_URL)
    try:
        await conn.execute(f'SET search_path TO "{floor.schema}"')
        payments = {r["id"] for r in await conn.fetch("SELECT id FROM payments")}
        events = await conn.fetchval("SELECT count(*) FROM events WHERE type = 'payment.created'")
        keys = {r["idem_key"] for r in await conn.fetch("SELECT idem_key FROM idempotency_keys")}
    finally:
        await conn.close()
    assert {body["id"] for _, body in answers} <= payments
    assert events >= 3
    assert {"floor-0", "floor-1", "floor-2"} <= keys


@pytest.mark.parametrize(
    ("credential", "body", "status"),
    [
        ("not a token", CREATE, 401),
        ("none", CREATE, 401),
        ("another secret's", CREATE, 401),
        ("valid", {"amountMinor": 1500, "currency": "USD"}, 400),
        ("valid", {"amountMinor": "1500", "currency": "usd"}, 400),
        ("valid", {"amountMinor": "0", "currency": "USD"}, 400),
        ("valid", ["not", "an", "object"], 400),
    ],
)
async def test_the_floor_refuses_a_bad_session_or_body_as_the_service_would(
    floor: Floor, credential: str, body: object, status: int
) -> None:
    # given
    authorization = {
        "not a token": "Bearer not-a-token",
        "none": "",
        "another secret's": f"Bearer {floor_tokens(b'another-secret-0123456789abcdef!', 1)[0]}",
        "valid": f"Bearer {floor_tokens(floor.secret, 1)[0]}",
    }[credential]

    # when
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{floor.base}/api/v1/merchant/payments",
            json=body,
            headers={"Authorization": authorization},
        ) as response,
    ):
        answered = response.status

    # then
    assert answered == status
