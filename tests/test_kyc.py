"""Identity verification (decisions 1, 12): documents judged by content and kept in object
storage, status per mode, the operator's review of live mode, and live money once verified."""

from __future__ import annotations

import asyncio
import hashlib
import io
import sys
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient
from fpdf import FPDF
from PIL import Image

from mps.adapters.storage.sealed import sealed_size
from mps.operator import request_review, wait_for
from mps.persistence.database import Database, open_database
from tests.helpers import (
    Member,
    answered,
    assert_envelope,
    create_payment,
    eventually,
    live_session,
    owner_and_member,
    pay,
    post_as,
    sign_up,
)
from tests.money import ACCOUNT, balance, sandbox_key, services, simulate
from tests.s3 import ACCESS_KEY, SECRET_KEY, new_bucket, s3_admin

pytestmark = pytest.mark.both_backends

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = "/api/v1/merchant/kyc/documents"
MiB = 1024 * 1024


def a_pdf(text: str = "Passport of Ann Lee") -> bytes:
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.cell(text=text)
    return bytes(pdf.output())


def a_png(size: int = 8) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (size, size), (10, 120, 200)).save(out, "PNG")
    return out.getvalue()


def form(content: bytes, file_name: str, doc_type: str | None = "passport") -> aiohttp.FormData:
    data = aiohttp.FormData()
    if doc_type is not None:
        data.add_field("type", doc_type)
    data.add_field(
        "file", io.BytesIO(content), filename=file_name, content_type="application/octet-stream"
    )
    return data


async def upload(
    client: TestClient[Any, Any],
    member: Member,
    content: bytes,
    file_name: str = "passport.pdf",
    doc_type: str | None = "passport",
    **headers: str,
) -> tuple[int, dict[str, Any]]:
    response = await client.post(
        DOCUMENTS, data=form(content, file_name, doc_type), headers={**member.headers, **headers}
    )
    return response.status, await response.json()


async def status_of(client: TestClient[Any, Any], member: Member) -> dict[str, Any]:
    response = await client.get("/api/v1/merchant/kyc", headers=member.headers)
    body: dict[str, Any] = await answered(response, 200)
    return body


def stored_objects(client: TestClient[Any, Any]) -> list[Path]:
    root = Path(services(client).settings.objects_url.removeprefix("file://"))
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


async def document_rows(client: TestClient[Any, Any]) -> int:
    row = await services(client).database.fetchrow("SELECT COUNT(*) AS n FROM kyc_documents")
    assert row is not None
    return int(row["n"])


async def test_a_test_mode_identity_document_verifies_test_mode(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)
    assert (await status_of(client, member))["status"] == "UNVERIFIED"
    content = a_pdf()

    status, document = await upload(client, member, content)

    assert status == 201, document
    assert document["id"].startswith("doc_") and document["type"] == "passport"
    assert document["contentType"] == "application/pdf" and document["fileName"] == "passport.pdf"
    assert document["sizeBytes"] == len(content)
    assert document["sha256"] == hashlib.sha256(content).hexdigest()
    assert document["status"] == "ACCEPTED" and document["reviewedAt"] is not None
    kyc = await status_of(client, member)
    assert kyc == {**kyc, "mode": "test", "status": "VERIFIED", "documentCount": 1}
    settings = await client.get("/api/v1/merchant/settings", headers=member.headers)
    assert (await settings.json())["kycStatus"] == "VERIFIED"
    events = await client.get(
        "/api/v1/merchant/events", params={"type": "kyc.verified"}, headers=member.headers
    )
    [event] = (await events.json())["data"]
    assert event["data"]["object"]["status"] == "VERIFIED" and event["livemode"] is False
    # live mode is untouched by test mode's verification
    assert (await status_of(client, await live_session(client, member)))["status"] == "UNVERIFIED"


async def test_a_proof_of_address_alone_leaves_test_mode_pending(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)

    status, document = await upload(client, member, a_pdf(), "bill.pdf", "proof_of_address")

    assert status == 201 and document["status"] == "PENDING"
    assert (await status_of(client, member))["status"] == "PENDING"


