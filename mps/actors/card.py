"""The card actor: one per card, serializing its balance and state.

It holds the card, its balance (the sum of its ledger postings, loaded at activation) and the
approved authorizations its interval limits count (the last month's, and the all-time total).
Authorizations, funding, withdrawal, freezing, controls and termination arrive one at a time,
so 100 authorizations at once can never take the balance below zero or past a limit. Money
moves through the company actor's ledger (`Book`), committed with the card's own change.

No turn waits. A turn decides from memory, reserves its change there at once (the balance an
authorization spends, a freeze), and hands its unit to the actor's `UnitChain`
(mps.actors.commits) as detached work; the next message is decided against the reservation, and
the caller's reply waits for the commit. The chain sends the card's units one after another,
to the writer or, when money moves, to the company's books, so they commit in the order they
were decided; a unit refused there (the company's balance cannot fund the card) or of unknown
outcome is undone, and the latter makes the actor reload. Asking the company is waiting too, so
a funding's approval gate is asked from detached work, and a funding it lets through comes
back as a follow-up `FundCard` that passes no gate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from mps.actors.chained import AskCompany, BookingActor, in_mode, through_gate
from mps.actors.company.approvals import RequestApproval
from mps.actors.context import ActorContext
from mps.actors.idempotency import IdempotencyRecord, IdempotentCommand
from mps.actors.runtime import AsyncioActor, Detached
from mps.domain import issuing as rules
from mps.domain.audit import SYSTEM, AuditContext
from mps.domain.clock import iso
from mps.domain.company import ModeSettings
from mps.domain.ids import new_id
from mps.domain.issuing import Card, Controls
from mps.domain.ledger import Books, Movement
from mps.domain.money import format_money
from mps.errors import Conflict
from mps.persistence import card_store as store
from mps.persistence.approval_store import NotApproved
from mps.persistence.outbox import event_writes
from mps.persistence.statements import Statement
from mps.representations.cards import card_json

__all__ = [
    "AuthorizeCard",
    "CardActor",
    "CardOutcome",
    "ChangeCard",
    "FundCard",
    "UpdateCardControls",
    "WithdrawFromCard",
]


@dataclass(frozen=True)
class CardOutcome:
    card: Card
    balance: int
    events: list[dict[str, Any]]
    # The authorization made, for AuthorizeCard.
    authorization: dict[str, Any] | None = None


@dataclass(frozen=True)
class FundCard(IdempotentCommand):
    """Reply: a CardOutcome; or, when the card.fund policy applies (and `requested_by` is
    given), the PENDING ApprovalRequest the company made instead."""

    mode: str
    amount_minor: int
    requested_by: str | None = None
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class WithdrawFromCard(IdempotentCommand):
    mode: str
    amount_minor: int


@dataclass(frozen=True)
class ChangeCard(IdempotentCommand):
    """`action`: freeze, unfreeze or terminate (the balance returns to the wallet)."""

    mode: str
    action: str


@dataclass(frozen=True)
class UpdateCardControls(IdempotentCommand):
    mode: str
    controls: Controls


@dataclass(frozen=True)
class AuthorizeCard(IdempotentCommand):
    """Reply: a CardOutcome whose `authorization` says approved or declined (with its reason).
    A decline is an answer, recorded with its event, not an error."""

    mode: str
    amount_minor: int
    currency: str
    merchant_name: str | None = None
    category: str | None = None


_EVENTS = {"freeze": "card.frozen", "unfreeze": "card.unfrozen", "terminate": "card.terminated"}
# How far back the approvals interval limits count are kept in memory (a month at most).
_WINDOW = timedelta(days=32)


class CardActor(BookingActor):
    # An approved funding run a second time is refused whole by its request's guard.
    expected_errors = (*AsyncioActor.expected_errors, NotApproved)

    def __init__(
        self, card_id: str, company_id: str, context: ActorContext, company: AskCompany
    ) -> None:
        super().__init__(context, company)
        self.card_id = card_id
        self.company_id = company_id
        self.card: Card | None = None
        self.balance = 0
        # (time, amount) of approvals in the last month, and the total of every approval.
        self.recent: list[tuple[str, int]] = []
        self.spent_ever = 0

    def __str__(self) -> str:
        return f"CardActor({self.card_id})"

    async def on_activate(self) -> None:
        db = self.context.database
        self.card = await store.load_card(db, self.company_id, self.card_id)
        if self.card is None:
            return
        self.balance = await store.card_balance(db, self.company_id, self.card_id)
        self.spent_ever = await store.spent_ever(db, self.card_id)
        self.recent = await store.spent_since(db, self.card_id, self.context.clock() - _WINDOW)

    def _require(self, mode: str | None) -> Card:
        return in_mode(self.card, mode, "No such card")

    async def receive(self, message: Any) -> Any:
        self._refuse_when_stale()
        match message:
            case AuthorizeCard():
                return self._authorize(message)
            case FundCard():
                return self._fund(message)
            case WithdrawFromCard():
                return self._withdraw(message)
            case ChangeCard():
                return self._change(message)
            case UpdateCardControls():
                card = self._require(message.mode)
                after = rules.update_controls(card, message.controls, self.context.clock())
                return self._commit(card, after, [], ("card.updated",), message.idempotency)
        msg = f"CardActor does not understand {type(message).__name__}"
        raise TypeError(msg)

    def _spent_since(self, start: datetime | None) -> int:
        if start is None:
            return self.spent_ever
        since = iso(start)
        return sum(amount for at, amount in self.recent if at >= since)

    def _authorize(self, command: AuthorizeCard) -> Detached:
        card = self._require(command.mode)
        if command.currency != card.currency:
            msg = f"The card holds {card.currency}; the authorization is in {command.currency}"
            raise Conflict(msg, code="currency_mismatch")
        now = self.context.clock()
        decline = rules.authorize(
            card, self.balance, command.amount_minor, command.category, self._spent_since, now
        )
        stamp = iso(now)
        authorization_id = new_id("iauth")
        authorization = {
            "id": authorization_id,
            "cardId": card.id,
            "amountMinor": str(command.amount_minor),
            "currency": card.currency,
            "approved": decline is None,
            "declineReason": decline.reason if decline else None,
            "message": decline.message if decline else None,
            "merchantName": command.merchant_name,
            "merchantCategory": command.category,
            "createdAt": stamp,
        }
        row = store.authorization_insert(
            card,
            authorization_id,
            command.amount_minor,
            approved=decline is None,
            decline_reason=decline.reason if decline else None,
            merchant_name=command.merchant_name,
            category=command.category,
            now=stamp,
        )
        if decline is not None:
            events, bodies = card_events_at(
                card, self.balance, stamp, "card.authorization.declined", authorization
            )
            outcome = CardOutcome(card, self.balance, bodies, authorization)
            statements = [row, *events, *_idem(command.idempotency, outcome)]
            return self._write(statements, outcome)
        amount = command.amount_minor
        after_balance = self.balance - amount
        events, bodies = card_events_at(
            card, after_balance, stamp, "card.authorization.approved", authorization
        )
        outcome = CardOutcome(card, after_balance, bodies, authorization)

        def spend(books: Books, _settings: ModeSettings) -> list[Movement]:
            return [books.card_spend(card.mode, card.currency, card.id, amount, stamp)]

        approved = (stamp, amount)
        self.balance -= amount
        self.spent_ever += amount
        self.recent.append(approved)
        cutoff = iso(now - _WINDOW)
        if self.recent[0][0] < cutoff:
            # No interval reaches further back than a month: memory stays bounded.
            self.recent = [(at, spent) for at, spent in self.recent if at >= cutoff]

        def undo() -> None:
            self.balance += amount
            self.spent_ever -= amount
            if approved in self.recent:
                self.recent.remove(approved)

        statements = [row, *events, *_idem(command.idempotency, outcome)]
        return self._book(spend, statements, undo=undo, adopt=lambda _movements: outcome)

    def _fund(self, command: FundCard) -> Detached:
        card = self._require(command.mode)
        if card.status == "TERMINATED":
            raise Conflict("A TERMINATED card cannot be funded", code="invalid_state")
        if command.requested_by is not None:
            payload = {"cardId": card.id, "amountMinor": str(command.amount_minor)}
            gate = RequestApproval(
                card.mode, "card.fund", card.currency, command.amount_minor, payload,
                command.requested_by, command.audit, idempotency=command.idempotency,
            )  # fmt: skip
            return Detached(through_gate(self.company, self.actor_ref, gate, command))
        stamp = iso(self.context.clock())
        amount = command.amount_minor
        after_balance = self.balance + amount
        events, bodies = card_events_at(
            card, after_balance, stamp, "card.funded", {"amountMinor": str(amount)}
        )
        outcome = CardOutcome(card, after_balance, bodies)

        def fund(books: Books, _settings: ModeSettings) -> list[Movement]:
            return [books.card_funding(card.mode, card.currency, card.id, amount, stamp)]

        self.balance += amount

        def undo() -> None:
            self.balance -= amount

        statements = [*events, *_idem(command.idempotency, outcome)]
        return self._book(fund, statements, undo=undo, adopt=lambda _movements: outcome)

    def _withdraw(self, command: WithdrawFromCard) -> Detached:
        card = self._require(command.mode)
        amount = command.amount_minor
        if amount > self.balance:
            held = format_money(self.balance, card.currency)
            msg = f"The card holds {held}, less than the amount"
            raise Conflict(msg, code="balance_insufficient")
        stamp = iso(self.context.clock())
        after_balance = self.balance - amount
        outcome = CardOutcome(card, after_balance, [])

        def withdraw(books: Books, _settings: ModeSettings) -> list[Movement]:
            return [books.card_withdrawal(card.mode, card.currency, card.id, amount, stamp)]

        self.balance -= amount

        def undo() -> None:
            self.balance += amount

        statements = _idem(command.idempotency, outcome)
        return self._book(withdraw, statements, undo=undo, adopt=lambda _movements: outcome)

    def _change(self, command: ChangeCard) -> Detached:
        card = self._require(command.mode)
        now = self.context.clock()
        transition = {
            "freeze": rules.freeze,
            "unfreeze": rules.unfreeze,
            "terminate": rules.terminate,
        }
        after = transition[command.action](card, now)
        movements: list[Callable[[Books], Movement]] = []
        if command.action == "terminate" and self.balance > 0:
            left, stamp = self.balance, iso(now)
            movements.append(
                lambda books: books.card_withdrawal(card.mode, card.currency, card.id, left, stamp)
            )
        return self._commit(card, after, movements, (_EVENTS[command.action],), command.idempotency)

    def _commit(
        self,
        before: Card,
        after: Card,
        movements: Sequence[Callable[[Books], Movement]],
        event_types: tuple[str, ...],
        idempotency: IdempotencyRecord | None,
    ) -> Detached:
        balance = 0 if after.status == "TERMINATED" else self.balance
        events, bodies = event_writes(after, event_types, card_json(after, balance))
        outcome = CardOutcome(after, balance, bodies)
        statements = [store.card_update(before, after), *events, *_idem(idempotency, outcome)]
        held = self.balance
        self.card, self.balance = after, balance

        def undo() -> None:
            self.card, self.balance = before, held

        if movements:

            def decide(books: Books, _settings: ModeSettings) -> list[Movement]:
                return [move(books) for move in movements]

            return self._book(decide, statements, undo=undo, adopt=lambda _movements: outcome)
        return self._write(statements, outcome, undo)


def _idem(record: IdempotencyRecord | None, outcome: CardOutcome) -> list[Statement]:
    return record.statements(outcome) if record is not None else []


def card_events_at(
    card: Card, balance: int, stamp: str, event_type: str, extra: dict[str, Any]
) -> tuple[list[Statement], list[dict[str, Any]]]:
    """An event about the card made at `stamp` (an authorization, a funding: the card itself
    did not change), carrying what happened under `authorization` or `funding`."""
    key = "authorization" if event_type.startswith("card.authorization") else "funding"
    obj = {**card_json(card, balance), key: extra}
    return event_writes(card, (event_type,), obj, at=stamp)
