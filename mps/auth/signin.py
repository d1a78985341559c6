"""Passwordless sign-in by one-time code (decisions 2), as use cases over the services.

Codes are 6 digits, valid 10 minutes, stored only as a keyed hash. A login allows at most 5 wrong
codes in all (a fresh code does not reset the count); after that it is dead. The checks are
conditional updates, so they hold however many requests race on one login, on any node.
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from mps.actors.company import CreateCompany, OpenSession, RevokeSession
from mps.adapters.mail import Mail
from mps.auth.limits import auth_limits
from mps.auth.principals import SessionPrincipal
from mps.auth.scopes import builtin_role
from mps.auth.tokens import SessionClaims
from mps.domain.audit import AuditContext
from mps.domain.clock import iso
from mps.domain.ids import new_id
from mps.errors import BadRequest, Forbidden, NotFound
from mps.persistence import login_store
from mps.persistence.queries import members as q
from mps.services import Services

__all__ = ["logout", "me", "request_code", "sign_up", "start_login", "switch_mode", "verify_code"]

CODE_TTL = timedelta(minutes=10)
MAX_FAILED_CODES = 5
# A login may ask for fresh codes for this long; each code itself lives CODE_TTL.
LOGIN_TTL = timedelta(hours=1)
# One owned shard of 64 is found within 1,000 random ids but for odds of about 1e-7.
_COMPANY_ID_TRIES = 1000


# (IP, request id) of the request that signs in, for the audit trail.
Origin = tuple[str | None, str | None]


def normalize_email(email: str) -> str:
    return email.strip().lower()


def _new_code() -> str:
    return f"{secrets.randbelow(1_000_000):06d}"


async def sign_up(
    services: Services, company_name: str, email: str, name: str | None
) -> dict[str, Any]:
    email = normalize_email(email)
    company_id = _new_company_id(services)
    user_id = await services.shards.ask_company(
        company_id, CreateCompany(company_name, email, name)
    )
    login = await _create_login(services, email, user_id, company_id, send=True)
    return {"loginId": login["id"], "companyId": company_id, "expiresAt": login["expiresAt"]}


def _new_company_id(services: Services) -> str:
    """A new company's id, in a shard this node owns when it owns any, so that a sign-up is
    served here rather than passed to another node of a cluster. Ids stay uniformly random
    within the owned shards; a node that owns none passes the sign-up on, and the owner picks."""
    for _ in range(_COMPANY_ID_TRIES):
        company_id = new_id("co")
        if services.shards.owns(company_id):
            return company_id
    return company_id


async def start_login(services: Services, email: str) -> dict[str, Any]:
    """Same answer whether or not the email belongs to a member: no account enumeration."""
    email = normalize_email(email)
    user = await q.user_by_email(services.database, email)
    member = user is not None and bool(await q.memberships(services.database, user["id"]))
    login = await _create_login(
        services, email, user["id"] if member and user else None, None, send=member
    )
    return {"loginId": login["id"], "expiresAt": login["expiresAt"]}


async def continue_as_member(
    services: Services, email: str, user_id: str, company_id: str
) -> dict[str, Any]:
    """A sign-in for someone who just joined `company_id` (an accepted invitation): a code is
    mailed to them, and verifying it opens their session there. No password exists."""
    login = await _create_login(services, email, user_id, company_id, send=True)
    return {"loginId": login["id"], "expiresAt": login["expiresAt"]}


async def _create_login(
    services: Services, email: str, user_id: str | None, company_id: str | None, *, send: bool
) -> dict[str, Any]:
    now = services.clock()
    login_id = new_id("lgn")
    code = _new_code() if send else None
    expires = now + CODE_TTL
    await services.actors.commit(
        login_store.login_insert(
            {
                "id": login_id,
                "email": email,
                "user_id": user_id,
                "company_id": company_id,
                "code_hash": services.keyring.hash_code(login_id, code) if code else None,
                "code_expires_at": iso(expires),
                "failed_attempts": 0,
                "created_at": iso(now),
                "consumed_at": None,
            },
        )
    )
    if code is not None:
        await _send_code(services, email, code)
    return {"id": login_id, "expiresAt": iso(expires)}


async def _send_code(services: Services, email: str, code: str) -> None:
    await services.mailer.send(
        Mail(
            to=email,
            subject=f"Your sign-in code: {code}",
            text=f"Your Merchant Payments sign-in code is {code}. It expires in 10 minutes.\n"
            "If you did not try to sign in, you can ignore this message.",
            otp=code,
        )
    )


async def request_code(services: Services, login_id: str) -> dict[str, Any]:
    login = await q.login_by_id(services.database, login_id)
    if login is None:
        raise NotFound("No such login")
    # Per email as well as per login, so fresh logins cannot be used to flood one inbox.
    services.limiter.hit(
        auth_limits(services.settings.development).otp_request, f"email:{login['email']}"
    )
    now = services.clock()
    expires = now + CODE_TTL
    usable = (
        login["user_id"] is not None
        and login["consumed_at"] is None
        and login["failed_attempts"] < MAX_FAILED_CODES
        and login["created_at"] > iso(now - LOGIN_TTL)
    )
    if usable:
        code = _new_code()
        await services.actors.commit(
            login_store.replace_code(
                login_id, services.keyring.hash_code(login_id, code), iso(expires)
            )
        )
        await _send_code(services, login["email"], code)
    return {"loginId": login_id, "expiresAt": iso(expires)}


async def verify_code(
    services: Services,
    login_id: str,
    code: str,
    company_id: str | None,
    mode: str | None,
    origin: Origin = (None, None),
) -> dict[str, Any]:
    """Spend the login's code and open a session in the chosen company.

    Nothing about the account shows without the right code: a wrong code costs one of the
    login's tries and answers the same 400 whatever `companyId` names (a company of the user's,
    a stranger's, none at all) and whether or not the email has an account. Membership is looked
    at only with the right code: naming a company the user is not in is then 403 `not_a_member`,
    and the code stays usable (and no try is counted), so the person who holds it can name
    another company. Both checks are conditional updates, safe however many requests race.
    """
    await _serve_here(services, login_id, company_id)
    now = iso(services.clock())
    # A code mailed just before a session-secret rotation is stored under the previous secret:
    # each hash the code may be stored as is tried, the current one first (SECURITY.md).
    code_hashes = services.keyring.code_hashes(login_id, code)
    for code_hash in code_hashes:
        rows = await services.actors.commit(
            login_store.spend_code(login_id, code_hash, now, MAX_FAILED_CODES, company_id)
        )
        if rows[0]:
            break
    if not rows[0]:
        # Was only the company wrong? Answered only to the holder of the right code, who could
        # sign in and see their companies anyway, so the 403 tells a prober nothing.
        if company_id is not None:
            for code_hash in code_hashes:
                if await q.code_is_usable(
                    services.database, login_id, code_hash, now, MAX_FAILED_CODES
                ):
                    raise Forbidden("You are not a member of that company", code="not_a_member")
        await services.actors.commit(login_store.count_failed_code(login_id, MAX_FAILED_CODES))
        raise BadRequest("The code is wrong, expired or no longer usable", code="invalid_code")
    user_id: str = rows[0][0]["user_id"]
    chosen = company_id or rows[0][0]["company_id"] or await _first_company(services, user_id)
    return await _open_session(services, user_id, chosen, mode or "test", origin)


async def _serve_here(services: Services, login_id: str, company_id: str | None) -> None:
    """In a cluster, make sure the session's company is served by this node before the code is
    spent: if another node owns it, the whole request is passed there (`ShardElsewhere`), and a
    code spent here first would be refused there. Reads only; names nothing to the client."""
    login = await q.login_by_id(services.database, login_id)
    if login is None or login["user_id"] is None:
        return
    target = company_id or login["company_id"]
    if target is None:
        found = await q.memberships(services.database, login["user_id"])
        target = found[0]["company_id"] if found else None
    if target is not None:
        await services.shards.require(target)


async def _first_company(services: Services, user_id: str) -> str:
    found = await q.memberships(services.database, user_id)
    if not found:
        raise Forbidden("You are not a member of any company", code="not_a_member")
    company_id: str = found[0]["company_id"]
    return company_id


async def _open_session(
    services: Services, user_id: str, company_id: str, mode: str, origin: Origin = (None, None)
) -> dict[str, Any]:
    audit = AuditContext("user", user_id, origin[0], origin[1])
    session_id, expires_at = await services.shards.ask_company(
        company_id, OpenSession(user_id, mode, audit)
    )
    claims = SessionClaims(user_id, company_id, session_id, mode, expires_at)
    token = services.tokens.issue(claims, services.clock())
    view = await _member_view(services, company_id, user_id)
    return {
        "sessionToken": token,
        "expiresAt": iso(expires_at),
        **view,
        "mode": mode,
        "livemode": mode == "live",
    }


async def _member_view(services: Services, company_id: str, user_id: str) -> dict[str, Any]:
    row = await q.member_view(services.database, company_id, user_id)
    if row is None:
        raise NotFound("No such member")
    role = builtin_role(row["role_id"])
    role_name = role.name if role is not None else row["custom_role_name"]
    return {
        "user": {
            "id": row["user_id"],
            "email": row["email"],
            "name": row["user_name"],
            "createdAt": row["user_created_at"],
        },
        "company": {
            "id": row["company_id"],
            "name": row["company_name"],
            "createdAt": row["company_created_at"],
        },
        "role": {"id": row["role_id"], "name": role_name},
    }


async def me(services: Services, session: SessionPrincipal) -> dict[str, Any]:
    view = await _member_view(services, session.company_id, session.user_id)
    return {
        **view,
        "scopes": sorted(session.scopes),
        "mode": session.mode,
        "livemode": session.livemode,
    }


async def logout(services: Services, session: SessionPrincipal) -> None:
    await services.shards.ask_company(session.company_id, RevokeSession(session.session_id))
    await services.credentials.forget_session(session.session_id)


async def switch_mode(
    services: Services, session: SessionPrincipal, mode: str, origin: Origin = (None, None)
) -> dict[str, Any]:
    reply = await _open_session(services, session.user_id, session.company_id, mode, origin)
    await logout(services, session)
    return reply
