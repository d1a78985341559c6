"""The invitation page: what an invitee sees on opening the link in an invitation email
(`{publicUrl}/invite/{token}`). It names the company, the role and the email invited, and while
the invitation is PENDING lets the invitee accept it (then type the sign-in code mailed to them)
or decline it, through the JSON token routes of `mps.http.routes.invitations`.

Every value shown is escaped, and the script reads what it needs (the token, the company's name,
the email) from the escaped page, never from text pasted into the script; it writes only with
`textContent`. The page runs under the strict Content Security Policy of `mps.http.security`: its
one `<script>` and one `<style>` carry the request's nonce, and it has no inline event handlers,
no `style=` attributes and nothing loaded from elsewhere. The session the code opens is not kept:
the page stores no token anywhere.

`render_invitation_page(None, ...)` is the page for a link that names no invitation. It says
only that the link is not valid, never whether any invitation exists.
"""

from __future__ import annotations

from datetime import date
from html import escape
from typing import Any

__all__ = ["render_invitation_page"]

_STYLE = """
*{box-sizing:border-box}html{-webkit-text-size-adjust:100%;color-scheme:light}
body{margin:0;background:#f4f5f7;color:#1a1f36;
font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:460px;margin:48px auto;background:#fff;border-radius:12px;padding:32px;
box-shadow:0 2px 12px rgba(0,0,0,.08)}
[hidden]{display:none!important}
.brand{font-size:13px;font-weight:600;color:#697386;margin:0 0 16px;letter-spacing:.02em}
h1{font-size:22px;font-weight:600;line-height:1.3;margin:0 0 20px;overflow-wrap:anywhere}
h2{font-size:18px;font-weight:600;margin:0 0 6px;overflow-wrap:anywhere}
p{margin:0}
.details{margin:0 0 20px;display:grid;grid-template-columns:auto 1fr;gap:6px 20px;
font-size:14px}.details dt{color:#697386}.details dd{margin:0;overflow-wrap:anywhere}
.note{font-size:14px;color:#4f566b;margin:0 0 4px;overflow-wrap:anywhere}
.actions{display:flex;gap:12px;margin-top:24px;flex-wrap:wrap}
button{flex:1 1 160px;padding:12px;border:1px solid #635bff;border-radius:6px;
background:#635bff;color:#fff;font:inherit;font-size:16px;font-weight:600;cursor:pointer}
button.secondary{background:#fff;color:#3c4257;border-color:#d5dbe1}
button:disabled{opacity:.6;cursor:default}
button:focus-visible,input:focus-visible{outline:3px solid #a5a0ff;outline-offset:2px}
form{margin-top:8px}form button{width:100%;margin-top:16px}
label{display:block;font-size:13px;color:#697386;margin:12px 0 4px}
input{width:100%;padding:10px 12px;border:1px solid #d5dbe1;border-radius:6px;font:inherit;
font-size:20px;letter-spacing:.3em;font-variant-numeric:tabular-nums}
.notice{margin-top:20px;color:#3c4257;overflow-wrap:anywhere}.notice:empty{margin:0}
.state{margin-top:20px;padding:16px;border-radius:8px;background:#e8f7ee;color:#17723d}
.state:empty{margin:0;padding:0}.state p{color:#3c4257}
.state.declined{background:#f0f1f4;color:#3c4257}
.closed{margin-top:4px;padding:16px;border-radius:8px;background:#f7f8fa;color:#3c4257;
overflow-wrap:anywhere}
.error{color:#df1b41;font-size:14px;margin-top:12px;overflow-wrap:anywhere}
.error:empty{margin:0}
.invalid{text-align:center}.invalid h1{margin-bottom:8px}.invalid p{color:#697386}
@media (max-width:520px){main{margin:0;border-radius:0;box-shadow:none;padding:24px 18px}}
"""

