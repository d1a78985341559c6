// The dashboard's only way to the server: the public JSON API under /api/v1, same origin, with
// the session's Bearer token, like any other client.
import { session } from './session.js';

const BASE = '/api/v1';
// A 503 or 429 names how long to wait; waits longer than this are shown, not slept through.
const LONGEST_WAIT_SEC = 20;
const RETRIES = 2;

const waitListeners = new Set();

/** Called with a sentence while a request waits out a Retry-After, and with null after. */
export function onWait(listener) {
  waitListeners.add(listener);
  return () => waitListeners.delete(listener);
}

function announce(text) {
  for (const listener of waitListeners) listener(text);
}

export class ApiError extends Error {
  constructor(status, body, retryAfter) {
    super(plainWords(status, body, retryAfter));
    this.status = status;
    this.code = body && body.code;
    this.requestId = body && body.requestId;
    this.fields = (body && body.errors) || [];
  }
}

function plainWords(status, body, retryAfter) {
  if (status === 0) return 'The service could not be reached. Check the connection and try again.';
  let text = (body && body.message) || `The service answered ${status}.`;
  if (!/[.!?]$/.test(text)) text += '.';
  const fields = (body && body.errors) || [];
  if (fields.length) text += ' ' + fields.map((e) => `${e.field}: ${e.message}.`).join(' ');
  if (retryAfter !== null && (status === 503 || status === 429)) {
    text += ` Try again in ${retryAfter} s.`;
  }
  return text;
}

function retryAfterOf(response) {
  const value = Number.parseInt(response.headers.get('Retry-After') || '', 10);
  return Number.isFinite(value) && value >= 0 ? value : null;
}

function newKey() {
  return crypto.randomUUID();
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// The service honours Idempotency-Key on POSTs under these prefixes only (decisions 16); a POST
// elsewhere (sign-in, a session switch) may have acted before its 503, so it is never re-sent.
const KEYED = ['/merchant/', '/team/', '/developer/sandbox/'];

/** Whether sending `method path` again after a 503 or 429 can never act twice. */
function safeToRepeat(method, path) {
  if (method === 'GET') return true;
  return method === 'POST' && KEYED.some((prefix) => path.startsWith(prefix));
}

/**
 * One API call. `query` values that are empty are left out. A POST carries a fresh
 * Idempotency-Key; a 503 or 429 is waited out and the call sent again only where that can never
 * act twice (a GET, or a POST on a route that honours the key).
 */
export async function request(method, path, { query, body, headers: extra } = {}) {
  const url = new URL(BASE + path, location.origin);
  for (const [name, value] of Object.entries(query || {})) {
    if (value !== undefined && value !== null && value !== '') url.searchParams.set(name, value);
  }
  const headers = { Accept: 'application/json', ...(extra || {}) };
  const token = session.token();
  if (token) headers.Authorization = `Bearer ${token}`;
  let payload;
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  if (method === 'POST') headers['Idempotency-Key'] = newKey();
  for (let attempt = 0; ; attempt += 1) {
    let response;
    try {
      response = await fetch(url, {
        method,
        headers,
        body: payload,
        credentials: 'omit',
        cache: 'no-store',
      });
    } catch {
      throw new ApiError(0, null, null);
    }
    const wait = retryAfterOf(response);
    const busy = response.status === 503 || response.status === 429;
    const repeat = safeToRepeat(method, path);
    if (busy && repeat && attempt < RETRIES && wait !== null && wait <= LONGEST_WAIT_SEC) {
      announce(`The service is busy; trying again in ${wait} s.`);
      await sleep(wait * 1000);
      announce(null);
      continue;
    }
    return answer(response, wait, token);
  }
}

async function answer(response, wait, token) {
  const json = (response.headers.get('Content-Type') || '').includes('application/json');
  const body = json ? await response.json() : null;
  if (response.ok) return body;
  if (response.status === 401 && token !== null && token === session.token()) {
    // The session ended (signed out elsewhere, expired, revoked): back to signing in.
    session.clear();
  }
  throw new ApiError(response.status, body, wait);
}

function fileName(response, fallback) {
  const disposition = response.headers.get('Content-Disposition') || '';
  const found = /filename="([^"]+)"/.exec(disposition);
  return found ? found[1] : fallback;
}

