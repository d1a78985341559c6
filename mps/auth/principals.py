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

    @property
    def actor_id(self) -> str:
        """Who a change is recorded as made by (a refund's creator, an approval's requester)."""
        return self.user_id

    @property
    def described(self) -> str:
        return f"the member {self.user_id}"


@dataclass(frozen=True)
class ApiKeyPrincipal:
    """A key acts for the member who created it (`created_by`): its `scopes` are those it was
    given that its creator's role holds now (mps.auth.authenticate)."""

    key_id: str
    company_id: str
    mode: str
    type: str
    scopes: frozenset[str]
    api_version: str
    created_by: str
    # The company's apiKeyAccess setting for the key's mode when the key was verified; a change
    # of the setting drops every cached credential of the company (mps.auth.credentials).
    merchant_access: bool = False

    @property
    def livemode(self) -> bool:
        return self.mode == "live"

    @property
    def rate_key(self) -> str:
        return f"key:{self.key_id}"

    @property
    def actor_id(self) -> str:
        return self.key_id

    @property
    def described(self) -> str:
        return f"the API key {self.key_id}"

    @property
    def may_call_merchant_routes(self) -> bool:
        """A secret key of a mode whose company turned on apiKeyAccess (decisions 2)."""
        return self.type == "secret" and self.merchant_access


Principal = SessionPrincipal | ApiKeyPrincipal
