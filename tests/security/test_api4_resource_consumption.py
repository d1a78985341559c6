"""OWASP API4:2023, unrestricted resource consumption.

Every request is bounded before it costs much: bodies over 1 MiB are 413, pages hold at most
100 rows, JSON that is too deep or too wide is refused as bad input (never a server fault), and
every route is rate limited, answering 429 with Retry-After in whole seconds (decisions 0, 15).
"""

from __future__ import annotations

import io
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from mps.http.routes import all_routes
from mps.http.routing import Route
from tests.helpers import (
    Member,
    assert_envelope,
    assert_refused,
    create_payment,
    latest_code,
    pending_payment,
    post_as,
    post_payment,
    sign_up,
)
from tests.keys import bearer

pytestmark = pytest.mark.both_backends

MIB = 1024 * 1024
LIST_ROUTES = [
    r for r in all_routes(development=True) if r.query is not None and "limit" in r.query.fields
]
# Every limit of decisions 15 divided by 50, so a test reaches each in a few requests.
SCALE = 0.02


def _url(route: Route) -> str:
    return re.sub(r"\{[^}]+\}", "x_0000000000", route.full_path)


async def _api_key(client: TestClient[Any, Any], member: Member) -> str:
    created = await post_as(
        client,
        member,
        "/api/v1/merchant/api-keys",
        {"name": "ci", "scopes": ["analytics:read", "payments:write"]},
    )
    key: str = (await created.json())["key"]
    return key


async def _stream(payload: bytes) -> AsyncIterator[bytes]:
    """The body in chunks, so it is sent without a Content-Length."""
    for start in range(0, len(payload), 64 * 1024):
        yield payload[start : start + 64 * 1024]


async def test_a_body_over_one_mebibyte_is_413_on_every_kind_of_route(
    client: TestClient[Any, Any], member: Member
) -> None:
    # given a session, a key and a payment, and a body just over the limit
    key = await _api_key(client, member)
    payment = await create_payment(client, member)
    big = b'{"description": "' + b"a" * MIB + b'"}'
    targets = [
        ("/api/v1/merchant/payments", member.headers),
        ("/api/v1/merchant/api-keys", member.headers),
        (f"/api/v1/checkout/{payment['reference']}/pay", {}),
        ("/api/v1/developer/sandbox/payment.completed", bearer(key)),
    ]

    for path, headers in targets:
        for body in (io.BytesIO(big), _stream(big)):
            # when sent with its length, and streamed without one
            response = await client.post(
                path, data=body, headers={**headers, "Content-Type": "application/json"}
            )

            # then
            assert response.status == 413, path
            assert_envelope(await response.json(), 413, "payload_too_large")
    listed = await client.get("/api/v1/merchant/payments", headers=member.headers)
    assert [p["id"] for p in (await listed.json())["data"]] == [payment["id"]]


async def test_a_page_size_outside_one_to_a_hundred_is_400_on_every_list_route(
    client: TestClient[Any, Any], member: Member
) -> None:
    for route in LIST_ROUTES:
        for limit in ("101", "0", "-1", "1" + "0" * 30, "1e3"):
            response = await client.get(
                _url(route), params={"limit": limit}, headers=member.headers
            )

            assert response.status == 400, (route.full_path, limit)
            assert_envelope(await response.json(), 400, "validation_error")


async def test_deeply_nested_json_is_refused_as_bad_input(
    client: TestClient[Any, Any], member: Member
) -> None:
    # given
    headers = {**member.headers, "Content-Type": "application/json"}
    deep = b'{"amountMinor": "100", "currency": "USD", "customMetadata": {"a": ' + (
        b"[" * 100_000 + b"]" * 100_000 + b"}}"
    )
    nested = {"amountMinor": "100", "currency": "USD", "customMetadata": {"a": {"b": {"c": 1}}}}

    # when
    too_deep = await client.post("/api/v1/merchant/payments", data=deep, headers=headers)
    not_flat = await client.post("/api/v1/merchant/payments", json=nested, headers=member.headers)

    # then
    await assert_refused(too_deep, 400)
    await assert_refused(not_flat, 400, "validation_error")
    listed = await client.get("/api/v1/merchant/payments", headers=member.headers)
    assert (await listed.json())["data"] == []


