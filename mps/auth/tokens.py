"""Dashboard session tokens: JWTs signed with the configured algorithm only (decisions 2)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt

from mps.errors import Unauthenticated

__all__ = ["SessionClaims", "SessionTokens"]

ALGORITHM = "HS256"
ISSUER = "merchant-payments-service"
AUDIENCE = "mps-dashboard"
SESSION_TTL = timedelta(hours=12)
# Why a session was revoked, as stored (sessions.revoked_reason): switched to the other mode.
MODE_SWITCH = "mode_switch"
# ... moved to another of the person's companies (POST /auth/session/company).
COMPANY_SWITCH = "company_switch"
# How far in the future a token's issue time may be: the nodes of a cluster may disagree a little.
_CLOCK_SKEW = 60


@dataclass(frozen=True)
class SessionClaims:
    user_id: str
    company_id: str
    session_id: str
    mode: str
    expires_at: datetime


class SessionTokens:
    """Issues tokens signed with `key`; accepts tokens signed with `key` or any of `older`
    (the previous session secret's key during a rotation, SECURITY.md)."""

    def __init__(self, key: bytes, *older: bytes) -> None:
        self._key = key
        self._keys = (key, *older)

    def issue(self, claims: SessionClaims, issued_at: datetime) -> str:
        payload = {
            "sub": claims.user_id,
            "cid": claims.company_id,
            "sid": claims.session_id,
            "mode": claims.mode,
            "iat": int(issued_at.timestamp()),
            "exp": int(claims.expires_at.timestamp()),
            "iss": ISSUER,
            "aud": AUDIENCE,
        }
        return jwt.encode(payload, self._key, algorithm=ALGORITHM)

    def decode(self, token: str, now: datetime) -> SessionClaims:
        """The token's claims; 401 for a bad signature, another algorithm, expiry or audience.

        Expiry is judged against `now`, the service's clock, the one that issued the token; the
        signature, algorithm, audience and issuer by PyJWT, against each accepted key in turn."""
        payload = self._verified(token)
        if payload["mode"] not in ("test", "live"):
            raise Unauthenticated("The session token is not valid")
        exp, iat = payload["exp"], payload["iat"]
        if not isinstance(exp, int | float) or not isinstance(iat, int | float):
            raise Unauthenticated("The session token is not valid")
        if now.timestamp() >= exp:
            raise Unauthenticated("The session has expired; sign in again")
        if iat > now.timestamp() + _CLOCK_SKEW:
            raise Unauthenticated("The session token is not valid")
        return SessionClaims(
            user_id=payload["sub"],
            company_id=payload["cid"],
            session_id=payload["sid"],
            mode=payload["mode"],
            expires_at=datetime.fromtimestamp(payload["exp"], UTC),
        )

    def _verified(self, token: str) -> dict[str, Any]:
        for key in self._keys:
            try:
                payload: dict[str, Any] = jwt.decode(
                    token,
                    key,
                    algorithms=[ALGORITHM],  # never "none", never another family
                    audience=AUDIENCE,
                    issuer=ISSUER,
                    options={
                        "require": ["sub", "cid", "sid", "mode", "iat", "exp", "iss", "aud"],
                        "verify_exp": False,
                        "verify_iat": False,
                    },
                )
            except jwt.InvalidSignatureError:
                # Only the signature may be another accepted key's; any other fault (algorithm,
                # claims, shape) is the token's whichever key signed it.
                continue
            except jwt.PyJWTError as exc:
                raise Unauthenticated("The session token is not valid") from exc
            return payload
        raise Unauthenticated("The session token is not valid")
