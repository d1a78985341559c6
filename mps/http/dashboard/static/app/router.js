// A small router on the history API: every view has a real URL under /dashboard (the server
// answers the same page for all of them), and a view's filters live in the query string, so a
// link, a bookmark or a reload shows the same view.
import { useEffect, useState } from 'preact/hooks';

export const ROOT = '/dashboard';
const listeners = new Set();

function changed() {
  for (const listener of listeners) listener();
}

export function navigate(url, { replace = false } = {}) {
  const target = new URL(url, location.origin);
  if (target.href === location.href) return;
  if (replace) history.replaceState(null, '', target);
  else history.pushState(null, '', target);
  changed();
  if (!replace) window.scrollTo(0, 0);
}

/** Replace some query parameters of the current view (empty values removed). */
export function setQuery(changes, { replace = false } = {}) {
  const url = new URL(location.href);
  for (const [name, value] of Object.entries(changes)) {
    if (value === undefined || value === null || value === '') url.searchParams.delete(name);
    else url.searchParams.set(name, value);
  }
  navigate(url.pathname + url.search, { replace });
}

/** The current location, re-rendering the caller whenever it changes. */
export function useLocation() {
  const [, setTick] = useState(0);
  useEffect(() => {
    const listener = () => setTick((n) => n + 1);
    listeners.add(listener);
    window.addEventListener('popstate', listener);
    return () => {
      listeners.delete(listener);
      window.removeEventListener('popstate', listener);
    };
  }, []);
  return {
    path: location.pathname.replace(/\/+$/, '') || '/',
    query: new URLSearchParams(location.search),
  };
}

/** The query parameters `names` of the current location, each '' where absent. */
export function useQuery(...names) {
  const { query } = useLocation();
  return Object.fromEntries(names.map((name) => [name, query.get(name) || '']));
}

/** The first route whose pattern matches `path`, with its captured parts. */
export function match(routes, path) {
  for (const route of routes) {
    const found = route.pattern.exec(path);
    if (found) return { route, params: found.slice(1).map(decodeURIComponent) };
  }
  return null;
}

// Same-origin links inside the dashboard change the view without loading the page again.
document.addEventListener('click', (event) => {
  if (event.defaultPrevented || event.button !== 0) return;
  if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const link = event.target.closest && event.target.closest('a[href]');
  if (!link || link.target || link.hasAttribute('download')) return;
  const url = new URL(link.href);
  if (url.origin !== location.origin || !url.pathname.startsWith(ROOT)) return;
  event.preventDefault();
  navigate(url.pathname + url.search + url.hash);
});
