"""Creating an invoice: the company actor numbers it, so numbers never repeat and never skip.

Automatic numbers (`INV-000001` upwards, per mode) are handed out from memory: the last one
loaded at activation, then one more per create, in the order creates arrive. The commit is
detached. A create whose unit is refused gives its number back, and the next create takes it
first, so a refused create leaves no gap. Should a merchant's own number already hold the next
automatic one, that number counts as used and the create moves on to the following one. The
unique index on (company, mode, number) is the final guard: no two invoices ever share one.

A commit of unknown outcome (a database fault) may have used its number or not: the actor is
marked stale and reloads the last number from storage before the next create
(mps.actors.commits).
"""

from __future__ import annotations

import functools
import heapq
import logging
from collections.abc import Callable
from dataclasses import dataclass

from mps.actors.commits import undo_on_failure
from mps.actors.company.ledger import require_fresh
from mps.actors.company.state import CompanyState
from mps.actors.idempotency import IdempotentCommand
from mps.actors.runtime import Detached
from mps.domain.clock import iso
from mps.domain.ids import new_id
from mps.domain.invoices import Invoice, LineItem, TimelineEntry, automatic_number
from mps.domain.money import MAX_AMOUNT_MINOR
from mps.errors import Conflict, FieldError, ValidationFailed
from mps.persistence.invoice_store import NumberTaken, invoice_insert
from mps.persistence.statements import Statement
from mps.representations.invoices import hosted_url as link_for
from mps.representations.invoices import invoice_json

__all__ = ["CreateInvoice", "NewInvoice", "create_invoice", "hosted_url"]


@dataclass(frozen=True)
class NewInvoice:
    """A validated create request: `items`, or a single `amount_minor` (exactly one of them)."""

    currency: str
    customer_email: str
    customer_name: str | None = None
    items: tuple[LineItem, ...] | None = None
    amount_minor: int | None = None
    invoice_number: str | None = None
    due_date: str | None = None
    memo: str | None = None


@dataclass(frozen=True)
class CreateInvoice(IdempotentCommand):
    """Reply: the SENT Invoice, once committed with its timeline entry and invoice.sent event.
    Numbered `INV-000001` upwards per mode unless `spec.invoice_number` is given (409
    `duplicate` when another invoice of the mode has it)."""

    mode: str
    spec: NewInvoice
    actor: str


logger = logging.getLogger(__name__)

# Plans the invoice under a number (and its automatic sequence, None for the merchant's own).
Plan = Callable[[str, int | None], tuple[Invoice, list[Statement]]]

# Automatic numbers tried in a row when merchants' own numbers hold them, before giving up.
NUMBER_ATTEMPTS = 20


def hosted_url(state: CompanyState, invoice_id: str) -> str:
    return link_for(state.public_url, invoice_id, state.keyring.invoice_token(invoice_id))


def create_invoice(state: CompanyState, command: CreateInvoice) -> Detached:
    company = state.require()
    require_fresh(state)
    spec, mode = command.spec, command.mode
    supported = company.settings[mode].supported_currencies
    if spec.currency not in supported:
        raise ValidationFailed([FieldError("currency", f"must be one of {', '.join(supported)}")])
    total = (
        sum(item.amount_minor for item in spec.items)
        if spec.items is not None
        else spec.amount_minor or 0
    )
    if total > MAX_AMOUNT_MINOR:
        field = "items" if spec.items is not None else "amountMinor"
        raise ValidationFailed([FieldError(field, f"the total must be at most {MAX_AMOUNT_MINOR}")])
    now = iso(state.context.clock())
    invoice_id = new_id("inv")
    link = hosted_url(state, invoice_id)

    def plan(number: str, sequence: int | None) -> tuple[Invoice, list[Statement]]:
        invoice = Invoice(
            id=invoice_id,
            company_id=state.company_id,
            mode=mode,
            status="SENT",
            invoice_number=number,
            number_sequence=sequence,
            currency=spec.currency,
            amount_minor=total,
            customer_email=spec.customer_email,
            customer_name=spec.customer_name,
            items=spec.items,
            due_date=spec.due_date,
            memo=spec.memo,
            last_sent_at=now,
            created_at=now,
            updated_at=now,
            new_entries=(TimelineEntry("SENT", now, command.actor),),
        )
        statements, _ = invoice_insert(invoice, invoice_json(invoice, link))
        if command.idempotency is not None:
            statements += command.idempotency.statements(invoice)
        return invoice, statements

    if spec.invoice_number is not None:
        return Detached(_commit_own_number(state, *plan(spec.invoice_number, None)))
    return Detached(_commit_numbered(state, mode, plan, _take(state, mode)))


async def _commit_own_number(
    state: CompanyState, invoice: Invoice, statements: list[Statement]
) -> Invoice:
    try:
        await state.context.commit(*statements)
    except NumberTaken as exc:
        msg = f"Another invoice is numbered {invoice.invoice_number}"
        raise Conflict(msg, code="duplicate") from exc
    return invoice


def _take(state: CompanyState, mode: str) -> int:
    returned = state.returned_numbers.get(mode)
    if returned:
        return heapq.heappop(returned)
    state.invoice_numbers[mode] = state.invoice_numbers.get(mode, 0) + 1
    return state.invoice_numbers[mode]


def _give_back(state: CompanyState, mode: str, sequence: int) -> None:
    heapq.heappush(state.returned_numbers.setdefault(mode, []), sequence)


async def _commit_numbered(state: CompanyState, mode: str, plan: Plan, first: int) -> Invoice:
    """Commit under `first` (taken in the turn, so numbers follow the order creates arrived
    in); when a number of the merchant's own holds it, under the next one free."""
    sequence = first
    for attempt in range(NUMBER_ATTEMPTS):
        if attempt:
            sequence = _take(state, mode)
        invoice, statements = plan(automatic_number(sequence), sequence)
        give_back = functools.partial(_give_back, state, mode, sequence)
        with undo_on_failure(undo=give_back, stale=state.mark_stale):
            try:
                await state.context.commit(*statements)
            except NumberTaken:
                # A number of the merchant's own holds it: it is used, so no gap; take the next.
                continue
        return invoice
    msg = "Too many of the next invoice numbers are taken by numbers given by hand"
    raise Conflict(msg, code="duplicate")
