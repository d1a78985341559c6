"""Bank accounts and payouts as rows: the mapping both ways, the statements the company actor
commits, what it loads when it activates, and the events that report payouts."""

from __future__ import annotations

from mps.domain.payouts import BankAccount, Payout
from mps.persistence.database import Database
from mps.persistence.rows import columns, from_row, to_row
from mps.persistence.statements import Row, Statement, insert, versioned_update

__all__ = [
    "bank_account_delete",
    "bank_account_from_row",
    "bank_account_insert",
    "load_bank_accounts",
    "load_open_payouts",
    "payout_from_row",
    "payout_insert",
    "payout_update",
    "schedule_advance",
    "schedule_set",
]


def bank_account_from_row(row: Row) -> BankAccount:
    return from_row(BankAccount, row)


def bank_account_insert(account: BankAccount, sealed_number: str) -> Statement:
    row = to_row(account, account_number=sealed_number, deleted_at=None)
    return insert("bank_accounts", row)


def bank_account_delete(account: BankAccount, now: str) -> Statement:
    return Statement(
        "UPDATE bank_accounts SET deleted_at = $1 "
        "WHERE id = $2 AND company_id = $3 AND deleted_at IS NULL",
        (now, account.id, account.company_id),
        expect_rows=1,
    )


def payout_from_row(row: Row) -> Payout:
    return from_row(Payout, row, automatic=bool(row["automatic"]))


# What a payout's step may change.
_CHANGING = ("status", "failure_reason", "arrival_at", "next_step_at", "updated_at")


def payout_insert(payout: Payout) -> Statement:
    return insert("payouts", to_row(payout, automatic=int(payout.automatic)))


def payout_update(before: Payout, after: Payout) -> Statement:
    return versioned_update("payouts", "id", after.id, before.version, columns(after, _CHANGING))


async def load_bank_accounts(db: Database, company_id: str) -> dict[str, BankAccount]:
    rows = await db.fetch(
        "SELECT * FROM bank_accounts WHERE company_id = $1 AND deleted_at IS NULL", company_id
    )
    return {row["id"]: bank_account_from_row(row) for row in rows}


async def load_open_payouts(db: Database, company_id: str) -> dict[str, Payout]:
    rows = await db.fetch(
        "SELECT * FROM payouts WHERE company_id = $1 AND status IN ('PENDING', 'IN_TRANSIT')",
        company_id,
    )
    return {row["id"]: payout_from_row(row) for row in rows}


def schedule_set(company_id: str, mode: str, schedule: str, next_run_at: str | None) -> Statement:
    """The mode's automatic payout schedule from now on; none for `manual`."""
    if next_run_at is None:
        return Statement(
            "DELETE FROM payout_schedules WHERE company_id = $1 AND mode = $2", (company_id, mode)
        )
    return Statement(
        "INSERT INTO payout_schedules (company_id, mode, schedule, next_run_at) "
        "VALUES ($1, $2, $3, $4) ON CONFLICT (company_id, mode) DO UPDATE "
        "SET schedule = excluded.schedule, next_run_at = excluded.next_run_at",
        (company_id, mode, schedule, next_run_at),
    )


def schedule_advance(company_id: str, mode: str, due_at: str, next_run_at: str) -> Statement:
    """Move the schedule on from the run due at `due_at`; moves nothing when another run (or a
    settings change) moved it first."""
    return Statement(
        "UPDATE payout_schedules SET next_run_at = $1 "
        "WHERE company_id = $2 AND mode = $3 AND next_run_at = $4",
        (next_run_at, company_id, mode, due_at),
    )
