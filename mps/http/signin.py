"""Passwordless sign-in by one-time code (decisions 2), as use cases over the services.

They sit in the HTTP layer, beside the routes that call them (`routes/auth.py`,
`routes/invitations.py`), because they ask the company actor; `mps.auth`, below the actors,
holds the tokens and keys they use.

Codes are 6 digits, valid 10 minutes, stored only as a keyed hash. A login allows at most 5 wrong
codes in all (a fresh code does not reset the count); after that it is dead. The checks are
conditional updates, so they hold however many requests race on one login, on any node.

One code budget per person: every use case that mails a code (sign-up, login, a fresh code, an
accepted invitation) first spends one from the email's budget (`spend_code_budget`), and every
try at a code spends one from the email's guesses, whichever login it names; both are counted by
the shared limiter, so they hold across the nodes of a cluster (docs/api.md, "Limits"). They are
counted for addresses with and without an account alike, so a 429 tells nothing about either.

A sign-up creates nothing but its login: the login carries the company to create, and the
company and its owner's membership are made when the code is entered (`verify_code`), so
signing up with someone else's address attaches nothing to them.

Writes: a login belongs to no company yet, so the sign-in flow has no actor of its own. Its
writes (a login created, a fresh code, a code spent, a wrong code counted) are the statements
of one named store, `mps.persistence.login_store`, each handed to the writer
(`services.actors.commit`, mps.actors.persistence) as a unit of its own; the checks they make
are conditions inside those statements, which is what keeps them safe without an actor to
serialize them. Everything else it changes (the company a sign-up creates, sessions) is asked
of the company actor that owns it. It reads through `mps.persistence.queries.members`, and
holds no SQL.
"""

from __future__ import annotations

import logging
import secrets
import unicodedata
from datetime import timedelta
from typing import Any

from mps.actors.company import CreateCompany, OpenSession, RevokeSession
from mps.adapters.mail import Mail, MailFailed
from mps.auth.principals import SessionPrincipal
from mps.auth.tokens import MODE_SWITCH, SessionClaims
from mps.domain.audit import AuditContext
from mps.domain.clock import iso
from mps.domain.ids import new_id
from mps.domain.scopes import builtin_role
from mps.errors import BadRequest, Forbidden, NotFound, Unavailable
from mps.limits import auth_limits
from mps.persistence import login_store
from mps.persistence.queries import members as q
from mps.persistence.statements import Row
from mps.services import Services

__all__ = [
    "continue_as_member",
    "logout",
    "me",
    "normalize_email",
    "request_code",
    "sign_up",
    "spend_code_budget",
    "start_login",
    "switch_mode",
    "verify_code",
]

logger = logging.getLogger(__name__)

CODE_TTL = timedelta(minutes=10)
MAX_FAILED_CODES = 5
# A login may ask for fresh codes for this long; each code itself lives CODE_TTL.
LOGIN_TTL = timedelta(hours=1)
# One owned shard of 64 is found within 1,000 random ids but for odds of about 1e-7.
_COMPANY_ID_TRIES = 1000


# (IP, request id) of the request that signs in, for the audit trail.
Origin = tuple[str | None, str | None]


def normalize_email(email: str) -> str:
    """NFKC, stripped, lower-case: how every email is kept and looked up (input refuses what
    is still not ASCII after this, `mps.adapters.mail.mail_address`)."""
    return unicodedata.normalize("NFKC", email).strip().lower()


def _new_code() -> str:
    return f"{secrets.randbelow(1_000_000):06d}"


async def spend_code_budget(services: Services, email: str) -> None:
    """One code from `email`'s budget (shared by every route that mails a code); raises
    RateLimited (429) when it is spent. Call it before anything is saved."""
    limit = auth_limits(services.settings.development).codes_per_email
    await services.shared_limiter.hit(limit, f"email:{normalize_email(email)}")


