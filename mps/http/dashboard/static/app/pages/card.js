// One card: its balance, funding and withdrawal (wallet to card and back), freeze, unfreeze and
// terminate, its spending controls and its authorizations. Every change is offered only to a role
// with cards:write, and none once the card is terminated.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { dateTime, label, money, toMajorText, toMinor } from '../format.js';
import { useLocation } from '../router.js';
import {
  ActionButton,
  Card,
  Empty,
  ErrorNote,
  heldText,
  Loading,
  Pager,
  Status,
  useLoad,
} from '../ui.js';
import { brand, cardName } from './cards.js';

const INTERVALS = ['per_transaction', 'daily', 'weekly', 'monthly', 'all_time'];
const PAGE_SIZE = 20;

function MoveMoney({ card, done }) {
  const [amount, setAmount] = useState('');
  const [error, setError] = useState(null);
  const [result, setResult] = useState(null);
  const [busy, setBusy] = useState(false);
  const move = (direction) => async () => {
    setError(null);
    setResult(null);
    const amountMinor = toMinor(amount, card.currency);
    if (amountMinor === null) {
      setError(new Error(`Enter an amount in ${card.currency}, such as 10.00.`));
      return;
    }
    // Company cards are topped up through their own route (interface: company cards).
    const base = direction === 'fund' && card.type === 'company' ? 'company-cards' : 'cards';
    setBusy(true);
    try {
      const answer = await api.post(`/merchant/${base}/${card.id}/${direction}`, { amountMinor });
      const waiting = heldText(answer);
      setResult(
        waiting ||
          `${direction === 'fund' ? 'Funded' : 'Withdrew'} ${money(amountMinor, card.currency)}.`,
      );
      setAmount('');
      done();
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  return html`<${Card} title="Fund or withdraw" id="move-money">
    <p class="muted small">Money moves between the available balance and the card.</p>
    <form class="row" onSubmit=${(e) => e.preventDefault()}>
      <label>
        Amount (${card.currency})
        <input
          id="move-amount"
          inputmode="decimal"
          value=${amount}
          onInput=${(e) => setAmount(e.currentTarget.value)}
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
  const [error, setError] = useState(null);
  const [saved, setSaved] = useState(false);
  const [busy, setBusy] = useState(false);
  const setLimit = (index, name) => (event) =>
    setLimits(
      limits.map((l, i) => (i === index ? { ...l, [name]: event.currentTarget.value } : l)),
    );
  const submit = async (event) => {
    event.preventDefault();
    setError(null);
    setSaved(false);
    const spendingLimits = [];
    for (const limit of limits) {
      const amountMinor = toMinor(limit.amount, card.currency);
      if (amountMinor === null) {
        setError(new Error(`Enter each limit in ${card.currency}, such as 100.00.`));
        return;
      }
      spendingLimits.push({ amountMinor, interval: limit.interval });
    }
    setBusy(true);
    try {
      await api.patch(`/merchant/cards/${card.id}/controls`, {
        spendingLimits,
        allowedCategories: categories(allowed),
        blockedCategories: categories(blocked),
      });
      setSaved(true);
      done();
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="stack controls-form" aria-label="Spending controls" onSubmit=${submit}>
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
        onInput=${(e) => setAllowed(e.currentTarget.value)}
      />
    </label>
    <label>
      Blocked categories (comma separated)
      <input
        id="blocked-categories"
        value=${blocked}
        onInput=${(e) => setBlocked(e.currentTarget.value)}
      />
    </label>
    <div><button type="submit" id="save-controls" disabled=${busy}>Save controls</button></div>
    ${saved && html`<p role="status" id="controls-saved">Controls saved.</p>`}
    <${ErrorNote} error=${error} />
  </form>`;
}

function Authorizations({ card, round }) {
  const { query } = useLocation();
  const cursor = query.get('cursor') || '';
  const page = useLoad(
    () => api.get(`/merchant/cards/${card.id}/transactions`, { cursor, limit: PAGE_SIZE }),
    [card.id, cursor, round],
  );
  const rows = page.data ? page.data.data : [];
  return html`<${Card} title="Authorizations" id="authorizations">
    <${ErrorNote} error=${page.error} />
    ${page.data && rows.length === 0 && html`<${Empty}>No authorizations yet.<//>`}
    ${
      rows.length > 0 &&
      html`<div class="table-wrap" tabindex="0" role="region" aria-label="Authorizations">
        <table>
          <thead>
            <tr>
              <th scope="col">Merchant</th>
              <th scope="col">Category</th>
              <th scope="col" class="amount">Amount</th>
              <th scope="col">Outcome</th>
              <th scope="col">When</th>
            </tr>
          </thead>
          <tbody>
            ${rows.map(
              (a) =>
                html`<tr data-id=${a.id}>
                  <td>${a.merchantName || '—'}</td>
                  <td>${a.merchantCategory || '—'}</td>
                  <td class="amount">${money(a.amountMinor, a.currency)}</td>
                  <td>
                    <${Status} status=${a.approved ? 'APPROVED' : 'DECLINED'} />
                    ${
                      a.declineReason &&
                      html` <span class="muted small">${label(a.declineReason)}</span>`
                    }
                  </td>
                  <td>${dateTime(a.createdAt)}</td>
                </tr>`,
            )}
          </tbody>
        </table>
      </div>`
    }
    <${Pager} cursor=${cursor} page=${page.data} />
  <//>`;
}

export function CardDetail({ member, params }) {
  const [id] = params;
  const [round, setRound] = useState(0);
  const again = () => setRound((n) => n + 1);
  const card = useLoad(() => api.get(`/merchant/cards/${encodeURIComponent(id)}`), [id, round]);
  if (card.error)
    return html`<h1>Card</h1>
      <${ErrorNote} error=${card.error} />`;
  if (!card.data)
    return html`<h1>Card</h1>
      <${Loading} />`;
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
        <dl class="facts">
          <dt>Balance</dt>
          <dd id="card-balance">${money(c.balanceMinor, c.currency)}</dd>
          <dt>Kind</dt>
          <dd>${label(c.type)} card</dd>
          <dt>${c.type === 'company' ? 'Nickname' : 'Cardholder'}</dt>
          <dd>${cardName(c)}</dd>
          <dt>Expires</dt>
          <dd>${String(c.expMonth).padStart(2, '0')}/${c.expYear}</dd>
          <dt>Issued</dt>
          <dd>${dateTime(c.createdAt)}</dd>
          <dt>Mode</dt>
          <dd>${c.livemode ? 'Live' : 'Test'}</dd>
        </dl>
      <//>
      <${Card} title="Spending controls" id="controls">
        <${LimitsList} controls=${c.controls || {}} currency=${c.currency} />
        ${can && html`<${EditControls} card=${c} done=${again}/>`}
      <//>
    </div>
    ${can && html`<${MoveMoney} card=${c} done=${again} />`}
    <${Authorizations} card=${c} round=${round} />`;
}
