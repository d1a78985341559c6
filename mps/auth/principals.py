"""Who is calling: a dashboard session or an API key."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mps.domain.company import InMode

__all__ = ["ApiKeyPrincipal", "Principal", "SessionPrincipal"]


class _Caller(InMode):
    """Either kind of caller, known by `actor_id`: who a change is recorded as made by (a
    refund's creator, an approval's requester), whom a rate limit counts, and whom a message
    names."""

    __slots__ = ()
    _rate_kind: ClassVar[str]
    _described_as: ClassVar[str]

    @property
    def actor_id(self) -> str:
        raise NotImplementedError

    @property
    def rate_key(self) -> str:
        return f"{self._rate_kind}:{self.actor_id}"

    @property
    def described(self) -> str:
        return f"{self._described_as} {self.actor_id}"


@dataclass(frozen=True)
class SessionPrincipal(_Caller):
    user_id: str
    company_id: str
    session_id: str
    mode: str
    role_id: str
    scopes: frozenset[str]
    api_version: str

    _rate_kind = "user"
    _described_as = "the member"

    @property
    def actor_id(self) -> str:
        return self.user_id


@dataclass(frozen=True)
class ApiKeyPrincipal(_Caller):
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

    _rate_kind = "key"
    _described_as = "the API key"

    @property
    def actor_id(self) -> str:
        return self.key_id

    @property
    def may_call_merchant_routes(self) -> bool:
        """A secret key of a mode whose company turned on apiKeyAccess (decisions 2)."""
        return self.type == "secret" and self.merchant_access


Principal = SessionPrincipal | ApiKeyPrincipal
