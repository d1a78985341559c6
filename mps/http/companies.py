"""The companies a signed-in person belongs to, and moving their session to another of them: what
the dashboard's company picker needs (issue 30), on the public API like everything it calls.

Moving is like the mode switch (mps.http.signin.switch_mode): a new session is opened in the
chosen company, in the same mode, by that company's actor (a company the person is not in is
403 `not_a_member`), and the token that asked is revoked in the same unit, so one token never
outlives the choice. The request runs on the chosen company's owner; the company it leaves may
live on another node.
"""

from __future__ import annotations

from typing import Any

from mps.actors.company import OpenSession
from mps.auth.principals import SessionPrincipal
from mps.auth.tokens import COMPANY_SWITCH, SessionClaims
from mps.domain.audit import AuditContext
from mps.domain.clock import iso
from mps.domain.scopes import builtin_role
from mps.errors import Forbidden
from mps.persistence.queries import members as q
from mps.services import Services

__all__ = ["companies", "switch_company"]


async def _membership(services: Services, company_id: str, user_id: str) -> dict[str, Any] | None:
    row = await q.member_view(services.database, company_id, user_id)
    if row is None:
        return None
    role = builtin_role(row["role_id"])
    return {
        "id": row["company_id"],
        "name": row["company_name"],
        "role": {
            "id": row["role_id"],
            "name": role.name if role is not None else row["custom_role_name"],
        },
    }


async def companies(services: Services, session: SessionPrincipal) -> list[dict[str, Any]]:
    """Every company the session's user is a member of, oldest membership first, each marked
    `current` when it is the session's. Reads only."""
    found = []
    for row in await q.memberships(services.database, session.user_id):
        membership = await _membership(services, row["company_id"], session.user_id)
        if membership is not None:
            found.append({**membership, "current": row["company_id"] == session.company_id})
    return found


async def switch_company(
    services: Services,
    session: SessionPrincipal,
    company_id: str,
    origin: tuple[str | None, str | None],
) -> dict[str, Any]:
    """A session in `company_id` in the session's mode; the asking token stops working."""
    # Before anything is done: when another node owns the chosen company, the whole request
    # goes there (mps.http.passing) with nothing done here.
    await services.shards.require(company_id)
    membership = await _membership(services, company_id, session.user_id)
    if membership is None:
        raise Forbidden("You are not a member of this company", code="not_a_member")
    audit = AuditContext("user", session.user_id, origin[0], origin[1])
    # The chosen company's actor opens the new session and ends the asking one in one unit, so
    # the old company's owner, wherever it runs, is not needed and no half-done switch remains.
    replaces = (session.company_id, session.session_id, COMPANY_SWITCH)
    session_id, expires_at = await services.shards.ask_company(
        company_id, OpenSession(session.user_id, session.mode, audit, replaces)
    )
    # Refused at once here, and on every other node through the revocations' broadcast.
    await services.credentials.forget_session(session.session_id)
    claims = SessionClaims(session.user_id, company_id, session_id, session.mode, expires_at)
    token = services.tokens.issue(claims, services.clock())
    return {
        "sessionToken": token,
        "expiresAt": iso(expires_at),
        "company": {"id": membership["id"], "name": membership["name"]},
        "role": membership["role"],
        "mode": session.mode,
        "livemode": session.livemode,
        "previousSessionEnded": True,
    }
