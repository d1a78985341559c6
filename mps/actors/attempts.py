"""Checkout attempts: what a payment's actor holds while a card authorization is in flight.

A checkout does not ask the processor in the payment actor's turn. The turn checks the rules,
reserves the attempt in memory (`Attempt`) and hands the rest to detached work, which

1. commits the attempt IN_FLIGHT in a unit of its own (mps.persistence.attempt_store), so that
   no approval can exist that storage does not know was asked for;
2. asks the processor, with the attempt's id as the idempotency key;
3. sends the answer back to the actor (`Answered`), whose turn books it: the payment PAID (or a
   multi-use link's child created PAID) with its ledger credit, or the decline, in one unit with
   the guarded update that settles the attempt (`Settles`).

Meanwhile the actor takes its next messages: another shopper of a multi-use link starts its own
attempt; a cancel, or the sandbox's forced expiry, meets the authorization in flight and is
refused 409 (as a card network refuses to cancel a payment that is processing), and the
scheduler's expiry waits for the next pass. A second checkout of a single-use payment joins the
attempt in flight if it carries the same Idempotency-Key, and is refused 409 otherwise (a form
submitted twice: one submission gets the payment, the others are told it is being processed).
So a race between checkout, cancel and expiry still has exactly one winner: the attempt in
flight settles first.

What identifies "the same attempt" when the shopper retries after a fault: the checkout's
Idempotency-Key if it sent one; otherwise, on a single-use payment, the card; on a multi-use
link without a key, nothing (two charges of one card there may be two purchases), so such a
retry is a new child. The retry key is unique per payment among attempts in flight or approved,
so a retry of an approved attempt is answered with the payment it paid, not charged again.

A fault between the approval and its booking (the booking's commit refused or of unknown
outcome, the actor crashed, the processor's answer lost to a deadline) leaves the attempt's
row IN_FLIGHT. The actor then reloads before its next message, and every activation of a
PENDING payment first holds the attempts it finds IN_FLIGHT as in flight again, and asks the
processor beside the actor what it answered under each attempt's key (`Processor.recall`, which
never charges); the answer comes back as `Recalled`, whose turn books it once, or settles the
attempt VOID when the processor took nothing. Until then a cancel or an expiry is refused as
for any authorization in flight, and a retry under the same key joins the attempt. Payment
expiry's pass wakes the actors of payments whose attempt stayed IN_FLIGHT for a while
(`SettleAttempts`), so one that no shopper comes back to is settled too.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import orjson

from mps.actors.idempotency import IdempotencyRecord
from mps.adapters.processor import Authorization, CardInput
from mps.auth.keyring import Keyring
from mps.domain.payments import Payment
from mps.persistence.attempt_store import StoredAttempt, attempt_settle
from mps.persistence.statements import Statement

__all__ = [
    "Abandoned",
    "Answered",
    "Attempt",
    "Recalled",
    "SettleAttempts",
    "Settles",
    "retry_key",
]


@dataclass(frozen=True)
class SettleAttempts:
    """Wake a payment's actor so that its activation settles attempts left IN_FLIGHT; to an
    actor already active it is nothing (it holds what is in flight, or reloads first)."""


@dataclass(frozen=True)
class Answered:
    """The processor's answer to an attempt, back in the actor's mailbox to be booked."""

    attempt_id: str
    authorization: Authorization


@dataclass(frozen=True)
class Recalled:
    """What the processor answered, by its memory, to an attempt a fault left IN_FLIGHT (None:
    it took nothing), asked beside the actor after its activation and told to it to book."""

    attempt_id: str
    authorization: Authorization | None


@dataclass(frozen=True)
class Abandoned:
    """The attempt's detached work ended without an answer to book. `unknown`: its row may be
    IN_FLIGHT in storage (the commit's outcome, or the processor's, is unknown), so the actor
    reloads and its next activation settles it."""

    attempt_id: str
    unknown: bool


@dataclass
class Attempt:
    """An authorization this actor has in flight, or is settling at activation."""

    id: str
    retry_key: str | None
    # The payment (or multi-use link) as the attempt found it: a link's child is planned from
    # it, whatever the link's later declines changed.
    payment: Payment
    child_id: str | None
    email: str | None
    phone: str | None
    created_at: str
    card: CardInput | None = None
    idempotency: IdempotencyRecord | None = None
    # Its outcome, for a second request that joins it.
    done: asyncio.Future[Any] = field(default_factory=lambda: _quiet_future())

    @classmethod
    def restored(cls, stored: StoredAttempt, payment: Payment) -> Attempt:
        return cls(
            id=stored.id,
            retry_key=stored.retry_key,
            payment=payment,
            child_id=stored.child_id,
            email=stored.email,
            phone=stored.phone,
            created_at=stored.created_at,
        )

    def stored(self) -> StoredAttempt:
        return StoredAttempt(
            id=self.id,
            company_id=self.payment.company_id,
            payment_id=self.payment.id,
            retry_key=self.retry_key,
            child_id=self.child_id,
            email=self.email,
            phone=self.phone,
            status="IN_FLIGHT",
            created_at=self.created_at,
        )

    async def joined(self) -> Any:
        """The attempt's outcome (or its error), for a request that is the same attempt."""
        return await asyncio.shield(self.done)

    def resolve(self, outcome: Any = None, error: BaseException | None = None) -> None:
        if self.done.done():
            return
        if error is not None:
            self.done.set_exception(error)
        else:
            self.done.set_result(outcome)


def _quiet_future() -> asyncio.Future[Any]:
    # Nobody may join: an error nobody reads must not be logged as never retrieved.
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    future.add_done_callback(lambda f: f.cancelled() or f.exception())
    return future


def retry_key(
    keyring: Keyring, payment: Payment, card: CardInput, idempotency_key: str | None
) -> str | None:
    """What names the same attempt when the shopper tries again: the Idempotency-Key if sent;
    else, for a single-use payment, the card (keyed hash: nothing of the number is stored);
    else None (each shopper of a multi-use link is a purchase of its own)."""
    if idempotency_key is not None:
        material: list[Any] = ["key", idempotency_key]
    elif payment.allow_multiple:
        return None
    else:
        material = ["card", card.number, card.exp_month, card.exp_year]
    return keyring.fingerprint(orjson.dumps(["checkout-attempt", payment.id, *material]))


@dataclass(frozen=True)
class Settles:
    """An idempotency record that also settles the attempt: handed to the unit that books the
    attempt's answer, it adds the guarded update (which refuses a second booking) and, if the
    checkout has one, the Idempotency-Key's stored response."""

    attempt_id: str
    status: str
    at: str
    inner: IdempotencyRecord | None = None

    def statements(self, result: Any) -> list[Statement]:
        own = [attempt_settle(self.attempt_id, self.status, self.at)]
        return own + (self.inner.statements(result) if self.inner is not None else [])

    def discard(self) -> None:
        if self.inner is not None:
            self.inner.discard()
