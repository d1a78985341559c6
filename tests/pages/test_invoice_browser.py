"""The hosted invoice page (decisions 8), driven in a real headless Chromium under its strict
Content Security Policy: what a customer sees on opening the link in an invoice email, its PDF
link, and how it prints.

Screenshots of the page, due and paid, are kept in test-artifacts/ for a person to look at.
"""

from __future__ import annotations

import asyncio
import io
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from aiohttp.test_utils import TestClient
from playwright.async_api import Browser
from pypdf import PdfReader

from tests.dashboard.driving import base_url
from tests.helpers import Member, sign_up
from tests.pages.browser import (
    assert_not_valid_link,
    inner_texts,
    keep_screenshot,
    open_page,
    record_dialogs,
)

ITEMS = [
    {"description": "Design work", "quantity": 2, "unitAmountMinor": "12500"},
    {"description": "Hosting (monthly)", "quantity": 1, "unitAmountMinor": "2999"},
]


async def _invoice(
    served: TestClient[Any, Any], member: Member, **fields: Any
) -> tuple[dict[str, Any], str]:
    """A new invoice through the API, and the address of its hosted page on the test server
    (the path and query of its hostedUrl, on the server's own base URL)."""
    body = {
        "currency": "USD",
        "customerEmail": "buyer@example.com",
        "customerName": "Ann Buyer",
        "items": ITEMS,
        "dueDate": "2030-01-31",
        "memo": "Thanks",
        **fields,
    }
    response = await served.post("/api/v1/merchant/invoices", json=body, headers=member.headers)
    assert response.status == 201, await response.text()
    invoice: dict[str, Any] = await response.json()
    link = urlsplit(invoice["hostedUrl"])
    assert link.path == f"/i/{invoice['id']}" and link.query.startswith("t=")
    base = base_url(served)
    return invoice, f"{base}{link.path}?{link.query}"


def _day(iso: str) -> str:
    """'2026-03-05...' as the page writes it: '5 Mar 2026'."""
    day = date.fromisoformat(iso[:10])
    return f"{day.day} {day:%b} {day.year}"


