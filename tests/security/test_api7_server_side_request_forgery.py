"""API7, server-side request forgery, and the URLs a payment carries.

A payment stores three URLs its creator chooses: `successUrl` (where the shopper is sent after
paying), `cancelUrl` (the checkout page's way back) and `webhookUrl` (where that payment's events
will be delivered). Webhook delivery is not built yet, so today the service itself requests none
of them: it makes no outbound request on a merchant's behalf. What exists is that it stores them,
links to `cancelUrl` from the public checkout page and hands `successUrl` to the shopper's browser
as `redirectUrl`. So these tests hold that only http and https URLs are accepted (a
`javascript:`, `file:` or `data:` URL would be a stored script or a local file reference), and
that what the page renders stays an inert http(s) link. The production rules for webhook
endpoints (https only, no private, loopback or link-local addresses: decisions 2) get their tests
when delivery is built.
"""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from tests.helpers import assert_refused, create_payment, pay, post_payment, sign_up

pytestmark = pytest.mark.both_backends

URL_FIELDS = ["successUrl", "cancelUrl", "webhookUrl"]

HOSTILE_URLS = [
    "javascript:alert(document.cookie)",
    "JavaScript:alert(1)",
    " javascript:alert(1)",
    "file:///etc/passwd",
    "data:text/html,<script>alert(1)</script>",
    "vbscript:msgbox(1)",
    "gopher://127.0.0.1:6379/_FLUSHALL",
    "ftp://internal.example/secret",
    "//evil.example/phish",
    "http://",
    "https://shop.test/ok\njavascript:alert(1)",
]


class _Links(HTMLParser):
    """Every URL-bearing attribute of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[tuple[str, str, str]] = []
        self.handlers: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name.startswith("on"):
                self.handlers.append(name)
            if name in ("href", "src", "action", "formaction") and value is not None:
                self.urls.append((tag, name, value))


def _links(html: str) -> _Links:
    parser = _Links()
    parser.feed(html)
    return parser


@pytest.mark.parametrize("field", URL_FIELDS)
@pytest.mark.parametrize("url", HOSTILE_URLS)
async def test_payment_urls_that_are_not_http_or_https_are_refused_with_400(
    client: TestClient[Any, Any], field: str, url: str
) -> None:
    # given
    member = await sign_up(client)

    # when a payment is created with a URL of another scheme
    fields: dict[str, Any] = {field: url}
    response = await post_payment(client, member, **fields)

    # then it is refused, naming the field, and nothing is stored
    body = await assert_refused(response, 400, "validation_error")
    assert [e["field"] for e in body["errors"]] == [field]
    listed = await client.get("/api/v1/merchant/payments", headers=member.headers)
    assert (await listed.json())["data"] == []


async def test_checkout_page_renders_a_cancel_url_as_an_inert_http_link_when_it_holds_quotes(
    client: TestClient[Any, Any],
) -> None:
    # given a cancelUrl that tries to break out of the href attribute into an event handler
    member = await sign_up(client)
    hostile = "https://shop.test/back'onmouseover='alert(1)'\"><script>alert(2)</script>"
    payment = await create_payment(client, member, cancelUrl=hostile)

    # when the public checkout page is fetched
    page = await client.get(f"/pay/{payment['reference']}")

    # then the URL is one attribute value, unchanged, and every link on the page is http(s)
    # or relative: no script URL, no injected attribute or element
    html = await page.text()
    links = _links(html)
    assert page.status == 200
    assert ("a", "href", hostile) in links.urls
    for _tag, _name, url in links.urls:
        assert url.startswith(("https://", "http://", "/", "#")), url
    assert links.handlers == []
    assert "<script>alert(2)" not in html


async def test_success_url_reaches_the_shopper_only_as_the_http_url_the_merchant_stored(
    client: TestClient[Any, Any],
) -> None:
    # given a payment with a successUrl
    member = await sign_up(client)
    payment = await create_payment(
        client, member, successUrl="https://shop.test/thanks?o=1#receipt"
    )

    # when it is paid
    response = await pay(client, payment["reference"])

    # then the redirect handed to the browser is that URL, byte for byte, with only the paid
    # payment's id and reference added to its query (the merchant's page needs them)
    assert response.status == 200
    assert (await response.json())["redirectUrl"] == (
        f"https://shop.test/thanks?o=1&paymentId={payment['id']}"
        f"&reference={payment['reference']}#receipt"
    )
