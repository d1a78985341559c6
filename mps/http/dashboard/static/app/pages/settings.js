// Settings of this mode: the company's details, its supported currencies, whether its secret
// keys may call the merchant routes (server-to-server access), and identity verification: the
// state, the documents, and uploading one with its progress shown.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { dateTime, label } from '../format.js';
import { useLocation } from '../router.js';
import { session } from '../session.js';
import { Card, Empty, ErrorNote, Loading, Pager, Status, useLoad } from '../ui.js';

const DOCUMENT_TYPES = [
  'passport',
  'national_id',
  'drivers_license',
  'proof_of_address',
  'business_registration',
];
const DOCUMENTS_PAGE = 10;

/** PATCH /merchant/settings with `changes`: the settings as they now are. */
function patchSettings(changes) {
  return api.patch('/merchant/settings', changes);
}

function Saved({ id, when }) {
  return when ? html`<span role="status" id=${id}>Saved.</span>` : null;
}

function CompanyDetails({ settings, canWrite, done }) {
  const [fields, setFields] = useState({
    name: settings.name,
    payoutSchedule: settings.payoutSchedule,
    settlementDelayHours: String(settings.settlementDelaySec / 3600),
  });
  const [error, setError] = useState(null);
  const [saved, setSaved] = useState(false);
  const set = (name) => (e) => {
    setSaved(false);
    setFields({ ...fields, [name]: e.currentTarget.value });
  };
  const submit = async (event) => {
    event.preventDefault();
    setError(null);
    const hours = Number(fields.settlementDelayHours);
    if (!Number.isFinite(hours) || hours < 0) {
      setError(new Error('Enter the settlement delay as a number of hours, such as 24.'));
      return;
    }
    try {
      const answer = await patchSettings({
        name: fields.name.trim(),
        payoutSchedule: fields.payoutSchedule,
        settlementDelaySec: Math.round(hours * 3600),
      });
      done(answer);
      setSaved(true);
      // The frame shows the company's name from the member; a new name is read back into it.
      if (answer.name !== settings.name) session.setMember(await api.get('/auth/me'));
    } catch (failure) {
      setError(failure);
    }
  };
  if (!canWrite) {
    return html`<${Card} title="Company" id="company">
      <dl class="facts">
        <dt>Name</dt>
        <dd id="settings-name">${settings.name}</dd>
        <dt>Payout schedule</dt>
        <dd>${label(settings.payoutSchedule)}</dd>
        <dt>Settlement delay</dt>
        <dd>${settings.settlementDelaySec / 3600} h</dd>
      </dl>
    <//>`;
  }
  return html`<${Card} title="Company" id="company">
    <form class="row" onSubmit=${submit}>
      <label class="grow">
        Name (both modes)
        <input
          id="settings-name"
          required
          maxlength="200"
          value=${fields.name}
          onInput=${set('name')}
        />
      </label>
      <label>
        Payout schedule
        <select id="payout-schedule" value=${fields.payoutSchedule} onChange=${set('payoutSchedule')}>
          <option value="manual">Manual</option>
          <option value="daily">Daily</option>
          <option value="weekly">Weekly</option>
        </select>
      </label>
      <label>
        Settlement delay (hours)
        <input
          id="settlement-delay"
          inputmode="decimal"
          value=${fields.settlementDelayHours}
          onInput=${set('settlementDelayHours')}
        />
      </label>
      <button type="submit" id="company-save">Save</button>
      <${Saved} id="company-saved" when=${saved} />
    </form>
    <${ErrorNote} error=${error} />
  <//>`;
}

