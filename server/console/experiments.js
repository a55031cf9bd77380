// Experiments: the list, a form to start one (from jobs selected on the jobs page, or from a
// use case's versions; its versions, jobs and data files picked from lists of the chosen use
// case's), and one experiment's page filling in as its runs end: the summary against the
// baseline on top, then a table of inputs × versions with the better marked. With a project
// chosen, experiments are the project's.

import { ApiError, get, inProject, mayChange, request } from './api.js';
import { fill, h, notice, numberElement, page, seconds, statusBadge, when } from './dom.js';

// What another page hands to the form: { problem, versions: [...], inputs: [job ids] }.
let handedOver = null;
// How many recent jobs and data files the form offers as inputs.
const OFFERED = 50;

// Opens the experiments page with its form filled in from `start`.
export function startExperimentWith(start) {
  handedOver = start;
  location.hash = '#/experiments';
}

export function experimentsPage() {
  const start = handedOver ?? {};
  handedOver = null;
  const rows = h('tbody', {});
  const form = mayChange() ? newExperimentForm(start) : null;
  page('Experiments',
    form?.element,
    h('h2', {}, 'Experiments'),
    h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'Experiments table' },
      h('table', { class: 'experiments' },
        h('thead', {}, h('tr', {}, ['Experiment', 'Use case', 'Versions', 'Inputs', 'Seeds', 'Jobs', 'Created'].map((name) => h('th', { scope: 'col' }, name)))),
        rows)));
  get(inProject('/experiments')).then((listing) => {
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
  return () => form?.stop();
}

// The form: a use case; its versions (the first checked is the baseline); inputs picked from
// its recent jobs and the data files, or given inline; seeds, a time limit.
function newExperimentForm(start) {
  const outcome = h('div', { id: 'experiment-outcome', role: 'status' });
  const problem = h('select', { id: 'experiment-problem', name: 'problem', required: true, onchange: () => showUseCase(problem.value) });
  const versions = h('div', { class: 'checks', id: 'experiment-versions' });
  const jobs = h('div', { class: 'checks picks', id: 'experiment-jobs' });
  const files = h('div', { class: 'checks picks', id: 'experiment-data-files' });
  const inline = h('textarea', { id: 'experiment-inline', name: 'inline', rows: '3', spellcheck: 'false', 'aria-describedby': 'experiment-inline-hint' });
  const seeds = h('input', { id: 'experiment-seeds', name: 'seeds', value: '1, 2, 3', inputmode: 'numeric' });
  const timeLimit = h('input', { id: 'experiment-time-limit', name: 'time_limit', type: 'number', min: '0', step: 'any', placeholder: 'the use case\'s default' });
  let problems = [];
  // Each choice of use case bumps this; lists read for an earlier one are dropped.
  let shown = 0;
  let stopped = false;
  // The jobs handed over are checked while their use case is shown.
  const handedJobs = new Set(start.inputs ?? []);
  const handedVersions = start.versions ?? null;

  async function showUseCase(name) {
    const turn = ++shown;
    fill(versions, h('p', { class: 'hint' }, 'Reading the versions…'));
    fill(jobs);
    fill(files);
    if (!name) return;
    try {
      const entry = problems.find((one) => one.name === name);
      const accepted = new Set(['application/json', ...(entry?.media_types ?? [])]);
      const [listing, recent, handed, dataFiles] = await Promise.all([
        get(`/problem/${encodeURIComponent(name)}/versions`),
        get(inProject(`/jobs?problem=${encodeURIComponent(name)}&limit=${OFFERED}`)),
        handedJobs.size ? get(`/jobs?ids=${[...handedJobs].map(encodeURIComponent).join(',')}`) : { jobs: [] },
        get(inProject(`/data_files?limit=${OFFERED}`)),
      ]);
      if (turn !== shown || stopped) return;
      const serving = listing.versions.filter((version) => !version.retired && version.source !== 'directory');
      const ordered = [...serving.filter((version) => version.current), ...serving.filter((version) => !version.current)];
      const wanted = handedVersions && name === start.problem ? new Set(handedVersions) : new Set(ordered.filter((version) => version.current).map((version) => version.version));
      fill(versions, ordered.length === 0 ? h('p', { class: 'hint' }, 'No version in service.') : ordered.map((version) => check('experiment-version', version.version,
        `${version.version}${version.current ? ' (current)' : ''}`, wanted.has(version.version), { 'data-digest': version.digest })));
      const offered = new Map();
      // An experiment's runs and a race's entrants are not inputs of their own.
      const runs = (job) => INTERNAL_LABELS.some((label) => label in (job.labels ?? {}));
      for (const job of [...handed.jobs.filter((job) => job.problem === name), ...recent.jobs.filter((job) => !runs(job))]) offered.set(job.id, job);
      fill(jobs, offered.size === 0 ? h('p', { class: 'hint' }, 'No jobs of this use case yet.') : [...offered.values()].map((job) => check('experiment-job', job.id,
        jobLabel(job), handedJobs.has(job.id))));
      const usable = dataFiles.data_files.filter((file) => accepted.has(file.media_type));
      fill(files, usable.length === 0 ? h('p', { class: 'hint' }, 'No data files this use case reads.') : usable.map((file) => check('experiment-data-file', file.data_file_identifier,
        `${file.filename ?? file.data_file_identifier} (${file.size} bytes)`, false)));
    } catch (error) {
      if (turn === shown && !stopped) fill(versions, h('p', { class: 'error' }, error.message));
    }
  }

  get('/problems').then((listed) => {
    problems = listed;
    fill(problem, listed.map((entry) => h('option', { value: entry.name }, entry.name)));
    if (start.problem) problem.value = start.problem;
    showUseCase(problem.value);
  }, (error) => notice(error.message, 'error'));

  async function submit(event) {
    event.preventDefault();
    fill(outcome);
    const picked = (name) => [...event.target.querySelectorAll(`input[name=${name}]:checked`)].map((box) => box.value);
    let given;
    try {
      given = inline.value.split('\n').map((line) => line.trim()).filter(Boolean).map((line) => JSON.parse(line));
    } catch (error) {
      fill(outcome, h('p', { class: 'error' }, `An inline input is not JSON: ${error.message}`));
      return;
    }
    const body = {
      problem: problem.value,
      versions: picked('experiment-version'),
      inputs: [...picked('experiment-job'), ...picked('experiment-data-file'), ...given],
      seeds: list(seeds.value).map(Number),
    };
    if (body.versions.length === 0) delete body.versions;
    if (timeLimit.value) body.options = { time_limit_s: Number(timeLimit.value) };
    try {
      const created = await request('POST', inProject('/experiments'), { json: body });
      notice(`Experiment of ${created.jobs} jobs launched.`);
      location.hash = `#/experiment/${encodeURIComponent(created.experiment)}`;
    } catch (error) {
      const reasons = error instanceof ApiError ? (error.body.errors ?? []) : [];
      fill(outcome, h('p', { class: 'error' }, error.message),
        reasons.length ? h('ul', { class: 'error' }, reasons.map((reason) => h('li', {}, `${reason.pointer || '(the request)'}: ${reason.message}`))) : null);
    }
  }

  const element = h('section', { 'aria-labelledby': 'new-experiment-heading' },
    h('h2', { id: 'new-experiment-heading' }, 'New experiment'),
    h('form', { class: 'experiment', onsubmit: submit },
      h('div', { class: 'field' }, h('label', { for: 'experiment-problem' }, 'Use case'), problem),
      h('fieldset', {}, h('legend', {}, 'Versions: the first checked is the baseline'), versions),
      h('fieldset', {}, h('legend', {}, 'Inputs'),
        h('fieldset', {}, h('legend', {}, 'Jobs (their inputs)'), jobs),
        h('fieldset', {}, h('legend', {}, 'Data files'), files),
        h('div', { class: 'field' }, h('label', { for: 'experiment-inline' }, 'Inline inputs'), inline,
          h('p', { id: 'experiment-inline-hint', class: 'hint' }, 'One JSON input per line.'))),
      h('div', { class: 'field' }, h('label', { for: 'experiment-seeds' }, 'Seeds'), seeds),
      h('div', { class: 'field' }, h('label', { for: 'experiment-time-limit' }, 'Time limit (s)'), timeLimit),
      h('button', { type: 'submit' }, 'Launch experiment')),
    outcome);
  return { element, stop: () => { stopped = true; } };
}

// A checkbox with its label (text or nodes); its id made from its list's name and its value.
function check(name, value, label, checked, props = {}) {
  const id = `${name}-${value}`;
  return h('div', { class: 'check' },
    h('input', { type: 'checkbox', id, name, value, checked, ...props }),
    h('label', { for: id }, label));
}

// A job as an input: its labels (its experiment's and race's left out), else its id; its
// state and when it was launched.
function jobLabel(job) {
  const tags = Object.entries(job.labels ?? {}).filter(([key]) => !INTERNAL_LABELS.includes(key))
    .map(([key, value]) => `${key}:${value}`);
  return [tags.length ? tags.join(' ') : job.id, ` · ${job.status.toLowerCase()} · `, when(job.created_at)];
}

// Labels the platform puts on an experiment's and a race's jobs.
const INTERNAL_LABELS = ['experiment', 'experiment_version', 'experiment_input', 'experiment_seed', 'race'];

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
  // The inputs' short names: a data file's name, a job's labels.
  const inputNames = new Map();
  let namesAsked = false;
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
    cancel.hidden = p.done || Boolean(experiment.cancelled_at) || !mayChange(experiment.project ?? null);
    if (!namesAsked) {
      namesAsked = true;
      nameInputs(experiment.inputs).then(() => {
        if (!gone) showResults(experiment);
      });
    }
    fill(summary, experiment.summary.map((version) => h('tr', { 'data-version': version.version },
      h('th', { scope: 'row' }, version.baseline ? `${version.version} (baseline)` : version.version),
      h('td', {}, version.baseline ? '–' : String(version.wins)),
      h('td', {}, version.baseline ? '–' : String(version.ties)),
      h('td', {}, version.baseline ? '–' : String(version.losses)),
      h('td', {}, version.baseline || version.mean_relative_difference === null ? '–' : percent(version.mean_relative_difference)),
      h('td', {}, String(version.failures)))));
    showResults(experiment);
  }

  function showResults(experiment) {
    fill(resultsHead, h('tr', {}, h('th', { scope: 'col' }, 'Input'),
      experiment.versions.map((version) => h('th', { scope: 'col' }, version.version))));
    fill(results, experiment.results.map((row) => h('tr', { 'data-input': String(row.input) },
      h('th', { scope: 'row' }, describe(experiment.inputs[row.input], row.input, inputNames)),
      row.versions.map((cell) => {
        const best = row.best.includes(cell.version) && row.versions.length > 1;
        return h('td', { class: best ? 'best' : null, 'data-version': cell.version },
          cell.objective === null ? '–' : numberElement(cell.objective, { class: 'objective' }),
          best ? h('span', { class: 'badge best' }, 'best') : null,
          cell.time_to_best_s === null ? null : h('span', { class: 'hint', title: `${cell.time_to_best_s} s` }, ` in ${seconds(cell.time_to_best_s * 1000)}`),
          ' ', statusBadge(cell.status));
      }))));
  }

  // Reads the short names of the inputs given as jobs (their labels) and data files (their
  // file names); an input whose name cannot be read keeps its id.
  async function nameInputs(inputs) {
    const jobIds = inputs.filter((input) => input?.job).map((input) => input.job);
    const fileIds = inputs.filter((input) => input?.data_file).map((input) => input.data_file);
    const reads = [];
    for (let at = 0; at < jobIds.length; at += 100) {
      reads.push(get(`/jobs?ids=${jobIds.slice(at, at + 100).map(encodeURIComponent).join(',')}&limit=100`).then((found) => {
        for (const job of found.jobs) {
          const tags = Object.entries(job.labels ?? {}).filter(([key]) => !INTERNAL_LABELS.includes(key)).map(([key, value]) => `${key}:${value}`);
          if (tags.length) inputNames.set(`job:${job.id}`, tags.join(' '));
        }
      }, () => {}));
    }
    for (const id of fileIds) {
      reads.push(get(`/data_file/${encodeURIComponent(id)}`).then((file) => {
        if (file.filename) inputNames.set(`data_file:${id}`, file.filename);
      }, () => {}));
    }
    await Promise.all(reads);
  }

  refresh();
  return () => {
    gone = true;
    clearTimeout(timer);
  };
}

// An input by its short name: a job's labels (linked to the job), a data file's name, or
// for want of one its id; an inline input by its place.
function describe(input, index, names) {
  if (input?.job) {
    const name = names.get(`job:${input.job}`);
    return h('a', { class: name ? null : 'mono', href: `#/job/${encodeURIComponent(input.job)}`, title: `job ${input.job}` }, name ?? `job ${input.job}`);
  }
  if (input?.data_file) {
    const name = names.get(`data_file:${input.data_file}`);
    return h('span', { class: name ? null : 'mono', title: `data file ${input.data_file}` }, name ?? `data file ${input.data_file}`);
  }
  return `inline input ${index + 1}`;
}

function percent(fraction) {
  const value = fraction * 100;
  return `${value > 0 ? '+' : ''}${value.toFixed(Math.abs(value) < 1 ? 2 : 1)} %`;
}
