"""Roles, members and audit entries as the API shows them (decisions 3, 9)."""

from __future__ import annotations

from typing import Any

from mps.domain.audit import AuditEntry, chained
from mps.domain.scopes import Role

__all__ = ["audit_json", "member_json", "role_json"]


def role_json(role: Role, members: int | None = None) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "id": role.id,
        "name": role.name,
        "scopes": sorted(role.scopes),
        "builtin": role.builtin,
    }
    if members is not None:
        shown["memberCount"] = members
    return shown


def member_json(
    user_id: str, email: str, name: str | None, role: Role | None, joined_at: str
) -> dict[str, Any]:
    # `id` like every other resource; `userId` kept as it was (the same value).
    return {
        "id": user_id,
        "userId": user_id,
        "email": email,
        "name": name,
        "roleId": role.id if role else None,
        "roleName": role.name if role else None,
        "joinedAt": joined_at,
    }


def audit_json(entry: AuditEntry) -> dict[str, Any]:
    # What the hash covers, and the hash: a reader can check the chain from the export alone.
    return {**chained(entry), "hash": entry.hash}