async def test_the_type_is_judged_by_content_not_by_name(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)

    status, document = await upload(client, member, a_png(), "scan.pdf", "national_id")

    assert status == 201, document
    assert document["contentType"] == "image/png" and document["fileName"] == "scan.pdf"
    download = await client.get(f"{DOCUMENTS}/{document['id']}/file", headers=member.headers)
    assert download.headers["Content-Type"] == "image/png"


@pytest.mark.parametrize(
    "content",
    [
        b"#!/bin/sh\nrm -rf /\n",
        b"<html><script>alert(1)</script></html>",
        b"just some text",
        b"GIF89a" + b"\x00" * 32,
    ],
)
async def test_anything_but_pdf_jpeg_or_png_is_400_and_nothing_is_kept(
    client: TestClient[Any, Any], content: bytes
) -> None:
    member = await sign_up(client)

    status, body = await upload(client, member, content, "photo.png")

    assert status == 400, body
    assert_envelope(body, 400, "validation_error")
    assert body["errors"][0]["field"] == "file" and "content" in body["errors"][0]["message"]
    assert stored_objects(client) == [] and await document_rows(client) == 0
    assert (await status_of(client, member))["status"] == "UNVERIFIED"


async def test_an_upload_over_10_mib_is_413_and_nothing_is_kept(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)
    just_fits = a_pdf() + b"\x00" * (10 * MiB - len(a_pdf()))
    too_big = just_fits + b"\x00"

    refused, body = await upload(client, member, too_big)
    accepted, document = await upload(client, member, just_fits)

    assert refused == 413, body
    assert_envelope(body, 413, "payload_too_large")
    assert accepted == 201 and document["sizeBytes"] == 10 * MiB
    assert len(stored_objects(client)) == 1 and await document_rows(client) == 1


@pytest.mark.parametrize(
    ("data", "field_name"),
    [
        (lambda: form(a_pdf(), "p.pdf", None), "type"),
        (lambda: form(a_pdf(), "p.pdf", "selfie"), "type"),
        (lambda: _only_type(), "file"),
        (lambda: _with_note(), "note"),
        (lambda: form(b"", "p.pdf"), "file"),
    ],
)
async def test_missing_or_unknown_parts_are_400_naming_them(
    client: TestClient[Any, Any], data: Any, field_name: str
) -> None:
    member = await sign_up(client)

    response = await client.post(DOCUMENTS, data=data(), headers=member.headers)

    body = await response.json()
    assert response.status == 400, body
    assert [e["field"] for e in body["errors"]] == [field_name]
    assert stored_objects(client) == [] and await document_rows(client) == 0


def _only_type() -> aiohttp.MultipartWriter:
    writer = aiohttp.MultipartWriter("form-data")
    writer.append("passport").set_content_disposition("form-data", name="type")
    return writer


def _with_note() -> aiohttp.FormData:
    data = form(a_pdf(), "p.pdf")
    data.add_field("note", "see attached")
    return data


async def test_a_json_body_is_415(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)

    response = await client.post(DOCUMENTS, json={"type": "passport"}, headers=member.headers)

    assert_envelope(await response.json(), 415, "unsupported_media_type")


async def test_a_connection_lost_mid_upload_leaves_no_row_and_no_object(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)
    boundary = "XyZ"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="type"\r\n\r\npassport\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="p.pdf"\r\n'
        "Content-Type: application/pdf\r\n\r\n"
    ).encode()
    sent = head + a_pdf() + b"\x00" * 200_000
    _reader, writer = await asyncio.open_connection("127.0.0.1", client.port)
    writer.write(
        (
            f"POST {DOCUMENTS} HTTP/1.1\r\nHost: localhost\r\n"
            f"Authorization: Bearer {member.token}\r\n"
            f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
            f"Content-Length: {len(sent) + 5 * MiB}\r\n\r\n"
        ).encode()
        + sent
    )
    await writer.drain()

    async def storing() -> list[Path]:
        return stored_objects(client)

    # the server has begun storing the file (its temporary file is there)
    await eventually(storing, what="the upload being stored")
    writer.close()

    async def cleaned_up() -> bool:
        return not stored_objects(client)

    # the server notices the lost connection and removes what it wrote; a row is written only
    # after the file is stored whole, so none can follow once the file is gone
    await eventually(cleaned_up, what="the partial upload removed")
    assert await document_rows(client) == 0


