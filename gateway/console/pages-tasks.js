'use strict';
// pages-tasks.js: the task pages. "Task lookup" (#/task?app=A&uuid=U) shows one task's
// state, callback (or Kafka target) and story (versions and attempts), refreshed every
// 2 s until it is final, with Cancel, Run now and Re-submit at another time. "Tasks"
// (#/tasks) pages an app's tasks by due time with a state filter and the counts per state.
(function () {
  const MC = (window.MC = window.MC || {});
  const { h, replace, append, time, num, badge, duration, table, dl, field, errorLine, loading, empty } = MC;
  MC.pages = MC.pages || {};
  // Shared with the jobs page, which shows a job's policies and follow-ups the same way.
  MC.lateText = lateText;
  MC.retryText = retryText;
  MC.targetText = targetText;

  // Where a callback goes: its URL, or "group NAME/PATH (STRATEGY)" for an endpoint group.
  function targetText(cb) {
    if (!cb) return '';
    if (cb.group) return 'group ' + cb.group + (cb.path || '') + (cb.strategy ? ' (' + cb.strategy + ')' : '');
    return cb.url || '';
  }
  MC.doesText = doesText;

  // ---- task lookup ------------------------------------------------------------------

  MC.pages.task = {
    title: 'Task lookup',
    render(ctx) {
      const app = ctx.params.app || ctx.app || '';
      const uuid = ctx.params.uuid || '';
      if (ctx.params.app) MC.setApp(ctx.params.app);
      const appIn = h('input', { type: 'text', name: 'app', value: app, required: true, autocomplete: 'off', spellcheck: 'false' });
      const uuidIn = h('input', { type: 'text', name: 'uuid', value: uuid, required: true, autocomplete: 'off', spellcheck: 'false', placeholder: 'uuid, or jobId@epochMs for a job occurrence', class: 'wide' });
      const formErr = h('p', { class: 'error', role: 'alert', hidden: true });
      const form = h('form', { class: 'card form-row', id: 'task-form' },
        field('App', appIn), field('Task key (uuid)', uuidIn),
        h('div', { class: 'field field-button' }, h('button', { type: 'submit', class: 'btn btn-primary' }, 'Look up')), formErr);
      form.addEventListener('submit', (ev) => {
        ev.preventDefault();
        const a = appIn.value.trim(), u = uuidIn.value.trim();
        if (!a || !u) {
          formErr.hidden = false;
          formErr.textContent = 'Both the app and the task key are needed.';
          return;
        }
        const target = MC.taskHref(a, u);
        if (location.hash === target) MC.reload();
        else location.hash = target;
      });
      const result = h('div', { id: 'task-result', 'aria-live': 'polite' });
      replace(ctx.root, h('h1', {}, 'Task lookup'), form, result);
      if (!uuid) {
        append(result, empty('Type a task key to see its state, its attempts and what its endpoint answered.'));
        uuidIn.focus();
        return;
      }
      return showTask(ctx, result, app, uuid);
    },
  };

  async function showTask(ctx, result, app, uuid) {
    replace(result, loading('Asking the view about ' + uuid + '…'));
    const detail = h('div', { class: 'task-detail' });
    const stamp = h('p', { class: 'muted small', id: 'task-refreshed' });
    let actions = null;
    let stop = null;
    const seen = {};

    async function load() {
      let t;
      try {
        t = await MC.get('/api/task', { appId: app, uuid });
      } catch (e) {
        if (!ctx.alive) return;
        if (!actions) {
          replace(result, errorLine(e, e.status === 404 ? 'No such task' : 'Could not load the task'));
          if (stop) stop();
        } else {
          replace(stamp, errorLine(e, 'Refresh failed'));
        }
        return;
      }
      if (!ctx.alive) return;
      if (!actions) {
        actions = taskActions(ctx, app, uuid, () => restart());
        replace(result, detail, actions.el, stamp);
      }
      if (MC.changed(seen, t)) {
        renderTask(detail, t);
        actions.update(t);
      }
      replace(stamp, (t.final ? 'Final. ' : 'Refreshing every 2 s. ') + 'Read at ', time(Date.now()), '.');
      if (t.final && stop) {
        stop();
        stop = null;
      }
    }

    function restart() {
      if (!stop) stop = ctx.every(2000, load);
      load();
    }

    await load();
    if (actions && !detail.dataset.final && !stop) stop = ctx.every(2000, load);
  }

  function renderTask(el, t) {
    el.dataset.final = t.final ? '1' : '';
    el.dataset.state = t.state;
    const cb = t.callback || {};
    const head = h('div', { class: 'card task-head' },
      h('div', { class: 'task-title' },
        h('h2', { class: 'mono break' }, t.key || (t.appId + '/' + t.uuid)),
        h('span', { id: 'task-state' }, badge(t.state)),
        t.final ? h('span', { class: 'muted' }, 'final') : h('span', { class: 'muted' }, 'in progress')),
      dl([
        ['Due', time(t.dueAt, true)],
        ['Attempt', t.attempt !== undefined ? num(t.attempt) : null],
        ['Next attempt', t.nextAttemptAt ? time(t.nextAttemptAt, true) : null],
        ['Created', t.createdAt ? time(t.createdAt) : null],
        ['Version', t.version !== undefined ? num(t.version) : null],
        ['Cancel requested', t.cancelRequestedAt ? time(t.cancelRequestedAt) : null],
        ['Reason', t.reason || null],
        ['Retry policy', t.retry ? retryText(t.retry) : null],
        ['Late policy', t.latePolicy ? lateText(t.latePolicy) : null],
        ['Metadata', t.metadata && Object.keys(t.metadata).length ? dl(Object.entries(t.metadata)) : null],
      ]));
    const call = t.kafkaTarget ? kafkaTargetCard(t.kafkaTarget) : h('div', { class: 'card' },
      h('h3', {}, 'Callback'),
      h('p', { class: 'mono break' }, h('strong', {}, cb.method || 'POST'), ' ', targetText(cb)),
      dl([
        ['Timeout', cb.timeoutMs ? duration(cb.timeoutMs) : 'executor default'],
        ['Headers', cb.headers && Object.keys(cb.headers).length ? dl(Object.entries(cb.headers)) : null],
      ]),
      h('h4', {}, 'Body'),
      cb.body !== undefined
        ? (cb.body === '' ? h('p', { class: 'muted' }, '(empty)') : h('pre', { class: 'body', id: 'task-body' }, cb.body))
        : cb.body_base64 !== undefined ? h('pre', { class: 'body' }, '(binary, base64) ' + cb.body_base64) : h('p', { class: 'muted' }, '(not shown)'));
    replace(el, head, h('div', { class: 'grid-2' }, call, timeline(t)),
      t.onSuccess && t.onSuccess.length ? followUpsCard(t.appId, t.onSuccess) : null);
  }

  // The tasks submitted when this one succeeds: each with the id it will have (a link to
  // its page), its delay, what it calls or delivers, and its policies.
  function followUpsCard(app, fus) {
    return h('div', { class: 'card', id: 'task-follow-ups' },
      h('h3', {}, 'On success'),
      h('p', { class: 'muted' }, 'Submitted when this task succeeds, each due its delay after the success.'),
      table([
        { label: 'Task', cell: (f) => h('a', { class: 'mono break', href: MC.taskHref(app, f.uuid) }, f.uuid) },
        { label: 'Delay', cell: (f) => (f.delayMs ? duration(f.delayMs) : 'none') },
        { label: 'Does', cell: (f) => h('span', { class: 'mono break' }, doesText(f)) },
        { label: 'Retry', cell: (f) => (f.retry ? retryText(f.retry) : 'defaults') },
        { label: 'Late policy', cell: (f) => (f.latePolicy ? lateText(f.latePolicy) : '–') },
      ], fus, { rowAttrs: (f) => ({ 'data-follow-up': f.uuid }) }));
  }

  // What a task, a follow-up or a job does, in a line: "POST https://..." or "Kafka topic".
  function doesText(x) {
    if (x.kafkaTarget) return 'Kafka ' + x.kafkaTarget.topic;
    const cb = x.callback || {};
    return (cb.method || 'POST') + ' ' + targetText(cb);
  }

  // A task that delivers a record to Kafka instead of calling: its topic, key, headers
  // and the value's size (the API never shows the value itself).
  function kafkaTargetCard(k) {
    const key = k.key !== undefined ? h('span', { class: 'mono break' }, k.key)
      : k.keyBase64 !== undefined ? h('span', { class: 'mono break' }, '(binary, base64) ' + k.keyBase64)
        : h('span', { class: 'muted' }, '(none)');
    return h('div', { class: 'card', id: 'task-kafka-target' },
      h('h3', {}, 'Kafka target'),
      h('p', { class: 'mono break' }, h('strong', {}, 'topic'), ' ', k.topic || ''),
      dl([
        ['Key', key],
        ['Value', k.tombstone ? h('span', {}, 'none (a tombstone)') : num(k.valueBytes || 0) + ' bytes (not shown)'],
        ['Headers', k.headers && Object.keys(k.headers).length ? dl(Object.entries(k.headers)) : null],
      ]));
  }

  function lateText(p) {
    const what = { RUN: 'run anyway', DROP: 'drop (not called)', DEAD: 'dead-letter (not called)' }[p.action] || p.action;
    return 'more than ' + duration(p.maxLateMs) + ' late: ' + what;
  }

  function retryText(r) {
    return ['maxAttempts', 'initialBackoffMs', 'multiplier', 'maxBackoffMs']
      .filter((k) => r[k] !== undefined).map((k) => k + ' ' + r[k]).join(', ') || 'defaults';
  }

  function timeline(t) {
    const events = [];
    if (t.createdAt) events.push({ at: t.createdAt, node: h('span', {}, 'Submitted (version ' + num(t.version) + ')') });
    if (t.cancelRequestedAt) events.push({ at: t.cancelRequestedAt, node: h('span', {}, 'Cancel requested') });
    (t.attempts || []).forEach((a) => events.push({ at: a.startedAt, node: attemptNode(a, !!t.kafkaTarget), cls: 'attempt' }));
    if (t.nextAttemptAt && !t.final) events.push({ at: t.nextAttemptAt, node: h('span', {}, 'Next attempt due'), cls: 'future' });
    if (t.dueAt && !(t.attempts || []).length) events.push({ at: t.dueAt, node: h('span', {}, t.final ? 'Was due' : 'Due'), cls: t.dueAt > Date.now() ? 'future' : '' });
    events.sort((a, b) => a.at - b.at);
    const older = t.olderVersions || [];
    return h('div', { class: 'card' },
      h('h3', {}, 'Timeline'),
      events.length ? h('ol', { class: 'timeline', id: 'task-timeline' }, events.map((e) => h('li', { class: e.cls || '' }, h('div', { class: 'when' }, time(e.at)), e.node)))
        : empty('Nothing has happened yet.'),
      h('h4', {}, 'Replaced versions'),
      older.length ? h('ul', { class: 'plain' }, older.map((v) => h('li', {},
        'Version ', num(v.version), ' replaced by ', num(v.replacedBy), ': ', badge(v.state),
        v.attemptsFired !== undefined ? ', ' + num(v.attemptsFired) + ' attempt(s) fired' : '')))
        : h('p', { class: 'muted' }, 'None.'));
  }

  // kafka: the task delivers a record, so an attempt has no HTTP answer to show.
  function attemptNode(a, kafka) {
    return h('div', { class: 'attempt-body' },
      h('div', {}, h('strong', {}, 'Attempt ' + num(a.attempt)), ' ', badge(a.outcome),
        ' ', h('span', { class: 'mono' }, a.httpStatus ? 'HTTP ' + a.httpStatus : kafka ? 'Kafka record' : 'no answer'),
        ' · ', duration(a.latencyMs)),
      a.error ? h('div', { class: 'attempt-error' }, a.error) : null,
      a.responseBody !== undefined && a.responseBody !== ''
        ? h('details', {}, h('summary', {}, 'Response body (' + num(a.responseSize || a.responseBody.length) + ' bytes)'), h('pre', { class: 'body' }, a.responseBody))
        : a.responseBody_base64 ? h('details', {}, h('summary', {}, 'Response body (binary)'), h('pre', { class: 'body' }, a.responseBody_base64)) : null);
  }

  // Cancel, Run now and Re-submit at: each with its own message line beside it.
  function taskActions(ctx, app, uuid, after) {
    const msgOf = () => h('span', { class: 'action-msg', role: 'status' });
    const cancelMsg = msgOf(), runMsg = msgOf(), atMsg = msgOf();
    const cancelBtn = h('button', { type: 'button', class: 'btn btn-danger', id: 'task-cancel' }, 'Cancel task');
    const runBtn = h('button', { type: 'button', class: 'btn', id: 'task-run-now' }, 'Run now');
    const atIn = h('input', { type: 'datetime-local', step: 1, id: 'task-new-due' });
    atIn.value = MC.toLocalInput(Date.now() + 3600e3);
    const atBtn = h('button', { type: 'button', class: 'btn', id: 'task-resubmit' }, 'Re-submit');

    async function act(btn, msg, question, path, body, done) {
      if (!window.confirm(question)) return;
      btn.disabled = true;
      replace(msg, 'Sending…');
      msg.className = 'action-msg';
      try {
        // One Idempotency-Key per click: a retry of a lost answer is not a second submit.
        await MC.post(path, body(), { idempotent: true });
        if (!ctx.alive) return;
        replace(msg, done);
        msg.className = 'action-msg ok';
        after();
      } catch (e) {
        if (!ctx.alive) return;
        replace(msg, e.message + (e.status ? ' (HTTP ' + e.status + ')' : ''));
        msg.className = 'action-msg error';
      } finally {
        btn.disabled = false;
      }
    }

    cancelBtn.addEventListener('click', () => act(cancelBtn, cancelMsg,
      `Cancel ${app}/${uuid}? It will not be called (unless its call has already started).`,
      '/api/task/done', () => ({ appId: app, uuid }), 'Cancel sent.'));
    runBtn.addEventListener('click', () => act(runBtn, runMsg,
      `Run ${app}/${uuid} now? It is submitted again as it is kept, due now (by the gateway's clock); a version submitted meanwhile is replaced.`,
      '/api/task/reschedule', () => ({ appId: app, uuid }), 'Submitted, due now.'));
    atBtn.addEventListener('click', () => {
      const at = MC.fromLocalInput(atIn.value);
      if (!Number.isFinite(at)) {
        replace(atMsg, 'Pick a date and time.');
        atMsg.className = 'action-msg error';
        return;
      }
      act(atBtn, atMsg, `Re-submit ${app}/${uuid} due ${new Date(at).toLocaleString()}? A version submitted meanwhile is replaced.`,
        '/api/task/reschedule', () => ({ appId: app, uuid, dueAt: at }), 'Submitted, due ' + new Date(at).toLocaleString() + '.');
    });

    const el = h('div', { class: 'card actions', id: 'task-actions' },
      h('h3', {}, 'Actions'),
      h('div', { class: 'action-row' }, cancelBtn, cancelMsg),
      h('div', { class: 'action-row' }, runBtn, runMsg),
      h('div', { class: 'action-row' }, field('Re-submit due at (local time)', atIn), atBtn, atMsg));
    return {
      el,
      update(t) {
        cancelBtn.disabled = !!t.final;
        cancelBtn.title = t.final ? 'The task is final: nothing to cancel.' : '';
      },
    };
  }

  // ---- tasks ------------------------------------------------------------------------

  MC.pages.tasks = {
    title: 'Tasks',
    async render(ctx) {
      const app = ctx.app;
      const state = ctx.params.state || '';
      const after = ctx.params.after || '';
      const limit = ctx.params.limit || '50';
      if (!app) {
        replace(ctx.root, h('h1', {}, 'Tasks'), empty('Choose an app above.'));
        return;
      }
      const stateSel = h('select', { name: 'state' },
        h('option', { value: '' }, 'All states'),
        h('option', { value: MC.PENDING.join(','), selected: state === MC.PENDING.join(',') }, 'Not final yet'),
        MC.STATES.map((s) => h('option', { value: s, selected: s === state }, s)));
      const limitSel = h('select', { name: 'limit' }, ['20', '50', '100', '200'].map((n) => h('option', { value: n, selected: n === limit }, n)));
      const form = h('form', { class: 'card form-row' }, field('State', stateSel), field('Per page', limitSel),
        h('div', { class: 'field field-button' }, h('button', { type: 'submit', class: 'btn btn-primary' }, 'Show')));
      form.addEventListener('submit', (ev) => {
        ev.preventDefault();
        location.hash = '#/tasks?' + MC.query({ state: stateSel.value, limit: limitSel.value });
      });
      const counts = h('div', { class: 'chips', id: 'task-counts' }, loading('Counting…'));
      const list = h('div', { id: 'task-list' }, loading('Loading tasks…'));
      replace(ctx.root, h('div', { class: 'page-head' }, h('h1', {}, 'Tasks ', h('span', { class: 'muted' }, 'of ' + app)),
        h('button', { type: 'button', class: 'btn', onclick: () => MC.reload() }, 'Refresh')), counts, form, list);

      MC.get('/api/stats', { appId: app }).then((s) => {
        if (!ctx.alive) return;
        const entries = Object.entries(s.tasks || {}).filter(([k]) => k !== 'total');
        replace(counts, h('a', { class: ['chip', state === '' ? 'chip-on' : null], href: '#/tasks' }, 'All ', h('strong', {}, num(s.tasks ? s.tasks.total : 0))),
          entries.map(([k, v]) => h('a', { class: ['chip', state === k ? 'chip-on' : null], href: '#/tasks?' + MC.query({ state: k, limit }) }, badge(k), ' ', h('strong', {}, num(v)))));
      }).catch((e) => { if (ctx.alive && e.status !== 401) replace(counts, errorLine(e, 'Counts')); });

      let page;
      try {
        page = await MC.get('/api/tasks', { appId: app, state, limit, after });
      } catch (e) {
        if (ctx.alive && e.status !== 401) replace(list, errorLine(e, 'Could not list the tasks'));
        return;
      }
      if (!ctx.alive) return;
      const rows = page.tasks || [];
      const pager = h('div', { class: 'pager' },
        after ? h('a', { class: 'btn', href: '#/tasks?' + MC.query({ state, limit }) }, '« First page') : null,
        page.next ? h('a', { class: 'btn', id: 'tasks-next', href: '#/tasks?' + MC.query({ state, limit, after: page.next }) }, 'Next page »') : null,
        h('span', { class: 'muted' }, num(rows.length) + ' task(s) on this page, by due time' + (page.next ? '' : '; the last page')));
      replace(list, rows.length ? table([
        { label: 'Task', cell: (t) => h('a', { href: MC.taskHref(app, t.uuid), class: 'mono' }, t.uuid) },
        { label: 'State', cell: (t) => badge(t.state) },
        { label: 'Due', cell: (t) => time(t.dueAt, true) },
        { label: 'Attempt', class: 'num', cell: (t) => num(t.attempt) },
        { label: 'Last attempt', cell: (t) => t.lastAttempt ? [badge(t.lastAttempt.outcome), ' ', t.lastAttempt.httpStatus ? 'HTTP ' + t.lastAttempt.httpStatus : 'no answer'] : h('span', { class: 'muted' }, '–') },
        { label: 'Callback', cell: (t) => t.kafkaTarget
          ? h('span', { class: 'mono clip', title: t.kafkaTarget.topic }, 'Kafka ' + t.kafkaTarget.topic)
          : h('span', { class: 'mono clip', title: targetText(t.callback) }, t.callback ? t.callback.method + ' ' + targetText(t.callback) : '') },
      ], rows, { rowAttrs: (t) => ({ 'data-uuid': t.uuid }) }) : empty(state ? 'No tasks in this state.' : 'No tasks: the view holds the tasks not final yet and those that ended in the last hour.'), pager);
    },
  };
})();
