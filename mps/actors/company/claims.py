"""Idempotency-Key claims (decisions 16): which keys have a request running, decided in memory.

The stored-response lookup is the caller's, outside the actor's turn (mps.http.idempotency); the
key's row, written in the same unit as the change, is the final guard should two requests ever
run under one key (a crash between claim and commit loses these marks).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from mps.actors.company.state import CompanyState

__all__ = ["ClaimKey", "ReleaseKey", "claim_key", "release_key"]


@dataclass(frozen=True)
class ClaimKey:
    """Reply: None when the key is now in flight for the caller, who must look for a stored
    response (outside this actor) before running, and release the key when done; or an asyncio
    future to await while another request holds the key, then claim again."""

    key: str


@dataclass(frozen=True)
class ReleaseKey:
    """The request holding the key finished; wake whoever waits for it."""

    key: str


def claim_key(state: CompanyState, key: str) -> asyncio.Future[None] | None:
    """None when the key is now in flight for the caller; else the future of the request that
    holds it. The key is marked before anything is looked up, so a duplicate arriving meanwhile
    waits on it."""
    waiter = state.in_flight.get(key)
    if waiter is not None:
        return waiter
    state.in_flight[key] = asyncio.get_running_loop().create_future()
    return None


def release_key(state: CompanyState, key: str) -> None:
    """The request holding the key finished: wake whoever waits for it."""
    waiter = state.in_flight.pop(key, None)
    if waiter is not None and not waiter.done():
        waiter.set_result(None)
