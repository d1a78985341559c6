"""Invitations as the API shows them (decisions 9)."""

from __future__ import annotations

from typing import Any

from mps.domain.invitations import Invitation, shown_status

__all__ = ["invitation_json"]


def invitation_json(invitation: Invitation, now: str) -> dict[str, Any]:
    return {
        "id": invitation.id,
        "email": invitation.email,
        "roleId": invitation.role_id,
        "status": shown_status(invitation, now),
        "invitedBy": invitation.invited_by,
        "createdAt": invitation.created_at,
        "expiresAt": invitation.expires_at,
        "decidedAt": invitation.decided_at,
        "emailStatus": invitation.email_status,
        "emailError": invitation.email_error,
    }
