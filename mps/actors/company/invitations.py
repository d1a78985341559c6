"""Invitations: created within the inviter's own scopes, answered through the emailed token.

The company actor checks what it holds (the role exists and is not the owner's, the inviter may
grant it, the person is not a member yet) and commits; every later change is guarded in storage
by the status it expects, so an accept racing a revoke has exactly one winner. Accepting adds
the member in the same unit. Every commit is detached.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, replace

from mps.actors.company.audit import commit_audited, entry
from mps.actors.company.ledger import require_fresh
from mps.actors.company.members import member_once
from mps.actors.company.state import CompanyState
from mps.actors.idempotency import IdempotentCommand
from mps.actors.runtime import Detached
from mps.domain import team as rules
from mps.domain.audit import SYSTEM, AuditContext
from mps.domain.clock import iso
from mps.domain.ids import new_id
from mps.domain.invitations import INVITATION_TTL, Invitation
from mps.domain.scopes import OWNER_ROLE
from mps.errors import Conflict, FieldError, ValidationFailed
from mps.persistence import company_store
from mps.persistence import invitation_store as store

__all__ = [
    "AcceptInvitation",
    "CreateInvitation",
    "DecideInvitation",
    "accept_invitation",
    "create_invitation",
    "decide_invitation",
]


@dataclass(frozen=True)
class CreateInvitation(IdempotentCommand):
    """Reply: (the PENDING Invitation, its token, to be sent only in the email's link)."""

    email: str
    role_id: str
    invited_by: str
    granter_scopes: frozenset[str]
    audit: AuditContext = SYSTEM
    # The account the email already has, if any (read by the caller): the actor, which holds
    # the members, refuses to invite a member.
    user_id: str | None = None


@dataclass(frozen=True)
class AcceptInvitation:
    """Reply: the new member's user id. The membership and the ACCEPTED status commit in one
    unit; 409 when the invitation is no longer PENDING or has expired."""

    invitation: Invitation


@dataclass(frozen=True)
class DecideInvitation(IdempotentCommand):
    """Reply: the Invitation after. `status` REJECTED (the invitee) or REVOKED (a member)."""

    invitation: Invitation
    status: str
    audit: AuditContext = SYSTEM


def create_invitation(state: CompanyState, command: CreateInvitation) -> Detached:
    """Reply: (the invitation, its token, emailed once), once committed."""
    state.require()
    require_fresh(state)
    role = rules.resolve_role(command.role_id, state.roles)
    if role is None:
        raise ValidationFailed([FieldError("roleId", "no such role")])
    if role.id == OWNER_ROLE:
        msg = "The owner role is given only by transferring ownership"
        raise Conflict(msg, code="owner_transfer_required")
    rules.check_role_scopes(role.scopes, command.granter_scopes)
    if command.user_id is not None and command.user_id in state.members:
        raise Conflict("That person is a member already", code="already_member")
    now = state.context.clock()
    token = secrets.token_urlsafe(32)
    invitation = Invitation(
        id=new_id("invt"),
        company_id=state.company_id,
        email=command.email,
        role_id=role.id,
        status="PENDING",
        invited_by=command.invited_by,
        created_at=iso(now),
        expires_at=iso(now + INVITATION_TTL),
    )
    statements = [store.invitation_insert(invitation, state.keyring.hash_invitation_token(token))]
    if command.idempotency is not None:
        statements += command.idempotency.statements((invitation, token))
    audit = entry(
        state, command.audit, "invitation.created", ("invitation", invitation.id),
        email=invitation.email, roleId=role.id,
    )  # fmt: skip

    async def commit() -> tuple[Invitation, str]:
        await commit_audited(state, statements, [audit])
        return invitation, token

    return Detached(commit())


def accept_invitation(state: CompanyState, command: AcceptInvitation) -> Detached:
    """Reply: the new member's user id, once committed (who the user is, a new one or the
    account the email has already, only the commit tells; the member is held from then on)."""
    state.require()
    require_fresh(state)
    invitation = command.invitation
    if rules.resolve_role(invitation.role_id, state.roles) is None:
        msg = "The role this invitation offers no longer exists; ask for a new invitation"
        raise Conflict(msg, code="invalid_state")
    now = iso(state.context.clock())
    statements = [
        store.decide(state.company_id, invitation.id, "ACCEPTED", now),
        *company_store.membership(
            state.company_id, new_id("usr"), invitation.email, None, invitation.role_id, now
        ),
    ]
    context = AuditContext("invitee", None)
    audit = entry(
        state, context, "invitation.accepted", ("invitation", invitation.id),
        email=invitation.email, roleId=invitation.role_id,
    )  # fmt: skip

    async def commit() -> str:
        try:
            with member_once():
                rows = await commit_audited(state, statements, [audit])
        except store.InvitationClosed as exc:
            raise Conflict("The invitation is no longer open", code="invalid_state") from exc
        return state.hold_member(rows, invitation.role_id)

    return Detached(commit())


def decide_invitation(state: CompanyState, command: DecideInvitation) -> Detached:
    """Reply: the invitation as rejected or revoked, once committed."""
    require_fresh(state)
    state.require()
    invitation = command.invitation
    now = iso(state.context.clock())
    action = "invitation.rejected" if command.status == "REJECTED" else "invitation.revoked"
    after = replace(invitation, status=command.status, decided_at=now)
    statements = [store.decide(state.company_id, invitation.id, command.status, now)]
    if command.idempotency is not None:
        statements += command.idempotency.statements(after)
    audit = entry(state, command.audit, action, ("invitation", invitation.id))

    async def commit() -> Invitation:
        try:
            await commit_audited(state, statements, [audit])
        except store.InvitationClosed as exc:
            raise Conflict("The invitation is no longer open", code="invalid_state") from exc
        return after

    return Detached(commit())
