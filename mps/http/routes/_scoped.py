"""The two reads most resource handlers start with: one record of the caller's company and mode
named by the path's `id` (404 when there is none), and a cursor page of them under a list's
filters. Which principal's company and mode apply (`call.merchant` on routes open to keys,
`call.session` on session-only ones) stays the handler's choice, so it is passed in.

Routes open to keys whose handler is nothing more than one of those reads are declared with
`merchant_page` and `merchant_one`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from mps.auth.principals import Principal
from mps.errors import NotFound
from mps.http.pagination import page_request
from mps.http.replies import Page, Resource
from mps.http.routing import Call
from mps.persistence.database import Database

__all__ = ["merchant_one", "merchant_page", "one_in_mode", "page_in_mode"]

_Found = TypeVar("_Found")


async def one_in_mode(
    call: Call,
    principal: Principal,
    lookup: Callable[[Database, str, str, str], Awaitable[_Found | None]],
    missing: str,
) -> _Found:
    """What `lookup` (database, company id, mode, id) finds for the path's `id` in the
    principal's company and mode; 404 with the message `missing` when it finds nothing."""
    found = await lookup(
        call.services.database, principal.company_id, principal.mode, call.param("id")
    )
    if found is None:
        raise NotFound(missing)
    return found


async def page_in_mode(
    call: Call,
    principal: Principal,
    list_query: Callable[..., Awaitable[tuple[list[_Found], str | None]]],
    present: Callable[[_Found], dict[str, Any]],
    **filters: Any,
) -> Page:
    """The page of the query's `limit` and `cursor` that `list_query` (database, company id,
    mode, page request, keyword filters) returns in the principal's company and mode, each item
    shown by `present`."""
    found, cursor = await list_query(
        call.services.database,
        principal.company_id,
        principal.mode,
        page_request(call.query),
        **filters,
    )
    return Page([present(item) for item in found], cursor)


def merchant_page(
    list_query: Callable[..., Awaitable[tuple[list[_Found], str | None]]],
    present: Callable[[_Found], dict[str, Any]],
    **filters: str,
) -> Callable[[Call], Awaitable[Page]]:
    """The handler of a list route: `page_in_mode` for `call.merchant`, each keyword filter
    given the value of the query field it names (None when the query leaves it out)."""

    async def handler(call: Call) -> Page:
        query = call.query
        chosen = {keyword: query.get(name) for keyword, name in filters.items()}
        return await page_in_mode(call, call.merchant, list_query, present, **chosen)

    # Named after its query, as the handler of the route used to be, for tracebacks.
    handler.__name__ = handler.__qualname__ = list_query.__name__
    return handler


def merchant_one(
    lookup: Callable[[Database, str, str, str], Awaitable[_Found | None]],
    present: Callable[[_Found], dict[str, Any]],
    missing: str,
) -> Callable[[Call], Awaitable[Resource]]:
    """The handler of a route that retrieves one record: `one_in_mode` for `call.merchant`,
    shown by `present`."""

    async def handler(call: Call) -> Resource:
        return Resource(present(await one_in_mode(call, call.merchant, lookup, missing)))

    handler.__name__ = handler.__qualname__ = lookup.__name__
    return handler
