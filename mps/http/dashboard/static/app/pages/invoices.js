// Invoices: the list with its status filter and cursor in the URL, and a new invoice with line
// items (offered only to a role with invoices:write).
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { FilterSelect, Filters } from '../filters.js';
import { dateTime, money, toMinor } from '../format.js';
import { useAction, useFields } from '../forms.js';
import { navigate, useQuery } from '../router.js';
import { PagedTable } from '../table.js';
import { ErrorNote, Status, useLoad } from '../ui.js';
import { useCurrencies } from './payments.js';

const STATUSES = ['SENT', 'OVERDUE', 'PAID', 'VOID'];
const PAGE_SIZE = 20;

const COLUMNS = [
  {
    title: 'Number',
    cell: (i) => html`<a href=${`/dashboard/invoices/${i.id}`}>${i.invoiceNumber}</a>`,
  },
  { title: 'Amount', amount: true, cell: (i) => money(i.amountMinor, i.currency) },
  { title: 'Status', cell: (i) => html`<${Status} status=${i.status} />` },
  { title: 'Customer', cell: (i) => i.customer.email },
  { title: 'Due', cell: (i) => i.dueDate || '' },
  { title: 'Created', cell: (i) => dateTime(i.createdAt) },
];

export function Invoices({ member }) {
  const { status, cursor } = useQuery('status', 'cursor');
  const page = useLoad(
    () => api.get('/merchant/invoices', { status, cursor, limit: PAGE_SIZE }),
    [status, cursor],
  );
  return html`<h1>Invoices</h1>
    <div class="actions">
      ${
        member.scopes.includes('invoices:write') &&
        html`<a class="button-link" href="/dashboard/invoices/new" id="new-invoice">New invoice</a>`
      }
    </div>
    <${Filters}>
      <${FilterSelect} value=${status} options=${STATUSES} />
    <//>
    <${PagedTable}
      page=${page}
      what="Loading invoices"
      id="invoices-table"
      columns=${COLUMNS}
      empty="No invoices match."
    />`;
}

const blankLine = () => ({ description: '', quantity: '1', unit: '' });

function lineTotal(line, currency) {
  const unit = toMinor(line.unit, currency);
  const quantity = Number.parseInt(line.quantity, 10);
  if (unit === null || !Number.isInteger(quantity) || quantity < 1) return null;
  return (BigInt(unit) * BigInt(quantity)).toString();
}

function LineItems({ lines, currency, change }) {
  const set = (index, name) => (event) =>
    change(lines.map((l, i) => (i === index ? { ...l, [name]: event.currentTarget.value } : l)));
  const known = lines.map((l) => lineTotal(l, currency));
  const total = known.every((t) => t !== null)
    ? known.reduce((sum, t) => sum + BigInt(t), 0n).toString()
    : null;
  return html`<fieldset class="line-items">
    <legend>Line items</legend>
    ${lines.map(
      (line, index) =>
        html`<div class="row line-item" data-line=${index}>
          <label class="grow">
            Description
            <input
              id=${`item-description-${index}`}
              required
              maxlength="200"
              value=${line.description}
              onInput=${set(index, 'description')}
            />
          </label>
          <label>
            Quantity
            <input
              id=${`item-quantity-${index}`}
              type="number"
              min="1"
              max="100000"
              required
              value=${line.quantity}
              onInput=${set(index, 'quantity')}
            />
          </label>
          <label>
            Unit price (${currency || '—'})
            <input
              id=${`item-unit-${index}`}
              inputmode="decimal"
              required
              value=${line.unit}
              onInput=${set(index, 'unit')}
            />
          </label>
          ${
            lines.length > 1 &&
            html`<button
              type="button"
              class="link"
              id=${`item-remove-${index}`}
              onClick=${() => change(lines.filter((_, i) => i !== index))}
            >
              Remove
            </button>`
          }
        </div>`,
    )}
    <div class="row">
      <button
        type="button"
        class="secondary"
        id="add-line"
        disabled=${lines.length >= 100}
        onClick=${() => change([...lines, blankLine()])}
      >
        Add a line
      </button>
      <span id="invoice-total">
        Total: ${total !== null && currency ? money(total, currency) : '—'}
      </span>
    </div>
  </fieldset>`;
}

export function NewInvoice({ member }) {
  const currencies = useCurrencies(member);
  const [fields, set] = useFields({ email: '', name: '', currency: '', dueDate: '', memo: '' });
  const [lines, setLines] = useState([blankLine()]);
  // A created invoice opens: the form stays busy till then.
  const { busy, error, submit } = useAction({ once: true });
  const currency = fields.currency || currencies[0] || '';
  const create = submit(async () => {
    const items = [];
    for (const [index, line] of lines.entries()) {
      const unitAmountMinor = toMinor(line.unit, currency);
      if (unitAmountMinor === null) {
        throw new Error(`Line ${index + 1}: enter a unit price in ${currency}, such as 10.00.`);
      }
      items.push({
        description: line.description.trim(),
        quantity: Number.parseInt(line.quantity, 10),
        unitAmountMinor,
      });
    }
    const body = { customerEmail: fields.email.trim(), currency, items };
    if (fields.name.trim()) body.customerName = fields.name.trim();
    if (fields.dueDate) body.dueDate = fields.dueDate;
    if (fields.memo.trim()) body.memo = fields.memo.trim();
    const invoice = await api.post('/merchant/invoices', body);
    navigate(`/dashboard/invoices/${invoice.id}`);
  });
  return html`<h1>New invoice</h1>
    <p class="muted">The customer is emailed the invoice with a link to view and download it.</p>
    <form class="stack invoice-form" onSubmit=${create}>
      <div class="row">
        <label class="grow">
          Customer email
          <input
            id="invoice-email"
            type="email"
            required
            value=${fields.email}
            onInput=${set('email')}
          />
        </label>
        <label class="grow">
          Customer name (optional)
          <input id="invoice-name" maxlength="200" value=${fields.name} onInput=${set('name')} />
        </label>
      </div>
      <div class="row">
        <label>
          Currency
          <select id="invoice-currency" value=${currency} onChange=${set('currency')}>
            ${currencies.map((c) => html`<option value=${c}>${c}</option>`)}
          </select>
        </label>
        <label>
          Due date (optional)
          <input id="invoice-due" type="date" value=${fields.dueDate} onInput=${set('dueDate')} />
        </label>
      </div>
      <${LineItems} lines=${lines} currency=${currency} change=${setLines} />
      <label>
        Memo (optional)
        <textarea
          id="invoice-memo"
          maxlength="1000"
          rows="3"
          value=${fields.memo}
          onInput=${set('memo')}
        ></textarea>
      </label>
      <div>
        <button type="submit" id="create-invoice" disabled=${busy}>Create and send</button>
      </div>
      <${ErrorNote} error=${error} />
    </form>`;
}
