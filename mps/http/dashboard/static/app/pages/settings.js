// Settings of this mode: the company's details, its supported currencies, whether its secret
// keys may call the merchant routes (server-to-server access), and identity verification: the
// state, the documents, and uploading one with its progress shown.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { dateTime, label } from '../format.js';
import { Saved, typed, useAction, useFields } from '../forms.js';
import { useQuery } from '../router.js';
import { session } from '../session.js';
import { PagedTable } from '../table.js';
import { Card, ErrorNote, Facts, Loading, Status, useLoad } from '../ui.js';

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

function CompanyDetails({ settings, canWrite, done }) {
  const [saved, setSaved] = useState(false);
  const [fields, set] = useFields(
    {
      name: settings.name,
      payoutSchedule: settings.payoutSchedule,
      settlementDelayHours: String(settings.settlementDelaySec / 3600),
    },
    () => setSaved(false),
  );
  const { error, submit } = useAction();
  const save = submit(async () => {
    const hours = Number(fields.settlementDelayHours);
    if (!Number.isFinite(hours) || hours < 0) {
      throw new Error('Enter the settlement delay as a number of hours, such as 24.');
    }
    const answer = await patchSettings({
      name: fields.name.trim(),
      payoutSchedule: fields.payoutSchedule,
      settlementDelaySec: Math.round(hours * 3600),
    });
    done(answer);
    setSaved(true);
    // The frame shows the company's name from the member; a new name is read back into it.
    if (answer.name !== settings.name) session.setMember(await api.get('/auth/me'));
  });
  if (!canWrite) {
    return html`<${Card} title="Company" id="company">
      <${Facts}
        items=${[
          ['Name', settings.name, 'settings-name'],
          ['Payout schedule', label(settings.payoutSchedule)],
          ['Settlement delay', `${settings.settlementDelaySec / 3600} h`],
        ]}
      />
    <//>`;
  }
  return html`<${Card} title="Company" id="company">
    <form class="row" onSubmit=${save}>
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
  const { error, run, submit } = useAction();
  const change = async (list) => {
    done(await patchSettings({ supportedCurrencies: list }));
    setAdding('');
  };
  const add = submit(async () => {
    const code = adding.trim().toUpperCase();
    if (!/^[A-Z]{3}$/.test(code)) {
      throw new Error('Enter a three-letter currency code, such as CHF.');
    }
    if (!settings.supportedCurrencies.includes(code)) {
      await change([...settings.supportedCurrencies, code]);
    }
  });
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
                onClick=${() => run(() => change(list.filter((x) => x !== c)))}
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
            onInput=${typed(setAdding)}
          />
        </label>
        <button type="submit" class="secondary" id="currency-add-submit">Add</button>
      </form>`
    }
    <${ErrorNote} error=${error} />
  <//>`;
}

function KeyAccess({ settings, canWrite, done }) {
  const { error, run } = useAction();
  const on = settings.apiKeyAccess;
  const flip = () => run(async () => done(await patchSettings({ apiKeyAccess: !on })));
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
  const [uploaded, setUploaded] = useState(null);
  const { error, run } = useAction();
  const submit = (event) => {
    event.preventDefault();
    const formElement = event.currentTarget;
    setUploaded(null);
    run(async () => {
      if (!file) throw new Error('Choose a PDF, JPEG or PNG file first.');
      const form = new FormData();
      form.append('type', type);
      form.append('file', file, file.name);
      setProgress(0);
      try {
        const progressed = (sent, total) => setProgress(Math.round((100 * sent) / total));
        setUploaded(await api.upload('/merchant/kyc/documents', form, progressed));
        formElement.reset();
        setFile(null);
        done();
      } finally {
        setProgress(null);
      }
    });
  };
  return html`<form class="row" onSubmit=${submit} aria-label="Upload a document">
    <label>
      Document type
      <select id="document-type" value=${type} onChange=${typed(setType)}>
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

const DOCUMENT_COLUMNS = [
  { title: 'Type', cell: (d) => label(d.type) },
  { title: 'File', cell: (d) => d.fileName },
  { title: 'Size', cell: (d) => `${Math.max(1, Math.round(d.sizeBytes / 1024))} KiB` },
  { title: 'Review', cell: (d) => html`<${Status} status=${d.status} />` },
  { title: 'Uploaded', cell: (d) => dateTime(d.createdAt) },
];

function Verification({ canWrite }) {
  const { docs: cursor } = useQuery('docs');
  const [round, setRound] = useState(0);
  const again = () => setRound((n) => n + 1);
  const status = useLoad(() => api.get('/merchant/kyc'), [round]);
  const documents = useLoad(
    () => api.get('/merchant/kyc/documents', { cursor, limit: DOCUMENTS_PAGE }),
    [cursor, round],
  );
  const s = status.data;
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
    <${PagedTable}
      page=${documents}
      quiet
      param="docs"
      prefix="documents-"
      what="Loading the documents"
      id="documents-table"
      label="Documents"
      columns=${DOCUMENT_COLUMNS}
      empty="No documents uploaded yet."
    />
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
