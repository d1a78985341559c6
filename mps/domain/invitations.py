"""Invitations (decisions 9): a member invites someone by email with a role; the invitee
accepts or rejects through the token in the emailed link; it expires after seven days.

Vocabulary:
    PENDING   sent, not yet answered (EXPIRED once `expiresAt` has passed)
    ACCEPTED  the invitee joined: the membership was created in the same unit
    REJECTED  the invitee declined
    REVOKED   a member withdrew it
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

__all__ = ["INVITATION_STATUSES", "INVITATION_TTL", "Invitation", "shown_status"]

INVITATION_STATUSES = ("PENDING", "ACCEPTED", "REJECTED", "REVOKED", "EXPIRED")
INVITATION_TTL = timedelta(days=7)


@dataclass(frozen=True)
class Invitation:
    id: str
    company_id: str
    email: str
    role_id: str
    status: str
    invited_by: str
    created_at: str
    expires_at: str
    user_id: str | None = None
    decided_at: str | None = None
    # How the invitation's email went: PENDING until tried, then SENT or FAILED with a reason
    # fit to show (None on invitations from before this was recorded).
    email_status: str | None = "PENDING"
    email_error: str | None = None


def shown_status(invitation: Invitation, now: str) -> str:
    """PENDING past its expiry shows (and acts) as EXPIRED; nothing needs to rewrite the row."""
    if invitation.status == "PENDING" and invitation.expires_at <= now:
        return "EXPIRED"
    return invitation.status
