"""Lists filtered by status read only the rows of that status (migration 0017): the dashboard
Home's overdue invoices and the approvals awaiting a vote are pages of a few rows among every
invoice and request a company ever had, and walking all of them to fill a page made the Home's
load grow with the company's history (bench/dashboard_home.py).

The plans are SQLite's, whose planner chooses by the schema alone; Postgres chooses by table
statistics, which a test's few rows do not give, so its plan at scale is the benchmark's."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from mps.persistence.approval_store import Voter, list_requests
from mps.persistence.database import Database
from mps.persistence.queries.invoices import list_invoices
from mps.persistence.queries.paging import PageRequest

COMPANY = "co_statuslists000000000000"


async def _plan(
    database: Database, monkeypatch: pytest.MonkeyPatch, read: Callable[[], Awaitable[Any]]
) -> str:
    """SQLite's plan of the page query `read` runs (its first read)."""
    seen: list[tuple[str, tuple[Any, ...]]] = []
    original = database.fetch

    async def recording(sql: str, *params: Any) -> Any:
        seen.append((sql, params))
        return await original(sql, *params)

    monkeypatch.setattr(database, "fetch", recording)
    await read()
    monkeypatch.undo()
    sql, params = seen[0]
    rows = await database.fetch(f"EXPLAIN QUERY PLAN {sql}", *params)
    return "\n".join(str(r["detail"]) for r in rows)


async def test_overdue_invoices_are_read_by_status_not_by_walking_every_invoice(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = await _plan(
        database,
        monkeypatch,
        lambda: list_invoices(database, COMPANY, "test", PageRequest(20), status="OVERDUE"),
    )
    assert "USING INDEX invoices_by_status (company_id=? AND mode=? AND status=?)" in plan, plan
    assert "TEMP B-TREE" not in plan, plan  # the index's order is the page's: no sort


async def test_approvals_awaiting_a_vote_are_read_by_status_not_by_walking_every_request(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    voter = Voter("usr_statuslists0000000000", frozenset({"payout.create"}))
    plan = await _plan(
        database,
        monkeypatch,
        lambda: list_requests(database, COMPANY, "test", PageRequest(100), awaiting=voter),
    )
    assert (
        "USING INDEX approval_requests_by_status (company_id=? AND mode=? AND status=?)" in plan
    ), plan
    assert "TEMP B-TREE" not in plan, plan
