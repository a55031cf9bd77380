// Use cases: each with its version, digest, source, load time and limits; its versions,
// with publishing, promoting (or rolling back) and retiring for an administrator; its input
// as a JSON editor checked as it is typed (by the server, with the use case's own messages);
// launch from there, or upload a dataset with a progress bar and launch that. Plugin
// reloads, publications and refused files appear as they happen.

import { get, inProject, request, upload } from './api.js';
import { fill, h, notice, page, when } from './dom.js';
import { startExperimentWith } from './experiments.js';

// How often the page asks for plugin events.
const EVENTS_EVERY_MS = 2000;

export function useCasesPage() {
  const list = h('div', { class: 'cards' });
  const events = h('ol', { class: 'plugin-events', 'aria-live': 'polite', 'aria-label': 'Plugin events, newest first' });
  page('Use cases', list, h('h2', {}, 'Plugin events'), events);
  const refresh = async () => {
    try {
      const problems = await get('/problems');
      fill(list, problems.map((problem) => h('article', { class: 'card' },
        h('h2', {}, h('a', { href: `#/usecase/${encodeURIComponent(problem.name)}` }, problem.name), ` ${problem.version}`),
        h('p', {}, problem.description),
        h('dl', { class: 'facts' },
          h('dt', {}, 'Source'), h('dd', {}, sourceOf(problem)),
          h('dt', {}, 'Digest'), h('dd', { class: 'mono', title: problem.digest }, problem.digest.slice(0, 19)),
          h('dt', {}, 'Loaded'), h('dd', {}, when(problem.loaded_at))))));
    } catch (error) {
      notice(error.message, 'error');
    }
  };
  refresh();
  const stopEvents = watchPluginEvents(events, refresh);
  return stopEvents;
}

