"""Permission scopes and the built-in roles (decisions 3)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ADMIN_ROLE", "ALL_SCOPES", "BUILTIN_ROLES", "OWNER_ROLE", "Role", "builtin_role"]

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
