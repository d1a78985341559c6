// Balance: what is available and pending in each currency (never summed across currencies), and
// the bank accounts payouts go to: listed by cursor, added and removed by a role with
// payouts:write (the owners are told of each change by email).
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { dateTime, money } from '../format.js';
import { useAction, useFields } from '../forms.js';
import { useQuery } from '../router.js';
import { PagedTable, Table } from '../table.js';
import { ActionButton, Card, Empty, ErrorNote, Loading, Status, useLoad } from '../ui.js';
import { useCurrencies } from './payments.js';

const PAGE_SIZE = 20;

/**
 * The balance per currency where money ever moved (each one stands alone: currencies are never
 * summed), and what to say while it loads, failed or is empty (`loaded`).
 */
export function useBalances() {
  const balances = useLoad(() => api.get('/merchant/balance'), []);
  const moved = (b) => [b.availableMinor, b.pendingMinor, b.reservedMinor].some((v) => v !== '0');
  const shown = balances.data && balances.data.data.filter(moved);
  const loaded = html`<${ErrorNote} error=${balances.error} />
    ${balances.loading && html`<${Loading} />`}
    ${shown && shown.length === 0 && html`<${Empty}>No money has moved yet.<//>`}`;
  return { shown, loaded };
}

const BALANCE_COLUMNS = [
  { title: 'Currency', rowHeader: true, cell: (b) => b.currency },
  {
    title: 'Available',
    amount: true,
    className: 'available',
    cell: (b) => money(b.availableMinor, b.currency),
  },
  {
    title: 'Pending',
    amount: true,
    className: 'pending',
    cell: (b) => money(b.pendingMinor, b.currency),
  },
  { title: 'Reserved', amount: true, cell: (b) => money(b.reservedMinor, b.currency) },
];

function Balances() {
  const { shown, loaded } = useBalances();
  return html`<${Card} title="Balance by currency" id="balance-table">
    ${loaded}
    ${
      shown &&
      shown.length > 0 &&
      html`<${Table}
          label="Balance by currency"
          columns=${BALANCE_COLUMNS}
          rows=${shown}
          rowProps=${(b) => ({ 'data-currency': b.currency })}
        />
        <p class="muted small">
          Pending money becomes available once it settles; reserved money is held for payouts and
          refunds on their way.
        </p>`
    }
  <//>`;
}

function AddAccount({ member, done }) {
  const currencies = useCurrencies(member);
  const [fields, field, setFields] = useFields({
    accountHolderName: '',
    accountNumber: '',
    bankCode: '',
    currency: 'USD',
    country: '',
  });
  const [added, setAdded] = useState(null);
  const { busy, error, submit } = useAction();
  const add = submit(async () => {
    setAdded(null);
    const country = fields.country.trim().toUpperCase();
    setAdded(await api.post('/merchant/bank-accounts', { ...fields, country }));
    setFields({ ...fields, accountHolderName: '', accountNumber: '', bankCode: '' });
    done();
  });
  return html`<form class="row" id="add-account" aria-label="Add a bank account" onSubmit=${add}>
    <label>
      Account holder
      <input
        id="account-holder"
        required
        maxlength="200"
        value=${fields.accountHolderName}
        onInput=${field('accountHolderName')}
      />
    </label>
    <label>
      Account number or IBAN
      <input
        id="account-number"
        required
        autocomplete="off"
        value=${fields.accountNumber}
        onInput=${field('accountNumber')}
      />
    </label>
    <label>
      Bank code
      <input
        id="bank-code"
        required
        maxlength="34"
        value=${fields.bankCode}
        onInput=${field('bankCode')}
      />
    </label>
    <label>
      Currency
      <select id="account-currency" value=${fields.currency} onChange=${field('currency')}>
        ${currencies.map((c) => html`<option value=${c}>${c}</option>`)}
      </select>
    </label>
    <label>
      Country
      <input
        id="account-country"
        required
        maxlength="2"
        size="4"
        placeholder="US"
        value=${fields.country}
        onInput=${field('country')}
      />
    </label>
    <button type="submit" id="add-account-submit" disabled=${busy}>Add bank account</button>
    ${added &&
    html`<p role="status" id="account-added" class="grow">
      Added ${added.accountNumberMasked} (${added.currency}). The owners were told by email.
    </p>`}
    <${ErrorNote} error=${error} />
  </form>`;
}

function accountColumns(canWrite, removed) {
  const remove = (a) => async () => {
    await api.delete(`/merchant/bank-accounts/${encodeURIComponent(a.id)}`);
    removed();
  };
  return [
    { title: 'Account', cell: (a) => html`<code>${a.accountNumberMasked}</code>` },
    { title: 'Holder', cell: (a) => a.accountHolderName },
    { title: 'Bank code', cell: (a) => a.bankCode },
    { title: 'Currency', cell: (a) => a.currency },
    { title: 'Country', cell: (a) => a.country },
    { title: 'Status', cell: (a) => html`<${Status} status=${a.status} />` },
    { title: 'Added', cell: (a) => dateTime(a.createdAt) },
    canWrite && {
      title: 'Actions',
      hidden: true,
      cell: (a) =>
        html`<${ActionButton}
          id=${`remove-${a.id}`}
          inRow
          tone="danger"
          text="Remove"
          question=${`Remove ${a.accountNumberMasked}?`}
          yes="Yes, remove it"
          act=${remove(a)}
        />`,
    },
  ];
}

function BankAccounts({ member }) {
  const { cursor } = useQuery('cursor');
  const canWrite = member.scopes.includes('payouts:write');
  const page = useLoad(
    () => api.get('/merchant/bank-accounts', { cursor, limit: PAGE_SIZE }),
    [cursor],
  );
  return html`<${Card} title="Bank accounts" id="bank-accounts">
    <p class="muted small">Payouts go to these accounts. Only the last four characters are shown.</p>
    <${PagedTable}
      page=${page}
      prefix="accounts-"
      what="Loading bank accounts"
      id="accounts-table"
      label="Bank accounts"
      columns=${accountColumns(canWrite, page.reload)}
      empty="No bank accounts yet."
    />
    ${canWrite && html`<h3>Add a bank account</h3><${AddAccount} member=${member} done=${page.reload} />`}
  <//>`;
}

export function Balance({ member }) {
  return html`<h1>Balance</h1>
    <div class="actions">
      <a class="button-link" href="/dashboard/payouts" id="to-payouts">Payouts</a>
    </div>
    <${Balances} />
    <${BankAccounts} member=${member} />`;
}
