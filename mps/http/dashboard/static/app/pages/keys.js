// API keys: the list (mode filter and cursor in the URL), creating one (its secret shown once,
// with a copy button), revoking one, and a key's request log (`?key=` names it, `logs=` pages it).
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { dateTime } from '../format.js';
import { setQuery, useLocation } from '../router.js';
import { Card, Empty, ErrorNote, Loading, Pager, ShownOnce, Status, useLoad } from '../ui.js';
import { DevTabs } from './developers.js';

const PAGE_SIZE = 20;

function CreateKey({ member, created }) {
  // A key's scopes must be among its creator's (decisions 2): only those are offered.
  const offered = member.scopes;
  const [name, setName] = useState('');
  const [type, setType] = useState('secret');
  const [mode, setMode] = useState(member.mode);
  const [scopes, setScopes] = useState([]);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const toggle = (scope) => (e) =>
    setScopes(e.currentTarget.checked ? [...scopes, scope] : scopes.filter((s) => s !== scope));
  const submit = async (event) => {
    event.preventDefault();
    setError(null);
    if (scopes.length === 0) {
      setError(new Error('Choose at least one scope for the key.'));
      return;
    }
    setBusy(true);
    try {
      const key = await api.post('/merchant/api-keys', { name: name.trim(), type, mode, scopes });
      setName('');
      setScopes([]);
      created(key);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  return html`<${Card} title="Create a key" id="create-key">
    <form class="stack" onSubmit=${submit}>
      <div class="row">
        <label>
          Name
          <input
            id="key-name"
            required
            maxlength="100"
            value=${name}
            onInput=${(e) => setName(e.currentTarget.value)}
          />
        </label>
        <label>
          Type
          <select id="key-type" value=${type} onChange=${(e) => setType(e.currentTarget.value)}>
            <option value="secret">Secret (sk_)</option>
            <option value="publishable">Publishable (pk_)</option>
          </select>
        </label>
        <label>
          Mode
          <select id="key-mode" value=${mode} onChange=${(e) => setMode(e.currentTarget.value)}>
            <option value="test">Test</option>
            <option value="live">Live</option>
          </select>
        </label>
      </div>
      <fieldset class="scopes">
        <legend>Scopes</legend>
        ${offered.map(
          (scope) =>
            html`<label class="check">
              <input
                type="checkbox"
                name="scope"
                value=${scope}
                checked=${scopes.includes(scope)}
                onChange=${toggle(scope)}
              />
              <code>${scope}</code>
            </label>`,
        )}
      </fieldset>
      <div><button type="submit" id="key-submit" disabled=${busy}>Create key</button></div>
    </form>
    <${ErrorNote} error=${error} />
  <//>`;
}

function Revoke({ apiKey, done }) {
  const [asking, setAsking] = useState(false);
  const [error, setError] = useState(null);
  const revoke = async () => {
    setError(null);
    try {
      await api.post(`/merchant/api-keys/${encodeURIComponent(apiKey.id)}/revoke`);
      setAsking(false);
      done();
    } catch (failure) {
      setError(failure);
    }
  };
  if (!asking) {
    return html`<button
      type="button"
      class="danger-text secondary"
      id=${`revoke-${apiKey.id}`}
      onClick=${() => setAsking(true)}
    >
      Revoke
    </button>`;
  }
  return html`<span class="confirm" role="group" aria-label=${`Confirm revoking ${apiKey.name}`}>
    <span class="row">
      <span>Calls with it fail at once.</span>
      <button type="button" class="danger" id=${`revoke-${apiKey.id}-yes`} onClick=${revoke}>
        Revoke
      </button>
      <button type="button" class="secondary" onClick=${() => setAsking(false)}>Keep</button>
    </span>
    <${ErrorNote} error=${error} />
  </span>`;
}

function KeyTable({ keys, canWrite, selected, done }) {
  if (keys.length === 0) return html`<${Empty}>No API keys yet.<//>`;
  return html`<div class="table-wrap">
    <table id="keys-table">
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Key</th>
          <th scope="col">Mode</th>
          <th scope="col">Scopes</th>
          <th scope="col">Last used</th>
          <th scope="col">Status</th>
          <th scope="col"><span class="visually-hidden">Actions</span></th>
        </tr>
      </thead>
      <tbody>
        ${keys.map(
          (k) =>
            html`<tr data-id=${k.id} aria-current=${k.id === selected ? 'true' : undefined}>
              <td>${k.name}</td>
              <td><code>${k.prefix}…${k.last4}</code></td>
              <td>${k.livemode ? 'Live' : 'Test'}</td>
              <td class="scopes">${k.scopes.map((s) => html`<code>${s}</code>`)}</td>
              <td>${k.lastUsedAt ? dateTime(k.lastUsedAt) : 'Never'}</td>
              <td><${Status} status=${k.revokedAt ? 'REVOKED' : 'ACTIVE'} /></td>
              <td class="row-actions">
                <button
                  type="button"
                  class="link"
                  id=${`logs-${k.id}`}
                  onClick=${() => setQuery({ key: k.id, logs: '' })}
                >
                  Request log
                </button>
                ${canWrite && !k.revokedAt && html`<${Revoke} apiKey=${k} done=${done} />`}
              </td>
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

function RequestLog({ keyId, name, cursor }) {
  const log = useLoad(
    () =>
      api.get(`/merchant/api-keys/${encodeURIComponent(keyId)}/logs`, {
        cursor,
        limit: PAGE_SIZE,
      }),
    [keyId, cursor],
  );
  return html`<${Card} title=${`Request log of ${name || keyId}`} id="key-logs">
    <p>
      <button type="button" class="link" onClick=${() => setQuery({ key: '', logs: '' })}>
        Close the log
      </button>
    </p>
    <${ErrorNote} error=${log.error} />
    ${log.loading && html`<${Loading} what="Loading the request log" />`}
    ${log.data && log.data.data.length === 0 && html`<${Empty}>No requests made with this key.<//>`}
    ${
      log.data &&
      log.data.data.length > 0 &&
      html`<div class="table-wrap" tabindex="0" role="region" aria-label="Request log">
        <table id="key-logs-table">
          <thead>
            <tr>
              <th scope="col">At</th>
              <th scope="col">Request</th>
              <th scope="col">Status</th>
              <th scope="col">IP</th>
              <th scope="col">Request id</th>
            </tr>
          </thead>
          <tbody>
            ${log.data.data.map(
              (r) =>
                html`<tr data-id=${r.id}>
                  <td>${dateTime(r.at)}</td>
                  <td><code>${r.method} ${r.path}</code></td>
                  <td>${r.statusCode}</td>
                  <td>${r.ip || ''}</td>
                  <td><code>${r.requestId || ''}</code></td>
                </tr>`,
            )}
          </tbody>
        </table>
      </div>`
    }
    <${Pager} page=${log.data} cursor=${cursor} param="logs" prefix="logs-" />
  <//>`;
}

export function ApiKeys({ member }) {
  const { query } = useLocation();
  const mode = query.get('mode') || '';
  const cursor = query.get('cursor') || '';
  const selected = query.get('key') || '';
  const [round, setRound] = useState(0);
  const [created, setCreated] = useState(null);
  const canWrite = member.scopes.includes('settings:write');
  const page = useLoad(
    () => api.get('/merchant/api-keys', { mode, cursor, limit: PAGE_SIZE }),
    [mode, cursor, round],
  );
  const again = () => setRound((n) => n + 1);
  const chosen = page.data && page.data.data.find((k) => k.id === selected);
  return html`<h1>API keys</h1>
    <${DevTabs} />
    ${
      created &&
      html`<${Card} title=${`Key “${created.name}” created`} id="key-created">
        <${ShownOnce}
          id="new-key"
          label="The key"
          secret=${created.key}
          onDone=${() => setCreated(null)}
        />
      <//>`
    }
    ${
      canWrite &&
      html`<${CreateKey}
        member=${member}
        created=${(key) => {
          setCreated(key);
          again();
        }}
      />`
    }
    <form class="row filters" aria-label="Filters" onSubmit=${(e) => e.preventDefault()}>
      <label>
        Mode
        <select
          id="filter-mode"
          value=${mode}
          onChange=${(e) => setQuery({ mode: e.currentTarget.value, cursor: '' })}
        >
          <option value="">Both</option>
          <option value="test">Test</option>
          <option value="live">Live</option>
        </select>
      </label>
    </form>
    <${ErrorNote} error=${page.error} />
    ${page.loading && !page.data && html`<${Loading} what="Loading the keys" />`}
    ${
      page.data &&
      html`<${KeyTable}
        keys=${page.data.data}
        canWrite=${canWrite}
        selected=${selected}
        done=${again}
      />`
    }
    <${Pager} page=${page.data} cursor=${cursor} prefix="keys-" />
    ${
      selected &&
      html`<${RequestLog}
        keyId=${selected}
        name=${chosen && chosen.name}
        cursor=${query.get('logs') || ''}
      />`
    }`;
}
