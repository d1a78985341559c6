// Creating a payment link: amount, currency, description, an optional customer email; the
// answer's payUrl is shown with a button that copies it.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { money, toMinor } from '../format.js';
import { useAction, useFields } from '../forms.js';
import { Card, CopyField, ErrorNote } from '../ui.js';
import { useCurrencies } from './payments.js';

/** The payment link's URL with a button that copies it. */
export function CopyUrl({ url }) {
  return html`<${CopyField} id="pay-url" copyId="copy-url" label="Payment link URL" value=${url} />`;
}

export function NewPayment({ member }) {
  const currencies = useCurrencies(member);
  const [fields, set] = useFields({ amount: '', currency: '', description: '', email: '' });
  const [created, setCreated] = useState(null);
  const { busy, error, submit } = useAction();
  const currency = fields.currency || currencies[0];
  const create = submit(async () => {
    const amountMinor = toMinor(fields.amount, currency);
    if (amountMinor === null) throw new Error(`Enter an amount in ${currency}, such as 25.00.`);
    const body = { amountMinor, currency };
    if (fields.description.trim()) body.description = fields.description.trim();
    if (fields.email.trim()) body.customerEmail = fields.email.trim();
    setCreated(await api.post('/merchant/payments', body));
  });
  return html`<h1>New payment link</h1>
    <${ErrorNote} error=${error} />
    ${
      created &&
      html`<${Card} title="Payment link created" id="created">
        <p>${money(created.amountMinor, created.currency)} · ${created.reference}</p>
        <${CopyUrl} url=${created.payUrl} />
        <p>
          <a id="created-payment" href=${`/dashboard/payments/${created.id}`}>Open the payment</a>
        </p>
      <//>`
    }
    <${Card}>
      <form class="stack" onSubmit=${create} aria-label="New payment link">
        <div class="row">
          <label>
            Amount
            <input
              id="amount"
              inputmode="decimal"
              required
              value=${fields.amount}
              onInput=${set('amount')}
            />
          </label>
          <label>
            Currency
            <select id="currency" value=${currency} onChange=${set('currency')}>
              ${currencies.map((c) => html`<option value=${c}>${c}</option>`)}
            </select>
          </label>
        </div>
        <label class="stack">
          Description (shown at checkout)
          <input
            id="description"
            maxlength="200"
            value=${fields.description}
            onInput=${set('description')}
          />
        </label>
        <label class="stack">
          Customer email (optional)
          <input id="customer-email" type="email" value=${fields.email} onInput=${set('email')} />
        </label>
        <div>
          <button type="submit" id="create-payment" disabled=${busy}>Create payment link</button>
        </div>
      </form>
    <//>`;
}
