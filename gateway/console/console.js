'use strict';
// console.js: the console's frame. Login and logout, who the token is (GET
// /api/whoami), the app selector, the top nav and the hash router (#/page?app=…&uuid=…;
// the token is never in the URL), and the page timers that refresh a page only while
// the tab is visible. The pages themselves are in pages-*.js (MC.pages).
(function () {
  const MC = (window.MC = window.MC || {});
  const { h, replace } = MC;
  const APP_KEY = 'mooncake.console.app';
  const $ = (id) => document.getElementById(id);

  MC.state = { admin: false, apps: [], app: '', whoamiMissing: false };
  let current = null; // the page on show: {name, disposed, timers, cleanups}

  // ---- login ------------------------------------------------------------------------

  function showLogin(message) {
    stopPage();
    $('app').hidden = true;
    $('login').hidden = false;
    const err = $('login-error');
    err.hidden = !message;
    err.textContent = message || '';
    document.title = 'Sign in · mooncake console';
    $('login-token').value = '';
    $('login-token').focus();
  }

  MC.onUnauthorized = (msg) => {
    MC.token.clear();
    showLogin('Signed out: ' + msg);
  };

  $('login-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const token = $('login-token').value.trim();
    if (!token) {
      showLogin('Type a token.');
      return;
    }
    MC.token.set(token);
    $('login-submit').disabled = true;
    try {
      await startSession();
    } finally {
      $('login-submit').disabled = false;
    }
  });

  $('logout').addEventListener('click', () => {
    MC.token.clear();
    sessionStorage.removeItem(APP_KEY);
    MC.state = { admin: false, apps: [], app: '', whoamiMissing: false };
    showLogin('Logged out.');
  });

  async function startSession() {
    let who;
    try {
      who = await MC.get('/api/whoami');
    } catch (e) {
      if (e.status === 401) return; // onUnauthorized has shown the login
      if (e.status !== 404) {
        MC.token.clear();
        showLogin('Could not sign in: ' + e.message);
        return;
      }
      // A gateway without /api/whoami: the app is typed; the token is checked by the
      // first question (a 401 returns here).
      who = { admin: false, apps: [], missing: true };
    }
    MC.state.admin = !!who.admin;
    MC.state.apps = Array.isArray(who.apps) ? who.apps : [];
    MC.state.whoamiMissing = !!who.missing;
    const saved = sessionStorage.getItem(APP_KEY);
    MC.state.app = saved && (MC.state.admin || MC.state.whoamiMissing || MC.state.apps.includes(saved))
      ? saved : MC.state.apps[0] || '';
    renderSession();
    $('login').hidden = true;
    $('app').hidden = false;
    if (!location.hash || location.hash === '#' || location.hash === '#/') location.hash = '#/overview';
    else route();
  }

  // ---- the app selector -------------------------------------------------------------

  function renderSession() {
    const s = MC.state;
    let control;
    if (s.admin || s.whoamiMissing || s.apps.length === 0) {
      const listId = 'apps-datalist';
      control = h('span', { class: 'app-free' },
        h('input', { id: 'app-select', type: 'text', value: s.app, list: listId, placeholder: 'app id', autocomplete: 'off', spellcheck: 'false', size: 12 }),
        h('datalist', { id: listId }, s.apps.map((a) => h('option', { value: a }))),
        h('button', { type: 'submit', class: 'btn btn-small' }, 'Use'));
    } else {
      control = h('select', { id: 'app-select' }, s.apps.map((a) => h('option', { value: a, selected: a === s.app }, a)));
      control.addEventListener('change', () => setApp(control.value));
    }
    replace($('app-control'), control);
    $('who').textContent = s.admin ? 'admin' : s.whoamiMissing ? '' : s.apps.length === 1 ? 'app token' : 'app token · ' + s.apps.length + ' apps';
    document.querySelectorAll('[data-admin-only]').forEach((el) => { el.hidden = !s.admin; });
  }

  $('app-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    setApp($('app-select').value.trim());
  });

  function setApp(app) {
    if (app === MC.state.app) return;
    MC.state.app = app;
    if (app) sessionStorage.setItem(APP_KEY, app);
    route();
  }
  MC.setApp = (app) => {
    if (app && app !== MC.state.app) {
      MC.state.app = app;
      sessionStorage.setItem(APP_KEY, app);
      const el = $('app-select');
      if (el) el.value = app;
    }
  };

  // ---- nav --------------------------------------------------------------------------

  $('menu-toggle').addEventListener('click', () => {
    const open = $('nav').classList.toggle('open');
    $('menu-toggle').setAttribute('aria-expanded', String(open));
  });

  // ---- routing and page timers --------------------------------------------------------

  function parseHash() {
    const raw = location.hash.replace(/^#\/?/, '');
    const q = raw.indexOf('?');
    const name = (q < 0 ? raw : raw.slice(0, q)) || 'overview';
    const params = Object.fromEntries(new URLSearchParams(q < 0 ? '' : raw.slice(q + 1)));
    return { name, params };
  }

  function stopPage() {
    if (!current) return;
    current.disposed = true;
    current.timers.forEach((t) => clearTimeout(t.handle));
    current.cleanups.forEach((f) => f());
    current = null;
  }

  function route() {
    if (!MC.token.get() || $('app').hidden) return;
    const { name, params } = parseHash();
    const page = MC.pages[name] ? name : 'overview';
    stopPage();
    $('nav').classList.remove('open');
    $('menu-toggle').setAttribute('aria-expanded', 'false');
    document.querySelectorAll('#nav a').forEach((a) => {
      if (a.dataset.page === page) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    });
    const def = MC.pages[page];
    document.title = def.title + ' · mooncake console';
    const main = $('main');
    const root = h('div', { class: 'page page-' + page });
    replace(main, root);
    const ctx = (current = { name: page, disposed: false, timers: [], cleanups: [] });
    const api = {
      root,
      params,
      app: MC.state.app,
      admin: MC.state.admin,
      get alive() { return !ctx.disposed; },
      // Runs fn every ms while the tab is visible and the page is shown (not
      // overlapping: the next run is scheduled when one ends). Returns a stopper.
      every(ms, fn) {
        const t = { handle: null, stopped: false };
        ctx.timers.push(t);
        const tick = async () => {
          if (ctx.disposed || t.stopped || t.running) return;
          if (!document.hidden) {
            t.running = true;
            try { await fn(); } catch (e) { /* the page shows its own errors */ }
            t.running = false;
          }
          if (!ctx.disposed && !t.stopped) t.handle = setTimeout(tick, ms);
        };
        t.handle = setTimeout(tick, ms);
        t.kick = () => { if (!t.running) { clearTimeout(t.handle); tick(); } };
        return () => { t.stopped = true; clearTimeout(t.handle); };
      },
      onCleanup(f) { ctx.cleanups.push(f); },
    };
    try {
      const r = def.render(api);
      if (r && r.catch) r.catch((e) => { if (!ctx.disposed && e.status !== 401) MC.append(root, MC.errorLine(e)); });
    } catch (e) {
      MC.append(root, MC.errorLine(e));
    }
  }

  MC.reload = route;

  document.addEventListener('visibilitychange', () => {
    if (!document.hidden && current) current.timers.forEach((t) => t.kick && !t.stopped && t.kick());
  });
  window.addEventListener('hashchange', route);

  // ---- start ------------------------------------------------------------------------

  if (MC.token.get()) startSession();
  else showLogin('');
})();
