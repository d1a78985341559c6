"""Who is calling: a dashboard session or an API key."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ApiKeyPrincipal", "Principal", "SessionPrincipal"]


@dataclass(frozen=True)
class SessionPrincipal:
    user_id: str
    company_id: str
    session_id: str
    mode: str
    role_id: str
    scopes: frozenset[str]
    api_version: str

    @property
    def livemode(self) -> bool:
        return self.mode == "live"

    @property
    def rate_key(self) -> str:
        return f"user:{self.user_id}"


@dataclass(frozen=True)
class ApiKeyPrincipal:
    key_id: str
    company_id: str
    mode: str
    type: str
    scopes: frozenset[str]
    api_version: str

    @property
    def livemode(self) -> bool:
        return self.mode == "live"

    @property
    def rate_key(self) -> str:
        return f"key:{self.key_id}"


Principal = SessionPrincipal | ApiKeyPrincipal
