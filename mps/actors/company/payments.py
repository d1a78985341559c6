"""Creating a payment: the company's rules are checked in the turn, the commit is detached."""

from __future__ import annotations

from dataclasses import dataclass

from mps.actors.company.state import CompanyState
from mps.actors.idempotency import IdempotentCommand
from mps.actors.payment.messages import Outcome, with_customer
from mps.actors.references import commit_new_payment
from mps.actors.runtime import Detached
from mps.domain import payments as rules
from mps.domain.ids import new_id
from mps.domain.payments import NewPayment
from mps.errors import FieldError, Forbidden, ValidationFailed
from mps.persistence.analytics_store import rollup_statements
from mps.persistence.payment_store import customer_statements, event_statements, payment_insert
from mps.persistence.statements import Statement
from mps.representations.payments import payment_json

__all__ = ["CreatePayment", "create_payment"]


@dataclass(frozen=True)
class CreatePayment(IdempotentCommand):
    """Reply: an Outcome with the new PENDING payment and its payment.created event."""

    mode: str
    spec: NewPayment


def create_payment(state: CompanyState, command: CreatePayment) -> Detached:
    """Check the company's rules now, in order; commit without holding up the mailbox.

    A new payment changes nothing the company actor keeps, so the next command need not wait
    for this commit, and a burst of creates for one merchant shares group commits. Should the
    payment's random reference be another payment's already, the same payment is committed
    again under a fresh one (mps.actors.references).
    """
    company = state.require()
    settings = company.settings[command.mode]
    spec = command.spec
    if spec.currency not in settings.supported_currencies:
        raise ValidationFailed(
            [
                FieldError(
                    "currency",
                    f"{spec.currency} is not supported; supported: "
                    + ", ".join(settings.supported_currencies),
                )
            ]
        )
    if command.mode == "live" and settings.kyc_status != "VERIFIED":
        raise Forbidden("Live payments need a verified account", code="account_not_verified")
    payment_id = new_id("pay")
    now = state.context.clock()

    def plan(reference: str) -> tuple[Outcome, list[Statement]]:
        transition = rules.create(
            spec,
            payment_id=payment_id,
            reference=reference,
            company_id=company.id,
            mode=command.mode,
            now=now,
        )
        payment = with_customer(transition.payment, state.keyring)
        event_writes, bodies = event_statements(
            [rules.Event(e.type, payment) for e in transition.events],
            lambda p: payment_json(p, state.public_url),
        )
        outcome = Outcome(payment, bodies)
        statements = [
            payment_insert(payment),
            *customer_statements(payment),
            *rollup_statements(None, payment),
            *event_writes,
        ]
        if command.idempotency is not None:
            statements += command.idempotency.statements(outcome)
        return outcome, statements

    return Detached(
        commit_new_payment(state.context, plan(state.references()), plan, state.references)
    )
