"""Team rules (decisions 3, 9): roles, who may hold them, and who may grant them, as pure
functions of the company's members and roles.

Vocabulary:
    built-in role  owner, admin, finance, developer, viewer (mps.domain.scopes); not editable
    custom role    a company's own named set of scopes
    owner          holds every scope and alone may transfer ownership; a company always has one

The rules every change obeys: the last owner is never demoted or removed (409 `last_owner`);
the owner role is given only by a transfer (409 `owner_transfer_required`); nobody grants a
role whose scopes exceed their own (403 `insufficient_scope`).
"""

from __future__ import annotations

from collections.abc import Mapping

from mps.domain.scopes import ALL_SCOPES, BUILTIN_ROLES, OWNER_ROLE, Role
from mps.errors import Conflict, FieldError, Forbidden, NotFound, ValidationFailed

__all__ = [
    "check_grant",
    "check_outranks",
    "check_role_scopes",
    "check_transfer",
    "check_unseat",
    "resolve_role",
]


def resolve_role(role_id: str, custom: Mapping[str, Role]) -> Role | None:
    return BUILTIN_ROLES.get(role_id) or custom.get(role_id)


def _owners(members: Mapping[str, str]) -> int:
    return sum(1 for role in members.values() if role == OWNER_ROLE)


def check_role_scopes(scopes: frozenset[str], granter_scopes: frozenset[str]) -> None:
    unknown = scopes - set(ALL_SCOPES)
    if unknown:
        raise ValidationFailed(
            [FieldError("scopes", f"unknown scopes: {', '.join(sorted(unknown))}")]
        )
    beyond = scopes - granter_scopes
    if beyond:
        msg = "You cannot grant scopes you do not hold: " + ", ".join(sorted(beyond))
        raise Forbidden(msg, code="insufficient_scope")


def check_grant(
    members: Mapping[str, str],
    custom: Mapping[str, Role],
    target: str,
    role_id: str,
    granter_scopes: frozenset[str],
) -> Role:
    """The role `target` may be given; raises when they may not."""
    if target not in members:
        raise NotFound("No such member")
    role = resolve_role(role_id, custom)
    if role is None:
        raise ValidationFailed([FieldError("roleId", "no such role")])
    if role.id == OWNER_ROLE:
        msg = "The owner role is given only by transferring ownership"
        raise Conflict(msg, code="owner_transfer_required")
    check_role_scopes(role.scopes, granter_scopes)
    check_outranks(members, custom, target, granter_scopes)
    check_unseat(members, target)
    return role


def check_outranks(
    members: Mapping[str, str],
    custom: Mapping[str, Role],
    target: str,
    granter_scopes: frozenset[str],
) -> None:
    """Nobody changes or removes a member who holds scopes they do not: a manager with
    team:write cannot demote an admin."""
    if target not in members:
        raise NotFound("No such member")
    held = resolve_role(members[target], custom)
    if held is not None and not held.scopes <= granter_scopes:
        msg = "You cannot change a member who holds scopes you do not"
        raise Forbidden(msg, code="insufficient_scope")


def check_unseat(members: Mapping[str, str], target: str) -> None:
    """Raise when taking `target`'s current role away would leave the company without owner."""
    if target not in members:
        raise NotFound("No such member")
    if members[target] == OWNER_ROLE and _owners(members) <= 1:
        msg = "The last owner cannot be demoted or removed; transfer ownership first"
        raise Conflict(msg, code="last_owner")


def check_transfer(members: Mapping[str, str], owner: str, target: str) -> None:
    if members.get(owner) != OWNER_ROLE:
        raise Forbidden("Only the owner can transfer ownership", code="insufficient_scope")
    if target not in members:
        raise NotFound("No such member")
    if target == owner:
        raise Conflict("You are the owner already", code="invalid_state")
