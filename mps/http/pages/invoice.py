"""The hosted invoice page: what a customer sees on opening the link in an invoice email. It holds
what the PDF of the invoice holds (merchant, number, dates, bill-to, line items, total, memo),
shows its status prominently, links to the PDF, and prints cleanly on A4 and Letter.

Every value that comes from the merchant or the customer is escaped. The page runs under the
strict Content Security Policy of `mps.http.security`: its one `<style>` carries the request's
nonce; it has no script at all, no inline event handlers, no `style=` attributes and nothing
loaded from elsewhere.

`render_invoice_page(None, ...)` is the page for a link that names no invoice the customer may
see. It says only that the link is not valid, never whether such an invoice exists.
"""

from __future__ import annotations

from datetime import date
from html import escape

from mps.domain.invoices import Invoice, LineItem
from mps.domain.money import format_major

__all__ = ["render_invoice_page"]

_STYLE = """
*{box-sizing:border-box}html{-webkit-text-size-adjust:100%;color-scheme:light}
body{margin:0;background:#f4f5f7;color:#1a1f36;
font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:780px;margin:40px auto;background:#fff;border-radius:12px;padding:40px 48px;
box-shadow:0 2px 12px rgba(0,0,0,.08)}
p{margin:0}h2{font-size:12px;font-weight:600;color:#697386;text-transform:uppercase;
letter-spacing:.06em;margin:0 0 6px}
.test{background:#fff4e5;color:#b3540b;font-size:12px;font-weight:600;text-align:center;
padding:4px 8px;border-radius:4px;margin:0 0 24px;letter-spacing:.04em}
.top{display:flex;justify-content:space-between;align-items:flex-start;gap:8px 24px;
flex-wrap:wrap;padding-bottom:24px;border-bottom:1px solid #e3e8ee}
.merchant{font-size:20px;font-weight:600;overflow-wrap:anywhere;min-width:0;flex:1 1 240px}
h1{margin:0;font-size:26px;font-weight:600;line-height:1.2;text-align:right}
.number{display:block;font-size:14px;font-weight:500;color:#697386;margin-top:4px;
overflow-wrap:anywhere}
.summary{display:flex;align-items:center;justify-content:space-between;flex-wrap:wrap;
gap:12px 24px;padding:24px 0;border-bottom:1px solid #e3e8ee}
.amount-label{font-size:13px;color:#697386}.amount{font-size:30px;font-weight:600;
line-height:1.25;font-variant-numeric:tabular-nums}
.badge{display:inline-block;font-size:14px;font-weight:600;padding:5px 12px;
border-radius:999px;border:1px solid transparent;white-space:nowrap}
.status-due{background:#eef0ff;color:#4338ca;border-color:#d9dcff}
.status-overdue{background:#fdecee;color:#b42318;border-color:#f8c9cf}
.status-paid{background:#e8f7ee;color:#17723d;border-color:#c4ead3}
.status-void{background:#f0f1f4;color:#4f566b;border-color:#dcdfe6}
.status-note{font-size:14px;color:#4f566b;margin-top:6px}
.details{display:grid;grid-template-columns:1fr auto;gap:24px 48px;padding:24px 0}
.bill-to p{overflow-wrap:anywhere}.customer-name{font-weight:600}
.meta{margin:0;display:grid;grid-template-columns:auto auto;gap:4px 20px;font-size:14px}
.meta dt{color:#697386}.meta dd{margin:0;text-align:right;white-space:nowrap}
.table-wrap{overflow-x:auto}
table{width:100%;border-collapse:collapse;font-size:14px;font-variant-numeric:tabular-nums}
th,td{padding:10px 8px;text-align:left;vertical-align:top}
th:first-child,td:first-child{padding-left:0}th:last-child,td:last-child{padding-right:0}
thead th{font-size:12px;font-weight:600;color:#697386;text-transform:uppercase;
letter-spacing:.04em;border-bottom:1px solid #c9ced6}
tbody td{border-bottom:1px solid #e3e8ee}.description{overflow-wrap:anywhere;width:100%}
.num{text-align:right;white-space:nowrap}
tfoot th,tfoot td{padding-top:14px;font-size:16px;font-weight:600}tfoot th{text-align:right}
.memo{margin-top:24px;padding:16px;background:#f7f8fa;border-radius:8px}
.memo p{white-space:pre-line;overflow-wrap:anywhere;color:#3c4257}
.actions{margin-top:32px;display:flex;justify-content:flex-end}
.download{display:inline-block;padding:10px 18px;border-radius:6px;background:#635bff;
color:#fff;font-weight:600;text-decoration:none}
.download:hover{background:#5247e6}.download:focus-visible{outline:3px solid #a5a0ff;
outline-offset:2px}
.invalid{max-width:460px;text-align:center}.invalid h1{text-align:center;font-size:22px;
margin-bottom:8px}.invalid p{color:#697386}
@media (max-width:600px){body{font-size:14px}main{margin:0;border-radius:0;padding:24px 18px;
box-shadow:none}h1{font-size:22px}.amount{font-size:26px}
.details{grid-template-columns:1fr}.meta{grid-template-columns:auto 1fr}.meta dd{text-align:left}
h1{text-align:left;flex-basis:100%}th,td{padding:8px 5px}table{font-size:13px}
thead th{font-size:11px;letter-spacing:0}tfoot th,tfoot td{font-size:14px}
.actions{justify-content:stretch}
.download{display:block;width:100%;text-align:center}}
@page{margin:14mm}
@media print{body{background:#fff;color:#000;font-size:10.5pt}
main{max-width:none;margin:0;padding:0;border-radius:0;box-shadow:none}
.actions{display:none}.badge{background:none;border-color:currentColor}
.memo{background:none;border:1px solid #c9ced6}
.test{border:1px solid #b3540b}thead{display:table-header-group}tr,.memo{break-inside:avoid}
.table-wrap{overflow:visible}}
"""

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _e(text: str) -> str:
    return escape(text, quote=True)


