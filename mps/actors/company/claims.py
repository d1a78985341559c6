"""Idempotency-Key claims asked for apart from a command (decisions 16), decided in memory.

A route whose handler has effects before its command (a call to the card processor, a mail)
claims its key with these before it runs, looks for a stored response, and releases the key
when it is done. Every other keyed command carries its claim (mps.actors.idempotency) and is
claimed in the turn that decides it. Both kinds of claim are held in the actor's one table
(`AsyncioActor.keys_in_flight`), so a request of either kind waits for the other under one key.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ClaimKey", "ReleaseKey"]


@dataclass(frozen=True)
class ClaimKey:
    """Reply: None when the key is now in flight for the caller, who must look for a stored
    response (outside this actor) before running, and release the key when done; or an asyncio
    future to await while another request holds the key, then claim again.

    `owner` is a token of the claiming request's own: a request cancelled while its claim was
    being answered cannot tell whether it took the key, and releases it by that token."""

    key: str
    owner: str | None = None


@dataclass(frozen=True)
class ReleaseKey:
    """The request holding the key finished; wake whoever waits for it. With `owner`, only that
    owner's claim is released (nothing, when the key is another request's or free)."""

    key: str
    owner: str | None = None
