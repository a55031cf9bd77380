// The jobs page: counts per state, filters, a list that follows the jobs as they change
// (the event stream of the user's own jobs; with a project chosen, its first page read again
// every few seconds, so that a teammate's jobs show up too), each job's objective and
// duration, cancel one or a selection, start an experiment on a selection's inputs, and
// charts of jobs ended per minute and of the queue.

import { ApiError, currentProject, follow, get, inProject, mayChange, request } from './api.js';
import { barChart, legend, lineChart } from './chart.js';
import { fill, h, localToUtc, notice, numberElement, page, seconds, statusBadge, when } from './dom.js';
import { startExperimentWith } from './experiments.js';

const STATES = ['PENDING', 'RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED'];
const ENDED = ['COMPLETED', 'FAILED', 'CANCELLED'];
const PAGE = 50;
// How often a project's list is read again: /jobs/events follows the user's own jobs only.
const PROJECT_POLL_MS = 3000;
const COLUMNS = ['Job', 'Use case', 'State', 'Created', 'Ended', 'Objective', 'Duration', 'Labels'];

export function jobsPage() {
  const filters = { status: '', problem: '', label: '', since: '', until: '' };
  const rows = new Map();
  // The `before` of the next page; null when the list has them all.
  let next = null;
  // Each fresh list bumps this; an answer for an older one is dropped.
  let listGeneration = 0;
  let loadingOlder = false;
  const selected = new Set();
  const queueHistory = [];
  // A viewer (of the service, or of the chosen project) cancels nothing, launches nothing.
  const changing = mayChange();

  const counts = h('ul', { class: 'counts', 'aria-label': 'Jobs per state' });
  const body = h('tbody', {});
  const more = h('button', { type: 'button', hidden: true, onclick: () => load(false) }, 'Load older jobs');
  const selectAll = h('input', { type: 'checkbox', 'aria-label': 'Select every job shown', onchange: (event) => {
    for (const [id, row] of rows) {
      const box = row.querySelector('input');
      box.checked = event.target.checked;
      if (box.checked) selected.add(id);
      else selected.delete(id);
    }
    updateSelection();
  } });
  const cancelSelected = h('button', { type: 'button', disabled: true, hidden: !changing, onclick: cancelSelection }, 'Cancel selected');
  const experimentSelected = h('button', { type: 'button', disabled: true, hidden: !changing, onclick: () => {
    const ids = [...selected];
    const problems = new Set(ids.map((id) => rows.get(id)?.dataset.problem));
    startExperimentWith({ problem: problems.size === 1 ? [...problems][0] : '', inputs: ids });
  } }, 'Experiment on selected');
  const problemSelect = h('select', { id: 'filter-problem', onchange: (event) => setFilter('problem', event.target.value) },
    h('option', { value: '' }, 'any'));
  const endedChart = h('canvas', { class: 'chart', role: 'img', 'aria-label': 'Jobs accepted and ended per minute' });
  const queueChart = h('canvas', { class: 'chart', role: 'img', 'aria-label': 'Jobs pending' });

  const search = h('form', { class: 'search', role: 'search', onsubmit: (event) => {
    event.preventDefault();
    const id = event.target.elements.id.value.trim();
    if (id) location.hash = `#/job/${encodeURIComponent(id)}`;
  } }, h('label', { for: 'job-id' }, 'Job id'), h('input', { id: 'job-id', name: 'id', autocomplete: 'off', placeholder: '0193…' }),
  h('button', { type: 'submit' }, 'Open'));

  const filterForm = h('form', { class: 'filters', 'aria-label': 'Filters', onsubmit: (event) => event.preventDefault() },
    field('State', h('select', { id: 'filter-status', onchange: (event) => setFilter('status', event.target.value) },
      h('option', { value: '' }, 'any'), STATES.map((state) => h('option', { value: state }, state)))),
    field('Use case', problemSelect),
    field('Label (key:value)', h('input', { id: 'filter-label', placeholder: 'team:ops', onchange: (event) => setFilter('label', event.target.value.trim()) })),
    field('Created since', h('input', { id: 'filter-since', type: 'datetime-local', onchange: (event) => setFilter('since', localToUtc(event.target.value)) })),
    field('Created before', h('input', { id: 'filter-until', type: 'datetime-local', onchange: (event) => setFilter('until', localToUtc(event.target.value)) })));

  page('Jobs',
    h('div', { class: 'charts' },
      h('figure', {}, endedChart, h('figcaption', {}, 'Per minute, last hour', legend(['accepted', 'ended']))),
      h('figure', {}, queueChart, h('figcaption', {}, 'Pending, while this page is open'))),
    counts, search, filterForm,
    changing ? h('div', { class: 'actions' }, cancelSelected, experimentSelected) : null,
    h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'Jobs table' },
      h('table', { class: 'jobs stacking' },
        h('caption', { class: 'visually-hidden' }, currentProject() === null ? 'Your jobs, newest first' : 'The project\'s jobs, newest first'),
        h('thead', {}, h('tr', {}, changing ? h('th', { scope: 'col' }, selectAll) : null, COLUMNS.map((name) => h('th', { scope: 'col' }, name)))),
        body)),
    more);

  function field(text, control) {
    return h('div', { class: 'field' }, h('label', { for: control.id }, text), control);
  }

  function setFilter(name, value) {
    filters[name] = value;
    load(true);
  }

  function query(before) {
    const parameters = new URLSearchParams({ limit: String(PAGE) });
    if (filters.status) parameters.set('status', filters.status);
    if (filters.problem) parameters.set('problem', filters.problem);
    if (filters.label) parameters.set('label', filters.label);
    if (filters.since) parameters.set('since', filters.since);
    if (filters.until) parameters.set('until', filters.until);
    if (before) parameters.set('before', before);
    return parameters;
  }

  function matches(job) {
    if (filters.status && job.status !== filters.status) return false;
    if (filters.problem && job.problem !== filters.problem) return false;
    if (filters.label) {
      const [key, ...rest] = filters.label.split(':');
      if (job.labels?.[key] !== rest.join(':')) return false;
    }
    const created = Date.parse(job.created_at);
    if (filters.since && created < Date.parse(filters.since)) return false;
    if (filters.until && created >= Date.parse(filters.until)) return false;
    return true;
  }

  // The first page afresh, or the page after the last one shown: none when there is none
  // (the first page again would be appended twice) or while one is on its way.
  async function load(fresh) {
    if (!fresh && (next === null || loadingOlder)) return;
    const generation = fresh ? ++listGeneration : listGeneration;
    if (fresh) {
      // The old list's pages are not this one's.
      next = null;
      more.hidden = true;
    } else {
      loadingOlder = true;
    }
    try {
      const list = await get(inProject(`/jobs?${query(fresh ? null : next)}`));
      if (generation !== listGeneration) return;
      if (fresh) {
        rows.clear();
        selected.clear();
        body.replaceChildren();
      }
      for (const job of list.jobs) {
        // A job the event stream added while this page was on its way is shown once.
        const row = renderRow(job);
        const shown = rows.get(job.id);
        if (shown) shown.replaceWith(row);
        else body.append(row);
        rows.set(job.id, row);
      }
      next = list.next;
      more.hidden = next === null;
      if (rows.size === 0) body.append(h('tr', {}, h('td', { colspan: String(COLUMNS.length + 1) }, 'No jobs match.')));
      updateSelection();
    } catch (error) {
      notice(error.message, 'error');
    } finally {
      if (!fresh) loadingOlder = false;
    }
  }

  function renderRow(job) {
    const box = h('input', { type: 'checkbox', 'aria-label': `Select job ${job.id}`, checked: selected.has(job.id), onchange: (event) => {
      if (event.target.checked) selected.add(job.id);
      else selected.delete(job.id);
      updateSelection();
    } });
    const labels = Object.entries(job.labels ?? {}).map(([key, value]) => h('span', { class: 'label' }, `${key}:${value}`));
    // From its launch to its end: the time a caller waited for it, queue included.
    const took = job.ended_at ? Date.parse(job.ended_at) - Date.parse(job.created_at) : null;
    const cell = (label, props, ...children) => h('td', { ...props, 'data-label': label }, ...children);
    return h('tr', { 'data-job': job.id, 'data-status': job.status, 'data-problem': job.problem, 'data-seen': JSON.stringify(job) },
      changing ? h('td', { class: 'select' }, box) : null,
      cell('Job', {}, h('a', { href: `#/job/${encodeURIComponent(job.id)}`, class: 'mono' }, job.id)),
      cell('Use case', {}, job.problem),
      cell('State', {}, statusBadge(job.status)),
      cell('Created', {}, when(job.created_at)),
      cell('Ended', {}, when(job.ended_at, '—')),
      cell('Objective', { class: 'objective', title: job.objective_sense ?? null }, job.objective === null || job.objective === undefined ? '—' : numberElement(job.objective)),
      cell('Duration', { class: 'duration', title: 'From its launch to its end' }, took === null ? '—' : seconds(took)),
      cell('Labels', {}, labels.length ? labels : '—'));
  }

  // Selected jobs that have not ended, which a cancel applies to.
  function cancellable() {
    return [...selected].filter((id) => !ENDED.includes(rows.get(id)?.dataset.status));
  }

  function updateSelection() {
    for (const id of selected) if (!rows.has(id)) selected.delete(id);
    const cancelling = cancellable().length;
    cancelSelected.disabled = cancelling === 0;
    cancelSelected.textContent = cancelling ? `Cancel selected (${cancelling})` : 'Cancel selected';
    experimentSelected.disabled = selected.size === 0;
    experimentSelected.textContent = selected.size ? `Experiment on selected (${selected.size})` : 'Experiment on selected';
  }

  async function cancelSelection() {
    const ids = cancellable();
    const results = await Promise.allSettled(ids.map((id) => request('DELETE', `/job/${encodeURIComponent(id)}`)));
    const failed = results.filter((result) => result.status === 'rejected');
    notice(failed.length ? `${ids.length - failed.length} cancelled; ${failed.length} could not be: ${failed[0].reason.message}` : `${ids.length} cancelled`, failed.length ? 'error' : 'info');
    selected.clear();
    updateSelection();
  }

  async function refreshCounts() {
    try {
      const byState = await get(inProject('/jobs/counts'));
      fill(counts, STATES.map((state) => h('li', {},
        h('button', { type: 'button', class: 'count', 'aria-pressed': String(filters.status === state), onclick: () => {
          const select = document.getElementById('filter-status');
          select.value = filters.status === state ? '' : state;
          setFilter('status', select.value);
          refreshCounts();
        } }, statusBadge(state), ` ${byState[state] ?? 0}`))));
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
    }
  }

  async function refreshService() {
    try {
      const service = await get('/service');
      barChart(endedChart, service.per_minute.map((minute) => ({ label: minute.minute, values: [minute.accepted, minute.ended] })),
        ['accepted', 'ended'], { title: 'Jobs per minute, last hour' });
      queueHistory.push([Date.now(), service.queue.reduce((sum, depth) => sum + depth.pending, 0)]);
      if (queueHistory.length > 720) queueHistory.shift();
      lineChart(queueChart, [{ name: 'pending', points: queueHistory }], { title: 'Jobs pending' });
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
    }
  }

  // A job as it is now: its row replaced, or, if it is new and passes the filters, added on top.
  function showJob(job) {
    const existing = rows.get(job.id);
    if (existing) {
      if (existing.dataset.seen === JSON.stringify(job)) return;
      const row = renderRow(job);
      existing.replaceWith(row);
      rows.set(job.id, row);
    } else if (matches(job) && (rows.size === 0 || job.id > [...rows.keys()][0])) {
      body.querySelector('td[colspan]')?.parentElement.remove();
      const row = renderRow(job);
      rows.set(job.id, row);
      body.prepend(row);
    } else {
      return;
    }
    updateSelection();
    clearTimeout(countsDue);
    countsDue = setTimeout(refreshCounts, 300);
  }

  let countsDue = null;
  let stopEvents = () => {};
  let pollTimer = null;
  if (currentProject() === null) {
    stopEvents = follow('/jobs/events', (name, job) => {
      if (name === 'status') showJob(job);
      return true;
    });
  } else {
    // A project's jobs are its members': their first page is read again, newest first.
    const poll = async () => {
      try {
        const generation = listGeneration;
        const list = await get(inProject(`/jobs?${query(null)}`));
        if (generation === listGeneration && pollTimer !== null) [...list.jobs].reverse().forEach(showJob);
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
      }
      if (pollTimer !== null) pollTimer = setTimeout(poll, PROJECT_POLL_MS);
    };
    pollTimer = setTimeout(poll, PROJECT_POLL_MS);
  }

  get('/problems').then((problems) => problems.forEach((problem) => problemSelect.append(h('option', { value: problem.name }, problem.name))))
    .catch((error) => notice(error.message, 'error'));
  load(true);
  refreshCounts();
  refreshService();
  const timer = setInterval(refreshService, 5000);
  return () => {
    stopEvents();
    clearTimeout(pollTimer);
    pollTimer = null;
    clearInterval(timer);
    clearTimeout(countsDue);
  };
}
