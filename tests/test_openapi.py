"""The OpenAPI document is generated from the route table and is valid (decisions 11)."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient
from openapi_spec_validator import validate

from mps.http.keys import ROUTE_TABLE
from tests.helpers import assert_envelope, sign_up


async def test_openapi_document_is_valid_and_covers_every_route(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)

    response = await client.get("/api/v1/developer/openapi.json", headers=member.headers)

    document = await response.json()
    assert response.status == 200
    assert response.headers["X-Request-Id"].startswith("req_")
    assert document["openapi"] == "3.0.3"
    validate(document)
    routes = [r for r in client.app[ROUTE_TABLE] if not r.internal and r.api]
    for route in routes:
        assert route.method.lower() in document["paths"][route.full_path], route.full_path
    signup = document["paths"]["/api/v1/auth/signup"]["post"]
    assert signup["requestBody"]["content"]["application/json"]["schema"]["required"] == [
        "companyName",
        "email",
    ]
    assert "/api/v1/dev/mailbox" not in document["paths"]


async def test_openapi_document_needs_a_session(client: TestClient[Any, Any]) -> None:
    anonymous = await client.get("/api/v1/developer/openapi.json")

    assert anonymous.status == 401
    assert_envelope(await anonymous.json(), 401)


async def test_api_explorer_is_served_in_development(client: TestClient[Any, Any]) -> None:
    response = await client.get("/api/docs")

    assert response.status == 200
    assert response.headers["Content-Type"].startswith("text/html")
    assert "/api/v1/developer/openapi.json" in await response.text()
