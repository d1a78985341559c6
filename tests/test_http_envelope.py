"""Every response carries the envelope and its request id (decisions 0, 17)."""

from __future__ import annotations

import io
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from tests.helpers import (
    assert_envelope,
    assert_refused,
    create_payment,
    pending_payment,
    post_as,
    post_payment,
    sign_up,
)


async def test_success_body_has_ok_and_request_id_matching_the_header(
    client: TestClient[Any, Any],
) -> None:
    response = await client.get("/api/v1/health/live")

    body = await response.json()
    assert response.status == 200
    assert body["ok"] is True
    assert body["requestId"].startswith("req_")
    assert response.headers["X-Request-Id"] == body["requestId"]


async def test_responses_are_never_cached_or_sniffed(client: TestClient[Any, Any]) -> None:
    ok = await client.get("/api/v1/health/live")
    missing = await client.get("/api/v1/nowhere")
    bad_version = await client.get("/api/v1/health/live", headers={"X-Api-Version": "9"})

    for response in (ok, missing, bad_version):
        assert response.headers["Cache-Control"] == "no-store"
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert response.headers["X-Request-Id"].startswith("req_")


async def test_request_ids_differ_between_requests(client: TestClient[Any, Any]) -> None:
    first = await client.get("/api/v1/health/live")
    second = await client.get("/api/v1/health/live")

    assert first.headers["X-Request-Id"] != second.headers["X-Request-Id"]


async def test_unknown_route_is_a_404_envelope(client: TestClient[Any, Any]) -> None:
    response = await client.get("/api/v1/no/such/route")

    body = await assert_refused(response, 404, "not_found")
    assert response.headers["X-Request-Id"] == body["requestId"]


async def test_wrong_method_is_a_405_envelope_with_allow(client: TestClient[Any, Any]) -> None:
    response = await client.delete("/api/v1/auth/me")

    await assert_refused(response, 405, "method_not_allowed")
    assert "GET" in response.headers["Allow"]


async def test_body_over_one_mebibyte_is_a_413_envelope(client: TestClient[Any, Any]) -> None:
    big = io.BytesIO(b'{"email": "' + b"a" * (1024 * 1024) + b'"}')

    response = await client.post(
        "/api/v1/auth/login", data=big, headers={"Content-Type": "application/json"}
    )

    await assert_refused(response, 413, "payload_too_large")


async def test_non_json_body_is_a_415_envelope(client: TestClient[Any, Any]) -> None:
    response = await client.post(
        "/api/v1/auth/login", data="email=a@b.co", headers={"Content-Type": "text/plain"}
    )

    await assert_refused(response, 415, "unsupported_media_type")


async def test_malformed_json_is_a_400_invalid_json(client: TestClient[Any, Any]) -> None:
    response = await client.post(
        "/api/v1/auth/login", data='{"email": ', headers={"Content-Type": "application/json"}
    )

    await assert_refused(response, 400, "invalid_json")


async def test_validation_errors_name_each_field(client: TestClient[Any, Any]) -> None:
    response = await client.post(
        "/api/v1/auth/signup", json={"companyName": "", "email": "not-an-email", "colour": "red"}
    )

    body = await assert_refused(response, 400, "validation_error")
    fields = {e["field"]: e["message"] for e in body["errors"]}
    assert fields == {
        "colour": "is not a known field",
        "companyName": "must not be empty",
        "email": "must be an email address",
    }


async def test_a_missing_required_field_is_reported(client: TestClient[Any, Any]) -> None:
    response = await client.post("/api/v1/auth/signup", json={"companyName": "Acme"})

    body = await response.json()
    assert response.status == 400
    assert body["errors"] == [{"field": "email", "message": "is required"}]


async def test_a_body_that_is_not_an_object_is_rejected(client: TestClient[Any, Any]) -> None:
    response = await client.post("/api/v1/auth/login", json=["a@b.co"])

    await assert_refused(response, 400, "validation_error")


async def test_unknown_query_parameters_are_rejected(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)

    response = await client.get(
        "/api/v1/merchant/api-keys", params={"limt": "5"}, headers=member.headers
    )

    body = await response.json()
    assert response.status == 400
    assert body["errors"] == [
        {"field": "limt", "message": "is not a known field; did you mean limit?"}
    ]


async def test_an_unknown_field_close_to_a_known_one_names_it(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)

    response = await post_payment(
        client, member, amount_minor="100", amountMinor="100", descripton="x"
    )

    body = await response.json()
    assert response.status == 400
    assert {e["field"]: e["message"] for e in body["errors"]} == {
        "amount_minor": "is not a known field; did you mean amountMinor?",
        "descripton": "is not a known field; did you mean description?",
    }


async def test_a_path_without_the_api_prefix_gets_a_hint(client: TestClient[Any, Any]) -> None:
    response = await client.get("/merchant/payments")

    body = await response.json()
    assert_envelope(body, 404, "not_found")
    assert body["message"] == (
        "No route for GET /merchant/payments; API routes start with /api/v1 "
        "(did you mean /api/v1/merchant/payments?)"
    )


