// Webhook endpoints: the list and registering one (its signing secret shown once); an endpoint's
// page to edit it, rotate its secret (the new one shown once), delete it, and read its
// deliveries (status filter and cursor in the URL) and replay one.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { FilterSelect, Filters } from '../filters.js';
import { dateTime } from '../format.js';
import { Saved, useAction, useFields } from '../forms.js';
import { navigate, setQuery, useQuery } from '../router.js';
import { PagedTable } from '../table.js';
import {
  ActionButton,
  Card,
  codes,
  Empty,
  ErrorNote,
  Facts,
  Loading,
  modeName,
  ShownOnce,
  Status,
  useLoad,
  Waiting,
} from '../ui.js';
import { DevTabs } from './developers.js';

const PAGE_SIZE = 20;
const DELIVERY_STATES = ['PENDING', 'SUCCEEDED', 'RETRYING', 'DEAD'];
const HOME = '/dashboard/developers/webhooks';

/** "payment.*, refund.completed" -> ["payment.*", "refund.completed"]. */
function eventList(text) {
  return text
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
}

function EndpointFields({ fields, set }) {
  return html`<label class="grow">
      URL
      <input
        id="endpoint-url"
        type="url"
        required
        maxlength="2048"
        placeholder="https://example.com/webhooks"
        value=${fields.url}
        onInput=${set('url')}
      />
    </label>
    <label class="grow">
      Events (comma separated: a type, a family such as payment.*, or *)
      <input id="endpoint-events" required value=${fields.events} onInput=${set('events')} />
    </label>
    <label class="grow">
      Description (optional)
      <input
        id="endpoint-description"
        maxlength="500"
        value=${fields.description}
        onInput=${set('description')}
      />
    </label>`;
}

const BLANK = { url: '', events: '*', description: '' };

function CreateEndpoint({ created }) {
  const [fields, set, setFields] = useFields(BLANK);
  const { busy, error, submit } = useAction();
  const add = submit(async () => {
    const body = { url: fields.url.trim(), events: eventList(fields.events) };
    if (fields.description.trim()) body.description = fields.description.trim();
    created(await api.post('/merchant/webhooks', body));
    setFields(BLANK);
  });
  return html`<${Card} title="Add an endpoint" id="create-endpoint">
    <form class="row" onSubmit=${add}>
      <${EndpointFields} fields=${fields} set=${set} />
      <button type="submit" id="endpoint-submit" disabled=${busy}>Add endpoint</button>
    </form>
    <${ErrorNote} error=${error} />
  <//>`;
}

const ENDPOINT_COLUMNS = [
  { title: 'URL', className: 'wrap', cell: (e) => html`<a href=${`${HOME}/${e.id}`}>${e.url}</a>` },
  { title: 'Events', className: 'scopes', cell: (e) => codes(e.events) },
  { title: 'Status', cell: (e) => html`<${Status} status=${e.status} />` },
  { title: 'Created', cell: (e) => dateTime(e.createdAt) },
];

