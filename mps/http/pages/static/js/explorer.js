// The API explorer's script (mps.http.pages.explorer), inline in its page and allowed by its
// hash: document and answer text only ever goes in as textContent.
'use strict';
const $ = (id) => document.getElementById(id);
const VERBS = ['get', 'post', 'put', 'patch', 'delete'];
// Per tab, as the dashboard keeps a session: closing the tab forgets the token.
const STORE = 'mps.explorer.credential';
// The answer's headers a developer looks at; same-origin fetch reads them all.
const SHOWN = ['X-Request-Id', 'RateLimit', 'RateLimit-Policy', 'Retry-After',
  'Idempotent-Replayed', 'Location'];

let doc = null;        // the OpenAPI document
let current = null;    // the chosen operation: {method, path, op, shared}
let paramInputs = [];  // [{param, input}] of the chosen operation
let pending = null;    // the login being finished: {email, loginId}
let credential = readCredential();

// ---- small helpers: every piece of document or answer text goes in as textContent ----

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

// Descriptions mark names as `code`; that one bit of markdown is rendered, as elements.
function prose(target, text) {
  target.replaceChildren();
  String(text || '').split('`').forEach((part, i) => {
    target.appendChild(i % 2 ? el('code', part) : document.createTextNode(part));
  });
}

function say(target, text, kind) {
  target.textContent = text || '';
  target.className = 'msg' + (kind ? ' ' + kind : '');
}

function readCredential() {
  try { return JSON.parse(sessionStorage.getItem(STORE) || 'null'); } catch (e) { return null; }
}

function keepCredential(value) {
  credential = value;
  if (value) sessionStorage.setItem(STORE, JSON.stringify(value));
  else sessionStorage.removeItem(STORE);
  showCredential();
}

async function call(method, path, body, token) {
  const headers = {};
  if (token) headers.Authorization = 'Bearer ' + token;
  const init = {method, headers};
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const text = await response.text();
  let json = null;
  try { json = JSON.parse(text); } catch (e) { json = null; }
  return {ok: response.ok, status: response.status, json, text};
}

// The error envelope's message with its field errors, as one line.
function problem(reply) {
  const body = reply.json || {};
  const fields = (body.errors || []).map((e) => e.field + ' ' + e.message);
  const message = body.message || ('HTTP ' + reply.status);
  return message + (fields.length ? ': ' + fields.join('; ') : '');
}

// Runs an async click handler with its button disabled, and says what went wrong if it threw
// (a network failure): a handler never fails silently.
function guarded(button, target, work) {
  return async () => {
    button.disabled = true;
    try { await work(); } catch (e) { say(target, 'Something failed: ' + e.message, 'error'); }
    finally { button.disabled = false; }
  };
}

function onEnter(input, action) {
  input.addEventListener('keydown', (event) => {
    if (event.key === 'Enter') { event.preventDefault(); action(); }
  });
}

// ---- signing in ----

async function mailbox(email) {
  const reply = await call('GET', '/api/v1/dev/mailbox?to=' + encodeURIComponent(email));
  return reply.ok && reply.json ? reply.json.data : null;  // null: no dev mailbox to read
}

async function mailSeen(email) {
  return new Set(((await mailbox(email)) || []).map((m) => m.id));
}

