"""Identity verification (decisions 12): document upload, status, documents and their files.

An upload is streamed to object storage as it arrives, encrypted on the way under a key of its
own (mps.adapters.storage.sealed), its type judged by its first bytes, and only then recorded by the
company actor; a file is read back only through the download route, which needs settings:write
and is audited before a byte is sent.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import BodyPartReader, MultipartReader, web

from mps.actors.company import RecordAudit, RecordKycDocument
from mps.actors.shards import ShardElsewhere
from mps.adapters.storage import TooLarge
from mps.adapters.storage.sealed import new_data_key, open_stream, seal_stream, sealed_size
from mps.domain import purposes
from mps.domain.clock import iso
from mps.domain.file_types import ALLOWED, EXTENSIONS, detect
from mps.domain.ids import new_id
from mps.domain.kyc import DOCUMENT_TYPES, STATUSES, KycDocument
from mps.errors import (
    BadRequest,
    FieldError,
    PayloadTooLarge,
    Unavailable,
    UnsupportedMedia,
    ValidationFailed,
)
from mps.http.pagination import PAGE_FIELDS
from mps.http.replies import Page, Resource
from mps.http.resources import MODE, named, page, resource
from mps.http.routes._scoped import one_in_mode, page_in_mode
from mps.http.routing import Call, RouteFamily
from mps.http.schema import Enum, Int, Obj, Schema, Str
from mps.http.uploads import Upload
from mps.persistence.queries import companies
from mps.persistence.queries import kyc as q
from mps.representations.kyc import document_json, status_json

__all__ = ["ROUTES"]

# Enough of the file's start for any of the accepted formats to show what it is.
SNIFF_BYTES = 8192
SEALED_KEY_PURPOSE = purposes.KYC_DOCUMENT_KEY
_FILE_NAME = re.compile(r"[^A-Za-z0-9 ._()-]")


def _safe_name(name: str | None) -> str:
    """The declared file name, kept for people to read, never used as a path or a type."""
    cleaned = _FILE_NAME.sub("_", (name or "").rsplit("/", 1)[-1].rsplit("\\", 1)[-1]).strip()
    return cleaned[:200] or "document"


# What aiohttp's multipart parser raises for a body that is not a well-formed form.
_MALFORMED = (ValueError, AssertionError, RuntimeError, LookupError)


def _malformed(exc: Exception) -> BadRequest:
    return BadRequest(f"The body is not a well-formed multipart form: {exc}"[:300])


async def _parts(request: web.Request) -> MultipartReader:
    if request.content_type != "multipart/form-data":
        msg = "Upload documents as multipart/form-data with the parts type and file"
        raise UnsupportedMedia(msg)
    try:
        return await request.multipart()
    except _MALFORMED as exc:
        raise _malformed(exc) from exc


async def _read(part: BodyPartReader, size: int) -> bytes:
    try:
        return await part.read_chunk(size)
    except _MALFORMED as exc:
        raise _malformed(exc) from exc


async def _next_part(reader: MultipartReader) -> object | None:
    try:
        return await reader.next()
    except _MALFORMED as exc:
        raise _malformed(exc) from exc


class _Metered:
    """The plaintext of the file part: counted and hashed as it streams, refused past `limit`
    (the store sees only sealed bytes, so the limit and the hash are taken here)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0
        self.sha256 = hashlib.sha256()

    async def chunks(self, head: bytes, part: BodyPartReader) -> AsyncIterator[bytes]:
        chunk = head
        while chunk:
            self.size += len(chunk)
            if self.size > self.limit:
                raise TooLarge(self.limit)
            self.sha256.update(chunk)
            yield chunk
            chunk = await _read(part, 64 * 1024)


async def _sniffed(part: BodyPartReader) -> tuple[bytes, str | None]:
    """The part's first bytes and the content type they show."""
    head = b""
    while len(head) < SNIFF_BYTES:
        chunk = await _read(part, SNIFF_BYTES - len(head))
        if not chunk:
            break
        head += chunk
    return head, detect(head)


