"""Payments and customers as rows: the mapping both ways, and the write statements the payment
and company actors commit.

A new payment's reference is drawn at random and must be unique (`payments.reference`), so two
payments can, very rarely, draw the same one. The payment's insert then fails its unit with
`ReferenceTaken` rather than a bare IntegrityConflict, so that its actor can tell that apart
from every other conflict of the unit (an Idempotency-Key stored first is `KeyAlreadyStored`)
and commit again under a fresh reference (mps.actors.references).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import orjson

from mps.domain.payments import Event, Payment
from mps.persistence.database import Database, IntegrityConflict
from mps.persistence.outbox import event_insert, event_row, event_row_and_body
from mps.persistence.rows import columns
from mps.persistence.statements import Row, Statement, insert, placeholders, versioned_update

__all__ = [
    "ReferenceTaken",
    "customer_statements",
    "event_statements",
    "load_payment",
    "payment_from_row",
    "payment_insert",
    "payment_update",
]


class ReferenceTaken(IntegrityConflict):
    """A new payment's row broke a uniqueness constraint of `payments`: its reference is another
    payment's. (The row's only other unique column is its id, time-ordered with 83 random bits,
    which no two payments share.) The unit rolled back; nothing of it was stored."""


async def load_payment(db: Database, company_id: str, payment_id: str) -> Payment | None:
    """The payment's committed snapshot, for its actor's activation."""
    row = await db.fetchrow(
        "SELECT * FROM payments WHERE id = $1 AND company_id = $2", payment_id, company_id
    )
    return payment_from_row(row) if row is not None else None


def payment_from_row(row: Row) -> Payment:
    return Payment.restored(
        {
            "id": row["id"],
            "company_id": row["company_id"],
            "mode": row["mode"],
            "version": row["version"],
            "reference": row["reference"],
            "status": row["status"],
            "amount_minor": row["amount_minor"],
            "amount_refunded_minor": row["amount_refunded_minor"],
            "currency": row["currency"],
            "description": row["description"],
            "customer_email": row["customer_email"],
            "customer_phone": row["customer_phone"],
            "customer_id": row["customer_id"],
            "expires_at": row["expires_at"],
            "allow_multiple": bool(row["allow_multiple"]),
            "success_url": row["success_url"],
            "cancel_url": row["cancel_url"],
            "webhook_url": row["webhook_url"],
            "metadata": orjson.loads(row["metadata"]),
            "link_payment_id": row["link_payment_id"],
            "card_brand": row["card_brand"],
            "card_last4": row["card_last4"],
            "declines": tuple(orjson.loads(row["declines"])),
            "paid_at": row["paid_at"],
            "created_at": row["created_at"],
            "updated_at": row["updated_at"],
        }
    )


# What a payment's transition may change.
_CHANGING = (
    "status", "amount_refunded_minor", "customer_email", "customer_phone", "customer_id",
    "card_brand", "card_last4", "declines", "paid_at", "updated_at",
)  # fmt: skip


def _columns(payment: Payment) -> Row:
    return columns(payment, _CHANGING, declines=orjson.dumps(list(payment.declines)).decode())


def payment_insert(payment: Payment) -> Statement:
    """The new payment's row; its unit fails with `ReferenceTaken` if the reference is taken."""
    row = {
        "id": payment.id,
        "company_id": payment.company_id,
        "mode": payment.mode,
        "version": payment.version,
        "reference": payment.reference,
        "amount_minor": payment.amount_minor,
        "currency": payment.currency,
        "description": payment.description,
        "expires_at": payment.expires_at,
        "allow_multiple": int(payment.allow_multiple),
        "success_url": payment.success_url,
        "cancel_url": payment.cancel_url,
        "webhook_url": payment.webhook_url,
        "metadata": orjson.dumps(payment.metadata).decode(),
        "link_payment_id": payment.link_payment_id,
        "created_at": payment.created_at,
        **_columns(payment),
    }
    statement = insert("payments", row)
    return Statement(statement.sql, statement.params, conflict_error=ReferenceTaken)


def payment_update(before: Payment, after: Payment) -> Statement:
    return versioned_update("payments", "id", after.id, before.version, _columns(after))


def customer_statements(payment: Payment) -> list[Statement]:
    """Create the customer the payment names (with its customer.created event) unless it exists,
    and mark it seen. The payment's customer_id was derived from the same key."""
    customer_id = payment.customer_id
    if customer_id is None:
        return []
    now = payment.updated_at
    # Unique per transition, so the event below fires only for the transition that created it.
    origin = f"{payment.id}:{payment.version}"
    create = Statement(
        "INSERT INTO customers (id, origin, company_id, mode, email, phone, first_seen_at, "
        "last_seen_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $7) "
        "ON CONFLICT (id) DO NOTHING",
        (
            customer_id,
            origin,
            payment.company_id,
            payment.mode,
            payment.customer_email,
            payment.customer_phone,
            now,
        ),
    )
    customer = {
        "id": customer_id,
        "email": payment.customer_email,
        "phone": payment.customer_phone,
        "firstSeenAt": now,
        "lastSeenAt": now,
    }
    row = event_row(
        company_id=payment.company_id,
        mode=payment.mode,
        event_type="customer.created",
        created_at=now,
        obj=customer,
    )
    marks = placeholders(len(row))
    n = len(row)
    created_event = Statement(
        f"INSERT INTO events ({', '.join(row)}) SELECT {marks} WHERE EXISTS "
        f"(SELECT 1 FROM customers WHERE id = ${n + 1} AND origin = ${n + 2})",
        (*row.values(), customer_id, origin),
    )
    seen = Statement(
        "UPDATE customers SET last_seen_at = $1, phone = COALESCE(phone, $2) WHERE id = $3",
        (now, payment.customer_phone, customer_id),
    )
    return [create, created_event, seen]


def event_statements(
    events: Iterable[Event], shown: Callable[[Payment], dict[str, Any]]
) -> tuple[list[Statement], list[dict[str, Any]]]:
    """The outbox inserts for `events`, each carrying its payment as `shown` renders it (the
    caller's view of the API's JSON), and the event bodies as a client will see them.

    Each body is encoded once, into its row; the bodies handed back are the values that were
    encoded, not the row decoded again (on the create path that round trip was a measurable
    share of a request's CPU). Like any rendering, they may share values with the payment
    (its metadata), so they are read, never changed in place."""
    inserts: list[Statement] = []
    bodies: list[dict[str, Any]] = []
    for e in events:
        row, body = event_row_and_body(
            company_id=e.payment.company_id,
            mode=e.payment.mode,
            event_type=e.type,
            created_at=e.payment.updated_at,
            obj=shown(e.payment),
        )
        inserts.append(event_insert(row))
        bodies.append(body)
    return inserts, bodies
