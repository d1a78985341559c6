// One card: its balance, funding and withdrawal (wallet to card and back), freeze, unfreeze and
// terminate, its spending controls and its authorizations. Every change is offered only to a role
// with cards:write, and none once the card is terminated.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { dateTime, label, money, toMajorText, toMinor } from '../format.js';
import { typed, useAction } from '../forms.js';
import { useQuery } from '../router.js';
import { PagedTable } from '../table.js';
import {
  ActionButton,
  Card,
  ErrorNote,
  Facts,
  heldText,
  modeName,
  Status,
  useLoad,
  Waiting,
} from '../ui.js';
import { brand, cardName, expiry } from './cards.js';

const INTERVALS = ['per_transaction', 'daily', 'weekly', 'monthly', 'all_time'];
const PAGE_SIZE = 20;

function MoveMoney({ card, done }) {
  const [amount, setAmount] = useState('');
  const [result, setResult] = useState(null);
  const { busy, error, run } = useAction();
  const move = (direction) => () =>
    run(async () => {
      setResult(null);
      const amountMinor = toMinor(amount, card.currency);
      if (amountMinor === null) {
        throw new Error(`Enter an amount in ${card.currency}, such as 10.00.`);
      }
      // Company cards are topped up through their own route (interface: company cards).
      const base = direction === 'fund' && card.type === 'company' ? 'company-cards' : 'cards';
      const answer = await api.post(`/merchant/${base}/${card.id}/${direction}`, { amountMinor });
      const verb = direction === 'fund' ? 'Funded' : 'Withdrew';
      setResult(heldText(answer) || `${verb} ${money(amountMinor, card.currency)}.`);
      setAmount('');
      done();
    });
  return html`<${Card} title="Fund or withdraw" id="move-money">
    <p class="muted small">Money moves between the available balance and the card.</p>
    <form class="row" onSubmit=${(e) => e.preventDefault()}>
      <label>
        Amount (${card.currency})
        <input
          id="move-amount"
          inputmode="decimal"
          value=${amount}
          onInput=${typed(setAmount)}
        />
      </label>
      <button type="button" id="fund" disabled=${busy} onClick=${move('fund')}>Fund card</button>
      <button
        type="button"
        class="secondary"
        id="withdraw"
        disabled=${busy}
        onClick=${move('withdraw')}
      >
        Withdraw to balance
      </button>
    </form>
    ${result && html`<p role="status" id="move-result">${result}</p>`}
    <${ErrorNote} error=${error} />
  <//>`;
}

function LimitsList({ controls, currency }) {
  const limits = controls.spendingLimits || [];
  return html`<dl class="facts">
    <dt>Spending limits</dt>
    <dd id="limits">
      ${limits.length === 0 && 'None'}
      ${limits.map(
        (l) =>
          html`<span class="limit" data-interval=${l.interval}
            >${money(l.amountMinor, currency)} ${label(l.interval).toLowerCase()}</span
          >`,
      )}
    </dd>
    <dt>Allowed categories</dt>
    <dd>${(controls.allowedCategories || []).join(', ') || 'Any'}</dd>
    <dt>Blocked categories</dt>
    <dd>${(controls.blockedCategories || []).join(', ') || 'None'}</dd>
  </dl>`;
}

const categories = (text) =>
  text
    .split(',')
    .map((c) => c.trim())
    .filter(Boolean);

function EditControls({ card, done }) {
  const initial = card.controls || {};
  const [limits, setLimits] = useState(
    (initial.spendingLimits || []).map((l) => ({
      amount: toMajorText(l.amountMinor, card.currency),
      interval: l.interval,
    })),
  );
  const [allowed, setAllowed] = useState((initial.allowedCategories || []).join(', '));
  const [blocked, setBlocked] = useState((initial.blockedCategories || []).join(', '));
  const [saved, setSaved] = useState(false);
  const { busy, error, submit } = useAction();
  const setLimit = (index, name) => (event) =>
    setLimits(
      limits.map((l, i) => (i === index ? { ...l, [name]: event.currentTarget.value } : l)),
    );
  const save = submit(async () => {
    setSaved(false);
    const spendingLimits = [];
    for (const limit of limits) {
      const amountMinor = toMinor(limit.amount, card.currency);
      if (amountMinor === null) {
        throw new Error(`Enter each limit in ${card.currency}, such as 100.00.`);
      }
      spendingLimits.push({ amountMinor, interval: limit.interval });
    }
    await api.patch(`/merchant/cards/${card.id}/controls`, {
      spendingLimits,
      allowedCategories: categories(allowed),
      blockedCategories: categories(blocked),
    });
    setSaved(true);
    done();
  });
  return html`<form class="stack controls-form" aria-label="Spending controls" onSubmit=${save}>
    ${limits.map(
      (limit, index) =>
        html`<div class="row" data-limit=${index}>
          <label>
            Limit (${card.currency})
            <input
              id=${`limit-amount-${index}`}
              inputmode="decimal"
              required
              value=${limit.amount}
              onInput=${setLimit(index, 'amount')}
            />
          </label>
          <label>
            Per
            <select
              id=${`limit-interval-${index}`}
              value=${limit.interval}
              onChange=${setLimit(index, 'interval')}
            >
              ${INTERVALS.map((i) => html`<option value=${i}>${label(i)}</option>`)}
            </select>
          </label>
          <button
            type="button"
            class="link"
            onClick=${() => setLimits(limits.filter((_, i) => i !== index))}
          >
            Remove
          </button>
        </div>`,
    )}
    <div>
      <button
        type="button"
        class="secondary"
        id="add-limit"
        disabled=${limits.length >= 10}
        onClick=${() => setLimits([...limits, { amount: '', interval: 'daily' }])}
      >
        Add a limit
      </button>
    </div>
    <label>
      Allowed categories (comma separated; empty allows any)
      <input
        id="allowed-categories"
        value=${allowed}
        onInput=${typed(setAllowed)}
      />
    </label>
    <label>
      Blocked categories (comma separated)
      <input
        id="blocked-categories"
        value=${blocked}
        onInput=${typed(setBlocked)}
      />
    </label>
    <div><button type="submit" id="save-controls" disabled=${busy}>Save controls</button></div>
    ${saved && html`<p role="status" id="controls-saved">Controls saved.</p>`}
    <${ErrorNote} error=${error} />
  </form>`;
}

