"""The hosted checkout page. Every value shown is escaped; the card goes straight from the form
to the JSON pay route and is never part of a URL.

The page runs under a strict Content Security Policy (`mps.http.security`): its one `<script>` and
one `<style>` carry the request's nonce, and it has no inline event handlers or `style=`
attributes, which that policy would block."""

from __future__ import annotations

from html import escape

import orjson

from mps.domain.money import format_major
from mps.domain.payments import Payment

__all__ = ["render_checkout_page"]

_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;background:#f4f5f7;margin:0;
color:#1a1f36}main{max-width:420px;margin:48px auto;background:#fff;border-radius:12px;
padding:32px;box-shadow:0 2px 12px rgba(0,0,0,.08)}h1{font-size:15px;color:#697386;margin:0 0 4px}
.amount{font-size:32px;font-weight:600;margin:4px 0 8px}.desc{color:#3c4257;margin:0 0 24px}
label{display:block;font-size:13px;color:#697386;margin:12px 0 4px}input{width:100%;
box-sizing:border-box;padding:10px 12px;border:1px solid #d5dbe1;border-radius:6px;font-size:15px}
.row{display:flex;gap:8px}.row>div{flex:1}button{width:100%;margin-top:20px;padding:12px;
border:0;border-radius:6px;background:#635bff;color:#fff;font-size:16px;font-weight:600;
cursor:pointer}button:disabled{opacity:.6}.error{color:#df1b41;font-size:14px;margin-top:12px;
min-height:1em}.state{text-align:center;padding:24px 0}.state h2{margin:0 0 8px}
.test{background:#fff4e5;color:#b3540b;font-size:12px;font-weight:600;text-align:center;
padding:4px;border-radius:4px;margin-bottom:16px}a.cancel{display:block;text-align:center;
margin-top:16px;color:#697386;font-size:14px}
"""

_SCRIPT = """
function newKey() {
  if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
  return Date.now().toString(36) + Math.random().toString(36).slice(2);
}
CONFIG.attempt = newKey();
// What a shopper reads: the API's messages name fields and codes, which mean nothing here.
const FIELD_TEXT = {
  'card.number': 'Check the card number.',
  'card.expMonth': 'Check the expiry month.',
  'card.expYear': 'Check the expiry year.',
  'card.cvc': 'Check the security code (3 or 4 digits on the card).',
  'email': 'Check the email address.',
};
const CODE_TEXT = {
  card_declined: 'Your card was declined. Try another card.',
  insufficient_funds: 'Your card has insufficient funds. Try another card.',
  rate_limited: 'Too many attempts. Wait a moment and try again.',
  invalid_state: 'This payment link can no longer be paid.',
};
function shopperText(status, result) {
  if (result.errors && result.errors.length) {
    const expired = result.errors.find((e) => /expired/.test(e.message));
    if (expired) return 'This card has expired.';
    const texts = result.errors.map((e) => FIELD_TEXT[e.field] || 'Check the card details.');
    return [...new Set(texts)].join(' ');
  }
  if (CODE_TEXT[result.code]) return CODE_TEXT[result.code];
  if (status >= 500) return 'Something went wrong on our side. Please try again.';
  return 'The payment did not go through. Please try again.';
}
function paidPanel(result) {
  const panel = document.createElement('div');
  panel.className = 'state'; panel.id = 'paid';
  const title = document.createElement('h2'); title.textContent = 'Payment received';
  const what = document.createElement('p');
  what.textContent = `You paid ${CONFIG.amount} to ${CONFIG.merchant}.`;
  const ref = document.createElement('p');
  ref.textContent = `Reference ${result.reference}`; ref.id = 'reference';
  panel.append(title, what, ref);
  return panel;
}
const form = document.getElementById('pay');
form.addEventListener('submit', async (event) => {
  event.preventDefault();
  const button = form.querySelector('button');
  const error = document.getElementById('error');
  button.disabled = true; error.textContent = '';
  const data = new FormData(form);
  const body = {card: {number: data.get('number').replace(/\\s+/g, ''),
    expMonth: parseInt(data.get('expMonth'), 10), expYear: parseInt(data.get('expYear'), 10),
    cvc: data.get('cvc').trim()}};
  if (isNaN(body.card.expMonth) || isNaN(body.card.expYear)) {
    error.textContent = 'Check the expiry date.'; button.disabled = false; return;
  }
  if (data.get('email')) body.email = data.get('email');
  if (data.get('phone')) body.phone = data.get('phone');
  try {
    const response = await fetch(CONFIG.payPath, {method: 'POST',
      headers: {'Content-Type': 'application/json', 'Idempotency-Key': CONFIG.attempt},
      body: JSON.stringify(body)});
    const result = await response.json();
    if (response.ok) {
      if (result.redirectUrl) { window.location.assign(result.redirectUrl); return; }
      form.replaceWith(paidPanel(result));
      return;
    }
    CONFIG.attempt = newKey();
    error.textContent = shopperText(response.status, result);
  } catch (e) {
    error.textContent = 'Could not reach the server; please try again.';
  }
  button.disabled = false;
});
"""

_STATES = {
    "PAID": ("Already paid", "This payment has been completed."),
    "EXPIRED": ("Link expired", "This payment link has expired. Ask the merchant for a new one."),
    "CANCELLED": ("Link cancelled", "The merchant cancelled this payment link."),
    "REFUNDED": ("Already paid", "This payment has been completed and refunded."),
    "PARTIAL_REFUND": ("Already paid", "This payment has been completed."),
    "REVERSED": ("Already paid", "This payment has been completed."),
}


def _page(title: str, content: str, nonce: str) -> str:
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        "<meta name=viewport content='width=device-width,initial-scale=1'>"
        f"<title>{escape(title)}</title><style nonce={nonce}>{_STYLE}</style></head>"
        f"<body><main>{content}</main></body></html>"
    )


def render_checkout_page(payment: Payment | None, merchant: str | None, nonce: str) -> str:
    """The page for `payment` of `merchant` (the not-found page for None); `nonce` is the
    request's Content Security Policy nonce (`mps.http.security.csp_nonce`)."""
    if payment is None or merchant is None:
        return _page(
            "Payment not found",
            "<div class=state><h2>Payment not found</h2>"
            "<p>Check the link you were given.</p></div>",
            nonce,
        )
    amount = f"{format_major(payment.amount_minor, payment.currency)} {payment.currency}"
    head = (
        ("<div class=test>TEST MODE</div>" if not payment.livemode else "")
        + f"<h1>{escape(merchant)}</h1><div class=amount id=amount>{escape(amount)}</div>"
        + (f"<p class=desc>{escape(payment.description)}</p>" if payment.description else "")
    )
    if payment.status != "PENDING":
        title, text = _STATES[payment.status]
        state = (
            f"<div class=state id=state data-status={payment.status}><h2>{title}</h2>"
            f"<p>{text}</p></div>"
        )
        return _page(f"{merchant}: {title}", head + state, nonce)
    config = orjson.dumps(
        {
            "payPath": f"/api/v1/checkout/{payment.reference}/pay",
            "attempt": None,
            "amount": amount,
            "merchant": merchant,
        }
    ).decode()
    # Inside a <script>: the merchant's name must not be able to close it.
    config = config.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    cancel = (
        (
            f"<a class=cancel id=cancel href='{escape(payment.cancel_url, quote=True)}'>"
            "Cancel and return</a>"
        )
        if payment.cancel_url
        else ""
    )
    form = f"""
<form id=pay autocomplete=on>
  <label for=email>Email</label>
  <input id=email name=email type=email value="{escape(payment.customer_email or "", quote=True)}">
  <label for=number>Card number</label>
  <input id=number name=number inputmode=numeric autocomplete=cc-number required
         placeholder="4242 4242 4242 4242">
  <div class=row>
    <div><label for=expMonth>Month</label>
      <input id=expMonth name=expMonth inputmode=numeric placeholder=MM required></div>
    <div><label for=expYear>Year</label>
      <input id=expYear name=expYear inputmode=numeric placeholder=YY required></div>
    <div><label for=cvc>CVC</label>
      <input id=cvc name=cvc inputmode=numeric autocomplete=cc-csc required></div>
  </div>
  <input type=hidden name=phone value="{escape(payment.customer_phone or "", quote=True)}">
  <button id=submit type=submit>Pay {escape(amount)}</button>
  <div class=error id=error role=alert></div>
</form>{cancel}
<script nonce={nonce}>const CONFIG = {config};{_SCRIPT}</script>"""
    return _page(f"Pay {merchant}", head + form, nonce)
