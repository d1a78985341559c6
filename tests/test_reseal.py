"""`run.py reseal` (SECURITY.md, "Rotating secrets"): after the encryption key is rotated, every
value sealed under the previous key is sealed afresh under the current one, so the previous key
can be removed and everything still opens."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from cryptography.exceptions import InvalidTag

from mps.actors.webhooks.deliveries import default_secret
from mps.auth.keyring import Keyring
from mps.config import Settings
from mps.http.keys import SERVICES
from mps.persistence.database import Database, open_database
from mps.persistence.queries.sealed import SEALED_COLUMNS, replace_sealed, sealed_page
from mps.reseal import main, reseal
from tests.helpers import Member, sign_up
from tests.money import ACCOUNT, paid_payment
from tests.test_kyc import a_pdf, upload

pytestmark = pytest.mark.both_backends

SECRET = b"test-session-secret-0123456789abcdef"  # the fixtures' settings
OLD_KEY = b"test-encryption-key-0123456789abcdef"
NEW_KEY = b"rotated-encryption-key-0123456789abcdef"
BODY = {"amountMinor": "2500", "currency": "USD"}

AppMaker = Callable[..., web.Application]


@pytest.fixture
async def db(settings: Settings) -> AsyncIterator[Database]:
    """The service's database on a connection of its own, as the command opens it."""
    own = open_database(settings.database_url)
    await own.open()
    yield own
    await own.close()


async def _seal_one_of_each(client: TestClient[Any, Any]) -> Member:
    """A company with a value in every sealed column, made through the service's own flows."""
    member = await sign_up(client)
    headers = member.headers
    await paid_payment(client, member, "10000")
    # Two rows where the key is one column and where it is two, so a walk a row per page
    # crosses pages of both kinds.
    made = [
        await client.post("/api/v1/merchant/bank-accounts", json=ACCOUNT, headers=headers),
        await client.post("/api/v1/merchant/bank-accounts", json=ACCOUNT, headers=headers),
        await client.post(
            "/api/v1/merchant/payments", json=BODY, headers={**headers, "Idempotency-Key": "k2"}
        ),
        await client.post(
            "/api/v1/merchant/cards",
            json={"cardholderName": "Ann Lee", "currency": "USD", "initialFundingMinor": "100"},
            headers=headers,
        ),
        await client.post(
            "/api/v1/merchant/payments", json=BODY, headers={**headers, "Idempotency-Key": "k1"}
        ),
    ]
    assert [r.status for r in made] == [201, 201, 201, 201, 201]
    endpoint = await client.post(
        "/api/v1/merchant/webhooks",
        json={"url": "http://127.0.0.1:9/hooks", "events": ["*"]},
        headers=headers,
    )
    endpoint_id = (await endpoint.json())["id"]
    rotated = await client.post(
        f"/api/v1/merchant/webhooks/{endpoint_id}/rotate-secret", headers=headers
    )
    assert rotated.status == 200, await rotated.text()
    status, _ = await upload(client, member, a_pdf())
    assert status == 201
    services = client.app[SERVICES]
    await default_secret(services.actors, services.keyring, member.company_id, "test")
    return member


async def _opened(db: Database, keyring: Keyring) -> dict[str, list[bytes]]:
    """Every sealed value, opened with `keyring`, by column."""
    opened: dict[str, list[bytes]] = {}
    for sealed in SEALED_COLUMNS:
        rows = await sealed_page(db, sealed, None, 10_000)
        opened[sealed.name] = [keyring.unseal(r["sealed"], sealed.purpose) for r in rows]
    return opened


