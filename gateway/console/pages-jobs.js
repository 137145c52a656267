'use strict';
// pages-jobs.js: recurring jobs (#/jobs). The app's jobs with status, schedule, next
// fire time and counters, pause/resume/trigger/delete, each job's recent occurrences
// (the tasks <jobId>@<epoch ms>), and a create/edit form whose cron expression and
// time zone are previewed as they are typed (POST /jobs/preview, debounced).
(function () {
  const MC = (window.MC = window.MC || {});
  const { h, replace, append, time, num, badge, table, field, errorLine, loading, empty } = MC;
  MC.pages = MC.pages || {};

  const ZONES = (() => {
    try {
      return Intl.supportedValuesOf('timeZone');
    } catch (e) {
      return ['UTC'];
    }
  })();

  function scheduleText(s) {
    if (!s) return '–';
    if (s.cron) return s.cron + ' (' + (s.timeZone || 'UTC') + ')';
    if (s.fixedRateMs) return 'every ' + MC.duration(s.fixedRateMs);
    if (s.fixedDelayMs) return MC.duration(s.fixedDelayMs) + ' after each';
    return '–';
  }

  MC.pages.jobs = {
    title: 'Recurring jobs',
    async render(ctx) {
      const app = ctx.app;
      if (!app) {
        replace(ctx.root, h('h1', {}, 'Recurring jobs'), empty('Choose an app above.'));
        return;
      }
      const list = h('div', { id: 'jobs-list' }, loading('Loading jobs…'));
      const occ = h('div', { id: 'jobs-occurrences' });
      const formBox = h('div', { id: 'job-form-box' });
      const newBtn = h('button', { type: 'button', class: 'btn btn-primary', id: 'job-new' }, 'New job');
      const rowMsgs = new Map(); // jobId -> [text, tone], kept across refreshes
      const seen = {};
      replace(ctx.root, h('div', { class: 'page-head' }, h('h1', {}, 'Recurring jobs ', h('span', { class: 'muted' }, 'of ' + app)), newBtn),
        formBox, list, occ);
      newBtn.addEventListener('click', () => showForm(null));

      function showForm(view) {
        replace(formBox, jobForm(ctx, app, view, () => { replace(formBox); newBtn.hidden = false; newBtn.focus(); }, refresh));
        newBtn.hidden = true;
        formBox.querySelector('input').focus();
      }

      async function action(jobId, what, btn) {
        const questions = {
          delete: `Delete job ${jobId}? Its occurrences not called yet are cancelled.`,
          trigger: `Run one occurrence of ${jobId} now?`,
        };
        if (questions[what] && !window.confirm(questions[what])) return;
        btn.disabled = true;
        try {
          const d = await MC.post('/jobs/' + what, { appId: app, jobId });
          rowMsgs.set(jobId, [{ pause: 'Pause sent.', resume: 'Resume sent.', delete: 'Delete sent.', trigger: 'Triggered: ' + (d && d.taskId) }[what], 'ok']);
        } catch (e) {
          rowMsgs.set(jobId, [e.message + (e.status ? ' (HTTP ' + e.status + ')' : ''), 'error']);
        }
        if (!ctx.alive) return;
        btn.disabled = false;
        await refresh();
        // The jobs role commits about every 100 ms; the view follows it.
        setTimeout(() => ctx.alive && refresh(), 700);
      }

      async function refresh() {
        let page;
        try {
          page = await MC.get('/jobs', { appId: app, limit: 1000 });
        } catch (e) {
          if (ctx.alive && e.status !== 401) replace(list, errorLine(e, e.status === 501 ? 'This gateway keeps no jobs view' : 'Could not list the jobs'));
          return;
        }
        if (!ctx.alive) return;
        if (!MC.changed(seen, [page, [...rowMsgs]])) return;
        const jobs = page.jobs || [];
        if (!jobs.length) {
          replace(list, empty('No jobs yet. "New job" creates one.'));
          return;
        }
        replace(list, table([
          { label: 'Job', cell: (j) => h('strong', { class: 'mono' }, j.jobId) },
          { label: 'Status', cell: (j) => badge(j.status) },
          { label: 'Schedule', cell: (j) => h('span', { class: 'mono' }, scheduleText(j.job && j.job.schedule)) },
          { label: 'Does', cell: (j) => doesCell(j.job || {}) },
          { label: 'Next fire', cell: (j) => (j.nextFireAt ? time(j.nextFireAt, true) : h('span', { class: 'muted' }, 'none')) },
          { label: 'Runs', class: 'num', cell: (j) => num(j.runs) },
          { label: 'Skipped', class: 'num', cell: (j) => num(j.skipped || 0) },
          { label: 'Running', class: 'num', cell: (j) => num((j.running || []).length) },
          { label: 'Last scheduled', cell: (j) => (j.lastScheduledAt > 0 ? time(j.lastScheduledAt) : '–') },
          { label: 'Actions', cell: (j) => {
            const mk = (label, what, cls) => {
              const b = h('button', { type: 'button', class: ['btn', 'btn-small', cls], 'data-action': what, 'data-job': j.jobId }, label);
              b.addEventListener('click', () => action(j.jobId, what, b));
              return b;
            };
            const edit = h('button', { type: 'button', class: 'btn btn-small', 'data-action': 'edit', 'data-job': j.jobId }, 'Edit');
            edit.addEventListener('click', () => showForm(j));
            const runs = h('button', { type: 'button', class: 'btn btn-small', 'data-action': 'occurrences', 'data-job': j.jobId }, 'Occurrences');
            runs.addEventListener('click', () => occurrences(ctx, app, j.jobId, occ));
            const m = rowMsgs.get(j.jobId);
            return h('div', { class: 'row-action' },
              edit,
              j.status === 'PAUSED' ? mk('Resume', 'resume') : mk('Pause', 'pause'),
              mk('Trigger', 'trigger'), mk('Delete', 'delete', 'btn-danger'), runs,
              h('span', { class: ['action-msg', m ? m[1] : null], role: 'status', 'data-msg': j.jobId }, m ? m[0] : ''));
          } },
        ], jobs, { rowAttrs: (j) => ({ 'data-job': j.jobId, 'data-status': j.status }) }),
        page.next ? h('p', { class: 'muted' }, 'More jobs than shown (the first 1,000).') : null);
      }
      ctx.every(5000, refresh);
      await refresh();
    },
  };

  // What each occurrence does: the call or the Kafka target, the late policy and the
  // follow-ups it submits when it succeeds (ids <jobId>@<instant>.then<N> unless given).
  function doesCell(job) {
    const fus = job.onSuccess || [];
    return h('div', { class: 'job-does', 'data-does': job.kafkaTarget ? 'kafka' : 'call' },
      h('span', { class: 'mono clip', title: MC.doesText(job) }, MC.doesText(job)),
      job.latePolicy ? h('div', { class: 'muted', 'data-late': job.latePolicy.action }, 'Late: ' + MC.lateText(job.latePolicy)) : null,
      fus.length ? h('div', { class: 'muted', 'data-follow-ups': String(fus.length) },
        'Then: ' + fus.map((f, i) => (f.uuid || 'then' + (i + 1)) + ' → ' + MC.doesText(f)
          + (f.delayMs ? ' after ' + MC.duration(f.delayMs) : '')).join('; ')) : null);
  }

  // The latest occurrences of a job: its tasks among the app's (the view holds the
  // tasks not final yet and those that ended within its history, an hour by default).
  async function occurrences(ctx, app, jobId, box) {
    replace(box, h('div', { class: 'card' }, h('h2', {}, 'Occurrences of ' + jobId), loading()));
    const found = [];
    let after = '';
    try {
      for (let i = 0; i < 5; i++) {
        const page = await MC.get('/api/tasks', { appId: app, limit: 1000, after });
        found.push(...(page.tasks || []).filter((t) => t.uuid && t.uuid.startsWith(jobId + '@')));
        if (!page.next) break;
        after = page.next;
      }
    } catch (e) {
      if (ctx.alive) replace(box, h('div', { class: 'card' }, h('h2', {}, 'Occurrences of ' + jobId), errorLine(e)));
      return;
    }
    if (!ctx.alive) return;
    found.sort((a, b) => b.dueAt - a.dueAt);
    const shown = found.slice(0, 20);
    replace(box, h('div', { class: 'card', id: 'occurrences-' + jobId },
      h('h2', {}, 'Occurrences of ' + jobId),
      shown.length ? table([
        { label: 'Occurrence', cell: (t) => h('a', { class: 'mono', href: MC.taskHref(app, t.uuid) }, t.uuid) },
        { label: 'State', cell: (t) => badge(t.state) },
        { label: 'Due', cell: (t) => time(t.dueAt, true) },
        { label: 'Attempt', class: 'num', cell: (t) => num(t.attempt) },
        { label: 'Outcome', cell: (t) => (t.lastAttempt ? [badge(t.lastAttempt.outcome), ' ', t.lastAttempt.httpStatus ? 'HTTP ' + t.lastAttempt.httpStatus : 'no answer', ' · ', MC.duration(t.lastAttempt.latencyMs)] : '–') },
      ], shown) : empty('No occurrences held by the view (it keeps ended tasks for an hour).'),
      found.length > shown.length ? h('p', { class: 'muted' }, 'The latest 20 of ' + num(found.length) + '.') : null));
  }

  // ---- the form ---------------------------------------------------------------------

  function jobForm(ctx, app, view, close, saved) {
    const j = (view && view.job) || {};
    const s = j.schedule || {};
    const cb = j.callback || {};
    const kindSel = h('select', { name: 'kind', id: 'job-kind' },
      h('option', { value: 'cron', selected: !!s.cron || !view }, 'cron expression'),
      h('option', { value: 'fixedRateMs', selected: !!s.fixedRateMs }, 'fixed rate'),
      h('option', { value: 'fixedDelayMs', selected: !!s.fixedDelayMs }, 'fixed delay'));
    const idIn = h('input', { type: 'text', id: 'job-id', value: j.jobId || '', required: true, maxlength: 200, autocomplete: 'off', spellcheck: 'false' });
    const cronIn = h('input', { type: 'text', id: 'job-cron', value: s.cron || '0 */5 * * * ?', autocomplete: 'off', spellcheck: 'false', class: 'mono' });
    const tzIn = h('input', { type: 'text', id: 'job-tz', value: s.timeZone || 'UTC', list: 'tz-list', autocomplete: 'off', spellcheck: 'false' });
    const tzList = h('datalist', { id: 'tz-list' }, ZONES.map((z) => h('option', { value: z })));
    const everyIn = h('input', { type: 'number', id: 'job-interval', min: 1000, step: 1000, value: s.fixedRateMs || s.fixedDelayMs || 60000 });
    const cronErr = h('p', { class: 'error field-error', id: 'job-cron-error', role: 'alert', hidden: true });
    const preview = h('ol', { class: 'preview', id: 'job-preview', 'aria-live': 'polite' });
    const urlIn = h('input', { type: 'url', id: 'job-url', value: cb.url || '', required: !j.kafkaTarget,
      placeholder: j.kafkaTarget ? 'delivers to Kafka ' + j.kafkaTarget.topic + ' (a URL makes it call instead)' : 'https://service.example.com/hook',
      class: 'wide', autocomplete: 'off', spellcheck: 'false' });
    const methodSel = h('select', { id: 'job-method' }, ['POST', 'GET', 'PUT', 'PATCH', 'DELETE', 'HEAD'].map((m) => h('option', { value: m, selected: m === (cb.method || 'POST') }, m)));
    const bodyIn = h('textarea', { id: 'job-body', rows: 3, spellcheck: 'false', class: 'mono' });
    bodyIn.value = cb.body || '';
    const headersIn = h('textarea', { id: 'job-headers', rows: 2, spellcheck: 'false', class: 'mono', placeholder: 'X-Name: value (one per line)' });
    const timeoutIn = h('input', { type: 'number', id: 'job-timeout', min: 0, max: 3600000, value: cb.timeoutMs || 0 });
    const misfireSel = h('select', { id: 'job-misfire' }, ['FIRE_ONCE_NOW', 'DO_NOTHING', 'CATCH_UP'].map((m) => h('option', { value: m, selected: m === (j.misfire || 'FIRE_ONCE_NOW') }, m)));
    const overlapSel = h('select', { id: 'job-overlap' }, ['PARALLEL', 'SERIAL', 'DISCARD_LATER', 'COVER_EARLY'].map((m) => h('option', { value: m, selected: m === (j.overlap || 'PARALLEL') }, m)));
    const attemptsIn = h('input', { type: 'number', id: 'job-attempts', min: 1, max: 1000, value: j.retry && j.retry.maxAttempts ? j.retry.maxAttempts : '', placeholder: 'default' });
    const pausedIn = h('input', { type: 'checkbox', id: 'job-paused', checked: !!j.paused });
    const saveBtn = h('button', { type: 'submit', class: 'btn btn-primary', id: 'job-save' }, view ? 'Save changes' : 'Create job');
    const saveMsg = h('p', { class: 'action-msg', role: 'status', id: 'job-save-msg' });

    const cronFields = h('div', { class: 'form-grid' }, field('Cron expression', cronIn, 'sec min hour dom month dow (Quartz), or the classic 5 fields'), field('Time zone', tzIn), tzList);
    const everyFields = h('div', { class: 'form-grid' }, field('Interval (ms, at least 1000)', everyIn));
    const syncKind = () => {
      cronFields.hidden = kindSel.value !== 'cron';
      everyFields.hidden = kindSel.value === 'cron';
    };
    syncKind();

    const schedule = () => (kindSel.value === 'cron'
      ? { cron: cronIn.value.trim(), timeZone: tzIn.value.trim() || 'UTC' }
      : { [kindSel.value]: Number(everyIn.value) });

    // The preview: the next 5 fire times, or the gateway's 400 under the field.
    let seq = 0, timer = null;
    async function runPreview() {
      const mine = ++seq;
      const sch = schedule();
      if (sch.cron === '') {
        replace(preview);
        showErr('Type a cron expression.');
        return;
      }
      try {
        const d = await MC.post('/jobs/preview', { schedule: sch, count: 5 });
        if (mine !== seq || !ctx.alive) return;
        showErr('');
        const times = d.nextFireTimes || [];
        replace(preview, times.length ? times.map((t) => h('li', {}, time(t, true))) : h('li', { class: 'muted' }, 'Never fires.'));
      } catch (e) {
        if (mine !== seq || !ctx.alive) return;
        replace(preview);
        showErr(e.message);
      }
    }
    function showErr(msg) {
      cronErr.hidden = !msg;
      cronErr.textContent = msg;
      (kindSel.value === 'cron' ? cronIn : everyIn).setAttribute('aria-invalid', msg ? 'true' : 'false');
    }
    const schedulePreview = () => {
      clearTimeout(timer);
      timer = setTimeout(runPreview, 350);
    };
    ctx.onCleanup(() => clearTimeout(timer));
    [cronIn, tzIn, everyIn].forEach((el) => el.addEventListener('input', schedulePreview));
    kindSel.addEventListener('change', () => { syncKind(); schedulePreview(); });

    const form = h('form', { class: 'card job-form', id: 'job-form', novalidate: true },
      h('h2', {}, view ? 'Edit job ' + j.jobId : 'New job'),
      view ? h('p', { class: 'muted small' }, 'Saving replaces the job and reschedules it from now. Callback headers and redacted parts of the URL are not shown: type them again.') : null,
      h('div', { class: 'form-grid' }, field('Job id', idIn), field('Schedule', kindSel)),
      cronFields, everyFields,
      h('div', { class: 'preview-box' }, h('h3', {}, 'Next fire times'), cronErr, preview),
      h('div', { class: 'form-grid' }, field('Callback URL', urlIn), field('Method', methodSel), field('Timeout (ms, 0 = default)', timeoutIn)),
      h('div', { class: 'form-grid' }, field('Body', bodyIn), field('Headers', headersIn)),
      h('div', { class: 'form-grid' }, field('Misfire', misfireSel), field('Overlap', overlapSel), field('Max attempts', attemptsIn),
        h('div', { class: 'field field-check' }, pausedIn, h('label', { for: 'job-paused' }, 'Create paused'))),
      h('div', { class: 'action-row' }, saveBtn, h('button', { type: 'button', class: 'btn', onclick: close }, 'Close'), saveMsg));

    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const headers = {};
      for (const line of headersIn.value.split('\n')) {
        const i = line.indexOf(':');
        if (line.trim() && i > 0) headers[line.slice(0, i).trim()] = line.slice(i + 1).trim();
      }
      const body = {
        appId: app,
        jobId: idIn.value.trim(),
        schedule: schedule(),
        misfire: misfireSel.value,
        overlap: overlapSel.value,
        paused: pausedIn.checked,
        callback: { url: urlIn.value.trim(), method: methodSel.value, body: bodyIn.value, headers, timeoutMs: Number(timeoutIn.value) || 0 },
      };
      if (attemptsIn.value) body.retry = { maxAttempts: Number(attemptsIn.value) };
      // A job that delivers to Kafka keeps its target while no URL is typed (the form
      // edits calls only); its late policy and follow-ups are kept as they are.
      if (j.kafkaTarget && !urlIn.value.trim()) {
        delete body.callback;
        body.kafkaTarget = j.kafkaTarget;
      }
      for (const k of ['startTime', 'endTime', 'maxRuns', 'catchUpLimit', 'misfireThresholdMs', 'metadata', 'latePolicy', 'onSuccess']) {
        if (j[k] !== undefined && j[k] !== null) body[k] = j[k];
      }
      saveBtn.disabled = true;
      replace(saveMsg, 'Saving…');
      saveMsg.className = 'action-msg';
      try {
        const d = await MC.post('/jobs', body);
        if (!ctx.alive) return;
        replace(saveMsg, 'Saved ' + d.jobId + '. Next: ', (d.nextFireTimes || []).slice(0, 1).map((t) => time(t, true)));
        saveMsg.className = 'action-msg ok';
        saved();
        setTimeout(() => ctx.alive && saved(), 700);
      } catch (e) {
        if (!ctx.alive) return;
        replace(saveMsg, e.message + (e.status ? ' (HTTP ' + e.status + ')' : ''));
        saveMsg.className = 'action-msg error';
        if (/^schedule/.test(e.message)) showErr(e.message);
      } finally {
        saveBtn.disabled = false;
      }
    });
    runPreview();
    return form;
  }
})();
