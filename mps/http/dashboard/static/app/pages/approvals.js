// Approvals: the inbox (requests waiting for this member's vote: approve or reject with a comment),
// every request with its votes (status filter and cursor in the URL), and the policies that
// decide which actions need a vote, per currency, edited by a role with team:write.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { FilterSelect, Filters } from '../filters.js';
import { dateTime, label, money, toMajorText, toMinor } from '../format.js';
import { typed, useAction } from '../forms.js';
import { useQuery } from '../router.js';
import { PagedTable } from '../table.js';
import {
  ActionButton,
  Card,
  count,
  Empty,
  ErrorNote,
  Loading,
  Pager,
  Status,
  useLoad,
  useMembers,
  who,
} from '../ui.js';
import { useCurrencies } from './payments.js';

const STATUSES = ['PENDING', 'EXECUTED', 'FAILED', 'REJECTED', 'CANCELLED', 'EXPIRED'];
const PAGE_SIZE = 20;
const ACTION_NAMES = {
  'payout.create': 'Payout',
  'refund.create': 'Refund',
  'card.issue': 'Card issue',
  'card.fund': 'Card funding',
};

/** What the request would do, in a sentence. Refund and card-funding payloads name no currency. */
function what(request) {
  const p = request.payload || {};
  switch (request.action) {
    case 'payout.create':
      return `Pay out ${money(p.amountMinor, p.currency)}${p.description ? ` (${p.description})` : ''}`;
    case 'refund.create':
      return `Refund ${p.amountMinor} in minor units of payment ${p.paymentId}`;
    case 'card.issue':
      return `Issue a ${p.type || ''} ${p.currency || ''} card${p.cardholderName ? ` for ${p.cardholderName}` : ''}`;
    case 'card.fund':
      return `Fund card ${p.cardId} with ${p.amountMinor} in minor units`;
    default:
      return label(request.action);
  }
}

function Votes({ request, members, member }) {
  const approvals = request.votes.filter((v) => v.decision === 'approve').length;
  return html`<div class="votes">
    <span class="muted small">${approvals} of ${request.requiredApprovals} approvals</span>
    ${request.votes.length > 0 &&
    html`<ul class="vote-list">
      ${request.votes.map(
        (v) => html`<li data-decision=${v.decision}>
          <strong>${v.decision === 'approve' ? 'Approved' : 'Rejected'}</strong>
          ${` by ${who(members, v.userId, member)} · `}
          <span class="muted small">${dateTime(v.at)}</span>
          ${v.comment && html`<div class="comment">“${v.comment}”</div>`}
        </li>`,
      )}
    </ul>`}
  </div>`;
}

function Vote({ request, decided }) {
  const [comment, setComment] = useState('');
  // A decided request leaves the inbox: it stays busy till then, so it is not voted on twice.
  const { busy, error, run } = useAction({ once: true });
  const cast = (decision) => () =>
    run(async () => {
      const body = comment.trim() ? { comment: comment.trim() } : {};
      const path = `/team/approvals/requests/${encodeURIComponent(request.id)}/${decision}`;
      decided(await api.post(path, body));
    });
  const commentId = `comment-${request.id}`;
  return html`<div class="vote" role="group" aria-label=${`Vote on ${request.id}`}>
    <label for=${commentId} class="small muted">Comment (optional)</label>
    <textarea
      id=${commentId}
      rows="2"
      maxlength="1000"
      value=${comment}
      onInput=${typed(setComment)}
    ></textarea>
    <div class="row">
      <button
        type="button"
        id=${`approve-${request.id}`}
        disabled=${busy}
        onClick=${cast('approve')}
      >Approve</button>
      <button
        type="button"
        class="danger"
        id=${`reject-${request.id}`}
        disabled=${busy}
        onClick=${cast('reject')}
      >Reject</button>
    </div>
    <${ErrorNote} error=${error} />
  </div>`;
}

