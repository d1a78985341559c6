"""Cursor pagination on the HTTP side (decisions 0): the `limit` and `cursor` query fields every
list route declares, and their parsing into the `PageRequest` the list queries take.

The page and cursor themselves (and the cursor's text form, which only the list queries write)
are `mps.persistence.queries.paging`'s, so that storage does not depend on HTTP.
"""

from __future__ import annotations

from typing import Any

from mps.http.schema import Int, Obj, Str
from mps.persistence.queries.paging import PageRequest, decode_cursor

__all__ = ["DEFAULT_LIMIT", "PAGE_FIELDS", "PAGE_QUERY", "page_request"]

DEFAULT_LIMIT = 20
PAGE_FIELDS = {
    "limit": Int(minimum=1, maximum=100, from_text=True, description="Page size, 1 to 100 (20)."),
    "cursor": Str(max_length=512, description="The nextCursor of the previous page."),
}
# The query of a list route that filters on nothing else.
PAGE_QUERY = Obj(PAGE_FIELDS)


def page_request(query: dict[str, Any]) -> PageRequest:
    """The page a list route's validated query asks for; 400 `invalid_cursor` for a cursor the
    service did not write."""
    raw = query.get("cursor")
    return PageRequest(query.get("limit") or DEFAULT_LIMIT, decode_cursor(raw) if raw else None)
