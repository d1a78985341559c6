"""Every input is parsed into its real range: no query or path parameter of any route makes the
service fail on its side, whatever it is given.

tests/test_fuzz.py generates requests from the published schemas; these are the edges it does not
reach: dates at the ends of the calendar and past them, days that do not exist, odd offsets,
integers past 64 bits, cursors that decode to the wrong things, and NUL characters (which
PostgreSQL text cannot hold). The route table is walked, so a new route or parameter is covered
as soon as it is declared.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mps.http.routes import all_routes
from mps.http.routing import Auth, Route
from tests.approvals import set_policy
from tests.helpers import (
    TEST_CARD,
    Member,
    answered,
    assert_envelope,
    assert_refused,
    create_invoice,
    create_payment,
    created,
    sign_up,
)
from tests.money import ACCOUNT, paid_payment, refund

ROUTES = all_routes(development=True)
QUERY_PARAMETERS = [(route, name) for route in ROUTES if route.query for name in route.query.fields]
PATH_ROUTES = [route for route in ROUTES if "{" in route.path]


def _cursor(value: Any) -> str:
    """A cursor as the service writes them (unpadded URL-safe base64 of JSON), around `value`."""
    # The standard library's encoder, which writes what orjson refuses (integers past 64 bits).
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


DATES = [
    "0000-01-01",
    "0001-01-01",
    "0999-12-31",
    "9999-12-31",
    "10000-01-01",
    "2024-02-29",
    "2026-02-29",
    "2026-02-30",
    "2026-04-31",
    "2026-13-01",
    "2026-00-10",
    "2026-01-00",
    "२०२६-०१-०१",
]
TIMESTAMPS = [
    "0001-01-01T00:00:00Z",
    "0001-01-01T00:00:00+00:01",
    "0001-01-01T00:00:00-23:59",
    "0001-01-01T00:00:00+23:59",
    "9999-12-31T23:59:59.999Z",
    "9999-12-31T23:59:59.9999999Z",
    "9999-12-31T23:59:59-00:01",
    "9999-12-31T23:59:59+14:00",
    "2026-06-01T24:00:00Z",
    "2026-06-01T23:60:00Z",
    "2026-06-01T10:00:00+24:00",
    "2026-06-01T10:00:00-99:99",
    "2026-06-01T10:00:00+0530",
    "2026-06-01T10",
    "2026-06-01T10:00:00.",
    "2026-06-01T::",
    "2026-06-01T1:2:3",
]
NUMBERS = [
    "0",
    "-0",
    "-1",
    "1",
    "100",
    "101",
    str(2**31),
    str(2**63 - 1),
    str(2**63),
    str(-(2**63) - 1),
    "9" * 18,
    "9" * 19,
    "9" * 60,
    "1e3",
    "0x10",
    "+5",
    " 5",
    "٣",
    "NaN",
    "Infinity",
]
CURSORS = [
    _cursor(["9999-12-31T23:59:59.999Z", "pay_zzzzzzzzzzzzzzzzzzzzzzzz"]),
    _cursor(["0001-01-01T00:00:00.000Z", "pay_0"]),
    _cursor(["2026-01-01T00:00:00.000Z", "pay_\x00"]),
    _cursor(["2026-01-01T00:00:00.000Z\x00", "pay_a"]),
    _cursor(["", ""]),
    _cursor([1, 2]),
    _cursor([2**64, "a"]),
    _cursor(["a", "b", "c"]),
    _cursor(["a"]),
    _cursor(None),
    _cursor({"a": "b"}),
    _cursor("x" * 300),
    "!!!",
    "=",
    "A" * 512,
    "A" * 513,
]
TEXT = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "ann\x00@example.com",
    "é",
    "😀",
    "%",
    "%00",
    "'; DROP TABLE payments; --",
    "a" * 254,
    "a" * 255,
    "a" * 2000,
    "PENDING",
    "pending",
    "USD",
    "usd",
    "live",
    "ann@example.com",
    "pay_0000000000",
    "true",
    "null",
]
EDGE_VALUES = DATES + TIMESTAMPS + NUMBERS + CURSORS + TEXT


@dataclass
class World:
    """A signed-in owner with a payment, its customer and an API key, on an app without rate
    limits (thousands of requests are the point here)."""

    client: TestClient[Any, Any]
    member: Member
    key_headers: dict[str, str]
    # A real value for each path parameter: `{id}` by the resource before it, others by name.
    real: dict[str, str]
    # What a POST route with a path parameter needs in its body to get past validation.
    bodies: dict[str, Any]
    # What a route needs in its query to find its resource (a hosted page's link token).
    queries: dict[str, dict[str, str]]

    def headers(self, route: Route) -> dict[str, str]:
        return self.key_headers if route.auth is Auth.API_KEY else self.member.headers

    def path(self, route: Route, value: str | None = None) -> str:
        """The route's full path, its parameters filled with `value`, else with real values."""
        path = route.full_path
        for name in re.findall(r"{(\w+)}", route.path):
            resource = route.path.split(f"/{{{name}}}")[0].rsplit("/", 1)[-1]
            chosen = value if value is not None else self.real[f"{resource}/{name}"]
            path = path.replace(f"{{{name}}}", quote(chosen, safe=""))
        return path

    async def status(self, route: Route, query: dict[str, str] | None = None) -> int:
        return await self.status_at(route, self.path(route), query)

    async def status_at(self, route: Route, path: str, query: dict[str, str] | None = None) -> int:
        response = await self.client.request(
            route.method,
            path,
            params=query if query is not None else self.queries.get(route.path),
            json=self.bodies.get(route.path),
            headers=self.headers(route),
        )
        await response.read()
        return response.status


