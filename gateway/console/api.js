'use strict';
// api.js: how the console talks to the gateway. The bearer token lives in
// sessionStorage only (gone when the tab closes), is sent as an Authorization header
// on same-origin fetches, and is never put in a URL or logged. Every answer is the
// gateway's envelope {"code","msg","data"}: data is returned, anything else thrown as
// an ApiError carrying the HTTP status and the gateway's msg.
(function () {
  const MC = (window.MC = window.MC || {});
  const TOKEN_KEY = 'mooncake.console.token';

  MC.token = {
    get: () => sessionStorage.getItem(TOKEN_KEY),
    set: (t) => sessionStorage.setItem(TOKEN_KEY, t),
    clear: () => sessionStorage.removeItem(TOKEN_KEY),
  };

  class ApiError extends Error {
    constructor(status, msg, data) {
      super(msg);
      this.status = status;
      this.data = data;
    }
  }
  MC.ApiError = ApiError;

  // Called on a 401 (set by console.js): back to the login with the gateway's message.
  MC.onUnauthorized = null;

  // One request. path is absolute on this origin ("/api/task?..."); body, if given, is
  // sent as JSON. Resolves to the envelope's data; rejects with an ApiError.
  // opts.idempotent: an Idempotency-Key of its own, so the gateway answers a repeat of
  // this one request (a lost answer retried) without doing it twice.
  MC.api = async function (method, path, body, opts) {
    const token = MC.token.get();
    const headers = { Accept: 'application/json' };
    if (token) headers.Authorization = 'Bearer ' + token;
    if (opts && opts.idempotent) {
      const b = crypto.getRandomValues(new Uint8Array(16));
      headers['Idempotency-Key'] = 'console-' + Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
    }
    const init = { method, headers, cache: 'no-store', credentials: 'omit', redirect: 'error' };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(path, init);
    } catch (e) {
      throw new ApiError(0, 'The gateway did not answer (network error).', null);
    }
    let env = null;
    try {
      env = await res.json();
    } catch (e) {
      env = null;
    }
    const msg = env && typeof env.msg === 'string' ? env.msg : `HTTP ${res.status} ${res.statusText}`;
    if (res.status === 401) {
      if (MC.onUnauthorized) MC.onUnauthorized(msg);
      throw new ApiError(401, msg, null);
    }
    if (!res.ok || !env || env.code !== 0) throw new ApiError(res.status, msg, env ? env.data : null);
    return env.data;
  };

  MC.get = (path, params) => MC.api('GET', params ? path + '?' + MC.query(params) : path);
  MC.post = (path, body, opts) => MC.api('POST', path, body, opts);

  // A query string of the params that are set (null, undefined and '' are left out).
  MC.query = function (params) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) {
      if (v !== null && v !== undefined && v !== '') q.set(k, String(v));
    }
    return q.toString();
  };
})();
