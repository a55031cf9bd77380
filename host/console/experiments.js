// Experiments: the list, a form to start one (from jobs selected on the jobs page, or from a
// use case's versions), and one experiment's page filling in as its runs end: the summary
// against the baseline on top, then a table of inputs × versions with the better marked.

import { ApiError, get, request } from './api.js';
import { fill, h, notice, page, statusBadge, when } from './dom.js';

// What another page hands to the form: { problem, versions: [...], inputs: [job ids] }.
let handedOver = null;

// Opens the experiments page with its form filled in from `start`.
export function startExperimentWith(start) {
  handedOver = start;
  location.hash = '#/experiments';
}

export function experimentsPage() {
  const start = handedOver ?? {};
  handedOver = null;
  const rows = h('tbody', {});
  page('Experiments',
    newExperimentForm(start),
    h('h2', {}, 'Your experiments'),
    h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'Experiments table' },
      h('table', { class: 'experiments' },
        h('thead', {}, h('tr', {}, ['Experiment', 'Use case', 'Versions', 'Inputs', 'Seeds', 'Jobs', 'Created'].map((name) => h('th', { scope: 'col' }, name)))),
        rows)));
  get('/experiments').then((listing) => {
    fill(rows, listing.experiments.length === 0
      ? h('tr', {}, h('td', { colspan: '7' }, 'No experiments yet.'))
      : listing.experiments.map((experiment) => h('tr', { 'data-experiment': experiment.id },
        h('td', {}, h('a', { class: 'mono', href: `#/experiment/${encodeURIComponent(experiment.id)}` }, experiment.id)),
        h('td', {}, experiment.problem),
        h('td', {}, experiment.versions.join(', ')),
        h('td', {}, String(experiment.inputs)),
        h('td', {}, String(experiment.seeds)),
        h('td', {}, String(experiment.jobs)),
        h('td', {}, when(experiment.created_at)))));
  }, (error) => notice(error.message, 'error'));
  return () => {};
}

