// The dashboard's entry: who is signed in decides between the sign-in view and the sections.
import { html, render } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { api } from './api.js';
import { Layout } from './layout.js';
import { SignIn } from './pages/signin.js';
import { match, navigate, useLocation } from './router.js';
import { VIEWS } from './sections.js';
import { session } from './session.js';
import { Empty, ErrorNote, Loading } from './ui.js';

const SIGN_IN = '/dashboard/sign-in';

function useSession() {
  const [, setTick] = useState(0);
  useEffect(() => session.subscribe(() => setTick((n) => n + 1)), []);
  return { token: session.token(), member: session.member() };
}

function NotFound() {
  return html`<h1>Not found</h1>
    <${Empty}>There is nothing at this address. <a href="/dashboard">Go to Home</a>.<//>`;
}

function App() {
  const { path, query } = useLocation();
  const { token, member } = useSession();
  const [error, setError] = useState(null);

  useEffect(() => {
    if (token === null && path !== SIGN_IN) {
      // Keep where the person was going, so signing in lands there.
      const next =
        path === '/dashboard' ? '' : `?next=${encodeURIComponent(path + location.search)}`;
      navigate(SIGN_IN + next, { replace: true });
    }
    if (token !== null && path === SIGN_IN) {
      const next = query.get('next') || '';
      navigate(next.startsWith('/dashboard') ? next : '/dashboard', { replace: true });
    }
  }, [token, path]);

  useEffect(() => {
    setError(null);
    if (token !== null && member === null) {
      api.get('/auth/me').then((me) => {
        if (session.token() === token) session.setMember(me);
      }, setError);
    }
  }, [token, member]);

  if (token === null) return path === SIGN_IN ? html`<${SignIn} />` : null;
  if (error) return html`<main class="centered"><${ErrorNote} error=${error} /></main>`;
  if (member === null || path === SIGN_IN) {
    return html`<main class="centered"><${Loading} what="Opening the dashboard" /></main>`;
  }
  const found = match(VIEWS, path);
  if (!found || (found.route.scope && !member.scopes.includes(found.route.scope))) {
    return html`<${Layout} member=${member} title="Not found"><${NotFound} /><//>`;
  }
  const View = found.route.view;
  // Keyed by the token: a switch of mode or company loads every view's data afresh.
  return html`<${Layout} member=${member} title=${found.route.title}>
    <${View} key=${token + path} member=${member} params=${found.params} />
  <//>`;
}

const root = document.getElementById('app');
// The page's own "Loading" line goes; Preact renders the app in its place.
root.replaceChildren();
render(html`<${App} />`, root);
