"""Verified credentials, cached, so a request costs no database round trip to authenticate.

The first request with a session token or API key verifies it in full (the JWT's signature and
claims through PyJWT, then the session or key row, the member's role and the company's pinned
version, in one read). The principal is then kept in memory, keyed by the exact token string: a
later request presenting the same string is the same verified credential, so its HMAC is checked
once per token, not once per request.

A revocation must still be refused (interface 2: "revoked at once, on every node"):

* on this node at once: the revoking request drops the entries before it answers;
* on every other node through the broker: `credentials.forget` is published to every node (a
  queue per node), which drops the same entries, typically within milliseconds;
* should a node miss a message (its broker connection was down), every entry is verified again
  at least every `revalidate_after` seconds, and a reconnect to the broker empties the cache.

An entry also ends at the credential's own expiry. A read that raced a revocation (it began
before the revocation and finished after) is answered but not cached, so a revoked credential
cannot be re-cached from a stale read.

Cluster behaviour: each node has its own cache; only the forget messages are shared. Bounded:
at most `capacity` entries, least recently used first out.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

from mps.adapters.broker import Broker
from mps.auth.authenticate import authenticate_api_key, authenticate_session
from mps.auth.keyring import Keyring
from mps.auth.principals import ApiKeyPrincipal, Principal, SessionPrincipal
from mps.auth.tokens import SessionTokens
from mps.domain.clock import Clock
from mps.errors import Unauthenticated
from mps.persistence.database import Database

__all__ = ["FORGET_ROUTING_KEY", "Credentials"]

logger = logging.getLogger(__name__)

FORGET_ROUTING_KEY = "credentials.forget"
_KINDS = ("session", "key", "company")


@dataclass(slots=True)
class _Entry:
    principal: Principal
    # The credential's own end (a session's expiry); None for API keys, which do not expire.
    expires_at: datetime | None
    verified_at: float


class Credentials:
    def __init__(
        self,
        tokens: SessionTokens,
        keyring: Keyring,
        database: Database,
        clock: Clock,
        *,
        capacity: int = 100_000,
        revalidate_after: float = 30.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._tokens = tokens
        self._keyring = keyring
        self._database = database
        self._clock = clock
        self._monotonic = monotonic
        self.capacity = capacity
        self.revalidate_after = revalidate_after
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        # kind -> id -> tokens cached under it, to drop every entry a revocation concerns.
        self._index: dict[str, dict[str, set[str]]] = {kind: {} for kind in _KINDS}
        # Bumped by every forget: a read that saw it change must not cache what it read.
        self._epoch = 0
        self._broker: Broker | None = None
        self.hits = 0
        self.misses = 0

    # Authentication --------------------------------------------------------------------------

    async def session(self, token: str) -> SessionPrincipal:
        principal = self._cached(token)
        if principal is None:
            epoch = self._epoch
            found = await authenticate_session(token, self._tokens, self._database, self._clock)
            self._remember(token, found.principal, found.expires_at, epoch)
            return found.principal
        if not isinstance(principal, SessionPrincipal):
            raise Unauthenticated("The session token is not valid")
        return principal

    async def api_key(self, token: str) -> ApiKeyPrincipal:
        principal = self._cached(token)
        if principal is None:
            epoch = self._epoch
            key = await authenticate_api_key(token, self._keyring, self._database)
            self._remember(token, key, None, epoch)
            return key
        if not isinstance(principal, ApiKeyPrincipal):
            raise Unauthenticated("The API key is not valid or has been revoked")
        return principal

    def _cached(self, token: str) -> Principal | None:
        entry = self._entries.get(token)
        if entry is None:
            self.misses += 1
            return None
        if (
            entry.expires_at is not None and self._clock() >= entry.expires_at
        ) or self._monotonic() - entry.verified_at >= self.revalidate_after:
            self._drop(token)
            self.misses += 1
            return None
        self._entries.move_to_end(token)
        self.hits += 1
        return entry.principal

    def _remember(
        self, token: str, principal: Principal, expires_at: datetime | None, epoch: int
    ) -> None:
        if epoch != self._epoch:
            return
        self._drop(token)
        self._entries[token] = _Entry(principal, expires_at, self._monotonic())
        for kind, ident in _subjects(principal):
            self._index[kind].setdefault(ident, set()).add(token)
        while len(self._entries) > self.capacity:
            self._drop(next(iter(self._entries)))

    def _drop(self, token: str) -> None:
        entry = self._entries.pop(token, None)
        if entry is None:
            return
        for kind, ident in _subjects(entry.principal):
            tokens = self._index[kind].get(ident)
            if tokens is not None:
                tokens.discard(token)
                if not tokens:
                    del self._index[kind][ident]

    def __len__(self) -> int:
        return len(self._entries)

    # Revocation ------------------------------------------------------------------------------

    async def forget_session(self, session_id: str) -> None:
        """A session was revoked: refuse it here at once, and on every node shortly after."""
        await self._forget("session", session_id)

    async def forget_key(self, key_id: str) -> None:
        await self._forget("key", key_id)

    async def forget_company(self, company_id: str) -> None:
        """Something every credential of the company carries changed (its pinned version, a
        member's role, which also bounds the keys that member created): verify each again on
        its next use."""
        await self._forget("company", company_id)

    async def _forget(self, kind: str, ident: str) -> None:
        self.forget_locally(kind, ident)
        if self._broker is None:
            return
        body = orjson.dumps({"kind": kind, "id": ident})
        try:
            await self._broker.publish(FORGET_ROUTING_KEY, body)
        except Exception:
            # The revocation is committed and this node refuses it already; other nodes verify
            # again within `revalidate_after`. Not a reason to fail the request.
            logger.warning("could not tell other nodes of a %s revocation", kind, exc_info=True)

    def forget_locally(self, kind: str, ident: str) -> None:
        if kind not in _KINDS:
            return
        self._epoch += 1
        for token in list(self._index[kind].get(ident, ())):
            self._drop(token)

    def clear(self) -> None:
        self._epoch += 1
        self._entries.clear()
        for index in self._index.values():
            index.clear()

    async def attach(self, broker: Broker) -> None:
        """Take other nodes' revocations from the broker, and publish ours there."""
        await broker.subscribe_broadcast(FORGET_ROUTING_KEY, self._on_forget)
        broker.on_reconnect(self.clear)
        self._broker = broker

    async def _on_forget(self, body: bytes) -> None:
        try:
            message: dict[str, Any] = orjson.loads(body)
            kind, ident = message["kind"], message["id"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            logger.warning("ignored a malformed credentials.forget message")
            return
        if isinstance(kind, str) and isinstance(ident, str):
            self.forget_locally(kind, ident)


def _subjects(principal: Principal) -> tuple[tuple[str, str], ...]:
    if isinstance(principal, SessionPrincipal):
        return (("session", principal.session_id), ("company", principal.company_id))
    return (("key", principal.key_id), ("company", principal.company_id))
