'use strict';
// dom.js: building the page without markup strings. Every text that comes from the
// API goes into the DOM as a text node (h() turns strings into text nodes; nothing here
// sets innerHTML), so a task body holding <script> or an onerror attribute shows as
// text. Also the shared formatting (local times with the UTC ISO as a title, numbers,
// durations, state badges), tables, bars and the inline SVG line charts.
(function () {
  const MC = (window.MC = window.MC || {});
  const SVG = 'http://www.w3.org/2000/svg';

  // h('button', {class: 'btn', type: 'button', onclick: fn}, 'Cancel', child, ...)
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    setAttrs(el, attrs);
    appendList(el, children);
    return el;
  }

  function setAttrs(el, attrs) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
      else if (k === 'class') el.setAttribute('class', Array.isArray(v) ? v.filter(Boolean).join(' ') : v);
      else if (k === 'style') throw new Error('no style attributes (CSP): use a class');
      else if (k === 'value' || k === 'checked' || k === 'disabled' || k === 'selected') el[k] = v;
      else el.setAttribute(k, v === true ? '' : String(v));
    }
  }

  function append(el, ...children) {
    return appendList(el, children);
  }

  function appendList(el, children) {
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }

  function svg(tag, attrs, ...children) {
    const el = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v !== null && v !== undefined) el.setAttribute(k, String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c !== null && c !== undefined) el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }

  function clear(el) {
    while (el.firstChild) el.removeChild(el.firstChild);
    return el;
  }

  function replace(el, ...children) {
    return appendList(clear(el), children);
  }

  // ---- formatting ----------------------------------------------------------------

  const numFmt = new Intl.NumberFormat();
  const num = (n) => (n === null || n === undefined || Number.isNaN(n) ? '–' : numFmt.format(n));

  const timeFmt = new Intl.DateTimeFormat(undefined, {
    year: 'numeric', month: 'short', day: '2-digit',
    hour: '2-digit', minute: '2-digit', second: '2-digit',
  });
  const clockFmt = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });

  function iso(ms) {
    try {
      return new Date(ms).toISOString();
    } catch (e) {
      return String(ms);
    }
  }

  // A <time> in the browser's local time; its title is the UTC ISO instant.
  function time(ms, withRelative) {
    if (ms === null || ms === undefined || ms <= 0) return h('span', { class: 'muted' }, '–');
    const d = new Date(ms);
    const t = h('time', { datetime: iso(ms), title: iso(ms) + ' (epoch ms ' + ms + ')' }, timeFmt.format(d));
    if (!withRelative) return t;
    return h('span', {}, t, h('span', { class: 'muted' }, ' (' + relative(ms) + ')'));
  }

  function relative(ms) {
    const d = ms - Date.now();
    const s = Math.round(Math.abs(d) / 1000);
    const span = s < 60 ? s + ' s' : s < 3600 ? Math.round(s / 60) + ' min' : s < 172800 ? Math.round(s / 360) / 10 + ' h' : Math.round(s / 86400) + ' d';
    return d >= 0 ? 'in ' + span : span + ' ago';
  }

  function duration(ms) {
    if (ms === null || ms === undefined) return '–';
    if (ms < 1000) return num(ms) + ' ms';
    if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + ' s';
    return (ms / 60000).toFixed(1) + ' min';
  }

  // The value of a datetime-local input as epoch ms (local time), or NaN.
  function fromLocalInput(v) {
    return v ? new Date(v).getTime() : NaN;
  }

  // epoch ms as a datetime-local input's value, in local time.
  function toLocalInput(ms) {
    const d = new Date(ms);
    const p = (n) => String(n).padStart(2, '0');
    return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
  }

  // ---- states ---------------------------------------------------------------------

  MC.STATES = ['accepted', 'pendingStore', 'pendingWheel', 'held', 'calling', 'retrying',
    'cancelRequested', 'succeeded', 'failed', 'dead', 'cancelled', 'dropped', 'rejected'];
  MC.PENDING = ['accepted', 'pendingStore', 'pendingWheel', 'held', 'calling', 'retrying', 'cancelRequested'];

  function tone(state) {
    switch (state) {
      case 'succeeded': case 'SUCCEEDED': case 'ACTIVE': case 'requeued': case true:
        return 'ok';
      case 'failed': case 'dead': case 'rejected': case 'FAILED_PERMANENTLY': case 'EXHAUSTED':
        return 'bad';
      case 'retrying': case 'FAILED_WILL_RETRY': case 'PAUSED': case 'skipped':
        return 'warn';
      case 'calling': case 'held': case 'Stable':
        return 'info';
      case 'cancelled': case 'CANCELLED': case 'dropped': case 'DROPPED': case 'superseded': case 'ENDED': case 'unknown': case false:
        return 'muted';
      default:
        return 'neutral';
    }
  }

  function badge(state, label) {
    return h('span', { class: ['badge', 'badge-' + tone(state)], 'data-state': String(state) }, label || String(state));
  }

  // ---- building blocks ------------------------------------------------------------

  // A table that scrolls sideways on a phone. columns: [{label, cell(row) -> node|text, class}]
  function table(columns, rows, opts) {
    const o = opts || {};
    const thead = h('thead', {}, h('tr', {}, columns.map((c) => h('th', { scope: 'col', class: c.class }, c.label))));
    const tbody = h('tbody', {}, rows.map((r, i) => {
      const tr = h('tr', o.rowAttrs ? o.rowAttrs(r, i) : {}, columns.map((c) => h('td', { class: c.class }, c.cell(r, i))));
      return tr;
    }));
    return h('div', { class: 'table-wrap' }, h('table', { class: o.class || 'data' }, o.caption ? h('caption', {}, o.caption) : null, thead, tbody));
  }

  // A horizontal bar: value of max, with a text label beside it.
  function bar(value, max, label, toneName) {
    const fill = h('span', { class: ['bar-fill', toneName ? 'bar-' + toneName : null] });
    const pct = max > 0 ? Math.max(0, Math.min(100, (value / max) * 100)) : 0;
    fill.style.width = (value > 0 ? Math.max(pct, 1) : 0) + '%';
    return h('span', { class: 'bar' }, h('span', { class: 'bar-track', 'aria-hidden': 'true' }, fill), h('span', { class: 'bar-label' }, label));
  }

  function loading(text) {
    return h('p', { class: 'loading', role: 'status' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), text || 'Loading…');
  }

  function empty(text) {
    return h('p', { class: 'empty' }, text);
  }

  // An error line (role=alert) with the gateway's message; status shown when known.
  function errorLine(err, prefix) {
    const status = err && err.status ? ' (HTTP ' + err.status + ')' : '';
    return h('p', { class: 'error', role: 'alert' }, (prefix ? prefix + ': ' : '') + (err && err.message ? err.message : String(err)) + status);
  }

  // A label + control pair. control gets the id.
  let nextId = 0;
  function field(label, control, hint) {
    if (!control.id) control.id = 'f' + ++nextId;
    return h('div', { class: 'field' }, h('label', { for: control.id }, label), control, hint ? h('small', { class: 'hint' }, hint) : null);
  }

  function uid(prefix) {
    return (prefix || 'u') + ++nextId;
  }

  // A definition list from [label, value] pairs (pairs with value null are skipped).
  function dl(pairs) {
    return h('dl', { class: 'props' }, pairs.filter((p) => p && p[1] !== null && p[1] !== undefined).map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
  }

  function link(href, text, attrs) {
    return h('a', Object.assign({ href }, attrs || {}), text);
  }

  function taskHref(app, uuid) {
    return '#/task?' + MC.query({ app, uuid });
  }

  // ---- charts ---------------------------------------------------------------------

  // A line chart of per-minute series: minutes = epoch ms of each point, series =
  // [{name, values (numbers or null), tone: 0..3}], unit 'ms' for durations; width =
  // the px it is drawn at (drawn 1:1, so its text keeps its size).
  function lineChart(title, minutes, series, unit, width) {
    const W = Math.max(240, Math.round(width || 600)), H = 170, L = 52, R = 12, T = 10, B = 22;
    const all = series.flatMap((s) => s.values).filter((v) => v !== null && v !== undefined);
    const max = niceMax(all.length ? Math.max(...all) : 0);
    const n = minutes.length;
    const x = (i) => L + (n <= 1 ? 0 : (i * (W - L - R)) / (n - 1));
    const y = (v) => T + (H - T - B) * (1 - v / max);
    const fmt = (v) => (unit === 'ms' ? duration(v) : num(v));

    const grid = [0, max / 2, max].map((v) => [
      svg('line', { x1: L, x2: W - R, y1: y(v), y2: y(v), class: 'grid' }),
      svg('text', { x: L - 6, y: y(v) + 4, class: 'axis', 'text-anchor': 'end' }, fmt(v)),
    ]);
    const xt = n ? [0, Math.floor((n - 1) / 2), n - 1].map((i, k) =>
      svg('text', { x: x(i), y: H - 6, class: 'axis', 'text-anchor': ['start', 'middle', 'end'][k] }, clockFmt.format(new Date(minutes[i])))) : [];

    const lines = series.map((s) => {
      // A null breaks the line (no sample that minute).
      const paths = [];
      let cur = [];
      s.values.forEach((v, i) => {
        if (v === null || v === undefined) {
          if (cur.length) paths.push(cur);
          cur = [];
        } else cur.push(x(i).toFixed(1) + ',' + y(v).toFixed(1));
      });
      if (cur.length) paths.push(cur);
      return paths.map((p) => p.length === 1
        ? svg('circle', { cx: p[0].split(',')[0], cy: p[0].split(',')[1], r: 2, class: 'dot tone-' + s.tone })
        : svg('polyline', { points: p.join(' '), class: 'line tone-' + s.tone }));
    });

    // One transparent column per minute, with every series' value as its tooltip.
    const cols = minutes.map((m, i) => svg('rect', {
      x: x(i) - (W - L - R) / Math.max(1, n - 1) / 2, y: T, width: (W - L - R) / Math.max(1, n - 1), height: H - T - B, class: 'hover',
    }, svg('title', {}, clockFmt.format(new Date(m)) + ' — ' + series.map((s) => s.name + ' ' + (s.values[i] === null || s.values[i] === undefined ? '–' : fmt(s.values[i]))).join(', '))));

    const chart = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': title },
      svg('title', {}, title), grid, xt, lines, cols);
    const legend = h('ul', { class: 'legend' }, series.map((s) => {
      const vals = s.values.filter((v) => v !== null && v !== undefined);
      const extra = unit === 'ms'
        ? 'latest ' + (vals.length ? fmt(vals[vals.length - 1]) : '–')
        : num(vals.reduce((a, v) => a + v, 0)) + ' in the hour';
      return h('li', {}, h('span', { class: 'swatch tone-' + s.tone, 'aria-hidden': 'true' }), s.name, h('span', { class: 'muted' }, ' · ' + extra));
    }));
    return h('figure', { class: 'chart-card' }, h('figcaption', {}, title), chart, legend);
  }

  function niceMax(v) {
    if (!(v > 0)) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
    return 10 * p;
  }

  // Whether data differs from what holder last saw (and remembers it): a refresh that
  // changed nothing leaves the page alone, so focus, an opened <details> and the scroll
  // position stay.
  function changed(holder, data) {
    const s = JSON.stringify(data);
    if (holder.last === s) return false;
    holder.last = s;
    return true;
  }

  Object.assign(MC, {
    changed,
    h, svg, clear, replace, append, num, time, iso, relative, duration, fromLocalInput, toLocalInput,
    tone, badge, table, bar, loading, empty, errorLine, field, uid, dl, link, taskHref, lineChart,
  });
})();
