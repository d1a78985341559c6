"""An invoice as a PDF, the document the merchant's customer keeps, prints or forwards.

`render_invoice_pdf(invoice, merchant_name)` returns a complete A4 portrait PDF document:
    - the merchant's name as the letterhead; "Invoice", its number, the issue date (the date
      part of `created_at`) and the due date if there is one
    - "Bill to": the customer's name if given, and email
    - a table of Description, Qty, Unit price and Amount, one row per line item (a single-total
      invoice has one row: its memo, or "Amount due", quantity 1), then the total
    - the memo as a note, unless it already is the single row's description
    - a stamp for PAID (with the paid date and reference), VOID and OVERDUE; none for SENT
    - "TEST MODE" in the footer of an invoice made in test mode

Amounts are exact: minor units formatted with the currency's ISO 4217 exponent ("USD 1,234.50",
"JPY 1,500", "BHD 1.250"). Text is real text, so it can be selected, searched and extracted.
Any string is safe to pass: long text wraps, a long invoice runs over several pages with the
table's header repeated, and characters the bundled font lacks (CJK, most emoji) print as "?".
The same invoice gives the same bytes, since the document is dated with the invoice. Nothing about
the invoice is logged.

Rendering is CPU work, a tenth of a second or more (most of it reading and embedding the font):
code on the event loop calls it in a thread, so that other requests go on meanwhile:
`await asyncio.to_thread(render_invoice_pdf, invoice, merchant_name)`.
"""

from __future__ import annotations

import logging
import unicodedata
from datetime import datetime
from importlib import resources

from fpdf import FPDF
from fpdf.enums import TableBordersLayout
from fpdf.fonts import FontFace, TTFFont

from mps.domain.invoices import Invoice, LineItem
from mps.domain.money import format_major

__all__ = ["render_invoice_pdf"]

# fontTools, which fpdf2 uses to embed the glyphs a document uses, logs their names and ids at
# INFO: the characters of the invoice, in dozens of lines for each one rendered.
logging.getLogger("fontTools.subset").setLevel(logging.WARNING)

# DejaVu Sans, bundled in ./fonts: the PDF core fonts only cover Latin-1, and customers' names
# and line descriptions come in every script.
_FAMILY = "DejaVuSans"
_FONT_FILES = {"": "DejaVuSans.ttf", "B": "DejaVuSans-Bold.ttf"}

_INK = (33, 37, 41)
_MUTED = (108, 117, 125)
_RULE = (206, 212, 218)
_SHADE = (241, 243, 245)
_STAMPS = {"PAID": (25, 135, 84), "VOID": (108, 117, 125), "OVERDUE": (200, 35, 51)}
_TEST_MODE = (214, 110, 0)

_MARGIN = 18.0  # mm, on every side
# Description, Qty, Unit price, Amount: 174 mm, the width between the margins.
_COLUMNS = (86.0, 16.0, 36.0, 36.0)


