"""Webhook endpoints (decisions 10): create (the secret shown once), change, delete, rotate the
secret; and the writes that make replayed deliveries or emit a company event.

The caller reads the endpoint before asking (404 before the turn), so a turn holds no read. That
copy may be old by the time the turn commits: another request changed the endpoint meanwhile,
the dispatcher disabled it, `run.py reseal` re-sealed its secrets. So no write here is built
from it: each names only the columns it sets, anything it derives from what the row holds is
derived by the database as the statement finds the row, and its reply is the row the statement
returns. The endpoint copy serves only to name the row, and for the audit entry.

Rotation thus moves the secret stored *at commit* to `previous_secret` (`endpoint_rotate`), not
the one the caller read. Of several rotations racing, every one succeeds, in the order the actor
takes them (one turn at a time; the commits are detached, and the writer lands one actor's
units in the order they were sent), and the endpoint ends with the
secret returned by the last as current and the one returned by the one before it as previous,
for its overlap; the older ones are superseded as if the rotations had been sent one after the
other. That is what a client of a Stripe-class API expects of a retried or doubled "roll
secret": no 409 to handle, and whichever answer it kept last is a secret that still verifies.
A conditional write (`WHERE secret = <read>`) with a re-read on mismatch would reach the same
end at the cost of a retry loop in the route, and would spuriously miss after a reseal.

The company's endpoint count per mode is learnt from the first caller's read and then kept here,
so a create past the cap is refused without a write; the insert itself also counts in the
database (`endpoint_insert_within`), so a count read before a write elsewhere (an earlier
incarnation of this actor, on this node or another) cannot take the company past the cap.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

import orjson

from mps.actors.commits import undo_on_failure
from mps.actors.company.audit import commit_audited, entry
from mps.actors.company.ledger import require_fresh
from mps.actors.company.state import CompanyState
from mps.actors.idempotency import IdempotentCommand
from mps.actors.runtime import Detached
from mps.domain.audit import SYSTEM, AuditContext, AuditEntry
from mps.domain.clock import iso
from mps.domain.ids import new_id
from mps.domain.webhooks import SECRET_PURPOSE
from mps.errors import Conflict, NotFound, StaleWrite
from mps.persistence import webhook_store as store
from mps.persistence.outbox import event_insert, event_row
from mps.persistence.statements import Row, Statement
from mps.webhooks.signing import new_secret

__all__ = [
    "MAX_ENDPOINTS",
    "ROTATION_OVERLAP",
    "CreateEndpoint",
    "DeleteEndpoint",
    "EmitEvent",
    "RecordDeliveries",
    "RotateEndpointSecret",
    "UpdateEndpoint",
    "create_endpoint",
    "delete_endpoint",
    "emit_event",
    "record_deliveries",
    "rotate_secret",
    "update_endpoint",
]


@dataclass(frozen=True)
class CreateEndpoint(IdempotentCommand):
    """Reply: (the endpoint's row as stored, its secret shown once). `stored_count` is how many
    endpoints the caller read for the mode, used until the actor counts them itself."""

    mode: str
    url: str
    events: tuple[str, ...]
    description: str | None
    stored_count: int
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class UpdateEndpoint(IdempotentCommand):
    """Reply: the endpoint's row after the change. `endpoint` is the row as the caller read it;
    `changes` are validated column values (url, events, description, status)."""

    endpoint: Row
    changes: dict[str, Any]
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class RotateEndpointSecret(IdempotentCommand):
    """Reply: (the endpoint's row after, the new secret shown once)."""

    endpoint: Row
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class DeleteEndpoint:
    """Reply: the row that was deleted."""

    endpoint: Row
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class RecordDeliveries(IdempotentCommand):
    """Reply: the rows, once committed. New deliveries of a replay or a recovery."""

    rows: tuple[Row, ...]


@dataclass(frozen=True)
class EmitEvent(IdempotentCommand):
    """Reply: the event's body. An event about the company itself (webhook.ping)."""

    mode: str
    type: str
    obj: dict[str, Any]


# Per company and mode, as Stripe's 16.
MAX_ENDPOINTS = 16
# The old secret keeps signing this long after a rotation (decisions 10).
ROTATION_OVERLAP = timedelta(hours=24)


def _seal(state: CompanyState, secret: str) -> str:
    return state.keyring.seal(secret.encode(), SECRET_PURPOSE)


def create_endpoint(state: CompanyState, command: CreateEndpoint) -> Detached:
    """Reply: (the endpoint's row, its secret, shown once), once committed. It counts against
    the cap from the turn on, so creates racing past it are refused without a write."""
    require_fresh(state)
    state.require()
    count = state.endpoint_counts.setdefault(command.mode, command.stored_count)
    if count >= MAX_ENDPOINTS:
        raise _limit_reached()
    secret = new_secret()
    now = iso(state.context.clock())
    row: Row = {
        "id": new_id("whe"),
        "company_id": state.company_id,
        "mode": command.mode,
        "url": command.url,
        "description": command.description,
        "events": orjson.dumps(list(command.events)).decode(),
        "secret": _seal(state, secret),
        "previous_secret": None,
        "previous_secret_expires_at": None,
        "status": "enabled",
        "disabled_reason": None,
        "created_at": now,
        "updated_at": now,
    }
    result = (row, secret)
    statements = [
        replace(
            store.endpoint_insert_within(row, MAX_ENDPOINTS),
            expect_rows=1,
            stale_error=_LimitReached,
        )
    ]
    if command.idempotency is not None:
        statements += command.idempotency.statements(result)
    audit = entry(
        state, command.audit, "webhook_endpoint.created", ("webhook_endpoint", row["id"]),
        url=command.url, mode=command.mode, events=list(command.events),
    )  # fmt: skip
    state.endpoint_counts[command.mode] = count + 1

    def undo() -> None:
        state.endpoint_counts[command.mode] = max(0, state.endpoint_counts[command.mode] - 1)

    async def commit() -> tuple[Row, str]:
        try:
            with undo_on_failure(undo=undo):
                await commit_audited(state, statements, [audit])
        except _LimitReached as exc:
            # The count learnt from a read was low: storage holds the cap already.
            state.endpoint_counts[command.mode] = MAX_ENDPOINTS
            raise _limit_reached() from exc
        return result

    return Detached(commit())


def _limit_reached() -> Conflict:
    msg = f"A company can have at most {MAX_ENDPOINTS} webhook endpoints per mode"
    return Conflict(msg, code="limit_reached")


class _LimitReached(StaleWrite):
    """The insert found the company's mode at the cap already: its unit is rolled back."""


def update_endpoint(state: CompanyState, command: UpdateEndpoint) -> Detached:
    """Set the named fields, whatever the endpoint holds now (a PATCH: a concurrent change to
    other fields stays); the reply is the row as committed."""
    require_fresh(state)
    before = command.endpoint
    changes: dict[str, Any] = dict(command.changes)
    if "events" in changes:
        changes["events"] = orjson.dumps(list(changes["events"])).decode()
    if "status" in changes:
        changes["disabled_reason"] = (
            None if changes["status"] == "enabled" else "disabled by a member"
        )
    changes["updated_at"] = iso(state.context.clock())
    audit = entry(
        state, command.audit, "webhook_endpoint.updated", ("webhook_endpoint", before["id"]),
        changes={k: list(v) if isinstance(v, tuple) else v for k, v in command.changes.items()},
    )  # fmt: skip
    return _change(state, before, changes, command.idempotency, audit)


def rotate_secret(state: CompanyState, command: RotateEndpointSecret) -> Detached:
    """A new secret; the one stored when this commits becomes the previous (module docstring).

    The reply is the row as committed. A stored idempotent response is rendered before the
    commit, from the caller's copy with this rotation's columns: the same secret and expiry,
    though a field another request changed meanwhile shows its value as read."""
    require_fresh(state)
    before = command.endpoint
    secret = new_secret()
    sealed = _seal(state, secret)
    now = state.context.clock()
    until, at = iso(now + ROTATION_OVERLAP), iso(now)
    rotate = store.endpoint_rotate(
        state.company_id, before["mode"], before["id"], sealed, until, at
    )
    statements = [_existing(rotate)]
    if command.idempotency is not None:
        rendered = {
            **before,
            "secret": sealed,
            "previous_secret_expires_at": until,
            "updated_at": at,
        }
        statements += command.idempotency.statements((rendered, secret))
    audit = entry(
        state, command.audit, "webhook_endpoint.secret_rotated", ("webhook_endpoint", before["id"])
    )

    async def commit() -> tuple[Row, str]:
        [after] = await _commit_existing(state, statements, audit)
        return after, secret

    return Detached(commit())


class _EndpointGone(StaleWrite):
    """The endpoint was deleted since the caller read it: its unit, audit entry and all, is
    rolled back."""


def _existing(statement: Statement) -> Statement:
    return replace(statement, expect_rows=1, stale_error=_EndpointGone)


async def _commit_existing(
    state: CompanyState, statements: list[Statement], audit: AuditEntry
) -> list[Row]:
    """Commit a unit whose first statement writes the endpoint; the row it returned."""
    try:
        rows = await commit_audited(state, statements, [audit])
    except _EndpointGone as exc:
        raise NotFound("No such webhook endpoint") from exc
    return rows[0]


def _change(
    state: CompanyState, before: Row, changes: dict[str, Any], idempotency: Any, audit: AuditEntry
) -> Detached:
    statements = [
        _existing(store.endpoint_update(state.company_id, before["mode"], before["id"], changes))
    ]
    if idempotency is not None:
        # Rendered before the commit, so from the caller's copy (as rotate_secret's).
        statements += idempotency.statements({**before, **changes})

    async def commit() -> Row:
        [after] = await _commit_existing(state, statements, audit)
        return after

    return Detached(commit())


def delete_endpoint(state: CompanyState, command: DeleteEndpoint) -> Detached:
    """Delete the endpoint; the reply is the row as it was when deleted."""
    require_fresh(state)
    endpoint = command.endpoint
    audit = entry(
        state, command.audit, "webhook_endpoint.deleted", ("webhook_endpoint", endpoint["id"]),
        url=endpoint["url"],
    )  # fmt: skip
    statement = store.endpoint_delete(state.company_id, endpoint["mode"], endpoint["id"])

    async def commit() -> Row:
        [deleted] = await _commit_existing(state, [_existing(statement)], audit)
        # Counted down once gone (not in the turn): until then a create past the cap is
        # refused, the cautious side.
        mode = endpoint["mode"]
        if mode in state.endpoint_counts:
            state.endpoint_counts[mode] = max(0, state.endpoint_counts[mode] - 1)
        return deleted

    return Detached(commit())


def record_deliveries(state: CompanyState, command: RecordDeliveries) -> Detached:
    """Commit new deliveries (a replay or a recovery) with the request's key."""
    statements = [store.delivery_insert(r) for r in command.rows]
    if command.idempotency is not None:
        statements += command.idempotency.statements(command.rows)

    async def commit() -> list[Row]:
        if statements:
            await state.context.commit(*statements)
        return list(command.rows)

    return Detached(commit())


def emit_event(state: CompanyState, command: EmitEvent) -> Detached:
    """An event about the company itself (webhook.ping); its body as a client sees it."""
    state.require()
    row = event_row(
        company_id=state.company_id,
        mode=command.mode,
        event_type=command.type,
        created_at=iso(state.context.clock()),
        obj=command.obj,
    )
    body: dict[str, Any] = orjson.loads(row["data"])
    statements = [event_insert(row)]
    if command.idempotency is not None:
        statements += command.idempotency.statements(body)

    async def commit() -> dict[str, Any]:
        await state.context.commit(*statements)
        return body

    return Detached(commit())