async def test_documents_are_listed_retrieved_and_downloaded_byte_for_byte(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)
    pdf, png = a_pdf(), a_png(64)
    _, first = await upload(client, member, pdf, "passport.pdf")
    _, second = await upload(client, member, png, "bill.png", "proof_of_address")

    listed = await client.get(DOCUMENTS, headers=member.headers)
    one = await client.get(f"{DOCUMENTS}/{first['id']}", headers=member.headers)
    file = await client.get(f"{DOCUMENTS}/{second['id']}/file", headers=member.headers)

    assert [d["id"] for d in (await listed.json())["data"]] == [second["id"], first["id"]]
    assert {k: v for k, v in (await one.json()).items() if k not in ("ok", "requestId")} == {
        k: v for k, v in first.items() if k not in ("ok", "requestId")
    }
    assert file.status == 200 and await file.read() == png
    assert file.headers["Content-Type"] == "image/png"
    assert file.headers["Content-Disposition"] == f'attachment; filename="{second["id"]}.png"'
    assert file.headers["X-Request-Id"].startswith("req_")
    # the storage key and the uploader are never shown
    assert "storageKey" not in first and "uploadedBy" not in first


async def test_a_download_is_audited_and_needs_settings_write(
    client: TestClient[Any, Any],
) -> None:
    owner, viewer = await owner_and_member(client, "role_viewer", "viewer@example.com")
    _, document = await upload(client, owner, a_pdf())

    seen = await client.get(f"{DOCUMENTS}/{document['id']}", headers=viewer.headers)
    refused = await client.get(f"{DOCUMENTS}/{document['id']}/file", headers=viewer.headers)
    refused_upload, _ = await upload(client, viewer, a_pdf())
    downloaded = await client.get(f"{DOCUMENTS}/{document['id']}/file", headers=owner.headers)

    assert seen.status == 200
    assert_envelope(await refused.json(), 403, "insufficient_scope")
    assert refused_upload == 403
    assert downloaded.status == 200
    audit = await client.get(
        "/api/v1/team/audit", params={"action": "kyc.document_downloaded"}, headers=owner.headers
    )
    entries = [e for e in (await audit.json())["data"] if e["action"] == "kyc.document_downloaded"]
    assert len(entries) == 1 and entries[0]["target"]["id"] == document["id"]
    assert entries[0]["actor"] == {"type": "user", "id": owner.user_id}


async def test_another_company_sees_no_document_and_no_file(
    client: TestClient[Any, Any],
) -> None:
    owner = await sign_up(client)
    stranger = await sign_up(client, email="other@example.com", company="Other Ltd")
    _, document = await upload(client, owner, a_pdf())

    listed = await client.get(DOCUMENTS, headers=stranger.headers)
    one = await client.get(f"{DOCUMENTS}/{document['id']}", headers=stranger.headers)
    file = await client.get(f"{DOCUMENTS}/{document['id']}/file", headers=stranger.headers)
    as_live = await client.get(
        f"{DOCUMENTS}/{document['id']}", headers=(await live_session(client, owner)).headers
    )

    assert (await listed.json())["data"] == []
    assert_envelope(await one.json(), 404, "not_found")
    assert_envelope(await file.json(), 404, "not_found")
    assert_envelope(await as_live.json(), 404, "not_found")


