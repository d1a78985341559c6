"""Roles and members: custom roles, role changes, removals and the ownership transfer, each
decided against the members and roles this actor holds and audited in the same unit.

A decision changes what the actor holds at once, so the next command is decided against it
(two admins demoting the last two owners at the same moment: the second finds one owner left
and is refused). The commit is detached; should it fail, what the actor holds may differ from
storage, and it is marked stale to reload before the next decision.
"""

from __future__ import annotations

from dataclasses import dataclass

from mps.actors.company.audit import commit_held, entry
from mps.actors.company.ledger import require_fresh
from mps.actors.company.state import CompanyState
from mps.actors.idempotency import IdempotentCommand
from mps.actors.runtime import Detached
from mps.domain import team as rules
from mps.domain.audit import SYSTEM, AuditContext
from mps.domain.clock import iso
from mps.domain.ids import new_id
from mps.domain.scopes import ADMIN_ROLE, BUILTIN_ROLES, OWNER_ROLE, Role
from mps.errors import Conflict, NotFound
from mps.persistence import invitation_store
from mps.persistence import team_store as store

__all__ = [
    "ChangeMemberRole",
    "CreateRole",
    "DeleteRole",
    "RemoveMember",
    "TransferOwnership",
    "UpdateRole",
    "change_member_role",
    "create_role",
    "delete_role",
    "remove_member",
    "transfer_ownership",
    "update_role",
]


@dataclass(frozen=True)
class CreateRole(IdempotentCommand):
    """Reply: the new custom Role. `granter_scopes`: the creator's own scopes, its ceiling."""

    name: str
    scopes: frozenset[str]
    granter_scopes: frozenset[str]
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class UpdateRole:
    """Reply: the Role after the change (None fields stay). 409 for a built-in role."""

    role_id: str
    name: str | None
    scopes: frozenset[str] | None
    granter_scopes: frozenset[str]
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class DeleteRole:
    """Reply: the Role as it was. 409 `role_in_use` while a member holds it."""

    role_id: str
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class ChangeMemberRole(IdempotentCommand):
    """Reply: (user id, the new role id)."""

    user_id: str
    role_id: str
    granter_scopes: frozenset[str]
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class RemoveMember:
    """Reply: (user id, the role id they held). Their sessions in the company end. Refused
    when the member holds scopes `granter_scopes` lacks (None: no such check, an operator)."""

    user_id: str
    audit: AuditContext = SYSTEM
    granter_scopes: frozenset[str] | None = None


@dataclass(frozen=True)
class TransferOwnership(IdempotentCommand):
    """Reply: the new owner's user id. `owner` must hold the owner role; they become admin."""

    owner: str
    user_id: str
    audit: AuditContext = SYSTEM


def _custom(state: CompanyState, role_id: str) -> Role:
    if role_id in BUILTIN_ROLES:
        raise Conflict("Built-in roles cannot be changed", code="invalid_state")
    role = state.roles.get(role_id)
    if role is None:
        raise NotFound("No such role")
    return role


def _name_taken(state: CompanyState, name: str, role_id: str | None = None) -> None:
    lowered = name.strip().lower()
    builtin = {r.name for r in BUILTIN_ROLES.values()}
    if lowered in builtin or any(
        r.name.lower() == lowered and r.id != role_id for r in state.roles.values()
    ):
        raise Conflict(f"A role named {name!r} exists already", code="duplicate")


def _duplicate(exc: Exception) -> Exception | None:
    if isinstance(exc, store.RoleNameTaken):
        return Conflict("A role with this name exists already", code="duplicate")
    return None


def create_role(state: CompanyState, command: CreateRole) -> Detached:
    state.require()
    require_fresh(state)
    rules.check_role_scopes(command.scopes, command.granter_scopes)
    _name_taken(state, command.name)
    role = Role(new_id("role"), command.name.strip(), command.scopes, builtin=False)
    now = iso(state.context.clock())
    audit = entry(
        state, command.audit, "role.created", ("role", role.id),
        name=role.name, scopes=sorted(role.scopes),
    )  # fmt: skip
    statements = [store.role_insert(state.company_id, role, now)]
    if command.idempotency is not None:
        statements += command.idempotency.statements(role)
    state.roles[role.id] = role

    def undo() -> None:
        state.roles.pop(role.id, None)

    return commit_held(state, statements, [audit], role, undo, _duplicate)


