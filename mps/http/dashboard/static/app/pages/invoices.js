// Invoices: the list with its status filter and cursor in the URL, and a new invoice with line
// items (offered only to a role with invoices:write).
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { dateTime, money, toMinor } from '../format.js';
import { navigate, useLocation } from '../router.js';
import { Empty, ErrorNote, FilterSelect, Loading, Pager, Status, useLoad } from '../ui.js';
import { useCurrencies } from './payments.js';

const STATUSES = ['SENT', 'OVERDUE', 'PAID', 'VOID'];
const PAGE_SIZE = 20;

export function Invoices({ member }) {
  const { query } = useLocation();
  const status = query.get('status') || '';
  const cursor = query.get('cursor') || '';
  const page = useLoad(
    () => api.get('/merchant/invoices', { status, cursor, limit: PAGE_SIZE }),
    [status, cursor],
  );
  const rows = page.data ? page.data.data : [];
  return html`<h1>Invoices</h1>
    <div class="actions">
      ${
        member.scopes.includes('invoices:write') &&
        html`<a class="button-link" href="/dashboard/invoices/new" id="new-invoice">New invoice</a>`
      }
    </div>
    <form class="row filters" aria-label="Filters" onSubmit=${(e) => e.preventDefault()}>
      <${FilterSelect}
        id="filter-status"
        name="Status"
        value=${status}
        options=${STATUSES}
        param="status"
      />
    </form>
    <${ErrorNote} error=${page.error} />
    ${page.loading && html`<${Loading} what="Loading invoices" />`}
    ${page.data && rows.length === 0 && html`<${Empty}>No invoices match.<//>`}
    ${
      rows.length > 0 &&
      html`<div class="table-wrap">
        <table id="invoices-table">
          <thead>
            <tr>
              <th scope="col">Number</th>
              <th scope="col" class="amount">Amount</th>
              <th scope="col">Status</th>
              <th scope="col">Customer</th>
              <th scope="col">Due</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            ${rows.map(
              (i) =>
                html`<tr data-id=${i.id}>
                  <td><a href=${`/dashboard/invoices/${i.id}`}>${i.invoiceNumber}</a></td>
                  <td class="amount">${money(i.amountMinor, i.currency)}</td>
                  <td><${Status} status=${i.status} /></td>
                  <td>${i.customer.email}</td>
                  <td>${i.dueDate || ''}</td>
                  <td>${dateTime(i.createdAt)}</td>
                </tr>`,
            )}
          </tbody>
        </table>
      </div>`
    }
    <${Pager} cursor=${cursor} page=${page.data} />`;
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
  const [fields, setFields] = useState({
    email: '',
    name: '',
    currency: '',
    dueDate: '',
    memo: '',
  });
  const [lines, setLines] = useState([blankLine()]);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const currency = fields.currency || currencies[0] || '';
  const set = (name) => (event) => setFields({ ...fields, [name]: event.currentTarget.value });
  const submit = async (event) => {
    event.preventDefault();
    setError(null);
    const items = [];
    for (const [index, line] of lines.entries()) {
      const unitAmountMinor = toMinor(line.unit, currency);
      if (unitAmountMinor === null) {
        setError(new Error(`Line ${index + 1}: enter a unit price in ${currency}, such as 10.00.`));
        return;
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
    setBusy(true);
    try {
      const invoice = await api.post('/merchant/invoices', body);
      navigate(`/dashboard/invoices/${invoice.id}`);
    } catch (failure) {
      setError(failure);
      setBusy(false);
    }
  };
  return html`<h1>New invoice</h1>
    <p class="muted">The customer is emailed the invoice with a link to view and download it.</p>
    <form class="stack invoice-form" onSubmit=${submit}>
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
