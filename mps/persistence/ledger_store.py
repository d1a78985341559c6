"""The ledger as rows (mps.domain.ledger): the statements that write a movement, and the
balances a company actor loads its books from.

Every statement names the company, and only the company actor commits them, so one company's
ledger has one writer at a time (in a cluster, the owner of its shard, fenced by epoch).

The balances are kept in `balance_snapshots` (migration 0015): `movement_statements` is the one
place that writes postings, and it adds every unit's change to the snapshot rows of the balances
it touches in the same unit, so a snapshot commits with its postings or not at all. An
activation reads those rows (`load_books`), not a sum over every posting; the reconciliation
compares each row with the sum of its postings (mps.persistence.queries.reconciliation).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from mps.domain.ledger import Balance, BalanceKey, Books, Movement
from mps.errors import StaleWrite
from mps.persistence.database import Database
from mps.persistence.statements import Statement, insert

__all__ = [
    "SNAPSHOT_COLUMNS",
    "AlreadySettled",
    "books_from_rows",
    "load_books",
    "movement_statements",
]

# A snapshot row's figures: the Balance's fields, in its order (available, pending, reserved,
# unsettled).
SNAPSHOT_COLUMNS = Balance.FIELDS
_KEY = ("company_id", "mode", "currency")
_SNAPSHOT_ADD = (
    f"INSERT INTO balance_snapshots ({', '.join((*_KEY, *SNAPSHOT_COLUMNS))}) "
    f"VALUES ({', '.join(f'${i}' for i in range(1, len(_KEY) + len(SNAPSHOT_COLUMNS) + 1))}) "
    "ON CONFLICT (company_id, mode, currency) DO UPDATE SET "
    + ", ".join(f"{c} = balance_snapshots.{c} + excluded.{c}" for c in SNAPSHOT_COLUMNS)
)


class AlreadySettled(StaleWrite):
    """A settlement found its payment's credit settled already (two passes raced): the unit
    rolled back and nothing moved."""


def movement_statements(company_id: str, movements: Iterable[Movement]) -> list[Statement]:
    """The unit's writes of `movements`: each one's transaction and postings, its settlement
    row (a payment's credit) or the settling of it, and then one upsert per balance touched that
    adds the movements' change to its snapshot row (created at zero when new).

    The upserts are alike, so a group commit sends a batch's as one `executemany`, the changes
    to one row summed into one (`Statement.summed_after`). A unit that fails (a settlement found
    settled already) rolls its upserts back with its postings."""
    statements: list[Statement] = []
    changes: dict[BalanceKey, Balance] = {}
    for movement in movements:
        deltas = movement.deltas()
        if any(deltas.values()):
            changes.setdefault(movement.key, Balance()).add(deltas)
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
    statements += [_snapshot_add(company_id, key, change) for key, change in changes.items()]
    return statements


def _snapshot_add(company_id: str, key: BalanceKey, change: Balance) -> Statement:
    mode, currency = key
    figures = (getattr(change, column) for column in SNAPSHOT_COLUMNS)
    return Statement(_SNAPSHOT_ADD, (company_id, mode, currency, *figures), summed_after=len(_KEY))


async def load_books(db: Database, company_id: str) -> Books:
    """The company's balances and unsettled credits, as their snapshot rows hold them."""
    rows = await db.fetch(
        f"SELECT mode, currency, {', '.join(SNAPSHOT_COLUMNS)} FROM balance_snapshots "
        "WHERE company_id = $1",
        company_id,
    )
    return books_from_rows(rows)


def books_from_rows(rows: Sequence[dict[str, Any]]) -> Books:
    """Books from snapshot rows (mode, currency and the `SNAPSHOT_COLUMNS`)."""
    books = Books()
    for row in rows:
        books.committed[(row["mode"], row["currency"])] = Balance(
            *(int(row[column]) for column in SNAPSHOT_COLUMNS)
        )
    return books
