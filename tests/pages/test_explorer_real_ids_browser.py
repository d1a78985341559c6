"""The API explorer's examples name the caller's own objects (issue 31, item 12), in a real
headless Chromium under the page's policy: a body field that takes an id gets the id of one of the
caller's objects that fits it, so that Send works as it is; a path parameter is offered the
caller's ids, newest first, and left for the developer to choose."""

from __future__ import annotations

import json
from typing import Any

from aiohttp.test_utils import TestClient
from playwright.async_api import Browser

from tests.helpers import create_payment, sign_up
from tests.money import paid_payment
from tests.pages.test_explorer_browser import WAIT_MS, Explorer, explorer_open

REFUNDS = "POST /api/v1/merchant/refunds"
PAYMENT = "GET /api/v1/merchant/payments/{id}"


async def _ready(explorer: Explorer, operation: str) -> None:
    """Chooses `operation` and waits until its examples are filled in (the page clears #op's
    aria-busy then)."""
    await explorer.choose(operation)
    await explorer.page.wait_for_selector("#op:not([aria-busy])", timeout=WAIT_MS)


async def _offered(explorer: Explorer) -> list[str]:
    return await explorer.page.eval_on_selector_all(
        "#p-path-id-ids option", "options => options.map(o => o.value)"
    )


async def test_refund_example_names_the_callers_paid_payment_and_is_accepted_as_it_is(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given a paid payment, and a newer one not yet paid, which cannot be refunded
    member = await sign_up(served)
    paid = await paid_payment(served, member, amount="2500")
    await create_payment(served, member)

    async with explorer_open(served, browser, member.token) as explorer:
        page = explorer.page

        # when the developer opens POST /merchant/refunds and sends its example as it is
        await _ready(explorer, REFUNDS)
        example = json.loads(await page.input_value("#body"))
        await page.click("#newIdem")
        refund = await explorer.send_and_wait(201)

    # then the example named the payment that can be refunded, and the server refunded it
    assert example["paymentId"] == paid["id"]
    assert refund["paymentId"] == paid["id"]
    assert refund["amountMinor"] == example["amountMinor"]
    assert explorer.problems == []


async def test_a_path_parameter_is_offered_the_callers_ids_including_one_just_created(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given a member with no payment yet
    member = await sign_up(served)

    async with explorer_open(served, browser, member.token) as explorer:
        page = explorer.page

        # when they open GET /merchant/payments/{id} with nothing to offer
        await _ready(explorer, PAYMENT)
        before = await _offered(explorer)
        placeholder_before = await page.get_attribute("#p-path-id", "placeholder")

        # and create two payments from the explorer, then open it again
        created = []
        for _ in range(2):
            await _ready(explorer, "POST /api/v1/merchant/payments")
            created.append(await explorer.send_and_wait(201))
        await _ready(explorer, PAYMENT)
        offered = await _offered(explorer)
        placeholder = await page.get_attribute("#p-path-id", "placeholder")
        typed = await page.input_value("#p-path-id")

    # then no id was offered at first (the placeholder was the document's example); then theirs
    # are, newest first, and none is filled in
    assert before == []
    assert offered == [created[1]["id"], created[0]["id"]]
    assert placeholder == created[1]["id"] != placeholder_before
    assert typed == ""
    assert any(url.endswith("/api/v1/merchant/payments?limit=20") for url in explorer.sent)
    assert explorer.problems == []


async def test_without_a_credential_the_examples_keep_the_document_s_and_nothing_is_read(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given the explorer open with nobody signed in
    async with explorer_open(served, browser) as explorer:
        sent_before = list(explorer.sent)

        # when the refund operation is opened
        await _ready(explorer, REFUNDS)
        example = json.loads(await explorer.page.input_value("#body"))

    # then its example is the document's, and no listing was asked for
    assert example["paymentId"].startswith("pay_")
    assert explorer.sent[len(sent_before) :] == []
    assert explorer.problems == []