async def test_every_value_under_the_previous_key_is_sealed_under_the_current_one(
    aiohttp_client: Callable[..., Any], make_app: AppMaker, db: Database
) -> None:
    # given a value in every sealed column, sealed under the old key
    before = await aiohttp_client(make_app())
    member = await _seal_one_of_each(before)
    plain = await _opened(db, Keyring(SECRET, OLD_KEY))
    assert all(plain.values()), {name: len(values) for name, values in plain.items()}

    # when the key is rotated and reseal runs, a row per page, then again
    rotating = Keyring(SECRET, NEW_KEY, encryption_key_previous=OLD_KEY)
    first = await reseal(db, rotating, page=1)
    again = await reseal(db, rotating)

    # then every value opens under the new key alone, unchanged, and none under the old
    assert await _opened(db, Keyring(SECRET, NEW_KEY)) == plain
    for sealed in SEALED_COLUMNS:
        [row, *_] = await sealed_page(db, sealed, None, 1)
        with pytest.raises(InvalidTag):
            Keyring(SECRET, OLD_KEY).unseal(row["sealed"], sealed.purpose)
    assert all(t.resealed == len(plain[n]) and t.current == 0 for n, t in first.items())
    assert all(t.resealed == 0 and t.current == len(plain[n]) for n, t in again.items())

    # and the service, with the previous key removed, still replays the stored response
    after = await aiohttp_client(make_app(encryption_key=NEW_KEY))
    replay = await after.post(
        "/api/v1/merchant/payments", json=BODY, headers={**member.headers, "Idempotency-Key": "k1"}
    )
    assert replay.status == 201 and replay.headers["Idempotent-Replayed"] == "true"


async def test_checking_counts_what_is_left_and_writes_nothing(
    aiohttp_client: Callable[..., Any], make_app: AppMaker, db: Database
) -> None:
    client = await aiohttp_client(make_app())
    await _seal_one_of_each(client)
    rotating = Keyring(SECRET, NEW_KEY, encryption_key_previous=OLD_KEY)

    counted = await reseal(db, rotating, write=False)

    assert all(t.resealed > 0 for t in counted.values())
    assert all(t.current == 0 for t in (await reseal(db, rotating, write=False)).values())


async def test_a_value_rewritten_since_it_was_read_keeps_what_the_service_wrote(
    aiohttp_client: Callable[..., Any], make_app: AppMaker, db: Database
) -> None:
    # given a bank account whose number was read, then rewritten by the service
    client = await aiohttp_client(make_app())
    member = await sign_up(client)
    await client.post("/api/v1/merchant/bank-accounts", json=ACCOUNT, headers=member.headers)
    column = SEALED_COLUMNS[0]
    [read] = await sealed_page(db, column, None, 10)
    rewritten = Keyring(SECRET, NEW_KEY).seal(b"000123456789", column.purpose)
    await db.write([[replace_sealed(column, (read["id"],), read["sealed"], rewritten)]])

    # when the value read is replaced
    stale = Keyring(SECRET, NEW_KEY).seal(b"000123456789", column.purpose)
    [outcome] = await db.write([[replace_sealed(column, (read["id"],), read["sealed"], stale)]])

    # then nothing changed
    assert outcome == [[]]
    [now] = await sealed_page(db, column, None, 10)
    assert now["sealed"] == rewritten


async def test_the_command_fails_while_a_value_opens_under_no_configured_key(
    aiohttp_client: Callable[..., Any],
    make_app: AppMaker,
    settings: Settings,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # given a bank account number sealed under a key nobody configured any more
    client = await aiohttp_client(make_app(encryption_key=b"lost-encryption-key-0123456789abcdef"))
    member = await sign_up(client)
    await client.post("/api/v1/merchant/bank-accounts", json=ACCOUNT, headers=member.headers)
    env = {
        "MPS_DATA_DIR": str(tmp_path),
        "MPS_DATABASE_URL": settings.database_url,
        "MPS_SESSION_SECRET": SECRET.decode(),
        "MPS_ENCRYPTION_KEY": NEW_KEY.decode(),
        "MPS_ENCRYPTION_KEY_PREVIOUS": OLD_KEY.decode(),
    }

    # when the command runs, checking and then for real
    checked = await asyncio.to_thread(main, ["--check"], env)
    ran = await asyncio.to_thread(main, [], env)

    # then both fail and say why
    out = capsys.readouterr().out
    assert checked == ran == 1
    assert "bank_accounts.account_number: 0 re-sealed, 0 under the current key, 1 that no" in out
    assert "open under neither key" in out
