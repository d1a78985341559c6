// Events: the company's events of this mode, newest first, with the type and date filters and
// the cursor in the URL; an event's page shows its body and, for a member who may, replays it.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { ClearFilters, DateRange, Filters } from '../filters.js';
import { dateTime } from '../format.js';
import { typed, useAction } from '../forms.js';
import { setQuery, useQuery } from '../router.js';
import { PagedTable } from '../table.js';
import { Card, ErrorNote, Facts, modeName, Status, useLoad, Waiting } from '../ui.js';
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
  return html`<${Filters} onSubmit=${apply}>
    <label>
      Type
      <input
        id="filter-type"
        list="event-types"
        placeholder="payment.completed"
        value=${text}
        onInput=${typed(setText)}
      />
    </label>
    <datalist id="event-types">${TYPES.map((t) => html`<option value=${t} />`)}</datalist>
    <button type="submit" class="secondary" id="filter-type-apply">Filter</button>
    <${DateRange} from=${from} to=${to} />
    <${ClearFilters} values=${{ type, from, to }} cleared=${() => setText('')} />
  <//>`;
}

/** What an event is about, for the list: the object's id. */
function subject(event) {
  const object = (event.data && event.data.object) || {};
  return object.id || '';
}

const COLUMNS = [
  {
    title: 'Type',
    cell: (e) => html`<a href=${`/dashboard/developers/events/${e.id}`}><code>${e.type}</code></a>`,
  },
  { title: 'About', cell: (e) => html`<code>${subject(e)}</code>` },
  { title: 'Event', cell: (e) => html`<code>${e.id}</code>` },
  { title: 'Created', cell: (e) => dateTime(e.createdAt) },
];

export function Events() {
  const { type, from, to, cursor } = useQuery('type', 'from', 'to', 'cursor');
  const page = useLoad(
    () => api.get('/merchant/events', { type, from, to, cursor, limit: PAGE_SIZE }),
    [type, from, to, cursor],
  );
  return html`<h1>Events</h1>
    <${DevTabs} />
    <${TypeFilter} key=${type} type=${type} from=${from} to=${to} />
    <${PagedTable}
      page=${page}
      prefix="events-"
      what="Loading the events"
      id="events-table"
      columns=${COLUMNS}
      rowProps=${(e) => ({ 'data-id': e.id, 'data-type': e.type })}
      empty="No events match."
    />`;
}

function ReplayEvent({ event }) {
  const [answer, setAnswer] = useState(null);
  const { busy, error, run } = useAction();
  const replay = () =>
    run(async () =>
      setAnswer(await api.post(`/merchant/events/${encodeURIComponent(event.id)}/replay`)),
    );
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
  if (!event.data) return html`<${Waiting} title="Event" load=${event}><${DevTabs} /><//>`;
  const e = event.data;
  // The answer's envelope fields are not part of the event a receiver gets.
  const { ok: _ok, requestId: _requestId, ...delivered } = e;
  const status = e.data && e.data.object && e.data.object.status;
  return html`<h1><code>${e.type}</code></h1>
    <${DevTabs} />
    <p class="muted" id="event-id">${e.id}</p>
    ${
      member.scopes.includes('settings:write') &&
      html`<div class="actions"><${ReplayEvent} event=${e} /></div>`
    }
    <${Card} title="Details" id="event-details">
      <${Facts}
        items=${[
          ['Created', dateTime(e.createdAt)],
          ['Mode', modeName(e.livemode)],
          ['API version', html`<code>${e.apiVersion}</code>`],
          ['Sequence', e.sequence],
          status && ['Object status', html`<${Status} status=${status} />`],
        ]}
      />
    <//>
    <${Card} title="Body" id="event-body">
      <pre class="json" tabindex="0" role="region" aria-label="The event as delivered">${JSON.stringify(delivered, null, 2)}</pre>
    <//>`;
}
