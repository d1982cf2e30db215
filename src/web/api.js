// Requests to this server with the session's API key (sessionStorage), and the key panel a 401
// opens: what answered 401 registers itself (retryAfterKey) to run again once a key is entered.
import { $ } from './dom.js';

const KEY_STORAGE = 'local-inference-server.api-key';

const apiKey = () => sessionStorage.getItem(KEY_STORAGE) || '';

/** What to do once a key is entered (retry what answered 401); else the default (reloading the models). */
let afterKey = null;
let byDefault = () => {};

/** `retry` runs once a key is entered (null: nothing does). */
export function retryAfterKey(retry) {
  afterKey = retry;
}

/** What runs after a key is entered when nothing asked to be retried. */
export function onKeyEntered(retry) {
  byDefault = retry;
}

/** fetch against this server, with the session's key; a 401 opens the key panel with the server's words. */
export async function api(path, init = {}) {
  const headers = new Headers(init.headers || {});
  if (apiKey()) headers.set('authorization', `Bearer ${apiKey()}`);
  const response = await fetch(path, { ...init, headers });
  if (response.status === 401) {
    const message = await errorMessage(response);
    askForKey(`401 Unauthorized: ${message}`);
    const error = new Error(`401 Unauthorized: ${message}`);
    error.status = 401;
    throw error;
  }
  return response;
}

/** The message of an error answer, in any of the server's envelopes. */
export async function errorMessage(response) {
  const body = await response.text();
  try {
    const parsed = JSON.parse(body);
    const e = parsed.error;
    if (typeof e === 'string') return e;
    if (e && typeof e.message === 'string') return e.message;
    if (typeof parsed.message === 'string') return parsed.message;
  } catch {
    // not JSON: the raw text below
  }
  return body || response.statusText;
}

function askForKey(message) {
  $('key-message').textContent = apiKey() ? `${message} (the key given was refused)` : message;
  $('key-panel').hidden = false;
  $('key-input').focus();
}

$('key-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const key = $('key-input').value.trim();
  if (key) sessionStorage.setItem(KEY_STORAGE, key);
  else sessionStorage.removeItem(KEY_STORAGE);
  $('key-input').value = '';
  $('key-panel').hidden = true;
  const retry = afterKey || byDefault;
  afterKey = null;
  retry();
});
