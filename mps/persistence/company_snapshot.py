"""Everything a company actor holds, read in one round trip for its activation.

The actor needs its company row, its members' roles, its books (the balance snapshots, see
mps.persistence.ledger_store), bank accounts, open payouts, last invoice numbers, the head of
its audit chain, custom roles, approval policies and open approval requests with their votes.
Read one by one that is a dozen sequential round trips before the actor's first message; here it
is one statement, a SELECT of scalar subqueries that each return their rows as one JSON array
(`json_agg(json_build_object(...))` on Postgres, `json_group_array(json_object(...))` on SQLite:
the same text but for those names). One statement also reads one moment on both backends, where
a dozen could each see a different one.

The rows come back as the separate loaders' rows do (the JSON of a TEXT column is its text, of
an integer column its number), and are turned into objects by the same functions those loaders
use, which stay for their other callers (a route reading payouts, the approvals' pass).
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from mps.domain.approvals import ApprovalRequest, Policy
from mps.domain.audit import AuditHead
from mps.domain.company import Company
from mps.domain.ledger import Books
from mps.domain.payouts import BankAccount, Payout
from mps.domain.scopes import Role
from mps.persistence.approval_store import policy_from_row, request_from_rows
from mps.persistence.database import Database
from mps.persistence.ledger_store import SNAPSHOT_COLUMNS, books_from_rows
from mps.persistence.payout_store import bank_account_from_row, payout_from_row
from mps.persistence.statements import Row
from mps.persistence.team_store import role_from_row

__all__ = ["CompanySnapshot", "load_company", "snapshot_sql"]


@dataclass(frozen=True)
class CompanySnapshot:
    """What a company actor loads at activation, as the separate loaders return it."""

    company: Company
    members: dict[str, str]  # user id -> role id
    books: Books
    bank_accounts: dict[str, BankAccount]  # not deleted
    payouts: dict[str, Payout]  # PENDING or IN_TRANSIT
    invoice_numbers: dict[str, int]  # mode -> last automatic number
    audit_head: AuditHead
    roles: dict[str, Role]
    policies: dict[str, Policy]  # by action
    approvals: dict[str, ApprovalRequest]  # PENDING or APPROVED


_OPEN_APPROVALS = "company_id = $1 AND status IN ('PENDING', 'APPROVED')"

# (name, the columns each row carries, the rows: a table or subquery with its condition).
# The columns are those the row-to-object functions read.
_PARTS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    (
        "company",
        ("id", "name", "version", "created_at", "data"),
        "companies WHERE id = $1",
    ),
    ("members", ("user_id", "role_id"), "members WHERE company_id = $1"),
    (
        "books",
        ("mode", "currency", *SNAPSHOT_COLUMNS),
        "balance_snapshots WHERE company_id = $1",
    ),
    (
        "bank_accounts",
        (
            "id", "company_id", "mode", "account_holder_name", "last4", "bank_code", "currency",
            "country", "status", "created_at", "deleted_at",
        ),
        "bank_accounts WHERE company_id = $1 AND deleted_at IS NULL",
    ),
    (
        "payouts",
        (
            "id", "company_id", "mode", "version", "status", "amount_minor", "currency",
            "bank_account_id", "description", "failure_reason", "automatic", "arrival_at",
            "next_step_at", "created_at", "updated_at",
        ),
        "payouts WHERE company_id = $1 AND status IN ('PENDING', 'IN_TRANSIT')",
    ),
    (
        "invoice_numbers",
        ("mode", "last"),
        "(SELECT mode, MAX(number_sequence) AS last FROM invoices "
        "WHERE company_id = $1 AND number_sequence IS NOT NULL GROUP BY mode) AS numbers",
    ),
    (
        "audit_head",
        ("seq", "hash"),
        "(SELECT seq, hash FROM audit_entries WHERE company_id = $1 "
        "ORDER BY seq DESC LIMIT 1) AS head",
    ),
    ("roles", ("id", "name", "scopes"), "roles WHERE company_id = $1"),
    (
        "policies",
        ("action", "enabled", "thresholds", "required_approvals"),
        "approval_policies WHERE company_id = $1",
    ),
    (
        "approvals",
        (
            "id", "company_id", "mode", "action", "status", "requested_by", "payload",
            "required_approvals", "created_at", "expires_at", "result", "error", "decided_at",
            "requested_by_user",
        ),
        # Who is behind a request made with an API key: as approval_store's own reads say.
        "(SELECT r.*, COALESCE((SELECT k.created_by FROM api_keys k "
        "WHERE k.id = r.requested_by AND k.company_id = r.company_id), r.requested_by) "
        f"AS requested_by_user FROM approval_requests r WHERE {_OPEN_APPROVALS}) AS requests",
    ),
    (
        "votes",
        ("request_id", "user_id", "decision", "at", "comment"),
        "approval_votes WHERE request_id IN "
        f"(SELECT id FROM approval_requests WHERE {_OPEN_APPROVALS})",
    ),
)  # fmt: skip


def _array(dialect: str, columns: tuple[str, ...], rows: str) -> str:
    pairs = ", ".join(f"'{column}', {column}" for column in columns)
    if dialect == "sqlite":
        return f"(SELECT json_group_array(json_object({pairs})) FROM {rows})"
    # json_agg of no rows is NULL, not an empty array.
    return f"(SELECT COALESCE(json_agg(json_build_object({pairs})), '[]') FROM {rows})"


def snapshot_sql(dialect: str) -> str:
    """The one statement of `load_company` for `dialect`; its one parameter is the company id."""
    return "SELECT " + ", ".join(
        f"{_array(dialect, columns, rows)} AS {name}" for name, columns, rows in _PARTS
    )


_SQL = {dialect: snapshot_sql(dialect) for dialect in ("postgres", "sqlite")}


async def load_company(db: Database, company_id: str) -> CompanySnapshot | None:
    """The company's actor state as storage holds it, in one read; None when there is no such
    company."""
    [row] = await db.fetch(_SQL[db.dialect], company_id)
    parts: dict[str, list[Row]] = {name: orjson.loads(row[name]) for name, _, _ in _PARTS}
    if not parts["company"]:
        return None
    [company_row] = parts["company"]
    votes: dict[str, list[Row]] = {}
    # Votes in the order approval_store reads them (json_group_array keeps no ORDER BY).
    for vote in sorted(parts["votes"], key=lambda v: (v["at"], v["user_id"])):
        votes.setdefault(vote["request_id"], []).append(vote)
    head = parts["audit_head"]
    return CompanySnapshot(
        company=Company.from_row(company_row, orjson.loads(company_row["data"])),
        members={r["user_id"]: r["role_id"] for r in parts["members"]},
        books=books_from_rows(parts["books"]),
        bank_accounts={r["id"]: bank_account_from_row(r) for r in parts["bank_accounts"]},
        payouts={r["id"]: payout_from_row(r) for r in parts["payouts"]},
        invoice_numbers={r["mode"]: int(r["last"]) for r in parts["invoice_numbers"]},
        audit_head=AuditHead(int(head[0]["seq"]), head[0]["hash"]) if head else AuditHead(),
        roles={r["id"]: role_from_row(r) for r in parts["roles"]},
        policies={r["action"]: policy_from_row(r) for r in parts["policies"]},
        approvals={
            r["id"]: request_from_rows(r, votes.get(r["id"], [])) for r in parts["approvals"]
        },
    )
