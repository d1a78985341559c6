// Where the session token lives between page loads: this tab's sessionStorage (SECURITY.md,
// "The dashboard's session token"). Never a cookie (nothing is sent on its own, so no CSRF), never
// localStorage (it would outlive the tab and be shared by every tab).
const KEY = 'mps.dashboard.session';

function load() {
  try {
    const stored = JSON.parse(sessionStorage.getItem(KEY) || 'null');
    if (stored && stored.token && Date.parse(stored.expiresAt) > Date.now()) return stored;
  } catch {
    // A value another version wrote or a blocked storage: start signed out.
  }
  return null;
}

let current = load();
let member = null; // GET /auth/me of the current token, kept in memory only
const listeners = new Set();

function changed() {
  for (const listener of listeners) listener();
}

export const session = {
  token() {
    if (current && Date.parse(current.expiresAt) <= Date.now()) this.clear();
    return current ? current.token : null;
  },
  signedIn() {
    return this.token() !== null;
  },
  start(token, expiresAt) {
    current = { token, expiresAt };
    member = null;
    try {
      sessionStorage.setItem(KEY, JSON.stringify(current));
    } catch {
      // Storage refused (a private window's quota): the session lasts as long as the page.
    }
    changed();
  },
  clear() {
    current = null;
    member = null;
    try {
      sessionStorage.removeItem(KEY);
    } catch {
      // nothing stored
    }
    changed();
  },
  member() {
    return member;
  },
  setMember(value) {
    member = value;
    changed();
  },
  can(scope) {
    return member !== null && member.scopes.includes(scope);
  },
  subscribe(listener) {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
};
