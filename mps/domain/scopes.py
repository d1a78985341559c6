"""Permission scopes and the built-in roles (decisions 3), and what an API key can ever use.

Pure vocabulary and rules: the team rules (mps.domain.team) decide with them, and mps.auth
checks a principal's scopes against them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "ADMIN_ROLE",
    "ALL_SCOPES",
    "BUILTIN_ROLES",
    "KEY_ROUTE_SCOPES",
    "OWNER_ROLE",
    "PING_SCOPE",
    "SANDBOX_SCOPES",
    "Role",
    "builtin_role",
    "unusable_key_scopes",
]

ALL_SCOPES: tuple[str, ...] = (
    "payments:read", "payments:write",
    "refunds:read", "refunds:write",
    "payouts:read", "payouts:write",
    "cards:read", "cards:write",
    "settings:read", "settings:write",
    "customers:read",
    "invoices:read", "invoices:write",
    "analytics:read",
    "team:read", "team:write",
    "audit:read",
)  # fmt: skip

_READ = tuple(s for s in ALL_SCOPES if s.endswith(":read"))


@dataclass(frozen=True)
class Role:
    id: str
    name: str
    scopes: frozenset[str]
    builtin: bool = True


OWNER_ROLE = "role_owner"
# What an owner becomes when they transfer ownership.
ADMIN_ROLE = "role_admin"

BUILTIN_ROLES: dict[str, Role] = {
    role.id: role
    for role in (
        Role(OWNER_ROLE, "owner", frozenset(ALL_SCOPES)),
        # Everything but ownership transfer, which is a role check, not a scope.
        Role(ADMIN_ROLE, "admin", frozenset(ALL_SCOPES)),
        Role(
            "role_finance",
            "finance",
            frozenset(
                s
                for s in ALL_SCOPES
                if s.split(":")[0]
                in {"payments", "refunds", "payouts", "invoices", "customers", "analytics"}
            ),
        ),
        # "Read scopes, plus settings:write": only the viewer is said to lack audit:read.
        Role("role_developer", "developer", frozenset({*_READ, "settings:write"})),
        Role("role_viewer", "viewer", frozenset(set(_READ) - {"audit:read"})),
    )
}


def builtin_role(role_id: str) -> Role | None:
    return BUILTIN_ROLES.get(role_id)


# What an API key can ever use (decisions 2), so a key is never made with a scope that could
# not serve it. A test holds these to the route table and the sandbox's kinds.
PING_SCOPE = "analytics:read"
# The write scopes of what the sandbox touches: test keys of either type.
SANDBOX_SCOPES = frozenset(
    f"{family}:write"
    for family in ("payments", "refunds", "payouts", "cards", "invoices", "settings")
)
# The scopes of the merchant routes a secret key may call once its company turns on
# apiKeyAccess. Team, roles, approvals and the audit trail stay with people; analytics is read
# through the dashboard (a key's analytics:read serves /developer/ping).
KEY_ROUTE_SCOPES = frozenset(
    s for s in ALL_SCOPES if s.split(":")[0] not in {"team", "audit", "analytics"}
)


def unusable_key_scopes(key_type: str, mode: str, scopes: Iterable[str]) -> tuple[list[str], str]:
    """The requested scopes a key of this type and mode could never use, and why (empty when
    every scope can be used)."""
    usable: frozenset[str] | set[str]
    if key_type == "secret":
        # The sandbox's scopes are among the merchant routes' own.
        usable = KEY_ROUTE_SCOPES | {PING_SCOPE}
        why = "team and audit routes take a dashboard session only"
    elif mode == "test":
        usable = SANDBOX_SCOPES | {PING_SCOPE}
        why = (
            "a publishable key can call only /developer/ping (analytics:read) and the sandbox "
            "(the write scope of what it touches)"
        )
    else:
        usable = {PING_SCOPE}
        why = (
            "a publishable key can call only /developer/ping (analytics:read); the sandbox "
            "takes test keys only"
        )
    return [s for s in scopes if s not in usable], why