function Currencies({ settings, canWrite, done }) {
  const [adding, setAdding] = useState('');
  const [error, setError] = useState(null);
  const change = async (list) => {
    setError(null);
    try {
      done(await patchSettings({ supportedCurrencies: list }));
      setAdding('');
    } catch (failure) {
      setError(failure);
    }
  };
  const add = (event) => {
    event.preventDefault();
    const code = adding.trim().toUpperCase();
    if (!/^[A-Z]{3}$/.test(code)) {
      setError(new Error('Enter a three-letter currency code, such as CHF.'));
      return;
    }
    if (!settings.supportedCurrencies.includes(code)) {
      change([...settings.supportedCurrencies, code]);
    }
  };
  const list = settings.supportedCurrencies;
  return html`<${Card} title="Currencies" id="currencies">
    <p class="muted small">The currencies payments and invoices may use in this mode.</p>
    <ul class="chips" id="currency-list">
      ${list.map(
        (c) =>
          html`<li data-currency=${c}>
            <code>${c}</code>
            ${
              canWrite &&
              list.length > 1 &&
              html`<button
                type="button"
                class="link"
                id=${`remove-currency-${c}`}
                aria-label=${`Remove ${c}`}
                onClick=${() => change(list.filter((x) => x !== c))}
              >
                ×
              </button>`
            }
          </li>`,
      )}
    </ul>
    ${
      canWrite &&
      html`<form class="row" onSubmit=${add}>
        <label>
          Add a currency
          <input
            id="currency-add"
            maxlength="3"
            placeholder="CHF"
            value=${adding}
            onInput=${(e) => setAdding(e.currentTarget.value)}
          />
        </label>
        <button type="submit" class="secondary" id="currency-add-submit">Add</button>
      </form>`
    }
    <${ErrorNote} error=${error} />
  <//>`;
}

function KeyAccess({ settings, canWrite, done }) {
  const [error, setError] = useState(null);
  const on = settings.apiKeyAccess;
  const flip = async () => {
    setError(null);
    try {
      done(await patchSettings({ apiKeyAccess: !on }));
    } catch (failure) {
      setError(failure);
    }
  };
  return html`<${Card} title="Server-to-server keys" id="key-access">
    <p>
      ${'Secret keys of this mode '}<strong id="key-access-state">${on ? 'may' : 'may not'}</strong>
      ${' call the merchant routes (payments, refunds, balance, payouts, cards, customers, '}
      invoices, events) within their scopes.
    </p>
    ${
      canWrite &&
      html`<button type="button" class="secondary" id="key-access-toggle" onClick=${flip}>
        ${on ? 'Turn off key access' : 'Turn on key access'}
      </button>`
    }
    <${ErrorNote} error=${error} />
  <//>`;
}

function UploadDocument({ done }) {
  const [type, setType] = useState(DOCUMENT_TYPES[0]);
  const [file, setFile] = useState(null);
  const [progress, setProgress] = useState(null);
  const [error, setError] = useState(null);
  const [uploaded, setUploaded] = useState(null);
  const submit = async (event) => {
    event.preventDefault();
    const formElement = event.currentTarget;
    setError(null);
    setUploaded(null);
    if (!file) {
      setError(new Error('Choose a PDF, JPEG or PNG file first.'));
      return;
    }
    const form = new FormData();
    form.append('type', type);
    form.append('file', file, file.name);
    setProgress(0);
    try {
      const answer = await api.upload('/merchant/kyc/documents', form, (sent, total) =>
        setProgress(Math.round((100 * sent) / total)),
      );
      setUploaded(answer);
      formElement.reset();
      setFile(null);
      done();
    } catch (failure) {
      setError(failure);
    } finally {
      setProgress(null);
    }
  };
  return html`<form class="row" onSubmit=${submit} aria-label="Upload a document">
    <label>
      Document type
      <select id="document-type" value=${type} onChange=${(e) => setType(e.currentTarget.value)}>
        ${DOCUMENT_TYPES.map((t) => html`<option value=${t}>${label(t)}</option>`)}
      </select>
    </label>
    <label class="grow">
      File (PDF, JPEG or PNG)
      <input
        id="document-file"
        type="file"
        accept="application/pdf,image/jpeg,image/png"
        onChange=${(e) => setFile(e.currentTarget.files[0] || null)}
      />
    </label>
    <button type="submit" id="document-upload" disabled=${progress !== null}>Upload</button>
    ${
      progress !== null &&
      html`<label class="grow">
        Uploading… ${progress}%
        <progress id="document-progress" max="100" value=${progress}>${progress}%</progress>
      </label>`
    }
    ${
      uploaded &&
      html`<p role="status" id="document-uploaded">
        ${uploaded.fileName} uploaded (${label(uploaded.type)}).
      </p>`
    }
    <${ErrorNote} error=${error} />
  </form>`;
}