def update_role(state: CompanyState, command: UpdateRole) -> Detached:
    state.require()
    require_fresh(state)
    before = _custom(state, command.role_id)
    scopes = command.scopes if command.scopes is not None else before.scopes
    rules.check_role_scopes(scopes, command.granter_scopes)
    name = command.name.strip() if command.name is not None else before.name
    _name_taken(state, name, before.id)
    after = Role(before.id, name, scopes, builtin=False)
    audit = entry(
        state, command.audit, "role.updated", ("role", after.id),
        name=after.name, scopes=sorted(after.scopes), previousScopes=sorted(before.scopes),
    )  # fmt: skip
    state.roles[after.id] = after

    def undo() -> None:
        state.roles[before.id] = before

    now = iso(state.context.clock())
    return commit_held(
        state, [store.role_update(state.company_id, after, now)], [audit], after, undo, _duplicate
    )


def delete_role(state: CompanyState, command: DeleteRole) -> Detached:
    state.require()
    require_fresh(state)
    role = _custom(state, command.role_id)
    if any(held == role.id for held in state.members.values()):
        raise Conflict("Members hold this role; give them another first", code="role_in_use")
    audit = entry(state, command.audit, "role.deleted", ("role", role.id), name=role.name)
    del state.roles[role.id]

    def undo() -> None:
        state.roles[role.id] = role

    # Its pending invitations go with it, in the same unit: the actor holds no invitations to
    # refuse on, and a link to a role that is gone could never be accepted.
    now = iso(state.context.clock())
    statements = [
        store.role_delete(state.company_id, role.id),
        invitation_store.revoke_for_role(state.company_id, role.id, now),
    ]
    return commit_held(state, statements, [audit], role, undo)


def change_member_role(state: CompanyState, command: ChangeMemberRole) -> Detached:
    state.require()
    require_fresh(state)
    role = rules.check_grant(
        state.members, state.roles, command.user_id, command.role_id, command.granter_scopes
    )
    before = state.members[command.user_id]
    audit = entry(
        state, command.audit, "member.role_changed", ("user", command.user_id),
        fromRole=before, toRole=role.id,
    )  # fmt: skip
    statements = [store.member_role(state.company_id, command.user_id, role.id)]
    reply = (command.user_id, role.id)
    if command.idempotency is not None:
        statements += command.idempotency.statements(reply)
    state.members[command.user_id] = role.id

    def undo() -> None:
        state.members[command.user_id] = before

    return commit_held(state, statements, [audit], reply, undo)


def remove_member(state: CompanyState, command: RemoveMember) -> Detached:
    state.require()
    require_fresh(state)
    if command.granter_scopes is not None:
        rules.check_outranks(state.members, state.roles, command.user_id, command.granter_scopes)
    rules.check_unseat(state.members, command.user_id)
    user_id = command.user_id
    held = state.members.pop(user_id)
    now = iso(state.context.clock())
    audit = entry(state, command.audit, "member.removed", ("user", user_id), role=held)
    statements = [
        store.member_remove(state.company_id, user_id),
        store.sessions_revoke(state.company_id, user_id, now),
        # Their API keys act for them, so they go with them, in the same unit (revoked, not
        # handed to the company: nobody else chose their scopes; SECURITY.md, "API keys").
        store.keys_revoke(state.company_id, user_id, now),
    ]

    def undo() -> None:
        state.members[user_id] = held

    async def work() -> tuple[str, str]:
        # The keys each get an audit entry, so they are read first, outside the turn. None is
        # missed: no key of theirs is made after this turn (create_api_key refuses a
        # non-member) and every key made before it committed in its own turn; the UPDATE
        # above revokes by creator in any case. A failed read wrote nothing: undo only.
        why = {"reason": "member_removed", "createdBy": user_id}
        try:
            keys = await store.live_keys(state.context.database, state.company_id, user_id)
        except BaseException:
            undo()
            raise
        revoked = [
            entry(state, command.audit, "api_key.revoked", ("api_key", key_id), **why)
            for key_id in keys
        ]
        removal = commit_held(state, statements, [audit, *revoked], (user_id, held), undo)
        reply: tuple[str, str] = await removal.work
        return reply

    return Detached(work())


def transfer_ownership(state: CompanyState, command: TransferOwnership) -> Detached:
    state.require()
    require_fresh(state)
    rules.check_transfer(state.members, command.owner, command.user_id)
    target_before = state.members[command.user_id]
    audit = entry(
        state, command.audit, "ownership.transferred", ("user", command.user_id),
        fromUser=command.owner, previousRole=target_before,
    )  # fmt: skip
    statements = [
        store.member_role(state.company_id, command.user_id, OWNER_ROLE),
        store.member_role(state.company_id, command.owner, ADMIN_ROLE),
    ]
    if command.idempotency is not None:
        statements += command.idempotency.statements(command.user_id)
    state.members[command.user_id] = OWNER_ROLE
    state.members[command.owner] = ADMIN_ROLE

    def undo() -> None:
        state.members[command.user_id] = target_before
        state.members[command.owner] = OWNER_ROLE

    return commit_held(state, statements, [audit], command.user_id, undo)
