// Small pieces every view shares: loading an API answer into a view, and a view's heading until
// it is in; how errors, statuses, empty states and facts look; a read-only field with a copy
// button; a secret shown once; the cursor pager kept in the URL; a button that asks before it
// acts; counted nouns; a mode's and a code list's words; who a user id is; and what an action
// held for approval says.
import { html } from 'htm/preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { api } from './api.js';
import { label } from './format.js';
import { useAction } from './forms.js';
import { setQuery, useQuery } from './router.js';

/**
 * Runs `load` (an async function) when `deps` change and returns {data, error, loading, reload}.
 * An answer that arrives after the view moved on is dropped.
 */
export function useLoad(load, deps) {
  const [state, setState] = useState({ data: null, error: null, loading: true });
  const [round, setRound] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true, error: null }));
    load().then(
      (data) => live && setState({ data, error: null, loading: false }),
      (error) => live && setState({ data: null, error, loading: false }),
    );
    return () => {
      live = false;
    };
  }, [...deps, round]);
  const reload = useCallback(() => setRound((n) => n + 1), []);
  return { ...state, reload };
}

export function ErrorNote({ error }) {
  if (!error) return null;
  return html`<div class="error" role="alert">
    <p>${error.message}</p>
    ${error.requestId && html`<p class="muted small">Reference for support: ${error.requestId}</p>`}
  </div>`;
}

export function Loading({ what = 'Loading' }) {
  return html`<p class="muted" role="status">${what}…</p>`;
}

export function Status({ status }) {
  const tone = String(status || '').toLowerCase();
  return html`<span class=${`status status-${tone}`}>${label(status)}</span>`;
}

export function Empty({ children }) {
  return html`<p class="muted empty">${children}</p>`;
}

export function Card({ title, children, id }) {
  const heading = id ? `${id}-title` : undefined;
  return html`<section class="card" id=${id} aria-labelledby=${heading}>
    ${title && html`<h2 id=${heading}>${title}</h2>`} ${children}
  </section>`;
}

/**
 * A view's heading while `load` (a `useLoad`) has no answer yet: its refusal, or "Loading…";
 * `children` (a section's tabs) follow the heading.
 */
export function Waiting({ title, load, children }) {
  return html`<h1>${title}</h1>
    ${children}
    <${ErrorNote} error=${load.error} />
    ${!load.error && html`<${Loading} />`}`;
}

/**
 * Facts about one thing as a definition list: `items` are [term, value] pairs, a third item the
 * value's id; a falsy item (a fact only some things have) is left out.
 */
export function Facts({ items }) {
  return html`<dl class="facts">
    ${items
      .filter(Boolean)
      .map(([term, value, id]) => html`<dt>${term}</dt><dd id=${id}>${value}</dd>`)}
  </dl>`;
}

/** Each value as code, side by side: a key's scopes, an endpoint's event types. */
export const codes = (values) => values.map((value) => html`<code>${value}</code>`);

/** "Live" or "Test": the mode a thing belongs to. */
export const modeName = (livemode) => (livemode ? 'Live' : 'Test');

/**
 * A read-only field holding `value`, with a button that copies it (the field is selected instead
 * where the browser grants no clipboard). The button's id is `${id}-copy` unless `copyId` names
 * it; `children` follow it in the same row.
 */
export function CopyField({ id, label: name, value, copyId, copyText = 'Copy link', children }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setCopied(true);
    } catch {
      // No clipboard permission: the field is selected for the person to copy.
      document.getElementById(id).select();
    }
  };
  return html`<div class="row">
    <label class="grow">
      <span class="visually-hidden">${name}</span>
      <input
        id=${id}
        class="url"
        readonly
        value=${value}
        onFocus=${(e) => e.currentTarget.select()}
      />
    </label>
    <button type="button" class="secondary" id=${copyId || `${id}-copy`} onClick=${copy}>
      ${copied ? 'Copied' : copyText}
    </button>
    ${children}
  </div>`;
}

/**
 * A secret the API shows once (an API key, a webhook signing secret): its copy field and a plain
 * warning that it will not be shown again; `onDone` offers "I have stored it" (id `${id}-done`).
 */
