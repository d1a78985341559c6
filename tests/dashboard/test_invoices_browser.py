"""Invoices in the dashboard, in a real browser (issue 30): an invoice created with line items,
its PDF downloaded (and really a PDF), its hosted link copied, resent, marked paid and cancelled,
its timeline, the list's status filter kept in the URL, and what a role without invoices:write
does not get to do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient
from playwright.async_api import Browser

from tests.dashboard.driving import (
    base_url,
    open_not_found,
    open_page,
    photograph,
    row_ids,
    sign_in,
    signed_in,
)
from tests.helpers import (
    Member,
    add_member,
    answered,
    created,
    eventually,
    read_object,
    sign_up,
)


async def _invoice(served: TestClient[Any, Any], owner: Member, **fields: Any) -> dict[str, Any]:
    body = {"currency": "USD", "customerEmail": "ada@example.com", "amountMinor": "5000", **fields}
    invoice: dict[str, Any] = await created(served, owner, "/api/v1/merchant/invoices", body)
    return invoice


async def _mails(served: TestClient[Any, Any], to: str) -> list[dict[str, Any]]:
    mailbox = await answered(await served.get("/api/v1/dev/mailbox", params={"to": to}), 200)
    found: list[dict[str, Any]] = mailbox["data"]
    return found


async def test_an_invoice_made_with_two_lines_gives_a_real_pdf_a_hosted_link_and_is_marked_paid(
    served: TestClient[Any, Any], browser: Browser, tmp_path: Path
) -> None:
    owner = await sign_up(served, company="Blue Mug Coffee")
    watched = await open_page(browser)
    page = watched.page
    await page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    await sign_in(watched, served, owner.email, "/dashboard/invoices")
    await page.wait_for_selector("text=No invoices match.")

    # when the owner makes an invoice of two lines: 2 at 3.50 and 1 at 2.75 USD
    await page.click("#new-invoice")
    await page.wait_for_selector("#create-invoice")
    await page.fill("#invoice-email", "ada@example.com")
    await page.fill("#invoice-name", "Ada Lovelace")
    await page.select_option("#invoice-currency", "USD")
    await page.fill("#item-description-0", "Flat white")
    await page.fill("#item-quantity-0", "2")
    await page.fill("#item-unit-0", "3.50")
    await page.click("#add-line")
    await page.fill("#item-description-1", "Croissant")
    await page.fill("#item-quantity-1", "1")
    await page.fill("#item-unit-1", "2.75")
    assert "9.75 USD" in await page.inner_text("#invoice-total")
    await photograph(page, tmp_path / "screens", "new-invoice")
    await page.click("#create-invoice")
    await page.wait_for_selector("#invoice-details")

    # then it is SENT with both lines and their total, as the API says too
    invoice_id = page.url.rsplit("/", 1)[-1]
    stored = await read_object(served, owner, "invoices", invoice_id)
    assert stored["status"] == "SENT" and stored["amountMinor"] == "975"
    assert [(i["description"], i["quantity"], i["unitAmountMinor"]) for i in stored["items"]] == [
        ("Flat white", 2, "350"),
        ("Croissant", 1, "275"),
    ]
    assert await page.inner_text("#invoice-amount") == "9.75 USD"
    assert await page.locator("#line-items tbody tr").count() == 2
    await page.wait_for_selector("#invoice-timeline li[data-status=SENT]")

    # and the hosted link is the customer's, copied by its button
    assert await page.input_value("#hosted-url") == stored["hostedUrl"]
    await page.click("#hosted-url-copy")
    await page.wait_for_selector("#hosted-url-copy:has-text('Copied')")
    assert await page.evaluate("navigator.clipboard.readText()") == stored["hostedUrl"]

    # when the PDF is downloaded
    async with page.expect_download() as downloading:
        await page.click("#download-pdf")
    download = await downloading.value
    saved = tmp_path / download.suggested_filename
    await download.save_as(saved)

    # then it is a real PDF named for the invoice
    assert download.suggested_filename == f"{stored['invoiceNumber']}.pdf"
    data = saved.read_bytes()
    assert data.startswith(b"%PDF-") and b"%%EOF" in data[-1024:]
    await photograph(page, tmp_path / "screens", "invoice")

    # when it is resent, the customer gets a second email
    assert len(await _mails(served, "ada@example.com")) == 1
    await page.click("#resend")

    async def resent() -> bool:
        return len(await _mails(served, "ada@example.com")) == 2

    await eventually(resent, what="the second email")

    # when it is marked paid with a reference
    await page.fill("#paid-reference", "BANK-1234")
    await page.click("#mark-paid-submit")
    await page.wait_for_selector("h1 .status-paid")

    # then the API agrees, the timeline shows it, and no open-invoice action is left
    paid = await read_object(served, owner, "invoices", invoice_id)
    assert paid["status"] == "PAID" and paid["paidReference"] == "BANK-1234"
    await page.wait_for_selector("#invoice-timeline li[data-status=PAID]")
    for action in ("#mark-paid", "#resend", "#cancel-invoice"):
        assert await page.locator(action).count() == 0
    assert watched.problems == []


async def test_the_status_filter_lives_in_the_url_and_an_invoice_is_cancelled_after_asking(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given one paid invoice and two sent
    owner = await sign_up(served)
    paid = await _invoice(served, owner)
    await created(served, owner, f"/api/v1/merchant/invoices/{paid['id']}/mark-paid", {}, 200)
    sent = [await _invoice(served, owner, amountMinor=str(100 + i)) for i in range(2)]
    watched = await signed_in(browser, served, owner.email, "/dashboard/invoices")
    page = watched.page
    await page.wait_for_selector(f"tr[data-id='{paid['id']}']")

    # when the member picks the status PAID
    await page.select_option("#filter-status", "PAID")
    await page.wait_for_selector(f"tr[data-id='{sent[0]['id']}']", state="detached")

    # then the URL says so, only the paid invoice is listed, and a reload shows the same
    assert page.url == base_url(served) + "/dashboard/invoices?status=PAID"
    assert await row_ids(page, "#invoices-table tbody tr") == [paid["id"]]
    await page.reload()
    await page.wait_for_selector("#invoices-table tbody tr")
    assert await row_ids(page, "#invoices-table tbody tr") == [paid["id"]]

    # when a sent invoice is cancelled, confirming when asked
    await page.goto(base_url(served) + f"/dashboard/invoices/{sent[0]['id']}")
    await page.click("#cancel-invoice")
    await page.click("#confirm-cancel-invoice")
    await page.wait_for_selector("h1 .status-void")

    # then it is VOID for the API too, listed under that status, and cannot be marked paid
    assert (await read_object(served, owner, "invoices", sent[0]["id"]))["status"] == "VOID"
    await page.wait_for_selector("#invoice-timeline li[data-status=VOID]")
    assert await page.locator("#mark-paid").count() == 0
    await page.goto(base_url(served) + "/dashboard/invoices?status=VOID")
    await page.wait_for_selector(f"tr[data-id='{sent[0]['id']}']")
    assert await row_ids(page, "#invoices-table tbody tr") == [sent[0]["id"]]
    assert watched.problems == []


async def test_a_viewer_reads_invoices_and_their_pdf_but_gets_no_action_to_change_them(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    owner = await sign_up(served)
    invoice = await _invoice(served, owner)
    viewer = await add_member(served, owner, "viewer@example.com", "role_viewer")

    watched = await signed_in(browser, served, viewer.email, "/dashboard/invoices")
    page = watched.page
    await page.wait_for_selector(f"tr[data-id='{invoice['id']}']")
    assert await page.locator("#new-invoice").count() == 0
    await page.click(f"tr[data-id='{invoice['id']}'] a")
    await page.wait_for_selector("#invoice-details")
    for action in ("#mark-paid", "#resend", "#cancel-invoice"):
        assert await page.locator(action).count() == 0
    # reading the PDF is a read: the viewer gets it
    async with page.expect_download() as downloading:
        await page.click("#download-pdf")
    path = await (await downloading.value).path()
    assert path.read_bytes().startswith(b"%PDF-")
    # a link straight to the form shows no form to fill
    await open_not_found(page, served, "/dashboard/invoices/new")
    assert await page.locator("#create-invoice").count() == 0
    assert watched.problems == []
