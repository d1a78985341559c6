"""The OpenAPI document is generated from the route table and is valid (decisions 11)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

import pytest
from aiohttp.test_utils import TestClient
from openapi_spec_validator import validate

from mps.http.keys import ROUTE_TABLE
from tests.helpers import (
    TEST_CARD,
    Member,
    add_member,
    answered,
    assert_refused,
    create_payment,
    sign_up,
)
from tests.money import ACCOUNT, paid_payment


async def test_openapi_document_is_valid_and_covers_every_route(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)

    response = await client.get("/api/v1/developer/openapi.json", headers=member.headers)

    document = await answered(response, 200)
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

    await assert_refused(anonymous, 401)


async def test_api_explorer_is_served_in_development(client: TestClient[Any, Any]) -> None:
    response = await client.get("/api/docs")

    assert response.status == 200
    assert response.headers["Content-Type"].startswith("text/html")
    assert "/api/v1/developer/openapi.json" in await response.text()


Check = Callable[..., Awaitable[Any]]
# A walk through a group of routes, as `member`, every request made through `check`.
Routes = Callable[[TestClient[Any, Any], Member, Check], Awaitable[None]]


async def _document(client: TestClient[Any, Any]) -> tuple[Member, dict[str, Any]]:
    """A new member, and the OpenAPI document they download."""
    member = await sign_up(client)
    response = await client.get("/api/v1/developer/openapi.json", headers=member.headers)
    document: dict[str, Any] = await answered(response, 200)
    return member, document


# The headers of a request made by no one: the public and health routes, as a client reaches them.
ANONYMOUS: dict[str, str] = {}


async def _checker(client: TestClient[Any, Any]) -> tuple[Member, Check, list[str]]:
    """A new member, and a `check(method, template, *values, **request)` that makes the
    request to `template` with its placeholders filled by `values` in order (as the member,
    unless `headers` says otherwise), requires a 2xx, validates the body against the route's
    published schema and notes the route in the list."""
    from openapi_schema_validator import OAS30Validator

    member, document = await _document(client)
    checked: list[str] = []

    async def check(
        method: str,
        template: str,
        *values: str,
        headers: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> Any:
        filled = iter(values)
        path = re.sub(r"\{\w+\}", lambda _: quote(next(filled), safe=""), template)
        assert next(filled, None) is None, f"more values than {template} has placeholders"
        sent = member.headers if headers is None else headers
        response = await client.request(method, path, headers=sent, **kwargs)
        body = await response.json()
        assert response.status < 300, body
        operation = document["paths"][template][method.lower()]
        schema = operation["responses"][str(response.status)]["content"]["application/json"]
        # References point into the document's components: validate with them at hand.
        OAS30Validator(
            {"allOf": [schema["schema"]], "components": document["components"]}
        ).validate(body)
        checked.append(f"{method} {template}")
        return body

    return member, check, checked


async def _api_key(check: Check, *scopes: str) -> tuple[Any, dict[str, str]]:
    """A new API key of `scopes`, created through `check`, and the headers that present it."""
    key = await check("POST", "/api/v1/merchant/api-keys", json={"name": "k", "scopes": scopes})
    return key, {"Authorization": f"Bearer {key['key']}"}


async def _pay_at_checkout(check: Check, payment: dict[str, Any]) -> None:
    """`payment` paid with the test card, on its public checkout route."""
    await check(
        "POST",
        "/api/v1/checkout/{reference}/pay",
        payment["reference"],
        json={"card": TEST_CARD},
        headers=ANONYMOUS,
    )


async def _simulate(check: Check, key_headers: dict[str, str], kind: str, **body: str) -> None:
    """The sandbox event `kind` simulated with `body`, by the key `key_headers` present."""
    await check("POST", "/api/v1/developer/sandbox/{kind}", kind, headers=key_headers, json=body)


async def _payment_and_webhook_routes(
    client: TestClient[Any, Any], member: Member, check: Check
) -> None:
    """The payment, customer, key, settings, webhook, event, health and sign-in routes."""
    key, key_headers = await _api_key(check, "analytics:read", "payments:write")
    await check("GET", "/api/v1/developer/ping", headers=key_headers)
    await check("GET", "/api/v1/merchant/api-keys")
    payment = await check(
        "POST",
        "/api/v1/merchant/payments",
        json={"amountMinor": "500", "currency": "USD", "customerEmail": "c@example.com"},
    )
    other = await check(
        "POST", "/api/v1/merchant/payments", json={"amountMinor": "700", "currency": "EUR"}
    )
    await _pay_at_checkout(check, payment)
    await _simulate(check, key_headers, "payment.failed", paymentId=other["id"])
    await check("POST", "/api/v1/merchant/payments/{id}/cancel", other["id"])
    await check("GET", "/api/v1/merchant/payments")
    await check("GET", "/api/v1/merchant/payments/{id}", payment["id"])
    await check("GET", "/api/v1/merchant/payments/stats")
    await check("GET", "/api/v1/merchant/payments/stats", params={"currency": "USD"})
    customers = await check("GET", "/api/v1/merchant/customers")
    customer_id = customers["data"][0]["id"]
    await check("GET", "/api/v1/merchant/customers/{id}", customer_id)
    await check("GET", "/api/v1/merchant/customers/{id}/payments", customer_id)
    await check("GET", "/api/v1/merchant/api-keys/{id}/logs", key["id"])
    await check("POST", "/api/v1/merchant/api-keys/{id}/revoke", key["id"])
    await check("GET", "/api/v1/merchant/settings")
    await check("PATCH", "/api/v1/merchant/settings", json={"payoutSchedule": "weekly"})
    endpoint = await check(
        "POST",
        "/api/v1/merchant/webhooks",
        json={"url": "http://127.0.0.1:9/hooks", "events": ["*"], "description": "orders"},
    )
    await check("GET", "/api/v1/merchant/webhooks")
    await check("GET", "/api/v1/merchant/webhooks/{id}", endpoint["id"])
    await check(
        "PATCH", "/api/v1/merchant/webhooks/{id}", endpoint["id"], json={"description": "d"}
    )
    await check("POST", "/api/v1/merchant/webhooks/{id}/rotate-secret", endpoint["id"])
    await check("GET", "/api/v1/merchant/webhooks/default-secret")
    await create_payment(client, member)
    deliveries: dict[str, Any] = {"data": []}
    for _ in range(250):  # until the event's delivery is stored
        deliveries = await check("GET", "/api/v1/merchant/webhooks/{id}/deliveries", endpoint["id"])
        if deliveries["data"]:
            break
        await asyncio.sleep(0.02)
    await check("GET", "/api/v1/merchant/webhooks/deliveries/{id}", deliveries["data"][0]["id"])
    await check(
        "POST", "/api/v1/merchant/webhooks/deliveries/{id}/replay", deliveries["data"][0]["id"]
    )
    await check(
        "POST",
        "/api/v1/merchant/webhooks/{id}/recover",
        endpoint["id"],
        json={"since": "2020-01-01"},
    )
    events = await check("GET", "/api/v1/merchant/events")
    await check("GET", "/api/v1/merchant/events/{id}", events["data"][0]["id"])
    await check("POST", "/api/v1/merchant/events/{id}/replay", events["data"][0]["id"])
    await check("DELETE", "/api/v1/merchant/webhooks/{id}", endpoint["id"])
    await check("GET", "/api/v1/auth/me")
    await check("GET", "/api/v1/developer/versions", headers=ANONYMOUS)
    await check("GET", "/api/v1/health", headers=ANONYMOUS)
    await check("GET", "/api/v1/health/live", headers=ANONYMOUS)
    await check("GET", "/api/v1/health/ready", headers=ANONYMOUS)
    login = await check(
        "POST", "/api/v1/auth/login", json={"email": member.email}, headers=ANONYMOUS
    )
    await check(
        "POST", "/api/v1/auth/otp/request", json={"loginId": login["loginId"]}, headers=ANONYMOUS
    )
    await check("POST", "/api/v1/auth/session/mode", json={"mode": "live"})


async def _money_routes(client: TestClient[Any, Any], member: Member, check: Check) -> None:
    """The refund, balance, bank-account and payout routes."""
    _, key_headers = await _api_key(check, "refunds:write", "payouts:write")
    payment = await create_payment(client, member)
    await _pay_at_checkout(check, payment)
    refund = await check(
        "POST",
        "/api/v1/merchant/refunds",
        json={"paymentId": payment["id"], "amountMinor": "100", "reason": "r"},
    )
    await check("GET", "/api/v1/merchant/refunds")
    await check("GET", "/api/v1/merchant/refunds/{id}", refund["id"])
    await _simulate(check, key_headers, "refund.completed", refundId=refund["id"])
    await check("GET", "/api/v1/merchant/balance")
    await check("GET", "/api/v1/merchant/balance", params={"currency": "USD"})
    await check("GET", "/api/v1/merchant/balance/transactions")
    account = await check("POST", "/api/v1/merchant/bank-accounts", json=ACCOUNT)
    await check("GET", "/api/v1/merchant/bank-accounts")
    await check("GET", "/api/v1/merchant/bank-accounts/{id}", account["id"])
    payout = await check(
        "POST",
        "/api/v1/merchant/payouts",
        json={"amountMinor": "100", "currency": "USD", "bankAccountId": account["id"]},
    )
    await check("GET", "/api/v1/merchant/payouts")
    await check("GET", "/api/v1/merchant/payouts/{id}", payout["id"])
    await check("POST", "/api/v1/merchant/payouts/{id}/cancel", payout["id"])
    await check("DELETE", "/api/v1/merchant/bank-accounts/{id}", account["id"])


async def _invoice_routes(client: TestClient[Any, Any], member: Member, check: Check) -> None:
    """The invoice routes."""
    body = {
        "currency": "USD",
        "customerEmail": "c@example.com",
        "items": [{"description": "Work", "quantity": 2, "unitAmountMinor": "1000"}],
        "dueDate": "2030-01-01",
    }
    invoice = await check("POST", "/api/v1/merchant/invoices", json=body)
    other = await check(
        "POST",
        "/api/v1/merchant/invoices",
        json={"currency": "USD", "customerEmail": "d@example.com", "amountMinor": "500"},
    )
    await check("GET", "/api/v1/merchant/invoices")
    await check("GET", "/api/v1/merchant/invoices/{id}", invoice["id"])
    await check("GET", "/api/v1/merchant/invoices/stats")
    await check("GET", "/api/v1/merchant/invoices/stats", params={"currency": "USD"})
    await check("POST", "/api/v1/merchant/invoices/{id}/resend", invoice["id"])
    await check(
        "POST", "/api/v1/merchant/invoices/{id}/mark-paid", invoice["id"], json={"reference": "r"}
    )
    await check("GET", "/api/v1/merchant/invoices/{id}/timeline", invoice["id"])
    await check("POST", "/api/v1/merchant/invoices/{id}/cancel", other["id"])


async def _team_routes(client: TestClient[Any, Any], member: Member, check: Check) -> None:
    """The role, member, invitation, approval and audit routes."""
    admin = await add_member(client, member, "admin@example.com", "role_admin")
    await check("GET", "/api/v1/team/roles")
    await check("GET", "/api/v1/team/roles/scopes")
    role = await check(
        "POST", "/api/v1/team/roles", json={"name": "R", "scopes": ["payments:read"]}
    )
    await check("PATCH", "/api/v1/team/roles/{id}", role["id"], json={"name": "R2"})
    await check("GET", "/api/v1/team/members")
    await check("PATCH", "/api/v1/team/members/{id}", admin.user_id, json={"roleId": role["id"]})
    await check("PATCH", "/api/v1/team/members/{id}", admin.user_id, json={"roleId": "role_admin"})
    await check("DELETE", "/api/v1/team/roles/{id}", role["id"])
    invitation = await check(
        "POST",
        "/api/v1/team/invitations",
        json={"email": "new@example.com", "roleId": "role_viewer"},
    )
    await check("GET", "/api/v1/team/invitations")
    mail = await client.get("/api/v1/dev/mailbox", params={"to": "new@example.com"})
    token = (await mail.json())["data"][0]["link"].rsplit("/", 1)[1]
    await check("GET", "/api/v1/team/invitations/token/{token}", token, headers=ANONYMOUS)
    await check("POST", "/api/v1/team/invitations/{id}/revoke", invitation["id"])
    await check("GET", "/api/v1/team/approvals/policies")
    await check(
        "PUT",
        "/api/v1/team/approvals/policies/{action}",
        "payout.create",
        json={"enabled": True, "thresholds": {"USD": "100"}, "requiredApprovals": 1},
    )
    await paid_payment(client, member, "5000")
    account = await check("POST", "/api/v1/merchant/bank-accounts", json=ACCOUNT)
    body = {"amountMinor": "1000", "currency": "USD", "bankAccountId": account["id"]}
    held = await check("POST", "/api/v1/merchant/payouts", json=body)
    other = await check("POST", "/api/v1/merchant/payouts", json=body)
    request_id = held["approvalRequest"]["id"]
    await check("GET", "/api/v1/team/approvals/requests")
    await check("GET", "/api/v1/team/approvals/requests/{id}", request_id)
    approve = "/api/v1/team/approvals/requests/{id}/approve"
    await check("POST", approve, request_id, headers=admin.headers, json={"comment": "ok"})
    await check(
        "POST", "/api/v1/team/approvals/requests/{id}/cancel", other["approvalRequest"]["id"]
    )
    await check("GET", "/api/v1/team/audit")
    await check("GET", "/api/v1/team/audit/verify")


async def _card_routes(client: TestClient[Any, Any], member: Member, check: Check) -> None:
    """The member and company card routes."""
    await paid_payment(client, member, "10000")
    _, key_headers = await _api_key(check, "cards:write")
    funded = {"cardholderName": "Ann", "currency": "USD", "initialFundingMinor": "1000"}
    card = await check("POST", "/api/v1/merchant/cards", json=funded)
    company_card = await check(
        "POST", "/api/v1/merchant/company-cards", json={"nickname": "Ads", "currency": "USD"}
    )
    await check("GET", "/api/v1/merchant/cards")
    await check("GET", "/api/v1/merchant/cards/{id}", card["id"])
    await check("POST", "/api/v1/merchant/cards/{id}/fund", card["id"], json={"amountMinor": "100"})
    await check(
        "POST",
        "/api/v1/merchant/company-cards/{id}/fund",
        company_card["id"],
        json={"amountMinor": "100"},
    )
    await check(
        "POST", "/api/v1/merchant/cards/{id}/withdraw", card["id"], json={"amountMinor": "50"}
    )
    daily = {"spendingLimits": [{"amountMinor": "500", "interval": "daily"}]}
    await check("PATCH", "/api/v1/merchant/cards/{id}/controls", card["id"], json=daily)
    await _simulate(
        check,
        key_headers,
        "card.authorization",
        cardId=card["id"],
        amountMinor="100",
        currency="USD",
    )
    await check("GET", "/api/v1/merchant/cards/{id}/transactions", card["id"])
    await check("GET", "/api/v1/merchant/cards/{id}/details", card["id"])
    await check("POST", "/api/v1/merchant/cards/{id}/freeze", card["id"])
    await check("POST", "/api/v1/merchant/cards/{id}/unfreeze", card["id"])
    await check("POST", "/api/v1/merchant/cards/{id}/terminate", card["id"])


@pytest.mark.parametrize(
    ("routes", "count"),
    [
        (_payment_and_webhook_routes, 39),
        (_money_routes, 16),
        (_invoice_routes, 8),
        (_team_routes, 21),
        (_card_routes, 15),
    ],
    ids=["payments_and_webhooks", "money", "invoices", "team", "cards"],
)
async def test_responses_match_the_schemas_the_document_publishes(
    client: TestClient[Any, Any], routes: Routes, count: int
) -> None:
    """Every response `routes` gets is checked against its route's published response schema,
    and each of the `count` routes it calls is checked."""
    member, check, checked = await _checker(client)

    await routes(client, member, check)

    assert len(set(checked)) == count


async def test_the_document_declares_the_headers_and_error_answers_clients_must_handle(
    client: TestClient[Any, Any],
) -> None:
    _, document = await _document(client)

    components = document["components"]
    assert components["parameters"]["IdempotencyKey"]["name"] == "Idempotency-Key"
    assert components["parameters"]["ApiVersion"]["name"] == "X-Api-Version"
    create = document["paths"]["/api/v1/merchant/payments"]["post"]
    listing = document["paths"]["/api/v1/merchant/payments"]["get"]
    refs = [p.get("$ref") for p in create["parameters"]]
    assert "#/components/parameters/IdempotencyKey" in refs
    assert "#/components/parameters/IdempotencyKey" not in [
        p.get("$ref") for p in listing["parameters"]
    ]
    assert create["responses"]["422"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"
    }
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            where = f"{method.upper()} {path}"
            versions = [p.get("$ref") for p in operation.get("parameters", [])]
            assert "#/components/parameters/ApiVersion" in versions, where
            for status, answer in operation["responses"].items():
                assert "X-Request-Id" in answer["headers"], (where, status)
            for status in ("400", "404", "429"):
                schema = operation["responses"][status]["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/Error"}, (where, status)
            assert "Retry-After" in operation["responses"]["429"]["headers"], where


def _fields(schema: Any, where: str) -> list[tuple[str, dict[str, Any]]]:
    """Every property inside `schema`, named by its path, down through nested objects, array
    items, map values and alternatives; a `$ref` is left to the component it names."""
    found: list[tuple[str, dict[str, Any]]] = []
    if not isinstance(schema, dict) or "$ref" in schema:
        return found
    for key in ("allOf", "oneOf", "anyOf"):
        for option in schema.get(key, []):
            found += _fields(option, where)
    for name, field in schema.get("properties", {}).items():
        found.append((f"{where}.{name}", field))
        found += _fields(field, f"{where}.{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            found += _fields(schema[key], where)
    return found


def _is_scalar(schema: dict[str, Any]) -> bool:
    # A file part (format binary) holds bytes, not a value an example could show.
    scalar = schema.get("type") in ("string", "integer", "number", "boolean")
    return scalar and schema.get("format") != "binary"


async def test_openapi_document_describes_every_field_and_parameter_with_a_valid_example(
    client: TestClient[Any, Any],
) -> None:
    from openapi_schema_validator import OAS30Validator, oas30_format_checker

    # given the document a signed-in member downloads
    _, document = await _document(client)
    components = document["components"]

    def invalid(schema: dict[str, Any], example: Any) -> str | None:
        # References point into the document's components: validate with them at hand. Formats
        # count too: a date-time example must be a timestamp.
        validator = OAS30Validator(
            {"allOf": [schema], "components": components}, format_checker=oas30_format_checker
        )
        error = next(iter(validator.iter_errors(example)), None)
        return None if error is None else error.message

    # when every field of every component schema, request body and response is collected
    fields = [(n, f) for name, s in components["schemas"].items() for n, f in _fields(s, name)]
    parameters = list(components["parameters"].values())
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            where = f"{method.upper()} {path}"
            parameters += [p for p in operation.get("parameters", []) if "$ref" not in p]
            answers = [operation.get("requestBody", {}), *operation["responses"].values()]
            for answer in answers:
                for media in answer.get("content", {}).values():
                    fields += _fields(media.get("schema"), where)

    # then each has a description (a reference: the component it names has one), each scalar
    # an example, and each example validates against its own schema
    faults = []
    for where, field in fields:
        if "$ref" in field:
            named = components["schemas"][field["$ref"].rsplit("/", 1)[-1]]
            if not named.get("description"):
                faults.append(f"{where}: {field['$ref']} has no description")
            continue
        if not field.get("description"):
            faults.append(f"{where}: no description")
        if _is_scalar(field) and "example" not in field:
            faults.append(f"{where}: no example")
        if "example" in field and (fault := invalid(field, field["example"])):
            faults.append(f"{where}: example {field['example']!r}: {fault}")
    for parameter in parameters:
        where = f"parameter {parameter['in']} {parameter['name']}"
        if not parameter.get("description"):
            faults.append(f"{where}: no description")
        if "example" not in parameter:
            faults.append(f"{where}: no example")
        elif fault := invalid(parameter["schema"], parameter["example"]):
            faults.append(f"{where}: example {parameter['example']!r}: {fault}")
    for name, schema in components["schemas"].items():
        if "example" in schema and (fault := invalid(schema, schema["example"])):
            faults.append(f"{name}: example {schema['example']!r}: {fault}")
    assert faults == []
    assert len(fields) > 900
    validate(document)


async def test_openapi_sandbox_kind_parameter_lists_every_sandbox_kind(
    client: TestClient[Any, Any],
) -> None:
    from mps.http.routes.sandbox import KINDS

    _, document = await _document(client)

    operation = document["paths"]["/api/v1/developer/sandbox/{kind}"]["post"]
    [kind] = [p for p in operation["parameters"] if p.get("name") == "kind"]
    assert kind["in"] == "path"
    assert set(kind["schema"]["enum"]) == set(KINDS)
    assert kind["example"] in KINDS
    assert kind["description"]