async def sign_up(
    services: Services, company_name: str, email: str, name: str | None
) -> dict[str, Any]:
    """A login that will create `company_name` owned by `email` once its code is entered. Only
    the login is saved; if the code cannot be mailed, that is all there is (503)."""
    email = normalize_email(email)
    await spend_code_budget(services, email)
    company_id = _new_company_id(services)
    user = await q.user_by_email(services.database, email)
    login = await _create_login(
        services,
        email,
        user["id"] if user is not None else None,
        company_id,
        send=True,
        signup=(company_name, name),
    )
    if not login["sent"]:
        msg = "The sign-in code could not be mailed to that address; check it and try again"
        raise Unavailable(msg, code="mail_failed", retry_after=60)
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
    """Same answer whether or not the email belongs to a member: no account enumeration. The
    budget is spent either way, and a code that could not be mailed answers as one that was."""
    email = normalize_email(email)
    await spend_code_budget(services, email)
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
    mailed to them, and verifying it opens their session there. No password exists. The caller
    spends the code budget before the membership is saved (`spend_code_budget`); a code that
    could not be mailed leaves the login, and `request_code` sends another."""
    login = await _create_login(services, email, user_id, company_id, send=True)
    return {"loginId": login["id"], "expiresAt": login["expiresAt"]}


async def _create_login(
    services: Services,
    email: str,
    user_id: str | None,
    company_id: str | None,
    *,
    send: bool,
    signup: tuple[str, str | None] | None = None,
) -> dict[str, Any]:
    now = services.clock()
    login_id = new_id("lgn")
    code = _new_code() if send else None
    expires = now + CODE_TTL
    row = {
        "id": login_id,
        "email": email,
        "user_id": user_id,
        "company_id": company_id,
        "code_hash": services.keyring.hash_code(login_id, code) if code else None,
        "code_expires_at": iso(expires),
        "failed_attempts": 0,
        "created_at": iso(now),
        "consumed_at": None,
    }
    if signup is not None:
        row["signup_company_name"], row["signup_owner_name"] = signup
    await services.actors.commit(login_store.login_insert(row))
    sent = await _send_code(services, email, code) if code is not None else False
    return {"id": login_id, "expiresAt": iso(expires), "sent": sent}


async def _send_code(services: Services, email: str, code: str) -> bool:
    """Mail `code`; False when it could not be sent (logged without the address or code). The
    code is in the body only: subjects show in previews, notifications and logs."""
    try:
        await services.mailer.send(
            Mail(
                to=email,
                subject="Your Merchant Payments sign-in code",
                text=f"Your Merchant Payments sign-in code is {code}. It expires in 10 minutes.\n"
                "If you did not try to sign in, you can ignore this message.",
                otp=code,
            )
        )
    except MailFailed as exc:
        logger.warning("a sign-in code could not be mailed: %s", exc.reason)
        return False
    return True


async def request_code(services: Services, login_id: str) -> dict[str, Any]:
    login = await q.login_by_id(services.database, login_id)
    if login is None:
        raise NotFound("No such login")
    # Per email as well as per login (the route's limit), so fresh logins cannot be used to
    # flood one inbox; spent whether or not a code is sent, so the answer tells nothing.
    await spend_code_budget(services, login["email"])
    now = services.clock()
    expires = now + CODE_TTL
    usable = (
        (login["user_id"] is not None or login["signup_company_name"] is not None)
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
    login = await q.login_by_id(services.database, login_id)
    # First, as it only reads: a request another node serves is passed there whole, and a try
    # counted here before that would be counted there again.
    await _serve_here(services, login, company_id)
    if login is not None:
        # Every try counts against the email's guesses, whichever of its logins it names, and
        # before the code is looked at: parallel guesses cannot outrun the count.
        limit = auth_limits(services.settings.development).code_guesses_per_email
        await services.shared_limiter.hit(limit, f"email:{login['email']}")
    # A sign-up's company has no members until its code is entered: naming it is naming none.
    signup_company = login["company_id"] if login and login["signup_company_name"] else None
    spend_in = None if company_id is not None and company_id == signup_company else company_id
    now = iso(services.clock())
    # A code mailed just before a session-secret rotation is stored under the previous secret:
    # each hash the code may be stored as is tried, the current one first (SECURITY.md).
    code_hashes = services.keyring.code_hashes(login_id, code)
    for code_hash in code_hashes:
        rows = await services.actors.commit(
            login_store.spend_code(login_id, code_hash, now, MAX_FAILED_CODES, spend_in)
        )
        if rows[0]:
            break
    if not rows[0]:
        # Was only the company wrong? Answered only to the holder of the right code, who could
        # sign in and see their companies anyway, so the 403 tells a prober nothing.
        if spend_in is not None:
            for code_hash in code_hashes:
                if await q.code_is_usable(
                    services.database, login_id, code_hash, now, MAX_FAILED_CODES
                ):
                    raise Forbidden("You are not a member of that company", code="not_a_member")
        await services.actors.commit(login_store.count_failed_code(login_id, MAX_FAILED_CODES))
        raise BadRequest("The code is wrong, expired or no longer usable", code="invalid_code")
    spent = rows[0][0]
    if spent["signup_company_name"] is not None:
        user_id = await _create_signed_up_company(services, spent)
        chosen = company_id or spent["company_id"]
    else:
        user_id = spent["user_id"]
        chosen = company_id or spent["company_id"] or await _first_company(services, user_id)
    return await _open_session(services, user_id, chosen, mode or "test", origin)


async def _create_signed_up_company(services: Services, spent: Row) -> str:
    """The company a sign-up's login carries, with its owner: made once, by the one request
    that spent the code (a conditional update), on the node that owns the company's shard."""
    user_id: str = await services.shards.ask_company(
        spent["company_id"],
        CreateCompany(spent["signup_company_name"], spent["email"], spent["signup_owner_name"]),
    )
    return user_id


async def _serve_here(services: Services, login: Row | None, company_id: str | None) -> None:
    """In a cluster, make sure the session's company is served by this node before the code is
    spent: if another node owns it, the whole request is passed there (`ShardElsewhere`), and a
    code spent here first would be refused there. Reads only; names nothing to the client."""
    if login is None:
        return
    if login["user_id"] is None and login["signup_company_name"] is None:
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


async def logout(services: Services, session: SessionPrincipal, reason: str | None = None) -> None:
    await services.shards.ask_company(session.company_id, RevokeSession(session.session_id, reason))
    await services.credentials.forget_session(session.session_id)


async def switch_mode(
    services: Services, session: SessionPrincipal, mode: str, origin: Origin = (None, None)
) -> dict[str, Any]:
    """The new session, and `previousSessionEnded`: the token that asked no longer works (its
    refusal names the switch, mps.auth.authenticate)."""
    reply = await _open_session(services, session.user_id, session.company_id, mode, origin)
    await logout(services, session, MODE_SWITCH)
    return {**reply, "previousSessionEnded": True}
