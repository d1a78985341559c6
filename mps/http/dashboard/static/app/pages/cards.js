// Cards: member and company cards listed with their kind and status filters and cursor in the
// URL, and issuing either kind (offered only to a role with cards:write).
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { FilterSelect, Filters } from '../filters.js';
import { label, money, toMinor } from '../format.js';
import { useAction, useFields } from '../forms.js';
import { navigate, setQuery, useQuery } from '../router.js';
import { PagedTable } from '../table.js';
import { ErrorNote, heldText, Status, useLoad } from '../ui.js';
import { useCurrencies } from './payments.js';

const TYPES = ['member', 'company'];
const STATUSES = ['ACTIVE', 'FROZEN', 'TERMINATED'];
const PAGE_SIZE = 20;

// Brands arrive in lower case (`visa`); people read them capitalized.
export const brand = (card) => card.brand.charAt(0).toUpperCase() + card.brand.slice(1);

export function cardName(card) {
  return card.type === 'company' ? card.nickname : card.cardholderName;
}

/** "03/2029": when a card expires. */
export const expiry = (card) => `${String(card.expMonth).padStart(2, '0')}/${card.expYear}`;

const COLUMNS = [
  {
    title: 'Card',
    cell: (c) => html`<a href=${`/dashboard/cards/${c.id}`}>${brand(c)} •••• ${c.last4}</a>`,
  },
  { title: 'For', cell: cardName },
  { title: 'Kind', cell: (c) => label(c.type) },
  { title: 'Balance', amount: true, cell: (c) => money(c.balanceMinor, c.currency) },
  { title: 'Status', cell: (c) => html`<${Status} status=${c.status} />` },
  { title: 'Expires', cell: expiry },
];

export function Cards({ member }) {
  const { type, status, cursor } = useQuery('type', 'status', 'cursor');
  const page = useLoad(
    () => api.get('/merchant/cards', { type, status, cursor, limit: PAGE_SIZE }),
    [type, status, cursor],
  );
  return html`<h1>Cards</h1>
    <div class="actions">
      ${
        member.scopes.includes('cards:write') &&
        html`<a class="button-link" href="/dashboard/cards/new" id="issue-card">Issue a card</a>`
      }
    </div>
    <${Filters}>
      <${FilterSelect}
        name="Kind"
        value=${type}
        options=${TYPES}
        param="type"
        text=${(t) => `${label(t)} cards`}
      />
      <${FilterSelect} value=${status} options=${STATUSES} />
    <//>
    <${PagedTable}
      page=${page}
      what="Loading cards"
      id="cards-table"
      columns=${COLUMNS}
      empty="No cards match."
    />`;
}

function MemberChoice({ member, value, change }) {
  // Whom a member card is for: the team when the role can read it, else the member asking.
  const people = useLoad(
    () =>
      member.scopes.includes('team:read')
        ? api.get('/team/members').then((p) => p.data)
        : Promise.resolve(null),
    [],
  );
  if (!people.data) return null;
  return html`<label>
    Member
    <select id="card-member" value=${value} onChange=${(e) => change(e.currentTarget.value)}>
      <option value="">Me</option>
      ${people.data.map((p) => html`<option value=${p.id}>${p.name || p.email}</option>`)}
    </select>
  </label>`;
}

export function IssueCard({ member }) {
  const currencies = useCurrencies(member);
  const type = useQuery('type').type === 'company' ? 'company' : 'member';
  const [fields, set, setFields] = useFields({ name: '', memberId: '', currency: '', funding: '' });
  const [held, setHeld] = useState(null);
  const { busy, error, submit } = useAction();
  const currency = fields.currency || currencies[0] || '';
  const issue = submit(async () => {
    setHeld(null);
    const body = { currency };
    if (fields.funding.trim()) {
      const funding = toMinor(fields.funding, currency);
      if (funding === null) {
        throw new Error(`Enter the first funding in ${currency}, such as 50.00.`);
      }
      body.initialFundingMinor = funding;
    }
    let path = '/merchant/cards';
    if (type === 'company') {
      path = '/merchant/company-cards';
      body.nickname = fields.name.trim();
    } else {
      body.cardholderName = fields.name.trim();
      if (fields.memberId) body.memberId = fields.memberId;
    }
    const answer = await api.post(path, body);
    const waiting = heldText(answer);
    if (waiting) setHeld(waiting);
    else navigate(`/dashboard/cards/${answer.id}`);
  });
  return html`<h1>Issue a card</h1>
    <form class="stack issue-form" onSubmit=${issue}>
      <label>
        Kind
        <select
          id="card-type"
          value=${type}
          onChange=${(e) => setQuery({ type: e.currentTarget.value }, { replace: true })}
        >
          <option value="member">Member card (for one person)</option>
          <option value="company">Company card (shared, owned by the company)</option>
        </select>
      </label>
      <div class="row">
        <label class="grow">
          ${type === 'company' ? 'Nickname' : 'Cardholder name'}
          <input
            id="card-name"
            required
            maxlength="100"
            value=${fields.name}
            onInput=${set('name')}
          />
        </label>
        ${
          type === 'member' &&
          html`<${MemberChoice}
            member=${member}
            value=${fields.memberId}
            change=${(memberId) => setFields({ ...fields, memberId })}
          />`
        }
      </div>
      <div class="row">
        <label>
          Currency
          <select id="card-currency" value=${currency} onChange=${set('currency')}>
            ${currencies.map((c) => html`<option value=${c}>${c}</option>`)}
          </select>
        </label>
        <label>
          First funding from the balance (optional)
          <input
            id="card-funding"
            inputmode="decimal"
            value=${fields.funding}
            onInput=${set('funding')}
          />
        </label>
      </div>
      <div><button type="submit" id="issue-submit" disabled=${busy}>Issue card</button></div>
      ${held && html`<p role="status" id="issue-held">${held}</p>`}
      <${ErrorNote} error=${error} />
    </form>`;
}
