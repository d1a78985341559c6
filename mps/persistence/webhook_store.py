"""Webhook endpoints, deliveries and attempts as rows: the statements their writers commit.

Endpoint statements name the company and mode, so no write reaches another tenant's endpoint.
Delivery statements are the dispatcher's: each is guarded by the state it expects, so two
nodes handling copies of one broker message (at-least-once) cannot both record an attempt.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mps.persistence.statements import Row, Statement, insert, placeholders

__all__ = [
    "default_secret_insert",
    "delivery_insert",
    "delivery_outcome",
    "disabled_event",
    "endpoint_delete",
    "endpoint_disable",
    "endpoint_failing",
    "endpoint_insert",
    "endpoint_insert_within",
    "endpoint_rotate",
    "endpoint_update",
    "events_dispatched",
]

# What an endpoint's writes return: the row as the unit left it (as mps.persistence.queries.
# webhooks reads it), so a caller presents what was committed, not the copy it read before.
_ENDPOINT_RETURNING = (
    "RETURNING id, company_id, mode, url, description, events, secret, previous_secret, "
    "previous_secret_expires_at, status, disabled_reason, created_at, updated_at"
)


def endpoint_insert(row: Row) -> Statement:
    return insert("webhook_endpoints", row)


def endpoint_insert_within(row: Row, limit: int) -> Statement:
    """Insert the endpoint only while its company has fewer than `limit` in its mode; returns
    its id when it did. The count is the database's at the insert, not one read earlier."""
    columns = ", ".join(row)
    marks = placeholders(len(row))
    n = len(row)
    return Statement(
        f"INSERT INTO webhook_endpoints ({columns}) SELECT {marks} WHERE (SELECT COUNT(*) FROM "
        f"webhook_endpoints WHERE company_id = ${n + 1} AND mode = ${n + 2}) < ${n + 3} "
        "RETURNING id",
        (*row.values(), row["company_id"], row["mode"], limit),
    )


def endpoint_update(
    company_id: str, mode: str, endpoint_id: str, changes: Mapping[str, Any]
) -> Statement:
    """Set `changes` on the endpoint (each named column to its value, whatever it held: a
    PATCH); returns the row after, none when it is gone."""
    columns = list(changes)
    sets = ", ".join(f"{c} = ${i}" for i, c in enumerate(columns, start=1))
    n = len(columns)
    return Statement(
        f"UPDATE webhook_endpoints SET {sets} "
        f"WHERE id = ${n + 1} AND company_id = ${n + 2} AND mode = ${n + 3} " + _ENDPOINT_RETURNING,
        (*changes.values(), endpoint_id, company_id, mode),
    )


def endpoint_rotate(
    company_id: str, mode: str, endpoint_id: str, sealed: str, previous_until: str, now: str
) -> Statement:
    """Make `sealed` the endpoint's secret and the secret it holds *now* the previous one,
    signing until `previous_until`; returns the row after, none when it is gone.

    The previous secret is taken by the database from the row as this statement finds it, not
    from a copy read before: of two rotations racing, the second to commit keeps the first's
    secret as its previous (Postgres re-reads a row it waited to lock; SQLite has one writer).
    """
    return Statement(
        "UPDATE webhook_endpoints SET previous_secret = secret, secret = $1, "
        "previous_secret_expires_at = $2, updated_at = $3 "
        "WHERE id = $4 AND company_id = $5 AND mode = $6 " + _ENDPOINT_RETURNING,
        (sealed, previous_until, now, endpoint_id, company_id, mode),
    )


def endpoint_delete(company_id: str, mode: str, endpoint_id: str) -> Statement:
    """Delete the endpoint; returns the row as it was, none when it was gone already."""
    return Statement(
        "DELETE FROM webhook_endpoints WHERE id = $1 AND company_id = $2 AND mode = $3 "
        + _ENDPOINT_RETURNING,
        (endpoint_id, company_id, mode),
    )


def endpoint_disable(
    endpoint_id: str, reason: str, now: str, *, failing_before: str | None = None
) -> Statement:
    """Disable an enabled endpoint (with `failing_before`: only one failing since before then);
    returns a row only when this statement disabled it, so the owners are told once."""
    condition = "" if failing_before is None else " AND failing_since <= $4"
    params = (reason, now, endpoint_id) + (() if failing_before is None else (failing_before,))
    return Statement(
        "UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = $1, updated_at = $2 "
        f"WHERE id = $3 AND status = 'enabled'{condition} "
        "RETURNING id, company_id, mode, url, description, events, status, disabled_reason, "
        "previous_secret_expires_at, created_at, updated_at",
        params,
    )


