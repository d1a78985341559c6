// One invoice: its PDF, its hosted link, its lines and timeline and, while it is open (SENT or
// OVERDUE), mark paid, resend and cancel for a role with invoices:write.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { dateTime, label, money } from '../format.js';
import { typed, useAction } from '../forms.js';
import { Table } from '../table.js';
import {
  ActionButton,
  Card,
  CopyField,
  Empty,
  ErrorNote,
  Facts,
  Status,
  useLoad,
  Waiting,
} from '../ui.js';

const OPEN = ['SENT', 'OVERDUE'];

function MarkPaid({ invoice, done }) {
  const [reference, setReference] = useState('');
  const [note, setNote] = useState('');
  const { busy, error, submit } = useAction();
  const markPaid = submit(async () => {
    const body = {};
    if (reference.trim()) body.reference = reference.trim();
    if (note.trim()) body.note = note.trim();
    await api.post(`/merchant/invoices/${invoice.id}/mark-paid`, body);
    done();
  });
  return html`<${Card} title="Mark paid" id="mark-paid">
    <p class="muted small">For a payment made outside the service, such as a bank transfer.</p>
    <form class="row" onSubmit=${markPaid}>
      <label>
        Reference (optional)
        <input
          id="paid-reference"
          maxlength="200"
          value=${reference}
          onInput=${typed(setReference)}
        />
      </label>
      <label class="grow">
        Note (optional)
        <input
          id="paid-note"
          maxlength="1000"
          value=${note}
          onInput=${typed(setNote)}
        />
      </label>
      <button type="submit" id="mark-paid-submit" disabled=${busy}>Mark paid</button>
    </form>
    <${ErrorNote} error=${error} />
  <//>`;
}

function Timeline({ entries }) {
  if (entries.length === 0) return html`<${Empty}>No changes yet.<//>`;
  return html`<ol class="timeline">
    ${entries.map(
      (e) =>
        html`<li data-status=${e.status}>
          <span class="muted small">${dateTime(e.at)}</span><br />
          <${Status} status=${e.status} />${e.note ? html` ${e.note}` : ''}
        </li>`,
    )}
  </ol>`;
}

function Pdf({ invoice }) {
  const { busy, error, run } = useAction();
  const fetchPdf = () =>
    run(() =>
      api.download(`/merchant/invoices/${invoice.id}/pdf`, `${invoice.invoiceNumber}.pdf`),
    );
  return html`<span>
    <button type="button" class="secondary" id="download-pdf" disabled=${busy} onClick=${fetchPdf}>
      ${busy ? 'Preparing PDF…' : 'Download PDF'}
    </button>
    <${ErrorNote} error=${error} />
  </span>`;
}

// A single-total invoice (no items) reads as one line of its total.
function lines(invoice) {
  if (invoice.items) return invoice.items;
  const total = invoice.amountMinor;
  return [{ description: 'Total', quantity: 1, unitAmountMinor: total, amountMinor: total }];
}

function lineColumns(currency) {
  return [
    { title: 'Description', cell: (item) => item.description },
    { title: 'Quantity', amount: true, cell: (item) => item.quantity },
    { title: 'Unit price', amount: true, cell: (item) => money(item.unitAmountMinor, currency) },
    { title: 'Amount', amount: true, cell: (item) => money(item.amountMinor, currency) },
  ];
}

export function InvoiceDetail({ member, params }) {
  const [id] = params;
  const [round, setRound] = useState(0);
  const again = () => setRound((n) => n + 1);
  const path = `/merchant/invoices/${encodeURIComponent(id)}`;
  const invoice = useLoad(() => api.get(path), [id, round]);
  const timeline = useLoad(() => api.get(`${path}/timeline`).then((a) => a.data), [id, round]);
  if (!invoice.data) return html`<${Waiting} title="Invoice" load=${invoice} />`;
  const i = invoice.data;
  const open = OPEN.includes(i.status);
  const can = member.scopes.includes('invoices:write');
  return html`<h1>
      ${i.invoiceNumber} · ${money(i.amountMinor, i.currency)} <${Status} status=${i.status} />
    </h1>
    <p class="muted" id="invoice-id">${i.id}</p>
    <div class="actions">
      <${Pdf} invoice=${i} />
      ${
        can &&
        open &&
        html`<${ActionButton}
            id="resend"
            text="Resend email"
            act=${() => api.post(`${path}/resend`)}
            done=${again}
          />
          <${ActionButton}
            id="cancel-invoice"
            text="Cancel invoice"
            tone="danger"
            question="The invoice is voided and can no longer be paid. Cancel it?"
            yes="Yes, cancel it"
            act=${() => api.post(`${path}/cancel`)}
            done=${again}
          />`
      }
    </div>
    ${
      i.emailStatus === 'FAILED' &&
      html`<p class="notice" role="status" id="email-failed">
        The email to the customer could not be sent${i.emailError ? `: ${i.emailError}` : ''}.
      </p>`
    }
    <${Card} title="Hosted invoice" id="hosted">
      <p class="muted small">
        The page the customer's email links to, where they view and download it.
      </p>
      <${CopyField} id="hosted-url" label="Hosted invoice link" value=${i.hostedUrl} />
    <//>
    <div class="grid">
      <${Card} title="Details" id="invoice-details">
        <${Facts}
          items=${[
            ['Customer', `${i.customer.name ? `${i.customer.name} · ` : ''}${i.customer.email}`],
            ['Due', i.dueDate || 'No due date'],
            ['Email', label(i.emailStatus || '—')],
            ['Created', dateTime(i.createdAt)],
            ['Paid', `${dateTime(i.paidAt)}${i.paidReference ? ` (${i.paidReference})` : ''}`],
            ['Voided', dateTime(i.voidedAt)],
            ['Memo', i.memo || '—'],
          ]}
        />
      <//>
      <${Card} title="Timeline" id="invoice-timeline">
        <${ErrorNote} error=${timeline.error} />
        ${timeline.data && html`<${Timeline} entries=${timeline.data} />`}
      <//>
    </div>
    <${Card} title="Line items" id="line-items">
      <${Table}
        label="Line items"
        columns=${lineColumns(i.currency)}
        rows=${lines(i)}
        rowProps=${() => ({})}
        foot=${html`<tfoot>
          <tr>
            <th scope="row" colspan="3">Total</th>
            <td class="amount" id="invoice-amount">${money(i.amountMinor, i.currency)}</td>
          </tr>
        </tfoot>`}
      />
    <//>
    ${can && open && html`<${MarkPaid} invoice=${i} done=${again} />`}`;
}