function Inbox({ member, members, changed }) {
  const { inboxCursor: cursor } = useQuery('inboxCursor');
  const [outcomes, setOutcomes] = useState([]);
  // The server applies the voting rules (awaitingMyVote), so every page is whole.
  const open = useLoad(
    () =>
      api.get('/team/approvals/requests', { awaitingMyVote: true, cursor, limit: PAGE_SIZE }),
    [cursor],
  );
  const waiting = open.data ? open.data.data : [];
  const decided = (after) => {
    setOutcomes([...outcomes, after]);
    open.reload();
    changed();
  };
  return html`<${Card} title="Waiting for your vote" id="inbox">
    ${outcomes.map(
      (after) => html`<p role="status" class="notice" data-id=${after.id}>
        ${`${ACTION_NAMES[after.action] || after.action} request `}<code>${after.id}</code>
        ${` is now ${label(after.status).toLowerCase()}${after.error ? `: ${after.error.message || after.error}` : ''}.`}
      </p>`,
    )}
    <${ErrorNote} error=${open.error} />
    ${open.loading && html`<${Loading} />`}
    ${open.data && waiting.length === 0 && html`<${Empty}>Nothing is waiting for your vote.<//>`}
    <ul class="inbox">
      ${waiting.map(
        (r) => html`<li class="inbox-item" data-id=${r.id}>
          <div>
            <strong>${what(r)}</strong>
            <div class="muted small">
              ${[
                ACTION_NAMES[r.action] || r.action,
                `asked by ${who(members, r.requestedByUserId || r.requestedBy, member)}`,
                dateTime(r.createdAt),
                `expires ${dateTime(r.expiresAt)}`,
              ].join(' · ')}
            </div>
            <${Votes} request=${r} members=${members} member=${member} />
          </div>
          <${Vote} request=${r} decided=${decided} />
        </li>`,
      )}
    </ul>
    <${Pager} page=${open.data} param="inboxCursor" prefix="inbox-" />
  <//>`;
}

function Requests({ member, members, round }) {
  const { status, cursor } = useQuery('status', 'cursor');
  const page = useLoad(
    () => api.get('/team/approvals/requests', { status, cursor, limit: PAGE_SIZE }),
    [status, cursor, round],
  );
  const withdraw = (r) => async () => {
    await api.post(`/team/approvals/requests/${encodeURIComponent(r.id)}/cancel`);
    page.reload();
  };
  const columns = [
    { title: 'Request', cell: (r) => html`<code>${r.id}</code>` },
    { title: 'What', className: 'wrap', cell: what },
    { title: 'Status', cell: (r) => html`<${Status} status=${r.status} />` },
    { title: 'Asked by', cell: (r) => who(members, r.requestedByUserId || r.requestedBy, member) },
    {
      title: 'Votes',
      className: 'wrap',
      cell: (r) => html`<${Votes} request=${r} members=${members} member=${member} />`,
    },
    { title: 'Created', cell: (r) => dateTime(r.createdAt) },
    {
      title: 'Actions',
      hidden: true,
      cell: (r) =>
        r.status === 'PENDING' &&
        r.requestedByUserId === member.user.id &&
        html`<${ActionButton}
          id=${`withdraw-${r.id}`}
          inRow
          tone="danger"
          text="Withdraw"
          question="Withdraw this request?"
          yes="Yes, withdraw"
          act=${withdraw(r)}
        />`,
    },
  ];
  return html`<${Card} title="All requests" id="requests">
    <${Filters} label="Request filters">
      <${FilterSelect} value=${status} options=${STATUSES} />
    <//>
    <${PagedTable}
      page=${page}
      what="Loading requests"
      id="requests-table"
      label="Approval requests"
      columns=${columns}
      rowProps=${(r) => ({ 'data-id': r.id, 'data-status': r.status })}
      empty="No approval requests match."
    />
  <//>`;
}

