"""How an actor commits an idempotency key together with what the request created (decisions 16).

A command carries an `IdempotencyRecord` for the request's key. The actor that commits the
request's change asks the record for its statements, passing the command's result, and commits
them in the same unit: either both the change and the stored response exist, or neither does.

A record may also carry the key's claim (`CarriedKey`): the actor that receives the command then
marks the key in flight in the very turn that decides the command, and keeps it marked until the
command's handling ends (its unit committed or failed, even when its caller gave up before), so
the request reaches its actor once.
A second command under a key still in flight is not decided: its caller gets `KeyInFlight`, waits
for the first request, and sends it again. The actor's marks are in memory only; the stored
response's row, inserted only where the key holds no live response, stays the final guard
(`KeyAlreadyStored`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Protocol

from mps.persistence.statements import Statement

__all__ = [
    "CarriedKey",
    "IdempotencyRecord",
    "IdempotentCommand",
    "KeyInFlight",
    "KeysInFlight",
    "carried_key",
]


class IdempotencyRecord(Protocol):
    def statements(self, result: Any) -> list[Statement]:
        """The writes that store the response this result will be rendered as."""
        ...

    def discard(self) -> None:
        """The unit given the last statements did not commit, and its caller answers anyway
        (an approved action another run executed first): what they stored is no response."""
        ...


@dataclass(frozen=True, kw_only=True)
class IdempotentCommand:
    """A command that may carry its request's record; the actor deciding it commits the
    record's statements in its change's unit. Keyword-only: it comes after whatever fields a
    command declares, which keep their places."""

    idempotency: IdempotencyRecord | None = None


class CarriedKey:
    """A record whose key is claimed by the actor that decides its command.

    Taken once: the first actor to receive a command carrying it claims the key; a command it
    sends on with the same record (a refund asking its company for an approval) does not claim
    the key again, so an actor never waits on a key its own request holds. `arm` gives the claim
    back to the record for a fresh attempt (the caller sending the command again)."""

    __slots__ = ()

    def take_key(self) -> str | None:
        """The key to claim, once; None when it is claimed already or held by the caller."""
        return None

    def arm(self) -> None:
        """The next command to carry this record claims its key again."""


def carried_key(message: Any) -> CarriedKey | None:
    """The record of `message` (its `idempotency` field, by convention of every command that
    takes one) when it carries its key's claim."""
    record = getattr(message, "idempotency", None)
    return record if isinstance(record, CarriedKey) else None


class KeyInFlight(Exception):
    """The command's key is held by another request in this actor; nothing was decided. Await
    `done` (settled when that request's handling ends), then send the command again."""

    def __init__(self, key: str, done: asyncio.Future[None]) -> None:
        super().__init__(f"Idempotency-Key {key!r} is held by a request still running")
        self.done = done


class KeysInFlight:
    """The keys whose request is running in one actor, each with the future its duplicates wait
    on, and the owner a claim asked for apart names (mps.actors.company.claims). Run on the
    actor's loop only."""

    __slots__ = ("_owners", "_waiters")

    def __init__(self) -> None:
        self._waiters: dict[str, asyncio.Future[None]] = {}
        # key -> the token of the request that claimed it with `ClaimKey`; carried claims,
        # released by the runtime itself, name none.
        self._owners: dict[str, str] = {}

    def __bool__(self) -> bool:
        return bool(self._waiters)

    def claim(self, key: str, owner: str | None = None) -> asyncio.Future[None] | None:
        """None when the key is now in flight for the caller (`owner`, when it names one);
        else the future of the request that holds it. The key is marked before anything is
        looked up or decided, so a duplicate arriving meanwhile waits on it."""
        waiter = self._waiters.get(key)
        if waiter is not None:
            return waiter
        self._waiters[key] = asyncio.get_running_loop().create_future()
        if owner is not None:
            self._owners[key] = owner
        return None

    def release(self, key: str, owner: str | None = None) -> None:
        """The request holding the key finished: wake whoever waits for it. With `owner`, only
        that owner's claim is released: a request that gave up before it knew whether its claim
        was taken releases it this way, and never someone else's."""
        if owner is not None and self._owners.get(key) != owner:
            return
        self._owners.pop(key, None)
        waiter = self._waiters.pop(key, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
