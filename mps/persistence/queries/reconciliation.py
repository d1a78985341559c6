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

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mps.domain.analytics import COUNTERS, STATUS_COUNTERS
from mps.persistence.database import Database
from mps.persistence.ledger_store import SNAPSHOT_COLUMNS
from mps.persistence.queries.shards import owned_companies
from mps.persistence.statements import Row

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


# What identifies a balance, the first columns of every mismatch.
_BALANCE_KEY = ("company_id", "mode", "currency")


async def _analytics_rollups(db: Database, scope: str) -> list[Mismatch]:
    """Every rollup figure that differs from what the payments and declines say, one statement
    (one snapshot) for all of them. A day with nothing left (every status count moved away)
    may keep a row of zeros."""
    return await _stored_beside_expected(
        db,
        expected=_ROLLUPS_FROM_ROWS.format(scope=scope),
        stored=f"SELECT * FROM analytics_days WHERE TRUE {scope}",
        keys=(*_BALANCE_KEY, "day"),
        figures=COUNTERS,
        check=lambda row, counter: f"analytics {counter} on {row['day']}",
    )


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
    return await _stored_beside_expected(
        db,
        expected=_BALANCES_FROM_ROWS.format(scope=scope),
        stored=f"SELECT * FROM balance_snapshots WHERE TRUE {scope}",
        keys=_BALANCE_KEY,
        figures=SNAPSHOT_COLUMNS,
        check=lambda _row, column: f"balance snapshot {column}",
    )


async def _stored_beside_expected(
    db: Database,
    *,
    expected: str,
    stored: str,
    keys: Sequence[str],
    figures: Sequence[str],
    check: Callable[[Row, str], str],
) -> list[Mismatch]:
    """A mismatch for every figure of `stored`'s rows that differs from `expected`'s, matched
    on `keys` (a balance's first), where a row missing on either side counts as zeros.

    A full outer join in one statement rather than two reads, so both sides are one snapshot:
    a change committing between two reads would show as a difference that is not there."""
    differs = " OR ".join(f"COALESCE(s.{f}, 0) <> COALESCE(e.{f}, 0)" for f in figures)
    pairs = ", ".join(
        f"COALESCE(e.{f}, 0) AS expected_{f}, COALESCE(s.{f}, 0) AS found_{f}" for f in figures
    )
    rows = await db.fetch(
        "SELECT "
        + ", ".join(f"COALESCE(e.{k}, s.{k}) AS {k}" for k in keys)
        + f", {pairs} FROM ({expected}) AS e FULL OUTER JOIN ({stored}) AS s ON "
        + " AND ".join(f"s.{k} = e.{k}" for k in keys)
        + f" WHERE {differs} ORDER BY "
        + ", ".join(str(i) for i in range(1, len(keys) + 1))
    )
    return [
        Mismatch(
            r["company_id"],
            r["mode"],
            r["currency"],
            check(r, figure),
            int(r[f"expected_{figure}"]),
            int(r[f"found_{figure}"]),
        )
        for r in rows
        for figure in figures
        if int(r[f"expected_{figure}"]) != int(r[f"found_{figure}"])
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
