"""The API explorer at /api/docs (development only), driven in a real headless Chromium under
its Content Security Policy, which allows its one script and one style by their hashes: a new
developer signs in from the page, reads an operation, and sends it with the inputs the page
builds from the OpenAPI document. Every browser test also asserts that the browser refused
nothing and the page reported no error.

The development copy of the document the explorer reads, `GET /api/docs/openapi.json`, is tested
here too, without a browser: the same document as the session's, served to loopback only.

Screenshots of the page signed in and after a request are kept in test-artifacts/ for a person
to look at.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient
from aiohttp.typedefs import Handler, Middleware
from playwright.async_api import Browser, Page, Request

from tests.dashboard.driving import base_url
from tests.helpers import Member, assert_envelope, create_payment, post_as, sign_up
from tests.pages.browser import keep_screenshot, open_page

WAIT_MS = 10_000


@dataclass
class Explorer:
    """The explorer open in a browser page, with what the page did: every policy violation or
    page error (`problems`) and the URL of every request it sent to the API (`sent`)."""

    page: Page
    problems: list[str]
    sent: list[str] = field(default_factory=list)

    async def choose(self, operation: str) -> None:
        """Picks an operation in the list, named as 'GET /api/v1/merchant/payments/{id}'."""
        await self.page.click(f'button.op[data-op="{operation}"]')
        await self.page.wait_for_selector("#op:not([hidden])")

    async def send_and_wait(self, status: int) -> Any:
        """Sends, waits for an answer of `status`, and returns its body as shown."""
        await self.page.click("#send")
        await self.page.wait_for_selector(f"#status:has-text('{status} ')", timeout=WAIT_MS)
        return json.loads(await self.page.inner_text("#out"))

    async def paste(self, credential: str) -> None:
        await self.page.fill("#token", credential)
        await self.page.click("#load")
        await self.page.wait_for_selector("#signOut", timeout=WAIT_MS)


@asynccontextmanager
async def explorer_open(
    served: TestClient[Any, Any], browser: Browser, credential: str | None = None
) -> AsyncIterator[Explorer]:
    """Chromium on /api/docs, its operations listed, recording problems from the first load;
    signed in with `credential` (a session token or an API key) pasted, when one is given."""
    base = base_url(served)
    async with open_page(browser) as (page, problems):
        explorer = Explorer(page, problems)

        def on_request(request: Request) -> None:
            if "/api/v1/" in request.url:
                explorer.sent.append(request.url)

        page.on("request", on_request)
        await page.goto(f"{base}/api/docs")
        await page.wait_for_selector("button.op", timeout=WAIT_MS)
        if credential is not None:
            await explorer.paste(credential)
        yield explorer


async def _filled_code(page: Page) -> str:
    # The note turns to its success form once the page has filled the code in (not a predicate
    # polled in the page: the page's policy refuses the eval that would take).
    await page.wait_for_selector("#codeNote.ok", timeout=WAIT_MS)
    return await page.input_value("#code")


async def test_explorer_sends_a_request_with_a_pasted_session_token_and_no_policy_violation(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given a signed-in member and the explorer open in the browser
    member = await sign_up(served)

    async with explorer_open(served, browser) as explorer:
        styled = await explorer.page.evaluate("getComputedStyle(document.body).display")

        # when the member pastes the session token and sends GET /auth/me
        await explorer.paste(member.token)
        who = await explorer.page.inner_text("#who")
        await explorer.choose("GET /api/v1/auth/me")
        me = await explorer.send_and_wait(200)

    # then its script ran (it fetched the document and the route), its style applied, and the
    # browser refused nothing
    assert member.email in who
    assert me["user"]["email"] == member.email
    assert styled == "flex"
    assert explorer.problems == []


async def test_member_signs_in_by_email_with_the_code_from_the_dev_mailbox(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given a member of Blue Mug Coffee, and the explorer open with nobody signed in
    member = await sign_up(served, "ann@example.com", company="Blue Mug Coffee")

    async with explorer_open(served, browser) as explorer:
        page = explorer.page
        signed_out = await page.inner_text("#who")

        # when she types her email, the page fills in the code it reads from the dev mailbox,
        # and she signs in
        await page.fill("#email", member.email)
        await page.click("#sendCode")
        code = await _filled_code(page)
        await page.click("#verify")
        await page.wait_for_selector(f"#who:has-text('{member.email}')", timeout=WAIT_MS)
        who = await page.inner_text("#who")
        sign_in_hidden = await page.is_hidden("#auth")

        # and calls GET /auth/me with the session the page keeps
        await explorer.choose("GET /api/v1/auth/me")
        me = await explorer.send_and_wait(200)
        screenshot = await keep_screenshot(page, "explorer-signed-in.png")

        # and reloads the page
        await page.reload()
        await page.wait_for_selector("button.op", timeout=WAIT_MS)
        after_reload = await page.inner_text("#who")

        # and signs out
        await page.click("#signOut")
        await page.wait_for_selector("#auth:not([hidden])")
        after_sign_out = await page.inner_text("#who")

    # then the session was hers, in her company and test mode, kept for the tab, and ended
    assert "Not signed in" in signed_out
    assert len(code) == 6
    assert member.email in who and "Blue Mug Coffee" in who and "test mode" in who
    assert sign_in_hidden
    assert me["user"]["email"] == member.email
    assert me["company"]["id"] == member.company_id
    assert member.email in after_reload
    assert "Not signed in" in after_sign_out
    assert explorer.problems == []
    assert screenshot.stat().st_size > 10_000


async def test_an_email_without_an_account_is_offered_sign_up_and_signs_in(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given the explorer open, and an email nobody has used
    async with explorer_open(served, browser) as explorer:
        page = explorer.page

        # when the developer asks for a code, no code arrives, and sign-up is offered
        await page.fill("#email", "new@example.com")
        await page.click("#sendCode")
        await page.wait_for_selector("#signupStep:not([hidden])", timeout=WAIT_MS)
        note = await page.inner_text("#codeNote")
        screenshot = await keep_screenshot(page, "explorer-sign-up.png")

        # and they create their company, and sign in with the code the page fills in
        await page.fill("#companyName", "Green Tea House")
        await page.click("#signup")
        await _filled_code(page)
        await page.click("#verify")
        await page.wait_for_selector("#who:has-text('new@example.com')", timeout=WAIT_MS)
        who = await page.inner_text("#who")

    # then they are signed in to their new company
    assert "No code has arrived" in note
    assert "Green Tea House" in who
    assert screenshot.stat().st_size > 10_000
    assert explorer.problems == []


async def test_the_prefilled_body_of_create_payment_is_accepted_as_it_is(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given a member with the explorer open on POST /merchant/payments
    member = await sign_up(served)

    async with explorer_open(served, browser, member.token) as explorer:
        page = explorer.page
        await explorer.choose("POST /api/v1/merchant/payments")
        prefilled = json.loads(await page.input_value("#body"))
        fields = await page.inner_text("#fieldRows")
        description = await page.inner_text("#opDescription")
        responses = await page.inner_text("#responses")
        # both header parameters are $refs to #/components/parameters/…
        version_input = await page.is_visible("#p-header-X-Api-Version")
        key_input = await page.is_visible("#idem")

        # when they take a new idempotency key and send the body as the page filled it in
        await page.click("#newIdem")
        key = await page.input_value("#idem")
        payment = await explorer.send_and_wait(201)
        headers = await page.inner_text("#respHeaders")
        await keep_screenshot(page, "explorer-create-payment.png")

    # then the payment exists, made from the example body (the document's examples where it
    # has them, else its required fields), and the answer's request id and rate-limit headers
    # are shown
    assert {"amountMinor", "currency"} <= set(prefilled)
    assert "amountMinor" in fields and "successUrl" in fields
    assert "payments:write" in description
    assert "201" in responses and "422" in responses
    assert version_input and key_input
    assert key.startswith("explorer-") and len(key) > 20
    assert payment["amountMinor"] == prefilled["amountMinor"]
    assert payment["currency"] == prefilled["currency"].upper()
    assert "X-Request-Id" in headers and payment["requestId"] in headers
    assert "RateLimit" in headers
    got = await served.get(f"/api/v1/merchant/payments/{payment['id']}", headers=member.headers)
    assert got.status == 200
    assert explorer.problems == []


async def test_example_bodies_follow_the_schema_when_it_gives_no_example(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given a body schema without examples, its parts behind $refs as the document names them
    schema = {
        "type": "object",
        "required": ["amountMinor", "currency", "at", "email", "successUrl", "mode", "items"],
        "properties": {
            "amountMinor": {"$ref": "#/components/schemas/Money"},
            "currency": {"type": "string", "pattern": "^(?:[A-Za-z]{3})$"},
            "at": {"type": "string", "format": "date-time"},
            "email": {"type": "string", "format": "email"},
            "successUrl": {"type": "string", "format": "uri"},
            "mode": {"$ref": "#/components/schemas/Mode"},
            "items": {
                "type": "array",
                "minItems": 1,
                "items": {"$ref": "#/components/schemas/Item"},
            },
            "note": {"type": "string", "description": "optional, so left out"},
        },
    }
    components = {
        "schemas": {
            "Money": {"type": "string", "pattern": "^[1-9][0-9]{0,11}$"},
            "Mode": {"type": "string", "enum": ["test", "live"]},
            "Item": {
                "type": "object",
                "required": ["quantity", "code", "named"],
                "properties": {
                    "quantity": {"type": "integer", "minimum": 1, "maximum": 100},
                    "code": {"type": "string", "pattern": "^(?:[0-9]{6})$"},
                    "named": {"$ref": "#/components/schemas/Named"},
                },
            },
            "Named": {"type": "object", "required": ["name"], "example": {"name": "given"}},
        }
    }

    async with explorer_open(served, browser) as explorer:
        # when the page builds its example body (its own function, on a document of this shape)
        body = await explorer.page.evaluate(
            """([schema, components]) => {
              const kept = doc;
              doc = {components};
              try { return example(schema, '', 0); } finally { doc = kept; }
            }""",
            [schema, components],
        )

    # then every required field has a value its type accepts, and nothing optional is there
    at = body.pop("at")
    assert at.endswith("Z") and at[:4].isdigit()
    assert body == {
        "amountMinor": "1000",
        "currency": "USD",
        "email": "buyer@example.com",
        "successUrl": "https://example.com/success",
        "mode": "test",
        "items": [{"quantity": 1, "code": "111111", "named": {"name": "given"}}],
    }
    assert explorer.problems == []


async def test_retrieve_payment_sends_the_typed_id_and_refuses_to_send_without_it(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given a payment, and the explorer on GET /merchant/payments/{id}
    member = await sign_up(served)
    payment = await create_payment(served, member, description="Two flat whites")

    async with explorer_open(served, browser, member.token) as explorer:
        page = explorer.page
        await explorer.choose("GET /api/v1/merchant/payments/{id}")
        sent_before = list(explorer.sent)

        # when they send with the id empty
        await page.click("#send")
        await page.wait_for_selector("#error:has-text('required')")
        refusal = await page.inner_text("#error")
        sent_empty = explorer.sent[len(sent_before) :]

        # and then with the id typed into its input
        await page.fill("#p-path-id", payment["id"])
        shown_url = await page.inner_text("#url")
        got = await explorer.send_and_wait(200)

    # then the first sent nothing and said why, and the second fetched that payment
    assert "id is required" in refusal
    assert sent_empty == []
    assert shown_url == f"GET /api/v1/merchant/payments/{payment['id']}"
    assert got["id"] == payment["id"]
    assert got["description"] == "Two flat whites"
    assert explorer.sent[-1].endswith(f"/api/v1/merchant/payments/{payment['id']}")
    assert explorer.problems == []


async def test_a_path_parameter_is_encoded_into_the_url(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given the explorer on GET /merchant/payments/{id}
    member = await sign_up(served)

    async with explorer_open(served, browser, member.token) as explorer:
        page = explorer.page
        await explorer.choose("GET /api/v1/merchant/payments/{id}")

        # when the id typed holds characters a path gives meaning to
        await page.fill("#p-path-id", "pay_1/../../auth/me?x")
        shown_url = await page.inner_text("#url")

    # then they stay inside the one path segment
    assert shown_url == "GET /api/v1/merchant/payments/pay_1%2F..%2F..%2Fauth%2Fme%3Fx"
    assert explorer.problems == []


async def test_a_query_parameter_reaches_the_server(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given two payments, and the explorer on the payments list
    member = await sign_up(served)
    await create_payment(served, member)
    newest = await create_payment(served, member)

    async with explorer_open(served, browser, member.token) as explorer:
        page = explorer.page
        await explorer.choose("GET /api/v1/merchant/payments")
        limit_help = await page.inner_text("#params")

        # when they ask for one per page
        await page.fill("#p-query-limit", "1")
        listed = await explorer.send_and_wait(200)

    # then the server answered one page of one, the newest
    assert "Page size" in limit_help
    assert explorer.sent[-1].endswith("/api/v1/merchant/payments?limit=1")
    assert [p["id"] for p in listed["data"]] == [newest["id"]]
    assert listed["hasMore"] is True
    assert explorer.problems == []


async def _secret_key(client: TestClient[Any, Any], member: Member) -> str:
    """A test-mode secret key that may read and write payments, with apiKeyAccess turned on."""
    settings = await client.patch(
        "/api/v1/merchant/settings", json={"apiKeyAccess": True}, headers=member.headers
    )
    assert settings.status == 200, await settings.text()
    created = await post_as(
        client,
        member,
        "/api/v1/merchant/api-keys",
        {"name": "explorer", "scopes": ["payments:read", "payments:write"]},
    )
    assert created.status == 201, await created.text()
    key: str = (await created.json())["key"]
    return key


async def test_a_pasted_secret_key_lists_payments(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given a company that lets secret keys call payment routes, its key, and a payment
    member = await sign_up(served)
    key = await _secret_key(served, member)
    payment = await create_payment(served, member)

    async with explorer_open(served, browser) as explorer:
        page = explorer.page

        # when the developer pastes the key and lists payments
        await explorer.paste(key)
        who = await page.inner_text("#who")
        await explorer.choose("GET /api/v1/merchant/payments")
        listed = await explorer.send_and_wait(200)

    # then the page uses the key (shown shortened, never whole) and the server accepted it
    assert key.startswith("sk_test_")
    assert key[:8] in who and key not in who
    assert [p["id"] for p in listed["data"]] == [payment["id"]]
    assert explorer.problems == []


async def test_a_script_injected_into_a_page_is_refused_and_reported(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    """What the tests above rely on: the policy is enforced, and a refusal is seen."""
    base = base_url(served)

    async with open_page(browser) as (page, problems):
        await page.goto(f"{base}/api/docs")

        # when markup with an inline script and an inline handler reaches the page
        await page.evaluate(
            """() => {
              const script = document.createElement('script');
              script.textContent = 'window.injected = true';
              document.body.appendChild(script);
              const img = document.createElement('img');
              img.setAttribute('onerror', 'window.handled = true');
              img.src = 'data:,';
              document.body.appendChild(img);
            }"""
        )
        await page.wait_for_timeout(200)
        ran = await page.evaluate("[window.injected === true, window.handled === true]")

    # then neither ran, and the refusals were reported
    assert ran == [False, False]
    assert any(p.startswith("csp: script-src-elem refused inline") for p in problems), problems
    assert any(p.startswith("csp: script-src-attr refused inline") for p in problems), problems


# The development copy of the OpenAPI document, without a browser.


async def test_explorer_document_is_the_session_document_without_a_credential_on_loopback(
    client: TestClient[Any, Any],
) -> None:
    # given a member, who may read the contract's document with a session
    member = await sign_up(client)
    with_session = await client.get("/api/v1/developer/openapi.json", headers=member.headers)

    # when the explorer's copy is read from loopback with no credential
    response = await client.get("/api/docs/openapi.json")

    # then it is the same document, and it leaves the development routes out
    assert response.status == 200
    assert response.headers["Content-Type"].startswith("application/json")
    document = await response.json()
    assert document == await with_session.json()
    assert "/api/v1/merchant/payments" in document["paths"]
    assert not any(path.startswith(("/api/docs", "/api/v1/dev/")) for path in document["paths"])


async def test_explorer_document_is_an_unknown_route_when_the_host_is_not_loopback(
    client: TestClient[Any, Any],
) -> None:
    # given what an unknown route answers
    unknown = await client.get("/api/v1/dev/no-such-route")

    # when a page that rebound its own name to 127.0.0.1 reads the document
    response = await client.get("/api/docs/openapi.json", headers={"Host": "attacker.example"})

    # then it gets the same 404 and no document
    assert unknown.status == 404
    assert response.status == 404
    body = await response.json()
    assert_envelope(body, 404, "not_found")
    assert body["code"] == (await unknown.json())["code"]
    assert "paths" not in body


def _from_peer(address: str) -> Middleware:
    """Makes every request appear to come from `address`, as a peer on another machine would."""

    @web.middleware
    async def peer(request: web.Request, handler: Handler) -> web.StreamResponse:
        return await handler(request.clone(remote=address))

    return peer


async def test_explorer_document_is_an_unknown_route_when_the_peer_is_not_loopback(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> None:
    # given a caller on another machine that names a loopback host
    app = make_app()
    app.middlewares.insert(0, _from_peer("203.0.113.7"))
    client: TestClient[Any, Any] = await aiohttp_client(app)

    # when it reads the document
    response = await client.get("/api/docs/openapi.json", headers={"Host": "127.0.0.1:8080"})

    # then it gets a 404
    assert response.status == 404
    assert_envelope(await response.json(), 404, "not_found")


async def test_explorer_and_its_document_are_absent_from_the_production_app(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> None:
    # given the app as production builds it, asked from loopback
    client: TestClient[Any, Any] = await aiohttp_client(make_app(mode="production"))

    # when the explorer and its document are asked for
    page = await client.get("/api/docs")
    document = await client.get("/api/docs/openapi.json")

    # then neither exists there
    assert page.status == 404
    assert document.status == 404
