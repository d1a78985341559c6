// Payments: the list with its filters in the URL (status, currency, from, to, cursor), cursor
// paging, and the filtered list exported as CSV, paged through the API in the browser.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api, everyRow, saveFile } from '../api.js';
import { dateTime, label, money, toMajorText } from '../format.js';
import { setQuery, useLocation } from '../router.js';
import { Empty, ErrorNote, Loading, Pager, Status, useLoad } from '../ui.js';

export const STATUSES = [
  'PENDING',
  'PAID',
  'EXPIRED',
  'CANCELLED',
  'REFUNDED',
  'PARTIAL_REFUND',
  'REVERSED',
];
// The service's default currencies, for members whose role cannot read the settings.
export const DEFAULT_CURRENCIES = ['USD', 'EUR', 'GBP', 'NGN', 'KES', 'GHS', 'ZAR', 'JPY'];
const FILTERS = ['status', 'currency', 'from', 'to'];
const PAGE_SIZE = 20;

export function useCurrencies(member) {
  const settings = useLoad(
    () =>
      member.scopes.includes('settings:read')
        ? api.get('/merchant/settings').then((s) => s.supportedCurrencies)
        : Promise.resolve(DEFAULT_CURRENCIES),
    [],
  );
  return settings.data || DEFAULT_CURRENCIES;
}

export function PaymentTable({ payments }) {
  if (payments.length === 0) return html`<${Empty}>No payments match.<//>`;
  return html`<div class="table-wrap">
    <table id="payments-table">
      <thead>
        <tr>
          <th scope="col">Reference</th>
          <th scope="col" class="amount">Amount</th>
          <th scope="col">Status</th>
          <th scope="col">Customer</th>
          <th scope="col">Created</th>
        </tr>
      </thead>
      <tbody>
        ${payments.map(
          (p) =>
            html`<tr data-id=${p.id}>
              <td><a href=${`/dashboard/payments/${p.id}`}>${p.reference}</a></td>
              <td class="amount">${money(p.amountMinor, p.currency)}</td>
              <td><${Status} status=${p.status} /></td>
              <td>${p.customerEmail || ''}</td>
              <td>${dateTime(p.createdAt)}</td>
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

const CSV_COLUMNS = [
  'id',
  'reference',
  'status',
  'amount',
  'currency',
  'amountMinor',
  'amountRefundedMinor',
  'customerEmail',
  'description',
  'createdAt',
  'paidAt',
];

function csvCell(value) {
  let text = value === null || value === undefined ? '' : String(value);
  // A cell a spreadsheet would run as a formula is kept as text.
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function toCsv(payments) {
  const lines = [CSV_COLUMNS.join(',')];
  for (const p of payments) {
    const row = { ...p, amount: toMajorText(p.amountMinor, p.currency) };
    lines.push(CSV_COLUMNS.map((c) => csvCell(row[c])).join(','));
  }
  return lines.join('\r\n') + '\r\n';
}

function Export({ filters }) {
  const [progress, setProgress] = useState(null);
  const [error, setError] = useState(null);
  const run = async () => {
    setError(null);
    setProgress(0);
    try {
      const rows = await everyRow('/merchant/payments', filters, setProgress);
      const stamp = new Date().toISOString().slice(0, 10);
      const csv = new Blob([toCsv(rows)], { type: 'text/csv;charset=utf-8' });
      saveFile(`payments-${stamp}.csv`, csv);
    } catch (failure) {
      setError(failure);
    } finally {
      setProgress(null);
    }
  };
  return html`<span>
    <button
      type="button"
      class="secondary"
      id="export"
      onClick=${run}
      disabled=${progress !== null}
    >
      ${progress === null ? 'Export CSV' : `Exporting… ${progress} rows`}
    </button>
    <${ErrorNote} error=${error} />
  </span>`;
}

export function Payments({ member }) {
  const { query } = useLocation();
  const currencies = useCurrencies(member);
  const filters = Object.fromEntries(FILTERS.map((name) => [name, query.get(name) || '']));
  const cursor = query.get('cursor') || '';
  const key = FILTERS.map((n) => filters[n]).join('|') + '|' + cursor;
  const page = useLoad(
    () => api.get('/merchant/payments', { ...filters, cursor, limit: PAGE_SIZE }),
    [key],
  );
  // A new filter starts from the first page again.
  const filter = (name) => (event) => setQuery({ [name]: event.currentTarget.value, cursor: '' });
  return html`<h1>Payments</h1>
    <div class="actions">
      ${
        member.scopes.includes('payments:write') &&
        html`<a class="button-link" href="/dashboard/payments/new" id="new-payment"
          >New payment link</a
        >`
      }
      <${Export} filters=${filters} />
    </div>
    <form class="row filters" aria-label="Filters" onSubmit=${(e) => e.preventDefault()}>
      <label>
        Status
        <select id="filter-status" value=${filters.status} onChange=${filter('status')}>
          <option value="">Any</option>
          ${STATUSES.map((s) => html`<option value=${s}>${label(s)}</option>`)}
        </select>
      </label>
      <label>
        Currency
        <select id="filter-currency" value=${filters.currency} onChange=${filter('currency')}>
          <option value="">Any</option>
          ${currencies.map((c) => html`<option value=${c}>${c}</option>`)}
        </select>
      </label>
      <label>
        From
        <input id="filter-from" type="date" value=${filters.from} onChange=${filter('from')} />
      </label>
      <label>
        To
        <input id="filter-to" type="date" value=${filters.to} onChange=${filter('to')} />
      </label>
      ${
        FILTERS.some((n) => filters[n]) &&
        html`<button
          type="button"
          class="link"
          onClick=${() => setQuery({ status: '', currency: '', from: '', to: '', cursor: '' })}
        >
          Clear filters
        </button>`
      }
    </form>
    <${ErrorNote} error=${page.error} />
    ${page.loading && html`<${Loading} what="Loading payments" />`}
    ${page.data && html`<${PaymentTable} payments=${page.data.data} />`}
    <${Pager} page=${page.data} cursor=${cursor} />`;
}
