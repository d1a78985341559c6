"""What a write is made of.

A write unit is a tuple of `Statement`s that commit together or not at all. SQL is written once,
with Postgres' `$1` placeholders; the SQLite backend rewrites them to its own `?1`. Values always
travel as parameters.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mps.errors import StaleWrite

__all__ = [
    "Row",
    "Statement",
    "Step",
    "WriteUnit",
    "insert",
    "insert_sql",
    "placeholders",
    "plan_batch",
    "versioned_update",
]

Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Statement:
    sql: str
    params: tuple[Any, ...] = ()
    # When set, the unit fails with StaleWrite unless exactly this many rows were affected: the
    # optimistic-concurrency check of a versioned snapshot, or the guard of a conditional update.
    expect_rows: int | None = None
    # What a failed `expect_rows` check raises: a subclass names a guard the caller handles.
    stale_error: type[StaleWrite] = StaleWrite
    # What a broken uniqueness or key constraint raises instead of IntegrityConflict, when the
    # constraint is a guard the caller handles.
    conflict_error: type[Exception] | None = None
    # For a statement that returns rows: the position of the parameter its first RETURNING
    # column echoes (the row's own key), so that it returns only rows of that key. Many such
    # statements of one SQL then go to the server together, and their rows are told apart by
    # that column (`Step.keyed`).
    keyed_by: int | None = None
    # For an event's insert: the (company, mode) it is numbered in. Its last parameter is its
    # `sequence`, which the group commit fills in (mps.persistence.outbox.number_events).
    numbers_event: tuple[str, str] | None = None
    # For an upsert that adds its values to a row's counters: how many leading parameters name
    # the row (the rest are added). A group commit sums the statements of one SQL and one row
    # into one before sending them (`Step.params`): one row version per batch, not one each.
    summed_after: int | None = None
    # Running it twice is running it once (it sets a row to a value, whatever it held): a group
    # commit sends one of the statements of one SQL with the same parameters (`Step.params`).
    repeatable: bool = False

    def stale(self, affected: int) -> StaleWrite:
        return self.stale_error(f"expected {self.expect_rows} row(s), got {affected}")

    @property
    def returns_rows(self) -> bool:
        return _returns_rows(self.sql)

    @property
    def batchable(self) -> bool:
        """Whether it can go to the server together with others of the same SQL: it reports
        nothing back (no rows, no row count to check)."""
        return self.expect_rows is None and not self.returns_rows

    @property
    def keyed(self) -> bool:
        """Whether it returns rows told apart by their key (`keyed_by`)."""
        return self.keyed_by is not None and self.returns_rows

    @property
    def key(self) -> Any:
        assert self.keyed_by is not None
        return self.params[self.keyed_by]


@dataclass(frozen=True, slots=True)
class Step:
    """Part of a batch: one statement of one unit, or several of one SQL: `many` (reporting
    nothing back: one `executemany`) or `keyed` (each returning the rows of its own key)."""

    sql: str
    members: list[tuple[int, int, Statement]]  # (unit, position in the unit, statement)
    keyed: bool = False

    @property
    def many(self) -> bool:
        return len(self.members) > 1 and not self.keyed

    def params(self) -> list[tuple[Any, ...]]:
        """The parameters of an `executemany` of the members: repeatable statements of the same
        parameters sent once, and summing upserts of one row summed into one (the members commit
        together or not at all, and addition commutes)."""
        first = self.members[0][2]
        if first.repeatable:
            return list(dict.fromkeys(st.params for _, _, st in self.members))
        split = first.summed_after
        if split is None:
            return [st.params for _, _, st in self.members]
        sums: dict[tuple[Any, ...], list[Any]] = {}
        for _, _, statement in self.members:
            row, values = statement.params[:split], statement.params[split:]
            known = sums.get(row)
            if known is None:
                sums[row] = list(values)
            else:
                sums[row] = [a + b for a, b in zip(known, values, strict=True)]
        return [(*row, *values) for row, values in sums.items()]


def plan_batch(units: Sequence[WriteUnit]) -> list[Step]:
    """The order in which a group commit runs its units' statements in one transaction.

    The units of a batch are independent (each was sent without waiting for the others), so
    only the order within a unit matters. Each unit is first cut into runs: consecutive
    statements of the same SQL that report nothing back form one run (a unit writing many rows
    of one table, such as a flush of API-key request logs), any other statement a run of its
    own. Statements that return only the rows of their own key (`Statement.keyed`) run together
    the same way. The batch is then taken run by run: every unit's first run, then every second
    one, and so on; within a position, runs of the same SQL go as one `executemany` (or, keyed,
    one `fetchmany`), one round trip instead of one per statement. A batch of 64 payment
    creates thus costs a handful of round trips, not hundreds.
    """
    steps: list[Step] = []
    runs = [_runs(index, unit) for index, unit in enumerate(units)]
    depth = max((len(unit_runs) for unit_runs in runs), default=0)
    for position in range(depth):
        groups: dict[tuple[str, bool], list[tuple[int, int, Statement]]] = {}
        for unit_runs in runs:
            if position >= len(unit_runs):
                continue
            run = unit_runs[position]
            statement = run[0][2]
            if statement.batchable or statement.keyed:
                groups.setdefault((statement.sql, statement.keyed), []).extend(run)
            else:
                steps.append(Step(statement.sql, run))
        steps.extend(
            Step(sql, members, keyed=keyed and len(members) > 1)
            for (sql, keyed), members in groups.items()
        )
    return steps


def _runs(index: int, unit: WriteUnit) -> list[list[tuple[int, int, Statement]]]:
    """The unit's statements as runs: consecutive batchable ones of one SQL together."""
    runs: list[list[tuple[int, int, Statement]]] = []
    for position, statement in enumerate(unit):
        last = runs[-1][-1][2] if runs else None
        if (
            last is not None
            and last.sql == statement.sql
            and ((statement.batchable and last.batchable) or (statement.keyed and last.keyed))
        ):
            runs[-1].append((index, position, statement))
        else:
            runs.append([(index, position, statement)])
    return runs


