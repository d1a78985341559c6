// Customers (derived from payment activity): the list, searched by email with the search and the
// cursor in the URL, and one customer with their totals per currency and their payments.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { ClearFilters, Filters } from '../filters.js';
import { dateTime, money } from '../format.js';
import { typed } from '../forms.js';
import { setQuery, useQuery } from '../router.js';
import { PagedTable, Table } from '../table.js';
import { Card, Facts, useLoad, Waiting } from '../ui.js';
import { PAYMENTS } from './payments.js';

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
  return html`<${Filters} role="search" label="Customers" onSubmit=${submit}>
    <label>
      Email
      <input
        id="customer-email"
        type="email"
        value=${text}
        placeholder="ada@example.com"
        onInput=${typed(setText)}
      />
    </label>
    <button type="submit" class="secondary" id="customer-search">Search</button>
    <${ClearFilters} values=${{ email }} cleared=${() => setText('')} text="Show all" />
  <//>`;
}

/** A customer as a person knows them: their email, else their phone, else their id. */
const known = (c) => c.email || c.phone || c.id;

const COLUMNS = [
  {
    title: 'Customer',
    cell: (c) => html`<a href=${`/dashboard/customers/${c.id}`}>${known(c)}</a>`,
  },
  { title: 'Payments', amount: true, cell: (c) => c.paymentCount },
  { title: 'Paid', cell: (c) => html`<${Totals} totals=${c.totals} />` },
  { title: 'Last seen', cell: (c) => dateTime(c.lastSeenAt) },
];

// One line per currency: amounts in different currencies are never added up.
const TOTALS_COLUMNS = [
  { title: 'Currency', cell: (t) => t.currency },
  { title: 'Paid', amount: true, className: 'paid', cell: (t) => money(t.paidMinor, t.currency) },
  { title: 'Refunded', amount: true, cell: (t) => money(t.refundedMinor, t.currency) },
];

const byCurrency = (t) => ({ 'data-currency': t.currency });

export function Customers() {
  const { email, cursor } = useQuery('email', 'cursor');
  const page = useLoad(
    () => api.get('/merchant/customers', { email, cursor, limit: PAGE_SIZE }),
    [email, cursor],
  );
  return html`<h1>Customers</h1>
    <p class="muted">Everyone who paid or was asked to pay, from the payments themselves.</p>
    <${EmailSearch} email=${email} key=${email} />
    <${PagedTable}
      page=${page}
      what="Loading customers"
      id="customers-table"
      columns=${COLUMNS}
      empty="No customers match."
    />`;
}

export function CustomerDetail({ params }) {
  const [id] = params;
  const { cursor } = useQuery('cursor');
  const customer = useLoad(() => api.get(`/merchant/customers/${encodeURIComponent(id)}`), [id]);
  const payments = useLoad(
    () =>
      api.get(`/merchant/customers/${encodeURIComponent(id)}/payments`, {
        cursor,
        limit: PAGE_SIZE,
      }),
    [id, cursor],
  );
  if (!customer.data) return html`<${Waiting} title="Customer" load=${customer} />`;
  const c = customer.data;
  return html`<h1>${known(c)}</h1>
    <p class="muted" id="customer-id">${c.id}</p>
    <div class="grid">
      <${Card} title="Details" id="customer-details">
        <${Facts}
          items=${[
            ['Email', c.email || '—'],
            ['Phone', c.phone || '—'],
            ['First seen', dateTime(c.firstSeenAt)],
            ['Last seen', dateTime(c.lastSeenAt)],
            ['Payments', c.paymentCount],
          ]}
        />
      <//>
      <${Card} title="Totals" id="customer-totals">
        <${Table}
          label="Totals per currency"
          columns=${TOTALS_COLUMNS}
          rows=${c.totals || []}
          rowProps=${byCurrency}
          empty="Nothing paid yet."
        />
      <//>
    </div>
    <${Card} title="Payments" id="customer-payments">
      <${PagedTable} page=${payments} what="Loading payments" ...${PAYMENTS} />
    <//>`;
}
