// One payment: its facts, a timeline, its refunds, its events (and its refunds') with each
// event's webhook deliveries, and the actions the member's role allows in its state (cancel
// while PENDING, refund while PAID or PARTIAL_REFUND).
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { dateTime, label, money, toMajorText, toMinor } from '../format.js';
import { useLocation } from '../router.js';
import { Card, Empty, ErrorNote, Loading, Pager, Status, useLoad } from '../ui.js';
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

function Cancel({ payment, done }) {
  const [asking, setAsking] = useState(false);
  const [error, setError] = useState(null);
  const cancel = async () => {
    try {
      await api.post(`/merchant/payments/${payment.id}/cancel`);
      done();
    } catch (failure) {
      setError(failure);
    }
  };
  return html`<div>
    ${
      !asking &&
      html`<button type="button" class="danger" id="cancel" onClick=${() => setAsking(true)}>
        Cancel payment
      </button>`
    }
    ${
      asking &&
      html`<div class="row" role="group" aria-label="Confirm cancelling">
        <span>The link stops taking payments. Cancel it?</span>
        <button type="button" class="danger" id="confirm-cancel" onClick=${cancel}>
          Yes, cancel it
        </button>
        <button type="button" class="secondary" onClick=${() => setAsking(false)}>Keep it</button>
      </div>`
    }
    <${ErrorNote} error=${error} />
  </div>`;
}

function Refund({ payment, done }) {
  const remaining = (
    BigInt(payment.amountMinor) - BigInt(payment.amountRefundedMinor || '0')
  ).toString();
  const [amount, setAmount] = useState(toMajorText(remaining, payment.currency));
  const [reason, setReason] = useState('');
  const [error, setError] = useState(null);
  const [result, setResult] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event) => {
    event.preventDefault();
    setError(null);
    const amountMinor = toMinor(amount, payment.currency);
    if (amountMinor === null) {
      setError(new Error(`Enter an amount in ${payment.currency}, such as 10.00.`));
      return;
    }
    setBusy(true);
    try {
      const body = { paymentId: payment.id, amountMinor };
      if (reason.trim()) body.reason = reason.trim();
      const answer = await api.post('/merchant/refunds', body);
      setResult(
        answer.approvalRequest
          ? `The refund needs approval first: request ${answer.approvalRequest.id}.`
          : `Refund ${answer.id} of ${money(answer.amountMinor, payment.currency)} is ${label(answer.status)}.`,
      );
      done();
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  return html`<${Card} title="Refund" id="refund">
    <form class="row" onSubmit=${submit}>
      <label>
        Amount (${payment.currency})
        <input
          id="refund-amount"
          inputmode="decimal"
          value=${amount}
          onInput=${(e) => setAmount(e.currentTarget.value)}
        />
      </label>
      <label>
        Reason (optional)
        <input
          id="refund-reason"
          value=${reason}
          maxlength="500"
          onInput=${(e) => setReason(e.currentTarget.value)}
        />
      </label>
      <button type="submit" id="refund-submit" disabled=${busy}>Refund</button>
    </form>
    ${result && html`<p role="status" id="refund-result">${result}</p>`}
    <${ErrorNote} error=${error} />
  <//>`;
}

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
  return html`<div class="table-wrap">
    <table aria-label=${`Deliveries of ${event.type}`}>
      <thead>
        <tr>
          <th scope="col">Delivery</th>
          <th scope="col">To</th>
          <th scope="col">Status</th>
          <th scope="col">Attempts</th>
          <th scope="col">Last answer</th>
          <th scope="col">Created</th>
        </tr>
      </thead>
      <tbody>
        ${deliveries.data.map(
          (d) =>
            html`<tr data-id=${d.id} data-event=${event.id}>
              <td>
                ${
                  d.endpointId
                    ? html`<a href=${`/dashboard/developers/webhooks/${d.endpointId}`}>${d.id}</a>`
                    : d.id
                }
                ${d.replay && html` <span class="muted small">replay</span>`}
              </td>
              <td>${d.url}</td>
              <td><${Status} status=${d.status} /></td>
              <td>${d.attempts}</td>
              <td>${d.lastStatusCode || d.lastError || '—'}</td>
              <td>${dateTime(d.createdAt)}</td>
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

/**
 * The events about this payment (its own and its refunds', which name it), newest first, paged
 * by a cursor of their own in the URL; read from the payment's creation on, so the server reads
 * no older events.
 */
function Events({ payment, round }) {
  const { query } = useLocation();
  const cursor = query.get('eventsCursor') || '';
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
    <${Pager} page=${events.data} cursor=${cursor} param="eventsCursor" prefix="events-" />
  <//>`;
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
  if (payment.error)
    return html`<h1>Payment</h1>
      <${ErrorNote} error=${payment.error} />`;
  if (!payment.data)
    return html`<h1>Payment</h1>
      <${Loading} />`;
  const p = payment.data;
  const refundable = ['PAID', 'PARTIAL_REFUND'].includes(p.status);
  return html`<h1>${money(p.amountMinor, p.currency)} <${Status} status=${p.status} /></h1>
    <p class="muted" id="payment-reference">${p.reference} · ${p.id}</p>
    <div class="actions">
      ${can('payments:write') && p.status === 'PENDING' && html`<${Cancel} payment=${p} done=${again} />`}
    </div>
    ${p.status === 'PENDING' && html`<${Card} title="Payment link"><${CopyUrl} url=${p.payUrl} /><//>`}
    <div class="grid">
      <${Card} title="Details" id="details">
        <dl class="facts">
          <dt>Description</dt>
          <dd>${p.description || '—'}</dd>
          <dt>Customer</dt>
          <dd>${p.customerEmail || p.customerPhone || '—'}</dd>
          <dt>Created</dt>
          <dd>${dateTime(p.createdAt)}</dd>
          <dt>Paid</dt>
          <dd>${dateTime(p.paidAt)}</dd>
          <dt>Refunded</dt>
          <dd>${money(p.amountRefundedMinor || '0', p.currency)}</dd>
          <dt>Expires</dt>
          <dd>${p.expiresAt ? dateTime(p.expiresAt) : 'Never'}</dd>
          <dt>Mode</dt>
          <dd>${p.livemode ? 'Live' : 'Test'}</dd>
        </dl>
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
        ${refunds.data && refunds.data.length === 0 && html`<${Empty}>No refunds.<//>`}
        ${
          refunds.data &&
          refunds.data.length > 0 &&
          html`<div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Refund</th>
                  <th scope="col" class="amount">Amount</th>
                  <th scope="col">Status</th>
                  <th scope="col">Reason</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                ${refunds.data.map(
                  (r) =>
                    html`<tr data-id=${r.id}>
                      <td>${r.id}</td>
                      <td class="amount">${money(r.amountMinor, p.currency)}</td>
                      <td><${Status} status=${r.status} /></td>
                      <td>${r.reason || ''}</td>
                      <td>${dateTime(r.createdAt)}</td>
                    </tr>`,
                )}
              </tbody>
            </table>
          </div>`
        }
      <//>`
    }
    ${can('settings:read') && html`<${Events} payment=${p} round=${round} />`}`;
}
