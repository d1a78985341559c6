"""Invitations as rows: the statements the company actor commits and the reads the routes make.
Every change is guarded by the status it expects (PENDING, not expired)."""

from __future__ import annotations

from mps.domain.invitations import Invitation
from mps.errors import StaleWrite
from mps.persistence.database import Database
from mps.persistence.queries.paging import PageRequest, Where, read_page
from mps.persistence.rows import from_row, to_row
from mps.persistence.statements import Row, Statement, insert

__all__ = [
    "InvitationClosed",
    "by_token_hash",
    "decide",
    "email_outcome",
    "get_invitation",
    "invitation_from_row",
    "invitation_insert",
    "list_invitations",
    "revoke_for_role",
]


class InvitationClosed(StaleWrite):
    """The invitation was no longer PENDING (or had expired) when the change committed."""


def invitation_from_row(row: Row) -> Invitation:
    return from_row(Invitation, row)


def invitation_insert(invitation: Invitation, token_hash: str) -> Statement:
    # Nobody has taken or decided a new invitation, whatever the value says.
    return insert(
        "invitations", to_row(invitation, token_hash=token_hash, user_id=None, decided_at=None)
    )


def email_outcome(company_id: str, invitation_id: str, status: str, error: str | None) -> Statement:
    """How the invitation's email went (SENT, or FAILED with a reason)."""
    return Statement(
        "UPDATE invitations SET email_status = $1, email_error = $2 "
        "WHERE id = $3 AND company_id = $4",
        (status, error, invitation_id, company_id),
    )


def decide(company_id: str, invitation_id: str, status: str, now: str) -> Statement:
    """PENDING and unexpired -> `status`; the unit fails with InvitationClosed otherwise."""
    return Statement(
        "UPDATE invitations SET status = $1, decided_at = $2 "
        "WHERE id = $3 AND company_id = $4 AND status = 'PENDING' AND expires_at > $2",
        (status, now, invitation_id, company_id),
        expect_rows=1,
        stale_error=InvitationClosed,
    )


def revoke_for_role(company_id: str, role_id: str, now: str) -> Statement:
    """Every PENDING invitation offering the role REVOKED (the role is being deleted): the link
    could never be accepted, and the list should not show it open."""
    return Statement(
        "UPDATE invitations SET status = 'REVOKED', decided_at = $1 "
        "WHERE company_id = $2 AND role_id = $3 AND status = 'PENDING'",
        (now, company_id, role_id),
    )


async def by_token_hash(db: Database, token_hash: str) -> Invitation | None:
    row = await db.fetchrow("SELECT * FROM invitations WHERE token_hash = $1", token_hash)
    return invitation_from_row(row) if row is not None else None


async def get_invitation(db: Database, company_id: str, invitation_id: str) -> Invitation | None:
    row = await db.fetchrow(
        "SELECT * FROM invitations WHERE id = $1 AND company_id = $2", invitation_id, company_id
    )
    return invitation_from_row(row) if row is not None else None


async def list_invitations(
    db: Database, company_id: str, page: PageRequest, now: str, *, status: str | None = None
) -> tuple[list[Invitation], str | None]:
    """Newest first; `status` as shown (EXPIRED is a PENDING one past its expiry)."""
    where = Where.in_company(company_id)
    if status == "EXPIRED":
        where.compare("status", "PENDING").compare("expires_at", now, "<=")
    elif status == "PENDING":
        where.compare("status", "PENDING").compare("expires_at", now, ">")
    else:
        where.compare("status", status)
    return await read_page(db, "SELECT * FROM invitations", where, page, invitation_from_row)