// Follows GET /plugin_events, newest first into `list`; `changed()` after each new batch.
// A failed poll (the server restarting, the network gone) is told once and the polling goes
// on, so the events appear again when the server does.
function watchPluginEvents(list, changed) {
  let after = 0;
  let stopped = false;
  let failing = false;
  const describe = (event) => {
    const what = event.name ? `${event.name} ${event.version ?? ''}`.trim() : event.file;
    const from = event.file ? ` from ${event.file}` : '';
    const by = event.actor ? ` by ${event.actor}` : '';
    switch (event.kind) {
      case 'published': return `${what} published${by}`;
      case 'promoted': return `${what} made current${by}${event.previous ? ` (was ${event.previous})` : ''}`;
      case 'retired': return `${what} retired${by}`;
      case 'loaded': return `${what} loaded${from}`;
      case 'replaced': return `${what} replaced the previous version${from}`;
      case 'removed': return `${what} removed: ${event.file} is gone`;
      default: return `${event.file ?? what} refused: ${event.reason}`;
    }
  };
  const poll = async () => {
    try {
      const events = await get(`/plugin_events?after=${after}`);
      failing = false;
      for (const event of events) {
        after = event.seq;
        list.prepend(h('li', { class: `plugin-event ${event.kind}`, 'data-kind': event.kind }, when(event.at), ' ', describe(event)));
      }
      if (events.length) changed();
    } catch (error) {
      if (!failing && !stopped) notice(`Cannot read plugin events, trying again: ${error.message}`, 'error');
      failing = true;
    }
    if (!stopped) timer = setTimeout(poll, EVENTS_EVERY_MS);
  };
  let timer = setTimeout(poll, 0);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

export function useCasePage(name) {
  const main = page(`Use case ${name}`, h('p', {}, h('a', { href: '#/usecases' }, '← All use cases')));
  let checkDue = null;
  let checking = null;
  get(`/problem/${encodeURIComponent(name)}`).then((problem) => {
    const editor = h('textarea', { id: 'input-editor', class: 'editor', rows: '14', spellcheck: 'false', 'aria-describedby': 'input-verdict' });
    const verdict = h('div', { id: 'input-verdict', class: 'verdict', role: 'status' });
    const launch = h('button', { type: 'submit' }, 'Launch');
    const examples = problem.examples ?? [];
    editor.value = JSON.stringify(examples[0] ?? {}, null, 2);
    editor.addEventListener('input', () => {
      clearTimeout(checkDue);
      checkDue = setTimeout(check, 400);
    });

    async function check() {
      let body;
      try {
        body = JSON.parse(editor.value);
      } catch (error) {
        fill(verdict, h('p', { class: 'error' }, `Not JSON: ${error.message}`));
        return false;
      }
      checking?.abort();
      checking = new AbortController();
      try {
        await request('POST', `/problem/${encodeURIComponent(name)}/check`, { json: body, signal: checking.signal });
        fill(verdict, h('p', { class: 'ok' }, 'Valid input.'));
        return true;
      } catch (error) {
        if (error.name === 'AbortError') return false;
        fill(verdict, h('p', { class: 'error' }, error.message),
          h('ul', {}, (error.body?.errors ?? []).map((violation) => h('li', {}, h('code', {}, violation.pointer || '/'), ` ${violation.message}`))));
        return false;
      }
    }

    const launchForm = h('form', { class: 'launch', onsubmit: async (event) => {
      event.preventDefault();
      if (!(await check())) return;
      try {
        const accepted = await request('POST', inProject(`/problem/${encodeURIComponent(name)}`), { json: JSON.parse(editor.value) });
        location.hash = `#/job/${encodeURIComponent(accepted.job)}`;
      } catch (error) {
        notice(error.message, 'error');
      }
    } },
    h('label', { for: 'input-editor' }, 'Input (JSON: the input, with optional "options" and "labels")'),
    examples.length > 1 ? h('p', {}, 'Examples: ', examples.map((example, index) => h('button', { type: 'button', onclick: () => {
      editor.value = JSON.stringify(example, null, 2);
      check();
    } }, `#${index + 1}`))) : null,
    editor, verdict, launch);

    const progress = h('progress', { max: '1', value: '0', id: 'upload-progress', 'aria-label': 'Upload progress' });
    const uploaded = h('div', { role: 'status' });
    const fileInput = h('input', { type: 'file', id: 'dataset-file' });
    const uploadForm = h('form', { class: 'upload', onsubmit: async (event) => {
      event.preventDefault();
      const file = fileInput.files[0];
      if (!file) return notice('Choose a file first.', 'error');
      try {
        const dataFile = await upload(file, (sent, total) => { progress.value = total ? sent / total : 0; });
        progress.value = 1;
        fill(uploaded, h('p', {}, `Uploaded ${dataFile.filename ?? 'the file'} (${dataFile.size} bytes) as `, h('code', {}, dataFile.data_file_identifier), '. '),
          h('button', { type: 'button', id: 'launch-dataset', onclick: async () => {
            try {
              const accepted = await request('POST', inProject(`/problem/${encodeURIComponent(name)}`), { json: { data_file_identifier: dataFile.data_file_identifier } });
              location.hash = `#/job/${encodeURIComponent(accepted.job)}`;
            } catch (error) {
              notice(error.message, 'error');
            }
          } }, 'Launch with this dataset'));
      } catch (error) {
        notice(error.message, 'error');
      }
    } },
    h('label', { for: 'dataset-file' }, `Dataset file (${problem.media_types.join(', ')})`), fileInput,
    h('button', { type: 'submit' }, 'Upload'), progress, uploaded);

    const facts = h('dl', { class: 'facts' });
    const showFacts = (served) => {
      const limits = served.limits;
      fill(facts,
        h('dt', {}, 'Version'), h('dd', {}, served.version),
        h('dt', {}, 'Digest'), h('dd', { class: 'mono' }, served.digest),
        h('dt', {}, 'Source'), h('dd', {}, sourceOf(served)),
        h('dt', {}, 'Loaded'), h('dd', {}, when(served.loaded_at)),
        h('dt', {}, 'Aliases'), h('dd', {}, served.aliases.join(', ') || '—'),
        h('dt', {}, 'Time limit'), h('dd', {}, `${limits.default_time_limit_s} s by default, at most ${limits.max_time_limit_s} s`),
        h('dt', {}, 'Memory'), h('dd', {}, `${limits.memory_limit_mib} MiB`),
        h('dt', {}, 'Output'), h('dd', {}, `at most ${limits.max_output_bytes} bytes`));
    };
    showFacts(problem);
    // A promotion, a rollback or a publish changes what an unpinned launch gets: the facts
    // above say so again.
    const versionsChanged = () => get(`/problem/${encodeURIComponent(name)}`).then(showFacts, (error) => notice(error.message, 'error'));
    main.append(
      h('p', {}, problem.description),
      facts,
      versionsSection(problem.name, versionsChanged),
      h('h2', {}, 'Launch'), launchForm,
      h('h2', {}, 'Launch on a dataset'), uploadForm,
      h('details', {}, h('summary', {}, 'Input schema'), h('pre', { class: 'json', tabindex: '0' }, JSON.stringify(problem.input_schema, null, 2))));
    check();
  }).catch((error) => main.append(h('p', { class: 'error' }, error.message)));
  return () => clearTimeout(checkDue);
}

// Where a use case's served version comes from, with the plugins directory's file name.
function sourceOf(entry) {
  return entry.file ? `${entry.source} (${entry.file})` : entry.source;
}

// A use case's versions (GET /problem/<name>/versions) as a table, with the actions each
// allows: make current (a promotion, or a rollback), retire (a published version that is
// not current); and a form that publishes a component. Only an administrator may change
// them: anyone else sees the server's 403 detail, as any refusal's detail. `changed()` after
// each change.
function versionsSection(name, changed) {
  const path = `/problem/${encodeURIComponent(name)}`;
  const rows = h('tbody', {});
  const outcome = h('div', { id: 'versions-outcome', role: 'status' });
  const fileInput = h('input', { type: 'file', id: 'plugin-file', accept: '.wasm,application/wasm' });
  const makeCurrent = h('input', { type: 'checkbox', id: 'plugin-current', checked: true });

  const tell = (...children) => fill(outcome, h('p', {}, ...children));
  const refused = (error) => fill(outcome, h('p', { class: 'error' }, error.message));

  // The versions in service, the current one first: what an experiment compares.
  let serving = [];

  function show(listing) {
    const inService = listing.versions.filter((entry) => !entry.retired && entry.source !== 'directory');
    serving = [...inService.filter((entry) => entry.current), ...inService.filter((entry) => !entry.current)]
      .map((entry) => entry.version);
    fill(rows, listing.versions.map((entry) => {
      const label = entry.source === 'directory' ? `${entry.version} (${entry.file})` : entry.version;
      const actions = [];
      // A plugins directory's file serves its own replica only; it is published, not promoted.
      if (!entry.current && !entry.retired && entry.source !== 'directory') {
        actions.push(h('button', { type: 'button', onclick: () => change('PUT', `${path}/current`, { json: { version: entry.digest } }, `${label} is current.`) },
          `Make ${label} current`));
      }
      if (entry.source === 'store' && !entry.current && !entry.retired) {
        actions.push(h('button', { type: 'button', class: 'danger', onclick: () => change('DELETE', `${path}/versions/${encodeURIComponent(entry.digest)}`, {}, `${label} is retired.`) },
          `Retire ${label}`));
      }
      return h('tr', { 'data-version': entry.version, 'data-source': entry.source, class: entry.retired ? 'gone' : null },
        h('th', { scope: 'row' }, label),
        h('td', {}, entry.source),
        h('td', {}, entry.current ? h('span', { class: 'badge current' }, 'current') : entry.retired ? 'retired' : ''),
        h('td', {}, entry.jobs),
        h('td', {}, entry.published_by ? [entry.published_by, ' ', when(entry.published_at)] : '—'),
        h('td', { class: 'mono', title: entry.digest }, entry.digest.slice(0, 19)),
        h('td', {}, actions));
    }));
  }

  async function load() {
    try {
      show(await get(`${path}/versions`));
    } catch (error) {
      refused(error);
    }
  }

  async function change(method, target, options, done) {
    try {
      show(await request(method, target, options));
      tell(done);
      changed();
    } catch (error) {
      refused(error);
    }
  }

  const publishForm = h('form', { class: 'publish', onsubmit: async (event) => {
    event.preventDefault();
    const file = fileInput.files[0];
    if (!file) return tell('Choose a .wasm file first.');
    tell(`Publishing ${file.name}: the server checks it first…`);
    try {
      const published = await request('POST', `/plugins?current=${makeCurrent.checked}`, {
        body: file, headers: { 'content-type': 'application/wasm' },
      });
      fill(outcome,
        h('p', {}, `${published.name} ${published.version} ${published.created ? 'published' : 'was already published'}`,
          published.current ? ' and is current.' : ' (not current).'),
        published.report?.length ? h('pre', { class: 'json', tabindex: '0', 'aria-label': 'Check report' }, published.report.join('\n')) : null);
      if (published.name === name) {
        await load();
        changed();
      }
    } catch (error) {
      refused(error);
    }
  } },
  h('label', { for: 'plugin-file' }, 'Component (.wasm)'), fileInput,
  h('span', {}, makeCurrent, ' ', h('label', { for: 'plugin-current' }, 'Make it current')),
  h('button', { type: 'submit' }, 'Publish'));

  load();
  return h('section', { 'aria-labelledby': 'versions-heading' },
    h('h2', { id: 'versions-heading' }, 'Versions'),
    // On a narrow screen the table scrolls: its wrapper takes the focus, for the keyboard.
    h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'Versions table' }, h('table', { class: 'versions' },
      h('thead', {}, h('tr', {}, ['Version', 'Source', 'State', 'Jobs', 'Published', 'Digest', 'Actions'].map((heading) => h('th', { scope: 'col' }, heading)))),
      rows)),
    outcome,
    h('button', { type: 'button', onclick: () => startExperimentWith({ problem: name, versions: serving }) }, 'Compare versions in an experiment'),
    h('h3', {}, 'Publish a version'), publishForm);
}
