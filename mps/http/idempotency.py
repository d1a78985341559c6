"""Idempotency-Key on every POST under /merchant, /team and /developer/sandbox, and on checkout
(decisions 16), as one mechanism in the request pipeline.

1. The key is claimed with the company actor, which serializes claims: a stored response for
   the same request is replayed byte for byte (with `Idempotent-Replayed: true`); a stored one
   for a different request is 422; a key still in flight makes this request wait, then look
   again.
2. The handler hands the claim to the command it sends; the actor committing the change asks
   the claim for the row that stores the rendered response, in the same unit.
3. Whatever happens, the key is released. A failed request stored nothing, so the key is free.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import orjson
from aiohttp import web

from mps.actors.company import ClaimKey, ReleaseKey
from mps.domain.clock import iso
from mps.errors import BadRequest, Unavailable
from mps.http.render import reply_body
from mps.http.replies import Reply
from mps.http.versions import apply_transforms, version_headers
from mps.persistence.statements import Row, Statement, upsert
from mps.services import Services

__all__ = ["Claim", "fingerprint", "run_idempotent", "validate_key"]

KEY_TTL = timedelta(hours=24)
SEAL_PURPOSE = "idempotent-response"
_PRINTABLE = re.compile(r"[\x20-\x7e]{1,255}")
# A duplicate waits this long for the first request before giving up with 503.
WAIT_LIMIT = 30.0


def validate_key(key: str) -> str:
    if not _PRINTABLE.fullmatch(key):
        msg = "Idempotency-Key must be 1 to 255 printable ASCII characters"
        raise BadRequest(msg, code="validation_error")
    return key


def fingerprint(method: str, path: str, mode: str, body: Any) -> str:
    canonical = orjson.dumps([method, path, mode, body], option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).hexdigest()


@dataclass
class Claim:
    """The right to run a request under a key, and the means to store its response."""

    scope: str
    key: str
    fingerprint: str
    request_id: str
    version: str
    created_at: str
    expires_at: str
    seal: Callable[[bytes], str] = field(repr=False)
    present: Callable[[Any], Reply] | None = None
    stored: tuple[int, bytes, dict[str, str]] | None = field(default=None, repr=False)

    def statement(self, result: Any) -> Statement:
        assert self.present is not None, "the handler did not say how to present the result"
        return self.record(self.present(result))

    def record(self, reply: Reply) -> Statement:
        status, body = reply_body(reply, self.request_id)
        raw = orjson.dumps(apply_transforms(body, self.version))
        headers = {"X-Request-Id": self.request_id, **version_headers(self.version)}
        self.stored = (status, raw, headers)
        return self.row(status, raw, headers)

    def row(self, status: int, raw: bytes, headers: dict[str, str]) -> Statement:
        # Responses can carry secrets (a new API key is shown once), so they rest sealed.
        columns = {
            "company_id": self.scope,
            "idem_key": self.key,
            "fingerprint": self.fingerprint,
            "status_code": status,
            "headers": orjson.dumps(headers).decode(),
            "body": self.seal(raw),
            "created_at": self.created_at,
            "expires_at": self.expires_at,
        }
        return upsert("idempotency_keys", columns, key=("company_id", "idem_key"))


def _replay(row: Row, services: Services) -> web.Response:
    headers = orjson.loads(row["headers"])
    response = web.Response(
        status=row["status_code"],
        body=services.keyring.unseal(row["body"], SEAL_PURPOSE),
        content_type="application/json",
        headers=headers,
    )
    response.headers["Idempotent-Replayed"] = "true"
    return response


def stored_response(claim: Claim) -> web.Response | None:
    if claim.stored is None:
        return None
    status, raw, headers = claim.stored
    return web.Response(status=status, body=raw, content_type="application/json", headers=headers)


async def run_idempotent(
    services: Services,
    company_id: str,
    claim: Claim,
    run: Callable[[Claim], Awaitable[web.StreamResponse]],
) -> web.StreamResponse:
    """Run the request under `claim.key` with the company actor `company_id` serializing it."""
    message = ClaimKey(claim.key, claim.fingerprint)
    while True:
        found = await services.shards.ask_company(company_id, message)
        if isinstance(found, asyncio.Future):
            try:
                async with asyncio.timeout(WAIT_LIMIT):
                    await asyncio.shield(found)
            except TimeoutError as exc:
                msg = "An earlier request with this Idempotency-Key is still running"
                raise Unavailable(msg) from exc
            continue
        if found is not None:
            return _replay(found, services)
        break
    try:
        response = await run(claim)
        if 200 <= response.status < 300 and claim.stored is None:
            # The route's actor stored nothing (it created nothing); keep the response anyway
            # so a retry replays it instead of running again.
            await _store_late(services, claim, response)
        return response
    finally:
        await services.shards.ask_company(company_id, ReleaseKey(claim.key))


async def _store_late(services: Services, claim: Claim, response: web.StreamResponse) -> None:
    if not isinstance(response, web.Response) or not isinstance(response.body, bytes):
        return
    headers = {"X-Request-Id": claim.request_id, **version_headers(claim.version)}
    await services.actors.commit(claim.row(response.status, response.body, headers))


def new_claim(
    services: Services, scope: str, key: str, digest: str, request_id: str, version: str
) -> Claim:
    now = services.clock()
    keyring = services.keyring
    return Claim(
        scope=scope,
        key=key,
        fingerprint=digest,
        request_id=request_id,
        version=version,
        created_at=iso(now),
        expires_at=iso(now + KEY_TTL),
        seal=lambda raw: keyring.seal(raw, SEAL_PURPOSE),
    )
