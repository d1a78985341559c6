"""Housekeeping on the real database: what is past retention goes, the rest stays, and a backlog
goes in bounded batches (mps.actors.schedulers.housekeeping, mps.persistence.retention)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mps.actors.context import ActorContext
from mps.actors.schedulers.housekeeping import Housekeeping, Swept
from mps.domain.clock import iso
from mps.persistence.database import Database
from mps.persistence.statements import Statement, insert
from tests.actors import actor_context
from tests.fakes import RecordingDatabase

pytestmark = pytest.mark.both_backends

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def _ago(**delta: float) -> str:
    return iso(NOW - timedelta(**delta))


def _in(**delta: float) -> str:
    return iso(NOW + timedelta(**delta))


@pytest.fixture
async def writer(database: Database) -> AsyncIterator[tuple[RecordingDatabase, ActorContext]]:
    """The real database behind a recording wrapper, with its own persistence actor and a clock
    standing at NOW."""
    recording = RecordingDatabase(database)
    async with actor_context(recording, lambda: NOW) as context:
        yield recording, context


def _key_log(log_id: str, at: str) -> Any:
    return insert(
        "api_key_logs",
        {
            "id": log_id,
            "key_id": "key_a",
            "company_id": "co_a",
            "at": at,
            "method": "GET",
            "path": "/api/v1/developer/ping",
            "status_code": 200,
            "ip": "127.0.0.1",
            "request_id": f"req_{log_id}",
        },
    )


def _session(session_id: str, expires_at: str, revoked_at: str | None = None) -> Any:
    return insert(
        "sessions",
        {
            "id": session_id,
            "user_id": "usr_a",
            "company_id": "co_a",
            "mode": "test",
            "created_at": _ago(days=40),
            "expires_at": expires_at,
            "revoked_at": revoked_at,
        },
    )


def _idempotency_key(key: str, expires_at: str) -> Any:
    return insert(
        "idempotency_keys",
        {
            "company_id": "co_a",
            "idem_key": key,
            "fingerprint": "f",
            "status_code": 201,
            "headers": "{}",
            "body": "{}",
            "created_at": _ago(days=2),
            "expires_at": expires_at,
        },
    )


async def _ids(database: Database, table: str, column: str = "id") -> list[str]:
    rows = await database.fetch(f"SELECT {column} FROM {table} ORDER BY {column}")
    return [row[column] for row in rows]


async def test_housekeeping_deletes_exactly_what_is_past_retention_when_rows_straddle_the_cutoff(
    writer: tuple[RecordingDatabase, ActorContext],
) -> None:
    # given rows on both sides of each cutoff: 30 days for key logs, a day after a session
    # ended (expired or revoked), a key's own expiry for idempotency keys
    db, context = writer
    await db.real.write(
        [
            (
                _key_log("log_old", _ago(days=30, seconds=1)),
                _key_log("log_edge", _ago(days=30)),
                _key_log("log_recent", _ago(days=29, hours=23)),
                _session("ses_expired_long_ago", _ago(days=1, seconds=1)),
                _session("ses_expired_today", _ago(hours=23)),
                _session("ses_revoked_long_ago", _in(days=5), _ago(days=1, seconds=1)),
                _session("ses_revoked_today", _in(days=5), _ago(hours=1)),
                _session("ses_active", _in(hours=5)),
                _idempotency_key("expired", _ago(seconds=1)),
                _idempotency_key("live", _in(seconds=1)),
            )
        ]
    )

    # when housekeeping runs
    swept = await Housekeeping(context, 600).run_once()

    # then exactly the rows past retention are gone
    assert await _ids(db, "api_key_logs") == ["log_recent"]
    assert await _ids(db, "sessions") == ["ses_active", "ses_expired_today", "ses_revoked_today"]
    assert await _ids(db, "idempotency_keys", "idem_key") == ["live"]
    assert (swept.key_logs, swept.sessions, swept.idempotency_keys) == (2, 2, 1)
    assert (swept.logins, swept.events) == (0, 0)


async def test_housekeeping_deletes_a_backlog_in_bounded_statements_when_it_exceeds_one_batch(
    writer: tuple[RecordingDatabase, ActorContext],
) -> None:
    # given 25 key log rows and 23 idempotency keys past retention, 2 of each not, and batches
    # of at most 10 rows
    db, context = writer
    rows = [_key_log(f"log_old{n:02}", _ago(days=31)) for n in range(25)]
    rows += [_key_log("log_new1", _ago(days=1)), _key_log("log_new2", _ago(days=2))]
    rows += [_idempotency_key(f"old{n:02}", _ago(hours=1)) for n in range(23)]
    rows += [_idempotency_key("new1", _in(hours=1)), _idempotency_key("new2", _in(hours=2))]
    await db.real.write([rows])
    keeper = Housekeeping(context, 600, batch=10)

    # when housekeeping runs
    swept = await keeper.run_once()

    # then each table took ceil(n / 10) statements (the last one deleting fewer than 10), each
    # its own commit, and only the rows within retention are left
    key_log_deletes = db.statements("DELETE FROM api_key_logs")
    idempotency_deletes = db.statements("DELETE FROM idempotency_keys")
    assert len(key_log_deletes) == 3 and len(idempotency_deletes) == 3
    assert all(statement.params[1] == 10 for statement in key_log_deletes + idempotency_deletes)
    assert all(len(unit) == 1 for unit in db.units)
    assert len(db.writes) == len(db.units)
    assert (swept.key_logs, swept.idempotency_keys) == (25, 23)
    assert await _ids(db, "api_key_logs") == ["log_new1", "log_new2"]
    assert await _ids(db, "idempotency_keys", "idem_key") == ["new1", "new2"]


async def test_housekeeping_sends_one_statement_per_table_when_nothing_is_past_retention(
    writer: tuple[RecordingDatabase, ActorContext],
) -> None:
    # given nothing old
    db, context = writer
    await db.real.write([(_key_log("log_new", _ago(days=1)), _session("ses", _in(days=1)))])

    # when housekeeping runs
    swept = await Housekeeping(context, 600, batch=10).run_once()

    # then each table was asked once, and nothing was deleted
    assert len(db.units) == len(Swept._fields) == 7
    assert sum(swept) == 0
    assert await _ids(db, "api_key_logs") == ["log_new"]
    assert await _ids(db, "sessions") == ["ses"]


def _delivery(delivery_id: str, created_at: str) -> Statement:
    return insert(
        "webhook_deliveries",
        {
            "id": delivery_id,
            "company_id": "co_x",
            "mode": "test",
            "event_id": f"evt_{delivery_id}",
            "event_type": "payment.created",
            "endpoint_id": "whe_x",
            "target": "whe_x",
            "origin": "event",
            "url": "https://shop.example/hooks",
            "status": "SUCCEEDED",
            "attempts": 1,
            "next_attempt_at": None,
            "last_attempt_at": created_at,
            "last_status_code": 200,
            "last_error": None,
            "created_at": created_at,
            "updated_at": created_at,
        },
    )


def _attempt(delivery_id: str, at: str) -> Statement:
    return insert(
        "webhook_attempts",
        {
            "delivery_id": delivery_id,
            "attempt": 1,
            "at": at,
            "status_code": 200,
            "error": None,
            "duration_ms": 3,
        },
    )


async def test_housekeeping_deletes_webhook_deliveries_and_attempts_with_their_events_retention(
    writer: tuple[RecordingDatabase, ActorContext],
) -> None:
    # given a delivery (and its attempt) just past 30 days, and one just within
    db, context = writer
    old, recent = _ago(days=30, seconds=1), _ago(days=29, hours=23)
    await db.real.write(
        [
            (
                _delivery("whd_old", old),
                _attempt("whd_old", old),
                _delivery("whd_recent", recent),
                _attempt("whd_recent", recent),
            )
        ]
    )

    # when housekeeping runs
    swept = await Housekeeping(context, 600).run_once()

    # then the old one and its attempt are gone, the recent ones stay
    assert await _ids(db, "webhook_deliveries") == ["whd_recent"]
    assert await _ids(db, "webhook_attempts", "delivery_id") == ["whd_recent"]
    assert (swept.deliveries, swept.attempts) == (1, 1)