_SCRIPT = """
const main = document.getElementById('invitation');
const tokenPath = '/api/v1/team/invitations/token/' + encodeURIComponent(main.dataset.token);
const company = document.getElementById('company').textContent;
const email = document.getElementById('email').textContent;
const statusText = document.getElementById('status');
const actions = document.getElementById('actions');
const acceptButton = document.getElementById('accept');
const declineButton = document.getElementById('decline');
const form = document.getElementById('code-form');
const codeInput = document.getElementById('code');
const verifyButton = document.getElementById('verify');
const codeSent = document.getElementById('code-sent');
const expires = document.getElementById('expires');
const outcome = document.getElementById('outcome');
const error = document.getElementById('error');
let login = null;

async function post(path, body) {
  const options = {method: 'POST', headers: {'Accept': 'application/json'}};
  if (body !== undefined) {
    options.headers['Content-Type'] = 'application/json';
    options.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, options);
  } catch (e) {
    return {ok: false, message: 'Could not reach the server; please try again.'};
  }
  let result = null;
  try { result = await response.json(); } catch (e) { result = null; }
  if (response.ok && result) return {ok: true, result: result};
  const message = result && typeof result.message === 'string' && result.message;
  return {ok: false, message: message || 'Something went wrong; please try again.'};
}

function setStatus(code, label) {
  statusText.textContent = label;
  statusText.dataset.status = code;
  main.dataset.status = code;
}

function finish(kind, title, text) {
  actions.hidden = true;
  expires.hidden = true;
  form.hidden = true;
  codeSent.textContent = '';
  error.textContent = '';
  outcome.className = 'state ' + kind;
  const heading = document.createElement('h2');
  heading.id = 'outcome-title';
  heading.tabIndex = -1;
  heading.textContent = title;
  const paragraph = document.createElement('p');
  paragraph.textContent = text;
  outcome.replaceChildren(heading, paragraph);
  heading.focus();
}

function busy(on) {
  acceptButton.disabled = on;
  declineButton.disabled = on;
}

acceptButton.addEventListener('click', async () => {
  busy(true);
  error.textContent = '';
  const answer = await post(tokenPath + '/accept');
  if (!answer.ok) {
    error.textContent = answer.message;
    busy(false);
    return;
  }
  login = {loginId: answer.result.loginId, companyId: answer.result.companyId};
  setStatus('ACCEPTED', 'Accepted');
  actions.hidden = true;
  expires.hidden = true;
  form.hidden = false;
  codeSent.textContent = 'We sent a sign-in code to ' + email + '.';
  codeInput.focus();
});

declineButton.addEventListener('click', async () => {
  busy(true);
  error.textContent = '';
  const answer = await post(tokenPath + '/reject');
  if (!answer.ok) {
    error.textContent = answer.message;
    busy(false);
    return;
  }
  setStatus('REJECTED', 'Declined');
  finish('declined', 'You declined the invitation',
    'You will not join ' + company + '. You can close this page.');
});

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  error.textContent = '';
  const code = codeInput.value.replace(/\\s+/g, '');
  if (!/^[0-9]{6}$/.test(code)) {
    error.textContent = 'Enter the 6-digit code from the email.';
    codeInput.focus();
    return;
  }
  verifyButton.disabled = true;
  const answer = await post('/api/v1/auth/otp/verify',
    {loginId: login.loginId, code: code, companyId: login.companyId});
  if (!answer.ok) {
    error.textContent = answer.message;
    verifyButton.disabled = false;
    codeInput.focus();
    return;
  }
  finish('joined', "You've joined " + company,
    'You are now a member of ' + company + '. Sign in to Merchant Payments with ' + email +
    ' whenever you want to continue.');
});
"""

_STATUS_LABELS = {
    "PENDING": "Pending",
    "ACCEPTED": "Accepted",
    "REJECTED": "Declined",
    "REVOKED": "Withdrawn",
    "EXPIRED": "Expired",
}

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _e(text: str) -> str:
    return escape(text, quote=True)