def _day(text: str) -> str:
    """'2026-03-05' or '2026-03-05T10:00:00.000Z' -> '5 Mar 2026' (escaped); the same in every
    locale, and unambiguous where 03/05 would not be."""
    try:
        day = date.fromisoformat(text[:10])
    except ValueError:
        return _e(text)
    return f"{day.day} {_MONTHS[day.month - 1]} {day.year}"


def _money(amount_minor: int, currency: str) -> str:
    return _e(f"{format_major(amount_minor, currency)} {currency}")


def _status(invoice: Invoice) -> tuple[str, str, str]:
    """The status's CSS class, badge text and a sentence under it (all escaped)."""
    due = _day(invoice.due_date) if invoice.due_date else None
    if invoice.status == "PAID":
        paid = _day(invoice.paid_at) if invoice.paid_at else None
        return "paid", f"Paid on {paid}" if paid else "Paid", "Thank you. Nothing more is due."
    if invoice.status == "VOID":
        return "void", "Void", "This invoice has been voided. Nothing is due."
    if invoice.status == "OVERDUE":
        note = f"Payment was due on {due}." if due else "Payment is overdue."
        return "overdue", "Overdue", note
    if invoice.status == "SENT":
        return "due", f"Due {due}" if due else "Due on receipt", ""
    return "due", _e(invoice.status.title()), ""


def _rows(invoice: Invoice) -> str:
    items = invoice.items
    if items is None:
        items = (LineItem(invoice.memo or "Amount due", 1, invoice.amount_minor),)
    currency = invoice.currency
    return "".join(
        '<tr class="item">'
        f'<td class="description">{_e(item.description)}</td>'
        f'<td class="num">{item.quantity:,}</td>'
        f'<td class="num">{_e(format_major(item.unit_amount_minor, currency))}</td>'
        f'<td class="num">{_e(format_major(item.amount_minor, currency))}</td></tr>'
        for item in items
    )