async def test_files_are_stored_encrypted_and_a_changed_file_is_refused(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)
    content = a_png(256)
    _, document = await upload(client, member, content, "id.png", "national_id")
    [path] = stored_objects(client)

    stored = path.read_bytes()
    assert len(stored) == sealed_size(len(content)) and content[:64] not in stored
    assert hashlib.sha256(stored).hexdigest() != document["sha256"]
    changed = bytearray(stored)
    changed[-1] ^= 0x01
    path.write_bytes(bytes(changed))
    refused = await client.get(f"{DOCUMENTS}/{document['id']}/file", headers=member.headers)

    assert_envelope(await refused.json(), 500, "internal_error")


async def test_files_are_not_reachable_from_any_other_path(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)
    await upload(client, member, a_pdf())
    [path] = stored_objects(client)
    relative = path.relative_to(Path(services(client).settings.objects_url.removeprefix("file://")))

    for guess in (f"/{relative}", f"/uploads/{relative}", f"/objects/{relative}", f"/{path.name}"):
        response = await client.get(guess)
        assert response.status == 404, guess
    assert not str(path).startswith(str(ROOT / "mps"))


async def test_an_idempotent_retry_of_the_same_file_replays_and_keeps_one_copy(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)
    content = a_pdf()

    first = await upload(client, member, content, **{"Idempotency-Key": "upload-1"})
    again = await upload(client, member, content, **{"Idempotency-Key": "upload-1"})
    other = await upload(client, member, a_png(), **{"Idempotency-Key": "upload-1"})

    assert first[0] == 201 and again[0] == 201 and again[1]["id"] == first[1]["id"]
    assert other[0] == 422
    assert_envelope(other[1], 422, "idempotency_key_reuse")
    assert len(stored_objects(client)) == 1 and await document_rows(client) == 1


async def test_the_sandbox_forces_test_mode_either_way(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)
    key = await sandbox_key(client, member, "settings:write")

    rejected = await simulate(client, key, "kyc.rejected")
    after_rejection = await status_of(client, member)
    verified = await simulate(client, key, "kyc.verified")

    body = await answered(rejected, 200)
    assert body["kind"] == "kyc.rejected" and body["event"]["type"] == "kyc.rejected"
    assert after_rejection["status"] == "REJECTED" and after_rejection["reason"]
    assert verified.status == 200 and (await status_of(client, member))["status"] == "VERIFIED"


@pytest.fixture
async def operator_db(database_url: str) -> AsyncIterator[Database]:
    """The operator's own connection to the service's database, as `run.py kyc` opens."""
    db = open_database(database_url)
    await db.open()
    yield db
    await db.close()


