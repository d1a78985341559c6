// One payment: its facts, a timeline, its refunds, its events (and its refunds') with each
// event's webhook deliveries, and the actions the member's role allows in its state (cancel
// while PENDING, refund while PAID or PARTIAL_REFUND).
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { dateTime, label, money, toMajorText, toMinor } from '../format.js';
import { typed, useAction } from '../forms.js';
import { useQuery } from '../router.js';
import { Table } from '../table.js';
import {
  ActionButton,
  Card,
  Empty,
  ErrorNote,
  Facts,
  Loading,
  modeName,
  Pager,
  Status,
  useLoad,
  Waiting,
} from '../ui.js';
import { CopyUrl } from './new-payment.js';

const EVENTS_PER_PAGE = 10;

function timeline(payment, refunds) {
  const entries = [{ at: payment.createdAt, text: 'Payment link created' }];
  if (payment.paidAt) entries.push({ at: payment.paidAt, text: 'Paid' });
  for (const r of refunds) {
    entries.push({
      at: r.createdAt,
      text: `Refund of ${money(r.amountMinor, payment.currency)} requested (${label(r.status)})`,
    });
  }
  if (['CANCELLED', 'EXPIRED', 'REVERSED', 'REFUNDED'].includes(payment.status)) {
    entries.push({ at: payment.updatedAt, text: label(payment.status) });
  }
  return entries.sort((a, b) => String(a.at).localeCompare(String(b.at)));
}

function Refund({ payment, done }) {
  const remaining = (
    BigInt(payment.amountMinor) - BigInt(payment.amountRefundedMinor || '0')
  ).toString();
  const [amount, setAmount] = useState(toMajorText(remaining, payment.currency));
  const [reason, setReason] = useState('');
  const [result, setResult] = useState(null);
  const { busy, error, submit } = useAction();
  const refund = submit(async () => {
    const amountMinor = toMinor(amount, payment.currency);
    if (amountMinor === null) {
      throw new Error(`Enter an amount in ${payment.currency}, such as 10.00.`);
    }
    const body = { paymentId: payment.id, amountMinor };
    if (reason.trim()) body.reason = reason.trim();
    const answer = await api.post('/merchant/refunds', body);
    setResult(
      answer.approvalRequest
        ? `The refund needs approval first: request ${answer.approvalRequest.id}.`
        : `Refund ${answer.id} of ${money(answer.amountMinor, payment.currency)} is ${label(answer.status)}.`,
    );
    done();
  });
  return html`<${Card} title="Refund" id="refund">
    <form class="row" onSubmit=${refund}>
      <label>
        Amount (${payment.currency})
        <input
          id="refund-amount"
          inputmode="decimal"
          value=${amount}
          onInput=${typed(setAmount)}
        />
      </label>
      <label>
        Reason (optional)
        <input
          id="refund-reason"
          value=${reason}
          maxlength="500"
          onInput=${typed(setReason)}
        />
      </label>
      <button type="submit" id="refund-submit" disabled=${busy}>Refund</button>
    </form>
    ${result && html`<p role="status" id="refund-result">${result}</p>`}
    <${ErrorNote} error=${error} />
  <//>`;
}

const DELIVERY_COLUMNS = [
  {
    title: 'Delivery',
    cell: (d) => html`${
      d.endpointId
        ? html`<a href=${`/dashboard/developers/webhooks/${d.endpointId}`}>${d.id}</a>`
        : d.id
    }
    ${d.replay && html` <span class="muted small">replay</span>`}`,
  },
  { title: 'To', cell: (d) => d.url },
  { title: 'Status', cell: (d) => html`<${Status} status=${d.status} />` },
  { title: 'Attempts', cell: (d) => d.attempts },
  { title: 'Last answer', cell: (d) => d.lastStatusCode || d.lastError || '—' },
  { title: 'Created', cell: (d) => dateTime(d.createdAt) },
];

/** One event's webhook deliveries: to each endpoint subscribed, or the payment's own URL. */
function Deliveries({ event }) {
  const deliveries = useLoad(
    () =>
      api
        .get(`/merchant/events/${encodeURIComponent(event.id)}/deliveries`, { limit: 20 })
        .then((p) => p.data),
    [event.id],
  );
  if (deliveries.error) return html`<${ErrorNote} error=${deliveries.error} />`;
  if (!deliveries.data) return html`<${Loading} what="Loading deliveries" />`;
  if (deliveries.data.length === 0)
    return html`<p class="muted small">Not sent: no webhook endpoint took this event.</p>`;
  return html`<${Table}
    tableLabel=${`Deliveries of ${event.type}`}
    columns=${DELIVERY_COLUMNS}
    rows=${deliveries.data}
    rowProps=${(d) => ({ 'data-id': d.id, 'data-event': event.id })}
  />`;
}

