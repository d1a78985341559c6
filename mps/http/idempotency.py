"""Idempotency-Key on every POST under /merchant, /team and /developer/sandbox, and on checkout
(decisions 16), as one mechanism in the request pipeline.

A route whose only effect is the unit its command commits (`Route.commits_key`: payments'
create and cancel, refunds, payouts and bank accounts, invoices' mark-paid and cancel, API keys'
create and revoke, cards' issue, freeze, unfreeze, terminate, funding and withdrawal, custom
roles, the ownership transfer, an invitation's revocation, webhook endpoints' create and secret
rotation, an approval's cancel) sends its request to its actor once:

1. The claim travels inside the command (`Claim` is a `CarriedKey`). The actor that receives it
   marks the key in flight in the turn that decides the command and keeps it marked until the
   command's reply is settled (mps.actors.runtime): a duplicate arriving meanwhile is answered
   `KeyInFlight` without being decided, waits here for the first request, and is sent again.
2. Nothing is looked up first. The actor committing the change asks the claim for the row that
   stores the rendered response, in the same unit; that row is inserted only if the key holds
   no live response, so a request repeated after its first succeeded is refused at commit
   (`KeyAlreadyStored`) and replays what is stored: byte for byte, with `Idempotent-Replayed:
   true`, or 422 when the stored one was a different request. A run that fails looks too (a
   retried cancel finds the payment cancelled already, and replays the cancel that did it).

Every other keyed route (its handler calls the card processor, sends mail or otherwise acts
before its command commits, or answers from something no command decides) claims first, with
the company actor, in a message of its own:

1. `ClaimKey`: the key is marked in flight (in the same table as carried claims), and a
   duplicate arriving meanwhile waits for the first request to finish, then claims again.
2. Outside the actor, the holder looks for a stored response: one for the same request is
   replayed; one for a different request is 422.
3. Otherwise the handler runs and hands the claim to the command it sends, whose unit stores the
   response as above; that row is the final guard here too, should two requests ever run under
   one key (the company actor crashed between claim and commit and lost its in-flight marks).
4. Whatever happens, the key is released (`ReleaseKey`), by the claim's own token: a request
   cancelled while its `ClaimKey` was being answered (its deadline) cannot tell whether it took
   the key, and a release by token frees the key only if it did. A failed request stored
   nothing, so the key is free.

The response is rendered once: the claim renders it for the stored row, the pipeline answers
with those same bytes, and `presented` gives the handler the reply already built.

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
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypeVar, cast

import orjson
from aiohttp import web

from mps.actors.company import ClaimKey, ReleaseKey
from mps.actors.idempotency import CarriedKey, KeyInFlight
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

__all__ = ["Claim", "fingerprint", "presented", "run_idempotent", "validate_key"]

R = TypeVar("R", bound=Reply)

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
class Claim(CarriedKey):
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
    # The reply rendered for the stored response, and its status, body and headers.
    reply: Reply | None = field(default=None, repr=False)
    stored: tuple[int, bytes, dict[str, str]] | None = field(default=None, repr=False)
    # The key is claimed by the actor that decides the command carrying this claim (one hop),
    # rather than asked for apart (`ClaimKey`); `_armed` while no actor has taken it yet.
    carried: bool = False
    _armed: bool = field(default=False, repr=False)

    def take_key(self) -> str | None:
        if not self._armed:
            return None
        self._armed = False
        return self.key

    def arm(self) -> None:
        self._armed = self.carried

    def statements(self, result: Any) -> list[Statement]:
        assert self.present is not None, "the handler did not say how to present the result"
        return self.record(self.present(result))

    def discard(self) -> None:
        self.reply = None
        self.stored = None

    def record(self, reply: Reply) -> list[Statement]:
        status, body = reply_body(reply, self.request_id)
        raw = orjson.dumps(apply_transforms(body, self.version))
        headers = {"X-Request-Id": self.request_id, **version_headers(self.version)}
        self.reply = reply
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


def presented(claim: Claim | None, result: Any, present: Callable[[Any], R]) -> R:
    """What a handler returns for `result`: the reply its claim already rendered for the stored
    response (the pipeline answers with those bytes), or else `present(result)`. `present` is
    what the handler gave `call.idempotent`, so the claim's reply is of its kind."""
    if claim is not None and claim.stored is not None and claim.reply is not None:
        return cast("R", claim.reply)
    return present(result)


async def run_idempotent(
    services: Services,
    company_id: str,
    claim: Claim,
    run: Callable[[Claim], Awaitable[web.StreamResponse]],
    *,
    carried: bool = False,
) -> web.StreamResponse:
    """Run the request under `claim.key`. `carried=True` only for routes whose sole effect is
    the unit that stores the key: the claim then goes with the command to its actor; otherwise
    the company actor `company_id` is asked for it first."""
    if carried:
        return await _run_carried(services, claim, run)
    # The company's mailbox takes the release after the claim, so a release by this token
    # reaches a claim still being answered when the request gave up.
    owner = secrets.token_hex(8)
    message = ClaimKey(claim.key, owner)
    try:
        while True:
            waiter = await services.shards.ask_company(company_id, message)
            if waiter is None:
                break
            await _wait_for(waiter)
        if (found := await _stored(services, claim)) is not None:
            return _replay(found, claim, services)
        try:
            response = await run(claim)
            if 200 <= response.status < 300 and claim.stored is None:
                # The route's actor stored nothing (it created nothing); keep the response
                # anyway so a retry replays it instead of running again.
                await _store_late(services, claim, response)
        except KeyAlreadyStored:
            return await _replay_stored(services, claim)
        return response
    finally:
        # Told, not asked: nothing waits on the release but the duplicates it wakes. Shielded:
        # a request cancelled again while it releases must still release. A shard handed over
        # meanwhile took the claim with its actor: nothing is left to release.
        release = services.shards.tell_company(company_id, ReleaseKey(claim.key, owner))
        with contextlib.suppress(ShardElsewhere):
            await asyncio.shield(release)


async def _run_carried(
    services: Services, claim: Claim, run: Callable[[Claim], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    claim.carried = True
    try:
        while True:
            claim.arm()
            try:
                response = await run(claim)
                break
            except KeyInFlight as busy:
                # Nothing was decided: the handler runs again once the holder is done.
                await _wait_for(busy.done)
        if 200 <= response.status < 300 and claim.stored is None:
            await _store_late(services, claim, response)
    except KeyAlreadyStored:
        return await _replay_stored(services, claim)
    except ServiceError:
        if (found := await _stored(services, claim)) is None:
            raise
        return _replay(found, claim, services)
    if response.status >= 300 and (found := await _stored(services, claim)) is not None:
        return _replay(found, claim, services)
    return response


async def _wait_for(holder: asyncio.Future[None]) -> None:
    """Wait for the request holding a key to finish, at most `WAIT_LIMIT` seconds."""
    try:
        async with asyncio.timeout(WAIT_LIMIT):
            await asyncio.shield(holder)
    except TimeoutError as exc:
        msg = "An earlier request with this Idempotency-Key is still running"
        raise Unavailable(msg) from exc


async def _replay_stored(services: Services, claim: Claim) -> web.Response:
    """The answer to a unit refused because the key holds a response: that response."""
    found = await _stored(services, claim)
    if found is None:
        # Stored a moment ago and already gone: only an expiry racing the request.
        msg = "This Idempotency-Key changed hands during the request; retry it"
        raise Unavailable(msg) from None
    return _replay(found, claim, services)


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
