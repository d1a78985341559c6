// The audit trail: entries newest first with their filters (action, actor, from, to) and cursor
// in the URL, the hash chain checked on request, and the whole trail downloaded as CSV or JSONL
// (the API streams it; the file is whole, whatever the filters show).
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { ClearFilters, Filters } from '../filters.js';
import { dateTime } from '../format.js';
import { useAction } from '../forms.js';
import { setQuery, useQuery } from '../router.js';
import { PagedTable } from '../table.js';
import { Card, ErrorNote, useLoad, useMembers, who } from '../ui.js';

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
  const [format, setFormat] = useState(null);
  const [done, setDone] = useState(null);
  const { busy, error, run } = useAction();
  const start = (chosen) => () => {
    setFormat(chosen);
    setDone(null);
    run(async () => {
      await exportTrail(chosen);
      setDone(chosen);
    });
  };
  const button = (chosen) =>
    html`<button
      type="button"
      class="secondary"
      id=${`export-${chosen}`}
      disabled=${busy}
      onClick=${start(chosen)}
    >
      ${busy && format === chosen ? 'Exporting…' : `Export ${chosen.toUpperCase()}`}
    </button>`;
  return html`<div class="stack">
    <div class="row">${['csv', 'jsonl'].map(button)}</div>
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
  const { busy, error, run } = useAction();
  const verify = () => run(async () => setVerdict(await api.get('/team/audit/verify')));
  return html`<div class="stack">
    <div class="row">
      <button type="button" class="secondary" id="verify-chain" disabled=${busy} onClick=${verify}>
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
  const members = useMembers(member);
  const { cursor, ...filters } = useQuery(...FILTERS, 'cursor');
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
  const columns = [
    { title: 'When', cell: (e) => dateTime(e.at) },
    { title: 'Action', cell: (e) => html`<code>${e.action}</code>` },
    {
      title: 'Actor',
      cell: (e) =>
        e.actor.type === 'user'
          ? who(members, e.actor.id, member)
          : `${e.actor.type} ${e.actor.id || ''}`,
    },
    { title: 'Target', cell: (e) => html`${e.target.type} <code>${e.target.id || ''}</code>` },
    { title: 'Details', className: 'details', cell: (e) => html`<code>${details(e)}</code>` },
    { title: 'IP', cell: (e) => e.ip || '' },
  ];
  return html`<h1>Audit trail</h1>
    <div class="grid">
      <${Card} title="Chain" id="chain"><${Verify} /><//>
      <${Card} title="Export" id="export"><${Export} /><//>
    </div>
    <${Filters} key=${key} onSubmit=${apply}>
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
      <${ClearFilters} values=${filters} />
    <//>
    <${PagedTable}
      page=${page}
      what="Loading the audit trail"
      id="audit-table"
      label="Audit entries"
      columns=${columns}
      rowProps=${(e) => ({ 'data-id': e.id, 'data-action': e.action })}
      empty="No entries match."
    />`;
}
