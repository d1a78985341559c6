"""The invoice actor: one per invoice, applying its changes one at a time.

Mark-paid, void, resend and the overdue scheduler all arrive here as messages, so a race between
them has one winner: the first to be handled changes the invoice, the others find it PAID or
VOID and answer 409. Each change commits the invoice, its timeline entry and its event in one
unit, and the reply waits for that commit; the actor does not. Its turn adopts the change at
once (a reservation: the next message is decided against it) and hands the unit to the actor's
`UnitChain` (mps.actors.commits), which commits the invoice's units one after another in the
order they were decided, and undoes a change whose unit is refused or of unknown outcome (the
latter also makes the actor reload). Invoices move no money: nothing here touches the ledger.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mps.actors.chained import ChainedActor, in_mode
from mps.actors.context import ActorContext
from mps.actors.idempotency import IdempotencyRecord, IdempotentCommand
from mps.actors.runtime import Detached
from mps.domain import invoices as rules
from mps.domain.invoices import Invoice
from mps.persistence.invoice_store import invoice_changes, load_invoice
from mps.representations.invoices import invoice_json

__all__ = [
    "InvoiceActor",
    "InvoiceOutcome",
    "MarkInvoiceOverdue",
    "MarkInvoicePaid",
    "ResendInvoice",
    "VoidInvoice",
]


@dataclass(frozen=True)
class InvoiceOutcome:
    invoice: Invoice
    events: list[dict[str, Any]]


@dataclass(frozen=True)
class MarkInvoicePaid(IdempotentCommand):
    mode: str
    actor: str
    paid_at: str | None = None
    reference: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class VoidInvoice(IdempotentCommand):
    mode: str
    actor: str


@dataclass(frozen=True)
class ResendInvoice(IdempotentCommand):
    """Reply: the outcome; the caller emails the customer once it is committed."""

    mode: str
    actor: str


@dataclass(frozen=True)
class MarkInvoiceOverdue(IdempotentCommand):
    """From the scheduler (only once its due date has passed) or the sandbox (`forced`)."""

    mode: str | None = None
    forced: bool = False


class InvoiceActor(ChainedActor):
    def __init__(
        self,
        invoice_id: str,
        company_id: str,
        context: ActorContext,
        hosted_url: Callable[[str], str],
    ) -> None:
        super().__init__(context)
        self.invoice_id = invoice_id
        self.company_id = company_id
        self.hosted_url = hosted_url
        self.invoice: Invoice | None = None

    def __str__(self) -> str:
        return f"InvoiceActor({self.invoice_id})"

    async def on_activate(self) -> None:
        self.invoice = await load_invoice(self.context.database, self.company_id, self.invoice_id)

    def _require(self, mode: str | None) -> Invoice:
        return in_mode(self.invoice, mode, "No such invoice")

    async def receive(self, message: Any) -> Any:
        self._refuse_when_stale()
        now = self.context.clock()
        match message:
            case MarkInvoicePaid(mode=mode):
                after = rules.mark_paid(
                    self._require(mode),
                    now,
                    actor=message.actor,
                    paid_at=message.paid_at,
                    reference=message.reference,
                    note=message.note,
                )
                return self._apply(after, "invoice.paid", message.idempotency)
            case VoidInvoice(mode=mode):
                after = rules.void(self._require(mode), now, actor=message.actor)
                return self._apply(after, "invoice.voided", message.idempotency)
            case ResendInvoice(mode=mode):
                after = rules.resend(self._require(mode), now, actor=message.actor)
                return self._apply(after, "invoice.sent", message.idempotency)
            case MarkInvoiceOverdue(mode=mode):
                return self._overdue(self._require(mode), now, message)
        msg = f"InvoiceActor does not understand {type(message).__name__}"
        raise TypeError(msg)

    def _overdue(self, invoice: Invoice, now: datetime, command: MarkInvoiceOverdue) -> Detached:
        after = rules.mark_overdue(invoice, now, forced=command.forced)
        return self._apply(after, "invoice.overdue", command.idempotency)

    def _apply(self, after: Invoice, event: str, idempotency: IdempotencyRecord | None) -> Detached:
        before = self._require(None)
        obj = invoice_json(after, self.hosted_url(after.id))
        statements, bodies = invoice_changes(before, after, event, obj)
        outcome = InvoiceOutcome(after, bodies)
        if idempotency is not None:
            statements += idempotency.statements(outcome)
        self.invoice = after

        def undo() -> None:
            self.invoice = before

        return self._write(statements, outcome, undo)
