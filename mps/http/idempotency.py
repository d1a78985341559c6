"""Idempotency-Key on every POST under /merchant, /team and /developer/sandbox, and on checkout
(decisions 16), as one mechanism in the request pipeline.

1. The key is claimed with the company actor, which decides in memory: the key is marked in
   flight at once, and a duplicate arriving meanwhile waits for the first request to finish,
   then claims again. The claim costs the actor no I/O.
2. Outside the actor, the holder looks for a stored response: one for the same request is
   replayed byte for byte (with `Idempotent-Replayed: true`); one for a different request is 422.
   A route whose only effect is its committed unit (`Route.commits_key`) skips this read: it
   runs at once, and looks only when the run fails (a retried cancel finds the payment
   cancelled already) or its commit is refused by the key's row (step 4).
3. Otherwise the handler runs and hands the claim to the command it sends; the actor committing
   the change asks the claim for the row that stores the rendered response, in the same unit.
4. That row is the final guard. It is inserted only if the key holds no live response, so if two
   requests ever ran under one key (the company actor crashed between claim and commit and lost
   its in-flight marks), the second unit rolls back with `KeyAlreadyStored` and the second
   request replays the first one's response instead of creating a duplicate.
5. Whatever happens, the key is released. A failed request stored nothing, so the key is free.

Writes: the stored response is a statement of `mps.persistence.queries.idempotency`
(`store_response`), committed in the unit of the change by the actor that makes it. The two
written from the request's side, after its actor answered, are the same named statements handed
to the writer (`services.actors.commit`): the late store of a response whose route stored
nothing (`_store_late`), and the body replaced by a route that learns its answer after its
commit (`replace_body`, mps.http.mailed). Neither holds SQL here.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import orjson
from aiohttp import web

from mps.actors.company import ClaimKey, ReleaseKey
from mps.actors.shards import ShardElsewhere
from mps.auth.keyring import Keyring
from mps.domain import purposes
from mps.domain.clock import iso
from mps.errors import BadRequest, KeyAlreadyStored, ServiceError, Unavailable, Unprocessable
from mps.http.render import reply_body
from mps.http.replies import Reply
from mps.http.versions import apply_transforms, version_headers
from mps.persistence.queries import idempotency as stored_keys
from mps.persistence.statements import Row, Statement
from mps.services import Services

__all__ = ["Claim", "fingerprint", "run_idempotent", "validate_key"]

KEY_TTL = timedelta(hours=24)
SEAL_PURPOSE = purposes.IDEMPOTENT_RESPONSE
_PRINTABLE = re.compile(r"[\x20-\x7e]{1,255}")
# A duplicate waits this long for the first request before giving up with 503.
WAIT_LIMIT = 30.0


def validate_key(key: str) -> str:
    if not _PRINTABLE.fullmatch(key):
        msg = "Idempotency-Key must be 1 to 255 printable ASCII characters"
        raise BadRequest(msg, code="validation_error")
    return key


def fingerprint(method: str, path: str, mode: str, body: Any, keyring: Keyring) -> str:
    """What tells a repeat of a request from a different one under the same key. Keyed: a
    body may hold a secret (a bank account number, a card), and an unkeyed hash of a body
    whose other fields are known would let a copy of the database guess it."""
    canonical = orjson.dumps([method, path, mode, body], option=orjson.OPT_SORT_KEYS)
    return keyring.fingerprint(canonical)


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

    def statements(self, result: Any) -> list[Statement]:
        assert self.present is not None, "the handler did not say how to present the result"
        return self.record(self.present(result))

    def discard(self) -> None:
        self.stored = None

    def record(self, reply: Reply) -> list[Statement]:
        status, body = reply_body(reply, self.request_id)
        raw = orjson.dumps(apply_transforms(body, self.version))
        headers = {"X-Request-Id": self.request_id, **version_headers(self.version)}
        self.stored = (status, raw, headers)
        return self.row(status, raw, headers)

    def row(self, status: int, raw: bytes, headers: dict[str, str]) -> list[Statement]:
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
        return stored_keys.store_response(columns)


def _replay(row: Row, claim: Claim, services: Services) -> web.Response:
    if row["fingerprint"] != claim.fingerprint:
        raise Unprocessable(
            "This Idempotency-Key was used with a different request; use a new key "
            "for a new request"
        )
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
    *,
    look_first: bool = True,
) -> web.StreamResponse:
    """Run the request under `claim.key` with the company actor `company_id` serializing it.
    `look_first=False` only for routes whose sole effect is the unit that stores the key."""
    message = ClaimKey(claim.key)
    while True:
        waiter = await services.shards.ask_company(company_id, message)
        if waiter is None:
            break
        try:
            async with asyncio.timeout(WAIT_LIMIT):
                await asyncio.shield(waiter)
        except TimeoutError as exc:
            msg = "An earlier request with this Idempotency-Key is still running"
            raise Unavailable(msg) from exc
    try:
        if look_first and (found := await _stored(services, claim)) is not None:
            return _replay(found, claim, services)
        try:
            response = await run(claim)
            if 200 <= response.status < 300 and claim.stored is None:
                # The route's actor stored nothing (it created nothing); keep the response
                # anyway so a retry replays it instead of running again.
                await _store_late(services, claim, response)
        except KeyAlreadyStored:
            found = await _stored(services, claim)
            if found is None:
                # Stored a moment ago and already gone: only an expiry racing the request.
                msg = "This Idempotency-Key changed hands during the request; retry it"
                raise Unavailable(msg) from None
            return _replay(found, claim, services)
        except ServiceError:
            if look_first or (found := await _stored(services, claim)) is None:
                raise
            return _replay(found, claim, services)
        if not look_first and response.status >= 300:
            found = await _stored(services, claim)
            if found is not None:
                return _replay(found, claim, services)
        return response
    finally:
        # Told, not asked: nothing waits on the release but the duplicates it wakes. A shard
        # handed over meanwhile took the claim with its actor: nothing is left to release.
        with contextlib.suppress(ShardElsewhere):
            await services.shards.tell_company(company_id, ReleaseKey(claim.key))


async def _stored(services: Services, claim: Claim) -> Row | None:
    return await stored_keys.live_response(
        services.database, claim.scope, claim.key, iso(services.clock())
    )


async def _store_late(services: Services, claim: Claim, response: web.StreamResponse) -> None:
    if not isinstance(response, web.Response) or not isinstance(response.body, bytes):
        return
    headers = {"X-Request-Id": claim.request_id, **version_headers(claim.version)}
    await services.actors.commit(*claim.row(response.status, response.body, headers))


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
