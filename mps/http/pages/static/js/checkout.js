// The hosted checkout page's script (mps.http.pages.checkout). The same file for every payment:
// what it needs comes from the form's data- attributes, and it writes only with textContent.
function newKey() {
  if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
  return Date.now().toString(36) + Math.random().toString(36).slice(2);
}
const form = document.getElementById('pay');
// What the page was rendered for, read from the escaped page (never pasted into this script):
// the pay route, and the amount and merchant the success panel names.
const CONFIG = {
  payPath: form.dataset.payPath,
  amount: form.dataset.amount,
  merchant: form.dataset.merchant,
  attempt: newKey(),
};
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
form.addEventListener('submit', async (event) => {
  event.preventDefault();
  const button = form.querySelector('button');
  const error = document.getElementById('error');
  button.disabled = true; error.textContent = '';
  const data = new FormData(form);
  const body = {card: {number: data.get('number').replace(/\s+/g, ''),
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