function PolicyForm({ policy, currencies, saved, close }) {
  const [enabled, setEnabled] = useState(policy.enabled);
  const [required, setRequired] = useState(String(policy.requiredApprovals));
  // The company's currencies, and any other a threshold was set in before.
  const shown = [...new Set([...currencies, ...Object.keys(policy.thresholds)])];
  const [limits, setLimits] = useState(
    Object.fromEntries(
      shown.map((c) => [c, policy.thresholds[c] ? toMajorText(policy.thresholds[c], c) : '']),
    ),
  );
  const { busy, error, submit } = useAction();
  const save = submit(async () => {
    const thresholds = {};
    for (const [currency, text] of Object.entries(limits)) {
      if (!text.trim()) continue;
      const minor = toMinor(text, currency);
      if (minor === null) {
        throw new Error(
          `Enter the ${currency} threshold as an amount, such as 1000.00, or leave it empty.`,
        );
      }
      thresholds[currency] = minor;
    }
    const after = await api.put(`/team/approvals/policies/${encodeURIComponent(policy.action)}`, {
      enabled,
      thresholds,
      requiredApprovals: Number.parseInt(required, 10) || 1,
    });
    saved(after);
  });
  const id = policy.action.replace('.', '-');
  return html`<form class="stack policy-form" id=${`policy-form-${id}`} onSubmit=${save}>
    <label class="check">
      <input
        type="checkbox"
        id=${`policy-enabled-${id}`}
        checked=${enabled}
        onChange=${(e) => setEnabled(e.currentTarget.checked)}
      />
      Needs approval above a threshold
    </label>
    <label class="small muted">
      Approvals needed
      <input
        type="number"
        min="1"
        max="10"
        id=${`policy-required-${id}`}
        value=${required}
        onInput=${typed(setRequired)}
      />
    </label>
    <fieldset>
      <legend class="small muted">Threshold per currency (empty: never needs approval in it)</legend>
      <div class="thresholds">
        ${shown.map(
          (c) => html`<label class="small muted">
            ${c}
            <input
              id=${`threshold-${id}-${c}`}
              inputmode="decimal"
              value=${limits[c]}
              onInput=${(e) => setLimits({ ...limits, [c]: e.currentTarget.value })}
            />
          </label>`,
        )}
      </div>
    </fieldset>
    <div class="row">
      <button type="submit" id=${`policy-save-${id}`} disabled=${busy}>Save policy</button>
      <button type="button" class="secondary" onClick=${close}>Close</button>
    </div>
    <${ErrorNote} error=${error} />
  </form>`;
}

function Policies({ member }) {
  const policies = useLoad(() => api.get('/team/approvals/policies'), []);
  const currencies = useCurrencies(member);
  const [editing, setEditing] = useState(null);
  const canWrite = member.scopes.includes('team:write');
  return html`<${Card} title="Policies" id="policies">
    <p class="muted small">
      An action above its threshold in a currency waits for teammates' approval instead of running.
    </p>
    <${ErrorNote} error=${policies.error} />
    ${policies.loading && html`<${Loading} />`}
    ${policies.data &&
    html`<ul class="policies">
      ${policies.data.data.map((p) => {
        const id = p.action.replace('.', '-');
        const limits = Object.entries(p.thresholds);
        return html`<li class="policy" id=${`policy-${id}`} data-action=${p.action}>
          <div class="row policy-head">
            <strong>${ACTION_NAMES[p.action] || p.action}</strong>
            <span class="muted small policy-summary">
              ${!p.enabled || limits.length === 0
                ? 'Off: never needs approval'
                : `Above ${limits.map(([c, m]) => money(m, c)).join(', ')}: ${count(p.requiredApprovals, 'approval')}`}
            </span>
            ${canWrite &&
            editing !== p.action &&
            html`<button
                type="button"
                class="secondary"
                id=${`policy-edit-${id}`}
                onClick=${() => setEditing(p.action)}
              >
              Edit
            </button>`}
          </div>
          ${editing === p.action &&
          html`<${PolicyForm}
            policy=${p}
            currencies=${currencies}
            saved=${() => {
              setEditing(null);
              policies.reload();
            }}
            close=${() => setEditing(null)}
          />`}
        </li>`;
      })}
    </ul>`}
  <//>`;
}

export function Approvals({ member }) {
  const members = useMembers(member);
  // A vote in the inbox shows in the list of every request too.
  const [round, setRound] = useState(0);
  return html`<h1>Approvals</h1>
    <${Inbox} member=${member} members=${members} changed=${() => setRound((n) => n + 1)} />
    <${Requests} member=${member} members=${members} round=${round} />
    <${Policies} member=${member} />`;
}