async def test_the_page_shows_the_invoice_with_no_policy_violation(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given an invoice of two lines sent to a named customer
    member = await sign_up(served, company="Blue Mug Coffee")
    invoice, url = await _invoice(served, member)

    # when the customer opens the link in the invoice email
    async with open_page(browser) as (page, problems):
        response = await page.goto(url)
        status = response.status if response else None
        main_status = await page.get_attribute("main#invoice.invoice", "data-status")
        test_mode, merchant, number, amount_due, badge = await inner_texts(
            page, "#test-mode", "#merchant", "#invoice-number", "#amount-due", "#status.badge"
        )
        badge_status = await page.get_attribute("#status", "data-status")
        customer_name, customer_email, issue_date, due_date = await inner_texts(
            page,
            "#bill-to #customer-name",
            "#bill-to #customer-email",
            "dd#issue-date",
            "dd#due-date",
        )
        rows = [
            await row.locator("td").all_inner_texts()
            for row in await page.locator("table#items tbody tr.item").all()
        ]
        total, memo = await inner_texts(page, "td#total", "section#memo p")
        href = await page.get_attribute("a#download-pdf.download", "href")
        screenshot = await keep_screenshot(page, "invoice-page.png")

    # then the page holds the whole invoice, due, with its PDF link, and the browser refused
    # nothing the page did under its policy
    assert status == 200
    assert main_status == badge_status == "SENT"
    assert test_mode == "Test mode"
    assert merchant == "Blue Mug Coffee"
    assert number == invoice["invoiceNumber"] == "INV-000001"
    assert amount_due == total == "279.99 USD"
    assert badge == "Due 31 Jan 2030"
    assert (customer_name, customer_email) == ("Ann Buyer", "buyer@example.com")
    assert issue_date == _day(invoice["createdAt"])
    assert due_date == "31 Jan 2030"
    assert rows == [
        ["Design work", "2", "125.00", "250.00"],
        ["Hosting (monthly)", "1", "29.99", "29.99"],
    ]
    assert memo == "Thanks"
    assert href is not None and href.startswith(f"/i/{invoice['id']}/pdf?t=")
    assert problems == []
    assert screenshot.stat().st_size > 10_000


async def test_a_hostile_description_and_customer_name_render_as_text(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given an invoice whose line descriptions and customer name are markup
    img = "<img src=x onerror=alert(1)>"
    script = "<script>alert(2)</script>"
    name = '"><img src=y onerror=alert(3)>'
    member = await sign_up(served)
    _, url = await _invoice(
        served,
        member,
        customerName=name,
        items=[
            {"description": img, "quantity": 1, "unitAmountMinor": "100"},
            {"description": script, "quantity": 1, "unitAmountMinor": "200"},
        ],
    )

    # when the customer opens the page
    async with open_page(browser) as (page, problems):
        dialogs = record_dialogs(page)
        await page.goto(url)
        descriptions = await page.locator("tbody tr.item td.description").all_text_contents()
        customer_name = await page.text_content("#customer-name")
        images_in_table = await page.locator("table#items img").count()
        images = await page.locator("img").count()
        scripts = await page.locator("script").count()
        # Anything that did run would have run by now; give it a moment to show.
        await page.wait_for_timeout(200)

    # then each value is shown as the raw text it is: no element was made of it, nothing ran,
    # and the browser refused nothing (there was nothing to refuse)
    assert descriptions == [img, script]
    assert customer_name == name
    assert images_in_table == 0 and images == 0 and scripts == 0
    assert dialogs == []
    assert problems == []


async def test_the_download_link_downloads_the_pdf(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given an open invoice page
    member = await sign_up(served)
    invoice, url = await _invoice(served, member)

    # when the customer clicks Download PDF
    async with open_page(browser) as (page, problems):
        await page.goto(url)
        async with page.expect_download() as downloading:
            await page.click("#download-pdf")
        download = await downloading.value
        filename = download.suggested_filename
        failure = await download.failure()
        data = await asyncio.to_thread(Path(await download.path()).read_bytes)
        pdf_url = await page.eval_on_selector("#download-pdf", "a => a.href")
        fetched = await page.request.get(pdf_url)
        content_type = fetched.headers["content-type"]
        fetched_status = fetched.status

    # then the browser saves the invoice's PDF under the invoice's number
    assert failure is None
    assert filename == "INV-000001.pdf"
    assert data.startswith(b"%PDF-")
    text = "".join(p.extract_text() for p in PdfReader(io.BytesIO(data)).pages)
    for expected in (invoice["invoiceNumber"], "Ann Buyer", "Design work", "279.99"):
        assert expected in text, expected
    assert fetched_status == 200 and content_type == "application/pdf"
    assert problems == []


async def test_a_wrong_token_shows_the_invalid_link_page_and_nothing_of_the_invoice(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given an invoice, and its link with a guessed token
    member = await sign_up(served)
    invoice, _ = await _invoice(served, member)
    base = base_url(served)

    # when someone opens the link with the wrong token, then the page says only that the link
    # is not valid, with a 404
    text = await assert_not_valid_link(
        browser,
        f"{base}/i/{invoice['id']}?t=guessed",
        "This invoice link is not valid",
        "#invoice, #invoice-number, #bill-to, #customer-name, #items, #download-pdf",
        ("INV-000001", "Ann Buyer", "buyer@example.com", "Design work", "279.99"),
    )
    assert "Acme Ltd" not in text


async def test_a_paid_invoice_shows_paid_and_prints_without_the_download_link(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given an invoice marked paid by bank transfer
    member = await sign_up(served)
    invoice, url = await _invoice(served, member)
    paid = await served.post(
        f"/api/v1/merchant/invoices/{invoice['id']}/mark-paid",
        json={"reference": "WIRE-1"},
        headers=member.headers,
    )
    assert paid.status == 200, await paid.text()
    paid_at = (await paid.json())["paidAt"]

    # when the customer opens the page, then prints it
    async with open_page(browser) as (page, problems):
        await page.goto(url)
        main_status = await page.get_attribute("main#invoice", "data-status")
        status = await page.get_attribute("#status", "data-status")
        badge, label = await inner_texts(page, "#status", ".amount-label")
        link_on_screen = await page.is_visible("#download-pdf")
        screenshot = await keep_screenshot(page, "invoice-page-paid.png")
        await page.emulate_media(media="print")
        link_in_print = await page.is_visible("#download-pdf")
        printed = await page.pdf()

    # then the page shows it PAID, and prints as a PDF without the download link
    assert main_status == status == "PAID"
    assert badge == f"Paid on {_day(paid_at)}"
    assert label == "Amount paid"
    assert link_on_screen and not link_in_print
    assert printed.startswith(b"%PDF-")
    text = "".join(p.extract_text() for p in PdfReader(io.BytesIO(printed)).pages)
    for expected in ("INV-000001", "Paid on", "Ann Buyer", "279.99 USD"):
        assert expected in text, expected
    assert "Download PDF" not in text
    assert problems == []
    assert screenshot.stat().st_size > 10_000
