// Payouts: the list with its status filter and cursor in the URL, a payout requested to one of
// the bank accounts (which an approval policy may hold for a vote: the 202's request is shown),
// and cancelling one while it is PENDING.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { dateTime, label, money, toMinor } from '../format.js';
import { useLocation } from '../router.js';
import {
  ActionButton,
  Card,
  count,
  Empty,
  ErrorNote,
  FilterSelect,
  Loading,
  Pager,
  Status,
  useLoad,
} from '../ui.js';

export const PAYOUT_STATUSES = ['PENDING', 'IN_TRANSIT', 'PAID', 'FAILED', 'CANCELLED'];
const PAGE_SIZE = 20;
// The accounts a payout can go to, for the form and for naming each payout's destination; a
// company with more than this has them paged on the Balance view.
const ACCOUNTS_SHOWN = 100;

function RequestPayout({ member, accounts, done }) {
  const [accountId, setAccountId] = useState(accounts[0] ? accounts[0].id : '');
  const [amount, setAmount] = useState('');
  const [description, setDescription] = useState('');
  const [error, setError] = useState(null);
  const [outcome, setOutcome] = useState(null);
  const [busy, setBusy] = useState(false);
  const account = accounts.find((a) => a.id === accountId);
  if (accounts.length === 0) {
    return html`<${Empty}>Add a bank account on the <a href="/dashboard/balance">Balance</a> view to pay out to.<//>`;
  }
  const submit = async (event) => {
    event.preventDefault();
    setError(null);
    setOutcome(null);
    const amountMinor = toMinor(amount, account.currency);
    if (amountMinor === null) {
      setError(new Error(`Enter an amount in ${account.currency}, such as 100.00.`));
      return;
    }
    setBusy(true);
    try {
      const body = { amountMinor, currency: account.currency, bankAccountId: account.id };
      if (description.trim()) body.description = description.trim();
      const answer = await api.post('/merchant/payouts', body);
      setOutcome(answer);
      setAmount('');
      setDescription('');
      done();
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  const held = outcome && outcome.approvalRequest;
  return html`<form
      class="row"
      id="request-payout"
      aria-label="Request a payout"
      onSubmit=${submit}
    >
      <label>
        To
        <select
          id="payout-account"
          value=${accountId}
          onChange=${(e) => setAccountId(e.currentTarget.value)}
        >
          ${accounts.map(
            (a) => html`<option value=${a.id}>${a.accountNumberMasked} · ${a.currency} · ${a.accountHolderName}</option>`,
          )}
        </select>
      </label>
      <label>
        Amount (${account.currency})
        <input
          id="payout-amount"
          inputmode="decimal"
          required
          value=${amount}
          onInput=${(e) => setAmount(e.currentTarget.value)}
        />
      </label>
      <label>
        Description (optional)
        <input
          id="payout-description"
          maxlength="200"
          value=${description}
          onInput=${(e) => setDescription(e.currentTarget.value)}
        />
      </label>
      <button type="submit" id="request-payout-submit" disabled=${busy}>Request payout</button>
    </form>
    ${held &&
    html`<div class="notice" role="status" id="payout-held">
      <p>
        ${'This payout is above the approval threshold, so nothing was paid out yet: approval request '}
        <code>${held.id}</code>
        ${` is waiting for ${count(held.requiredApprovals, 'teammate')} to approve it.`}
      </p>
      ${member.scopes.includes('team:read') &&
      html`<p><a href="/dashboard/approvals">See it in Approvals</a></p>`}
    </div>`}
    ${outcome &&
    !held &&
    html`<p role="status" id="payout-created">
      ${'Payout '}<code>${outcome.id}</code>
      ${` of ${money(outcome.amountMinor, outcome.currency)} is ${label(outcome.status).toLowerCase()}.`}
    </p>`}
    <${ErrorNote} error=${error} />`;
}

function PayoutTable({ payouts, accounts, canWrite, changed }) {
  if (payouts.length === 0) return html`<${Empty}>No payouts match.<//>`;
  const byId = new Map(accounts.map((a) => [a.id, a]));
  return html`<div
      class="table-wrap"
      tabindex="0"
      role="region"
      aria-label="Payouts"
    ><table id="payouts-table">
    <thead>
      <tr>
        <th scope="col">Payout</th>
        <th scope="col" class="amount">Amount</th>
        <th scope="col">Status</th>
        <th scope="col">To</th>
        <th scope="col">Description</th>
        <th scope="col">Created</th>
        <th scope="col">Arrival</th>
        ${canWrite && html`<th scope="col"><span class="visually-hidden">Actions</span></th>`}
      </tr>
    </thead>
    <tbody>
      ${payouts.map((p) => {
        const account = byId.get(p.bankAccountId);
        return html`<tr data-id=${p.id} data-status=${p.status}>
          <td><code>${p.id}</code>${p.automatic && html` <span class="muted small">automatic</span>`}</td>
          <td class="amount">${money(p.amountMinor, p.currency)}</td>
          <td>
            <${Status} status=${p.status} />
            ${p.failureReason && html`<div class="muted small">${p.failureReason}</div>`}
          </td>
          <td>${account ? account.accountNumberMasked : p.bankAccountId}</td>
          <td>${p.description || ''}</td>
          <td>${dateTime(p.createdAt)}</td>
          <td>${p.arrivalAt ? dateTime(p.arrivalAt) : '—'}</td>
          ${canWrite &&
          html`<td>
            ${p.status === 'PENDING' &&
            html`<${ActionButton}
              id=${`cancel-${p.id}`}
              inRow
              tone="danger"
              text="Cancel"
              question="Cancel this payout?"
              yes="Yes, cancel it"
              act=${async () => {
                await api.post(`/merchant/payouts/${encodeURIComponent(p.id)}/cancel`);
                changed();
              }}
            />`}
          </td>`}
        </tr>`;
      })}
    </tbody>
  </table></div>`;
}

export function Payouts({ member }) {
  const { query } = useLocation();
  const status = query.get('status') || '';
  const cursor = query.get('cursor') || '';
  const canWrite = member.scopes.includes('payouts:write');
  const accounts = useLoad(
    () => api.get('/merchant/bank-accounts', { limit: ACCOUNTS_SHOWN }).then((p) => p.data),
    [],
  );
  const page = useLoad(
    () => api.get('/merchant/payouts', { status, cursor, limit: PAGE_SIZE }),
    [status, cursor],
  );
  return html`<h1>Payouts</h1>
    ${canWrite &&
    html`<${Card} title="Request a payout" id="new-payout">
      <${ErrorNote} error=${accounts.error} />
      ${accounts.data && html`<${RequestPayout}
        member=${member}
        accounts=${accounts.data}
        done=${page.reload}
      />`}
    <//>`}
    <form class="row filters" aria-label="Filters" onSubmit=${(e) => e.preventDefault()}>
      <${FilterSelect}
        id="filter-status"
        name="Status"
        value=${status}
        options=${PAYOUT_STATUSES}
        param="status"
      />
    </form>
    <${ErrorNote} error=${page.error} />
    ${page.loading && html`<${Loading} what="Loading payouts" />`}
    ${page.data &&
    html`<${PayoutTable}
      payouts=${page.data.data}
      accounts=${accounts.data || []}
      canWrite=${canWrite}
      changed=${page.reload}
    />`}
    <${Pager} page=${page.data} cursor=${cursor} />`;
}
