// The frame around every signed-in view: the TEST MODE banner, the company and mode controls,
// the search box, the navigation and sign-out.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { api, onWait } from './api.js';
import { navigate, useLocation } from './router.js';
import { SECTIONS } from './sections.js';
import { session } from './session.js';
import { ErrorNote } from './ui.js';

function SearchBox() {
  const { path, query } = useLocation();
  const [text, setText] = useState(path === '/dashboard/search' ? query.get('q') || '' : '');
  const submit = (event) => {
    event.preventDefault();
    const q = text.trim();
    if (q) navigate(`/dashboard/search?q=${encodeURIComponent(q)}`);
  };
  return html`<form class="search" role="search" onSubmit=${submit}>
    <label for="search" class="visually-hidden">Search</label>
    <input
      id="search"
      type="search"
      placeholder="Search: payment id, reference, email…"
      value=${text}
      onInput=${(e) => setText(e.currentTarget.value)}
    />
  </form>`;
}

function ModeSwitch({ member, onError }) {
  const [busy, setBusy] = useState(false);
  const live = member.livemode;
  const toggle = async () => {
    setBusy(true);
    try {
      const next = await api.post('/auth/session/mode', { mode: live ? 'test' : 'live' });
      session.start(next.sessionToken, next.expiresAt);
    } catch (error) {
      onError(error);
    } finally {
      setBusy(false);
    }
  };
  return html`<button
    type="button"
    id="mode-switch"
    class=${live ? 'mode live' : 'mode test'}
    role="switch"
    aria-checked=${live ? 'true' : 'false'}
    disabled=${busy}
    onClick=${toggle}
  >
    ${live ? 'Live data' : 'Test data'}
  </button>`;
}

function CompanyPicker({ member, onError }) {
  const [companies, setCompanies] = useState(null);
  useEffect(() => {
    api.get('/auth/companies').then((answer) => setCompanies(answer.data), onError);
  }, [member.company.id]);
  if (!companies || companies.length < 2) {
    return html`<span class="company" id="company-name">${member.company.name}</span>`;
  }
  const choose = async (event) => {
    const companyId = event.currentTarget.value;
    try {
      const next = await api.post('/auth/session/company', { companyId });
      session.start(next.sessionToken, next.expiresAt);
      navigate('/dashboard');
    } catch (error) {
      onError(error);
    }
  };
  return html`<label class="company">
    <span class="visually-hidden">Company</span>
    <select id="company-picker" onChange=${choose} value=${member.company.id}>
      ${companies.map((c) => html`<option value=${c.id}>${c.name}</option>`)}
    </select>
  </label>`;
}

export function Layout({ member, title, children }) {
  const { path } = useLocation();
  const [error, setError] = useState(null);
  const [waiting, setWaiting] = useState(null);
  const [menuOpen, setMenuOpen] = useState(false);
  useEffect(() => onWait(setWaiting), []);
  useEffect(() => {
    document.title = `${title} · ${member.company.name}`;
    setMenuOpen(false);
  }, [title, member.company.name, path]);
  const signOut = async () => {
    try {
      await api.post('/auth/logout');
    } catch (failure) {
      if (failure.status !== 401) {
        // The session may still be valid on the server: say so and keep the token, so that
        // signing out can be tried again, rather than pretend it ended.
        setError(
          new Error(`Signing out did not reach the service: ${failure.message} Try again.`),
        );
        return;
      }
      // 401: the session had ended already.
    }
    session.clear();
    navigate('/dashboard/sign-in');
  };
  const sections = SECTIONS.filter((s) => s.scope === null || member.scopes.includes(s.scope));
  const current = (href) =>
    href === '/dashboard' ? path === '/dashboard' : path === href || path.startsWith(href + '/');
  return html`
    ${
      !member.livemode &&
      html`<div class="test-banner" id="test-banner" role="status">
        TEST MODE · you are looking at test data; no real money moves
      </div>`
    }
    <header class="top">
      <button
        type="button"
        class="menu-button"
        aria-expanded=${menuOpen ? 'true' : 'false'}
        aria-controls="nav"
        onClick=${() => setMenuOpen(!menuOpen)}
      >
        Menu
      </button>
      <${CompanyPicker} member=${member} onError=${setError} />
      <${SearchBox} />
      <div class="who">
        <${ModeSwitch} member=${member} onError=${setError} />
        <span class="muted small user" title=${member.role.name}>${member.user.email}</span>
        <button type="button" id="sign-out" class="link" onClick=${signOut}>Sign out</button>
      </div>
    </header>
    <div class="frame">
      <nav id="nav" class=${menuOpen ? 'open' : ''} aria-label="Sections">
        <ul>
          ${sections.map(
            (s) =>
              html`<li>
                <a href=${s.href} aria-current=${current(s.href) ? 'page' : undefined}>${s.name}</a>
              </li>`,
          )}
        </ul>
      </nav>
      <main id="main">
        ${waiting && html`<p class="notice" role="status">${waiting}</p>`}
        <${ErrorNote} error=${error} />
        ${children}
      </main>
    </div>
  `;
}
