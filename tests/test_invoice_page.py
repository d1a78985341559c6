"""The hosted invoice page as rendered HTML (mps.http.pages.invoice): what it shows, that every
value from the merchant or the customer is escaped, and that it fits the strict Content Security
Policy (no script, its style carries the nonce, no inline handlers or style attributes)."""

from __future__ import annotations

import re
from dataclasses import replace

from mps.domain.invoices import Invoice, LineItem
from mps.http.pages.invoice import render_invoice_page
from tests.invoice_sample import sent_invoice
from tests.markup import inside, parse

NONCE = "n0nce-Abc_123"
PDF_URL = "/api/v1/hosted/invoices/inv_1/pdf?token=t0k&x=1"


ITEMS = (
    LineItem("Discovery workshop", 1, 120_000),
    LineItem("Design hours", 18, 9_500),
    LineItem("Hosting", 12, 1_950),
    LineItem("Domain renewal", 1, 3_650),
)


def _invoice(**changes: object) -> Invoice:
    jane = ("Jane Doe", "jane@example.com")
    invoice = sent_invoice(
        ITEMS, jane, "2026-03-05T10:15:00.000Z", "2026-04-04", amount_minor=318_450
    )
    return replace(invoice, **changes)  # type: ignore[arg-type]


def _render(invoice: Invoice | None, merchant: str | None = "Blue Mug Studio") -> str:
    return render_invoice_page(invoice, merchant, NONCE, PDF_URL)


def test_page_shows_the_merchant_number_customer_items_and_total() -> None:
    html = _render(_invoice())

    assert inside(html, "merchant") == "Blue Mug Studio"
    assert inside(html, "invoice-number") == "INV-000042"
    assert inside(html, "customer-name") == "Jane Doe"
    assert inside(html, "customer-email") == "jane@example.com"
    for description in ("Discovery workshop", "Design hours", "Hosting", "Domain renewal"):
        assert f'<td class="description">{description}</td>' in html
    for amount in ("1,200.00", "95.00", "1,710.00", "19.50", "234.00", "36.50"):
        assert f'<td class="num">{amount}</td>' in html
    assert '<td class="num">18</td>' in html
    assert inside(html, "total") == "3,184.50 USD"
    assert inside(html, "amount-due") == "3,184.50 USD"
    assert inside(html, "issue-date") == "5 Mar 2026"
    assert inside(html, "due-date") == "4 Apr 2026"
    assert "Thank you for your business." in inside(html, "memo")
    assert html.count('<tr class="item">') == 4


def test_page_is_a_semantic_private_english_document_named_for_the_invoice() -> None:
    html = _render(_invoice())

    assert html.startswith('<!doctype html><html lang="en">')
    assert "<title>Invoice INV-000042 from Blue Mug Studio</title>" in html
    assert '<meta name="robots" content="noindex">' in html
    assert '<meta name="viewport" content="width=device-width,initial-scale=1">' in html
    assert "<main " in html and "<table " in html and "<thead>" in html
    headers = re.findall(r'<th scope="col"[^>]*>([^<]*)</th>', html)
    assert headers == ["Description", "Qty", "Unit price", "Amount"]
    assert "@media print" in html


def test_single_total_invoice_shows_one_row_of_its_memo_or_amount_due() -> None:
    with_memo = _render(_invoice(items=None, amount_minor=5_000, memo="March retainer"))
    without = _render(_invoice(items=None, amount_minor=5_000, memo=None))

    assert with_memo.count('<tr class="item">') == 1
    assert '<td class="description">March retainer</td><td class="num">1</td>' in with_memo
    assert '<td class="description">Amount due</td><td class="num">1</td>' in without
    assert inside(without, "total") == "50.00 USD"


def test_amounts_follow_the_currency_exponent() -> None:
    html = _render(_invoice(currency="JPY", amount_minor=1_500, items=None, memo=None))

    assert inside(html, "total") == "1,500 JPY"


def test_page_escapes_a_hostile_description() -> None:
    hostile = "<img src=x onerror=alert(1)>"
    html = _render(_invoice(items=(LineItem(hostile, 1, 100),), amount_minor=100))

    assert "<img" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html


