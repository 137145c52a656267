'use strict';
// pages-ops.js: the operator's pages. "Overview" (#/overview): an app's last hour per
// minute as charts, its tasks per state now and, for admins, each partition's lag and
// owner; refreshed every 5 s while the tab is visible. "Dead letters"
// (#/dead-letters): filter, select and requeue, each letter's outcome on its row.
// "Cluster" (#/cluster, admin tokens): consumer groups, members, partitions and lag.
(function () {
  const MC = (window.MC = window.MC || {});
  const { h, replace, time, num, badge, table, field, errorLine, loading, empty, bar } = MC;
  MC.pages = MC.pages || {};

  // ---- overview -----------------------------------------------------------------------

  MC.pages.overview = {
    title: 'Overview',
    async render(ctx) {
      const app = ctx.app;
      if (!app) {
        replace(ctx.root, h('h1', {}, 'Overview'), empty('Choose an app above.'));
        return;
      }
      const status = h('span', { class: 'muted small', role: 'status', id: 'overview-status' }, 'Loading…');
      const kpis = h('div', { class: 'kpis', id: 'overview-kpis' });
      const charts = h('div', { class: 'charts', id: 'overview-charts' }, loading());
      const states = h('div', { class: 'card', id: 'overview-states' }, h('h2', {}, 'Tasks not final yet, by state'), loading());
      const cluster = ctx.admin ? h('div', { class: 'card', id: 'overview-cluster' }, h('h2', {}, 'Partitions'), loading()) : null;
      replace(ctx.root, h('div', { class: 'page-head' }, h('h1', {}, 'Overview ', h('span', { class: 'muted' }, 'of ' + app)), status),
        kpis, charts, h('div', { class: 'grid-2' }, states, cluster));

      const seenStats = {}, seenCluster = {};
      async function refresh() {
        const [s, c] = await Promise.allSettled([
          MC.get('/api/stats', { appId: app }),
          ctx.admin ? MC.get('/api/cluster') : Promise.resolve(null),
        ]);
        if (!ctx.alive) return;
        if (s.status === 'fulfilled') {
          if (MC.changed(seenStats, [s.value, charts.clientWidth])) renderStats(s.value, kpis, charts, states);
          replace(status, 'Every 5 s · updated ', time(Date.now()));
        } else if (s.reason.status !== 401) {
          replace(status, errorLine(s.reason, 'Stats'));
          if (!kpis.firstChild) replace(charts, errorLine(s.reason, 'Could not read the stats'));
        }
        if (cluster) {
          if (c.status === 'fulfilled') {
            if (MC.changed(seenCluster, c.value.groups)) replace(cluster, h('h2', {}, 'Partitions: lag and owner'), partitionBars(c.value));
          } else if (c.reason.status !== 401) replace(cluster, h('h2', {}, 'Partitions'), errorLine(c.reason, 'Cluster'));
        }
      }
      ctx.every(5000, refresh);
      await refresh();
    },
  };

  function renderStats(s, kpis, charts, states) {
    const tasks = s.tasks || { total: 0 };
    const last = s.lastHour || {};
    const notFinal = MC.PENDING.reduce((a, k) => a + (tasks[k] || 0), 0);
    const kpi = (label, value, tone) => h('div', { class: ['kpi', tone ? 'kpi-' + tone : null] }, h('div', { class: 'kpi-value' }, num(value)), h('div', { class: 'kpi-label' }, label));
    replace(kpis,
      kpi('tasks held by the view', tasks.total),
      kpi('not final yet', notFinal),
      kpi('calls, last hour', last.calls),
      kpi('failed calls, last hour', last.failures, last.failures ? 'warn' : null),
      kpi('dead letters, last hour', last.deadLetters, last.deadLetters ? 'bad' : null));

    const mins = Array.isArray(s.minutes) ? s.minutes : null;
    if (mins && mins.length) {
      const at = mins.map((m) => m.minute);
      const col = (k) => mins.map((m) => (m[k] === undefined ? null : m[k]));
      // As many columns as the grid makes of 360 px (gap 16), less a card's padding.
      const full = charts.clientWidth || 1000;
      const cols = Math.max(1, Math.min(3, Math.floor((full + 16) / (360 + 16))));
      const w = (full - 16 * (cols - 1)) / cols - 30;
      replace(charts,
        MC.lineChart('Submitted and called, per minute', at, [
          { name: 'submitted', values: col('submitted'), tone: 0 }, { name: 'calls', values: col('calls'), tone: 1 }], '', w),
        MC.lineChart('Failed calls and dead letters, per minute', at, [
          { name: 'failures', values: col('failures'), tone: 2 }, { name: 'dead', values: col('dead'), tone: 3 }], '', w),
        MC.lineChart('Lateness of calls, per minute', at, [
          { name: 'p50', values: col('lateP50Ms'), tone: 0 }, { name: 'p99', values: col('lateP99Ms'), tone: 3 }], 'ms', w));
    } else {
      replace(charts, h('p', { class: 'empty' }, 'No per-minute history in this gateway\'s answer (GET /api/stats has no "minutes").'));
    }

    const pend = MC.PENDING.map((k) => [k, tasks[k] || 0]);
    const finals = Object.entries(tasks).filter(([k]) => k !== 'total' && !MC.PENDING.includes(k));
    const max = Math.max(1, ...pend.map(([, v]) => v));
    const maxF = Math.max(1, ...finals.map(([, v]) => v));
    replace(states, h('h2', {}, 'Tasks now, by state'),
      h('ul', { class: 'bars' }, pend.map(([k, v]) => h('li', { 'data-state': k },
        h('a', { href: '#/tasks?' + MC.query({ state: k }), class: 'bar-name' }, k), bar(v, max, num(v))))),
      finals.length ? [h('h3', {}, 'Ended within the view\'s history'),
        h('ul', { class: 'bars' }, finals.map(([k, v]) => h('li', { 'data-state': k },
          h('a', { href: '#/tasks?' + MC.query({ state: k }), class: 'bar-name' }, k), bar(v, maxF, num(v), MC.tone(k))))),
      ] : null);
  }

  // A bar per partition of each group: its lag, with its owner.
  function partitionBars(c) {
    const groups = (c && c.groups) || [];
    if (!groups.length) return empty('No consumer groups.');
    // At least 100 wide, so a lag of 1 (a transaction's commit marker) looks small.
    const max = Math.max(100, ...groups.flatMap((g) => (g.partitions || []).map((p) => p.lag || 0)));
    return groups.map((g) => h('div', { class: 'group-bars' },
      h('h3', {}, g.role + ' ', h('span', { class: 'muted mono small' }, g.group)),
      (g.partitions || []).length ? h('ul', { class: 'bars' }, g.partitions.map((p) => h('li', {},
        h('span', { class: 'bar-name mono', title: (p.topic || g.topic || '') + ' partition ' + p.partition }, partName(g, p)),
        bar(p.lag || 0, max, 'lag ' + num(p.lag) + ' · ' + (p.owner ? shortName(g, p.owner) : 'no owner'), p.owner ? (p.lag > 1000 ? 'warn' : null) : 'bad'))))
        : empty('No partitions assigned.')));
  }

  // "ready/2": a partition by its topic without the deployment's prefix (the group is
  // <prefix><role>), for groups that read several topics.
  function partName(g, p) {
    const topic = p.topic || g.topic || '';
    const prefix = g.group && g.role && g.group.endsWith(g.role) ? g.group.slice(0, -g.role.length) : '';
    const short = prefix && topic.startsWith(prefix) ? topic.slice(prefix.length) : topic;
    return (short ? short + '/' : 'p') + p.partition;
  }

  // A name without the deployment's topic prefix.
  function shortName(g, name) {
    const prefix = g.group && g.role && g.group.endsWith(g.role) ? g.group.slice(0, -g.role.length) : '';
    return prefix && name.startsWith(prefix) ? name.slice(prefix.length) : name;
  }

  function memberParts(m) {
    return (m.partitions || []).map((x) => (typeof x === 'object' && x ? (x.topic ? x.topic + '/' : '') + x.partition : String(x)));
  }

  // ---- dead letters -------------------------------------------------------------------

  MC.pages['dead-letters'] = {
    title: 'Dead letters',
    async render(ctx) {
      const app = ctx.app;
      const p = ctx.params;
      if (!app) {
        replace(ctx.root, h('h1', {}, 'Dead letters'), empty('Choose an app above.'));
        return;
      }
      const reasonIn = h('input', { type: 'search', name: 'reason', value: p.reason || '', placeholder: 'text in the reason', autocomplete: 'off' });
      const fromIn = h('input', { type: 'datetime-local', name: 'from', step: 1 });
      const toIn = h('input', { type: 'datetime-local', name: 'to', step: 1 });
      if (p.from) fromIn.value = MC.toLocalInput(Number(p.from));
      if (p.to) toIn.value = MC.toLocalInput(Number(p.to));
      const limitSel = h('select', { name: 'limit' }, ['50', '100', '500'].map((n) => h('option', { value: n, selected: n === (p.limit || '100') }, n)));
      const form = h('form', { class: 'card form-row', id: 'dead-form' },
        field('Reason contains', reasonIn), field('From (local time)', fromIn), field('To (local time)', toIn), field('At most', limitSel),
        h('div', { class: 'field field-button' }, h('button', { type: 'submit', class: 'btn btn-primary' }, 'Filter')));
      form.addEventListener('submit', (ev) => {
        ev.preventDefault();
        const f = MC.fromLocalInput(fromIn.value), t = MC.fromLocalInput(toIn.value);
        location.hash = '#/dead-letters?' + MC.query({ reason: reasonIn.value.trim(), from: Number.isFinite(f) ? f : '', to: Number.isFinite(t) ? t : '', limit: limitSel.value });
      });
      const list = h('div', { id: 'dead-list' }, loading('Reading the dead letters…'));
      replace(ctx.root, h('div', { class: 'page-head' }, h('h1', {}, 'Dead letters ', h('span', { class: 'muted' }, 'of ' + app)),
        h('button', { type: 'button', class: 'btn', onclick: () => MC.reload() }, 'Refresh')), form, list);

      let d;
      try {
        d = await MC.get('/api/dead-letters', { appId: app, reason: p.reason, from: p.from, to: p.to, limit: p.limit || 100 });
      } catch (e) {
        if (ctx.alive && e.status !== 401) replace(list, errorLine(e, 'Could not read the dead letters'));
        return;
      }
      if (!ctx.alive) return;
      const letters = d.letters || [];
      if (!letters.length) {
        replace(list, empty('No dead letters match.'));
        return;
      }
      const id = (l) => l.partition + ':' + l.offset;
      const boxes = new Map(), results = new Map(), buttons = new Map(), marks = new Map();
      const bulkMsg = h('span', { class: 'action-msg', role: 'status', id: 'dead-bulk-msg' });
      const bulkBtn = h('button', { type: 'button', class: 'btn btn-primary', id: 'dead-requeue-selected', disabled: true }, 'Requeue selected');
      const all = h('input', { type: 'checkbox', id: 'dead-all' });
      const selected = () => letters.filter((l) => boxes.get(id(l)).checked);
      const sync = () => {
        const n = selected().length;
        bulkBtn.disabled = n === 0;
        bulkBtn.textContent = n ? 'Requeue selected (' + num(n) + ')' : 'Requeue selected';
        all.checked = n === letters.length;
        all.indeterminate = n > 0 && n < letters.length;
      };
      all.addEventListener('change', () => { boxes.forEach((b) => { b.checked = all.checked; }); sync(); });

      // Requeues chosen letters; each one's outcome goes on its row, and a summary to
      // msg (the bulk button's line; null for a row's own button).
      async function requeue(chosen, msg) {
        if (!chosen.length) return;
        if (!window.confirm(`Requeue ${chosen.length} dead letter(s) of ${app}? Each task is submitted again and called.`)) return;
        chosen.forEach((l) => { buttons.get(id(l)).disabled = true; replace(results.get(id(l)), 'Sending…'); });
        if (msg) {
          replace(msg, 'Sending…');
          msg.className = 'action-msg';
        }
        try {
          const r = await MC.post('/api/dead-letters/requeue', { appId: app, letters: chosen.map((l) => ({ partition: l.partition, offset: l.offset })) });
          const out = (r && r.results) || [];
          const done = out.filter((x) => x.action === 'requeued').length;
          out.forEach((x) => {
            const cell = results.get(x.partition + ':' + x.offset);
            if (cell) replace(cell, badge(x.action), x.why ? ' ' + x.why : '');
            // The ledger has it now (or had it already): the Requeued column says so.
            const mark = marks.get(x.partition + ':' + x.offset);
            if (mark && (x.action === 'requeued' || /already requeued/.test(x.why || ''))) replace(mark, badge('requeued', 'yes'));
          });
          chosen.forEach((l) => { const c = results.get(id(l)); if (c && c.textContent === 'Sending…') replace(c, h('span', { class: 'muted' }, 'no answer for this letter')); });
          if (msg) {
            replace(msg, num(done) + ' requeued, ' + num(out.length - done) + ' skipped.');
            msg.className = 'action-msg ok';
          }
        } catch (e) {
          if (msg) {
            replace(msg, e.message + (e.status ? ' (HTTP ' + e.status + ')' : ''));
            msg.className = 'action-msg error';
          }
          chosen.forEach((l) => replace(results.get(id(l)), h('span', { class: 'error' }, e.message)));
        } finally {
          chosen.forEach((l) => { buttons.get(id(l)).disabled = false; });
        }
      }
      bulkBtn.addEventListener('click', () => requeue(selected(), bulkMsg));

      const tbl = table([
        { label: h('span', {}, h('label', { for: 'dead-all', class: 'sr-only' }, 'Select all'), all), class: 'check', cell: (l) => {
          const b = h('input', { type: 'checkbox', id: 'dead-' + l.partition + '-' + l.offset, 'data-letter': id(l) });
          b.addEventListener('change', sync);
          boxes.set(id(l), b);
          return [h('label', { for: b.id, class: 'sr-only' }, 'Select ' + (l.key || id(l))), b];
        } },
        { label: 'Dead at', cell: (l) => time(l.timestamp) },
        { label: 'Task', cell: (l) => l.uuid ? h('a', { href: MC.taskHref(l.appId || app, l.uuid), class: 'mono', title: l.task && l.task.callback ? (l.task.callback.method || '') + ' ' + MC.targetText(l.task.callback) : null }, l.uuid) : h('span', { class: 'mono' }, l.key || '–') },
        { label: 'Reason', cell: (l) => h('span', { class: 'reason' }, l.reason || '') },
        { label: 'Attempt', class: 'num', cell: (l) => num(l.attempt) },
        { label: 'Source', cell: (l) => l.source || '–' },
        { label: 'Was due', cell: (l) => (l.task ? time(l.task.dueAt) : h('span', { class: 'muted' }, 'no task')) },
        { label: 'Requeued', cell: (l) => {
          const mark = h('span', { 'data-requeued': id(l) }, l.requeued ? badge('requeued', 'yes') : h('span', { class: 'muted' }, 'no'));
          marks.set(id(l), mark);
          return mark;
        } },
        { label: 'Action', cell: (l) => {
          const b = h('button', { type: 'button', class: 'btn btn-small', 'data-requeue': id(l) }, 'Requeue');
          buttons.set(id(l), b);
          const cell = h('span', { class: 'result', 'data-result': id(l) });
          results.set(id(l), cell);
          b.addEventListener('click', () => requeue([l], null));
          return h('div', { class: 'row-action' }, b, cell);
        } },
      ], letters, { rowAttrs: (l) => ({ 'data-letter': id(l), 'data-uuid': l.uuid || '' }) });
      replace(list, h('div', { class: 'toolbar' }, bulkBtn, bulkMsg,
        h('span', { class: 'muted' }, num(letters.length) + ' letter(s)' + (d.more ? '; more match: narrow the time range or raise the limit' : ''))), tbl);
    },
  };

  // ---- cluster ------------------------------------------------------------------------

  MC.pages.cluster = {
    title: 'Cluster',
    async render(ctx) {
      const head = h('div', { class: 'page-head' }, h('h1', {}, 'Cluster'));
      const needAdmin = () => replace(ctx.root, head, h('p', { class: 'card notice', id: 'cluster-needs-admin' },
        'The cluster view needs an admin token: this token acts on its app\'s tasks and jobs only. Sign in with an admin token (--admin-tokens) to see the consumer groups, partitions and lag.'));
      if (!ctx.admin) {
        needAdmin();
        return;
      }
      const status = h('span', { class: 'muted small', role: 'status' }, '');
      const body = h('div', { id: 'cluster-body' }, loading('Asking the cluster…'));
      head.appendChild(status);
      replace(ctx.root, head, body);
      async function refresh() {
        let c;
        try {
          c = await MC.get('/api/cluster');
        } catch (e) {
          if (!ctx.alive || e.status === 401) return;
          if (e.status === 403) needAdmin();
          else replace(body, errorLine(e, 'Could not read the cluster'));
          return;
        }
        if (!ctx.alive) return;
        replace(status, 'Every 5 s · updated ', time(Date.now()));
        replace(body, renderCluster(c));
      }
      ctx.every(5000, refresh);
      await refresh();
    },
  };

  function renderCluster(c) {
    const roles = (c.process && c.process.roles) || [];
    const checks = (c.process && c.process.checks) || [];
    const groups = c.groups || [];
    const maxLag = Math.max(100, ...groups.flatMap((g) => (g.partitions || []).map((p) => p.lag || 0)));
    return [
      h('div', { class: 'card' }, h('h2', {}, 'This process ',
        c.process && c.process.ready !== undefined ? badge(!!c.process.ready, c.process.ready ? 'ready' : c.process.starting ? 'starting' : 'not ready') : null),
        checks.length ? table([
          { label: 'Check', cell: (k) => h('span', { class: 'mono' }, k.name) },
          { label: 'State', cell: (k) => badge(!!k.ok, k.ok ? 'ok' : 'failing') },
          { label: 'Why', cell: (k) => k.why || '–' },
        ], checks) : null,
        roles.length ? table([
          { label: 'Role', cell: (r) => r.role },
          { label: 'Ready', cell: (r) => badge(!!r.ready, r.ready ? 'ready' : 'not ready') },
          { label: 'Restore', cell: (r) => (r.restore ? bar(r.restore.done, r.restore.total, num(r.restore.done) + ' / ' + num(r.restore.total)) : h('span', { class: 'muted' }, '–')) },
        ], roles) : checks.length ? null : empty('No roles reported.')),
      groups.map((g) => h('section', { class: 'card group', 'data-group': g.group },
        h('h2', {}, g.role + ' ', badge(g.state || 'unknown', g.state || 'unknown')),
        h('p', { class: 'muted small mono break' }, 'group ' + g.group + (g.topic ? ' · topic ' + g.topic : '')),
        h('h3', {}, 'Partitions'),
        (g.partitions || []).length ? table([
          { label: 'Partition', cell: (p) => h('span', { class: 'mono', title: p.topic || g.topic || '' }, partName(g, p)) },
          { label: 'Owner', cell: (p) => (p.owner ? h('span', { class: 'mono' }, p.owner) : badge('failed', 'none')) },
          { label: 'Committed', class: 'num', cell: (p) => num(p.committed) },
          { label: 'End', class: 'num', cell: (p) => num(p.end) },
          { label: 'Lag', cell: (p) => bar(p.lag || 0, maxLag, num(p.lag), p.lag > 1000 ? 'warn' : null) },
        ], g.partitions) : empty('No partitions.'),
        h('h3', {}, 'Members'),
        (g.members || []).length ? table([
          { label: 'Member', cell: (m) => h('span', { class: 'mono clip', title: m.memberId }, m.memberId) },
          { label: 'Instance', cell: (m) => m.instanceId || '–' },
          { label: 'Client', cell: (m) => m.clientId || '–' },
          { label: 'Host', cell: (m) => m.host || '–' },
          { label: 'Partitions', cell: (m) => h('span', { class: 'mono' }, memberParts(m).map((x) => x.replace(g.group.slice(0, g.group.length - (g.role || '').length), '')).join(', ') || '–') },
        ], g.members) : empty('No members.'))),
      groups.length ? null : empty('No consumer groups.'),
    ];
  }
})();