async def receive_document(call: Call) -> Upload:
    """Stream the `file` part to storage; the `type` part and what the file turned out to be
    are the request's fields. Nothing stays stored when the upload is refused."""
    session, services = call.session, call.services
    shards = services.shards
    if shards.clustered and not shards.owns(session.company_id):
        raise ShardElsewhere(shards.index(session.company_id))
    reader = await _parts(call.request)
    store = services.objects
    document_id = new_id("doc")
    key = f"kyc/{session.company_id}/{session.mode}/{document_id}"
    fields: dict[str, Any] = {}
    stored = None
    limit = services.settings.kyc_max_upload_bytes
    data_key = new_data_key()
    try:
        while (part := await _next_part(reader)) is not None:
            if not isinstance(part, BodyPartReader):
                raise ValidationFailed([FieldError("file", "must be a file, not a nested form")])
            if part.name == "type":
                fields["type"] = (await _read(part, 256)).decode("utf-8", "replace").strip()
            elif part.name == "file" and stored is None:
                head, content_type = await _sniffed(part)
                if not head:
                    raise ValidationFailed([FieldError("file", "is empty")])
                if content_type not in ALLOWED:
                    msg = "must be a PDF, JPEG or PNG file (judged by its content)"
                    raise ValidationFailed([FieldError("file", msg)])
                plain = _Metered(limit)
                try:
                    stored = await store.put(
                        key,
                        seal_stream(plain.chunks(head, part), data_key),
                        content_type="application/octet-stream",
                        max_bytes=sealed_size(limit),
                    )
                except TooLarge as exc:
                    msg = f"Uploads are limited to {limit // (1024 * 1024)} MiB"
                    raise PayloadTooLarge(msg) from exc
                fields.update(
                    fileName=_safe_name(part.filename),
                    contentType=content_type,
                    sizeBytes=plain.size,
                    sha256=plain.sha256.hexdigest(),
                )
            else:
                name = "file" if part.name == "file" else part.name or "(unnamed)"
                message = (
                    "is given more than once" if part.name == "file" else "is not a known part"
                )
                raise ValidationFailed([FieldError(name, message)])
        errors = []
        if fields.get("type") not in DOCUMENT_TYPES:
            errors.append(FieldError("type", f"must be one of {', '.join(DOCUMENT_TYPES)}"))
        if stored is None:
            errors.append(FieldError("file", "is required"))
        if errors:
            raise ValidationFailed(errors)
    except BaseException:
        if stored is not None:
            await store.delete(key)
        raise

    async def discard() -> None:
        await store.delete(key)

    sealed_key = services.keyring.seal(data_key, SEALED_KEY_PURPOSE)
    return Upload(fields, key, discard, private={"sealedKey": sealed_key})


async def upload_document(call: Call) -> Resource:
    session, services, upload = call.session, call.services, call.upload
    assert upload is not None
    fields = upload.fields
    document = KycDocument(
        id=upload.location.rsplit("/", 1)[-1],
        company_id=session.company_id,
        mode=session.mode,
        type=fields["type"],
        status="PENDING",
        file_name=fields["fileName"],
        content_type=fields["contentType"],
        size_bytes=fields["sizeBytes"],
        sha256=fields["sha256"],
        storage_key=upload.location,
        sealed_key=upload.private["sealedKey"],
        uploaded_by=session.user_id,
        created_at=iso(services.clock()),
    )
    idem = call.idempotent(lambda result: Resource(document_json(result[0]), 201))
    upload.keep()
    try:
        stored, _status = await services.shards.ask_company(
            session.company_id, RecordKycDocument(document, call.audit(), idempotency=idem)
        )
    except Exception as exc:
        if not isinstance(exc, Unavailable):
            # Refused for certain (nothing committed): the bytes go too. After an unknown
            # outcome the orphan sweep decides, once it can see whether the row landed.
            await services.objects.delete(upload.location)
        raise
    return Resource(document_json(stored), 201)


async def kyc_status(call: Call) -> Resource:
    session, db = call.session, call.services.database
    company = await companies.company(db, session.company_id)
    review = await q.latest_review(db, session.company_id, session.mode)
    documents = await q.count_documents(db, session.company_id, session.mode)
    status = company.settings[session.mode].kyc_status
    return Resource(status_json(session.mode, status, review, documents))