/**
 * The events about this payment (its own and its refunds', which name it), newest first, paged
 * by a cursor of their own in the URL; read from the payment's creation on, so the server reads
 * no older events.
 */
function Events({ payment, round }) {
  const { eventsCursor: cursor } = useQuery('eventsCursor');
  const events = useLoad(
    () =>
      api.get('/merchant/events', {
        objectId: payment.id,
        from: payment.createdAt,
        limit: EVENTS_PER_PAGE,
        cursor,
      }),
    [payment.id, round, cursor],
  );
  return html`<${Card} title="Events and deliveries" id="events">
    <${ErrorNote} error=${events.error} />
    ${events.loading && !events.data && html`<${Loading} what="Loading events" />`}
    ${events.data && events.data.data.length === 0 && html`<${Empty}>No events for this payment.<//>`}
    ${
      events.data &&
      html`<ul class="stack">
        ${events.data.data.map(
          (e) =>
            html`<li data-type=${e.type} data-id=${e.id}>
              <p>
                <a href=${`/dashboard/developers/events/${e.id}`}><code>${e.type}</code></a>
                ${' '}· ${dateTime(e.createdAt)} · <span class="muted small">${e.id}</span>
              </p>
              <${Deliveries} event=${e} />
            </li>`,
        )}
      </ul>`
    }
    <${Pager} page=${events.data} param="eventsCursor" prefix="events-" />
  <//>`;
}

/** A payment's refunds, in the payment's currency (a refund names none). */
function refundColumns(payment) {
  return [
    { title: 'Refund', cell: (r) => r.id },
    { title: 'Amount', amount: true, cell: (r) => money(r.amountMinor, payment.currency) },
    { title: 'Status', cell: (r) => html`<${Status} status=${r.status} />` },
    { title: 'Reason', cell: (r) => r.reason || '' },
    { title: 'Created', cell: (r) => dateTime(r.createdAt) },
  ];
}

export function PaymentDetail({ member, params }) {
  const [id] = params;
  const can = (scope) => member.scopes.includes(scope);
  const [round, setRound] = useState(0);
  const again = () => setRound((n) => n + 1);
  const payment = useLoad(
    () => api.get(`/merchant/payments/${encodeURIComponent(id)}`),
    [id, round],
  );
  const refunds = useLoad(
    () =>
      can('refunds:read')
        ? api.get('/merchant/refunds', { paymentId: id, limit: 100 }).then((p) => p.data)
        : Promise.resolve([]),
    [id, round],
  );
  if (!payment.data) return html`<${Waiting} title="Payment" load=${payment} />`;
  const p = payment.data;
  const refundable = ['PAID', 'PARTIAL_REFUND'].includes(p.status);
  return html`<h1>${money(p.amountMinor, p.currency)} <${Status} status=${p.status} /></h1>
    <p class="muted" id="payment-reference">${p.reference} · ${p.id}</p>
    <div class="actions">
      ${
        can('payments:write') &&
        p.status === 'PENDING' &&
        html`<${ActionButton}
          id="cancel"
          text="Cancel payment"
          tone="danger"
          question="The link stops taking payments. Cancel it?"
          yes="Yes, cancel it"
          act=${() => api.post(`/merchant/payments/${p.id}/cancel`)}
          done=${again}
        />`
      }
    </div>
    ${p.status === 'PENDING' && html`<${Card} title="Payment link"><${CopyUrl} url=${p.payUrl} /><//>`}
    <div class="grid">
      <${Card} title="Details" id="details">
        <${Facts}
          items=${[
            ['Description', p.description || '—'],
            ['Customer', p.customerEmail || p.customerPhone || '—'],
            ['Created', dateTime(p.createdAt)],
            ['Paid', dateTime(p.paidAt)],
            ['Refunded', money(p.amountRefundedMinor || '0', p.currency)],
            ['Expires', p.expiresAt ? dateTime(p.expiresAt) : 'Never'],
            ['Mode', modeName(p.livemode)],
          ]}
        />
      <//>
      <${Card} title="Timeline" id="timeline">
        <ol class="timeline">
          ${timeline(p, refunds.data || []).map(
            (entry) =>
              html`<li>
                <span class="muted small">${dateTime(entry.at)}</span><br />${entry.text}
              </li>`,
          )}
        </ol>
      <//>
    </div>
    ${can('refunds:write') && refundable && html`<${Refund} payment=${p} done=${again} />`}
    ${
      can('refunds:read') &&
      html`<${Card} title="Refunds" id="refunds">
        <${ErrorNote} error=${refunds.error} />
        ${
          refunds.data &&
          html`<${Table} columns=${refundColumns(p)} rows=${refunds.data} empty="No refunds." />`
        }
      <//>`
    }
    ${can('settings:read') && html`<${Events} payment=${p} round=${round} />`}`;
}
