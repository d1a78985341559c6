// One box that finds payments, refunds, customers, invoices and cards by id, payment reference or
// customer email, through the list filters and lookups the public API has. Each kind is asked
// only when the member's role may read it.
import { html } from 'htm/preact';
import { api } from '../api.js';
import { dateTime, money } from '../format.js';
import { useLocation } from '../router.js';
import { Empty, ErrorNote, Loading, Status, useLoad } from '../ui.js';

// An id's prefix names its kind (the contract's ids are prefixed).
const BY_ID = [
  ['pay_', 'payment', 'payments:read', '/merchant/payments/'],
  ['re_', 'refund', 'refunds:read', '/merchant/refunds/'],
  ['cus_', 'customer', 'customers:read', '/merchant/customers/'],
  ['inv_', 'invoice', 'invoices:read', '/merchant/invoices/'],
  ['card_', 'card', 'cards:read', '/merchant/cards/'],
];

function one(kind, answer) {
  return [{ kind, item: answer }];
}

function missing(error) {
  // Not found is an empty result; anything else is worth showing.
  if (error.status === 404) return [];
  throw error;
}

async function find(q, can) {
  const asks = [];
  const byId = BY_ID.find(([prefix]) => q.startsWith(prefix));
  if (byId) {
    const [, kind, scope, path] = byId;
    if (can(scope))
      asks.push(api.get(path + encodeURIComponent(q)).then((a) => one(kind, a), missing));
  } else if (q.includes('@')) {
    const email = q.toLowerCase();
    if (can('payments:read')) {
      asks.push(
        api
          .get('/merchant/payments', { customerEmail: email, limit: 20 })
          .then((p) => p.data.map((item) => ({ kind: 'payment', item })), missing),
      );
    }
    if (can('customers:read')) {
      asks.push(
        api
          .get('/merchant/customers', { email, limit: 20 })
          .then((p) => p.data.map((item) => ({ kind: 'customer', item })), missing),
      );
    }
    if (can('invoices:read')) {
      asks.push(
        api
          .get('/merchant/invoices', { customerEmail: email, limit: 20 })
          .then((p) => p.data.map((item) => ({ kind: 'invoice', item })), missing),
      );
    }
  } else if (can('payments:read')) {
    // A reference (PAY-…), or anything else a payment might be found by exactly.
    const filter = /^pay-/i.test(q) ? { reference: q } : { q };
    asks.push(
      api.get('/merchant/payments', { ...filter, limit: 20 }).then(
        (p) => p.data.map((item) => ({ kind: 'payment', item })),
        (error) => (error.status === 400 ? [] : missing(error)),
      ),
    );
  }
  return (await Promise.all(asks)).flat();
}

function Result({ kind, item }) {
  switch (kind) {
    case 'payment':
      return html`<a href=${`/dashboard/payments/${item.id}`}>${item.reference}</a>
        ${' '}${money(item.amountMinor, item.currency)} <${Status} status=${item.status} />
        <span class="muted small">${item.customerEmail || ''} · ${dateTime(item.createdAt)}</span>`;
    case 'refund':
      return html`${item.id}: refund of ${item.amountMinor} minor units for
        <a href=${`/dashboard/payments/${item.paymentId}`}>${item.paymentId}</a>
        <${Status} status=${item.status} />`;
    case 'customer':
      return html`<a href=${`/dashboard/customers/${item.id}`}>${item.email || item.phone}</a>
        ${' '}· ${item.paymentCount} payments · ${item.id}`;
    case 'invoice':
      return html`<a href=${`/dashboard/invoices/${item.id}`}>${item.invoiceNumber}</a>:
        ${money(item.amountMinor, item.currency)} <${Status} status=${item.status} /> · ${item.id}`;
    case 'card':
      return html`<a href=${`/dashboard/cards/${item.id}`}
          >${item.brand} •••• ${item.last4} (${item.nickname || item.cardholderName})</a
        >
        <${Status} status=${item.status} />`;
    default:
      return html`${item.id}`;
  }
}

export function Search({ member }) {
  const { query } = useLocation();
  const q = (query.get('q') || '').trim();
  const can = (scope) => member.scopes.includes(scope);
  const answer = useLoad(
    () => (q ? find(q, can) : Promise.resolve([])).then((rows) => ({ q, rows })),
    [q],
  );
  // The answer of an earlier query is never shown under this one's heading, not even for the
  // moment before this one's load starts.
  const results = { ...answer, data: answer.data && answer.data.q === q ? answer.data.rows : null };
  return html`<h1>Search</h1>
    <p class="muted">
      ${q ? `Results for “${q}”` : 'Type an id, a payment reference or a customer email in the search box.'}
    </p>
    <${ErrorNote} error=${results.error} />
    ${results.loading && html`<${Loading} what="Searching" />`}
    ${results.data && q && results.data.length === 0 && html`<${Empty}>Nothing found.<//>`}
    ${
      results.data &&
      results.data.length > 0 &&
      html`<ul class="results" id="results">
        ${results.data.map(
          (r) =>
            html`<li data-kind=${r.kind}>
              <span class="muted small">${r.kind}</span> <${Result} ...${r} />
            </li>`,
        )}
      </ul>`
    }`;
}
