"""API keys: created within the creator's own scopes (shown once, a keyed hash at rest), and
revoked.

A key acts for its creator: it is made only by a member of the company (a session a removed
member's node still holds is refused here), its reach follows the creator's role as it is now
(mps.auth.authenticate), and removing the member revokes their keys (mps.actors.company.team).
Both commit detached: a key is nothing the actor holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from mps.actors.company.audit import commit_audited, entry
from mps.actors.company.ledger import require_fresh
from mps.actors.company.state import CompanyState
from mps.actors.idempotency import IdempotentCommand
from mps.actors.runtime import Detached
from mps.auth.api_keys import generate_key, parse_key
from mps.domain.audit import SYSTEM, AuditContext
from mps.domain.clock import iso
from mps.domain.ids import new_id
from mps.domain.scopes import unusable_key_scopes
from mps.errors import FieldError, Forbidden, NotFound, ValidationFailed
from mps.persistence import company_store as store
from mps.persistence.statements import Row

__all__ = ["CreateApiKey", "RevokeApiKey", "create_api_key", "revoke_api_key"]


@dataclass(frozen=True)
class CreateApiKey(IdempotentCommand):
    """Reply: (the key's row as stored, the full key shown once)."""

    created_by: str
    creator_scopes: frozenset[str]
    name: str
    type: str
    mode: str
    scopes: tuple[str, ...]
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class RevokeApiKey(IdempotentCommand):
    """Reply: the key's row after revocation. `key` is the row as the caller read it (404 before
    asking when there is none), so the turn can present the result without a read."""

    key: Row
    audit: AuditContext = SYSTEM


def create_api_key(state: CompanyState, command: CreateApiKey) -> Detached:
    """Reply: (the key's row, the key itself, shown once), once committed."""
    require_fresh(state)
    state.require()
    if command.created_by not in state.members:
        # Removed since their session was verified (another node's cache may still hold it):
        # a key made now would be revoked with nobody to act for.
        raise Forbidden("You are not a member of this company", code="not_a_member")
    beyond = set(command.scopes) - command.creator_scopes
    if beyond:
        raise Forbidden("A key cannot have scopes its creator lacks: " + ", ".join(sorted(beyond)))
    # After the creator's own scopes (403), as the contract orders it; then what the key could
    # never use, so nobody holds a key that only looks able to do something.
    unusable, why = unusable_key_scopes(command.type, command.mode, command.scopes)
    if unusable:
        message = f"a {command.mode} {command.type} key can never use {', '.join(unusable)}: {why}"
        raise ValidationFailed([FieldError("scopes", message)])
    key = generate_key(command.type, command.mode)
    shape = parse_key(key)
    assert shape is not None
    row = {
        "id": new_id("key"),
        "company_id": state.company_id,
        "mode": command.mode,
        "name": command.name,
        "type": command.type,
        "prefix": shape.prefix,
        "last4": shape.last4,
        "secret_hash": state.keyring.hash_api_key(key),
        "scopes": orjson.dumps(sorted(set(command.scopes))).decode(),
        "created_by": command.created_by,
        "created_at": iso(state.context.clock()),
        "last_used_at": None,
        "revoked_at": None,
    }
    result = (row, key)
    statements = [store.api_key_insert(row)]
    if command.idempotency is not None:
        statements += command.idempotency.statements(result)
    key_id = str(row["id"])
    audit = entry(
        state, command.audit, "api_key.created", ("api_key", key_id),
        name=command.name, type=command.type, mode=command.mode, scopes=sorted(set(command.scopes)),
    )  # fmt: skip

    async def commit() -> tuple[dict[str, Any], str]:
        await commit_audited(state, statements, [audit])
        return result

    return Detached(commit())


def revoke_api_key(state: CompanyState, command: RevokeApiKey) -> Detached:
    """Reply: the key's row as revoked (404 when the company has no such key)."""
    require_fresh(state)
    now = iso(state.context.clock())
    before = command.key
    after = {**before, "revoked_at": before["revoked_at"] or now}
    statements = [store.api_key_revoke(state.company_id, before["id"], now)]
    if command.idempotency is not None:
        statements += command.idempotency.statements(after)
    audit = entry(state, command.audit, "api_key.revoked", ("api_key", before["id"]))

    async def commit() -> Row:
        rows = await commit_audited(state, statements, [audit])
        if not rows[0]:
            raise NotFound("No such API key")
        revoked: Row = {**after, **rows[0][0]}
        return revoked

    return Detached(commit())
