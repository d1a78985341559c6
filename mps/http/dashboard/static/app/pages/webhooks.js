// Webhook endpoints: the list and registering one (its signing secret shown once); an endpoint's
// page to edit it, rotate its secret (the new one shown once), delete it, and read its
// deliveries (status filter and cursor in the URL) and replay one.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { dateTime } from '../format.js';
import { navigate, setQuery, useLocation } from '../router.js';
import {
  Card,
  Empty,
  ErrorNote,
  FilterSelect,
  Loading,
  Pager,
  ShownOnce,
  Status,
  useLoad,
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

function CreateEndpoint({ created }) {
  const [fields, setFields] = useState({ url: '', events: '*', description: '' });
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const set = (name) => (e) => setFields({ ...fields, [name]: e.currentTarget.value });
  const submit = async (event) => {
    event.preventDefault();
    setError(null);
    setBusy(true);
    try {
      const body = { url: fields.url.trim(), events: eventList(fields.events) };
      if (fields.description.trim()) body.description = fields.description.trim();
      created(await api.post('/merchant/webhooks', body));
      setFields({ url: '', events: '*', description: '' });
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  return html`<${Card} title="Add an endpoint" id="create-endpoint">
    <form class="row" onSubmit=${submit}>
      <${EndpointFields} fields=${fields} set=${set} />
      <button type="submit" id="endpoint-submit" disabled=${busy}>Add endpoint</button>
    </form>
    <${ErrorNote} error=${error} />
  <//>`;
}

export function Webhooks({ member }) {
  const { query } = useLocation();
  const cursor = query.get('cursor') || '';
  const [round, setRound] = useState(0);
  const [created, setCreated] = useState(null);
  const page = useLoad(
    () => api.get('/merchant/webhooks', { cursor, limit: PAGE_SIZE }),
    [cursor, round],
  );
  const rows = page.data ? page.data.data : [];
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
    <${ErrorNote} error=${page.error} />
    ${page.loading && !page.data && html`<${Loading} what="Loading the endpoints" />`}
    ${page.data && rows.length === 0 && html`<${Empty}>No webhook endpoints in this mode.<//>`}
    ${
      rows.length > 0 &&
      html`<div class="table-wrap">
        <table id="endpoints-table">
          <thead>
            <tr>
              <th scope="col">URL</th>
              <th scope="col">Events</th>
              <th scope="col">Status</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            ${rows.map(
              (e) =>
                html`<tr data-id=${e.id}>
                  <td class="wrap"><a href=${`${HOME}/${e.id}`}>${e.url}</a></td>
                  <td class="scopes">${e.events.map((t) => html`<code>${t}</code>`)}</td>
                  <td><${Status} status=${e.status} /></td>
                  <td>${dateTime(e.createdAt)}</td>
                </tr>`,
            )}
          </tbody>
        </table>
      </div>`
    }
    <${Pager} page=${page.data} cursor=${cursor} prefix="endpoints-" />`;
}

function EditEndpoint({ endpoint, done }) {
  const [fields, setFields] = useState({
    url: endpoint.url,
    events: endpoint.events.join(', '),
    description: endpoint.description || '',
  });
  const [error, setError] = useState(null);
  const [saved, setSaved] = useState(false);
  const set = (name) => (e) => {
    setSaved(false);
    setFields({ ...fields, [name]: e.currentTarget.value });
  };
  const submit = async (event) => {
    event.preventDefault();
    setError(null);
    try {
      const body = {
        url: fields.url.trim(),
        events: eventList(fields.events),
        description: fields.description.trim() || null,
      };
      await api.patch(`/merchant/webhooks/${encodeURIComponent(endpoint.id)}`, body);
      setSaved(true);
      done();
    } catch (failure) {
      setError(failure);
    }
  };
  const setStatus = async (status) => {
    setError(null);
    try {
      await api.patch(`/merchant/webhooks/${encodeURIComponent(endpoint.id)}`, { status });
      done();
    } catch (failure) {
      setError(failure);
    }
  };
  const enabled = endpoint.status === 'enabled';
  return html`<${Card} title="Edit" id="edit-endpoint">
    <form class="row" onSubmit=${submit}>
      <${EndpointFields} fields=${fields} set=${set} />
      <button type="submit" id="endpoint-save">Save</button>
      ${saved && html`<span role="status" id="endpoint-saved">Saved.</span>`}
    </form>
    <p>
      <button
        type="button"
        class="secondary"
        id="endpoint-toggle"
        onClick=${() => setStatus(enabled ? 'disabled' : 'enabled')}
      >
        ${enabled ? 'Disable the endpoint' : 'Enable the endpoint'}
      </button>
    </p>
    <${ErrorNote} error=${error} />
  <//>`;
}

function Rotate({ endpoint, done }) {
  const [secret, setSecret] = useState(null);
  const [asking, setAsking] = useState(false);
  const [error, setError] = useState(null);
  const rotate = async () => {
    setError(null);
    try {
      const answer = await api.post(
        `/merchant/webhooks/${encodeURIComponent(endpoint.id)}/rotate-secret`,
      );
      setAsking(false);
      setSecret(answer.secret);
      done();
    } catch (failure) {
      setError(failure);
    }
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
    ${
      !asking &&
      html`<button type="button" class="secondary" id="rotate-secret" onClick=${() => setAsking(true)}>
        Rotate the secret
      </button>`
    }
    ${
      asking &&
      html`<div class="row" role="group" aria-label="Confirm rotating">
        <span>A new secret signs from now on; the old one keeps signing for 24 hours.</span>
        <button type="button" id="rotate-secret-yes" onClick=${rotate}>Rotate</button>
        <button type="button" class="secondary" onClick=${() => setAsking(false)}>Keep</button>
      </div>`
    }
    <${ErrorNote} error=${error} />
  <//>`;
}

function Delete({ endpoint }) {
  const [asking, setAsking] = useState(false);
  const [error, setError] = useState(null);
  const remove = async () => {
    setError(null);
    try {
      await api.delete(`/merchant/webhooks/${encodeURIComponent(endpoint.id)}`);
      navigate(HOME);
    } catch (failure) {
      setError(failure);
    }
  };
  return html`<div>
    ${
      !asking &&
      html`<button type="button" class="danger" id="delete-endpoint" onClick=${() => setAsking(true)}>
        Delete endpoint
      </button>`
    }
    ${
      asking &&
      html`<div class="row" role="group" aria-label="Confirm deleting">
        <span>No more events are sent to it. Delete it?</span>
        <button type="button" class="danger" id="delete-endpoint-yes" onClick=${remove}>
          Yes, delete it
        </button>
        <button type="button" class="secondary" onClick=${() => setAsking(false)}>Keep it</button>
      </div>`
    }
    <${ErrorNote} error=${error} />
  </div>`;
}

function Replay({ delivery, done }) {
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const replay = async () => {
    setError(null);
    setBusy(true);
    try {
      await api.post(`/merchant/webhooks/deliveries/${encodeURIComponent(delivery.id)}/replay`);
      done();
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
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
  const { query } = useLocation();
  const status = query.get('status') || '';
  const cursor = query.get('cursor') || '';
  const opened = query.get('delivery') || '';
  const page = useLoad(
    () =>
      api.get(`/merchant/webhooks/${encodeURIComponent(endpoint.id)}/deliveries`, {
        status,
        cursor,
        limit: PAGE_SIZE,
      }),
    [endpoint.id, status, cursor, round],
  );
  const rows = page.data ? page.data.data : [];
  return html`<${Card} title="Deliveries" id="deliveries">
    <form class="row filters" aria-label="Delivery filters" onSubmit=${(e) => e.preventDefault()}>
      <${FilterSelect}
        id="filter-delivery-status"
        name="Status"
        value=${status}
        options=${DELIVERY_STATES}
        param="status"
      />
    </form>
    <${ErrorNote} error=${page.error} />
    ${page.loading && !page.data && html`<${Loading} what="Loading the deliveries" />`}
    ${page.data && rows.length === 0 && html`<${Empty}>No deliveries.<//>`}
    ${
      rows.length > 0 &&
      html`<div class="table-wrap">
        <table id="deliveries-table">
          <thead>
            <tr>
              <th scope="col">Event</th>
              <th scope="col">Status</th>
              <th scope="col">Attempts</th>
              <th scope="col">Last answer</th>
              <th scope="col">Created</th>
              ${canWrite && html`<th scope="col"><span class="visually-hidden">Actions</span></th>`}
            </tr>
          </thead>
          <tbody>
            ${rows.map(
              (d) =>
                html`<tr data-id=${d.id} data-event=${d.eventId}>
                  <td>
                    <a href=${`/dashboard/developers/events/${d.eventId}`}><code>${d.eventType}</code></a>
                    ${d.replay && html` <span class="muted small">(replay)</span>`}
                  </td>
                  <td><${Status} status=${d.status} /></td>
                  <td>
                    <button
                      type="button"
                      class="link"
                      id=${`attempts-${d.id}`}
                      aria-label=${`${d.attempts} attempts: show them`}
                      onClick=${() => setQuery({ delivery: d.id })}
                    >
                      ${d.attempts}
                    </button>
                  </td>
                  <td>${d.lastStatusCode || d.lastError || '—'}</td>
                  <td>${dateTime(d.createdAt)}</td>
                  ${canWrite && html`<td><${Replay} delivery=${d} done=${done} /></td>`}
                </tr>`,
            )}
          </tbody>
        </table>
      </div>`
    }
    <${Pager} page=${page.data} cursor=${cursor} prefix="deliveries-" />
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
  if (endpoint.error) {
    return html`<h1>Webhook endpoint</h1>
      <${DevTabs} />
      <${ErrorNote} error=${endpoint.error} />`;
  }
  if (!endpoint.data) {
    return html`<h1>Webhook endpoint</h1>
      <${DevTabs} />
      <${Loading} />`;
  }
  const e = endpoint.data;
  return html`<h1 class="wrap-title">Webhook endpoint <${Status} status=${e.status} /></h1>
    <${DevTabs} />
    <p class="muted" id="endpoint-url-shown">${e.url} · ${e.id}</p>
    ${canWrite && html`<div class="actions"><${Delete} endpoint=${e} /></div>`}
    <${Card} title="Details" id="endpoint-details">
      <dl class="facts">
        <dt>Events</dt>
        <dd>${e.events.join(', ')}</dd>
        <dt>Description</dt>
        <dd>${e.description || '—'}</dd>
        <dt>Mode</dt>
        <dd>${e.livemode ? 'Live' : 'Test'}</dd>
        ${e.disabledReason && html`<dt>Disabled because</dt><dd>${e.disabledReason}</dd>`}
        <dt>Created</dt>
        <dd>${dateTime(e.createdAt)}</dd>
        <dt>Updated</dt>
        <dd>${dateTime(e.updatedAt)}</dd>
      </dl>
    <//>
    ${canWrite && html`<${EditEndpoint} key=${e.id} endpoint=${e} done=${again} />`}
    ${canWrite && html`<${Rotate} endpoint=${e} done=${again} />`}
    <${Deliveries} endpoint=${e} canWrite=${canWrite} round=${round} done=${again} />`;
}