export function Webhooks({ member }) {
  const { cursor } = useQuery('cursor');
  const [round, setRound] = useState(0);
  const [created, setCreated] = useState(null);
  const page = useLoad(
    () => api.get('/merchant/webhooks', { cursor, limit: PAGE_SIZE }),
    [cursor, round],
  );
  return html`<h1>Webhooks</h1>
    <${DevTabs} />
    ${
      created &&
      html`<${Card} title="Endpoint added" id="endpoint-created">
        <p><a href=${`${HOME}/${created.id}`}>${created.url}</a></p>
        <${ShownOnce}
          id="new-secret"
          label="Its signing secret"
          secret=${created.secret}
          onDone=${() => setCreated(null)}
        />
      <//>`
    }
    ${
      member.scopes.includes('settings:write') &&
      html`<${CreateEndpoint}
        created=${(endpoint) => {
          setCreated(endpoint);
          setRound((n) => n + 1);
        }}
      />`
    }
    <${PagedTable}
      page=${page}
      quiet
      prefix="endpoints-"
      what="Loading the endpoints"
      id="endpoints-table"
      columns=${ENDPOINT_COLUMNS}
      empty="No webhook endpoints in this mode."
    />`;
}

function EditEndpoint({ endpoint, done }) {
  const [saved, setSaved] = useState(false);
  const [fields, set] = useFields(
    {
      url: endpoint.url,
      events: endpoint.events.join(', '),
      description: endpoint.description || '',
    },
    () => setSaved(false),
  );
  const { error, run, submit } = useAction();
  const path = `/merchant/webhooks/${encodeURIComponent(endpoint.id)}`;
  const save = submit(async () => {
    const body = {
      url: fields.url.trim(),
      events: eventList(fields.events),
      description: fields.description.trim() || null,
    };
    await api.patch(path, body);
    setSaved(true);
    done();
  });
  const enabled = endpoint.status === 'enabled';
  const toggle = () =>
    run(async () => {
      await api.patch(path, { status: enabled ? 'disabled' : 'enabled' });
      done();
    });
  return html`<${Card} title="Edit" id="edit-endpoint">
    <form class="row" onSubmit=${save}>
      <${EndpointFields} fields=${fields} set=${set} />
      <button type="submit" id="endpoint-save">Save</button>
      <${Saved} id="endpoint-saved" when=${saved} />
    </form>
    <p>
      <button type="button" class="secondary" id="endpoint-toggle" onClick=${toggle}>
        ${enabled ? 'Disable the endpoint' : 'Enable the endpoint'}
      </button>
    </p>
    <${ErrorNote} error=${error} />
  <//>`;
}

function Rotate({ endpoint, done }) {
  const [secret, setSecret] = useState(null);
  const rotate = async () => {
    const path = `/merchant/webhooks/${encodeURIComponent(endpoint.id)}/rotate-secret`;
    setSecret((await api.post(path)).secret);
  };
  return html`<${Card} title="Signing secret" id="rotate">
    ${
      endpoint.previousSecretExpiresAt &&
      html`<p class="muted" id="previous-secret">
        ${`The previous secret keeps signing too until ${dateTime(endpoint.previousSecretExpiresAt)}.`}
      </p>`
    }
    ${
      secret &&
      html`<${ShownOnce}
        key=${secret}
        id="rotated-secret"
        label="The new signing secret"
        secret=${secret}
        onDone=${() => setSecret(null)}
      />`
    }
    <${ActionButton}
      id="rotate-secret"
      yesId="rotate-secret-yes"
      text="Rotate the secret"
      question="A new secret signs from now on; the old one keeps signing for 24 hours."
      yesTone=""
      yes="Rotate"
      keep="Keep"
      act=${rotate}
      done=${done}
    />
  <//>`;
}

function Delete({ endpoint }) {
  return html`<${ActionButton}
    id="delete-endpoint"
    yesId="delete-endpoint-yes"
    tone="danger"
    text="Delete endpoint"
    question="No more events are sent to it. Delete it?"
    yes="Yes, delete it"
    act=${() => api.delete(`/merchant/webhooks/${encodeURIComponent(endpoint.id)}`)}
    done=${() => navigate(HOME)}
  />`;
}

function Replay({ delivery, done }) {
  const { busy, error, run } = useAction();
  const replay = () =>
    run(async () => {
      await api.post(`/merchant/webhooks/deliveries/${encodeURIComponent(delivery.id)}/replay`);
      done();
    });
  return html`<span>
    <button
      type="button"
      class="secondary"
      id=${`replay-${delivery.id}`}
      disabled=${busy}
      onClick=${replay}
    >
      Replay
    </button>
    <${ErrorNote} error=${error} />
  </span>`;
}

