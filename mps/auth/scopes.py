"""The scopes and roles live in `mps.domain.scopes`; this module only hands them on to the
importers that still name it (mps.http.pipeline). Import from `mps.domain.scopes`."""

from __future__ import annotations

from mps.domain.scopes import (
    ADMIN_ROLE,
    ALL_SCOPES,
    BUILTIN_ROLES,
    KEY_ROUTE_SCOPES,
    OWNER_ROLE,
    PING_SCOPE,
    SANDBOX_SCOPES,
    Role,
    builtin_role,
    unusable_key_scopes,
)

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
