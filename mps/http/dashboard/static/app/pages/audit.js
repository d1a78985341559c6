// The audit trail: entries newest first with their filters (action, actor, from, to) and cursor
// in the URL, the hash chain checked on request, and the whole trail downloaded as CSV or JSONL
// (the API streams it; the file is whole, whatever the filters show).
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { dateTime } from '../format.js';
import { setQuery, useLocation } from '../router.js';
import { Card, Empty, ErrorNote, Loading, Pager, useLoad, useMembers, who } from '../ui.js';

const FILTERS = ['action', 'actorId', 'from', 'to'];
const PAGE_SIZE = 25;

/** The export as a file, named for the day it was taken. */
function exportTrail(format) {
  const stamp = new Date().toISOString().slice(0, 10);
  return api.download('/team/audit/export', `audit-${stamp}.${format}`, {
    query: { format },
    named: true,
  });
}

function Export() {
  const [busy, setBusy] = useState(null);
  const [error, setError] = useState(null);
  const [done, setDone] = useState(null);
  const run = (format) => async () => {
    setBusy(format);
    setError(null);
    setDone(null);
    try {
      await exportTrail(format);
      setDone(format);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(null);
    }
  };
  return html`<div class="stack">
    <div class="row">
      <button
        type="button"
        class="secondary"
        id="export-csv"
        disabled=${busy !== null}
        onClick=${run('csv')}
      >
        ${busy === 'csv' ? 'Exporting…' : 'Export CSV'}
      </button>
      <button
        type="button"
        class="secondary"
        id="export-jsonl"
        disabled=${busy !== null}
        onClick=${run('jsonl')}
      >
        ${busy === 'jsonl' ? 'Exporting…' : 'Export JSONL'}
      </button>
    </div>
    ${done && html`<p
        role="status"
        class="muted small"
        id="export-done"
      >The whole trail was downloaded as ${done.toUpperCase()}.</p>`}
    <${ErrorNote} error=${error} />
  </div>`;
}

function Verify() {
  const [verdict, setVerdict] = useState(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const run = async () => {
    setBusy(true);
    setError(null);
    try {
      setVerdict(await api.get('/team/audit/verify'));
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  return html`<div class="stack">
    <div class="row">
      <button type="button" class="secondary" id="verify-chain" disabled=${busy} onClick=${run}>
        ${busy ? 'Checking…' : 'Verify the chain'}
      </button>
    </div>
    ${verdict &&
    html`<p
        role="status"
        id="chain-verdict"
        class=${verdict.valid ? 'verdict good' : 'verdict bad'}
        data-valid=${String(verdict.valid)}
      >
      ${verdict.valid
        ? `The chain is intact: ${verdict.checked} entries checked.`
        : `The chain is broken at entry ${verdict.firstBrokenId}, after ${verdict.checked} entries checked.`}
    </p>`}
    <${ErrorNote} error=${error} />
  </div>`;
}

function details(entry) {
  const text = JSON.stringify(entry.details || {});
  return text === '{}' ? '' : text;
}

export function Audit({ member }) {
  const { query } = useLocation();
  const members = useMembers(member);
  const filters = Object.fromEntries(FILTERS.map((name) => [name, query.get(name) || '']));
  const cursor = query.get('cursor') || '';
  const key = FILTERS.map((n) => filters[n]).join('|') + '|' + cursor;
  const page = useLoad(() => api.get('/team/audit', { ...filters, cursor, limit: PAGE_SIZE }), [key]);
  // Text filters apply when the person leaves the field or presses Enter, not at each key.
  const apply = (event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    setQuery({
      ...Object.fromEntries(FILTERS.map((n) => [n, String(form.get(n) || '').trim()])),
      cursor: '',
    });
  };
  const actors = [...members.values()];
  return html`<h1>Audit trail</h1>
    <div class="grid">
      <${Card} title="Chain" id="chain"><${Verify} /><//>
      <${Card} title="Export" id="export"><${Export} /><//>
    </div>
    <form class="row filters" aria-label="Filters" key=${key} onSubmit=${apply}>
      <label>
        Action
        <input
          id="filter-action"
          name="action"
          placeholder="payout.created"
          maxlength="64"
          value=${filters.action}
        />
      </label>
      <label>
        Actor
        ${actors.length > 0
          ? html`<select id="filter-actor" name="actorId" value=${filters.actorId}>
              <option value="">Anyone</option>
              ${actors.map((m) => html`<option value=${m.id}>${m.email}</option>`)}
              ${filters.actorId && !members.has(filters.actorId) && html`<option value=${filters.actorId}>${filters.actorId}</option>`}
            </select>`
          : html`<input
              id="filter-actor"
              name="actorId"
              placeholder="usr_… or key_…"
              maxlength="64"
              value=${filters.actorId}
            />`}
      </label>
      <label>
        From
        <input id="filter-from" name="from" type="date" value=${filters.from} />
      </label>
      <label>
        To
        <input id="filter-to" name="to" type="date" value=${filters.to} />
      </label>
      <button type="submit" id="apply-filters">Apply</button>
      ${FILTERS.some((n) => filters[n]) &&
      html`<button
          type="button"
          class="link"
          onClick=${() => setQuery({ action: '', actorId: '', from: '', to: '', cursor: '' })}
        >
        Clear filters
      </button>`}
    </form>
    <${ErrorNote} error=${page.error} />
    ${page.loading && html`<${Loading} what="Loading the audit trail" />`}
    ${page.data && page.data.data.length === 0 && html`<${Empty}>No entries match.<//>`}
    ${page.data &&
    page.data.data.length > 0 &&
    html`<div
        class="table-wrap"
        tabindex="0"
        role="region"
        aria-label="Audit entries"
      ><table id="audit-table">
      <thead>
        <tr>
          <th scope="col">When</th>
          <th scope="col">Action</th>
          <th scope="col">Actor</th>
          <th scope="col">Target</th>
          <th scope="col">Details</th>
          <th scope="col">IP</th>
        </tr>
      </thead>
      <tbody>
        ${page.data.data.map(
          (e) => html`<tr data-id=${e.id} data-action=${e.action}>
            <td>${dateTime(e.at)}</td>
            <td><code>${e.action}</code></td>
            <td>${e.actor.type === 'user' ? who(members, e.actor.id, member) : `${e.actor.type} ${e.actor.id || ''}`}</td>
            <td>${e.target.type} <code>${e.target.id || ''}</code></td>
            <td class="details"><code>${details(e)}</code></td>
            <td>${e.ip || ''}</td>
          </tr>`,
        )}
      </tbody>
    </table></div>`}
    <${Pager} page=${page.data} cursor=${cursor} />`;
}