/** Hands `blob` to the person as a file named `name`. */
export function saveFile(name, blob) {
  const href = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = href;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  // The browser has the file once the click is handled; the object URL only has to outlive it.
  setTimeout(() => URL.revokeObjectURL(href), 10_000);
}

/**
 * Downloads a file the API serves (a PDF, a CSV: not JSON) with the session's Bearer token: a
 * plain link cannot carry the token, so the file is fetched and handed to the browser. It is
 * named as the answer's Content-Disposition says, else `name`; with `named`, `name` always.
 */
export async function downloadFile(path, name, { query, named = false } = {}) {
  const url = new URL(BASE + path, location.origin);
  for (const [key, value] of Object.entries(query || {})) {
    if (value !== undefined && value !== null && value !== '') url.searchParams.set(key, value);
  }
  const headers = {};
  const token = session.token();
  if (token) headers.Authorization = `Bearer ${token}`;
  let response;
  try {
    response = await fetch(url, { headers, credentials: 'omit', cache: 'no-store' });
  } catch {
    throw new ApiError(0, null, null);
  }
  if (!response.ok) return answer(response, retryAfterOf(response), token);
  saveFile(named ? name : fileName(response, name), await response.blob());
}

/**
 * A multipart POST of `form` (a FormData), calling `progress(sent, total)` while it is sent.
 * fetch() reports no upload progress, so this one request uses XMLHttpRequest, with the same
 * Bearer token, Idempotency-Key and error envelope as every other call.
 */
export function upload(path, form, progress) {
  return new Promise((resolve, reject) => {
    const token = session.token();
    const sending = new XMLHttpRequest();
    sending.open('POST', BASE + path);
    sending.setRequestHeader('Accept', 'application/json');
    sending.setRequestHeader('Idempotency-Key', newKey());
    if (token) sending.setRequestHeader('Authorization', `Bearer ${token}`);
    sending.upload.addEventListener('progress', (event) => {
      if (event.lengthComputable) progress(event.loaded, event.total);
    });
    sending.addEventListener('load', () => {
      let body = null;
      try {
        body = JSON.parse(sending.responseText);
      } catch {
        // Not JSON (a proxy's page): the status alone is reported.
      }
      if (sending.status >= 200 && sending.status < 300) {
        resolve(body);
        return;
      }
      if (sending.status === 401 && token !== null && token === session.token()) session.clear();
      const wait = Number.parseInt(sending.getResponseHeader('Retry-After') || '', 10);
      reject(new ApiError(sending.status, body, Number.isFinite(wait) ? wait : null));
    });
    sending.addEventListener('error', () => reject(new ApiError(0, null, null)));
    sending.send(form);
  });
}

export const api = {
  get: (path, query) => request('GET', path, { query }),
  post: (path, body) => request('POST', path, { body }),
  patch: (path, body) => request('PATCH', path, { body }),
  put: (path, body) => request('PUT', path, { body }),
  delete: (path) => request('DELETE', path),
  download: downloadFile,
  upload,
};

/**
 * Every row of a list, page by page (100 at a time), calling `progress(count)` after each page.
 * For exports a person asked for; views page by cursor and never load every row.
 */
export async function everyRow(path, query, progress) {
  const rows = [];
  let cursor;
  for (;;) {
    const page = await api.get(path, { ...query, limit: 100, cursor });
    rows.push(...page.data);
    if (progress) progress(rows.length);
    if (!page.hasMore || !page.nextCursor) return rows;
    cursor = page.nextCursor;
  }
}