class _InvoicePage(FPDF):
    """A4 pages with a running header (from page 2) and footer, and text the font can draw."""

    def __init__(self, merchant_name: str, invoice_number: str, test_mode: bool) -> None:
        super().__init__(orientation="portrait", unit="mm", format="A4")
        self.set_margins(_MARGIN, _MARGIN, _MARGIN)
        self.set_auto_page_break(auto=True, margin=24)
        fonts = resources.files("mps.documents") / "fonts"
        for style, name in _FONT_FILES.items():
            # fpdf2 takes a path, not a file object; as_file gives one even from a zipped install.
            with resources.as_file(fonts / name) as path:
                self.add_font(_FAMILY, style, path)
        self.merchant_name = merchant_name
        self.invoice_number = invoice_number
        self.test_mode = test_mode

    def normalize_text(self, text: str) -> str:
        # Every string passes here on its way to the page. A character the current font lacks
        # becomes "?": fpdf2 would otherwise draw an empty box and log the missing characters,
        # which are the invoice's content.
        font = self.current_font
        glyphs = font.cmap if isinstance(font, TTFFont) else {}
        text = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))
        return "".join(
            ch if ch == "\n" or ord(ch) in glyphs else " " if ch.isspace() else "?" for ch in text
        )

    def header(self) -> None:
        # fpdf2 writes the page count wherever "{nb}" is written, a description's included: off
        # for the page's content, on in the footer, and still on when output() fills it in.
        self.alias_nb_pages("")
        if self.page_no() == 1:
            return  # the first page has the letterhead instead
        self.pen(8, _MUTED)
        self.cell(0, 5, self.running_title(self.epw, " (continued)"))
        self.ln(10)

    def footer(self) -> None:
        self.set_y(-16)
        self.set_draw_color(*_RULE)
        self.line(_MARGIN, self.get_y(), self.w - _MARGIN, self.get_y())
        self.ln(2)
        self.pen(7.5, _MUTED)
        # Left-aligned: fpdf2 leaves room for three digits, a gap in right-aligned text.
        self.alias_nb_pages("{nb}")
        self.cell(30, 5, f"Page {self.page_no()} of {{nb}}")
        self.pen(7.5, _TEST_MODE, "B")
        self.cell(30, 5, "TEST MODE" if self.test_mode else "")
        self.pen(7.5, _MUTED)
        self.cell(0, 5, self.running_title(self.epw - 62), align="R")

    def pen(self, size: float, color: tuple[int, int, int], style: str = "") -> None:
        self.set_font(_FAMILY, style, size)
        self.set_text_color(*color)

    def running_title(self, width: float, suffix: str = "") -> str:
        """Merchant · Invoice INV-1 in `width` mm; the merchant's name is shortened if need be."""
        tail = f" · Invoice {self.invoice_number}{suffix}"
        return self.fit(self.merchant_name, width - 2 - self.get_string_width(tail)) + tail

    def fit(self, text: str, width: float) -> str:
        """The text, shortened with "…" if need be to fit on one line `width` mm wide."""
        if self.get_string_width(text) <= width:
            return text
        while text and self.get_string_width(text + "…") > width:
            text = text[:-1]
        return text.rstrip() + "…"


def render_invoice_pdf(invoice: Invoice, merchant_name: str) -> bytes:
    """The invoice as a PDF document; the module's docstring says what it shows."""
    pdf = _InvoicePage(merchant_name, invoice.invoice_number, test_mode=not invoice.livemode)
    pdf.set_title(f"Invoice {invoice.invoice_number}")
    pdf.set_author(merchant_name)
    pdf.set_creation_date(datetime.fromisoformat(invoice.created_at))
    pdf.add_page()
    _letterhead(pdf, invoice, merchant_name)
    _bill_to_and_stamp(pdf, invoice)
    _lines(pdf, invoice)
    _total_and_note(pdf, invoice)
    return bytes(pdf.output())


def _money(amount_minor: int, currency: str) -> str:
    return f"{currency} {format_major(amount_minor, currency)}"


def _letterhead(pdf: _InvoicePage, invoice: Invoice, merchant_name: str) -> None:
    top = pdf.get_y()
    pdf.pen(20, _INK, "B")
    pdf.multi_cell(104, 9, merchant_name, align="L", new_x="LMARGIN", new_y="NEXT")
    left_bottom = pdf.get_y()

    # The invoice's title and facts, right-aligned beside the merchant's name.
    right = _MARGIN + 110
    pdf.set_xy(right, top)
    pdf.pen(20, _INK, "B")
    pdf.cell(pdf.w - _MARGIN - right, 9, "Invoice", align="R", new_x="LEFT", new_y="NEXT")
    pdf.ln(1)
    facts = [("Invoice number", invoice.invoice_number), ("Issue date", invoice.created_at[:10])]
    if invoice.due_date:
        facts.append(("Due date", invoice.due_date))
    for label, value in facts:
        pdf.set_x(right)
        pdf.pen(8.5, _MUTED)
        pdf.cell(26, 5, label)
        pdf.pen(8.5, _INK, "B")
        pdf.multi_cell(0, 5, value, align="R", new_x="LMARGIN", new_y="NEXT")

    pdf.set_y(max(left_bottom, pdf.get_y()) + 6)
    pdf.set_draw_color(*_RULE)
    pdf.line(_MARGIN, pdf.get_y(), pdf.w - _MARGIN, pdf.get_y())
    pdf.ln(6)