def _page(title: str, content: str, nonce: str, *, main: str) -> str:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        '<meta name="robots" content="noindex">'
        f"<title>{_e(title)}</title>"
        f'<style nonce="{_e(nonce)}">{_STYLE}</style></head>'
        f"<body><main {main}>{content}</main></body></html>"
    )


def render_invoice_page(
    invoice: Invoice | None, merchant_name: str | None, nonce: str, pdf_url: str | None
) -> str:
    """The page of `invoice` of the merchant `merchant_name` (the not-valid page for None);
    `nonce` is the request's Content Security Policy nonce (`mps.http.security.csp_nonce`) and
    `pdf_url` the link to the invoice's PDF (no link for None)."""
    if invoice is None or merchant_name is None:
        return _page(
            "Invoice link not valid",
            "<h1>This invoice link is not valid</h1>"
            "<p>Check that you opened the whole link from the email, "
            "or ask the sender for a new one.</p>",
            nonce,
            main='class="invalid" id="invalid"',
        )
    kind, badge, note = _status(invoice)
    number = _e(invoice.invoice_number)
    merchant = _e(merchant_name)
    total = _money(invoice.amount_minor, invoice.currency)
    label = {"PAID": "Amount paid", "VOID": "Invoice total"}.get(invoice.status, "Amount due")
    test = "" if invoice.livemode else '<p class="test" id="test-mode">Test mode</p>'
    name = (
        f'<p class="customer-name" id="customer-name">{_e(invoice.customer_name)}</p>'
        if invoice.customer_name
        else ""
    )
    due = _day(invoice.due_date) if invoice.due_date else "On receipt"
    # A single-total invoice already shows its memo as the one line's description.
    memo = (
        f'<section class="memo" id="memo"><h2>Memo</h2><p>{_e(invoice.memo)}</p></section>'
        if invoice.memo and invoice.items is not None
        else ""
    )
    download = (
        '<p class="actions">'
        f'<a class="download" id="download-pdf" href="{_e(pdf_url)}">Download PDF</a></p>'
        if pdf_url
        else ""
    )
    content = (
        f"{test}"
        '<header class="top">'
        f'<p class="merchant" id="merchant">{merchant}</p>'
        f'<h1>Invoice <span class="number" id="invoice-number">{number}</span></h1>'
        "</header>"
        '<section class="summary" aria-label="Status">'
        f'<div><p class="amount-label">{label}</p><p class="amount" id="amount-due">{total}</p>'
        + (f'<p class="status-note" id="status-note">{note}</p>' if note else "")
        + "</div>"
        f'<p class="badge status-{kind}" id="status" data-status="{_e(invoice.status)}">'
        f"{badge}</p></section>"
        '<div class="details">'
        '<section class="bill-to" id="bill-to"><h2>Bill to</h2>'
        f'{name}<p class="customer-email" id="customer-email">{_e(invoice.customer_email)}</p>'
        "</section>"
        '<dl class="meta">'
        f"<dt>Invoice number</dt><dd>{number}</dd>"
        f'<dt>Issue date</dt><dd id="issue-date">{_day(invoice.created_at)}</dd>'
        f'<dt>Due date</dt><dd id="due-date">{due}</dd>'
        "</dl></div>"
        '<div class="table-wrap"><table class="items" id="items">'
        "<thead><tr>"
        '<th scope="col">Description</th><th scope="col" class="num">Qty</th>'
        '<th scope="col" class="num">Unit price</th><th scope="col" class="num">Amount</th>'
        f"</tr></thead><tbody>{_rows(invoice)}</tbody>"
        '<tfoot><tr><th scope="row" colspan="3">Total</th>'
        f'<td class="num" id="total">{total}</td></tr></tfoot>'
        "</table></div>"
        f"{memo}{download}"
    )
    return _page(
        f"Invoice {invoice.invoice_number} from {merchant_name}",
        content,
        nonce,
        main=f'class="invoice" id="invoice" data-status="{_e(invoice.status)}"',
    )
