// Customers (derived from payment activity): the list, searched by email with the search and the
// cursor in the URL, and one customer with their totals per currency and their payments.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { dateTime, money } from '../format.js';
import { setQuery, useLocation } from '../router.js';
import { Card, Empty, ErrorNote, Loading, Pager, useLoad } from '../ui.js';
import { PaymentTable } from './payments.js';

const PAGE_SIZE = 20;

function Totals({ totals }) {
  if (!totals || totals.length === 0) return html`<span class="muted">—</span>`;
  // One line per currency: amounts in different currencies are never added up.
  return html`<ul class="totals">
    ${totals.map(
      (t) => html`<li data-currency=${t.currency}>${money(t.paidMinor, t.currency)}</li>`,
    )}
  </ul>`;
}

function EmailSearch({ email }) {
  const [text, setText] = useState(email);
  const submit = (event) => {
    event.preventDefault();
    setQuery({ email: text.trim().toLowerCase(), cursor: '' });
  };
  return html`<form class="row filters" role="search" aria-label="Customers" onSubmit=${submit}>
    <label>
      Email
      <input
        id="customer-email"
        type="email"
        value=${text}
        placeholder="ada@example.com"
        onInput=${(e) => setText(e.currentTarget.value)}
      />
    </label>
    <button type="submit" class="secondary" id="customer-search">Search</button>
    ${
      email &&
      html`<button
        type="button"
        class="link"
        onClick=${() => {
          setText('');
          setQuery({ email: '', cursor: '' });
        }}
      >
        Show all
      </button>`
    }
  </form>`;
}

export function Customers() {
  const { query } = useLocation();
  const email = query.get('email') || '';
  const cursor = query.get('cursor') || '';
  const page = useLoad(
    () => api.get('/merchant/customers', { email, cursor, limit: PAGE_SIZE }),
    [email, cursor],
  );
  const rows = page.data ? page.data.data : [];
  return html`<h1>Customers</h1>
    <p class="muted">Everyone who paid or was asked to pay, from the payments themselves.</p>
    <${EmailSearch} email=${email} key=${email} />
    <${ErrorNote} error=${page.error} />
    ${page.loading && html`<${Loading} what="Loading customers" />`}
    ${page.data && rows.length === 0 && html`<${Empty}>No customers match.<//>`}
    ${
      rows.length > 0 &&
      html`<div class="table-wrap">
        <table id="customers-table">
          <thead>
            <tr>
              <th scope="col">Customer</th>
              <th scope="col" class="amount">Payments</th>
              <th scope="col">Paid</th>
              <th scope="col">Last seen</th>
            </tr>
          </thead>
          <tbody>
            ${rows.map(
              (c) =>
                html`<tr data-id=${c.id}>
                  <td>
                    <a href=${`/dashboard/customers/${c.id}`}>${c.email || c.phone || c.id}</a>
                  </td>
                  <td class="amount">${c.paymentCount}</td>
                  <td><${Totals} totals=${c.totals} /></td>
                  <td>${dateTime(c.lastSeenAt)}</td>
                </tr>`,
            )}
          </tbody>
        </table>
      </div>`
    }
    <${Pager} cursor=${cursor} page=${page.data} />`;
}

export function CustomerDetail({ params }) {
  const [id] = params;
  const { query } = useLocation();
  const cursor = query.get('cursor') || '';
  const customer = useLoad(() => api.get(`/merchant/customers/${encodeURIComponent(id)}`), [id]);
  const payments = useLoad(
    () =>
      api.get(`/merchant/customers/${encodeURIComponent(id)}/payments`, {
        cursor,
        limit: PAGE_SIZE,
      }),
    [id, cursor],
  );
  if (customer.error)
    return html`<h1>Customer</h1>
      <${ErrorNote} error=${customer.error} />`;
  if (!customer.data)
    return html`<h1>Customer</h1>
      <${Loading} />`;
  const c = customer.data;
  return html`<h1>${c.email || c.phone || c.id}</h1>
    <p class="muted" id="customer-id">${c.id}</p>
    <div class="grid">
      <${Card} title="Details" id="customer-details">
        <dl class="facts">
          <dt>Email</dt>
          <dd>${c.email || '—'}</dd>
          <dt>Phone</dt>
          <dd>${c.phone || '—'}</dd>
          <dt>First seen</dt>
          <dd>${dateTime(c.firstSeenAt)}</dd>
          <dt>Last seen</dt>
          <dd>${dateTime(c.lastSeenAt)}</dd>
          <dt>Payments</dt>
          <dd>${c.paymentCount}</dd>
        </dl>
      <//>
      <${Card} title="Totals" id="customer-totals">
        ${(c.totals || []).length === 0 && html`<${Empty}>Nothing paid yet.<//>`}
        ${
          (c.totals || []).length > 0 &&
          html`<div class="table-wrap" tabindex="0" role="region" aria-label="Totals per currency">
            <table>
              <thead>
                <tr>
                  <th scope="col">Currency</th>
                  <th scope="col" class="amount">Paid</th>
                  <th scope="col" class="amount">Refunded</th>
                </tr>
              </thead>
              <tbody>
                ${c.totals.map(
                  (t) =>
                    html`<tr data-currency=${t.currency}>
                      <td>${t.currency}</td>
                      <td class="amount paid">${money(t.paidMinor, t.currency)}</td>
                      <td class="amount">${money(t.refundedMinor, t.currency)}</td>
                    </tr>`,
                )}
              </tbody>
            </table>
          </div>`
        }
      <//>
    </div>
    <${Card} title="Payments" id="customer-payments">
      <${ErrorNote} error=${payments.error} />
      ${payments.loading && html`<${Loading} what="Loading payments" />`}
      ${payments.data && html`<${PaymentTable} payments=${payments.data.data} />`}
      <${Pager} cursor=${cursor} page=${payments.data} />
    <//>`;
}