WriteUnit = Sequence[Statement]


@functools.lru_cache(maxsize=1024)
def _returns_rows(sql: str) -> bool:
    # Asked several times per statement of every group commit; the same SQL texts recur.
    return " RETURNING " in sql.upper()


def insert(table: str, row: Mapping[str, Any]) -> Statement:
    return Statement(insert_sql(table, tuple(row)), tuple(row.values()))


def placeholders(count: int, first: int = 1) -> str:
    """`count` numbered parameters from `$first` on, comma-separated: an IN list's or a row's."""
    return ", ".join(f"${i}" for i in range(first, first + count))


@functools.lru_cache(maxsize=512)
def insert_sql(table: str, columns: tuple[str, ...]) -> str:
    marks = placeholders(len(columns))
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"


def versioned_update(
    table: str, key: str, key_value: Any, expected_version: int, changes: Mapping[str, Any]
) -> Statement:
    """UPDATE that succeeds only against `expected_version` and bumps it by one.

    A writer holding an older snapshot matches no row, so its unit fails with StaleWrite instead
    of overwriting newer state.
    """
    columns = list(changes)
    sets = ", ".join(f"{c} = ${i}" for i, c in enumerate(columns, start=1))
    n = len(columns)
    # RETURNING the key lets a group commit send the updates of many units to one table
    # together (`Statement.keyed`), each still checked for its one row.
    sql = (
        f"UPDATE {table} SET {sets}, version = version + 1 "
        f"WHERE {key} = ${n + 1} AND version = ${n + 2} RETURNING {key}"
    )
    return Statement(
        sql, (*changes.values(), key_value, expected_version), expect_rows=1, keyed_by=n
    )
