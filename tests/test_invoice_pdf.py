"""Invoice PDFs (mps.documents.invoice_pdf), read back with an independent PDF reader (pypdf)."""

from __future__ import annotations

import io
import logging

import pypdf
import pytest

from mps.documents.invoice_pdf import render_invoice_pdf
from mps.domain.invoices import Invoice, LineItem
from tests.invoice_sample import sent_invoice

MERCHANT = "Northwind Studio GmbH"
A4 = (595.28, 841.89)  # points


ITEMS = (
    LineItem("Website redesign: discovery workshop", 1, 250_000),
    LineItem("Hosting, 12 months", 12, 2_900),
    LineItem("Support hours", 7, 9_550),
)


def _invoice(**changes: object) -> Invoice:
    ana = ("Ana Müller", "ana.muller@example.com")
    return sent_invoice(ITEMS, ana, "2026-11-15T09:30:00.000Z", "2026-12-15", **changes)


def _pages(data: bytes) -> list[str]:
    return [page.extract_text() for page in pypdf.PdfReader(io.BytesIO(data)).pages]


def _text(invoice: Invoice) -> str:
    return "\n".join(_pages(render_invoice_pdf(invoice, MERCHANT)))


def _words(text: str) -> str:
    """The text with each run of spaces and line breaks as one space: wrapping aside."""
    return " ".join(text.split())


def test_pdf_is_an_a4_portrait_document() -> None:
    data = render_invoice_pdf(_invoice(), MERCHANT)

    assert data.startswith(b"%PDF-")
    page = pypdf.PdfReader(io.BytesIO(data)).pages[0]
    assert (float(page.mediabox.width), float(page.mediabox.height)) == pytest.approx(A4)


def test_pdf_names_the_merchant_the_invoice_and_the_customer() -> None:
    text = _text(_invoice())

    for expected in (
        MERCHANT,
        "Invoice",
        "INV-000042",
        "2026-11-15",  # issued
        "2026-12-15",  # due
        "BILL TO",
        "Ana Müller",
        "ana.muller@example.com",
        "Thank you for your business.",
    ):
        assert expected in text


def test_pdf_lists_every_line_with_its_amounts_and_the_total() -> None:
    text = _text(_invoice())

    for expected in ("Description", "Qty", "Unit price", "Amount"):
        assert expected in text
    assert "Website redesign: discovery workshop 1 USD 2,500.00 USD 2,500.00" in text
    assert "Hosting, 12 months 12 USD 29.00 USD 348.00" in text
    assert "Support hours 7 USD 95.50 USD 668.50" in text
    assert "Total USD 3,516.50" in text


@pytest.mark.parametrize(
    ("currency", "unit", "amount", "total"),
    [
        ("USD", "USD 1,234.50", "USD 2,469.00", "USD 2,469.00"),
        ("JPY", "JPY 123,450", "JPY 246,900", "JPY 246,900"),
        ("BHD", "BHD 123.450", "BHD 246.900", "BHD 246.900"),
    ],
)
def test_amounts_are_in_major_units_with_the_currencys_decimals(
    currency: str, unit: str, amount: str, total: str
) -> None:
    items = (LineItem("Consulting", 2, 123_450),)
    text = _text(_invoice(currency=currency, items=items, amount_minor=246_900))

    assert f"Consulting 2 {unit} {amount}" in text
    assert f"Total {total}" in text


def test_single_total_invoice_has_one_row_for_its_memo_or_the_amount_due() -> None:
    with_memo = _text(_invoice(items=None, amount_minor=50_000, memo="Retainer, November"))
    without = _text(_invoice(items=None, amount_minor=50_000, memo=None, customer_name=None))

    assert "Retainer, November 1 USD 500.00 USD 500.00" in with_memo
    assert "Amount due 1 USD 500.00 USD 500.00" in without
    assert "Total USD 500.00" in without
    assert "ana.muller@example.com" in without


def test_paid_invoice_is_stamped_paid_with_its_date_and_reference() -> None:
    paid = _invoice(status="PAID", paid_at="2026-11-20T10:00:00.000Z", paid_reference="SEPA-77812")
    text = _text(paid)

    assert "PAID" in text
    assert "2026-11-20" in text
    assert "SEPA-77812" in text
    assert "VOID" not in text


def test_void_invoice_is_stamped_void() -> None:
    text = _text(_invoice(status="VOID", voided_at="2026-11-18T01:00:00.000Z"))

    assert "VOID" in text
    assert "PAID" not in text


def test_sent_invoice_has_no_stamp() -> None:
    text = _text(_invoice(status="SENT"))

    for stamp in ("PAID", "VOID", "OVERDUE"):
        assert stamp not in text


def test_test_mode_invoice_says_so_and_a_live_one_does_not() -> None:
    assert "TEST MODE" in _text(_invoice(mode="test"))
    assert "TEST MODE" not in _text(_invoice(mode="live"))


def test_hostile_unicode_description_renders_and_its_latin_and_cyrillic_are_extractable() -> None:
    description = "Café ☕ — Привет 你好 <script>alert(1)</script> 🎉"
    text = _text(_invoice(items=(LineItem(description, 1, 100),), amount_minor=100))

    for part in ("Café", "Привет", "<script>alert(1)</script>"):
        assert part in text


def test_control_characters_and_a_page_count_placeholder_print_as_harmless_text() -> None:
    description = "Line\x00one\ttab {nb} \ud800 end"
    name = "Zoë\r\nO'Brien {nb}"
    text = _text(_invoice(items=(LineItem(description, 1, 100),), customer_name=name))

    assert "{nb}" in text  # not replaced by the number of pages
    assert "end" in text
    assert "O'Brien" in text


def test_long_description_wraps_within_its_column() -> None:
    sentence = "Quarterly maintenance of the warehouse's conveyor belts and sorting machines, "
    description = (sentence * 3)[:200]
    lines = _text(_invoice(items=(LineItem(description, 3, 1),)))

    assert _words(description) in _words(lines)
    assert not any(description in line for line in lines.splitlines())  # it is on several lines
    assert "3 USD 0.01 USD 0.03" in lines


def test_a_hundred_lines_run_over_several_pages_each_with_the_table_heading() -> None:
    items = tuple(
        LineItem(f"Line {n:03d}: replacement parts and labour for unit {n}", n, 1_000 + n)
        for n in range(1, 101)
    )
    total = sum(item.amount_minor for item in items)
    pages = _pages(render_invoice_pdf(_invoice(items=items, amount_minor=total), MERCHANT))

    assert len(pages) > 1
    everything = _words("\n".join(pages))
    for item in items:
        assert _words(item.description) in everything
    assert f"Total USD {total // 100:,}.{total % 100:02d}" in everything
    for page in pages:
        if "Line " in page:
            assert "Description Qty Unit price Amount" in page
    assert f"Page 1 of {len(pages)}" in pages[0]


def test_the_same_invoice_renders_to_the_same_bytes() -> None:
    assert render_invoice_pdf(_invoice(), MERCHANT) == render_invoice_pdf(_invoice(), MERCHANT)


def test_rendering_logs_nothing_about_the_invoice(caplog: pytest.LogCaptureFixture) -> None:
    invoice = _invoice(customer_name="山田 太郎", items=(LineItem("Café 你好 ☕", 1, 100),))

    with caplog.at_level(logging.DEBUG):
        render_invoice_pdf(invoice, MERCHANT)

    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO] == []
    for record in caplog.records:
        for secret in ("INV-000042", "ana.muller", "山田", "你好", "Café", "U+"):
            assert secret not in record.getMessage()