export function ShownOnce({ id, label: name, secret, onDone }) {
  return html`<div class="shown-once" role="status">
    <p><strong>${name}</strong>: copy it now. It is not shown again.</p>
    <${CopyField} id=${id} label=${name} value=${secret} copyText="Copy">
      ${
        onDone &&
        html`<button type="button" class="link" id=${`${id}-done`} onClick=${onDone}>
          I have stored it
        </button>`
      }
    <//>
  </div>`;
}

/**
 * "First page" while the list's cursor (the URL parameter `param`) is set and "Next page" while
 * the API says there is more; `prefix` keeps the buttons' ids apart where a view has two lists.
 * The contract's lists carry only `nextCursor` (decisions 0), no previous cursor, so there is no
 * "Previous page": going back is the browser's Back button, since every page is its own URL.
 */
export function Pager({ page, param = 'cursor', prefix = '' }) {
  const cursor = useQuery(param)[param];
  return html`<div class="pager">
    ${
      cursor &&
      html`<button
        type="button"
        class="secondary"
        id=${`${prefix}first-page`}
        onClick=${() => setQuery({ [param]: '' })}
      >
        First page
      </button>`
    }
    ${
      page &&
      page.hasMore &&
      page.nextCursor &&
      html`<button
        type="button"
        class="secondary"
        id=${`${prefix}next-page`}
        onClick=${() => setQuery({ [param]: page.nextCursor })}
      >
        Next page
      </button>`
    }
  </div>`;
}

/**
 * A button that runs `act` (async) and then `done`, showing the refusal's message if any. With
 * `question`, it asks first, in place, and acts on `yes`; the question takes the focus, on its
 * safe answer (`keep`). `inRow` is for an action in a table row or list: an outlined button,
 * answered "No", its confirming button's id `${id}-yes` (elsewhere `confirm-${id}`, answered
 * "Keep it"); `yesId` names that button otherwise.
 */
export function ActionButton({
  id,
  text,
  act,
  done,
  question,
  yes,
  yesId,
  keep,
  tone = 'secondary',
  yesTone = tone,
  inRow,
}) {
  const [asking, setAsking] = useState(false);
  const { busy, error, run } = useAction();
  const no = useRef(null);
  useEffect(() => {
    if (asking && no.current) no.current.focus();
  }, [asking]);
  const go = () =>
    run(async () => {
      await act();
      setAsking(false);
      if (done) done();
    });
  const Wrap = inRow ? 'span' : 'div';
  // In a row the action waits quietly, outlined; its confirming button carries the tone.
  const first = !inRow ? tone : tone === 'danger' ? 'secondary danger-text' : 'secondary';
  return html`<${Wrap} class=${inRow ? 'confirm' : 'action'}>
    ${
      !asking &&
      html`<button
        type="button"
        class=${first}
        id=${id}
        disabled=${busy}
        onClick=${question ? () => setAsking(true) : go}
      >
        ${text}
      </button>`
    }
    ${
      asking &&
      html`<${Wrap} class="row" role="group" aria-label=${inRow ? question : text}>
        <span>${question}</span>
        <button
          type="button"
          class=${yesTone}
          id=${yesId || (inRow ? id && `${id}-yes` : `confirm-${id}`)}
          disabled=${busy}
          onClick=${go}
        >
          ${yes}
        </button>
        <button type="button" class="secondary" ref=${no} onClick=${() => setAsking(false)}>
          ${keep || (inRow ? 'No' : 'Keep it')}
        </button>
      <//>`
    }
    <${ErrorNote} error=${error} />
  <//>`;
}

/** "1 teammate", "2 teammates". */
export function count(n, one, many = `${one}s`) {
  return `${n} ${n === 1 ? one : many}`;
}

/**
 * The company's members by user id ({email, roleName}), for showing who asked, voted or acted;
 * empty for a role that cannot read the team.
 */
export function useMembers(member) {
  const members = useLoad(
    () =>
      member.scopes.includes('team:read')
        ? api.get('/team/members').then((p) => new Map(p.data.map((m) => [m.id, m])))
        : Promise.resolve(new Map()),
    [],
  );
  return members.data || new Map();
}

/** A user id as a person reads it: their email when known, else the id itself. */
export function who(members, userId, me) {
  if (me && userId === me.user.id) return 'you';
  const found = members.get(userId);
  return found ? found.email : userId;
}

/** What an action held for approval (202) says instead of its result; null for one that acted. */
export function heldText(answer) {
  return answer && answer.approvalRequest
    ? `It needs approval first: request ${answer.approvalRequest.id} waits for its votes.`
    : null;
}
