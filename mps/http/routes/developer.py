"""Developer routes (decisions 2, 11): the key probe, versions and the OpenAPI document."""

from __future__ import annotations

import orjson
from aiohttp import web

from mps.http.keys import ROUTE_TABLE
from mps.http.openapi import build_openapi
from mps.http.replies import Resource
from mps.http.resources import resource
from mps.http.routing import Auth, Call, Route
from mps.http.schema import Anything, Array, Bool, Enum, Obj, Str
from mps.http.versions import CURRENT, VERSIONS

__all__ = ["ROUTES"]


async def ping(call: Call) -> Resource:
    key = call.api_key
    return Resource(
        {
            "companyId": key.company_id,
            "livemode": key.livemode,
            "scopes": sorted(key.scopes),
        }
    )


async def versions(call: Call) -> Resource:
    # With a session, the default is the company's pinned version; without one, the current.
    pinned = call.principal.api_version if call.principal is not None else CURRENT
    return Resource({"current": CURRENT, "default": pinned, "versions": VERSIONS})


def openapi_document(call: Call) -> web.Response:
    """The document of this app's route table, built per request."""
    # Paths in the document are full (/api/v1/...), so the server is the bare public URL.
    routes: list[Route] = call.request.app[ROUTE_TABLE]
    document = build_openapi(routes, call.services.settings.public_url)
    return web.Response(body=orjson.dumps(document), content_type="application/json")


async def openapi(call: Call) -> web.Response:
    call.session  # noqa: B018 - any dashboard session may read it; this raises otherwise
    return openapi_document(call)


ROUTES = [
    Route(
        "GET",
        "/developer/ping",
        ping,
        "Confirm an API key",
        "developer",
        Auth.API_KEY,
        scope="analytics:read",
        response=resource({"companyId": Str(), "livemode": Bool(), "scopes": Array(Str())}),
    ),
    Route(
        "GET",
        "/developer/versions",
        versions,
        "API versions",
        "developer",
        Auth.OPTIONAL_SESSION,
        response=resource(
            {
                "current": Str(),
                "default": Str(),
                "versions": Array(
                    Obj(
                        {
                            "version": Str(),
                            "status": Enum(["current", "deprecated"]),
                            "sunsetAt": Str(format="date-time"),
                        },
                        required=["version", "status"],
                    )
                ),
            }
        ),
    ),
    Route(
        "GET",
        "/developer/openapi.json",
        openapi,
        "This OpenAPI document",
        "developer",
        response=Obj(
            {"openapi": Str(), "paths": Anything()},
            required=["openapi", "paths"],
            allow_unknown=True,
        ),
    ),
]
