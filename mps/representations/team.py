"""Roles, members and audit entries as the API shows them (decisions 3, 9)."""

from __future__ import annotations

from typing import Any

from mps.domain.audit import AuditEntry
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
    return {
        "id": entry.id,
        "at": entry.at,
        "actor": {"type": entry.context.actor_type, "id": entry.context.actor_id},
        "action": entry.action,
        "target": {"type": entry.target_type, "id": entry.target_id},
        "details": entry.details,
        "ip": entry.context.ip,
        "requestId": entry.context.request_id,
        "seq": entry.seq,
        "prevHash": entry.prev_hash,
        "hash": entry.hash,
    }
