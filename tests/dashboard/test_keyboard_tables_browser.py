"""The main tables of the dashboard by keyboard alone, in a real browser (issue 30): from the top of
Payments, Customers and Invoices, Tab reaches each row's link in the table's order, with the
focus shown, and Enter opens the row."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from playwright.async_api import Browser, Page

from tests.dashboard.driving import base_url, row_ids, signed_in
from tests.helpers import Member, create_payment, created, sign_up

# Enough presses to cross the frame (navigation, search, mode switch, filters) and a few rows.
_MOST_TABS = 80

_FOCUSED = """table => {
    const at = document.activeElement;
    const row = at && at.tagName === 'A' ? at.closest(`#${table} tbody tr[data-id]`) : null;
    return {row: row ? row.dataset.id : null, shown: !!at && at.matches(':focus-visible')};
}"""


async def _rows_reached_by_tab(page: Page, table: str) -> list[dict[str, Any]]:
    """Each row link of `table` the focus visits, in order, tabbing from the top of the page
    (freshly loaded, so nothing has the focus) until the focus has left the table behind."""
    await page.reload()
    await page.wait_for_selector(f"#{table} tbody tr:nth-child(2)")
    reached: list[dict[str, Any]] = []
    for _ in range(_MOST_TABS):
        await page.keyboard.press("Tab")
        at: dict[str, Any] = await page.evaluate(_FOCUSED, table)
        if at["row"] is not None:
            reached.append(at)
        elif reached:
            break
    return reached


async def _seed(served: TestClient[Any, Any], owner: Member) -> None:
    """Three payments of three customers, and two invoices."""
    for n in range(3):
        await create_payment(served, owner, customerEmail=f"shopper{n}@example.com")
    line = {"description": "Beans", "quantity": 1, "unitAmountMinor": "900"}
    for n in range(2):
        body = {"currency": "USD", "customerEmail": f"shopper{n}@example.com", "items": [line]}
        await created(served, owner, "/api/v1/merchant/invoices", body)


@pytest.mark.parametrize(
    ("path", "table", "detail"),
    [
        ("/dashboard/payments", "payments-table", "#details"),
        ("/dashboard/customers", "customers-table", "#customer-payments tbody tr"),
        ("/dashboard/invoices", "invoices-table", "#invoice-timeline li"),
    ],
)
async def test_tab_reaches_each_rows_link_in_order_and_enter_opens_it(
    served: TestClient[Any, Any], browser: Browser, path: str, table: str, detail: str
) -> None:
    owner = await sign_up(served)
    await _seed(served, owner)
    watched = await signed_in(browser, served, owner.email, path)
    page = watched.page
    await page.wait_for_selector(f"#{table} tbody tr:nth-child(2)")
    rows = await row_ids(page, f"#{table} tbody tr[data-id]")

    # when a keyboard user tabs down the page
    reached = await _rows_reached_by_tab(page, table)

    # then every row's link takes the focus once, in the table's order, and the focus is shown
    assert [r["row"] for r in reached] == rows
    assert all(r["shown"] for r in reached)

    # and Enter on a row's link (the second, reached by tabbing again) opens that row
    await page.reload()
    await page.wait_for_selector(f"#{table} tbody tr:nth-child(2)")
    for _ in range(_MOST_TABS):
        await page.keyboard.press("Tab")
        if (await page.evaluate(_FOCUSED, table))["row"] == rows[1]:
            break
    await page.keyboard.press("Enter")
    await page.wait_for_url(f"{base_url(served)}{path}/{rows[1]}")
    await page.wait_for_selector(detail)
    assert watched.problems == []
