"""Bank-account and payout reads: one, filtered cursor lists, and the payouts whose next step
is due. Scoped to one company and mode in the SQL itself, except the scheduler's read, which is
scoped to the shards this node owns."""

from __future__ import annotations

from collections.abc import Sequence

from mps.domain.payouts import BankAccount, Payout
from mps.persistence.database import Database
from mps.persistence.payout_store import bank_account_from_row, payout_from_row
from mps.persistence.queries.paging import (
    PageRequest,
    Where,
    fetch_one_in_mode,
    read_page,
)
from mps.persistence.queries.shards import due_in_shards
from mps.persistence.statements import Row

__all__ = [
    "due",
    "due_schedules",
    "get_bank_account",
    "get_payout",
    "list_bank_accounts",
    "list_payouts",
]


async def get_bank_account(
    db: Database, company_id: str, mode: str, account_id: str
) -> BankAccount | None:
    row = await db.fetchrow(
        "SELECT * FROM bank_accounts WHERE id = $1 AND company_id = $2 AND mode = $3 "
        "AND deleted_at IS NULL",
        account_id,
        company_id,
        mode,
    )
    return bank_account_from_row(row) if row is not None else None


async def list_bank_accounts(
    db: Database, company_id: str, mode: str, page: PageRequest
) -> tuple[list[BankAccount], str | None]:
    where = Where.in_mode(company_id, mode)
    where.conditions.append("deleted_at IS NULL")
    return await read_page(db, "SELECT * FROM bank_accounts", where, page, bank_account_from_row)


async def get_payout(db: Database, company_id: str, mode: str, payout_id: str) -> Payout | None:
    row = await fetch_one_in_mode(db, "SELECT * FROM payouts", company_id, mode, payout_id)
    return payout_from_row(row) if row is not None else None


async def list_payouts(
    db: Database,
    company_id: str,
    mode: str,
    page: PageRequest,
    *,
    status: str | None = None,
    bank_account_id: str | None = None,
) -> tuple[list[Payout], str | None]:
    where = (
        Where.in_mode(company_id, mode)
        .compare("status", status)
        .compare("bank_account_id", bank_account_id)
    )
    return await read_page(db, "SELECT * FROM payouts", where, page, payout_from_row)


async def due(db: Database, now: str, limit: int, shards: Sequence[int] | None) -> list[Row]:
    """Up to `limit` open payouts whose next step is due, the longest due first, each with its
    bank account's sealed number (the bank needs it), of every company or (in a cluster) of the
    companies in `shards`."""
    sql = (
        "SELECT p.id, p.company_id, p.mode, p.status, p.amount_minor, p.currency, "
        "b.account_number FROM payouts p JOIN bank_accounts b ON b.id = p.bank_account_id "
        "WHERE p.status IN ('PENDING', 'IN_TRANSIT') AND p.next_step_at <= $1 "
        "{scope} ORDER BY p.next_step_at LIMIT $2"
    )
    return await due_in_shards(db, sql, "p.company_id", shards, now, limit)


async def due_schedules(
    db: Database, now: str, limit: int, shards: Sequence[int] | None
) -> list[Row]:
    """Up to `limit` automatic payout schedules whose run has come, of every company or (in a
    cluster) of the companies in `shards`."""
    sql = (
        "SELECT company_id, mode, next_run_at FROM payout_schedules "
        "WHERE next_run_at <= $1 {scope} ORDER BY next_run_at LIMIT $2"
    )
    return await due_in_shards(db, sql, "company_id", shards, now, limit)
