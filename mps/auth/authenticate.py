"""Turn a bearer token into a principal, or refuse with 401: the full check, one read each.

`mps.auth.credentials` caches what these return, so they run once per token (and again after a
revocation or the cache's revalidation period), not once per request.

Both kinds of credential act for a member, and take their reach from that member's role as it
is now: a session its member's scopes; an API key its own scopes within its creator's (a key
never does more than the member who made it may do today). A key whose creator has left the
company is refused (their keys are revoked with the removal; this is the second lock).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

from mps.auth.api_keys import parse_key
from mps.auth.keyring import Keyring
from mps.auth.principals import ApiKeyPrincipal, SessionPrincipal
from mps.auth.tokens import COMPANY_SWITCH, MODE_SWITCH, SessionTokens
from mps.domain.clock import Clock, iso, parse_iso
from mps.domain.scopes import builtin_role
from mps.errors import Unauthenticated
from mps.persistence.database import Database
from mps.persistence.queries import credentials as q

__all__ = [
    "KeyRefused",
    "VerifiedSession",
    "authenticate_api_key",
    "authenticate_session",
    "bearer_token",
]


class KeyRefused(Unauthenticated):
    """An API key that is not valid: unknown, or revoked (also by its creator's removal).

    `merchant_access`: whether the company of a revoked secret key lets its secret keys of that
    mode call the merchant routes; None when the key is unknown (no company to ask). A merchant
    route refuses the key for what is wrong with it (mps.http.pipeline)."""

    def __init__(self, message: str, merchant_access: bool | None = None) -> None:
        super().__init__(message)
        self.merchant_access = merchant_access


@dataclass(frozen=True)
class VerifiedSession:
    principal: SessionPrincipal
    # The earlier of the token's and the session row's expiry.
    expires_at: datetime


def bearer_token(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated("Authorization must be 'Bearer <token>'")
    return token.strip()


def _mode_settings(company_data: str, mode: str) -> dict[str, Any]:
    settings: dict[str, Any] = orjson.loads(company_data)["settings"][mode]
    return settings


def _role_scopes(role_id: str | None, custom_scopes: str | None) -> frozenset[str] | None:
    """The scopes of a member's role as read with the credential: a built-in role's, or a
    custom role's stored ones; None when the member or their role is gone."""
    if role_id is None:
        return None
    role = builtin_role(role_id)
    if role is not None:
        return role.scopes
    if custom_scopes is not None:
        return frozenset(orjson.loads(custom_scopes))
    return None


async def authenticate_session(
    token: str, tokens: SessionTokens, database: Database, clock: Clock
) -> VerifiedSession:
    claims = tokens.decode(token, clock())
    row = await q.session_with_member(
        database, claims.session_id, claims.user_id, claims.company_id, claims.mode
    )
    if row is not None and row["revoked_at"] is not None and row["revoked_reason"] == MODE_SWITCH:
        # The member switched modes: the token the switch answered is the one that works now.
        raise Unauthenticated(
            "The session has ended: it was switched to the other mode (POST /auth/session/mode), "
            "which answered a new session token; use that one, or sign in again"
        )
    if (
        row is not None
        and row["revoked_at"] is not None
        and row["revoked_reason"] == COMPANY_SWITCH
    ):
        raise Unauthenticated(
            "The session has ended: it was moved to another company (POST /auth/session/company), "
            "which answered a new session token; use that one, or sign in again"
        )
    if row is None or row["revoked_at"] is not None or row["expires_at"] <= iso(clock()):
        raise Unauthenticated("The session has ended; sign in again")
    # The role as it is now: a change of role or of a custom role's scopes drops the cached
    # principal (Credentials.forget_company), so it takes effect on the next request.
    scopes = _role_scopes(row["role_id"], row["custom_scopes"])
    if scopes is None:
        raise Unauthenticated("The session's role no longer exists; sign in again")
    principal = SessionPrincipal(
        user_id=claims.user_id,
        company_id=claims.company_id,
        session_id=claims.session_id,
        mode=claims.mode,
        role_id=row["role_id"],
        scopes=scopes,
        api_version=_mode_settings(row["data"], claims.mode)["defaultApiVersion"],
    )
    return VerifiedSession(principal, min(claims.expires_at, parse_iso(row["expires_at"])))


async def authenticate_api_key(token: str, keyring: Keyring, database: Database) -> ApiKeyPrincipal:
    shape = parse_key(token)
    if shape is None:
        raise KeyRefused("The API key is not valid")
    # During a session-secret rotation a key made before it is stored under the previous
    # secret: looked for under the current one first, then the previous (SECURITY.md).
    row = None
    for secret_hash in keyring.api_key_hashes(token):
        row = await q.api_key_by_hash(database, secret_hash)
        if row is not None:
            break
    if row is None:
        raise KeyRefused("The API key is not valid or has been revoked")
    if row["revoked_at"] is not None:
        raise KeyRefused("The API key has been revoked", _merchant_access(row))
    # The creator's role as it is now: a role change, a custom role's new scopes or a removal
    # drops the cached principal (Credentials.forget_company, on every node), so the key's
    # next request is verified against it.
    creator_scopes = _role_scopes(row["role_id"], row["custom_scopes"])
    if creator_scopes is None:
        # Removed from the company: the removal revoked the key in its own unit; a key found
        # unrevoked all the same is still refused.
        raise KeyRefused("The API key has been revoked", _merchant_access(row))
    settings = _mode_settings(row["data"], row["mode"])
    return ApiKeyPrincipal(
        key_id=row["id"],
        company_id=row["company_id"],
        mode=row["mode"],
        type=row["type"],
        scopes=frozenset(orjson.loads(row["scopes"])) & creator_scopes,
        api_version=settings["defaultApiVersion"],
        created_by=row["created_by"],
        merchant_access=bool(settings.get("apiKeyAccess", False)),
    )


def _merchant_access(row: Any) -> bool:
    """Whether the key's company lets a key like it call the merchant routes."""
    settings = _mode_settings(row["data"], row["mode"])
    return row["type"] == "secret" and bool(settings.get("apiKeyAccess", False))