async def list_documents(call: Call) -> Page:
    return await page_in_mode(
        call, call.session, q.list_documents, document_json, status=call.query.get("status")
    )


async def _document(call: Call) -> KycDocument:
    return await one_in_mode(call, call.session, q.get_document, "No such document")


async def get_document(call: Call) -> Resource:
    return Resource(document_json(await _document(call)))


async def download_document(call: Call) -> web.StreamResponse:
    """The file as uploaded, with the type its content showed; audited before it is sent."""
    document = await _document(call)
    services = call.services
    await services.shards.ask_company(
        document.company_id,
        RecordAudit("kyc.document_downloaded", ("kyc_document", document.id), {}, call.audit()),
    )
    name = f"{document.id}.{EXTENSIONS[document.content_type]}"
    response = web.StreamResponse(
        headers={
            "Content-Type": document.content_type,
            "Content-Disposition": f'attachment; filename="{name}"',
            "Cache-Control": "no-store",
            "X-Request-Id": call.request_id,
        }
    )
    response.content_length = document.size_bytes
    data_key = services.keyring.unseal(document.sealed_key, SEALED_KEY_PURPOSE)
    async with services.objects.get(document.storage_key) as body:
        plain = open_stream(body, data_key)
        # The first segment opens before anything is sent: a file that does not open at all is
        # an error answer, not a broken download.
        first = await anext(plain, b"")
        await response.prepare(call.request)
        await response.write(first)
        async for chunk in plain:
            await response.write(chunk)
    await response.write_eof()
    return response


_DOCUMENT_FIELDS: dict[str, Schema] = {
    "id": Str(description="doc_…"),
    "type": Enum(list(DOCUMENT_TYPES)),
    "status": Enum(["PENDING", "ACCEPTED", "REJECTED"], description="The review's outcome."),
    "fileName": Str(description="The name it was uploaded under; never used as a type."),
    "contentType": Enum(sorted(ALLOWED), description="What the content was judged to be."),
    "sizeBytes": Int(),
    "sha256": Str(pattern=r"[0-9a-f]{64}"),
    "createdAt": Str(format="date-time"),
    "reviewedAt": Str(format="date-time", nullable=True),
}
DOCUMENT = named("KycDocument", _DOCUMENT_FIELDS)
_STATUS_FIELDS: dict[str, Schema] = {
    "mode": MODE,
    "status": Enum(list(STATUSES)),
    "documentCount": Int(),
    "reason": Str(nullable=True, description="Why the last review rejected, if it did."),
    "reviewedAt": Str(format="date-time", nullable=True),
}
UPLOAD_FORM = Obj(
    {
        "type": Enum(list(DOCUMENT_TYPES)),
        "file": Str(format="binary", description="PDF, JPEG or PNG, at most 10 MiB."),
    },
    required=["type", "file"],
)

_kyc = RouteFamily("kyc", read="settings:read", write="settings:write")

ROUTES = [
    _kyc.get(
        "/merchant/kyc",
        kyc_status,
        "The company's identity-verification status in this mode",
        response=resource(_STATUS_FIELDS),
    ),
    _kyc.post(
        "/merchant/kyc/documents",
        upload_document,
        "Upload an identity document (multipart: type, file)",
        status=201,
        upload=receive_document,
        form=UPLOAD_FORM,
        response=resource(DOCUMENT),
    ),
    _kyc.get(
        "/merchant/kyc/documents",
        list_documents,
        "List uploaded documents, newest first",
        query=Obj({**PAGE_FIELDS, "status": Enum(["PENDING", "ACCEPTED", "REJECTED"])}),
        response=page(DOCUMENT),
    ),
    _kyc.get(
        "/merchant/kyc/documents/{id}",
        get_document,
        "Retrieve a document's record",
        response=resource(DOCUMENT),
    ),
    _kyc.get(
        "/merchant/kyc/documents/{id}/file",
        download_document,
        "Download a document's file (audited)",
        scope="settings:write",
        produces="application/octet-stream",
    ),
]