async def test_live_mode_is_verified_only_by_the_operator_and_then_moves_money(
    client: TestClient[Any, Any], operator_db: Database
) -> None:
    owner = await sign_up(client)
    live_owner = await live_session(client, owner)
    db = operator_db

    # nothing to review yet: the operator's request is refused with a reason
    request = await request_review(db, owner.company_id, "approve", None, "ops-ann")
    await services(client).kyc.review_requests()
    assert (await wait_for(db, request))["ok"] is False
    refused = await client.post(
        "/api/v1/merchant/payments", json={"amountMinor": "100", "currency": "USD"},
        headers=live_owner.headers,
    )  # fmt: skip
    assert_envelope(await refused.json(), 403, "account_not_verified")

    # a live upload is PENDING, and the merchant cannot verify live by any route
    status, document = await upload(client, live_owner, a_pdf())
    assert status == 201 and document["status"] == "PENDING"
    assert (await status_of(client, live_owner))["status"] == "PENDING"
    patched = await client.patch(
        "/api/v1/merchant/settings", json={"kycStatus": "VERIFIED"}, headers=live_owner.headers
    )
    assert patched.status == 400
    live_key = await post_as(
        client,
        live_owner,
        "/api/v1/merchant/api-keys",
        {"name": "live", "scopes": ["settings:write"]},
    )
    assert live_key.status == 201, await live_key.text()
    forced = await simulate(
        client, {"Authorization": f"Bearer {(await live_key.json())['key']}"}, "kyc.verified"
    )
    assert_envelope(await forced.json(), 403, "test_key_required")

    # the operator rejects with a reason, the merchant uploads again, the operator approves
    request = await request_review(db, owner.company_id, "reject", "Blurred photo", "ops-ann")
    await services(client).kyc.review_requests()
    assert await wait_for(db, request) == {"ok": True}
    kyc = await status_of(client, live_owner)
    assert kyc["status"] == "REJECTED" and kyc["reason"] == "Blurred photo"
    await upload(client, live_owner, a_png(), "passport.png")
    assert (await status_of(client, live_owner))["status"] == "PENDING"
    request = await request_review(db, owner.company_id, "approve", None, "ops-ann")
    await services(client).kyc.review_requests()
    assert await wait_for(db, request) == {"ok": True}

    kyc = await status_of(client, live_owner)
    assert kyc["status"] == "VERIFIED" and kyc["reason"] is None
    documents = await client.get(DOCUMENTS, headers=live_owner.headers)
    assert [d["status"] for d in (await documents.json())["data"]] == ["ACCEPTED", "REJECTED"]
    events = await client.get("/api/v1/merchant/events", headers=live_owner.headers)
    assert [e["type"] for e in (await events.json())["data"]][:2] == [
        "kyc.verified", "kyc.rejected",
    ]  # fmt: skip
    audit = await client.get("/api/v1/team/audit", headers=live_owner.headers)
    reviews = [
        e for e in (await audit.json())["data"] if e["action"] in ("kyc.verified", "kyc.rejected")
    ]
    assert [(e["action"], e["actor"]["type"], e["actor"]["id"]) for e in reviews] == [
        ("kyc.verified", "operator", "ops-ann"),
        ("kyc.rejected", "operator", "ops-ann"),
    ]

    # live money moves: a payment paid, a bank account, a payout, a card
    settled = await client.patch(
        "/api/v1/merchant/settings", json={"settlementDelaySec": 0}, headers=live_owner.headers
    )
    assert settled.status == 200, await settled.text()
    payment = await create_payment(client, live_owner, amountMinor="50000")
    assert payment["livemode"] is True
    assert (await pay(client, payment["reference"])).status == 200
    account = await client.post(
        "/api/v1/merchant/bank-accounts", json=ACCOUNT, headers=live_owner.headers
    )
    assert account.status == 201, await account.text()

    async def settled_in_full() -> bool:  # settlement runs every half second
        money = await balance(client, live_owner)
        return money["pending"] == 0 and money["available"] > 0

    await eventually(settled_in_full, what="the payment settled")
    payout = await client.post(
        "/api/v1/merchant/payouts",
        json={
            "amountMinor": "1000",
            "currency": "USD",
            "bankAccountId": (await account.json())["id"],
        },
        headers=live_owner.headers,
    )
    assert payout.status == 201, await payout.text()
    card = await post_as(
        client,
        live_owner,
        "/api/v1/merchant/cards",
        {"cardholderName": "Ann Lee", "currency": "USD", "initialFundingMinor": "2000"},
    )
    assert card.status == 201, await card.text()


