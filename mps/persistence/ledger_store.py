"""The ledger as rows (mps.domain.ledger): the statements that write a movement, and the sums a
company actor loads its books from.

Every statement names the company, and only the company actor commits them, so one company's
ledger has one writer at a time (in a cluster, the owner of its shard, fenced by epoch).
"""

from __future__ import annotations

from collections.abc import Iterable

from mps.domain.ledger import MERCHANT_ACCOUNTS, Books, Movement
from mps.errors import StaleWrite
from mps.persistence.database import Database
from mps.persistence.statements import Statement, insert

__all__ = ["AlreadySettled", "load_books", "movement_statements"]


class AlreadySettled(StaleWrite):
    """A settlement found its payment's credit settled already (two passes raced): the unit
    rolled back and nothing moved."""


def movement_statements(company_id: str, movements: Iterable[Movement]) -> list[Statement]:
    statements: list[Statement] = []
    for movement in movements:
        if movement.postings:
            statements.append(
                insert(
                    "ledger_transactions",
                    {
                        "id": movement.id,
                        "company_id": company_id,
                        "mode": movement.mode,
                        "currency": movement.currency,
                        "type": movement.type,
                        "source_id": movement.source_id,
                        "created_at": movement.created_at,
                    },
                )
            )
            statements += [
                insert(
                    "ledger_postings",
                    {
                        "transaction_id": movement.id,
                        "company_id": company_id,
                        "mode": movement.mode,
                        "currency": movement.currency,
                        "account": account,
                        "amount_minor": amount,
                    },
                )
                for account, amount in movement.postings
            ]
        if movement.type == "payment":
            statements.append(
                insert(
                    "settlements",
                    {
                        "payment_id": movement.source_id,
                        "company_id": company_id,
                        "mode": movement.mode,
                        "currency": movement.currency,
                        "amount_minor": movement.unsettled,
                        "due_at": movement.due_at,
                    },
                )
            )
        elif movement.type == "settlement":
            statements.append(
                Statement(
                    "UPDATE settlements SET settled_at = $1 "
                    "WHERE payment_id = $2 AND company_id = $3 AND settled_at IS NULL",
                    (movement.created_at, movement.source_id, company_id),
                    expect_rows=1,
                    stale_error=AlreadySettled,
                )
            )
    return statements


async def load_books(db: Database, company_id: str) -> Books:
    """The company's balances as its postings sum them, and its unsettled credits."""
    books = Books()
    rows = await db.fetch(
        "SELECT mode, currency, account, SUM(amount_minor) AS total FROM ledger_postings "
        "WHERE company_id = $1 AND account IN ($2, $3, $4) GROUP BY mode, currency, account",
        company_id,
        *MERCHANT_ACCOUNTS,
    )
    for row in rows:
        balance = books.committed[(row["mode"], row["currency"])]
        setattr(balance, row["account"], int(row["total"]))
    rows = await db.fetch(
        "SELECT mode, currency, SUM(amount_minor) AS total FROM settlements "
        "WHERE company_id = $1 AND settled_at IS NULL GROUP BY mode, currency",
        company_id,
    )
    for row in rows:
        books.committed[(row["mode"], row["currency"])].unsettled = int(row["total"])
    return books
