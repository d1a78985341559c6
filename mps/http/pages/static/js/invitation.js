// The invitation page's script (mps.http.pages.invitation). The same file for every invitation:
// what it needs comes from the escaped page, and it writes only with textContent.
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

function finish(kind, title, text, next) {
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
  if (next) outcome.append(next);
  heading.focus();
}

// The way on into the dashboard: its sign-in, with the invited email filled in. The session the
// code opened is not handed over: this page keeps no token anywhere, and the dashboard keeps the
// one its own sign-in opens.
function intoDashboard() {
  const paragraph = document.createElement('p');
  const link = document.createElement('a');
  link.id = 'sign-in';
  link.href = '/dashboard/sign-in?email=' + encodeURIComponent(email);
  link.textContent = 'Sign in to the dashboard';
  paragraph.append(link);
  return paragraph;
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
  const code = codeInput.value.replace(/\s+/g, '');
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
    ' whenever you want to continue.', intoDashboard());
});
