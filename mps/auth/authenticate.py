"""Turn a bearer token into a principal, or refuse with 401: the full check, one read each.

`mps.auth.credentials` caches what these return, so they run once per token (and again after a
revocation or the cache's revalidation period), not once per request.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

from mps.auth.api_keys import parse_key
from mps.auth.keyring import Keyring
from mps.auth.principals import ApiKeyPrincipal, SessionPrincipal
from mps.auth.scopes import builtin_role
from mps.auth.tokens import SessionTokens
from mps.domain.clock import Clock, iso, parse_iso
from mps.errors import Unauthenticated
from mps.persistence.database import Database
from mps.persistence.queries import credentials as q

__all__ = ["VerifiedSession", "authenticate_api_key", "authenticate_session", "bearer_token"]


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


async def authenticate_session(
    token: str, tokens: SessionTokens, database: Database, clock: Clock
) -> VerifiedSession:
    claims = tokens.decode(token, clock())
    row = await q.session_with_member(
        database, claims.session_id, claims.user_id, claims.company_id, claims.mode
    )
    if row is None or row["revoked_at"] is not None or row["expires_at"] <= iso(clock()):
        raise Unauthenticated("The session has ended; sign in again")
    # The role as it is now: a change of role or of a custom role's scopes drops the cached
    # principal (Credentials.forget_company), so it takes effect on the next request.
    role = builtin_role(row["role_id"])
    if role is not None:
        scopes = role.scopes
    elif row["custom_scopes"] is not None:
        scopes = frozenset(orjson.loads(row["custom_scopes"]))
    else:
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
        raise Unauthenticated("The API key is not valid")
    # During a session-secret rotation a key made before it is stored under the previous
    # secret: looked for under the current one first, then the previous (SECURITY.md).
    row = None
    for secret_hash in keyring.api_key_hashes(token):
        row = await q.api_key_by_hash(database, secret_hash)
        if row is not None:
            break
    if row is None or row["revoked_at"] is not None:
        raise Unauthenticated("The API key is not valid or has been revoked")
    settings = _mode_settings(row["data"], row["mode"])
    return ApiKeyPrincipal(
        key_id=row["id"],
        company_id=row["company_id"],
        mode=row["mode"],
        type=row["type"],
        scopes=frozenset(orjson.loads(row["scopes"])),
        api_version=settings["defaultApiVersion"],
        merchant_access=bool(settings.get("apiKeyAccess", False)),
    )
