"""The reconciliation's reads (decisions 5): the ledger's totals beside the totals of the
payments, refunds and payouts that moved the money, per company, mode and currency; and the
analytics rollups beside the payments and declines they count, per day.

Each check is one statement: the business rows' totals and the ledger's, grouped and joined,
over the companies given (the shards a node owns), so a pass costs a scan of those rows, not a
query per payment. A change and its movements commit in one unit, and one statement reads one
snapshot (on both backends), so a refund completing during a pass cannot show as a mismatch:
any difference is real. (Two separate queries could each see a different moment.)

The balance snapshots (`balance_snapshots`, kept with the postings by
mps.persistence.ledger_store) are checked the same way: each row against the sum of its
postings and open settlements, every figure of every row in one statement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mps.domain.analytics import COUNTERS, STATUS_COUNTERS
from mps.persistence.database import Database
from mps.persistence.ledger_store import SNAPSHOT_COLUMNS
from mps.persistence.queries.shards import owned_companies

__all__ = ["Mismatch", "mismatches"]


@dataclass(frozen=True)
class Mismatch:
    company_id: str
    mode: str
    currency: str
    check: str
    expected: int
    found: int

    def __str__(self) -> str:
        return (
            f"{self.check}: {self.company_id} {self.mode} {self.currency} expected "
            f"{self.expected}, found {self.found}"
        )


def _movements(kind: str, account: str, sign: str = "") -> str:
    return (
        f"SELECT company_id, mode, currency, {sign}SUM(amount_minor) AS total "
        "FROM ledger_postings WHERE transaction_id IN "
        f"(SELECT id FROM ledger_transactions WHERE type = '{kind}') "
        f"AND account = '{account}' {{scope}} GROUP BY company_id, mode, currency"
    )


# (name, what the business rows say, what the ledger says)
_CHECKS = (
    (
        "payments collected",
        "SELECT company_id, mode, currency, SUM(amount_minor) AS total FROM payments "
        "WHERE paid_at IS NOT NULL {scope} "
        "GROUP BY company_id, mode, currency",
        _movements("payment", "pending"),
    ),
    (
        "refunds completed",
        "SELECT company_id, mode, currency, SUM(amount_minor) AS total FROM refunds "
        "WHERE status = 'COMPLETED' {scope} GROUP BY company_id, mode, currency",
        _movements("refund", "processor"),
    ),
    (
        "payments refunded",
        "SELECT company_id, mode, currency, SUM(amount_refunded_minor) AS total FROM payments "
        "WHERE amount_refunded_minor > 0 {scope} GROUP BY company_id, mode, currency",
        _movements("refund", "processor"),
    ),
    (
        "payouts paid",
        "SELECT company_id, mode, currency, SUM(amount_minor) AS total FROM payouts "
        "WHERE status = 'PAID' {scope} GROUP BY company_id, mode, currency",
        _movements("payout", "bank"),
    ),
    (
        "card spending",
        "SELECT company_id, mode, currency, SUM(amount_minor) AS total FROM card_authorizations "
        "WHERE approved = 1 {scope} GROUP BY company_id, mode, currency",
        _movements("card_spend", "card_network"),
    ),
    (
        "reserved for refunds and payouts",
        "SELECT company_id, mode, currency, SUM(amount_minor) AS total FROM ("
        "SELECT company_id, mode, currency, amount_minor FROM refunds WHERE status = 'PENDING' "
        "UNION ALL SELECT company_id, mode, currency, amount_minor FROM payouts "
        "WHERE status IN ('PENDING', 'IN_TRANSIT')) AS held WHERE TRUE {scope} "
        "GROUP BY company_id, mode, currency",
        "SELECT company_id, mode, currency, SUM(amount_minor) AS total FROM ledger_postings "
        "WHERE account = 'reserved' {scope} GROUP BY company_id, mode, currency",
    ),
)


async def mismatches(db: Database, shards: Sequence[int] | None) -> list[Mismatch]:
    """Every difference between the ledger and the rows behind it, for the companies of
    `shards` (all of them when None)."""
    scope = owned_companies("company_id", shards)
    if scope is None:
        return []
    found: list[Mismatch] = []
    for name, expected_sql, ledger_sql in _CHECKS:
        rows = await db.fetch(
            "SELECT COALESCE(e.company_id, l.company_id) AS company_id, "
            "COALESCE(e.mode, l.mode) AS mode, COALESCE(e.currency, l.currency) AS currency, "
            "COALESCE(e.total, 0) AS expected, COALESCE(l.total, 0) AS found "
            f"FROM ({expected_sql.format(scope=scope)}) AS e "
            f"FULL OUTER JOIN ({ledger_sql.format(scope=scope)}) AS l "
            "ON l.company_id = e.company_id AND l.mode = e.mode AND l.currency = e.currency "
            "WHERE COALESCE(e.total, 0) <> COALESCE(l.total, 0) "
            "ORDER BY 1, 2, 3"
        )
        found += [
            Mismatch(
                r["company_id"], r["mode"], r["currency"], name, int(r["expected"]), int(r["found"])
            )
            for r in rows
        ]
    cards_scope = owned_companies("t.company_id", shards) or ""
    return (
        found
        + await _balance_snapshots(db, scope)
        + await _pending_beyond_credits(db, scope)
        + await _cards_below_zero(db, cards_scope)
        + await _analytics_rollups(db, scope)
    )


def _counted(day: str, counters: dict[str, str]) -> str:
    """A select of every rollup counter, `counters` computed and the rest zero."""
    columns = ", ".join(f"{counters.get(c, '0')} AS {c}" for c in COUNTERS)
    return f"SELECT company_id, mode, currency, {day} AS day, {columns}"


_STATUS_CASES = {
    counter: f"CASE WHEN status = '{status}' THEN 1 ELSE 0 END"
    for status, counter in STATUS_COUNTERS.items()
}
# The rollups as the raw rows say they should be (mps.domain.analytics says what counts where).
_ROLLUPS_FROM_ROWS = (
    f"SELECT company_id, mode, currency, day, "
    f"{', '.join(f'SUM({c}) AS {c}' for c in COUNTERS)} FROM ("
    + _counted(
        "substr(created_at, 1, 10)",
        {"created_count": "1", "created_minor": "amount_minor", **_STATUS_CASES},
    )
    + " FROM payments WHERE allow_multiple = 0 {scope} UNION ALL "
    + _counted("substr(paid_at, 1, 10)", {"paid_count": "1", "paid_minor": "amount_minor"})
    + " FROM payments WHERE paid_at IS NOT NULL {scope} UNION ALL "
    + _counted("substr(declined_at, 1, 10)", {"failed_count": "1", "failed_minor": "amount_minor"})
    + " FROM payment_declines WHERE TRUE {scope}"
    ") AS counted GROUP BY company_id, mode, currency, day"
)


async def _analytics_rollups(db: Database, scope: str) -> list[Mismatch]:
    """Every rollup figure that differs from what the payments and declines say, one statement
    (one snapshot) for all of them. A day with nothing left (every status count moved away)
    may keep a row of zeros."""
    differs = " OR ".join(f"COALESCE(r.{c}, 0) <> COALESCE(e.{c}, 0)" for c in COUNTERS)
    pairs = ", ".join(
        f"COALESCE(e.{c}, 0) AS expected_{c}, COALESCE(r.{c}, 0) AS found_{c}" for c in COUNTERS
    )
    rows = await db.fetch(
        "SELECT COALESCE(e.company_id, r.company_id) AS company_id, "
        "COALESCE(e.mode, r.mode) AS mode, COALESCE(e.currency, r.currency) AS currency, "
        f"COALESCE(e.day, r.day) AS day, {pairs} "
        f"FROM ({_ROLLUPS_FROM_ROWS.format(scope=scope)}) AS e "
        f"FULL OUTER JOIN (SELECT * FROM analytics_days WHERE TRUE {scope}) AS r "
        "ON r.company_id = e.company_id AND r.mode = e.mode AND r.currency = e.currency "
        f"AND r.day = e.day WHERE {differs} ORDER BY 1, 2, 3, 4"
    )
    return [
        Mismatch(
            r["company_id"],
            r["mode"],
            r["currency"],
            f"analytics {counter} on {r['day']}",
            int(r[f"expected_{counter}"]),
            int(r[f"found_{counter}"]),
        )
        for r in rows
        for counter in COUNTERS
        if int(r[f"expected_{counter}"]) != int(r[f"found_{counter}"])
    ]


# The balances as the postings and open settlements sum them: what each snapshot row must hold.
_BALANCES_FROM_ROWS = (
    "SELECT company_id, mode, currency, "
    + ", ".join(f"SUM({c}) AS {c}" for c in SNAPSHOT_COLUMNS)
    + " FROM (SELECT company_id, mode, currency, "
    + ", ".join(
        f"CASE WHEN account = '{c}' THEN amount_minor ELSE 0 END AS {c}"
        for c in SNAPSHOT_COLUMNS
        if c != "unsettled"
    )
    + ", 0 AS unsettled FROM ledger_postings "
    "WHERE account IN ('available', 'pending', 'reserved') {scope} "
    "UNION ALL SELECT company_id, mode, currency, 0, 0, 0, amount_minor FROM settlements "
    "WHERE settled_at IS NULL {scope}) AS summed GROUP BY company_id, mode, currency"
)


async def _balance_snapshots(db: Database, scope: str) -> list[Mismatch]:
    """Every balance snapshot figure that differs from the sum of its postings (or, for
    `unsettled`, of the open settlements), and every balance with postings but no snapshot (or
    a snapshot but no postings); one statement, so one moment, for all of them."""
    differs = " OR ".join(f"COALESCE(s.{c}, 0) <> COALESCE(e.{c}, 0)" for c in SNAPSHOT_COLUMNS)
    pairs = ", ".join(
        f"COALESCE(e.{c}, 0) AS expected_{c}, COALESCE(s.{c}, 0) AS found_{c}"
        for c in SNAPSHOT_COLUMNS
    )
    rows = await db.fetch(
        "SELECT COALESCE(e.company_id, s.company_id) AS company_id, "
        "COALESCE(e.mode, s.mode) AS mode, COALESCE(e.currency, s.currency) AS currency, "
        f"{pairs} FROM ({_BALANCES_FROM_ROWS.format(scope=scope)}) AS e "
        f"FULL OUTER JOIN (SELECT * FROM balance_snapshots WHERE TRUE {scope}) AS s "
        "ON s.company_id = e.company_id AND s.mode = e.mode AND s.currency = e.currency "
        f"WHERE {differs} ORDER BY 1, 2, 3"
    )
    return [
        Mismatch(
            r["company_id"],
            r["mode"],
            r["currency"],
            f"balance snapshot {column}",
            int(r[f"expected_{column}"]),
            int(r[f"found_{column}"]),
        )
        for r in rows
        for column in SNAPSHOT_COLUMNS
        if int(r[f"expected_{column}"]) != int(r[f"found_{column}"])
    ]


async def _cards_below_zero(db: Database, scope: str) -> list[Mismatch]:
    """No card's balance (the sum of its own postings) is ever below zero."""
    rows = await db.fetch(
        "SELECT t.company_id, t.mode, t.currency, SUM(p.amount_minor) AS found "
        "FROM ledger_postings p JOIN ledger_transactions t ON t.id = p.transaction_id "
        f"WHERE p.account = 'card' {scope} "
        "GROUP BY t.company_id, t.mode, t.currency, t.source_id HAVING SUM(p.amount_minor) < 0 "
        "ORDER BY 1, 2, 3"
    )
    return [
        Mismatch(
            r["company_id"], r["mode"], r["currency"], "card balance below zero", 0, int(r["found"])
        )
        for r in rows
    ]


async def _pending_beyond_credits(db: Database, scope: str) -> list[Mismatch]:
    """Pending may hold less than the credits waiting to settle (a refund reserved from it),
    never more: money there would never settle (mps.domain.ledger)."""
    rows = await db.fetch(
        "SELECT p.company_id, p.mode, p.currency, p.total AS found, "
        "COALESCE(u.total, 0) AS expected FROM ("
        "SELECT company_id, mode, currency, SUM(amount_minor) AS total FROM ledger_postings "
        f"WHERE account = 'pending' {scope} GROUP BY company_id, mode, currency) AS p "
        "LEFT JOIN (SELECT company_id, mode, currency, SUM(amount_minor) AS total "
        f"FROM settlements WHERE settled_at IS NULL {scope} GROUP BY company_id, mode, currency) "
        "AS u ON u.company_id = p.company_id AND u.mode = p.mode AND u.currency = p.currency "
        "WHERE p.total > COALESCE(u.total, 0) OR p.total < 0 ORDER BY 1, 2, 3"
    )
    return [
        Mismatch(
            r["company_id"],
            r["mode"],
            r["currency"],
            "pending within unsettled credits",
            int(r["expected"]),
            int(r["found"]),
        )
        for r in rows
    ]
