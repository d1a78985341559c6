// Balance: what is available and pending in each currency (never summed across currencies), and
// the bank accounts payouts go to: listed by cursor, added and removed by a role with
// payouts:write (the owners are told of each change by email).
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { dateTime, money } from '../format.js';
import { useLocation } from '../router.js';
import { ActionButton, Card, Empty, ErrorNote, Loading, Pager, Status, useLoad } from '../ui.js';
import { useCurrencies } from './payments.js';

const PAGE_SIZE = 20;

function Balances() {
  const balances = useLoad(() => api.get('/merchant/balance'), []);
  // A currency where nothing ever moved says nothing; each one shown stands alone.
  const moved = (b) => [b.availableMinor, b.pendingMinor, b.reservedMinor].some((v) => v !== '0');
  const shown = balances.data && balances.data.data.filter(moved);
  return html`<${Card} title="Balance by currency" id="balance-table">
    <${ErrorNote} error=${balances.error} />
    ${balances.loading && html`<${Loading} />`}
    ${shown && shown.length === 0 && html`<${Empty}>No money has moved yet.<//>`}
    ${shown &&
    shown.length > 0 &&
    html`<div class="table-wrap" tabindex="0" role="region" aria-label="Balance by currency"><table>
      <thead>
        <tr>
          <th scope="col">Currency</th>
          <th scope="col" class="amount">Available</th>
          <th scope="col" class="amount">Pending</th>
          <th scope="col" class="amount">Reserved</th>
        </tr>
      </thead>
      <tbody>
        ${shown.map(
          (b) => html`<tr data-currency=${b.currency}>
            <th scope="row">${b.currency}</th>
            <td class="amount available">${money(b.availableMinor, b.currency)}</td>
            <td class="amount pending">${money(b.pendingMinor, b.currency)}</td>
            <td class="amount">${money(b.reservedMinor, b.currency)}</td>
          </tr>`,
        )}
      </tbody>
    </table></div>
    <p class="muted small">
      Pending money becomes available once it settles; reserved money is held for payouts and
      refunds on their way.
    </p>`}
  <//>`;
}

function AddAccount({ member, done }) {
  const currencies = useCurrencies(member);
  const [fields, setFields] = useState({
    accountHolderName: '',
    accountNumber: '',
    bankCode: '',
    currency: 'USD',
    country: '',
  });
  const [error, setError] = useState(null);
  const [added, setAdded] = useState(null);
  const [busy, setBusy] = useState(false);
  const field = (name) => (event) => setFields({ ...fields, [name]: event.currentTarget.value });
  const submit = async (event) => {
    event.preventDefault();
    setError(null);
    setAdded(null);
    setBusy(true);
    try {
      const account = await api.post('/merchant/bank-accounts', {
        ...fields,
        country: fields.country.trim().toUpperCase(),
      });
      setAdded(account);
      setFields({ ...fields, accountHolderName: '', accountNumber: '', bankCode: '' });
      done();
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="row" id="add-account" aria-label="Add a bank account" onSubmit=${submit}>
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

export function BankAccountTable({ accounts, canWrite, removed }) {
  if (accounts.length === 0) return html`<${Empty}>No bank accounts yet.<//>`;
  return html`<div
      class="table-wrap"
      tabindex="0"
      role="region"
      aria-label="Bank accounts"
    ><table id="accounts-table">
    <thead>
      <tr>
        <th scope="col">Account</th>
        <th scope="col">Holder</th>
        <th scope="col">Bank code</th>
        <th scope="col">Currency</th>
        <th scope="col">Country</th>
        <th scope="col">Status</th>
        <th scope="col">Added</th>
        ${canWrite && html`<th scope="col"><span class="visually-hidden">Actions</span></th>`}
      </tr>
    </thead>
    <tbody>
      ${accounts.map(
        (a) => html`<tr data-id=${a.id}>
          <td><code>${a.accountNumberMasked}</code></td>
          <td>${a.accountHolderName}</td>
          <td>${a.bankCode}</td>
          <td>${a.currency}</td>
          <td>${a.country}</td>
          <td><${Status} status=${a.status} /></td>
          <td>${dateTime(a.createdAt)}</td>
          ${canWrite &&
          html`<td>
            <${ActionButton}
              id=${`remove-${a.id}`}
              inRow
              tone="danger"
              text="Remove"
              question=${`Remove ${a.accountNumberMasked}?`}
              yes="Yes, remove it"
              act=${async () => {
                await api.delete(`/merchant/bank-accounts/${encodeURIComponent(a.id)}`);
                removed();
              }}
            />
          </td>`}
        </tr>`,
      )}
    </tbody>
  </table></div>`;
}

function BankAccounts({ member }) {
  const { query } = useLocation();
  const cursor = query.get('cursor') || '';
  const canWrite = member.scopes.includes('payouts:write');
  const page = useLoad(
    () => api.get('/merchant/bank-accounts', { cursor, limit: PAGE_SIZE }),
    [cursor],
  );
  return html`<${Card} title="Bank accounts" id="bank-accounts">
    <p class="muted small">Payouts go to these accounts. Only the last four characters are shown.</p>
    <${ErrorNote} error=${page.error} />
    ${page.loading && html`<${Loading} what="Loading bank accounts" />`}
    ${page.data && html`<${BankAccountTable}
        accounts=${page.data.data}
        canWrite=${canWrite}
        removed=${page.reload}
      />`}
    <${Pager} page=${page.data} cursor=${cursor} prefix="accounts-" />
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