function Attempts({ deliveryId, round }) {
  const delivery = useLoad(
    () => api.get(`/merchant/webhooks/deliveries/${encodeURIComponent(deliveryId)}`),
    [deliveryId, round],
  );
  const d = delivery.data;
  return html`<div id="attempts" aria-live="polite">
    <h3>Attempts of ${deliveryId}</h3>
    <${ErrorNote} error=${delivery.error} />
    ${delivery.loading && !d && html`<${Loading} what="Loading the attempts" />`}
    ${d && d.attemptLog.length === 0 && html`<${Empty}>Not attempted yet.<//>`}
    ${
      d &&
      d.attemptLog.length > 0 &&
      html`<ol class="timeline" id="attempt-log">
        ${d.attemptLog.map(
          (a) =>
            html`<li>
              <span class="muted small">${dateTime(a.at)}</span><br />
              ${`Attempt ${a.attempt}: ${a.statusCode ? `answered ${a.statusCode}` : a.error || 'no answer'}`}
              ${a.durationMs !== null && html`<span class="muted small">${` in ${a.durationMs} ms`}</span>`}
            </li>`,
        )}
      </ol>`
    }
    ${
      d &&
      d.nextAttemptAt &&
      html`<p class="muted">${`Next attempt ${dateTime(d.nextAttemptAt)}.`}</p>`
    }
  </div>`;
}

function Deliveries({ endpoint, canWrite, round, done }) {
  const { status, cursor, delivery: opened } = useQuery('status', 'cursor', 'delivery');
  const page = useLoad(
    () =>
      api.get(`/merchant/webhooks/${encodeURIComponent(endpoint.id)}/deliveries`, {
        status,
        cursor,
        limit: PAGE_SIZE,
      }),
    [endpoint.id, status, cursor, round],
  );
  const columns = [
    {
      title: 'Event',
      cell: (d) =>
        html`<a href=${`/dashboard/developers/events/${d.eventId}`}><code>${d.eventType}</code></a>
          ${d.replay && html` <span class="muted small">(replay)</span>`}`,
    },
    { title: 'Status', cell: (d) => html`<${Status} status=${d.status} />` },
    {
      title: 'Attempts',
      cell: (d) =>
        html`<button
          type="button"
          class="link"
          id=${`attempts-${d.id}`}
          aria-label=${`${d.attempts} attempts: show them`}
          onClick=${() => setQuery({ delivery: d.id })}
        >
          ${d.attempts}
        </button>`,
    },
    { title: 'Last answer', cell: (d) => d.lastStatusCode || d.lastError || '—' },
    { title: 'Created', cell: (d) => dateTime(d.createdAt) },
    canWrite && {
      title: 'Actions',
      hidden: true,
      cell: (d) => html`<${Replay} delivery=${d} done=${done} />`,
    },
  ];
  return html`<${Card} title="Deliveries" id="deliveries">
    <${Filters} label="Delivery filters">
      <${FilterSelect} id="filter-delivery-status" value=${status} options=${DELIVERY_STATES} />
    <//>
    <${PagedTable}
      page=${page}
      quiet
      prefix="deliveries-"
      what="Loading the deliveries"
      id="deliveries-table"
      columns=${columns}
      rowProps=${(d) => ({ 'data-id': d.id, 'data-event': d.eventId })}
      empty="No deliveries."
    />
    ${opened && html`<${Attempts} deliveryId=${opened} round=${round} />`}
  <//>`;
}

export function WebhookDetail({ member, params }) {
  const [id] = params;
  const [round, setRound] = useState(0);
  const again = () => setRound((n) => n + 1);
  const canWrite = member.scopes.includes('settings:write');
  const endpoint = useLoad(
    () => api.get(`/merchant/webhooks/${encodeURIComponent(id)}`),
    [id, round],
  );
  if (!endpoint.data) {
    return html`<${Waiting} title="Webhook endpoint" load=${endpoint}><${DevTabs} /><//>`;
  }
  const e = endpoint.data;
  return html`<h1 class="wrap-title">Webhook endpoint <${Status} status=${e.status} /></h1>
    <${DevTabs} />
    <p class="muted" id="endpoint-url-shown">${e.url} · ${e.id}</p>
    ${canWrite && html`<div class="actions"><${Delete} endpoint=${e} /></div>`}
    <${Card} title="Details" id="endpoint-details">
      <${Facts}
        items=${[
          ['Events', e.events.join(', ')],
          ['Description', e.description || '—'],
          ['Mode', modeName(e.livemode)],
          e.disabledReason && ['Disabled because', e.disabledReason],
          ['Created', dateTime(e.createdAt)],
          ['Updated', dateTime(e.updatedAt)],
        ]}
      />
    <//>
    ${canWrite && html`<${EditEndpoint} key=${e.id} endpoint=${e} done=${again} />`}
    ${canWrite && html`<${Rotate} endpoint=${e} done=${again} />`}
    <${Deliveries} endpoint=${e} canWrite=${canWrite} round=${round} done=${again} />`;
}
