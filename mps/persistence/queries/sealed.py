"""The columns that hold sealed values, read in pages of their primary key, and the guarded
write that replaces one sealed value with another (`run.py reseal`, mps.reseal).

Every company's rows: re-sealing is the operator's, across tenants, and the values are opened
only in memory. Table and column names come from `SEALED_COLUMNS`, never from input.

The command runs in a process of its own, beside live nodes, and reaches the service through
its database only (no writer actor), as the operator's requests do (`operator_requests`):
`replace_each` hands its statements to the database, a unit each."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mps.domain import purposes
from mps.persistence.database import Database
from mps.persistence.statements import Row, Statement, placeholders

__all__ = ["SEALED_COLUMNS", "SealedColumn", "replace_each", "replace_sealed", "sealed_page"]


@dataclass(frozen=True)
class SealedColumn:
    table: str
    key: tuple[str, ...]  # the table's primary key, in its order
    column: str
    purpose: str

    @property
    def name(self) -> str:
        return f"{self.table}.{self.column}"


SEALED_COLUMNS = (
    SealedColumn("bank_accounts", ("id",), "account_number", purposes.BANK_ACCOUNT_NUMBER),
    SealedColumn("cards", ("id",), "number", purposes.CARD_NUMBER),
    SealedColumn("cards", ("id",), "cvc", purposes.CARD_CVC),
    SealedColumn("webhook_endpoints", ("id",), "secret", purposes.WEBHOOK_SECRET),
    SealedColumn("webhook_endpoints", ("id",), "previous_secret", purposes.WEBHOOK_SECRET),
    SealedColumn(
        "webhook_default_secrets", ("company_id", "mode"), "secret", purposes.WEBHOOK_SECRET
    ),
    SealedColumn("kyc_documents", ("id",), "sealed_key", purposes.KYC_DOCUMENT_KEY),
    SealedColumn(
        "idempotency_keys", ("company_id", "idem_key"), "body", purposes.IDEMPOTENT_RESPONSE
    ),
)


async def sealed_page(
    db: Database, sealed: SealedColumn, after: tuple[str, ...] | None, limit: int
) -> list[Row]:
    """The next `limit` rows holding a value, by primary key, after the key `after`: the key's
    columns, then the value as `sealed`."""
    keys = ", ".join(sealed.key)
    where = f"{sealed.column} IS NOT NULL"
    params: tuple[object, ...] = ()
    if after is not None:
        marks = placeholders(len(after))
        where += f" AND ({keys}) > ({marks})"
        params = after
    return await db.fetch(
        f"SELECT {keys}, {sealed.column} AS sealed FROM {sealed.table} WHERE {where} "
        f"ORDER BY {keys} LIMIT {int(limit)}",
        *params,
    )


def replace_sealed(sealed: SealedColumn, key: tuple[str, ...], old: str, new: str) -> Statement:
    """The value `new` where the row still holds `old`, returning the row's key when it did: a
    row the service rewrote meanwhile keeps what it wrote (sealed with the current key)."""
    n = len(key)
    match = " AND ".join(f"{column} = ${i + 2}" for i, column in enumerate(sealed.key))
    return Statement(
        f"UPDATE {sealed.table} SET {sealed.column} = $1 "
        f"WHERE {match} AND {sealed.column} = ${n + 2} RETURNING {', '.join(sealed.key)}",
        (new, *key, old),
    )


async def replace_each(db: Database, replacements: Sequence[Statement]) -> list[bool]:
    """Each of `replacements` (`replace_sealed`) written as a unit of its own, so that each
    replaces its own row or, rewritten meanwhile, nothing: per statement, in order, whether it
    replaced the value. The units share one transaction (`Database.write`): a unit refused is
    rolled back alone and every other one, before or after it, is committed; the first refusal
    is then raised, so the caller learns of it only once the rest is durable. An error of the
    write itself (the connection lost) means that none was committed."""
    replaced: list[bool] = []
    for outcome in await db.write([[statement] for statement in replacements]):
        if isinstance(outcome, BaseException):
            raise outcome
        replaced.append(bool(outcome[0]))
    return replaced
