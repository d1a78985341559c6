// Events: the company's events of this mode, newest first, with the type and date filters and
// the cursor in the URL; an event's page shows its body and, for a member who may, replays it.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { dateTime } from '../format.js';
import { setQuery, useLocation } from '../router.js';
import { Card, Empty, ErrorNote, Loading, Pager, Status, useLoad } from '../ui.js';
import { DevTabs } from './developers.js';

const PAGE_SIZE = 20;
// The catalog's types (decisions 10), offered as suggestions; the API judges what is typed.
const TYPES = [
  'payment.created',
  'payment.completed',
  'payment.failed',
  'payment.expired',
  'payment.cancelled',
  'payment.refunded',
  'payment.partially_refunded',
  'payment.reversed',
  'refund.created',
  'refund.completed',
  'refund.rejected',
  'payout.created',
  'payout.paid',
  'payout.failed',
  'payout.cancelled',
  'customer.created',
  'kyc.verified',
  'kyc.rejected',
  'webhook.ping',
  'webhook.endpoint_disabled',
];

function TypeFilter({ type, from, to }) {
  const [text, setText] = useState(type);
  const apply = (event) => {
    event.preventDefault();
    setQuery({ type: text.trim(), cursor: '' });
  };
  return html`<form class="row filters" aria-label="Filters" onSubmit=${apply}>
    <label>
      Type
      <input
        id="filter-type"
        list="event-types"
        placeholder="payment.completed"
        value=${text}
        onInput=${(e) => setText(e.currentTarget.value)}
      />
    </label>
    <datalist id="event-types">${TYPES.map((t) => html`<option value=${t} />`)}</datalist>
    <button type="submit" class="secondary" id="filter-type-apply">Filter</button>
    <label>
      From
      <input
        id="filter-from"
        type="date"
        value=${from}
        onChange=${(e) => setQuery({ from: e.currentTarget.value, cursor: '' })}
      />
    </label>
    <label>
      To
      <input
        id="filter-to"
        type="date"
        value=${to}
        onChange=${(e) => setQuery({ to: e.currentTarget.value, cursor: '' })}
      />
    </label>
    ${
      (type || from || to) &&
      html`<button
        type="button"
        class="link"
        onClick=${() => {
          setText('');
          setQuery({ type: '', from: '', to: '', cursor: '' });
        }}
      >
        Clear filters
      </button>`
    }
  </form>`;
}

/** What an event is about, for the list: the object's id. */
function subject(event) {
  const object = (event.data && event.data.object) || {};
  return object.id || '';
}

export function Events() {
  const { query } = useLocation();
  const type = query.get('type') || '';
  const from = query.get('from') || '';
  const to = query.get('to') || '';
  const cursor = query.get('cursor') || '';
  const page = useLoad(
    () => api.get('/merchant/events', { type, from, to, cursor, limit: PAGE_SIZE }),
    [type, from, to, cursor],
  );
  const rows = page.data ? page.data.data : [];
  return html`<h1>Events</h1>
    <${DevTabs} />
    <${TypeFilter} key=${type} type=${type} from=${from} to=${to} />
    <${ErrorNote} error=${page.error} />
    ${page.loading && html`<${Loading} what="Loading the events" />`}
    ${page.data && rows.length === 0 && html`<${Empty}>No events match.<//>`}
    ${
      rows.length > 0 &&
      html`<div class="table-wrap">
        <table id="events-table">
          <thead>
            <tr>
              <th scope="col">Type</th>
              <th scope="col">About</th>
              <th scope="col">Event</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            ${rows.map(
              (e) =>
                html`<tr data-id=${e.id} data-type=${e.type}>
                  <td>
                    <a href=${`/dashboard/developers/events/${e.id}`}><code>${e.type}</code></a>
                  </td>
                  <td><code>${subject(e)}</code></td>
                  <td><code>${e.id}</code></td>
                  <td>${dateTime(e.createdAt)}</td>
                </tr>`,
            )}
          </tbody>
        </table>
      </div>`
    }
    <${Pager} page=${page.data} cursor=${cursor} prefix="events-" />`;
}

function ReplayEvent({ event }) {
  const [answer, setAnswer] = useState(null);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const replay = async () => {
    setError(null);
    setBusy(true);
    try {
      setAnswer(await api.post(`/merchant/events/${encodeURIComponent(event.id)}/replay`));
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  return html`<div>
    <button type="button" class="secondary" id="replay-event" disabled=${busy} onClick=${replay}>
      Send it again
    </button>
    ${
      answer &&
      html`<p role="status" id="replay-result">
        ${
          answer.deliveries.length === 0
            ? 'No endpoint is subscribed to this event now.'
            : `Sent again as ${answer.deliveries.length} new deliver${answer.deliveries.length === 1 ? 'y' : 'ies'}.`
        }
      </p>`
    }
    <${ErrorNote} error=${error} />
  </div>`;
}

export function EventDetail({ member, params }) {
  const [id] = params;
  const event = useLoad(() => api.get(`/merchant/events/${encodeURIComponent(id)}`), [id]);
  if (!event.data) {
    return html`<h1>Event</h1>
      <${DevTabs} />
      <${ErrorNote} error=${event.error} />
      ${event.loading && html`<${Loading} />`}`;
  }
  const e = event.data;
  // The answer's envelope fields are not part of the event a receiver gets.
  const { ok: _ok, requestId: _requestId, ...delivered } = e;
  return html`<h1><code>${e.type}</code></h1>
    <${DevTabs} />
    <p class="muted" id="event-id">${e.id}</p>
    ${
      member.scopes.includes('settings:write') &&
      html`<div class="actions"><${ReplayEvent} event=${e} /></div>`
    }
    <${Card} title="Details" id="event-details">
      <dl class="facts">
        <dt>Created</dt>
        <dd>${dateTime(e.createdAt)}</dd>
        <dt>Mode</dt>
        <dd>${e.livemode ? 'Live' : 'Test'}</dd>
        <dt>API version</dt>
        <dd><code>${e.apiVersion}</code></dd>
        <dt>Sequence</dt>
        <dd>${e.sequence}</dd>
        ${
          e.data &&
          e.data.object &&
          e.data.object.status &&
          html`<dt>Object status</dt>
            <dd><${Status} status=${e.data.object.status} /></dd>`
        }
      </dl>
    <//>
    <${Card} title="Body" id="event-body">
      <pre class="json" tabindex="0" role="region" aria-label="The event as delivered">${JSON.stringify(delivered, null, 2)}</pre>
    <//>`;
}
