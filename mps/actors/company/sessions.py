"""Sign-in sessions: opened for members only, decided from the member list the actor holds.

Both commit detached: a session changes nothing the actor holds, so the next message is taken
while it commits."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from mps.actors.company.audit import commit_audited, entry
from mps.actors.company.ledger import require_fresh
from mps.actors.company.state import CompanyState
from mps.actors.runtime import Detached
from mps.auth.tokens import SESSION_TTL
from mps.domain.audit import SYSTEM, AuditContext
from mps.domain.clock import iso
from mps.domain.ids import new_id
from mps.errors import Forbidden
from mps.persistence import company_store as store

__all__ = ["OpenSession", "RevokeSession", "open_session", "revoke_session"]


@dataclass(frozen=True)
class OpenSession:
    """Reply: (session id, expiry). The user must be a member."""

    user_id: str
    mode: str
    audit: AuditContext = SYSTEM
    # The user's session this one replaces, (company id, session id, reason): revoked in the same
    # unit, so a move to another company is whole or not at all, whichever node owns the
    # company of the session it ends.
    replaces: tuple[str, str, str] | None = None


@dataclass(frozen=True)
class RevokeSession:
    session_id: str
    # Why, when its token's refusal should say: MODE_SWITCH, or None (signed out).
    reason: str | None = None


def open_session(state: CompanyState, command: OpenSession) -> Detached:
    """Reply: (session id, expiry), once committed."""
    require_fresh(state)
    state.require()
    if command.user_id not in state.members:
        raise Forbidden("You are not a member of this company", code="not_a_member")
    now = state.context.clock()
    session_id = new_id("ses")
    expires_at = now + SESSION_TTL
    audit = entry(
        state, command.audit, "session.opened", ("session", session_id), mode=command.mode
    )
    statements = [
        store.session_insert(
            {
                "id": session_id,
                "user_id": command.user_id,
                "company_id": state.company_id,
                "mode": command.mode,
                "created_at": iso(now),
                "expires_at": iso(expires_at),
                "revoked_at": None,
            }
        )
    ]
    if command.replaces is not None:
        ended_company, ended_session, reason = command.replaces
        statements.append(store.session_revoke(ended_company, ended_session, iso(now), reason))

    async def commit() -> tuple[str, datetime]:
        await commit_audited(state, statements, [audit])
        return session_id, expires_at

    return Detached(commit())


def revoke_session(state: CompanyState, command: RevokeSession) -> Detached:
    now = iso(state.context.clock())
    statement = store.session_revoke(state.company_id, command.session_id, now, command.reason)

    async def commit() -> None:
        await state.context.commit(statement)

    return Detached(commit())