function Verification({ canWrite }) {
  const { query } = useLocation();
  const cursor = query.get('docs') || '';
  const [round, setRound] = useState(0);
  const again = () => setRound((n) => n + 1);
  const status = useLoad(() => api.get('/merchant/kyc'), [round]);
  const documents = useLoad(
    () => api.get('/merchant/kyc/documents', { cursor, limit: DOCUMENTS_PAGE }),
    [cursor, round],
  );
  const s = status.data;
  const rows = documents.data ? documents.data.data : [];
  return html`<${Card} title="Identity verification" id="kyc">
    <${ErrorNote} error=${status.error} />
    ${
      s &&
      html`<p id="kyc-state">
        Status in this mode: <${Status} status=${s.status} />
        ${s.reviewedAt && html` <span class="muted small">reviewed ${dateTime(s.reviewedAt)}</span>`}
      </p>`
    }
    ${s && s.reason && html`<p class="error" id="kyc-reason">${s.reason}</p>`}
    ${canWrite && html`<${UploadDocument} done=${again} />`}
    <h3>Documents</h3>
    <${ErrorNote} error=${documents.error} />
    ${documents.loading && !documents.data && html`<${Loading} what="Loading the documents" />`}
    ${documents.data && rows.length === 0 && html`<${Empty}>No documents uploaded yet.<//>`}
    ${
      rows.length > 0 &&
      html`<div class="table-wrap" tabindex="0" role="region" aria-label="Documents">
        <table id="documents-table">
          <thead>
            <tr>
              <th scope="col">Type</th>
              <th scope="col">File</th>
              <th scope="col">Size</th>
              <th scope="col">Review</th>
              <th scope="col">Uploaded</th>
            </tr>
          </thead>
          <tbody>
            ${rows.map(
              (d) =>
                html`<tr data-id=${d.id}>
                  <td>${label(d.type)}</td>
                  <td>${d.fileName}</td>
                  <td>${Math.max(1, Math.round(d.sizeBytes / 1024))} KiB</td>
                  <td><${Status} status=${d.status} /></td>
                  <td>${dateTime(d.createdAt)}</td>
                </tr>`,
            )}
          </tbody>
        </table>
      </div>`
    }
    <${Pager} page=${documents.data} cursor=${cursor} param="docs" prefix="documents-" />
  <//>`;
}

export function Settings({ member }) {
  const canWrite = member.scopes.includes('settings:write');
  const loaded = useLoad(() => api.get('/merchant/settings'), []);
  // The latest answer of a change, so every card shows what the server now holds.
  const [latest, setLatest] = useState(null);
  const settings = latest || loaded.data;
  return html`<h1>Settings</h1>
    <p class="muted">
      For ${member.livemode ? 'live' : 'test'} mode; the company's name is shared by both modes.
    </p>
    <${ErrorNote} error=${loaded.error} />
    ${loaded.loading && !settings && html`<${Loading} what="Loading the settings" />`}
    ${
      settings &&
      html`<div class="grid">
          <${CompanyDetails} settings=${settings} canWrite=${canWrite} done=${setLatest} />
          <${Currencies} settings=${settings} canWrite=${canWrite} done=${setLatest} />
        </div>
        <${KeyAccess} settings=${settings} canWrite=${canWrite} done=${setLatest} />`
    }
    <${Verification} canWrite=${canWrite} />`;
}