// The form: a use case, its versions (the first the baseline), inputs, seeds, a time limit.
function newExperimentForm(start) {
  const outcome = h('div', { id: 'experiment-outcome', role: 'status' });
  const problem = h('select', { id: 'experiment-problem', name: 'problem', required: true, onchange: () => suggestVersions() });
  const versions = h('input', { id: 'experiment-versions', name: 'versions', autocomplete: 'off', value: (start.versions ?? []).join(', ') });
  const versionsHint = h('p', { id: 'experiment-versions-hint', class: 'hint' });
  const inputs = h('textarea', { id: 'experiment-inputs', name: 'inputs', rows: '5', spellcheck: 'false', required: true,
    'aria-describedby': 'experiment-inputs-hint' }, (start.inputs ?? []).join('\n'));
  const seeds = h('input', { id: 'experiment-seeds', name: 'seeds', value: '1, 2, 3', inputmode: 'numeric' });
  const timeLimit = h('input', { id: 'experiment-time-limit', name: 'time_limit', type: 'number', min: '0', step: 'any', placeholder: 'the use case\'s default' });

  async function suggestVersions() {
    const name = problem.value;
    if (!name) return;
    try {
      const listing = await get(`/problem/${encodeURIComponent(name)}/versions`);
      const serving = listing.versions.filter((entry) => !entry.retired && entry.source !== 'directory');
      const current = serving.filter((entry) => entry.current).map((entry) => entry.version);
      const others = serving.filter((entry) => !entry.current).map((entry) => entry.version);
      versionsHint.textContent = `Versions in service: ${[...current, ...others].join(', ') || 'none'} (current first).`;
      if (!versions.value.trim()) versions.value = [...current, ...others].join(', ');
    } catch (error) {
      versionsHint.textContent = error.message;
    }
  }

  get('/problems').then((problems) => {
    fill(problem, problems.map((entry) => h('option', { value: entry.name }, entry.name)));
    if (start.problem) problem.value = start.problem;
    suggestVersions();
  }, (error) => notice(error.message, 'error'));

  async function submit(event) {
    event.preventDefault();
    fill(outcome);
    let body;
    try {
      body = {
        problem: problem.value,
        versions: list(versions.value),
        inputs: inputs.value.split('\n').map((line) => line.trim()).filter(Boolean)
          .map((line) => (line.startsWith('{') ? JSON.parse(line) : line)),
        seeds: list(seeds.value).map(Number),
      };
    } catch (error) {
      fill(outcome, h('p', { class: 'error' }, `An inline input is not JSON: ${error.message}`));
      return;
    }
    if (body.versions.length === 0) delete body.versions;
    if (timeLimit.value) body.options = { time_limit_s: Number(timeLimit.value) };
    try {
      const created = await request('POST', '/experiments', { json: body });
      notice(`Experiment of ${created.jobs} jobs launched.`);
      location.hash = `#/experiment/${encodeURIComponent(created.experiment)}`;
    } catch (error) {
      const reasons = error instanceof ApiError ? (error.body.errors ?? []) : [];
      fill(outcome, h('p', { class: 'error' }, error.message),
        reasons.length ? h('ul', { class: 'error' }, reasons.map((reason) => h('li', {}, `${reason.pointer || '(the request)'}: ${reason.message}`))) : null);
    }
  }

  return h('section', { 'aria-labelledby': 'new-experiment-heading' },
    h('h2', { id: 'new-experiment-heading' }, 'New experiment'),
    h('form', { class: 'experiment', onsubmit: submit },
      h('div', { class: 'field' }, h('label', { for: 'experiment-problem' }, 'Use case'), problem),
      h('div', { class: 'field' }, h('label', { for: 'experiment-versions' }, 'Versions, the baseline first'), versions, versionsHint),
      h('div', { class: 'field' }, h('label', { for: 'experiment-inputs' }, 'Inputs'), inputs,
        h('p', { id: 'experiment-inputs-hint', class: 'hint' }, 'One per line: a job id (its input), a data file id, or an inline input as JSON.')),
      h('div', { class: 'field' }, h('label', { for: 'experiment-seeds' }, 'Seeds'), seeds),
      h('div', { class: 'field' }, h('label', { for: 'experiment-time-limit' }, 'Time limit (s)'), timeLimit),
      h('button', { type: 'submit' }, 'Launch experiment')),
    outcome);
}

function list(text) {
  return text.split(/[\s,]+/).map((item) => item.trim()).filter(Boolean);
}