@pytest.fixture
async def world(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> World:
    client: TestClient[Any, Any] = await aiohttp_client(make_app(rate_limit_scale=0))
    member = await sign_up(client, "ann@example.com")
    # An endpoint nothing listens on: its deliveries exist, and keep failing.
    endpoint = await created(
        client,
        member,
        "/api/v1/merchant/webhooks",
        {"url": "http://127.0.0.1:9/hooks", "events": ["*"]},
    )
    payment = await create_payment(client, member, customerEmail="bob@example.com")
    paid = await paid_payment(client, member)
    refunded = await answered(await refund(client, member, paid["id"], "100"))
    account = await created(
        client, member, "/api/v1/merchant/bank-accounts", {**ACCOUNT, "accountHolderName": "Ann"}
    )
    payout = await created(
        client,
        member,
        "/api/v1/merchant/payouts",
        {"amountMinor": "100", "currency": "USD", "bankAccountId": account["id"]},
    )
    invoice = await create_invoice(
        client, member, customerEmail="bob@example.com", amountMinor="100"
    )
    role = await created(
        client, member, "/api/v1/team/roles", {"name": "Edges", "scopes": ["payments:read"]}
    )
    invitation = await created(
        client,
        member,
        "/api/v1/team/invitations",
        {"email": "invitee@example.com", "roleId": "role_viewer"},
    )
    mail = await client.get("/api/v1/dev/mailbox", params={"to": "invitee@example.com"})
    invite_token = (await mail.json())["data"][0]["link"].rsplit("/", 1)[1]
    policy = await set_policy(client, member, "payout.create", "1")
    assert policy.status == 200, await policy.text()
    held = await created(
        client,
        member,
        "/api/v1/merchant/payouts",
        {"amountMinor": "50", "currency": "USD", "bankAccountId": account["id"]},
        202,
    )
    approval = held["approvalRequest"]
    card = await created(
        client, member, "/api/v1/merchant/company-cards", {"nickname": "Edges", "currency": "USD"}
    )
    key = await created(
        client, member, "/api/v1/merchant/api-keys", {"name": "edges", "scopes": ["payments:write"]}
    )
    response = await client.get("/api/v1/merchant/customers", headers=member.headers)
    customer = (await response.json())["data"][0]
    upload = aiohttp.FormData()
    upload.add_field("type", "passport")
    upload.add_field("file", b"%PDF-1.4\n%%EOF\n", filename="passport.pdf")
    response = await client.post(
        "/api/v1/merchant/kyc/documents", data=upload, headers=member.headers
    )
    document = await answered(response)
    deliveries_url = f"/api/v1/merchant/webhooks/{endpoint['id']}/deliveries"
    deliveries: list[dict[str, Any]] = []
    async with asyncio.timeout(10):
        while not deliveries:
            response = await client.get(deliveries_url, headers=member.headers)
            deliveries = (await response.json())["data"]
    real = {
        "payments/id": payment["id"],
        "refunds/id": refunded["id"],
        "bank-accounts/id": account["id"],
        "payouts/id": payout["id"],
        "invoices/id": invoice["id"],
        "i/invoiceId": invoice["id"],
        "roles/id": role["id"],
        "members/id": member.user_id,
        "invitations/id": invitation["id"],
        "token/token": invite_token,
        "invite/token": invite_token,
        "policies/action": "refund.create",
        "requests/id": approval["id"],
        "cards/id": card["id"],
        "company-cards/id": card["id"],
        "customers/id": customer["id"],
        "api-keys/id": key["id"],
        "checkout/reference": payment["reference"],
        "pay/reference": payment["reference"],
        "sandbox/kind": "payment.completed",
        "webhooks/id": endpoint["id"],
        "deliveries/id": deliveries[0]["id"],
        "events/id": deliveries[0]["eventId"],
        "documents/id": document["id"],
    }
    bodies = {
        "/checkout/{reference}/pay": {"card": TEST_CARD},
        "/developer/sandbox/{kind}": {"paymentId": payment["id"]},
        "/merchant/webhooks/{id}": {"description": "edges"},
        "/merchant/webhooks/{id}/recover": {"since": "2020-01-01"},
        "/team/roles/{id}": {"name": "Edges 2"},
        "/team/members/{id}": {"roleId": "role_admin"},
        "/team/approvals/policies/{action}": {"enabled": False},
        "/merchant/cards/{id}/fund": {"amountMinor": "1"},
        "/merchant/cards/{id}/withdraw": {"amountMinor": "1"},
        "/merchant/company-cards/{id}/fund": {"amountMinor": "1"},
        "/merchant/cards/{id}/controls": {"allowedCategories": []},
    }
    token = dict(parse_qsl(urlsplit(invoice["hostedUrl"]).query))
    queries = {"/i/{invoiceId}": token, "/i/{invoiceId}/pdf": token}
    return World(client, member, {"Authorization": f"Bearer {key['key']}"}, real, bodies, queries)


@pytest.mark.both_backends
async def test_query_parameters_never_fail_on_our_side_when_given_edge_values(
    world: World,
) -> None:
    # given every query parameter of every route, and the edge values
    assert len(QUERY_PARAMETERS) >= 20, "the route table has lost its query parameters"
    failures = []

    # when each parameter is sent each value on its own
    for route, name in QUERY_PARAMETERS:
        for value in EDGE_VALUES:
            status = await world.status(route, {name: value})
            if status >= 500:
                failures.append((route.method, route.path, name, value, status))

    # then none is answered with a server error
    assert failures == []


@pytest.mark.both_backends
async def test_path_parameters_never_fail_on_our_side_when_given_edge_values(
    world: World,
) -> None:
    # given every route with a path parameter, each first shown to work with a real value
    for route in PATH_ROUTES:
        status = await world.status(route)
        assert status < 500 and status != 404, (route.path, status)
    failures = []

    # when the parameter is each edge value instead
    for route in PATH_ROUTES:
        for value in EDGE_VALUES:
            if not value or "/" in value:
                continue  # an empty or slashed segment is another path, not this route
            status = await world.status_at(route, world.path(route, value))
            if status >= 500:
                failures.append((route.method, route.path, value, status))

    # then none is answered with a server error
    assert failures == []


# Generated values lean on the edges: uniform draws would almost never land on the last day of
# the calendar, or put a NUL in a string.
_NUMBERS = st.one_of(
    st.sampled_from([0, 1, -1, 2**31, 2**63 - 1, 2**63, -(2**63) - 1, 2**64]),
    st.integers(-(2**80), 2**80),
)
_YEARS = st.one_of(
    st.sampled_from([0, 1, 999, 1000, 1970, 2026, 9999, 10000]), st.integers(0, 10_000)
)
_MONTHS = st.one_of(st.sampled_from([0, 1, 2, 12, 13]), st.integers(1, 12))
_DAYS = st.one_of(st.sampled_from([0, 1, 28, 29, 30, 31, 32]), st.integers(1, 31))
_DAY = st.one_of(
    st.sampled_from(["0001-01-01", "0001-01-02", "0999-12-31", "9999-12-30", "9999-12-31"]),
    st.builds("{:04d}-{:02d}-{:02d}".format, _YEARS, _MONTHS, _DAYS),
)
_CLOCK = st.one_of(st.sampled_from([0, 23, 24, 59, 60]), st.integers(0, 61))
_TIME = st.builds(
    "T{:02d}:{:02d}:{:02d}{}".format,
    _CLOCK,
    _CLOCK,
    _CLOCK,
    st.sampled_from(["", ".5", ".999", ".9999999"]),
)
_OFFSET = st.one_of(
    st.sampled_from(["", "Z", "+00:01", "-00:01", "+14:00", "-23:59", "+23:59", "+24:00", "+0530"]),
    st.builds("{}{:02d}:{:02d}".format, st.sampled_from("+-"), _CLOCK, _CLOCK),
)
_TEXT = st.one_of(
    st.text(max_size=40),
    st.builds("{}\x00{}".format, st.text(max_size=10), st.text(max_size=10)),
)
_JSON_SCALARS = st.one_of(
    st.none(), st.booleans(), _NUMBERS, st.floats(), _DAY, st.text(max_size=30), _TEXT
)
QUERY_VALUES = st.one_of(
    st.sampled_from(EDGE_VALUES),
    _DAY,
    st.builds("{}{}{}".format, _DAY, _TIME, _OFFSET),
    _NUMBERS.map(str),
    _TEXT,
    st.lists(_JSON_SCALARS, max_size=3).map(_cursor),
)


@pytest.mark.both_backends
@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    # The app is built once for the test; every example only reads from it.
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(value=QUERY_VALUES)
async def test_query_parameters_never_fail_on_our_side_when_given_generated_values(
    world: World, value: str
) -> None:
    # when every query parameter of every route is sent the value on its own
    failures = []
    for route, name in QUERY_PARAMETERS:
        status = await world.status(route, {name: value})
        if status >= 500:
            failures.append((route.method, route.path, name, status))

    # then none is answered with a server error
    assert failures == [], value


CALENDAR_ENDS = [
    {"to": "9999-12-31"},
    {"to": "9999-12-31T23:59:59.999Z"},
    {"from": "0001-01-01"},
    {"from": "0001-01-01T00:00:00Z", "to": "9999-12-31"},
    # Before year 1000 too: stored times are compared as fixed-width text.
    {"from": "0999-06-01"},
]


@pytest.mark.both_backends
async def test_date_filters_include_everything_when_the_range_reaches_the_ends_of_the_calendar(
    world: World,
) -> None:
    for query in CALENDAR_ENDS:
        # when the list and its stats are filtered from or to an end of the calendar
        listed = await world.client.get(
            "/api/v1/merchant/payments", params=query, headers=world.member.headers
        )
        stats = await world.client.get(
            "/api/v1/merchant/payments/stats", params=query, headers=world.member.headers
        )

        # then both hold the two payments made now (one pending, one paid and refunded)
        assert listed.status == 200, (query, await listed.text())
        listed_ids = [p["id"] for p in (await listed.json())["data"]]
        assert len(listed_ids) == 2 and world.real["payments/id"] in listed_ids
        assert stats.status == 200, (query, await stats.text())
        assert [s["count"] for s in (await stats.json())["data"]] == [2], query


NONEXISTENT_MOMENTS = [
    ("from", "0000-01-01"),
    ("from", "2026-02-30"),
    ("to", "2026-04-31"),
    ("from", "0001-01-01T00:00:00+00:01"),
    ("to", "9999-12-31T23:59:59-00:01"),
    ("to", "2026-06-01T24:00:00Z"),
    ("from", "2026-06-01T10:00:00+24:00"),
    ("from", "२०२६-०१-०१"),
]


async def test_date_filters_are_refused_with_400_when_the_moment_does_not_exist(
    world: World,
) -> None:
    for field, value in NONEXISTENT_MOMENTS:
        # when a day that does not exist, or an instant outside the years 0001-9999 in UTC, is
        # sent
        response = await world.client.get(
            "/api/v1/merchant/payments/stats", params={field: value}, headers=world.member.headers
        )

        # then that field is refused as a validation error
        body = await assert_refused(response, 400, "validation_error")
        assert [e["field"] for e in body["errors"]] == [field], body


NUL_INPUTS = [
    (
        "POST",
        "/api/v1/merchant/payments",
        {"amountMinor": "1", "currency": "USD", "description": "a\x00b"},
    ),
    ("POST", "/api/v1/auth/login", {"email": "ann\x00@example.com"}),
    ("POST", "/api/v1/auth/otp/verify", {"loginId": "lgn_\x00", "code": "000000"}),
    ("GET", "/api/v1/merchant/payments?customerEmail=ann%00@example.com", None),
    ("GET", "/api/v1/merchant/customers?email=ann%00@example.com", None),
]


@pytest.mark.both_backends
async def test_text_inputs_are_refused_with_400_when_they_hold_a_nul_character(
    world: World,
) -> None:
    for method, path, body in NUL_INPUTS:
        # when a string with a NUL character is sent in a body or a query
        response = await world.client.request(method, path, json=body, headers=world.member.headers)

        # then it is a validation error on both backends (PostgreSQL text could not store it)
        assert response.status == 400, (method, path)
        assert_envelope(await response.json(), 400, "validation_error")


async def test_amounts_are_refused_with_400_when_past_the_largest_amount(world: World) -> None:
    for amount in [str(2**63 - 1), str(2**63), str(2**64), "1000000000000", "9" * 40, "-1", "0"]:
        response = await world.client.post(
            "/api/v1/merchant/payments",
            json={"amountMinor": amount, "currency": "USD"},
            headers=world.member.headers,
        )

        assert response.status == 400, amount
        assert_envelope(await response.json(), 400, "validation_error")
