"""Turn an `Authorization: Bearer …` header into a principal, or refuse with 401.

Sessions are checked against the sessions table on every request, so a logout or a member's
removal takes effect at once on every node that shares the database.
"""

from __future__ import annotations

from typing import Any

import orjson

from mps.auth.api_keys import parse_key
from mps.auth.keyring import Keyring
from mps.auth.principals import ApiKeyPrincipal, SessionPrincipal
from mps.auth.scopes import builtin_role
from mps.auth.tokens import SessionTokens
from mps.domain.clock import Clock, iso
from mps.errors import Unauthenticated
from mps.persistence.database import Database

__all__ = ["authenticate_api_key", "authenticate_session", "bearer_token"]


def bearer_token(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated("Authorization must be 'Bearer <token>'")
    return token.strip()


def _api_version(company_data: str, mode: str) -> str:
    settings: dict[str, Any] = orjson.loads(company_data)["settings"][mode]
    version: str = settings["defaultApiVersion"]
    return version


async def authenticate_session(
    token: str, tokens: SessionTokens, database: Database, clock: Clock
) -> SessionPrincipal:
    claims = tokens.decode(token)
    row = await database.fetchrow(
        "SELECT s.revoked_at, s.expires_at, m.role_id, c.data "
        "FROM sessions s "
        "JOIN members m ON m.company_id = s.company_id AND m.user_id = s.user_id "
        "JOIN companies c ON c.id = s.company_id "
        "WHERE s.id = $1 AND s.user_id = $2 AND s.company_id = $3 AND s.mode = $4",
        claims.session_id,
        claims.user_id,
        claims.company_id,
        claims.mode,
    )
    if row is None or row["revoked_at"] is not None or row["expires_at"] <= iso(clock()):
        raise Unauthenticated("The session has ended; sign in again")
    role = builtin_role(row["role_id"])
    if role is None:
        raise Unauthenticated("The session's role no longer exists; sign in again")
    return SessionPrincipal(
        user_id=claims.user_id,
        company_id=claims.company_id,
        session_id=claims.session_id,
        mode=claims.mode,
        role_id=role.id,
        scopes=role.scopes,
        api_version=_api_version(row["data"], claims.mode),
    )


async def authenticate_api_key(token: str, keyring: Keyring, database: Database) -> ApiKeyPrincipal:
    shape = parse_key(token)
    if shape is None:
        raise Unauthenticated("The API key is not valid")
    row = await database.fetchrow(
        "SELECT k.id, k.company_id, k.mode, k.type, k.scopes, k.revoked_at, c.data "
        "FROM api_keys k JOIN companies c ON c.id = k.company_id WHERE k.secret_hash = $1",
        keyring.hash_api_key(token),
    )
    if row is None or row["revoked_at"] is not None:
        raise Unauthenticated("The API key is not valid or has been revoked")
    return ApiKeyPrincipal(
        key_id=row["id"],
        company_id=row["company_id"],
        mode=row["mode"],
        type=row["type"],
        scopes=frozenset(orjson.loads(row["scopes"])),
        api_version=_api_version(row["data"], row["mode"]),
    )
