"""Webhook reads: endpoints, deliveries, attempts and default secrets. Every read of a tenant's
rows names the company; the dispatcher's reads by delivery id are the only exception, and they
take ids that only our own messages carry."""

from __future__ import annotations

from collections.abc import Sequence

from mps.persistence.database import Database
from mps.persistence.queries.paging import PageRequest, Where, fetch_one_in_mode, fetch_page
from mps.persistence.queries.shards import due_in_shards
from mps.persistence.statements import Row

__all__ = [
    "count_endpoints",
    "default_secret",
    "deliveries_of_endpoint",
    "deliveries_of_event",
    "delivery",
    "delivery_of_company",
    "endpoint",
    "endpoints_for_event",
    "failed_deliveries",
    "list_endpoints",
    "open_deliveries",
]

_ENDPOINT_COLUMNS = (
    "id, company_id, mode, url, description, events, secret, previous_secret, "
    "previous_secret_expires_at, status, disabled_reason, created_at, updated_at"
)
_DELIVERY_COLUMNS = (
    "id, company_id, mode, event_id, event_type, endpoint_id, target, origin, url, status, "
    "attempts, next_attempt_at, last_attempt_at, last_status_code, last_error, created_at, "
    "updated_at"
)


async def list_endpoints(
    db: Database, company_id: str, mode: str, page: PageRequest
) -> tuple[list[Row], str | None]:
    where = Where.in_mode(company_id, mode)
    return await fetch_page(db, f"SELECT {_ENDPOINT_COLUMNS} FROM webhook_endpoints", where, page)


async def endpoint(db: Database, company_id: str, mode: str, endpoint_id: str) -> Row | None:
    return await fetch_one_in_mode(
        db, f"SELECT {_ENDPOINT_COLUMNS} FROM webhook_endpoints", company_id, mode, endpoint_id
    )


async def count_endpoints(db: Database, company_id: str, mode: str) -> int:
    count: int = await db.fetchval(
        "SELECT COUNT(*) FROM webhook_endpoints WHERE company_id = $1 AND mode = $2",
        company_id,
        mode,
    )
    return int(count)


async def endpoints_for_event(db: Database, company_id: str, mode: str) -> list[Row]:
    """The company's enabled endpoints in `mode`; the caller matches their event types."""
    return await db.fetch(
        f"SELECT {_ENDPOINT_COLUMNS} FROM webhook_endpoints "
        "WHERE company_id = $1 AND mode = $2 AND status = 'enabled' ORDER BY created_at, id",
        company_id,
        mode,
    )


async def default_secret(db: Database, company_id: str, mode: str) -> str | None:
    value = await db.fetchval(
        "SELECT secret FROM webhook_default_secrets WHERE company_id = $1 AND mode = $2",
        company_id,
        mode,
    )
    return None if value is None else str(value)


async def delivery(db: Database, delivery_id: str) -> Row | None:
    return await db.fetchrow(
        f"SELECT {_DELIVERY_COLUMNS} FROM webhook_deliveries WHERE id = $1", delivery_id
    )


async def delivery_of_company(
    db: Database, company_id: str, mode: str, delivery_id: str
) -> Row | None:
    return await fetch_one_in_mode(
        db, f"SELECT {_DELIVERY_COLUMNS} FROM webhook_deliveries", company_id, mode, delivery_id
    )


async def deliveries_of_endpoint(
    db: Database, company_id: str, endpoint_id: str, status: str | None, page: PageRequest
) -> tuple[list[Row], str | None]:
    where = (
        Where.in_company(company_id).compare("endpoint_id", endpoint_id).compare("status", status)
    )
    return await fetch_page(db, f"SELECT {_DELIVERY_COLUMNS} FROM webhook_deliveries", where, page)


async def deliveries_of_event(
    db: Database, company_id: str, mode: str, page: PageRequest, *, event_id: str
) -> tuple[list[Row], str | None]:
    """The deliveries of one event (to each endpoint, or to its payment's own URL, and each
    replay), newest first."""
    where = Where.in_mode(company_id, mode).compare("event_id", event_id)
    return await fetch_page(db, f"SELECT {_DELIVERY_COLUMNS} FROM webhook_deliveries", where, page)


async def failed_deliveries(
    db: Database, company_id: str, endpoint_id: str, since: str, until: str, limit: int
) -> list[Row]:
    """The endpoint's deliveries made in [since, until] that have not succeeded, oldest first;
    each event once (its latest delivery), so a recovery sends each missed event one time."""
    return await db.fetch(
        f"SELECT {_DELIVERY_COLUMNS} FROM webhook_deliveries d "
        "WHERE company_id = $1 AND endpoint_id = $2 AND created_at >= $3 AND created_at <= $4 "
        "AND status <> 'SUCCEEDED' AND NOT EXISTS (SELECT 1 FROM webhook_deliveries s "
        "WHERE s.event_id = d.event_id AND s.target = d.target AND s.status = 'SUCCEEDED') "
        "ORDER BY created_at, id LIMIT $5",
        company_id,
        endpoint_id,
        since,
        until,
        limit,
    )


async def open_deliveries(db: Database, after: str, limit: int) -> list[Row]:
    """Deliveries still to be attempted (PENDING or RETRYING), by id after `after`: what an
    in-process broker lost when the process stopped."""
    return await db.fetch(
        f"SELECT {_DELIVERY_COLUMNS} FROM webhook_deliveries "
        "WHERE status IN ('PENDING', 'RETRYING') AND id > $1 ORDER BY id LIMIT $2",
        after,
        limit,
    )


async def attempts(db: Database, delivery_id: str) -> list[Row]:
    return await db.fetch(
        "SELECT attempt, at, status_code, error, duration_ms FROM webhook_attempts "
        "WHERE delivery_id = $1 ORDER BY attempt",
        delivery_id,
    )


# The backlog is counted up to this many: past it, the number says "at least".
BACKLOG_COUNT_LIMIT = 10_000


async def backlog(db: Database, now: str) -> tuple[int, str | None]:
    """Deliveries due and not yet made (across every company: an operations figure), counted
    up to BACKLOG_COUNT_LIMIT, and the due time of the longest waiting one."""
    count = await db.fetchval(
        "SELECT COUNT(*) FROM (SELECT 1 FROM webhook_deliveries WHERE status IN "
        "('PENDING', 'RETRYING') AND next_attempt_at <= $1 LIMIT $2) AS due",
        now,
        BACKLOG_COUNT_LIMIT,
    )
    oldest = await db.fetchval(
        "SELECT MIN(next_attempt_at) FROM webhook_deliveries WHERE status IN "
        "('PENDING', 'RETRYING') AND next_attempt_at <= $1",
        now,
    )
    return int(count), None if oldest is None else str(oldest)


async def stale_deliveries(
    db: Database, before: str, shards: Sequence[int] | None, limit: int
) -> list[Row]:
    """Deliveries still open whose next attempt was due before `before`: their message was lost
    (a publish that failed after the commit, an in-process broker that stopped). Of every
    company, or of the companies on `shards`."""
    sql = (
        f"SELECT {_DELIVERY_COLUMNS} FROM webhook_deliveries WHERE status IN "
        "('PENDING', 'RETRYING') AND next_attempt_at < $1 {scope} "
        "ORDER BY next_attempt_at LIMIT $2"
    )
    return await due_in_shards(db, sql, "company_id", shards, before, limit)
