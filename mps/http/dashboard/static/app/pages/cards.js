// Cards: member and company cards listed with their kind and status filters and cursor in the
// URL, and issuing either kind (offered only to a role with cards:write).
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { label, money, toMinor } from '../format.js';
import { navigate, setQuery, useLocation } from '../router.js';
import { Empty, ErrorNote, heldText, Loading, Pager, Status, useLoad } from '../ui.js';
import { useCurrencies } from './payments.js';

const TYPES = ['member', 'company'];
const STATUSES = ['ACTIVE', 'FROZEN', 'TERMINATED'];
const PAGE_SIZE = 20;

// Brands arrive in lower case (`visa`); people read them capitalized.
export const brand = (card) => card.brand.charAt(0).toUpperCase() + card.brand.slice(1);

export function cardName(card) {
  return card.type === 'company' ? card.nickname : card.cardholderName;
}

export function Cards({ member }) {
  const { query } = useLocation();
  const type = query.get('type') || '';
  const status = query.get('status') || '';
  const cursor = query.get('cursor') || '';
  const page = useLoad(
    () => api.get('/merchant/cards', { type, status, cursor, limit: PAGE_SIZE }),
    [type, status, cursor],
  );
  const rows = page.data ? page.data.data : [];
  const filter = (name) => (event) => setQuery({ [name]: event.currentTarget.value, cursor: '' });
  return html`<h1>Cards</h1>
    <div class="actions">
      ${
        member.scopes.includes('cards:write') &&
        html`<a class="button-link" href="/dashboard/cards/new" id="issue-card">Issue a card</a>`
      }
    </div>
    <form class="row filters" aria-label="Filters" onSubmit=${(e) => e.preventDefault()}>
      <label>
        Kind
        <select id="filter-type" value=${type} onChange=${filter('type')}>
          <option value="">Any</option>
          ${TYPES.map((t) => html`<option value=${t}>${label(t)} cards</option>`)}
        </select>
      </label>
      <label>
        Status
        <select id="filter-status" value=${status} onChange=${filter('status')}>
          <option value="">Any</option>
          ${STATUSES.map((s) => html`<option value=${s}>${label(s)}</option>`)}
        </select>
      </label>
    </form>
    <${ErrorNote} error=${page.error} />
    ${page.loading && html`<${Loading} what="Loading cards" />`}
    ${page.data && rows.length === 0 && html`<${Empty}>No cards match.<//>`}
    ${
      rows.length > 0 &&
      html`<div class="table-wrap">
        <table id="cards-table">
          <thead>
            <tr>
              <th scope="col">Card</th>
              <th scope="col">For</th>
              <th scope="col">Kind</th>
              <th scope="col" class="amount">Balance</th>
              <th scope="col">Status</th>
              <th scope="col">Expires</th>
            </tr>
          </thead>
          <tbody>
            ${rows.map(
              (c) =>
                html`<tr data-id=${c.id}>
                  <td><a href=${`/dashboard/cards/${c.id}`}>${brand(c)} •••• ${c.last4}</a></td>
                  <td>${cardName(c)}</td>
                  <td>${label(c.type)}</td>
                  <td class="amount">${money(c.balanceMinor, c.currency)}</td>
                  <td><${Status} status=${c.status} /></td>
                  <td>${String(c.expMonth).padStart(2, '0')}/${c.expYear}</td>
                </tr>`,
            )}
          </tbody>
        </table>
      </div>`
    }
    <${Pager} cursor=${cursor} page=${page.data} />`;
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
  const { query } = useLocation();
  const type = query.get('type') === 'company' ? 'company' : 'member';
  const [fields, setFields] = useState({ name: '', memberId: '', currency: '', funding: '' });
  const [error, setError] = useState(null);
  const [held, setHeld] = useState(null);
  const [busy, setBusy] = useState(false);
  const currency = fields.currency || currencies[0] || '';
  const set = (name) => (event) => setFields({ ...fields, [name]: event.currentTarget.value });
  const submit = async (event) => {
    event.preventDefault();
    setError(null);
    setHeld(null);
    const body = { currency };
    if (fields.funding.trim()) {
      const funding = toMinor(fields.funding, currency);
      if (funding === null) {
        setError(new Error(`Enter the first funding in ${currency}, such as 50.00.`));
        return;
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
    setBusy(true);
    try {
      const answer = await api.post(path, body);
      const waiting = heldText(answer);
      if (waiting) setHeld(waiting);
      else navigate(`/dashboard/cards/${answer.id}`);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  return html`<h1>Issue a card</h1>
    <form class="stack issue-form" onSubmit=${submit}>
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