async def test_bad_input_changes_nothing(client: TestClient[Any, Any]) -> None:
    # given
    member = await sign_up(client)

    # when
    response = await post_as(
        client,
        member,
        "/api/v1/merchant/api-keys",
        {"name": "ci", "scopes": ["payments:read", "no:such"]},
    )

    # then
    assert response.status == 400
    listed = await client.get("/api/v1/merchant/api-keys", headers=member.headers)
    assert (await listed.json())["data"] == []


class TestVersions:
    async def test_responses_say_which_version_they_use(self, client: TestClient[Any, Any]) -> None:
        response = await client.get("/api/v1/health/live")

        assert response.headers["X-Api-Version"] == "v2"
        assert "Deprecation" not in response.headers

    @pytest.mark.parametrize("header", ["v1", "1", "V1"])
    async def test_v1_is_accepted_and_marked_deprecated(
        self, client: TestClient[Any, Any], header: str
    ) -> None:
        response = await client.get("/api/v1/health/live", headers={"X-Api-Version": header})

        assert response.status == 200
        assert response.headers["X-Api-Version"] == "v1"
        assert response.headers["Deprecation"].startswith("@")
        assert response.headers["Sunset"].endswith("GMT")

    async def test_an_unknown_version_is_a_400(self, client: TestClient[Any, Any]) -> None:
        response = await client.get("/api/v1/health/live", headers={"X-Api-Version": "v3"})

        await assert_refused(response, 400, "unsupported_version")

    async def test_v1_lists_use_items_and_no_has_more(self, client: TestClient[Any, Any]) -> None:
        member = await sign_up(client)

        v1 = await client.get(
            "/api/v1/merchant/api-keys", headers={**member.headers, "X-Api-Version": "v1"}
        )
        v2 = await client.get("/api/v1/merchant/api-keys", headers=member.headers)

        v1_body, v2_body = await v1.json(), await v2.json()
        assert "items" in v1_body and "data" not in v1_body and "hasMore" not in v1_body
        assert "data" in v2_body and v2_body["hasMore"] is False
        assert v1_body["nextCursor"] is None

    async def test_v1_errors_carry_only_the_five_envelope_fields(
        self, client: TestClient[Any, Any]
    ) -> None:
        response = await client.post(
            "/api/v1/auth/signup", json={"companyName": ""}, headers={"X-Api-Version": "v1"}
        )

        body = await response.json()
        assert set(body) == {"ok", "statusCode", "message", "requestId", "timestamp"}

    async def test_the_company_pinned_version_applies_when_the_header_is_omitted(
        self, client: TestClient[Any, Any]
    ) -> None:
        # given a company pinned to v1
        member = await sign_up(client)
        pinned = await client.patch(
            "/api/v1/merchant/settings", json={"defaultApiVersion": "v1"}, headers=member.headers
        )
        assert pinned.status == 200

        # when it calls without the header
        response = await client.get("/api/v1/merchant/api-keys", headers=member.headers)

        # then its version is used, and the header still overrides it
        assert response.headers["X-Api-Version"] == "v1"
        assert "items" in await response.json()
        explicit = await client.get(
            "/api/v1/merchant/api-keys", headers={**member.headers, "X-Api-Version": "2"}
        )
        assert explicit.headers["X-Api-Version"] == "v2"

    async def test_versions_default_is_the_pinned_version_for_a_session(
        self, client: TestClient[Any, Any]
    ) -> None:
        member = await sign_up(client)
        await client.patch(
            "/api/v1/merchant/settings", json={"defaultApiVersion": "v1"}, headers=member.headers
        )

        anonymous = await client.get("/api/v1/developer/versions")
        pinned = await client.get("/api/v1/developer/versions", headers=member.headers)
        forged = await client.get(
            "/api/v1/developer/versions", headers={"Authorization": "Bearer forged"}
        )

        assert (await anonymous.json())["default"] == "v2"
        assert (await pinned.json())["default"] == "v1"
        assert pinned.headers["X-Api-Version"] == "v1"
        assert forged.status == 200
        assert (await forged.json())["default"] == "v2"

    async def test_versions_route_lists_both(self, client: TestClient[Any, Any]) -> None:
        response = await client.get("/api/v1/developer/versions")

        body = await response.json()
        assert body["current"] == "v2"
        assert body["default"] == "v2"
        assert [v["version"] for v in body["versions"]] == ["v2", "v1"]
        assert body["versions"][1]["status"] == "deprecated"


async def test_an_empty_object_is_taken_as_no_body_but_anything_else_is_refused(
    client: TestClient[Any, Any],
) -> None:
    member, first = await pending_payment(client)
    second = await create_payment(client, member)

    cancelled = await client.post(
        f"/api/v1/merchant/payments/{first['id']}/cancel", json={}, headers=member.headers
    )
    refused = await post_as(
        client, member, f"/api/v1/merchant/payments/{second['id']}/cancel", {"reason": "x"}
    )

    assert cancelled.status == 200 and (await cancelled.json())["status"] == "CANCELLED"
    assert_envelope(await refused.json(), 400, "validation_error")
