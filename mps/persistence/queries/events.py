"""Event reads for `GET /merchant/events` (decisions 10) and the outbox relay."""

from __future__ import annotations

from collections.abc import Sequence

from mps.persistence.database import Database
from mps.persistence.queries.paging import PageRequest, Where, fetch_one_in_mode, fetch_page
from mps.persistence.queries.shards import owned_companies
from mps.persistence.statements import Row, placeholders

__all__ = [
    "event",
    "event_by_id",
    "events_by_ids",
    "list_events",
    "own_url_events",
    "undispatched",
]

_COLUMNS = "id, company_id, mode, type, created_at, data, sequence, dispatched_at"


async def list_events(
    db: Database,
    company_id: str,
    mode: str,
    page: PageRequest,
    *,
    event_type: str | None = None,
    created_from: str | None = None,
    created_to: str | None = None,
    mentioning: str | None = None,
) -> tuple[list[Row], str | None]:
    """A page of the company's events in `mode`, newest first; `mentioning` keeps those whose
    stored JSON holds that id as a whole string value (its object's id, or a refund's paymentId)."""
    where = (
        Where.in_mode(company_id, mode)
        .compare("type", event_type)
        .between("created_at", created_from, created_to)
    )
    if mentioning is not None:
        # The quotes make it a whole JSON string, never part of a longer id; the escapes keep an
        # id's `_` from matching any character. One text for both backends, so no JSON operator.
        escaped = mentioning.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        where.params.append(f'%"{escaped}"%')
        where.conditions.append(f"data LIKE ${len(where.params)} ESCAPE '\\'")
    return await fetch_page(db, f"SELECT {_COLUMNS} FROM events", where, page)


async def event(db: Database, company_id: str, mode: str, event_id: str) -> Row | None:
    return await fetch_one_in_mode(db, f"SELECT {_COLUMNS} FROM events", company_id, mode, event_id)


async def event_by_id(db: Database, event_id: str) -> Row | None:
    """An event by its id alone, for the webhook pipeline, whose messages carry ids of our own
    making (never a client's). The primary key is then the only plan, however fresh the
    table's statistics."""
    return await db.fetchrow(f"SELECT {_COLUMNS} FROM events WHERE id = $1", event_id)


async def events_by_ids(db: Database, event_ids: list[str]) -> list[Row]:
    """Events by their ids alone (the webhook pipeline's, as `event_by_id`); the caller checks
    each belongs to the company its message named."""
    if not event_ids:
        return []
    marks = placeholders(len(event_ids))
    return await db.fetch(f"SELECT {_COLUMNS} FROM events WHERE id IN ({marks})", *event_ids)


async def own_url_events(db: Database, event_ids: list[str]) -> list[Row]:
    """Of these events (by id alone, as `events_by_ids`), those that may be about a payment with
    its own webhookUrl: for the fan-out of a company with no endpoints, which delivers nothing
    else. Its payment's JSON always holds the field, as a string when set (orjson, no spaces),
    so none is missed; a few more may match (a metadata key of that name), and the caller
    checks each. The text match needs no JSON operator, so it is one query for both backends,
    and no row of an event that goes nowhere leaves the database."""
    if not event_ids:
        return []
    marks = placeholders(len(event_ids))
    return await db.fetch(
        f"SELECT {_COLUMNS} FROM events WHERE id IN ({marks}) "
        "AND type LIKE 'payment.%' AND data LIKE '%\"webhookUrl\":\"%'",
        *event_ids,
    )


async def undispatched(db: Database, shards: Sequence[int] | None, limit: int) -> list[Row]:
    """Committed events not yet handed to the broker, oldest first: of every company, or (in a
    cluster) of the companies on `shards`, the shards this node owns."""
    scope = owned_companies("company_id", shards)
    if scope is None:
        return []
    return await db.fetch(
        f"SELECT {_COLUMNS} FROM events WHERE dispatched_at IS NULL {scope} "
        "ORDER BY created_at, id LIMIT $1",
        limit,
    )