async def test_wide_json_under_the_size_limit_is_refused(
    client: TestClient[Any, Any], member: Member
) -> None:
    # given bodies well under 1 MiB that are still too much to store
    many_keys = {f"k{i}": i for i in range(20_000)}
    long_key = {"k" * 41: "v"}
    long_value = {"note": "v" * 501}

    for metadata in (many_keys, long_key, long_value):
        # when
        response = await post_payment(client, member, amountMinor="100", customMetadata=metadata)

        # then
        await assert_refused(response, 400, "validation_error")


async def test_many_or_repeated_query_parameters_are_refused(
    client: TestClient[Any, Any], member: Member
) -> None:
    many = [(f"p{i}", "1") for i in range(500)]
    repeated = [("limit", "1")] * 500

    for params in (many, repeated):
        response = await client.get(
            "/api/v1/merchant/payments", params=params, headers=member.headers
        )

        await assert_refused(response, 400)


@pytest.fixture
async def limited(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> TestClient[Any, Any]:
    result: TestClient[Any, Any] = await aiohttp_client(make_app(rate_limit_scale=SCALE))
    return result


async def _until_throttled(send: Callable[[], Any], at_most: int = 50) -> Any:
    for _ in range(at_most):
        response = await send()
        if response.status == 429:
            return response
    pytest.fail(f"no 429 after {at_most} requests")


async def _assert_throttled(response: Any) -> None:
    await assert_refused(response, 429, "rate_limited")
    retry_after = response.headers["Retry-After"]
    assert retry_after.isdigit() and int(retry_after) >= 1


async def test_sign_in_code_requests_and_code_guesses_are_throttled(
    limited: TestClient[Any, Any],
) -> None:
    # given a member's login
    member = await sign_up(limited, "ann@example.com")
    login = await limited.post("/api/v1/auth/login", json={"email": member.email})
    login_id = (await login.json())["loginId"]

    # when codes are requested, and sign-ins started, again and again
    codes = await _until_throttled(
        lambda: limited.post("/api/v1/auth/otp/request", json={"loginId": login_id})
    )
    logins = await _until_throttled(
        lambda: limited.post("/api/v1/auth/login", json={"email": "anyone@example.com"})
    )

    # then both are refused with 429 and a Retry-After
    await _assert_throttled(codes)
    await _assert_throttled(logins)
    assert await latest_code(limited, member.email)


async def test_a_session_is_throttled_on_the_standard_limit(
    limited: TestClient[Any, Any],
) -> None:
    member = await sign_up(limited)

    throttled = await _until_throttled(
        lambda: limited.get("/api/v1/merchant/payments", headers=member.headers)
    )

    await _assert_throttled(throttled)
    # The limit is the session's, across routes.
    await _assert_throttled(await limited.get("/api/v1/merchant/settings", headers=member.headers))


async def test_an_api_key_is_throttled_on_the_developer_limit(
    limited: TestClient[Any, Any],
) -> None:
    member = await sign_up(limited)
    key = await _api_key(limited, member)

    throttled = await _until_throttled(
        lambda: limited.get("/api/v1/developer/ping", headers=bearer(key))
    )

    await _assert_throttled(throttled)


async def test_checkout_is_throttled_per_ip(limited: TestClient[Any, Any]) -> None:
    _, payment = await pending_payment(limited)

    throttled = await _until_throttled(
        lambda: limited.post(f"/api/v1/checkout/{payment['reference']}/pay", json={})
    )

    await _assert_throttled(throttled)