def _bill_to_and_stamp(pdf: _InvoicePage, invoice: Invoice) -> None:
    top = pdf.get_y()
    pdf.pen(8, _MUTED, "B")
    pdf.cell(0, 5, "BILL TO", new_x="LMARGIN", new_y="NEXT")
    if invoice.customer_name:
        pdf.pen(10.5, _INK, "B")
        pdf.multi_cell(110, 5.5, invoice.customer_name, align="L", new_x="LMARGIN", new_y="NEXT")
    pdf.pen(9.5, _INK)
    pdf.multi_cell(110, 5, invoice.customer_email, align="L", new_x="LMARGIN", new_y="NEXT")
    left_bottom = pdf.get_y()

    status = invoice.status
    if status in _STAMPS:
        width, x = 52.0, pdf.w - _MARGIN - 52.0
        pdf.set_draw_color(*_STAMPS[status])
        pdf.set_line_width(0.8)
        pdf.rect(x, top, width, 13, round_corners=True, corner_radius=2)
        pdf.set_line_width(0.2)
        pdf.set_xy(x, top)
        pdf.pen(20, _STAMPS[status], "B")
        pdf.cell(width, 13, status, align="C", new_x="LEFT", new_y="NEXT")
        details = []
        if status == "PAID" and invoice.paid_at:
            details.append(f"Paid on {invoice.paid_at[:10]}")
        if status == "PAID" and invoice.paid_reference:
            details.append(f"Reference {invoice.paid_reference}")
        if status == "VOID" and invoice.voided_at:
            details.append(f"Voided on {invoice.voided_at[:10]}")
        pdf.ln(1)
        pdf.pen(8, _MUTED)
        for line in details:
            pdf.set_x(x)
            pdf.multi_cell(width, 4.5, line, align="C", new_x="LEFT", new_y="NEXT")
    pdf.set_y(max(left_bottom, pdf.get_y()) + 8)


def _lines(pdf: _InvoicePage, invoice: Invoice) -> None:
    items = invoice.items
    if items is None:
        items = (LineItem(invoice.memo or "Amount due", 1, invoice.amount_minor),)
    pdf.pen(9, _INK)
    pdf.set_draw_color(*_RULE)
    with pdf.table(
        col_widths=_COLUMNS,
        width=pdf.epw,
        text_align=("LEFT", "RIGHT", "RIGHT", "RIGHT"),
        borders_layout=TableBordersLayout.HORIZONTAL_LINES,
        headings_style=FontFace(emphasis="BOLD", color=_MUTED, fill_color=_SHADE, size_pt=8.5),
        line_height=5,
        padding=(2.2, 2),
        v_align="TOP",
        repeat_headings=1,
    ) as table:
        table.row(("Description", "Qty", "Unit price", "Amount"))
        for item in items:
            table.row(
                (
                    item.description,
                    f"{item.quantity:,}",
                    _money(item.unit_amount_minor, invoice.currency),
                    _money(item.amount_minor, invoice.currency),
                )
            )


def _total_and_note(pdf: _InvoicePage, invoice: Invoice) -> None:
    # The rule and the total together, on the next page if both do not fit on this one.
    if pdf.will_page_break(20):
        pdf.add_page()
    pdf.ln(4)
    x = pdf.w - _MARGIN - 80
    pdf.set_draw_color(*_INK)
    pdf.set_line_width(0.4)
    pdf.line(x, pdf.get_y(), pdf.w - _MARGIN, pdf.get_y())
    pdf.set_line_width(0.2)
    pdf.ln(2)
    pdf.set_x(x)
    pdf.pen(11, _INK, "B")
    pdf.cell(30, 8, "Total")
    pdf.cell(50, 8, _money(invoice.amount_minor, invoice.currency), align="R")
    pdf.ln(14)

    # On a single-total invoice the memo already is the line's description.
    if invoice.memo and invoice.items is not None:
        pdf.pen(8, _MUTED, "B")
        pdf.cell(0, 5, "NOTES", new_x="LMARGIN", new_y="NEXT")
        pdf.pen(9.5, _INK)
        pdf.multi_cell(0, 5, invoice.memo, align="L", new_x="LMARGIN", new_y="NEXT")
