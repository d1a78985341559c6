"""Backup and restore, end to end (deploy/backup, deploy/restore): what a node served before its
backup, a node started on the restored database and documents' folder serves again."""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import aiohttp
import asyncpg
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from fpdf import FPDF

from mps.config import Settings
from tests.conftest import PG_URL, Clock
from tests.helpers import Member, create_payment, sign_up
from tests.money import paid_payment, refund, services

pytestmark = pytest.mark.parametrize("backend", ["postgres"], indirect=True)

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"
API = "/api/v1/merchant"


@pytest.fixture
async def new_database() -> AsyncIterator[str]:
    """The name of a new, empty database on the tests' server, dropped afterwards."""
    name = f"mps_restore_{secrets.token_hex(4)}"
    admin = await asyncpg.connect(PG_URL)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        yield name
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


def _deploy(script: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(DEPLOY / script), *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _others_may_read(path: Path) -> int:
    return path.stat().st_mode & 0o077


def _passport() -> bytes:
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.cell(text="Passport of Ann Lee")
    return bytes(pdf.output())


async def _read(client: TestClient[Any, Any], member: Member, path: str) -> Any:
    response = await client.get(f"{API}{path}", headers=member.headers)
    assert response.status == 200, await response.text()
    return await response.json()


async def _what_the_merchant_sees(
    client: TestClient[Any, Any], member: Member, payments: list[str], refund_id: str, doc: str
) -> dict[str, Any]:
    """Payments, the balance, the refund and the document with its bytes, without the
    per-request fields (request id, time of the answer)."""

    def lasting(body: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in body.items() if k not in ("requestId", "timestamp")}

    file = await client.get(f"{API}/kyc/documents/{doc}/file", headers=member.headers)
    assert file.status == 200, await file.text()
    return {
        "payments": [lasting(await _read(client, member, f"/payments/{p}")) for p in payments],
        "listed": [p["id"] for p in (await _read(client, member, "/payments"))["data"]],
        "balance": lasting(await _read(client, member, "/balance?currency=USD")),
        "refund": lasting(await _read(client, member, f"/refunds/{refund_id}")),
        "document": lasting(await _read(client, member, f"/kyc/documents/{doc}")),
        "file": await file.read(),
    }


async def test_a_node_started_on_a_restored_backup_serves_what_was_backed_up(
    aiohttp_client: Callable[..., Any],
    make_app: Callable[..., web.Application],
    settings: Settings,
    clock: Clock,
    new_database: str,
    tmp_path: Path,
) -> None:
    # given: a node that took payments, a refund (completed) and an identity document
    source: TestClient[Any, Any] = await aiohttp_client(make_app())
    member = await sign_up(source)
    paid = await paid_payment(source, member, "2500")
    pending = await create_payment(source, member, amountMinor="990")
    refunded = await refund(source, member, paid["id"], "1000")
    assert refunded.status == 201, await refunded.text()
    refund_id = (await refunded.json())["id"]
    clock.advance(seconds=5)
    await services(source).money.process_refunds()
    form = aiohttp.FormData()
    form.add_field("type", "passport")
    form.add_field("file", _passport(), filename="passport.pdf")
    uploaded = await source.post(f"{API}/kyc/documents", data=form, headers=member.headers)
    assert uploaded.status == 201, await uploaded.text()
    doc = (await uploaded.json())["id"]
    ids = [paid["id"], pending["id"]]
    before = await _what_the_merchant_sees(source, member, ids, refund_id, doc)
    assert before["refund"]["status"] == "COMPLETED" and before["file"] == _passport()

    # when: it is backed up while it serves, then changes after the backup
    objects = Path(settings.objects_url.removeprefix("file://"))
    node_env = {
        "MPS_DATABASE_URL": settings.database_url,
        "MPS_OBJECT_STORAGE_URL": objects.as_uri(),
    }
    backed_up = await asyncio.to_thread(_deploy, "backup", str(tmp_path / "backups"), env=node_env)
    assert backed_up.returncode == 0, backed_up.stderr
    folder = Path(backed_up.stdout.strip())
    later = await create_payment(source, member, amountMinor="123")
    await source.close()
    # and is restored into a new database and folder, the old ones gone
    schema = dict(parse_qsl(urlsplit(settings.database_url).query))["schema"]
    restored_url = f"{PG_URL.rsplit('/', 1)[0]}/{new_database}?schema={schema}"
    restored_objects = tmp_path / "restored" / "objects"
    target_env = {
        "MPS_DATABASE_URL": restored_url,
        "MPS_OBJECT_STORAGE_URL": restored_objects.as_uri(),
    }
    shutil.rmtree(objects)
    restored = await asyncio.to_thread(_deploy, "restore", str(folder), env=target_env)
    assert restored.returncode == 0, restored.stderr

    # then: a node on the restored database reads back the same payments, balance and document
    node: TestClient[Any, Any] = await aiohttp_client(
        make_app(database_url=restored_url, object_storage_url=restored_objects.as_uri())
    )
    after = await _what_the_merchant_sees(node, member, ids, refund_id, doc)
    assert after == before
    # and nothing written after the backup
    missing = await node.get(f"{API}/payments/{later['id']}", headers=member.headers)
    assert missing.status == 404, await missing.text()
    # the backup holds the node's data for its owner only
    assert _others_may_read(folder) == _others_may_read(folder / "database.dump") == 0
    # and a restore refuses a database that is not new, rather than merging into it
    again = await asyncio.to_thread(_deploy, "restore", str(folder), env=target_env)
    assert again.returncode == 2 and "holds the service's tables already" in again.stderr
    await node.close()