def test_page_escapes_a_hostile_customer_merchant_memo_and_number() -> None:
    html = _render(
        _invoice(
            customer_name="<script>alert(1)</script>",
            customer_email='"><script>alert(2)</script>@example.com',
            memo="</section><script>alert(3)</script>",
            invoice_number="<b>INV</b>",
        ),
        merchant="<script>alert(4)</script>",
    )

    assert "<script" not in html and "<b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&quot;&gt;&lt;script&gt;alert(2)&lt;/script&gt;@example.com" in html
    assert "&lt;/section&gt;&lt;script&gt;alert(3)&lt;/script&gt;" in html
    assert "<title>Invoice &lt;b&gt;INV&lt;/b&gt; from &lt;script&gt;alert(4)" in html


def test_sent_invoice_shows_its_due_date_as_its_status() -> None:
    html = _render(_invoice())

    assert 'id="status" data-status="SENT"' in html
    assert inside(html, "status") == "Due 4 Apr 2026"


def test_sent_invoice_without_due_date_is_due_on_receipt() -> None:
    html = _render(_invoice(due_date=None))

    assert inside(html, "status") == "Due on receipt"
    assert inside(html, "due-date") == "On receipt"


def test_paid_invoice_shows_when_it_was_paid() -> None:
    html = _render(_invoice(status="PAID", paid_at="2026-03-20T09:00:00.000Z"))

    assert 'data-status="PAID"' in html
    assert inside(html, "status") == "Paid on 20 Mar 2026"
    assert "Amount paid" in html


def test_void_invoice_shows_it_is_void_and_nothing_is_due() -> None:
    html = _render(_invoice(status="VOID", voided_at="2026-03-21T09:00:00.000Z"))

    assert 'data-status="VOID"' in html
    assert inside(html, "status") == "Void"
    assert "Nothing is due" in inside(html, "status-note")
    assert "Amount due" not in html


def test_overdue_invoice_shows_it_is_overdue_and_when_it_was_due() -> None:
    html = _render(_invoice(status="OVERDUE"))

    assert 'data-status="OVERDUE"' in html
    assert inside(html, "status") == "Overdue"
    assert inside(html, "status-note") == "Payment was due on 4 Apr 2026."


def test_pdf_link_is_present_and_escaped_as_an_attribute() -> None:
    url = '/pdf?token=a"b&c=<d>'
    html = render_invoice_page(_invoice(), "Blue Mug Studio", NONCE, url)

    assert '<a class="download" id="download-pdf" href="/pdf?token=a&quot;b&amp;c=&lt;d&gt;">' in (
        html
    )
    links = [attrs for tag, attrs in parse(html).tags if tag == "a"]
    assert links == [{"class": "download", "id": "download-pdf", "href": url}]


def test_page_without_a_pdf_url_has_no_download_link() -> None:
    html = render_invoice_page(_invoice(), "Blue Mug Studio", NONCE, None)

    assert "download-pdf" not in html and "<a " not in html


def test_test_mode_invoice_says_so_and_live_one_does_not() -> None:
    assert inside(_render(_invoice(mode="test")), "test-mode") == "Test mode"
    assert "test-mode" not in _render(_invoice())


def test_not_valid_page_reveals_nothing_of_any_invoice() -> None:
    invoice = _invoice()
    pages = [_render(None), _render(invoice, merchant=None)]

    for html in pages:
        assert "This invoice link is not valid" in html
        assert '<meta name="robots" content="noindex">' in html
        for secret in ("INV-000042", "Jane", "jane@example.com", "Blue Mug", "3,184.50", "USD"):
            assert secret not in html
        assert "<table" not in html and "download-pdf" not in html and "data-status" not in html
    assert pages[0] == pages[1]


def test_page_has_no_script_at_all() -> None:
    for html in (
        _render(_invoice()),
        _render(_invoice(status="PAID", mode="test")),
        _render(_invoice(items=None)),
        _render(None),
    ):
        assert "<script" not in html.lower()
        assert "javascript:" not in html.lower()


def test_every_style_carries_the_nonce_and_no_element_has_handlers_or_style_attributes() -> None:
    for html in (_render(_invoice(mode="test")), _render(None)):
        tags = parse(html).tags
        styles = [attrs for tag, attrs in tags if tag == "style"]
        assert styles == [{"nonce": NONCE}]
        assert html.count("<style") == 1
        for tag, attrs in tags:
            assert "style" not in attrs, tag
            assert not [name for name in attrs if name.startswith("on")], tag
            assert tag not in ("script", "link", "img", "iframe", "object", "base", "form")