// One experiment, polled until its runs have all ended.
export function experimentPage(id) {
  const facts = h('dl', { class: 'facts' });
  const progress = h('progress', { id: 'experiment-progress', max: '1', value: '0', 'aria-label': 'Jobs ended' });
  const progressText = h('p', { id: 'experiment-progress-text', role: 'status' });
  const summary = h('tbody', {});
  const resultsHead = h('thead', {});
  const results = h('tbody', {});
  const cancel = h('button', { type: 'button', class: 'danger', hidden: true, onclick: async () => {
    try {
      const answer = await request('DELETE', `/experiments/${encodeURIComponent(id)}`);
      notice(answer.detail);
      refresh();
    } catch (error) {
      notice(error.message, 'error');
    }
  } }, 'Cancel what has not run');
  page(`Experiment ${id}`, facts,
    h('section', { 'aria-labelledby': 'progress-heading' }, h('h2', { id: 'progress-heading' }, 'Progress'), progress, progressText, cancel),
    h('section', { 'aria-labelledby': 'summary-heading' },
      h('h2', { id: 'summary-heading' }, 'Against the baseline'),
      h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'Summary per version' },
        h('table', { class: 'experiment-summary' },
          h('thead', {}, h('tr', {}, ['Version', 'Wins', 'Ties', 'Losses', 'Mean relative difference', 'Failures'].map((name) => h('th', { scope: 'col' }, name)))),
          summary))),
    h('section', { 'aria-labelledby': 'results-heading' },
      h('h2', { id: 'results-heading' }, 'Per input'),
      h('p', { class: 'hint' }, 'Median objective over the seeds, and median time to best; the best of each row is marked.'),
      h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'Results per input' },
        h('table', { class: 'experiment-results' }, resultsHead, results))));

  let timer = null;
  let gone = false;
  async function refresh() {
    clearTimeout(timer);
    try {
      const experiment = await get(`/experiments/${encodeURIComponent(id)}`);
      if (gone) return;
      show(experiment);
      if (!experiment.progress.done) timer = setTimeout(refresh, 1000);
    } catch (error) {
      if (gone) return;
      if (error instanceof ApiError && error.status === 404) fill(facts, h('p', { class: 'error' }, `No experiment ${id}.`));
      else notice(error.message, 'error');
    }
  }

  function show(experiment) {
    fill(facts,
      h('dt', {}, 'Use case'), h('dd', {}, experiment.problem),
      h('dt', {}, 'Versions'), h('dd', {}, experiment.versions.map((version, index) => `${version.version}${index === 0 ? ' (baseline)' : ''}`).join(', ')),
      h('dt', {}, 'Seeds'), h('dd', {}, experiment.seeds.join(', ')),
      h('dt', {}, 'Created'), h('dd', {}, when(experiment.created_at)),
      experiment.cancelled_at ? [h('dt', {}, 'Cancelled'), h('dd', {}, when(experiment.cancelled_at))] : null);
    const p = experiment.progress;
    const ended = p.completed + p.failed + p.cancelled;
    progress.max = String(Math.max(p.jobs, 1));
    progress.value = String(ended);
    progressText.textContent = `${ended} of ${p.jobs} jobs ended: ${p.completed} completed, ${p.failed} failed, ${p.cancelled} cancelled; ${p.running} running, ${p.pending} pending.${p.done ? ' Done.' : ''}`;
    cancel.hidden = p.done || Boolean(experiment.cancelled_at);
    fill(summary, experiment.summary.map((version) => h('tr', { 'data-version': version.version },
      h('th', { scope: 'row' }, version.baseline ? `${version.version} (baseline)` : version.version),
      h('td', {}, version.baseline ? '–' : String(version.wins)),
      h('td', {}, version.baseline ? '–' : String(version.ties)),
      h('td', {}, version.baseline ? '–' : String(version.losses)),
      h('td', {}, version.baseline || version.mean_relative_difference === null ? '–' : percent(version.mean_relative_difference)),
      h('td', {}, String(version.failures)))));
    fill(resultsHead, h('tr', {}, h('th', { scope: 'col' }, 'Input'),
      experiment.versions.map((version) => h('th', { scope: 'col' }, version.version))));
    fill(results, experiment.results.map((row) => h('tr', { 'data-input': String(row.input) },
      h('th', { scope: 'row' }, describe(experiment.inputs[row.input], row.input)),
      row.versions.map((cell) => {
        const best = row.best.includes(cell.version) && row.versions.length > 1;
        return h('td', { class: best ? 'best' : null, 'data-version': cell.version },
          cell.objective === null ? '–' : h('span', { class: 'objective' }, String(cell.objective)),
          best ? h('span', { class: 'badge best' }, 'best') : null,
          cell.time_to_best_s === null ? null : h('span', { class: 'hint' }, ` in ${cell.time_to_best_s} s`),
          ' ', statusBadge(cell.status));
      }))));
  }

  refresh();
  return () => {
    gone = true;
    clearTimeout(timer);
  };
}

// An input as the definition describes it: a job (linked), a data file, or inline.
function describe(input, index) {
  if (input?.job) return h('a', { class: 'mono', href: `#/job/${encodeURIComponent(input.job)}` }, `job ${input.job}`);
  if (input?.data_file) return h('span', { class: 'mono' }, `data file ${input.data_file}`);
  return `inline input ${index + 1}`;
}

function percent(fraction) {
  const value = fraction * 100;
  return `${value > 0 ? '+' : ''}${value.toFixed(Math.abs(value) < 1 ? 2 : 1)} %`;
}
