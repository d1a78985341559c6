"""Bank-account and payout reads: one, filtered cursor lists, and the payouts whose next step
is due. Scoped to one company and mode in the SQL itself, except the scheduler's read, which is
scoped to the shards this node owns."""

from __future__ import annotations

from mps.domain.payouts import BankAccount, Payout
from mps.persistence.database import Database
from mps.persistence.payout_store import bank_account_from_row, payout_from_row
from mps.persistence.queries.paging import (
    PageRequest,
    Where,
    read_one_in_mode,
    read_page,
)
from mps.persistence.queries.shards import DueScan

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
    return await read_one_in_mode(
        db,
        "SELECT * FROM bank_accounts",
        company_id,
        mode,
        account_id,
        bank_account_from_row,
        also="deleted_at IS NULL",
    )


async def list_bank_accounts(
    db: Database, company_id: str, mode: str, page: PageRequest
) -> tuple[list[BankAccount], str | None]:
    where = Where.in_mode(company_id, mode)
    where.conditions.append("deleted_at IS NULL")
    return await read_page(db, "SELECT * FROM bank_accounts", where, page, bank_account_from_row)


async def get_payout(db: Database, company_id: str, mode: str, payout_id: str) -> Payout | None:
    return await read_one_in_mode(
        db, "SELECT * FROM payouts", company_id, mode, payout_id, payout_from_row
    )


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


# Open payouts whose next step is due, the longest due first, each with its bank account's
# sealed number (the bank needs it).
due = DueScan(
    "SELECT p.id, p.company_id, p.mode, p.status, p.amount_minor, p.currency, "
    "b.account_number FROM payouts p JOIN bank_accounts b ON b.id = p.bank_account_id "
    "WHERE p.status IN ('PENDING', 'IN_TRANSIT') AND p.next_step_at <= $1 "
    "{scope} ORDER BY p.next_step_at LIMIT $2",
    "p.company_id",
)

# Automatic payout schedules whose run has come.
due_schedules = DueScan(
    "SELECT company_id, mode, next_run_at FROM payout_schedules "
    "WHERE next_run_at <= $1 {scope} ORDER BY next_run_at LIMIT $2"
)
