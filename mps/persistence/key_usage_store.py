"""An API key's use as rows: its request-log entries and its `last_used_at`, the statements
`mps.actors.key_usage.KeyUsage` commits when it flushes what it has buffered."""

from __future__ import annotations

from dataclasses import dataclass

from mps.persistence.rows import to_row
from mps.persistence.statements import Statement, insert

__all__ = ["KeyLogRow", "key_last_used", "key_log_insert"]


@dataclass(frozen=True, slots=True)
class KeyLogRow:
    """One request made with an API key [5.2]: a row of `api_key_logs`."""

    id: str
    key_id: str
    company_id: str
    at: str
    method: str
    path: str
    status_code: int
    ip: str | None
    request_id: str


def key_log_insert(row: KeyLogRow) -> Statement:
    # Every row has the same columns, so a flush's inserts share one SQL and go to the server
    # as one executemany.
    return insert("api_key_logs", to_row(row))


def key_last_used(key_id: str, at: str) -> Statement:
    """Move the key's `last_used_at` forward to `at`, never back: each node flushes its own
    buffer, so an older use may arrive after a newer one from another node."""
    return Statement(
        "UPDATE api_keys SET last_used_at = $1 "
        "WHERE id = $2 AND (last_used_at IS NULL OR last_used_at < $1)",
        (at, key_id),
    )