// The code of the first message that was not in the mailbox before the request that sent it:
// mail is sent before login and signup answer, and a few short retries cover a busy server.
async function codeFromMailbox(email, seen) {
  for (let attempt = 0; attempt < 4; attempt++) {
    const messages = await mailbox(email);
    if (messages === null) return null;
    const fresh = messages.find((m) => m.otp && !seen.has(m.id));
    if (fresh) return fresh.otp;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return null;
}

async function awaitCode(email, seen, offerSignup) {
  $('codeStep').hidden = false;
  $('code').value = '';
  say($('codeNote'), 'Looking in the development mailbox\u2026');
  const code = await codeFromMailbox(email, seen);
  if (code) {
    $('code').value = code;
    say($('codeNote'), 'Filled in from the development mailbox. Press Sign in.', 'ok');
    $('signupStep').hidden = true;
    $('verify').focus();
    return;
  }
  // Login answers the same whether or not the email has an account (no enumeration); only
  // a member is sent a code, so no code is the sign that there is no account yet.
  say($('codeNote'), 'No code has arrived for ' + email + '. If you got one, type it here.');
  $('signupStep').hidden = !offerSignup;
  if (offerSignup) $('companyName').focus();
}

function wantedEmail() {
  const email = $('email').value.trim();
  if (!email) {
    say($('authMsg'), 'Type your email first.', 'error');
    $('email').focus();
  }
  return email;
}

async function startLogin() {
  const email = wantedEmail();
  if (!email) return;
  say($('authMsg'), '');
  const seen = await mailSeen(email);
  const reply = await call('POST', '/api/v1/auth/login', {email});
  if (!reply.ok) { say($('authMsg'), problem(reply), 'error'); return; }
  pending = {email, loginId: reply.json.loginId};
  await awaitCode(email, seen, true);
}

async function signUp() {
  const email = wantedEmail();
  const companyName = $('companyName').value.trim();
  if (!email) return;
  if (!companyName) {
    say($('authMsg'), 'Type your company name.', 'error');
    $('companyName').focus();
    return;
  }
  say($('authMsg'), '');
  const seen = await mailSeen(email);
  const reply = await call('POST', '/api/v1/auth/signup', {companyName, email});
  if (!reply.ok) { say($('authMsg'), problem(reply), 'error'); return; }
  pending = {email, loginId: reply.json.loginId};
  $('signupStep').hidden = true;
  await awaitCode(email, seen, false);
}

async function verify() {
  if (!pending) { say($('authMsg'), 'Ask for a code first.', 'error'); return; }
  const code = $('code').value.trim();
  if (!/^[0-9]{6}$/.test(code)) {
    say($('authMsg'), 'The code is the 6 digits from the email.', 'error');
    return;
  }
  const reply = await call('POST', '/api/v1/auth/otp/verify', {loginId: pending.loginId, code});
  if (!reply.ok) { say($('authMsg'), problem(reply), 'error'); return; }
  const session = reply.json;
  pending = null;
  $('codeStep').hidden = true;
  say($('authMsg'), '');
  keepCredential({kind: 'session', token: session.sessionToken, email: session.user.email,
    company: session.company.name, mode: session.mode});
}

async function usePasted() {
  const token = $('token').value.trim();
  if (!token) {
    say($('authMsg'), 'Paste a secret key or a session token first.', 'error');
    return;
  }
  if (/^[sp]k_(test|live)_/.test(token)) {
    // A key cannot read /auth/me (a session route): it is kept as it is, and the answers say
    // whether it is accepted.
    keepCredential({kind: 'key', token, mode: token.includes('_live_') ? 'live' : 'test'});
  } else {
    const reply = await call('GET', '/api/v1/auth/me', undefined, token);
    if (!reply.ok) {
      say($('authMsg'), 'That token was not accepted: ' + problem(reply), 'error');
      return;
    }
    keepCredential({kind: 'session', token, email: reply.json.user.email,
      company: reply.json.company.name, mode: reply.json.mode});
  }
  $('token').value = '';
  say($('authMsg'), '');
}

async function signOut() {
  const was = credential;
  keepCredential(null);
  // Revoked on the server too, so the token stops working everywhere, not only here.
  if (was && was.kind === 'session') {
    await call('POST', '/api/v1/auth/logout', undefined, was.token);
  }
}

function showCredential() {
  const who = $('who');
  who.replaceChildren();
  $('auth').hidden = Boolean(credential);
  if (!credential) {
    who.appendChild(el('span', 'Not signed in'));
  } else if (credential.kind === 'session') {
    who.append(el('span', 'Signed in as'), el('strong', credential.email),
      el('span', '\u00b7 ' + credential.company + ' \u00b7 ' + credential.mode + ' mode'));
  } else {
    const shown = credential.token.slice(0, 8) + '\u2026' + credential.token.slice(-4);
    who.append(el('span', 'Using the key'), el('code', shown),
      el('span', '\u00b7 ' + credential.mode + ' mode'));
  }
  if (credential) {
    const out = el('button', credential.kind === 'session' ? 'Sign out' : 'Forget key',
      'secondary');
    out.id = 'signOut';
    out.onclick = guarded(out, $('authMsg'), signOut);
    who.appendChild(out);
  }
  if (current) { showWarning(); showUrl(); useRealIds(current); }
}

// ---- the document ----

// Follows a local $ref (#/components/schemas/…, …/parameters/…, …/headers/…, and any other
// JSON pointer into the document). Keys beside a $ref (a description) win over the target's.
function resolve(node) {
  let hops = 0;
  while (node && typeof node === 'object' && typeof node.$ref === 'string' && hops++ < 32) {
    const {$ref, ...beside} = node;
    let target = $ref.startsWith('#/') ? doc : undefined;
    for (const raw of $ref.slice(2).split('/')) {
      if (target === undefined || target === null) break;
      target = target[decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~')];
    }
    node = Object.assign({}, target || {}, beside);
  }
  return node || {};
}

// A schema with its $ref followed and its allOf parts merged into one object schema.
function flat(schema) {
  const s = resolve(schema);
  if (!Array.isArray(s.allOf)) return s;
  const merged = Object.assign({}, s, {properties: Object.assign({}, s.properties),
    required: [...(s.required || [])]});
  delete merged.allOf;
  for (const part of s.allOf.map(flat)) {
    Object.assign(merged.properties, part.properties || {});
    merged.required.push(...(part.required || []));
    for (const key of Object.keys(part)) {
      if (!(key in merged)) merged[key] = part[key];
    }
  }
  return merged;
}

function kindOf(s) {
  if (s.type) return s.type;
  if (s.properties) return 'object';
  if (s.items) return 'array';
  return s.oneOf || s.anyOf ? 'choice' : 'any';
}

function typeText(raw) {
  const s = flat(raw);
  let text = kindOf(s);
  if (text === 'array') text = 'array of ' + typeText(s.items || {});
  if (text === 'choice') text = (s.oneOf || s.anyOf).map(typeText).join(' or ');
  if (s.format) text += ' (' + s.format + ')';
  if (Array.isArray(s.enum)) {
    const shown = s.enum.slice(0, 8).map(String).join(', ');
    text += ': one of ' + shown + (s.enum.length > 8 ? ', \u2026 (' + s.enum.length + ')' : '');
  } else if (s.pattern) {
    text += ', matching ' + s.pattern;
  }
  if (s.minimum !== undefined || s.maximum !== undefined) {
    text += ', ' + (s.minimum !== undefined ? s.minimum : '') + '\u2013' +
      (s.maximum !== undefined ? s.maximum : '');
  }
  if (s.maxLength !== undefined) text += ', at most ' + s.maxLength + ' characters';
  if (s.nullable) text += ', or null';
  return text;
}

// ---- example values: valid as they are, so that Send works before anything is edited ----

// One string the pattern matches, for the simple patterns schemas use (classes, groups,
// alternatives, counted repeats); null when the pattern is beyond this small reader.
function fromPattern(pattern) {
  let i = 0;
  const p = pattern;
  function count() {
    const c = p[i];
    let n = 1;
    if (c === '?' || c === '*') { i++; n = 0; }
    else if (c === '+') { i++; n = 1; }
    else if (c === '{') {
      const close = p.indexOf('}', i);
      const m = /^\{(\d+)(,\d*)?\}$/.exec(p.slice(i, close + 1));
      if (!m) throw new Error('count');
      n = Number(m[1]);
      i = close + 1;
    }
    if (p[i] === '?') i++;  // lazy: the same shortest match
    return n;
  }
  function charClass() {
    i++;  // [
    if (p[i] === '^') throw new Error('negated class');
    let pick = null;
    while (i < p.length && p[i] !== ']') {
      let c = p[i++];
      if (c === '\\') {
        const e = p[i++];
        c = e === 'd' ? '1' : e === 'w' ? 'a' : e === 's' ? ' ' : e;
      }
      if (p[i] === '-' && p[i + 1] !== ']' && p[i + 1] !== undefined) {
        const last = p[i + 1];
        i += 2;
        // Within 0-9 prefer 1: no leading zero, and a count is never 0.
        if (pick === null) pick = c <= '1' && '1' <= last ? '1' : c;
      } else if (pick === null) {
        pick = c;
      }
    }
    i++;  // ]
    if (pick === null) throw new Error('empty class');
    return pick;
  }
  function atom() {
    const c = p[i];
    if (c === '(') {
      i++;
      if (p[i] === '?') {
        if (p[i + 1] === ':') i += 2;
        else if (p[i + 1] === '<' && /\w/.test(p[i + 2] || '')) i = p.indexOf('>', i) + 1;
        else throw new Error('lookaround');
        if (i === 0) throw new Error('group name');
      }
      const inner = alternatives();
      if (p[i] !== ')') throw new Error('group');
      i++;
      return inner;
    }
    if (c === '[') return charClass();
    i++;
    if (c === '\\') {
      const e = p[i++];
      return e === 'd' ? '1' : e === 'w' ? 'a' : e === 's' ? ' ' : e;
    }
    return c === '.' ? 'a' : c;
  }
  function sequence() {
    let out = '';
    while (i < p.length && p[i] !== '|' && p[i] !== ')') {
      if (p[i] === '^' || p[i] === '$') { i++; continue; }
      const piece = atom();
      out += piece.repeat(count());
    }
    return out;
  }
  function alternatives() {
    const first = sequence();
    while (p[i] === '|') { i++; sequence(); }
    return first;
  }
  try {
    const sample = alternatives();
    return i === p.length && new RegExp(p).test(sample) ? sample : null;
  } catch (e) {
    return null;
  }
}

function fits(s, value) {
  if (value.length < (s.minLength || 0)) value = value.padEnd(s.minLength, 'x');
  return s.maxLength !== undefined ? value.slice(0, s.maxLength) : value;
}

function stringExample(s, name) {
  const key = (name || '').toLowerCase();
  const about = (s.description || '').toLowerCase();
  const pattern = s.pattern || '';
  if (s.format === 'date-time' || /\[0-9\]\{4\}-\[0-9\]\{2\}-\[0-9\]\{2\}/.test(pattern)) {
    return new Date().toISOString();
  }
  if (s.format === 'date') return new Date().toISOString().slice(0, 10);
  if (s.format === 'email' || key.endsWith('email')) return 'buyer@example.com';
  if (s.format === 'uri' || s.format === 'url' || key.endsWith('url')) {
    return 'https://example.com/' + ((name || '').replace(/url$/i, '').toLowerCase() || 'endpoint');
  }
  // The test card that pays (README), where a card number is asked for.
  if (key === 'number' || key === 'cardnumber') return '4242424242424242';
  if (s.format === 'binary') return '';
  if (key === 'currency' || about.includes('iso 4217')) return 'USD';
  if (key === 'country') return 'US';
  // Money is minor units as a string of digits: 1000 is 10.00 of most currencies.
  if (key.includes('amount') || about.includes('minor units') || /^\^?\(?\??:?\[1-9\]\[0-9\]/
      .test(pattern)) {
    return '1000';
  }
  if (pattern) {
    const sample = fromPattern(pattern);
    if (sample !== null) return sample;
  }
  return fits(s, name ? 'Example ' + name : 'example');
}

function numberExample(s, name) {
  const key = (name || '').toLowerCase();
  const year = new Date().getFullYear() + 3;
  let value = key.includes('year') ? year : key.includes('month') ? 12 : 1;
  if (s.minimum !== undefined && value < s.minimum) value = s.minimum;
  if (s.exclusiveMinimum === true && value <= s.minimum) value = s.minimum + 1;
  if (s.maximum !== undefined && value > s.maximum) value = s.maximum;
  return value;
}

function example(schema, name, depth) {
  const s = flat(schema);
  if (s.example !== undefined) return s.example;
  if (s.default !== undefined) return s.default;
  if (Array.isArray(s.enum) && s.enum.length) return s.enum[0];
  if (depth > 8) return null;
  const choices = s.oneOf || s.anyOf;
  if (Array.isArray(choices) && choices.length && !s.properties) {
    return example(choices[0], name, depth + 1);
  }
  switch (kindOf(s)) {
    case 'object': {
      const out = {};
      for (const field of s.required || []) {
        out[field] = example((s.properties || {})[field] || {}, field, depth + 1);
      }
      return out;
    }
    case 'array': {
      const items = flat(s.items || {});
      const n = Math.max(s.minItems || 0, 1);
      if (Array.isArray(items.enum) && items.enum.length >= n) return items.enum.slice(0, n);
      return Array.from({length: n}, () => example(items, name, depth + 1));
    }
    case 'integer':
    case 'number':
      return numberExample(s, name);
    case 'boolean':
      return false;
    case 'string':
      return stringExample(s, name);
    default:
      return null;
  }
}

function mediaExample(media) {
  if (media.example !== undefined) return media.example;
  const examples = Object.values(media.examples || {});
  if (examples.length) {
    const first = resolve(examples[0]);
    if (first.value !== undefined) return first.value;
  }
  return example(media.schema || {}, '', 0);
}

// ---- the operation list ----

function operations() {
  const found = [];
  for (const [path, item] of Object.entries(doc.paths || {})) {
    for (const verb of VERBS) {
      if (item[verb]) {
        found.push({method: verb.toUpperCase(), path, op: item[verb],
          shared: item.parameters || []});
      }
    }
  }
  return found;
}

function listOperations() {
  const groups = new Map();
  for (const entry of operations()) {
    const tag = (entry.op.tags || ['other'])[0];
    if (!groups.has(tag)) groups.set(tag, []);
    groups.get(tag).push(entry);
  }
  const list = $('ops');
  list.replaceChildren();
  for (const [tag, entries] of groups) {
    const group = el('div', null, 'group');
    group.appendChild(el('h4', tag));
    for (const entry of entries) {
      const button = el('button', null, 'op');
      button.dataset.op = entry.method + ' ' + entry.path;
      button.dataset.search = (entry.method + ' ' + entry.path + ' ' +
        (entry.op.summary || '') + ' ' + tag).toLowerCase();
      button.append(el('span', entry.method, 'm ' + entry.method.toLowerCase()),
        el('span', entry.path.replace(/^\/api\/v\d+/, ''), 'p'),
        el('span', entry.op.summary || '', 's'));
      button.onclick = () => select(entry);
      group.appendChild(button);
    }
    list.appendChild(group);
  }
  applyFilter();
}

function applyFilter() {
  const words = $('filter').value.toLowerCase().split(/\s+/).filter(Boolean);
  for (const group of $('ops').children) {
    let any = false;
    for (const button of group.querySelectorAll('button.op')) {
      const shown = words.every((w) => button.dataset.search.includes(w));
      button.hidden = !shown;
      any = any || shown;
    }
    group.hidden = !any;
  }
}

// ---- one operation ----

function securityOf(op) {
  const rules = (op.security || doc.security || []).map((r) => Object.keys(r));
  return {
    none: rules.length === 0,
    optional: rules.some((names) => names.length === 0),
    session: rules.some((names) => names.includes('sessionToken')),
    key: rules.some((names) => names.includes('apiKey')),
  };
}

function securityText(op) {
  const s = securityOf(op);
  if (s.none) return 'No credential needed.';
  let text = s.session && s.key
    ? 'Takes a dashboard session, or a secret key while the company\u2019s apiKeyAccess ' +
      'setting is on.'
    : s.session ? 'Takes a dashboard session.' : s.key ? 'Takes an API key.' : '';
  if (s.optional) text = 'A credential is optional. ' + text;
  return text;
}

function showWarning() {
  const s = securityOf(current.op);
  let text = '';
  if (!s.none && !s.optional && !credential) {
    text = 'Sign in or paste a key first: this operation answers 401 without a credential.';
  } else if (credential && credential.kind === 'key' && s.session && !s.key) {
    text = 'This operation takes a dashboard session: your API key will be refused.';
  } else if (credential && credential.kind === 'session' && s.key && !s.session) {
    text = 'This operation takes an API key (create one with POST /merchant/api-keys and ' +
      'paste it above): your session will be refused.';
  }
  $('opWarning').textContent = text;
  $('opWarning').hidden = !text;
}

function parametersOf(entry) {
  // Path-level parameters apply unless the operation redefines the same name and place.
  const own = (entry.op.parameters || []).map(resolve);
  const mine = new Set(own.map((p) => p.in + ':' + p.name));
  const all = entry.shared.map(resolve).filter((p) => !mine.has(p.in + ':' + p.name))
    .concat(own);
  // A {name} in the path always gets an input, even if the document forgot to declare it.
  for (const match of entry.path.matchAll(/\{([^}]+)\}/g)) {
    if (!all.some((p) => p.in === 'path' && p.name === match[1])) {
      all.push({name: match[1], in: 'path', required: true, schema: {type: 'string'}});
    }
  }
  const order = {path: 0, query: 1, header: 2};
  return all.filter((p) => p.in in order).sort((a, b) => order[a.in] - order[b.in]);
}

function isIdempotencyKey(param) {
  return param.in === 'header' && String(param.name).toLowerCase() === 'idempotency-key';
}

function renderParams(entry) {
  const box = $('params');
  box.replaceChildren();
  paramInputs = [];
  const params = parametersOf(entry);
  for (const param of params.filter((p) => !isIdempotencyKey(p))) {
    const schema = flat(param.schema || {});
    const required = param.in === 'path' || Boolean(param.required);
    let input;
    if (Array.isArray(schema.enum)) {
      input = el('select');
      input.appendChild(el('option', required ? 'choose\u2026' : '(not sent)'));
      input.firstChild.value = '';
      for (const value of schema.enum) input.appendChild(el('option', value));
    } else {
      input = el('input');
      input.autocomplete = 'off';
      input.spellcheck = false;
      const hint = param.example !== undefined ? param.example : schema.example;
      input.placeholder = hint !== undefined ? String(hint) : typeText(schema);
    }
    input.id = 'p-' + param.in + '-' + String(param.name).replace(/[^A-Za-z0-9_-]/g, '_');
    input.required = required;
    input.addEventListener('input', showUrl);
    input.addEventListener('change', showUrl);
    onEnter(input, () => $('send').click());
    const row = el('div', null, 'param');
    const label = el('label');
    label.htmlFor = input.id;
    label.append(el('code', param.name),
      el('span', ' ' + param.in + (required ? ', required' : ''), 'hint'));
    row.append(label, input);
    const about = param.description || schema.description;
    if (about) {
      const note = el('span', null, 'hint');
      prose(note, about);
      row.appendChild(note);
    }
    box.appendChild(row);
    paramInputs.push({param, input});
  }
  $('paramsBox').hidden = paramInputs.length === 0;
  return params.some(isIdempotencyKey);
}

function fieldRows(schema, prefix, rows, depth) {
  const s = flat(schema);
  const required = s.required || [];
  for (const [name, raw] of Object.entries(s.properties || {})) {
    const field = flat(raw);
    rows.push({field: prefix + name, type: typeText(field), required: required.includes(name),
      description: field.description || ''});
    if (depth >= 4) continue;
    if (kindOf(field) === 'object') fieldRows(field, prefix + name + '.', rows, depth + 1);
    const items = field.items ? flat(field.items) : null;
    if (items && kindOf(items) === 'object') {
      fieldRows(items, prefix + name + '[].', rows, depth + 1);
    }
  }
  return rows;
}

let bodyExample = () => '';
let bodyMedia = null;  // the chosen operation's JSON body (its media type object), if it takes one

function renderBody(entry) {
  const body = resolve(entry.op.requestBody);
  const content = body.content || {};
  const types = Object.keys(content);
  $('bodyBox').hidden = types.length === 0;
  $('fieldRows').replaceChildren();
  $('body').value = '';
  bodyExample = () => '';
  bodyMedia = null;
  if (!types.length) return;
  const json = content['application/json'];
  const media = json || content[types[0]];
  $('bodyType').textContent = (json ? 'application/json' : types[0]) +
    (body.required ? ', required' : ', optional');
  for (const row of fieldRows(media.schema || {}, '', [], 0)) {
    const tr = el('tr');
    const description = el('td');
    prose(description, row.description);
    const field = el('td');
    field.appendChild(el('code', row.field));
    tr.append(field, el('td', row.type, 't'), el('td', row.required ? 'yes' : ''), description);
    $('fieldRows').appendChild(tr);
  }
  $('fields').hidden = !$('fieldRows').children.length;
  $('bodyEditor').hidden = !json;
  $('bodyNote').hidden = Boolean(json);
  $('bodyNote').textContent = json ? '' : 'This operation takes ' + types.join(', ') +
    ': the explorer sends JSON only, so send it with curl.';
  if (json) {
    bodyMedia = json;
    bodyExample = () => JSON.stringify(mediaExample(json), null, 2);
    $('body').value = bodyExample();
  }
}

function renderResponses(op) {
  const rows = $('responses');
  rows.replaceChildren();
  for (const [code, raw] of Object.entries(op.responses || {})) {
    const answer = resolve(raw);
    const meaning = el('td');
    prose(meaning, answer.description || '');
    rows.appendChild(el('tr')).append(el('td', code), meaning,
      el('td', Object.keys(answer.headers || {}).join(', '), 't'));
  }
}

// Shows the operation once its examples name the caller's own objects (a few reads at most);
// #op carries aria-busy until then.
async function select(entry) {
  current = entry;
  const name = entry.method + ' ' + entry.path;
  for (const button of document.querySelectorAll('button.op')) {
    button.classList.toggle('active', button.dataset.op === name);
  }
  history.replaceState(null, '', '#' + encodeURIComponent(name));
  $('op').setAttribute('aria-busy', 'true');
  $('opMethod').textContent = entry.method;
  $('opMethod').className = 'm ' + entry.method.toLowerCase();
  $('opPath').textContent = entry.path;
  $('opSummary').textContent = entry.op.summary || '';
  prose($('opDescription'), entry.op.description || '');
  $('opSecurity').textContent = securityText(entry.op);
  showWarning();
  $('idemBox').hidden = !renderParams(entry);
  $('idem').value = '';
  renderBody(entry);
  renderResponses(entry.op);
  $('result').hidden = true;
  $('error').textContent = '';
  showUrl();
  await useRealIds(entry);
  if (current !== entry) return;  // another operation was chosen meanwhile
  $('intro').hidden = true;
  $('op').hidden = false;
  $('op').removeAttribute('aria-busy');
}

// ---- real ids: the examples name the caller's own objects, where it has any ----

const ID_ROWS = 20;  // the newest rows of a collection offered for a path parameter

// The URL that lists the collection at `path` (…/payments) with the current credential, or null
// when the document lists none there or the credential cannot call it (a read bound to fail
// would only put an error in the console).
function listingUrl(path) {
  const item = path.includes('{') ? null : (doc.paths || {})[path];
  const op = item && item.get;
  if (!op || !credential) return null;
  const answer = resolve((op.responses || {})['200']);
  const media = (answer.content || {})['application/json'];
  const schema = flat((media && media.schema) || {});
  const data = schema.properties ? flat(schema.properties.data || {}) : {};
  if (kindOf(data) !== 'array') return null;
  const s = securityOf(op);
  if (credential.kind === 'key' ? !s.key : !s.session) return null;
  const paged = (item.parameters || []).concat(op.parameters || []).map(resolve)
    .some((p) => p.in === 'query' && p.name === 'limit');
  return path + (paged ? '?limit=' + ID_ROWS : '');
}

// The collection a body field names by its id: paymentId …/payments, bankAccountId
// …/bank-accounts; the shortest such path of the document.
function collectionOf(field) {
  const named = /^([a-z][A-Za-z]*)Id$/.exec(field);
  if (!named) return null;
  const segment = '/' + named[1].replace(/[A-Z]/g, (c) => '-' + c.toLowerCase()) + 's';
  const paths = Object.keys(doc.paths || {}).filter((p) => p.endsWith(segment));
  return paths.sort((a, b) => a.length - b.length)[0] || null;
}

// The rows of the collection at `path` the caller may read, newest first; none when it cannot.
async function ownRows(path) {
  const url = path && listingUrl(path);
  if (!url) return [];
  try {
    const reply = await call('GET', url, undefined, credential.token);
    const rows = reply.ok && reply.json && Array.isArray(reply.json.data) ? reply.json.data : [];
    return rows.filter((row) => row && typeof row.id === 'string');
  } catch (e) {
    return [];  // the example keeps its placeholder; Send still says what the server answers
  }
}

// The row a field asks for where its description names statuses ("The payment to refund: PAID
// or PARTIAL_REFUND"), else the newest.
function fitting(rows, about) {
  const statuses = String(about || '').match(/\b[A-Z][A-Z_]{2,}\b/g) || [];
  return rows.find((row) => statuses.includes(row.status)) || rows[0];
}

// A path parameter is offered the caller's ids (its placeholder and a list to pick from), never
// filled in: Send must not cancel, revoke or delete an object the developer did not choose. The
// example body is filled in: Send creates something new from it, and a placeholder id there
// only earns a 404.
async function useRealIds(entry) {
  if (!credential || !doc) return;
  const work = paramInputs
    .filter(({param, input}) => param.in === 'path' && input.tagName === 'INPUT')
    .map(async ({param, input}) => {
      const rows = await ownRows(entry.path.split('/{' + param.name + '}')[0]);
      if (rows.length && current === entry) offerIds(input, rows);
    });
  const media = bodyMedia;
  const raw = media ? mediaExample(media) : null;
  // A copy: the example may be the document's own object.
  const sample = raw && typeof raw === 'object' && !Array.isArray(raw)
    ? JSON.parse(JSON.stringify(raw)) : null;
  const fields = sample
    ? Object.keys(sample).filter((name) => typeof sample[name] === 'string' && collectionOf(name))
    : [];
  const properties = media ? flat(media.schema || {}).properties || {} : {};
  work.push(...fields.map(async (name) => {
    const rows = await ownRows(collectionOf(name));
    const row = fitting(rows, flat(properties[name] || {}).description);
    if (row) sample[name] = row.id;
  }));
  await Promise.all(work);
  if (!fields.length || current !== entry) return;
  const typed = $('body').value;
  const untouched = typed === bodyExample();
  bodyExample = () => JSON.stringify(sample, null, 2);
  if (untouched) {
    $('body').value = bodyExample();
    showUrl();
  }
}

function offerIds(input, rows) {
  const list = el('datalist');
  list.id = input.id + '-ids';
  const offered = document.getElementById(list.id);
  if (offered) offered.remove();
  for (const row of rows) {
    const option = el('option');
    option.value = row.id;
    if (typeof row.status === 'string') option.label = row.status;
    list.appendChild(option);
  }
  input.after(list);
  input.setAttribute('list', list.id);
  input.placeholder = rows[0].id;
  input.title = 'Your newest is ' + rows[0].id + '; pick one of yours from the list';
}

// ---- sending ----

function buildRequest() {
  const missing = [];
  const valueOf = (param) => {
    const found = paramInputs.find((f) => f.param.in === param.in && f.param.name === param.name);
    return found ? found.input.value.trim() : '';
  };
  let url = current.path.replace(/\{([^}]+)\}/g, (whole, name) => {
    const value = valueOf({in: 'path', name});
    if (!value) { missing.push(name); return whole; }
    return encodeURIComponent(value);
  });
  const query = [];
  const headers = {};
  for (const {param, input} of paramInputs) {
    const value = input.value.trim();
    if (param.in === 'query' && value) {
      query.push(encodeURIComponent(param.name) + '=' + encodeURIComponent(value));
    } else if (param.in === 'query' && param.required) {
      missing.push(param.name);
    } else if (param.in === 'header' && value) {
      headers[param.name] = value;
    }
  }
  if (query.length) url += '?' + query.join('&');
  if (!$('idemBox').hidden && $('idem').value.trim()) {
    headers['Idempotency-Key'] = $('idem').value.trim();
  }
  const text = $('bodyBox').hidden || $('bodyEditor').hidden ? '' : $('body').value.trim();
  return {url, missing, headers, body: text};
}

function quoted(text) {
  return "'" + text.replace(/'/g, "'\\''") + "'";
}

function showUrl() {
  if (!current) return;
  const request = buildRequest();
  $('url').textContent = current.method + ' ' + request.url;
  const lines = ['curl -s -X ' + current.method + ' ' + quoted(location.origin + request.url)];
  if (credential) lines.push('-H "Authorization: Bearer $TOKEN"');
  for (const [name, value] of Object.entries(request.headers)) {
    lines.push('-H ' + quoted(name + ': ' + value));
  }
  if (request.body) {
    let compact = request.body;
    try { compact = JSON.stringify(JSON.parse(request.body)); } catch (e) { /* sent as typed */ }
    lines.push("-H 'Content-Type: application/json'", '-d ' + quoted(compact));
  }
  $('curl').textContent = lines.join(' \\\n     ');
}

async function send() {
  const request = buildRequest();
  if (request.missing.length) {
    const names = request.missing.join(', ');
    $('error').textContent = names + (request.missing.length > 1 ? ' are' : ' is') +
      ' required: type ' + (request.missing.length > 1 ? 'them' : 'it') +
      ' above. Nothing was sent.';
    const first = paramInputs.find((f) => f.param.name === request.missing[0]);
    if (first) first.input.focus();
    return;
  }
  const headers = request.headers;
  if (credential) headers.Authorization = 'Bearer ' + credential.token;
  const init = {method: current.method, headers};
  if (request.body) {
    try { JSON.parse(request.body); } catch (e) {
      $('error').textContent = 'The body is not valid JSON (' + e.message + '). Nothing was sent.';
      return;
    }
    headers['Content-Type'] = 'application/json';
    init.body = request.body;
  }
  $('error').textContent = '';
  const started = performance.now();
  const response = await fetch(request.url, init);
  const raw = await response.text();
  showAnswer(response, raw, Math.round(performance.now() - started));
}

function showAnswer(response, raw, ms) {
  $('result').hidden = false;
  $('status').textContent = response.status + ' ' + response.statusText + ' \u00b7 ' + ms + ' ms';
  $('status').className = response.ok ? 'ok' : 'bad';
  const rows = $('respHeaders');
  rows.replaceChildren();
  for (const name of SHOWN) {
    const value = response.headers.get(name);
    if (value !== null) rows.appendChild(el('tr')).append(el('th', name), el('td', value));
  }
  let shown = raw;
  try { shown = JSON.stringify(JSON.parse(raw), null, 2); } catch (e) { shown = raw; }
  $('out').textContent = shown;
}

function newIdempotencyKey() {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return 'explorer-' + Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

// ---- start ----

async function loadDocument() {
  // The development copy needs no credential; a session can read the contract's own route.
  let reply = await call('GET', '/api/docs/openapi.json');
  if (!reply.ok && credential && credential.kind === 'session') {
    reply = await call('GET', '/api/v1/developer/openapi.json', undefined, credential.token);
  }
  if (!reply.ok || !reply.json || !reply.json.paths) {
    $('ops').replaceChildren(el('p', 'The API description did not load: ' + problem(reply),
      'error'));
    return;
  }
  doc = reply.json;
  $('docTitle').textContent = (doc.info && doc.info.title) || 'API';
  prose($('docDescription'), (doc.info && doc.info.description) || '');
  listOperations();
  const wanted = decodeURIComponent(location.hash.slice(1));
  const entry = operations().find((e) => e.method + ' ' + e.path === wanted);
  if (entry) select(entry);
}

async function start() {
  $('sendCode').onclick = guarded($('sendCode'), $('authMsg'), startLogin);
  $('signup').onclick = guarded($('signup'), $('authMsg'), signUp);
  $('verify').onclick = guarded($('verify'), $('authMsg'), verify);
  $('load').onclick = guarded($('load'), $('authMsg'), usePasted);
  $('send').onclick = guarded($('send'), $('error'), send);
  $('newIdem').onclick = () => { $('idem').value = newIdempotencyKey(); showUrl(); };
  $('resetBody').onclick = () => { $('body').value = bodyExample(); showUrl(); };
  $('filter').addEventListener('input', applyFilter);
  $('body').addEventListener('input', showUrl);
  $('idem').addEventListener('input', showUrl);
  $('body').addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) $('send').click();
  });
  onEnter($('email'), () => $('sendCode').click());
  onEnter($('companyName'), () => $('signup').click());
  onEnter($('code'), () => $('verify').click());
  onEnter($('token'), () => $('load').click());
  showCredential();
  if (credential && credential.kind === 'session') {
    // A kept session may have expired or been revoked since: ask once, and forget it if so.
    const reply = await call('GET', '/api/v1/auth/me', undefined, credential.token);
    if (reply.status === 401) {
      keepCredential(null);
      say($('authMsg'), 'Your session has ended: sign in again.', 'error');
    }
  }
  await loadDocument();
}

start();
