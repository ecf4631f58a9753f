// Same-origin fetch of the HTTP API: the access token (kept in
// sessionStorage, asked for on a 401), and errors as ApiError with the
// server's message and details.

const TOKEN_KEY = 'hourglass.token';

export class ApiError extends Error {
  constructor(status, message, details) {
    super(message);
    this.status = status;
    this.details = details || '';
  }
}

let memToken = ''; // the token when sessionStorage is disabled

export function token() {
  try { return sessionStorage.getItem(TOKEN_KEY) || memToken; } catch { return memToken; }
}

export function setToken(t) {
  try {
    if (t) sessionStorage.setItem(TOKEN_KEY, t);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch { /* storage disabled: the token lives until the page closes */ }
  memToken = t;
  if (t) declined = false;
  changed();
}

let asking = null; // the pending token prompt, shared by concurrent 401s
// The user cancelled the token dialog: 401s fail without asking again
// until "Enter token" (enterToken) is used.
let declined = false;
const NEED_DETAILS = 'The server has auth enabled. Use “Enter token” at the top of the page to give an access token.';

export function tokenDeclined() { return declined; }

function changed() {
  document.dispatchEvent(new CustomEvent('hourglass-token'));
}

// Shows the token dialog; resolves when a token was saved, rejects
// (ApiError 401) when cancelled.
function askToken(message) {
  if (asking) return asking;
  const dlg = document.getElementById('token-dialog');
  const input = document.getElementById('token');
  const msg = document.getElementById('token-message');
  msg.textContent = message;
  input.value = '';
  asking = new Promise((resolve, reject) => {
    const form = document.getElementById('token-form');
    const done = (ok) => {
      form.removeEventListener('submit', onSubmit);
      dlg.removeEventListener('cancel', onCancel);
      input.value = ''; // the token is not left in the page
      if (dlg.open) dlg.close();
      asking = null;
      if (ok) { resolve(); return; }
      declined = true;
      changed();
      reject(new ApiError(401, 'An access token is needed', NEED_DETAILS));
    };
    const onSubmit = (e) => {
      e.preventDefault();
      const t = input.value.trim();
      if (!t) { input.focus(); return; }
      setToken(t);
      done(true);
    };
    const onCancel = () => done(false);
    form.addEventListener('submit', onSubmit);
    dlg.addEventListener('cancel', onCancel);
    document.getElementById('token-cancel').onclick = () => done(false);
  });
  if (!dlg.open) dlg.showModal();
  input.focus();
  return asking;
}

// The "Enter token" button: the dialog again after a Cancel.
export function enterToken() {
  declined = false;
  return askToken('Enter an access token for this server.');
}

// fetch(path) with the token; returns the Response (ok) or throws ApiError.
// opts.signal aborts; opts.raw returns the text instead of parsed JSON.
export async function request(path, opts = {}) {
  for (let attempt = 0; ; attempt++) {
    const headers = { Accept: 'application/json' };
    const t = token();
    if (t) headers.Authorization = 'Bearer ' + t;
    let resp;
    try {
      resp = await fetch(path, { headers, signal: opts.signal, cache: 'no-store' });
    } catch (e) {
      if (e.name === 'AbortError') throw e;
      throw new ApiError(0, 'The server cannot be reached', String(e.message || e));
    }
    if (resp.status === 401 && attempt < 5) {
      // Another token was saved while this request ran: try that one (and
      // do not clear it: the 401 was for the old one).
      if (token() !== t && token()) continue;
      if (declined) throw new ApiError(401, 'An access token is needed', NEED_DETAILS);
      const msg = t ? 'The token was refused. Enter another access token.'
                    : 'This server asks for an access token.';
      if (t && token() === t) setToken('');
      await askToken(msg);
      continue;
    }
    if (!resp.ok) throw await toError(resp);
    return resp;
  }
}

async function toError(resp) {
  let text = '';
  try { text = await resp.text(); } catch { /* body lost */ }
  let message = `HTTP ${resp.status} ${resp.statusText}`.trim();
  let details = '';
  try {
    const j = JSON.parse(text);
    if (j && j.error) {
      message = j.error.message || message;
      details = j.error.details || '';
    }
  } catch {
    details = text.slice(0, 500);
  }
  if (resp.status === 403) {
    message = "The access token's scope is too small for this: " + message;
  }
  return new ApiError(resp.status, message, details);
}

export async function getJSON(path, opts) {
  const resp = await request(path, opts);
  return resp.json();
}

export async function getText(path, opts) {
  const resp = await request(path, opts);
  return resp.text();
}

// Builds "path?k=v&k=v" from [[k, v], ...]; a null value gives a bare flag.
export function url(path, pairs) {
  const q = pairs.map(([k, v]) => v == null ? encodeURIComponent(k)
    : encodeURIComponent(k) + '=' + encodeURIComponent(v)).join('&');
  return q ? path + '?' + q : path;
}

// Shows an error (ApiError or any) in a role=alert element.
export function showError(el, err) {
  el.replaceChildren();
  if (!err) { el.hidden = true; return; }
  const strong = document.createElement('strong');
  strong.textContent = err.status ? `Error ${err.status}: ` : 'Error: ';
  const msg = document.createElement('span');
  msg.textContent = err.message || String(err);
  el.append(strong, msg);
  if (err.details) {
    const d = document.createElement('pre');
    d.className = 'details';
    d.textContent = err.details;
    el.append(d);
  }
  el.hidden = false;
}