def endpoint_failing(endpoint_id: str, failed: bool, now: str) -> Statement:
    """Note a failed attempt (the first of a run starts the clock) or a success (stops it)."""
    if failed:
        return Statement(
            "UPDATE webhook_endpoints SET failing_since = $1 "
            "WHERE id = $2 AND failing_since IS NULL",
            (now, endpoint_id),
        )
    # A batch of successes to one endpoint clears its clock once (`repeatable`).
    return Statement(
        "UPDATE webhook_endpoints SET failing_since = NULL "
        "WHERE id = $1 AND failing_since IS NOT NULL",
        (endpoint_id,),
        repeatable=True,
    )


def disabled_event(event: Row, endpoint_id: str, now: str) -> Statement:
    """The event telling the company an endpoint was disabled: inserted only if the endpoint
    was disabled by this very unit (its `updated_at` is `now`)."""
    columns = ", ".join(event)
    marks = placeholders(len(event))
    n = len(event)
    return Statement(
        f"INSERT INTO events ({columns}) SELECT {marks} WHERE EXISTS (SELECT 1 FROM "
        f"webhook_endpoints WHERE id = ${n + 1} AND status = 'disabled' AND updated_at = ${n + 2})",
        (*event.values(), endpoint_id, now),
    )


def default_secret_insert(company_id: str, mode: str, sealed: str, now: str) -> Statement:
    """The company's default signing secret, unless one exists (first writer wins)."""
    return Statement(
        "INSERT INTO webhook_default_secrets (company_id, mode, secret, created_at) "
        "VALUES ($1, $2, $3, $4) ON CONFLICT (company_id, mode) DO NOTHING",
        (company_id, mode, sealed, now),
    )


def delivery_insert(row: Row) -> Statement:
    """A delivery, unless this event already has one for this target and origin (a fan-out
    message handled twice); returns the row only when inserted."""
    columns = ", ".join(row)
    marks = placeholders(len(row))
    return Statement(
        f"INSERT INTO webhook_deliveries ({columns}) VALUES ({marks}) "
        "ON CONFLICT (event_id, target, origin) DO NOTHING RETURNING id",
        tuple(row.values()),
        keyed_by=list(row).index("id"),
    )


def delivery_outcome(
    delivery_id: str,
    attempt: int,
    *,
    status: str,
    next_attempt_at: str | None,
    at: str,
    status_code: int | None,
    error: str | None,
    duration_ms: int,
) -> list[Statement]:
    """Record attempt number `attempt` and the state it left the delivery in. The update
    matches only while the delivery has made `attempt - 1` attempts and is still open, so a
    copy of the same attempt handled elsewhere records nothing (the unit's first statement
    then returns no row and the caller drops the rest)."""
    return [
        Statement(
            "UPDATE webhook_deliveries SET status = $1, attempts = $2, next_attempt_at = $3, "
            "last_attempt_at = $4, last_status_code = $5, last_error = $6, updated_at = $4 "
            "WHERE id = $7 AND attempts = $8 AND status IN ('PENDING', 'RETRYING') RETURNING id",
            (status, attempt, next_attempt_at, at, status_code, error, delivery_id, attempt - 1),
            keyed_by=6,
        ),
        Statement(
            "INSERT INTO webhook_attempts (delivery_id, attempt, at, status_code, error, "
            "duration_ms) SELECT $1, $2, $3, $4, $5, $6 WHERE EXISTS (SELECT 1 FROM "
            "webhook_deliveries WHERE id = $1 AND attempts = $2 AND last_attempt_at = $3)",
            (delivery_id, attempt, at, status_code, error, duration_ms),
        ),
    ]


def events_dispatched(event_ids: list[str], now: str) -> Statement:
    marks = placeholders(len(event_ids), 2)
    return Statement(
        f"UPDATE events SET dispatched_at = $1 WHERE id IN ({marks}) AND dispatched_at IS NULL",
        (now, *event_ids),
    )
