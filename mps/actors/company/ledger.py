"""The company's ledger: every money movement of the company is committed here.

The company actor is the only writer of its ledger, so its books (mps.domain.ledger.Books) are
always what storage holds plus what it has handed to storage and not yet seen committed. A
payment's actor that moves money (a checkout, a refund, a chargeback) sends `Book` with its own
change; the movements are decided in this actor's turn against the books, committed together
with that change, and the reply waits for the commit. The commit itself is detached: the next
command is decided while it is in flight, against books that already count its reservations
(but not its credits), so concurrent refunds and payouts can never take more than is there.

Payment actors ask this actor; this actor never asks a payment actor (that could deadlock).

A commit that fails gives its reservations back (mps.actors.commits). One whose outcome is
unknown (the writer missed its deadline, the database went away mid-commit) also leaves the
books possibly wrong: they are marked stale, money commands answer 503 until the commits in
flight have ended, and the next one then reloads the actor from storage. A refused one (a
same-key retry whose key was stored first) leaves them as they were: nobody else notices.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mps.actors.commits import undo_on_failure
from mps.actors.company.audit import commit_audited
from mps.actors.company.state import CompanyState, require_fresh
from mps.actors.runtime import Detached
from mps.domain.audit import AuditEntry
from mps.domain.clock import iso
from mps.domain.company import ModeSettings
from mps.domain.ledger import Balance, Books, Movement
from mps.errors import StaleWrite
from mps.persistence.ledger_store import movement_statements
from mps.persistence.statements import Statement

__all__ = [
    "Balances",
    "Book",
    "Settle",
    "balances",
    "book",
    "commit_movements",
    "require_fresh",
    "settle",
]


@dataclass(frozen=True)
class Book:
    """Reply: the movements, once committed. Sent by a payment's actor for a change that moves
    money: `decide` picks the movements from the company's books and the mode's settings (and
    raises when the balance cannot take them), and `statements` is the caller's change, given
    the movements, to commit in the same unit."""

    mode: str
    decide: Callable[[Books, ModeSettings], list[Movement]]
    statements: Callable[[list[Movement]], Sequence[Statement]]


@dataclass(frozen=True)
class Settle:
    """Reply: how many credits settled. Due credits the settlement scheduler found in storage,
    as (mode, currency, payment id, amount)."""

    due: tuple[tuple[str, str, str, int], ...]


@dataclass(frozen=True)
class Balances:
    """Reply: [(currency, Balance)] as committed, for the mode."""

    mode: str


def book(state: CompanyState, command: Book) -> Detached:
    company = state.require()
    require_fresh(state)
    movements = command.decide(state.books, company.settings[command.mode])
    return commit_movements(state, movements, command.statements(movements), movements)


def commit_movements(
    state: CompanyState,
    movements: list[Movement],
    statements: Sequence[Statement],
    reply: Any,
    audit: Sequence[AuditEntry] = (),
) -> Detached:
    """Count `movements` as in flight now, in the turn, and commit them with `statements` (and
    the `audit` entries appended to the trail) detached; `reply` once committed."""
    unit = [*statements, *movement_statements(state.company_id, movements)]
    state.books.begin(movements)

    def undo() -> None:
        state.books.settle(movements, committed=False)

    async def commit() -> Any:
        with undo_on_failure(undo=undo, stale=state.mark_stale):
            await commit_audited(state, unit, audit)
        state.books.settle(movements, committed=True)
        return reply

    return Detached(commit())


def settle(state: CompanyState, command: Settle) -> Detached:
    """Settle the due credits not already being settled, each in its own unit: one credit that
    turns out to be settled already (a pass on another node before a failover) must not hold
    up the others."""
    state.require()
    require_fresh(state)
    now = iso(state.context.clock())
    commits = []
    for mode, currency, payment_id, amount in command.due:
        if payment_id in state.settling or not state.books.settled_down((mode, currency)):
            continue  # being settled, or pending is moving: the next pass settles it
        movement = state.books.settlement(mode, currency, payment_id, amount, now)
        state.settling.add(payment_id)
        commits.append((payment_id, commit_movements(state, [movement], [], None).work))

    async def run() -> int:
        try:
            outcomes = await asyncio.gather(*(work for _, work in commits), return_exceptions=True)
        finally:
            for payment_id, _ in commits:
                state.settling.discard(payment_id)
        for outcome in outcomes:
            # Settled already is an answer; anything else is the scheduler's to log.
            if isinstance(outcome, BaseException) and not isinstance(outcome, StaleWrite):
                raise outcome
        return sum(1 for outcome in outcomes if not isinstance(outcome, BaseException))

    return Detached(run())


def balances(state: CompanyState, command: Balances) -> list[tuple[str, Balance]]:
    """The committed balance of every currency the mode supports or holds money in."""
    company = state.require()
    require_fresh(state)
    books = state.books
    held = {currency for _, currency in books.keys(command.mode)}
    currencies = sorted(held | set(company.settings[command.mode].supported_currencies))
    return [(c, books.committed[(command.mode, c)].copy()) for c in currencies]
