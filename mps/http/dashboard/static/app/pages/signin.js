// Signing in with the code the service emails (POST /auth/login, then /auth/otp/verify), and, for
// someone in several companies, choosing which one to open. `?email=` prefills the address (the
// invitation page links here once the invitee has joined).
import { html } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { request } from '../api.js';
import { typed, useAction } from '../forms.js';
import { session } from '../session.js';
import { ErrorNote } from '../ui.js';

export function SignIn() {
  const [step, setStep] = useState('email');
  const [email, setEmail] = useState(
    () => new URLSearchParams(location.search).get('email') || '',
  );
  const [code, setCode] = useState('');
  const [login, setLogin] = useState(null);
  const [pending, setPending] = useState(null); // {session, companies}
  const [note, setNote] = useState(null);
  const { busy, error, run, submit } = useAction();
  const focus = useRef(null);

  useEffect(() => {
    document.title = 'Sign in · Dashboard';
    if (focus.current) focus.current.focus();
  }, [step]);

  const sendCode = submit(async () => {
    setLogin(await request('POST', '/auth/login', { body: { email: email.trim() } }));
    setNote(`If ${email.trim()} belongs to a team, a 6-digit code is on its way there.`);
    setStep('code');
  });

  const resend = () =>
    run(async () => {
      setLogin(await request('POST', '/auth/otp/request', { body: { loginId: login.loginId } }));
      setNote('A fresh code is on its way.');
    });

  const verify = submit(async () => {
    const opened = await request('POST', '/auth/otp/verify', {
      body: { loginId: login.loginId, code: code.trim() },
    });
    const bearer = { Authorization: `Bearer ${opened.sessionToken}` };
    const companies = (await request('GET', '/auth/companies', { headers: bearer })).data;
    if (companies.length < 2) {
      session.start(opened.sessionToken, opened.expiresAt);
      return;
    }
    setPending({ opened, companies, bearer });
    setStep('company');
  });

  const choose = (companyId) =>
    run(async () => {
      const { opened, bearer } = pending;
      if (companyId === opened.company.id) {
        session.start(opened.sessionToken, opened.expiresAt);
        return;
      }
      const moved = await request('POST', '/auth/session/company', {
        body: { companyId },
        headers: bearer,
      });
      session.start(moved.sessionToken, moved.expiresAt);
    });

  return html`<main class="centered signin" id="main">
    <h1>Sign in to the dashboard</h1>
    <${ErrorNote} error=${error} />
    ${
      step === 'email' &&
      html`<form onSubmit=${sendCode} class="stack" aria-label="Sign in">
        <label for="email">Work email</label>
        <input
          ref=${focus}
          id="email"
          type="email"
          autocomplete="email"
          required
          value=${email}
          onInput=${typed(setEmail)}
        />
        <button type="submit" id="send-code" disabled=${busy}>Email me a code</button>
      </form>`
    }
    ${
      step === 'code' &&
      html`<form onSubmit=${verify} class="stack" aria-label="Enter the code">
        ${note && html`<p class="muted" role="status">${note}</p>`}
        <label for="code">6-digit code</label>
        <input
          ref=${focus}
          id="code"
          inputmode="numeric"
          autocomplete="one-time-code"
          pattern="[0-9]{6}"
          maxlength="6"
          required
          value=${code}
          onInput=${typed(setCode)}
        />
        <button type="submit" id="verify" disabled=${busy}>Sign in</button>
        <button type="button" class="link" onClick=${resend} disabled=${busy}>
          Send a new code
        </button>
        <button type="button" class="link" onClick=${() => setStep('email')}>
          Use another email
        </button>
      </form>`
    }
    ${
      step === 'company' &&
      html`<section class="stack" aria-labelledby="choose-title">
        <h2 id="choose-title">Choose a company</h2>
        <ul class="choices">
          ${pending.companies.map(
            (c) =>
              html`<li>
                <button type="button" class="choice" disabled=${busy} onClick=${() => choose(c.id)}>
                  <strong>${c.name}</strong> <span class="muted">${c.role.name}</span>
                </button>
              </li>`,
          )}
        </ul>
      </section>`
    }
  </main>`;
}
