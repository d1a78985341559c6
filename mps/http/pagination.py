"""Cursor pagination (decisions 0): newest first by (createdAt, id), stable under inserts.

The cursor is the position of the last row returned, so rows created while a client pages sort
before it and never shift what comes after: no duplicates, no skips.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any

import orjson

from mps.errors import BadRequest
from mps.http.schema import Int, Str

__all__ = ["PAGE_FIELDS", "Cursor", "PageRequest", "decode_cursor", "encode_cursor"]

DEFAULT_LIMIT = 20
# The fixed-width form of mps.domain.clock.iso, and the characters of every id we issue.
_STORED_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z")
_ID = re.compile(r"[A-Za-z0-9_]{1,100}")
PAGE_FIELDS = {
    "limit": Int(minimum=1, maximum=100, from_text=True, description="Page size, 1 to 100 (20)."),
    "cursor": Str(max_length=512, description="The nextCursor of the previous page."),
}


@dataclass(frozen=True)
class Cursor:
    created_at: str
    id: str


@dataclass(frozen=True)
class PageRequest:
    limit: int
    after: Cursor | None

    @classmethod
    def from_query(cls, query: dict[str, Any]) -> PageRequest:
        raw = query.get("cursor")
        return cls(query.get("limit") or DEFAULT_LIMIT, decode_cursor(raw) if raw else None)

    def where(
        self, first_param: int, created: str = "created_at", ident: str = "id"
    ) -> tuple[str, list[Any]]:
        """SQL condition and parameters selecting rows after the cursor ("" when none)."""
        if self.after is None:
            return "", []
        a, b = first_param, first_param + 1
        condition = f"({created} < ${a} OR ({created} = ${a} AND {ident} < ${b}))"
        return condition, [self.after.created_at, self.after.id]

    def split(self, rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str | None]:
        """Rows fetched with LIMIT limit+1 -> (this page, next cursor or None)."""
        if len(rows) <= self.limit:
            return rows, None
        page = rows[: self.limit]
        last = page[-1]
        return page, encode_cursor(Cursor(last["created_at"], last["id"]))


def encode_cursor(cursor: Cursor) -> str:
    raw = orjson.dumps([cursor.created_at, cursor.id])
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(text: str) -> Cursor:
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
