"""What housekeeping deletes, table by table, as bounded DELETE statements.

Each statement deletes at most `limit` rows past a cutoff, chosen by a subquery on the table's
key, the one portable way to bound a DELETE (SQLite has no DELETE ... LIMIT by default, and
Postgres none at all). Each returns a key column per deleted row, so the caller knows whether
rows are left: fewer than `limit` means the table is clean up to the cutoff. The cutoff columns
are indexed (0003_retention.sql), so each batch finds its rows without scanning the table.
"""

from __future__ import annotations

from dataclasses import dataclass

from mps.persistence.statements import Statement

__all__ = [
    "API_KEY_LOGS",
    "EVENTS",
    "IDEMPOTENCY_KEYS",
    "LOGINS",
    "SESSIONS",
    "Retention",
]


@dataclass(frozen=True, slots=True)
class Retention:
    table: str
    # The table's key: one column, or the columns of a composite key.
    key: tuple[str, ...]
    # Which rows are past retention; `$1` is the cutoff.
    past: str

    def delete_batch(self, cutoff: str, limit: int) -> Statement:
        """Delete up to `limit` rows past `cutoff`; returns one row per deleted row."""
        columns = ", ".join(self.key)
        # A composite key is matched as a row value, which SQLite (3.15+) and Postgres share.
        target = columns if len(self.key) == 1 else f"({columns})"
        return Statement(
            f"DELETE FROM {self.table} WHERE {target} IN "
            f"(SELECT {columns} FROM {self.table} WHERE {self.past} LIMIT $2) "
            f"RETURNING {self.key[0]}",
            (cutoff, limit),
        )


# A response is kept until its key expires (decisions 16).
IDEMPOTENCY_KEYS = Retention("idempotency_keys", ("company_id", "idem_key"), "expires_at <= $1")
LOGINS = Retention("logins", ("id",), "created_at <= $1")
EVENTS = Retention("events", ("id",), "created_at <= $1")
API_KEY_LOGS = Retention("api_key_logs", ("id",), "at <= $1")
# A delivery and its attempts go with their event's 30 days (decisions 10): a replay of an event
# past retention has nothing to send.
WEBHOOK_DELIVERIES = Retention("webhook_deliveries", ("id",), "created_at <= $1")
WEBHOOK_ATTEMPTS = Retention("webhook_attempts", ("delivery_id", "attempt"), "at <= $1")
# A session is gone once it expired or was revoked before the cutoff: its token is refused
# either way, and a missing row is refused too (mps.auth.authenticate).
SESSIONS = Retention("sessions", ("id",), "(expires_at <= $1 OR revoked_at <= $1)")