def _day(text: str) -> str:
    """'2026-03-05T10:00:00.000Z' -> '5 Mar 2026' (escaped)."""
    try:
        day = date.fromisoformat(text[:10])
    except ValueError:
        return _e(text)
    return f"{day.day} {_MONTHS[day.month - 1]} {day.year}"


def _closed(status: str, company: str) -> str:
    """The sentence for an invitation that can no longer be answered (escaped)."""
    if status == "ACCEPTED":
        return (
            "This invitation has already been accepted. Sign in to Merchant Payments to continue."
        )
    if status == "REJECTED":
        return "This invitation was declined."
    if status == "REVOKED":
        return f"{company} withdrew this invitation."
    if status == "EXPIRED":
        return f"This invitation has expired. Ask {company} to send you a new one."
    return "This invitation can no longer be answered."


def _page(title: str, content: str, nonce: str, *, main: str, script: str = "") -> str:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        '<meta name="robots" content="noindex">'
        f"<title>{_e(title)}</title>"
        f'<style nonce="{_e(nonce)}">{_STYLE}</style></head>'
        f"<body><main {main}>{content}</main>{script}</body></html>"
    )


def render_invitation_page(view: dict[str, Any] | None, token: str | None, nonce: str) -> str:
    """The page of the invitation `view` (`public_view` of mps.http.routes.invitations) that
    `token` names (the not-valid page for None); `nonce` is the request's Content Security Policy
    nonce (`mps.http.security.csp_nonce`)."""
    if view is None or token is None:
        return _page(
            "Invitation link not valid",
            '<p class="brand">Merchant Payments</p>'
            "<h1>This invitation link is not valid</h1>"
            "<p>Check that you opened the whole link from the email, "
            "or ask whoever invited you for a new one.</p>",
            nonce,
            main='class="invalid" id="invalid"',
        )
    company_name: str = view["company"]["name"]
    company = _e(company_name)
    role = view["role"]
    role_name = _e(role["name"] or role["id"])
    email = _e(view["email"])
    status = view["status"]
    label = _STATUS_LABELS.get(status, status.title())
    details = (
        '<dl class="details">'
        f'<dt>Role</dt><dd id="role">{role_name}</dd>'
        f'<dt>Email</dt><dd id="email">{email}</dd>'
        f'<dt>Status</dt><dd id="status" data-status="{_e(status)}">{_e(label)}</dd>'
        "</dl>"
    )
    if status != "PENDING":
        content = (
            '<p class="brand">Merchant Payments</p>'
            f'<h1>Invitation to join <span id="company">{company}</span></h1>'
            f'{details}<p class="closed" id="closed">{_closed(status, company)}</p>'
        )
        return _page(
            f"Invitation to join {company_name}",
            content,
            nonce,
            main=f'class="invitation" id="invitation" data-status="{_e(status)}"',
        )
    content = (
        '<p class="brand">Merchant Payments</p>'
        f'<h1>You\'re invited to join <span id="company">{company}</span></h1>'
        f"{details}"
        f'<p class="note" id="expires">This invitation expires on {_day(view["expiresAt"])}.</p>'
        '<div class="actions" id="actions">'
        '<button type="button" id="accept">Accept invitation</button>'
        '<button type="button" id="decline" class="secondary">Decline</button>'
        "</div>"
        '<p class="notice" id="code-sent" role="status" aria-live="polite"></p>'
        '<form id="code-form" hidden>'
        '<label for="code">6-digit sign-in code</label>'
        '<input id="code" name="code" inputmode="numeric" autocomplete="one-time-code" '
        'aria-describedby="code-sent" required>'
        '<button type="submit" id="verify">Join</button>'
        "</form>"
        '<div class="state" id="outcome" role="status" aria-live="polite"></div>'
        '<p class="error" id="error" role="alert" aria-live="assertive"></p>'
    )
    return _page(
        f"Join {company_name}",
        content,
        nonce,
        main=(f'class="invitation" id="invitation" data-status="PENDING" data-token="{_e(token)}"'),
        script=f'<script nonce="{_e(nonce)}">{_SCRIPT}</script>',
    )
