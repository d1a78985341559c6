"""Cursor pagination (decisions 0): newest first by (createdAt, id), stable under inserts; the
filtered, cursor-paginated SELECTs every list query shares; and the one-row read by id that each
resource's get query shares.

The cursor is the position of the last row returned, so rows created while a client pages sort
before it and never shift what comes after: no duplicates, no skips.

`PageRequest` and the cursor's text form live here, with the only code that writes cursors,
because the list queries take them and storage must not depend on HTTP. The HTTP side (the
`limit` and `cursor` query fields, and turning them into a `PageRequest`) is
`mps.http.pagination`.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import orjson

from mps.errors import BadRequest
from mps.persistence.database import Database
from mps.persistence.statements import Row

__all__ = [
    "Cursor",
    "PageRequest",
    "Where",
    "decode_cursor",
    "encode_cursor",
    "fetch_one_in_mode",
    "fetch_page",
    "read_one_in_mode",
    "read_page",
]

# The fixed-width form of mps.domain.clock.iso, and the characters of every id we issue.
_STORED_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z")
_ID = re.compile(r"[A-Za-z0-9_]{1,100}")

T = TypeVar("T")


@dataclass(frozen=True)
class Cursor:
    """The position of the last row of a page: its creation time (as stored) and id."""

    created_at: str
    id: str


@dataclass(frozen=True)
class PageRequest:
    """At most `limit` rows, those after the cursor `after` (from the newest when None)."""

    limit: int
    after: Cursor | None = None


def encode_cursor(cursor: Cursor) -> str:
    raw = orjson.dumps([cursor.created_at, cursor.id])
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(text: str) -> Cursor:
    """The cursor `encode_cursor` wrote as `text`; 400 `invalid_cursor` for anything else."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        created_at, ident = orjson.loads(raw)
        # Only what encode_cursor writes: a stored timestamp and an id. Anything else (a NUL
        # PostgreSQL cannot take, text that compares oddly) never reaches a query.
        if not isinstance(created_at, str) or not isinstance(ident, str):
            raise TypeError
        if not _STORED_TIME.fullmatch(created_at) or not _ID.fullmatch(ident):
            raise ValueError
    except (binascii.Error, ValueError, TypeError) as exc:
        raise BadRequest("cursor is not a valid cursor", code="invalid_cursor") from exc
    return Cursor(created_at, ident)


@dataclass
class Where:
    """AND-ed conditions with numbered parameters; a None value adds no condition."""

    conditions: list[str] = field(default_factory=list)
    params: list[Any] = field(default_factory=list)

    @classmethod
    def in_company(cls, company_id: str) -> Where:
        """One company's rows: where every list starts, whatever else it keeps."""
        return cls().compare("company_id", company_id)

    @classmethod
    def in_mode(cls, company_id: str, mode: str) -> Where:
        """One company's rows of one mode: where every list of a resource starts."""
        return cls.in_company(company_id).compare("mode", mode)

    def compare(self, column: str, value: Any, op: str = "=") -> Where:
        if value is not None:
            self.params.append(value)
            self.conditions.append(f"{column} {op} ${len(self.params)}")
        return self

    def between(self, column: str, low: Any, high: Any) -> Where:
        """`column` from `low` to `high`, both included; either end None leaves that side open."""
        return self.compare(column, low, ">=").compare(column, high, "<=")

    @property
    def sql(self) -> str:
        return " AND ".join(self.conditions) if self.conditions else "TRUE"


async def fetch_page(
    db: Database, select: str, where: Where, page: PageRequest, created: str = "created_at"
) -> tuple[list[Row], str | None]:
    """`select` (SELECT … FROM table) under `where`, after the page's cursor; returns the page's
    rows (each exposing `created_at` and `id`) and the next cursor, or None on the last page."""
    conditions, params = list(where.conditions), list(where.params)
    if page.after is not None:
        a, b = len(params) + 1, len(params) + 2
        conditions.append(f"({created} < ${a} OR ({created} = ${a} AND id < ${b}))")
        params.extend([page.after.created_at, page.after.id])
    # One row more than the page: whether it comes back says whether there is a next page.
    params.append(page.limit + 1)
    rows = await db.fetch(
        f"{select} WHERE {' AND '.join(conditions)} "
        f"ORDER BY {created} DESC, id DESC LIMIT ${len(params)}",
        *params,
    )
    if len(rows) <= page.limit:
        return rows, None
    rows = rows[: page.limit]
    last = rows[-1]
    return rows, encode_cursor(Cursor(last["created_at"], last["id"]))


async def read_page(
    db: Database,
    select: str,
    where: Where,
    page: PageRequest,
    read: Callable[[Row], T],
    created: str = "created_at",
) -> tuple[list[T], str | None]:
    """`fetch_page`, each row read into its value by `read`."""
    rows, cursor = await fetch_page(db, select, where, page, created)
    return [read(row) for row in rows], cursor


async def fetch_one_in_mode(
    db: Database, select: str, company_id: str, mode: str, ident: str, also: str | None = None
) -> Row | None:
    """`select` (SELECT … FROM table) of the row with id `ident` in the company and mode (and
    meeting the condition `also`, when given); None when there is none there (another company's
    or mode's row is as good as none)."""
    sql = f"{select} WHERE id = $1 AND company_id = $2 AND mode = $3"
    if also is not None:
        sql += f" AND {also}"
    return await db.fetchrow(sql, ident, company_id, mode)


async def read_one_in_mode(
    db: Database,
    select: str,
    company_id: str,
    mode: str,
    ident: str,
    read: Callable[[Row], T],
    also: str | None = None,
) -> T | None:
    """`fetch_one_in_mode`, the row read into its value by `read`."""
    row = await fetch_one_in_mode(db, select, company_id, mode, ident, also)
    return read(row) if row is not None else None
