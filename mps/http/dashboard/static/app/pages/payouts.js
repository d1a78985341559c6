// Payouts: the list with its status filter and cursor in the URL, a payout requested to one of
// the bank accounts (which an approval policy may hold for a vote: the 202's request is shown),
// and cancelling one while it is PENDING.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { FilterSelect, Filters } from '../filters.js';
import { dateTime, label, money, toMinor } from '../format.js';
import { typed, useAction } from '../forms.js';
import { useQuery } from '../router.js';
import { PagedTable } from '../table.js';
import { ActionButton, Card, count, Empty, ErrorNote, Status, useLoad } from '../ui.js';

export const PAYOUT_STATUSES = ['PENDING', 'IN_TRANSIT', 'PAID', 'FAILED', 'CANCELLED'];
const PAGE_SIZE = 20;
// The accounts a payout can go to, for the form and for naming each payout's destination; a
// company with more than this has them paged on the Balance view.
const ACCOUNTS_SHOWN = 100;

function RequestPayout({ member, accounts, done }) {
  const [accountId, setAccountId] = useState(accounts[0] ? accounts[0].id : '');
  const [amount, setAmount] = useState('');
  const [description, setDescription] = useState('');
  const [outcome, setOutcome] = useState(null);
  const { busy, error, submit } = useAction();
  const account = accounts.find((a) => a.id === accountId);
  if (accounts.length === 0) {
    return html`<${Empty}>Add a bank account on the <a href="/dashboard/balance">Balance</a> view to pay out to.<//>`;
  }
  const request = submit(async () => {
    setOutcome(null);
    const amountMinor = toMinor(amount, account.currency);
    if (amountMinor === null) {
      throw new Error(`Enter an amount in ${account.currency}, such as 100.00.`);
    }
    const body = { amountMinor, currency: account.currency, bankAccountId: account.id };
    if (description.trim()) body.description = description.trim();
    setOutcome(await api.post('/merchant/payouts', body));
    setAmount('');
    setDescription('');
    done();
  });
  const held = outcome && outcome.approvalRequest;
  return html`<form
      class="row"
      id="request-payout"
      aria-label="Request a payout"
      onSubmit=${request}
    >
      <label>
        To
        <select
          id="payout-account"
          value=${accountId}
          onChange=${typed(setAccountId)}
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
          onInput=${typed(setAmount)}
        />
      </label>
      <label>
        Description (optional)
        <input
          id="payout-description"
          maxlength="200"
          value=${description}
          onInput=${typed(setDescription)}
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

/** The payouts' columns: each names its bank account from `accounts` where it is known. */
function payoutColumns(accounts, canWrite, changed) {
  const masked = new Map(accounts.map((a) => [a.id, a.accountNumberMasked]));
  const cancel = (p) => async () => {
    await api.post(`/merchant/payouts/${encodeURIComponent(p.id)}/cancel`);
    changed();
  };
  return [
    {
      title: 'Payout',
      cell: (p) =>
        html`<code>${p.id}</code>${p.automatic && html` <span class="muted small">automatic</span>`}`,
    },
    { title: 'Amount', amount: true, cell: (p) => money(p.amountMinor, p.currency) },
    {
      title: 'Status',
      cell: (p) => html`<${Status} status=${p.status} />
        ${p.failureReason && html`<div class="muted small">${p.failureReason}</div>`}`,
    },
    { title: 'To', cell: (p) => masked.get(p.bankAccountId) || p.bankAccountId },
    { title: 'Description', cell: (p) => p.description || '' },
    { title: 'Created', cell: (p) => dateTime(p.createdAt) },
    { title: 'Arrival', cell: (p) => (p.arrivalAt ? dateTime(p.arrivalAt) : '—') },
    canWrite && {
      title: 'Actions',
      hidden: true,
      cell: (p) =>
        p.status === 'PENDING' &&
        html`<${ActionButton}
          id=${`cancel-${p.id}`}
          inRow
          tone="danger"
          text="Cancel"
          question="Cancel this payout?"
          yes="Yes, cancel it"
          act=${cancel(p)}
        />`,
    },
  ];
}

export function Payouts({ member }) {
  const { status, cursor } = useQuery('status', 'cursor');
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
    <${Filters}>
      <${FilterSelect} value=${status} options=${PAYOUT_STATUSES} />
    <//>
    <${PagedTable}
      page=${page}
      what="Loading payouts"
      id="payouts-table"
      label="Payouts"
      columns=${payoutColumns(accounts.data || [], canWrite, page.reload)}
      rowProps=${(p) => ({ 'data-id': p.id, 'data-status': p.status })}
      empty="No payouts match."
    />`;
}
