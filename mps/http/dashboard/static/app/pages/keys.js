// API keys: the list (mode filter and cursor in the URL), creating one (its secret shown once,
// with a copy button), revoking one, and a key's request log (`?key=` names it, `logs=` pages it).
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { FilterSelect, Filters } from '../filters.js';
import { dateTime } from '../format.js';
import { typed, useAction } from '../forms.js';
import { setQuery, useQuery } from '../router.js';
import { PagedTable } from '../table.js';
import {
  ActionButton,
  Card,
  codes,
  ErrorNote,
  modeName,
  ShownOnce,
  Status,
  useLoad,
} from '../ui.js';
import { DevTabs } from './developers.js';

const PAGE_SIZE = 20;

function CreateKey({ member, created }) {
  // A key's scopes must be among its creator's (decisions 2): only those are offered.
  const offered = member.scopes;
  const [name, setName] = useState('');
  const [type, setType] = useState('secret');
  const [mode, setMode] = useState(member.mode);
  const [scopes, setScopes] = useState([]);
  const { busy, error, submit } = useAction();
  const toggle = (scope) => (e) =>
    setScopes(e.currentTarget.checked ? [...scopes, scope] : scopes.filter((s) => s !== scope));
  const create = submit(async () => {
    if (scopes.length === 0) throw new Error('Choose at least one scope for the key.');
    const key = await api.post('/merchant/api-keys', { name: name.trim(), type, mode, scopes });
    setName('');
    setScopes([]);
    created(key);
  });
  return html`<${Card} title="Create a key" id="create-key">
    <form class="stack" onSubmit=${create}>
      <div class="row">
        <label>
          Name
          <input
            id="key-name"
            required
            maxlength="100"
            value=${name}
            onInput=${typed(setName)}
          />
        </label>
        <label>
          Type
          <select id="key-type" value=${type} onChange=${typed(setType)}>
            <option value="secret">Secret (sk_)</option>
            <option value="publishable">Publishable (pk_)</option>
          </select>
        </label>
        <label>
          Mode
          <select id="key-mode" value=${mode} onChange=${typed(setMode)}>
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

function keyColumns(canWrite, done) {
  return [
    { title: 'Name', cell: (k) => k.name },
    { title: 'Key', cell: (k) => html`<code>${k.prefix}…${k.last4}</code>` },
    { title: 'Mode', cell: (k) => modeName(k.livemode) },
    { title: 'Scopes', className: 'scopes', cell: (k) => codes(k.scopes) },
    { title: 'Last used', cell: (k) => (k.lastUsedAt ? dateTime(k.lastUsedAt) : 'Never') },
    {
      title: 'Status',
      cell: (k) => html`<${Status} status=${k.revokedAt ? 'REVOKED' : 'ACTIVE'} />`,
    },
    {
      title: 'Actions',
      hidden: true,
      className: 'row-actions',
      cell: (k) => html`<button
          type="button"
          class="link"
          id=${`logs-${k.id}`}
          onClick=${() => setQuery({ key: k.id, logs: '' })}
        >
          Request log
        </button>
        ${
          canWrite &&
          !k.revokedAt &&
          html`<${ActionButton}
            id=${`revoke-${k.id}`}
            inRow
            tone="danger"
            text="Revoke"
            question=${`Revoke ${k.name}? Calls with it fail at once.`}
            yes="Revoke"
            keep="Keep"
            act=${() => api.post(`/merchant/api-keys/${encodeURIComponent(k.id)}/revoke`)}
            done=${done}
          />`
        }`,
    },
  ];
}

const LOG_COLUMNS = [
  { title: 'At', cell: (r) => dateTime(r.at) },
  { title: 'Request', cell: (r) => html`<code>${r.method} ${r.path}</code>` },
  { title: 'Status', cell: (r) => r.statusCode },
  { title: 'IP', cell: (r) => r.ip || '' },
  { title: 'Request id', cell: (r) => html`<code>${r.requestId || ''}</code>` },
];

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
    <${PagedTable}
      page=${log}
      param="logs"
      prefix="logs-"
      what="Loading the request log"
      id="key-logs-table"
      label="Request log"
      columns=${LOG_COLUMNS}
      empty="No requests made with this key."
    />
  <//>`;
}

export function ApiKeys({ member }) {
  const { mode, cursor, key: selected, logs } = useQuery('mode', 'cursor', 'key', 'logs');
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
    <${Filters}>
      <${FilterSelect} value=${mode} options=${['test', 'live']} param="mode" any="Both" />
    <//>
    <${PagedTable}
      page=${page}
      quiet
      prefix="keys-"
      what="Loading the keys"
      id="keys-table"
      columns=${keyColumns(canWrite, again)}
      rowProps=${(k) => ({
        'data-id': k.id,
        'aria-current': k.id === selected ? 'true' : undefined,
      })}
      empty="No API keys yet."
    />
    ${
      selected &&
      html`<${RequestLog}
        keyId=${selected}
        name=${chosen && chosen.name}
        cursor=${logs}
      />`
    }`;
}
