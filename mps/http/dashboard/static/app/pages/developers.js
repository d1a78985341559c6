// Developers: the tabs of the section (API keys, webhooks, events) and its overview, which shows
// the API versions, pins the company's default version, and links to the API explorer where the
// server serves one.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { dateTime } from '../format.js';
import { Saved, typed, useAction } from '../forms.js';
import { useLocation } from '../router.js';
import { Table } from '../table.js';
import { Card, ErrorNote, Loading, Status, useLoad } from '../ui.js';

const TABS = [
  { name: 'Overview', href: '/dashboard/developers' },
  { name: 'API keys', href: '/dashboard/developers/api-keys' },
  { name: 'Webhooks', href: '/dashboard/developers/webhooks' },
  { name: 'Events', href: '/dashboard/developers/events' },
];

/** The section's tabs; the one the URL is under is marked current. */
export function DevTabs() {
  const { path } = useLocation();
  const current = [...TABS].reverse().find((t) => path === t.href || path.startsWith(t.href + '/'));
  return html`<nav class="tabs" aria-label="Developers">
    ${TABS.map(
      (t) =>
        html`<a href=${t.href} aria-current=${t === current ? 'page' : undefined}>${t.name}</a>`,
    )}
  </nav>`;
}

// The page names the server's mode (the shell's meta tag): production serves no explorer at all
// (its routes are not mounted), so the link is offered in development only.
function explorerServed() {
  const meta = document.querySelector('meta[name="mps-server-mode"]');
  return meta !== null && meta.content === 'development';
}

function PinVersion({ versions, pinned, done }) {
  const [chosen, setChosen] = useState(pinned);
  const [saved, setSaved] = useState(false);
  const { error, submit } = useAction();
  const save = submit(async () => {
    setSaved(false);
    await api.patch('/merchant/settings', { defaultApiVersion: chosen });
    setSaved(true);
    done();
  });
  return html`<form class="row pin-version" onSubmit=${save}>
    <label>
      Default version of this company
      <select id="pin-version" value=${chosen} onChange=${typed(setChosen)}>
        ${versions.map((v) => html`<option value=${v.version}>${v.version}</option>`)}
      </select>
    </label>
    <button type="submit" id="pin-version-save" disabled=${chosen === pinned}>Save</button>
    <${Saved} id="pin-version-saved" when=${saved} />
    <${ErrorNote} error=${error} />
  </form>`;
}

const VERSION_COLUMNS = [
  { title: 'Version', cell: (row) => html`<code>${row.version}</code>` },
  { title: 'Status', cell: (row) => html`<${Status} status=${row.status} />` },
  { title: 'Sunset', cell: (row) => (row.sunsetAt ? dateTime(row.sunsetAt) : '—') },
];

export function Developers({ member }) {
  const versions = useLoad(() => api.get('/developer/versions'), []);
  const v = versions.data;
  return html`<h1>Developers</h1>
    <${DevTabs} />
    <${Card} title="API versions" id="versions">
      <${ErrorNote} error=${versions.error} />
      ${versions.loading && html`<${Loading} what="Loading the versions" />`}
      ${
        v &&
        html`<p>
            Current version <code id="current-version">${v.current}</code>; requests without
            ${' an '}<code>X-Api-Version</code> header get
            ${' '}<code id="default-version">${v.default}</code>.
          </p>
          <${Table}
            id="versions-table"
            label="API versions"
            columns=${VERSION_COLUMNS}
            rows=${v.versions}
            rowProps=${(row) => ({ 'data-version': row.version })}
          />
          ${
            member.scopes.includes('settings:write') &&
            html`<${PinVersion}
              key=${v.default}
              versions=${v.versions}
              pinned=${v.default}
              done=${versions.reload}
            />`
          }`
      }
    <//>
    <${Card} title="Reference" id="reference">
      ${
        explorerServed()
          ? html`<p>
              <a href="/api/docs" id="explorer-link" target="_blank" rel="noopener"
                >Open the API explorer</a
              >
              <span class="muted small"> (this development server only)</span>
            </p>`
          : html`<p class="muted">
              This server runs in production mode, which serves no API explorer.
            </p>`
      }
      <p>
        The OpenAPI document of this API is at${' '}
        <code>/api/v1/developer/openapi.json</code>${' '}
        (it needs a dashboard session).
      </p>
    <//>`;
}