async def test_the_operator_command_reviews_a_running_service(
    client: TestClient[Any, Any], database_url: str
) -> None:
    owner = await sign_up(client)
    live_owner = await live_session(client, owner)
    await upload(client, live_owner, a_pdf())

    pending = await asyncio.create_subprocess_exec(
        sys.executable, "run.py", "kyc", "--database-url", database_url, "pending",
        cwd=ROOT, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    listed, _ = await pending.communicate()
    review = await asyncio.create_subprocess_exec(
        sys.executable, "run.py", "kyc", "--database-url", database_url, "review",
        owner.company_id, "--approve", "--operator", "ops-bo", "--wait", "20",
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await review.communicate()

    assert pending.returncode == 0 and owner.company_id in listed.decode()
    assert review.returncode == 0, err.decode()
    assert "VERIFIED" in out.decode()
    assert (await status_of(client, live_owner))["status"] == "VERIFIED"


async def test_the_sweep_removes_stored_bytes_no_document_names(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)
    _, kept = await upload(client, member, a_pdf())
    store = services(client).objects
    orphan = f"kyc/{member.company_id}/test/doc_orphan"

    async def chunks() -> Any:
        yield b"%PDF-1.4 left behind by a crash"

    await store.put(orphan, chunks(), content_type="application/pdf", max_bytes=MiB)
    desk = services(client).kyc
    young = await desk.sweep()  # younger than an upload can take: left alone
    desk._orphan_age = timedelta(0)  # as if an hour had passed
    removed = await desk.sweep()

    assert young == 0 and removed == 1
    [path] = stored_objects(client)
    assert path.name == kept["id"]
    download = await client.get(f"{DOCUMENTS}/{kept['id']}/file", headers=member.headers)
    assert download.status == 200


async def test_health_probes_object_storage_and_the_review_desk(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)

    body = await (await client.get("/api/v1/health", headers=member.headers)).json()

    storage = body["services"]["objectStorage"]
    desk = body["services"]["identityVerification"]
    assert storage["status"] == "up" and "filesystem" in storage["detail"]
    assert desk["status"] == "up" and "review" in desk["detail"]
    assert stored_objects(client) == []  # the probe's object is gone


async def test_audit_entries_of_uploads_name_the_file_by_hash(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)
    content = a_pdf()
    _, document = await upload(client, member, content)

    audit = await client.get("/api/v1/team/audit", headers=member.headers)

    [entry] = [e for e in (await audit.json())["data"] if e["action"] == "kyc.document_uploaded"]
    assert entry["target"]["id"] == document["id"]
    assert entry["details"]["sha256"] == hashlib.sha256(content).hexdigest()


async def test_documents_live_in_an_s3_store_when_one_is_configured(
    aiohttp_client: Any,
    make_app: Any,
    s3_endpoint: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bucket = await new_bucket(s3_endpoint)
    monkeypatch.setenv("MPS_S3_ENDPOINT_URL", s3_endpoint)
    monkeypatch.setenv("MPS_S3_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("MPS_S3_SECRET_ACCESS_KEY", SECRET_KEY)
    client = await aiohttp_client(make_app(object_storage_url=f"s3://{bucket}/documents"))
    member = await sign_up(client)
    content = a_pdf() + b"\x00" * (6 * MiB)  # more than one part of a multipart upload

    status, document = await upload(client, member, content)
    download = await client.get(f"{DOCUMENTS}/{document['id']}/file", headers=member.headers)
    health = await (await client.get("/api/v1/health", headers=member.headers)).json()

    assert status == 201, document
    assert await download.read() == content
    async with s3_admin(s3_endpoint) as admin:
        listed = await admin.list_objects_v2(Bucket=bucket, Prefix="documents/kyc/")
    [stored] = listed["Contents"]
    assert stored["Key"].endswith(document["id"]) and stored["Size"] == sealed_size(len(content))
    assert stored_objects(client) == []  # nothing on disk
    assert health["services"]["objectStorage"]["status"] == "up"
    assert f"s3 bucket {bucket}" in health["services"]["objectStorage"]["detail"]


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("multipart/form-data", b"no boundary"),
        ("multipart/form-data; boundary=x", b"not a form at all"),
        ("multipart/form-data; boundary=x", b"--x\r\n\r\nno headers\r\n--x--\r\n"),
        (
            "multipart/form-data; boundary=x",
            b"--x\r\nContent-Type: multipart/mixed; boundary=y\r\nContent-Disposition: "
            b'form-data; name="file"\r\n\r\n--y\r\n\r\nz\r\n--y--\r\n--x--\r\n',
        ),
    ],
)
async def test_a_malformed_form_is_400_and_nothing_is_kept(
    client: TestClient[Any, Any], content_type: str, body: bytes
) -> None:
    member = await sign_up(client)

    response = await client.post(
        DOCUMENTS, data=body, headers={**member.headers, "Content-Type": content_type}
    )

    assert response.status == 400, await response.text()
    assert_envelope(await response.json(), 400)
    assert stored_objects(client) == [] and await document_rows(client) == 0
