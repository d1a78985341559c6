"""A payment's events and their webhook deliveries on its page in the dashboard (issue 30), in a
real browser: the events about the payment (its own and its refund's, through
`GET /merchant/events?objectId=`) and each one's deliveries
(`GET /merchant/events/{id}/deliveries`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient
from playwright.async_api import Browser

from tests.dashboard.driving import photograph, signed_in
from tests.helpers import add_member, created, eventually, sign_up
from tests.money import paid_payment, refund
from tests.receiver import Receiver


async def test_a_payments_page_lists_its_events_and_refunds_with_each_delivery(
    served: TestClient[Any, Any], browser: Browser, tmp_path: Path
) -> None:
    async with Receiver() as receiver:
        # given an endpoint for every event, a paid payment refunded in part, and another one
        owner = await sign_up(served, company="Blue Mug Coffee")
        every_event = {"url": receiver.url("/hooks"), "events": ["*"]}
        endpoint = await created(served, owner, "/api/v1/merchant/webhooks", every_event)
        payment = await paid_payment(served, owner, "2500")
        assert (await refund(served, owner, payment["id"], "1000")).status == 201
        await paid_payment(served, owner, "900")

        async def all_delivered() -> list[dict[str, Any]]:
            response = await served.get(
                "/api/v1/merchant/events",
                params={"objectId": payment["id"]},
                headers=owner.headers,
            )
            events: list[dict[str, Any]] = (await response.json())["data"]
            for event in events:
                sent = await served.get(
                    f"/api/v1/merchant/events/{event['id']}/deliveries", headers=owner.headers
                )
                if [d["status"] for d in (await sent.json())["data"]] != ["SUCCEEDED"]:
                    return []
            return events

        events = await eventually(all_delivered, what="every event delivered")

        # when the owner opens the payment
        watched = await signed_in(
            browser, served, owner.email, f"/dashboard/payments/{payment['id']}"
        )
        page = watched.page
        await page.wait_for_selector("#events tr[data-event] .status-succeeded")
        await page.wait_for_function(
            # A function, not an expression: Playwright re-checks an expression with eval, which
            # the dashboard's policy refuses, so only a function is polled until it holds.
            "() => document.querySelectorAll('#events tr[data-event] .status-succeeded').length"
            " === 3"
        )
        await photograph(page, tmp_path / "screens", "payment-events")
        shown = await page.eval_on_selector_all(
            "#events li[data-type]", "items => items.map(i => [i.dataset.type, i.dataset.id])"
        )
        delivered_to = await page.eval_on_selector_all(
            "#events tr[data-event] a", "links => links.map(a => a.getAttribute('href'))"
        )

    # then the page lists this payment's three events, newest first, none of the other's, each
    # with its one delivery to the endpoint
    assert shown == [[e["type"], e["id"]] for e in events]
    assert [t for t, _ in shown] == ["refund.created", "payment.completed", "payment.created"]
    assert delivered_to == [f"/dashboard/developers/webhooks/{endpoint['id']}"] * 3
    assert watched.problems == []


async def test_a_role_without_settings_read_sees_the_payment_but_no_events(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    owner = await sign_up(served)
    payment = await paid_payment(served, owner, "2500")
    finance = await add_member(served, owner, "finance@example.com", "role_finance")

    watched = await signed_in(
        browser, served, finance.email, f"/dashboard/payments/{payment['id']}"
    )
    page = watched.page
    await page.wait_for_selector("#timeline")

    assert await page.locator("#events").count() == 0
    assert watched.problems == []
