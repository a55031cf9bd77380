// One job: status and timestamps, the version it is bound to (and the job it reran), every
// execution (a running one's duration ticking), a race's entrants by version and seed with
// its winner marked, the best objective over time (from the incumbents the plugin reports,
// else from its progress messages), the log as it is written, the output (pretty,
// downloadable), a picture of the answer, and, for who may change the job, cancel, finish
// now and a rerun on the same version or another.

import { ApiError, follow, get, mayChange, request } from './api.js';
import { lineChart } from './chart.js';
import { fill, h, notice, numberElement, page, seconds, statusBadge, when } from './dom.js';
import { drawView } from './views.js';

// Outputs larger than this are downloadable but not shown in full.
const SHOWN_OUTPUT_CHARS = 200000;
// A progress message's last number is the objective its use case reports ("best cut so far: 11624").
const LAST_NUMBER = /(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*$/;

export function jobPage(id) {
  const path = `/job/${encodeURIComponent(id)}`;
  // Set when the page is left: whatever was on its way stops there (no stream is opened,
  // no picture drawn), and the output's download link is freed.
  let left = false;
  const leaving = new AbortController();
  let downloadUrl = null;
  const state = h('dl', { class: 'facts' });
  const executions = h('tbody', {});
  const executionsFirst = h('th', { scope: 'col' }, 'Attempt');
  const entrants = h('tbody', {});
  const entrantsSection = h('section', { 'aria-labelledby': 'entrants-heading', hidden: true },
    h('h2', { id: 'entrants-heading' }, 'Entrants'),
    h('p', { class: 'hint' }, 'A race runs its entrants at once and keeps the best.'),
    h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'Entrants table' },
      h('table', { class: 'entrants' },
        h('thead', {}, h('tr', {}, ['Entrant', 'State', 'Objective', 'Job'].map((name) => h('th', { scope: 'col' }, name)))),
        entrants)));
  // The race's winner, once its output names it.
  let winner = null;
  let lastView = null;
  const progressBar = h('progress', { max: '1', value: '0', 'aria-label': 'Progress of the current attempt' });
  const progressText = h('span', { class: 'progress-text' });
  const chart = h('canvas', { class: 'chart wide', role: 'img', 'aria-label': 'Best objective over time' });
  const log = h('pre', { class: 'log', tabindex: '0', 'aria-label': 'Log tail', 'aria-live': 'off' });
  const output = h('div', { class: 'output' });
  const picture = h('div', { class: 'picture-slot' });
  const cancel = h('button', { type: 'button', class: 'danger', hidden: true, onclick: cancelJob }, 'Cancel job');
  const finish = h('button', { type: 'button', hidden: true, onclick: finishJob,
    title: 'Stop now and keep the best answer found so far' }, 'Finish now');
  const rerunVersion = h('select', { id: 'rerun-version' }, h('option', { value: '' }, 'The version it ran'));
  const rerun = h('form', { class: 'rerun', hidden: true, onsubmit: rerunJob },
    h('label', { for: 'rerun-version' }, 'Rerun on'), rerunVersion,
    h('button', { type: 'submit' }, 'Rerun'));
  const objective = [];
  // The incumbents drawn, by execution and number; once there is one, the chart is theirs.
  const incumbents = [];
  const seen = new Set();
  let shownOutput = false;
  let drawn = null;

  page(`Job ${id}`,
    h('p', {}, h('a', { href: '#/jobs' }, '← All jobs')),
    h('section', { 'aria-label': 'Status' }, state, finish, cancel, rerun),
    h('section', { 'aria-labelledby': 'progress-heading' }, h('h2', { id: 'progress-heading' }, 'Progress'),
      h('p', {}, progressBar, ' ', progressText), chart),
    entrantsSection,
    h('section', { 'aria-labelledby': 'executions-heading' }, h('h2', { id: 'executions-heading' }, 'Executions'),
      h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'Executions table' }, h('table', { class: 'executions' },
        h('thead', {}, h('tr', {}, executionsFirst, ['State', 'Plugin', 'Digest', 'Started', 'Duration', 'Error'].map((name) => h('th', { scope: 'col' }, name)))),
        executions))),
    h('section', { 'aria-labelledby': 'log-heading' }, h('h2', { id: 'log-heading' }, 'Log'), log),
    h('section', { 'aria-labelledby': 'answer-heading' }, h('h2', { id: 'answer-heading' }, 'Answer'), picture, output));

  function show(view) {
    fill(state,
      h('dt', {}, 'State'), h('dd', {}, statusBadge(view.status)),
      h('dt', {}, 'Created'), h('dd', {}, when(view.created_at)),
      h('dt', {}, 'Ended'), h('dd', {}, when(view.ended_at, '—')),
      h('dt', {}, 'Version'), h('dd', { class: 'bound-version', title: view.plugin?.digest ?? null },
        view.plugin ? [view.plugin.version, view.plugin.requested ? ` (pinned as ${view.plugin.requested})` : ' (current at launch)'] : '—'),
      view.rerun_of ? [h('dt', {}, 'Rerun of'), h('dd', {}, h('a', { href: `#/job/${encodeURIComponent(view.rerun_of)}` }, view.rerun_of))] : null,
      view.stopped_early ? [h('dt', {}, 'Stopped early'), h('dd', {}, 'Finished on request with the best found by then')] : null);
    // Only who may change the job (not a viewer of its project) is offered to.
    const changing = mayChange(view.project);
    cancel.hidden = !changing || !['PENDING', 'RUNNING'].includes(view.status);
    finish.hidden = !changing || view.status !== 'RUNNING';
    rerun.hidden = !changing;
    lastView = view;
    showEntrants(view);
    // A race's executions are its entrants': each named by its entrant.
    const byExecution = new Map((view.race?.entrants ?? []).filter((entrant) => entrant.execution)
      .map((entrant) => [entrant.execution, entrant]));
    executionsFirst.textContent = view.race ? 'Entrant' : 'Attempt';
    const readAt = performance.now();
    const attempts = Object.entries(view.executions ?? {}).sort(([, a], [, b]) => a.attempt - b.attempt);
    fill(executions, attempts.length ? attempts.map(([executionId, execution]) => {
      const entrant = byExecution.get(executionId);
      const name = view.race ? (entrant ? entrantName(entrant) : `attempt ${execution.attempt}`) : String(execution.attempt);
      const running = execution.status === 'RUNNING';
      return h('tr', { 'data-execution': executionId },
        h('th', { scope: 'row' }, name),
        h('td', {}, statusBadge(execution.status)),
        h('td', {}, `${execution.plugin.name} ${execution.plugin.version}`),
        h('td', { class: 'mono', title: execution.plugin.digest }, execution.plugin.digest.slice(0, 19)),
        h('td', {}, when(execution.began_at)),
        // A running execution's duration goes on between reads.
        h('td', { class: 'duration', 'data-running': running ? String(execution.duration_ms) : null, 'data-read-at': running ? String(readAt) : null },
          seconds(execution.duration_ms)),
        h('td', {}, execution.error ? `${execution.error.code}: ${execution.error.message}` : ''));
    }) :
      h('tr', {}, h('td', { colspan: '7' }, 'Not started yet.')));
    const latest = attempts.at(-1);
    if (latest?.progress) showProgress(latest.progress);
    if (view.status === 'COMPLETED' && !shownOutput) {
      shownOutput = true;
      showAnswer(view);
    }
  }

  function showProgress(progress) {
    progressBar.value = progress.fraction;
    progressText.textContent = `${Math.round(progress.fraction * 100)}% ${progress.message}`;
    const match = LAST_NUMBER.exec(progress.message);
    if (match) {
      objective.push([Date.now(), Number(match[1])]);
      drawChart();
    }
  }

  function addIncumbent(incumbent) {
    const key = `${incumbent.execution_id}/${incumbent.seq}`;
    if (seen.has(key)) return;
    seen.add(key);
    incumbents.push([Date.parse(incumbent.found_at), incumbent.objective]);
    incumbents.sort((a, b) => a[0] - b[0]);
    drawChart();
  }

  function drawChart() {
    const points = incumbents.length ? incumbents : objective;
    const name = incumbents.length ? 'incumbents' : 'best objective';
    lineChart(chart, [{ name, points }], { title: 'Best objective over time' });
    chart.dataset.points = String(points.length);
    chart.dataset.series = name;
  }

  async function loadIncumbents() {
    try {
      const kept = await get(`${path}/incumbents`, { signal: leaving.signal });
      if (!left) kept.incumbents.forEach(addIncumbent);
    } catch (error) {
      if (!left) notice(`Cannot read the incumbents: ${error.message}`, 'error');
    }
  }

  // A race's entrants, each by version and seed, the winner marked once the race names it.
  function showEntrants(view) {
    entrantsSection.hidden = !view.race;
    if (!view.race) return;
    fill(entrants, view.race.entrants.map((entrant) => h('tr', { 'data-entrant': entrant.job },
      h('th', { scope: 'row' }, entrantName(entrant), entrant.job === winner ? h('span', { class: 'badge winner' }, 'winner') : null),
      h('td', {}, statusBadge(entrant.status)),
      h('td', {}, entrant.objective === null ? '–' : numberElement(entrant.objective)),
      h('td', {}, h('a', { class: 'mono', href: `#/job/${encodeURIComponent(entrant.job)}` }, entrant.job)))));
  }

  async function showAnswer(view) {
    try {
      const response = await get(`${path}/output`, { raw: true, signal: leaving.signal });
      const text = await response.text();
      if (left) return;
      const result = JSON.parse(text);
      if (view.race && result?.winner?.job) {
        winner = result.winner.job;
        showEntrants(lastView ?? view);
      }
      const pretty = JSON.stringify(result, null, 2);
      downloadUrl = URL.createObjectURL(new Blob([pretty], { type: 'application/json' }));
      const download = h('a', { class: 'button', download: `${id}.json`, href: downloadUrl }, 'Download output');
      fill(output, download,
        h('details', {}, h('summary', {}, 'Output JSON'),
          h('pre', { class: 'json', tabindex: '0' }, pretty.length > SHOWN_OUTPUT_CHARS ? `${pretty.slice(0, SHOWN_OUTPUT_CHARS)}\n… (download for the rest)` : pretty)));
      // The view the bound version's output schema declares, if any.
      const ran = Object.values(view.executions ?? {}).at(-1)?.plugin;
      if (!ran) return;
      const problem = await get(`/problem/${encodeURIComponent(`${ran.name}@${ran.digest}`)}`, { signal: leaving.signal });
      const declared = problem.output_schema?.['x-caseload-view'];
      if (!declared || left) return;
      const readInput = async () => {
        // Decoded: a dataset in any format comes as its use case's JSON input.
        const input = await get(`${path}/input?decoded=true`, { raw: true, signal: leaving.signal });
        return { text: await input.text(), mediaType: input.headers.get('content-type') ?? '' };
      };
      const drawing = await drawView(declared, result, readInput);
      if (left || !drawing) return;
      drawn = drawing;
      fill(picture, drawn);
    } catch (error) {
      if (!left) notice(`Cannot show the answer: ${error.message}`, 'error');
    }
  }

  async function finishJob() {
    try {
      const answer = await request('POST', `${path}/finish`);
      notice(answer.detail);
    } catch (error) {
      notice(error.message, 'error');
    }
  }

  async function cancelJob() {
    try {
      const answer = await request('DELETE', path);
      notice(answer.detail);
    } catch (error) {
      notice(error.message, 'error');
    }
  }

  // The use case's versions to rerun on, the job's own first (its very bytes, by default).
  async function listVersions() {
    try {
      const found = await get(`/jobs?ids=${encodeURIComponent(id)}`, { signal: leaving.signal });
      const problem = found.jobs[0]?.problem;
      if (!problem || left) return;
      const listing = await get(`/problem/${encodeURIComponent(problem)}/versions`, { signal: leaving.signal });
      if (left) return;
      rerunVersion.append(...listing.versions.filter((entry) => !entry.retired).map((entry) =>
        h('option', { value: entry.digest },
          `${entry.version}${entry.source === 'directory' ? ` (${entry.file})` : ''}${entry.current ? ' (current)' : ''}`)));
    } catch (error) {
      if (!left) notice(`Cannot list the versions to rerun on: ${error.message}`, 'error');
    }
  }

  async function rerunJob(event) {
    event.preventDefault();
    try {
      const accepted = await request('POST', `${path}/rerun`, { json: rerunVersion.value ? { version: rerunVersion.value } : {} });
      location.hash = `#/job/${encodeURIComponent(accepted.job)}`;
    } catch (error) {
      notice(error.message, 'error');
    }
  }

  async function load() {
    try {
      const status = await get(path, { signal: leaving.signal });
      if (left) return false;
      show(status.job[id]);
      return true;
    } catch (error) {
      if (left) return false;
      if (error instanceof ApiError && error.status === 404) {
        fill(state, h('p', { class: 'error' }, `No job ${id}.`));
        return false;
      }
      notice(error.message, 'error');
      return true;
    }
  }

  // Running executions' durations, once a second.
  const ticking = setInterval(() => {
    for (const cell of executions.querySelectorAll('td.duration[data-running]')) {
      const elapsed = performance.now() - Number(cell.dataset.readAt);
      cell.textContent = seconds(Number(cell.dataset.running) + elapsed);
    }
  }, 1000);

  let stop = () => {};
  load().then((found) => {
    if (!found || left) return;
    listVersions();
    loadIncumbents();
    stop = follow(`${path}/events`, (name, data) => {
      if (name === 'progress') showProgress(data);
      else if (name === 'incumbent') addIncumbent(data);
      else if (name === 'log') {
        if (data.gap) log.append('\n…\n');
        log.append(data.text);
        log.scrollTop = log.scrollHeight;
      } else if (name === 'status') load();
      else if (name === 'end') {
        show(data.job[id]);
        return false;
      }
      return true;
    });
  });
  return () => {
    left = true;
    clearInterval(ticking);
    leaving.abort();
    stop();
    drawn?.stop?.();
    if (downloadUrl) URL.revokeObjectURL(downloadUrl);
  };
}

// An entrant of a race as a person names it: its version and seed.
function entrantName(entrant) {
  return `${entrant.version ?? 'version ?'}, seed ${entrant.seed ?? '?'}`;
}