const AUTHORIZATION_COLUMNS = [
  { title: 'Merchant', cell: (a) => a.merchantName || '—' },
  { title: 'Category', cell: (a) => a.merchantCategory || '—' },
  { title: 'Amount', amount: true, cell: (a) => money(a.amountMinor, a.currency) },
  {
    title: 'Outcome',
    cell: (a) => html`<${Status} status=${a.approved ? 'APPROVED' : 'DECLINED'} />
      ${a.declineReason && html` <span class="muted small">${label(a.declineReason)}</span>`}`,
  },
  { title: 'When', cell: (a) => dateTime(a.createdAt) },
];

function Authorizations({ card, round }) {
  const { cursor } = useQuery('cursor');
  const page = useLoad(
    () => api.get(`/merchant/cards/${card.id}/transactions`, { cursor, limit: PAGE_SIZE }),
    [card.id, cursor, round],
  );
  return html`<${Card} title="Authorizations" id="authorizations">
    <${PagedTable}
      page=${page}
      quiet
      what="Loading authorizations"
      label="Authorizations"
      columns=${AUTHORIZATION_COLUMNS}
      empty="No authorizations yet."
    />
  <//>`;
}

export function CardDetail({ member, params }) {
  const [id] = params;
  const [round, setRound] = useState(0);
  const again = () => setRound((n) => n + 1);
  const card = useLoad(() => api.get(`/merchant/cards/${encodeURIComponent(id)}`), [id, round]);
  if (!card.data) return html`<${Waiting} title="Card" load=${card} />`;
  const c = card.data;
  const can = member.scopes.includes('cards:write') && c.status !== 'TERMINATED';
  return html`<h1>${brand(c)} •••• ${c.last4} <${Status} status=${c.status} /></h1>
    <p class="muted" id="card-id">${cardName(c)} · ${c.id}</p>
    <div class="actions">
      ${
        can &&
        c.status === 'ACTIVE' &&
        html`<${ActionButton}
          id="freeze"
          text="Freeze card"
          tone="danger"
          question="Every authorization is declined while it is frozen. Freeze it?"
          yes="Yes, freeze it"
          act=${() => api.post(`/merchant/cards/${c.id}/freeze`)}
          done=${again}
        />`
      }
      ${
        can &&
        c.status === 'FROZEN' &&
        html`<${ActionButton}
          id="unfreeze"
          text="Unfreeze card"
          act=${() => api.post(`/merchant/cards/${c.id}/unfreeze`)}
          done=${again}
        />`
      }
      ${
        can &&
        html`<${ActionButton}
          id="terminate"
          text="Terminate card"
          tone="danger"
          question=${`The card stops for good and its ${money(c.balanceMinor, c.currency)} returns to the wallet. Terminate it?`}
          yes="Yes, terminate it"
          act=${() => api.post(`/merchant/cards/${c.id}/terminate`)}
          done=${again}
        />`
      }
    </div>
    <div class="grid">
      <${Card} title="Details" id="card-details">
        <${Facts}
          items=${[
            ['Balance', money(c.balanceMinor, c.currency), 'card-balance'],
            ['Kind', `${label(c.type)} card`],
            [c.type === 'company' ? 'Nickname' : 'Cardholder', cardName(c)],
            ['Expires', expiry(c)],
            ['Issued', dateTime(c.createdAt)],
            ['Mode', modeName(c.livemode)],
          ]}
        />
      <//>
      <${Card} title="Spending controls" id="controls">
        <${LimitsList} controls=${c.controls || {}} currency=${c.currency} />
        ${can && html`<${EditControls} card=${c} done=${again}/>`}
      <//>
    </div>
    ${can && html`<${MoveMoney} card=${c} done=${again} />`}
    <${Authorizations} card=${c} round=${round} />`;
}
