"""Outbox rows: every event is inserted by the same write unit as the change it reports, and
numbered by the commit that inserts it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from mps.domain.ids import new_id
from mps.persistence.statements import Statement, WriteUnit

__all__ = ["NUMBERING", "event_row", "inserts_events"]

API_VERSION = "v2"


def event_row(
    *, company_id: str, mode: str, event_type: str, created_at: str, obj: dict[str, Any]
) -> dict[str, Any]:
    event_id = new_id("evt")
    body = {
        "id": event_id,
        "type": event_type,
        "createdAt": created_at,
        "livemode": mode == "live",
        "apiVersion": API_VERSION,
        "data": {"object": obj},
    }
    return {
        "id": event_id,
        "company_id": company_id,
        "mode": mode,
        "type": event_type,
        "created_at": created_at,
        "data": orjson.dumps(body).decode(),
        "dispatched_at": None,
    }


# Run at the end of every transaction that inserted events, after every unit of the batch
# (mps.persistence.database.Database.write): the counter of each company and mode moves on by
# the number of its new events, which then take the numbers in between, oldest first. Two
# statements rather than a numbering per insert, because a group commit runs the same statement
# of many units together, and a per-insert counter read would see the whole batch's count.
# The counter row's lock orders two transactions numbering for one company (which fencing
# already prevents), so the numbers follow commit order.
NUMBERING = (
    Statement(
        "INSERT INTO event_sequences (company_id, mode, last) "
        "SELECT company_id, mode, COUNT(*) FROM events WHERE sequence IS NULL "
        "GROUP BY company_id, mode "
        "ON CONFLICT (company_id, mode) DO UPDATE SET last = event_sequences.last + excluded.last"
    ),
    Statement(
        "UPDATE events SET sequence = fresh.seq FROM ("
        "SELECT e.id AS id, s.last - COUNT(*) OVER (PARTITION BY e.company_id, e.mode) "
        "+ ROW_NUMBER() OVER (PARTITION BY e.company_id, e.mode ORDER BY e.created_at, e.id) "
        "AS seq FROM events e "
        "JOIN event_sequences s ON s.company_id = e.company_id AND s.mode = e.mode "
        "WHERE e.sequence IS NULL) AS fresh "
        "WHERE events.id = fresh.id"
    ),
)


def inserts_events(units: Sequence[WriteUnit]) -> bool:
    return any(st.sql.startswith("INSERT INTO events ") for unit in units for st in unit)
