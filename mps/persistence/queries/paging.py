"""Filtered, cursor-paginated SELECTs, newest first, shared by every list query."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mps.http.pagination import PageRequest
from mps.persistence.database import Database
from mps.persistence.statements import Row

__all__ = ["Where", "fetch_page"]


@dataclass
class Where:
    """AND-ed conditions with numbered parameters; a None value adds no condition."""

    conditions: list[str] = field(default_factory=list)
    params: list[Any] = field(default_factory=list)

    def compare(self, column: str, value: Any, op: str = "=") -> Where:
        if value is not None:
            self.params.append(value)
            self.conditions.append(f"{column} {op} ${len(self.params)}")
        return self

    @property
    def sql(self) -> str:
        return " AND ".join(self.conditions) if self.conditions else "TRUE"


async def fetch_page(
    db: Database, select: str, where: Where, page: PageRequest, created: str = "created_at"
) -> tuple[list[Row], str | None]:
    """`select` (SELECT … FROM table) under `where`, after the page's cursor; returns the page's
    rows (each exposing `created_at` and `id`) and the next cursor, or None on the last page."""
    conditions, params = list(where.conditions), list(where.params)
    after, after_params = page.where(len(params) + 1, created=created)
    if after:
        conditions.append(after)
        params.extend(after_params)
    params.append(page.limit + 1)
    rows = await db.fetch(
        f"{select} WHERE {' AND '.join(conditions)} "
        f"ORDER BY {created} DESC, id DESC LIMIT ${len(params)}",
        *params,
    )
    return page.split(rows)
