// Payments: the list with its filters in the URL (status, currency, from, to, cursor), cursor
// paging, and the filtered list exported as CSV, paged through the API in the browser.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api, everyRow, saveFile } from '../api.js';
import { ClearFilters, DateRange, FilterSelect, Filters } from '../filters.js';
import { dateTime, money, toMajorText } from '../format.js';
import { useAction } from '../forms.js';
import { useQuery } from '../router.js';
import { PagedTable } from '../table.js';
import { ErrorNote, Status, useLoad } from '../ui.js';

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

/** The payments table, for any list of payments (`Table`'s props but its rows). */
export const PAYMENTS = {
  id: 'payments-table',
  columns: [
    {
      title: 'Reference',
      cell: (p) => html`<a href=${`/dashboard/payments/${p.id}`}>${p.reference}</a>`,
    },
    { title: 'Amount', amount: true, cell: (p) => money(p.amountMinor, p.currency) },
    { title: 'Status', cell: (p) => html`<${Status} status=${p.status} />` },
    { title: 'Customer', cell: (p) => p.customerEmail || '' },
    { title: 'Created', cell: (p) => dateTime(p.createdAt) },
  ],
  empty: 'No payments match.',
};

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
  const [progress, setProgress] = useState(0);
  const { busy, error, run } = useAction();
  const start = () =>
    run(async () => {
      setProgress(0);
      const rows = await everyRow('/merchant/payments', filters, setProgress);
      const stamp = new Date().toISOString().slice(0, 10);
      const csv = new Blob([toCsv(rows)], { type: 'text/csv;charset=utf-8' });
      saveFile(`payments-${stamp}.csv`, csv);
    });
  return html`<span>
    <button type="button" class="secondary" id="export" onClick=${start} disabled=${busy}>
      ${busy ? `Exporting… ${progress} rows` : 'Export CSV'}
    </button>
    <${ErrorNote} error=${error} />
  </span>`;
}

export function Payments({ member }) {
  const currencies = useCurrencies(member);
  const { cursor, ...filters } = useQuery(...FILTERS, 'cursor');
  const key = FILTERS.map((n) => filters[n]).join('|') + '|' + cursor;
  const page = useLoad(
    () => api.get('/merchant/payments', { ...filters, cursor, limit: PAGE_SIZE }),
    [key],
  );
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
    <${Filters}>
      <${FilterSelect} value=${filters.status} options=${STATUSES} />
      <${FilterSelect}
        value=${filters.currency}
        options=${currencies}
        param="currency"
        text=${(c) => c}
      />
      <${DateRange} from=${filters.from} to=${filters.to} />
      <${ClearFilters} values=${filters} />
    <//>
    <${PagedTable} page=${page} what="Loading payments" ...${PAYMENTS} />`;
}
