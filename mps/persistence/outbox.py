"""Outbox rows: every event is inserted by the same write unit as the change it reports, and
numbered by the commit that inserts it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any, Protocol

import orjson

from mps.domain.ids import new_id
from mps.persistence.statements import Row, Statement, WriteUnit, insert_sql

__all__ = [
    "NUMBERING",
    "Changed",
    "counter_bump",
    "event_counts",
    "event_insert",
    "event_row",
    "event_row_and_body",
    "event_writes",
    "inserts_events",
    "number_events",
    "numbered",
    "numbers_late",
]

API_VERSION = "v2"


def event_row(
    *, company_id: str, mode: str, event_type: str, created_at: str, obj: dict[str, Any]
) -> dict[str, Any]:
    row, _body = event_row_and_body(
        company_id=company_id, mode=mode, event_type=event_type, created_at=created_at, obj=obj
    )
    return row


def event_row_and_body(
    *, company_id: str, mode: str, event_type: str, created_at: str, obj: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The event's row, and the body its `data` column holds, as a client will see it: for a
    caller that needs both, so that the body is encoded once and never decoded back."""
    event_id = new_id("evt")
    body = {
        "id": event_id,
        "type": event_type,
        "createdAt": created_at,
        "livemode": mode == "live",
        "apiVersion": API_VERSION,
        "data": {"object": obj},
    }
    row = {
        "id": event_id,
        "company_id": company_id,
        "mode": mode,
        "type": event_type,
        "created_at": created_at,
        "data": orjson.dumps(body).decode(),
        "dispatched_at": None,
    }
    return row, body


class Changed(Protocol):
    """What an event is about: a payout, a refund, a card, an invoice."""

    @property
    def company_id(self) -> str: ...

    @property
    def mode(self) -> str: ...

    @property
    def updated_at(self) -> str: ...


def event_writes(
    about: Changed, types: Iterable[str], obj: dict[str, Any], *, at: str | None = None
) -> tuple[list[Statement], list[dict[str, Any]]]:
    """The outbox inserts for the events of `about`, each carrying `obj` (the object as the API
    shows it, rendered by the caller, with fields such as a card's authorization), made `at`
    (its last change by default), and the bodies a client will see, in the order of `types`.

    Each body is decoded back from its row's `data` rather than shared, so that no two events,
    nor the caller, hold the same `obj` dict: a body handed on cannot change another."""
    rows = [
        event_row(
            company_id=about.company_id,
            mode=about.mode,
            event_type=event_type,
            created_at=at or about.updated_at,
            obj=obj,
        )
        for event_type in types
    ]
    return [event_insert(r) for r in rows], [orjson.loads(r["data"]) for r in rows]


def event_insert(row: Row) -> Statement:
    """The insert of the event `row` (from `event_row`), numbered by the group commit that
    writes it (`number_events`)."""
    columns = (*row, "sequence")
    return Statement(
        insert_sql("events", columns),
        (*row.values(), None),
        numbers_event=(row["company_id"], row["mode"]),
    )


async def number_events(
    units: Sequence[WriteUnit], apply: Callable[[Statement], Awaitable[list[Row]]]
) -> Sequence[WriteUnit]:
    """`units` with each event insert (`event_insert`) given its `sequence`: first, in the
    transaction that writes them, `apply` moves the counter of each company and mode on by the
    number of its new events (one statement for the batch), then the events take the numbers in
    between, in the batch's order. Numbered as they are inserted, an event row is written once:
    numbering it afterwards rewrote every inserted event, and every index of the table with it.

    The counter row's lock orders two transactions numbering for one company (which fencing
    already prevents), so the numbers follow commit order. A unit rolled back alone (to its
    savepoint) must be numbered alone inside it, so that its numbers go back with it.

    A backend that sends the counters' statement together with another (`counter_bump`) numbers
    with what it returned (`numbered`)."""
    counts = event_counts(units)
    if not counts:
        return units
    return numbered(units, counts, await apply(counter_bump(counts)))


def event_counts(units: Sequence[WriteUnit]) -> dict[tuple[str, str], int]:
    """How many events the units insert, by company and mode."""
    counts: dict[tuple[str, str], int] = {}
    for unit in units:
        for statement in unit:
            if statement.numbers_event is not None:
                counts[statement.numbers_event] = counts.get(statement.numbers_event, 0) + 1
    return counts


def numbered(
    units: Sequence[WriteUnit], counts: dict[tuple[str, str], int], rows: Sequence[Row]
) -> list[WriteUnit]:
    """`units` numbered from `rows`, what `counter_bump(counts)` returned."""
    following = {
        (row["company_id"], row["mode"]): row["last"] - counts[(row["company_id"], row["mode"])] + 1
        for row in rows
    }
    result: list[WriteUnit] = []
    for unit in units:
        statements = list(unit)
        for position, statement in enumerate(statements):
            if statement.numbers_event is not None:
                number = following[statement.numbers_event]
                following[statement.numbers_event] = number + 1
                statements[position] = replace(statement, params=(*statement.params[:-1], number))
        result.append(statements)
    return result


def counter_bump(counts: dict[tuple[str, str], int]) -> Statement:
    """Each company and mode's counter moved on by its count; returns `company_id, mode, last`."""
    values = ", ".join(f"(${3 * i + 1}, ${3 * i + 2}, ${3 * i + 3})" for i in range(len(counts)))
    params = tuple(value for (company, mode), n in counts.items() for value in (company, mode, n))
    return Statement(
        f"INSERT INTO event_sequences (company_id, mode, last) VALUES {values} "
        "ON CONFLICT (company_id, mode) DO UPDATE SET last = event_sequences.last + excluded.last "
        "RETURNING company_id, mode, last",
        params,
    )


def numbers_late(units: Sequence[WriteUnit]) -> bool:
    """Whether an event is inserted that `number_events` cannot number in advance: one whose
    insert is conditional (it may insert nothing, and a number given to it would be a gap).
    `NUMBERING` then numbers it at the end of the transaction."""
    return any(
        st.numbers_event is None and st.sql.startswith("INSERT INTO events ")
        for unit in units
        for st in unit
    )


# Run at the end of a transaction that inserted events `number_events` could not number, after
# every unit of the batch (mps.persistence.database.Database.write): the counter of each company
# and mode moves on by the number of those events, which then take the numbers in between,
# oldest first, after the numbers the batch's other events took. Two statements rather than a
# numbering per insert, because a group commit runs the same statement of many units together,
# and a per-insert counter read would see the whole batch's count.
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
