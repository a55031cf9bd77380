// Use cases: each with its version, digest, source, load time and limits; its input as a
// JSON editor checked as it is typed (by the server, with the use case's own messages);
// launch from there, or upload a dataset with a progress bar and launch that. Plugin
// reloads and refused files appear as they happen.

import { get, request, upload } from './api.js';
import { fill, h, notice, page, when } from './dom.js';

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
          h('dt', {}, 'Source'), h('dd', {}, problem.source),
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
    const from = event.file ? ` from ${event.file}` : ' (built in)';
    switch (event.kind) {
      case 'loaded': return `${what} loaded${from}`;
      case 'replaced': return `${what} replaced the previous version${from}`;
      case 'removed': return `${what} removed: ${event.file} is gone`;
      default: return `${event.file} refused: ${event.reason}`;
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
        const accepted = await request('POST', `/problem/${encodeURIComponent(name)}`, { json: JSON.parse(editor.value) });
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
              const accepted = await request('POST', `/problem/${encodeURIComponent(name)}`, { json: { data_file_identifier: dataFile.data_file_identifier } });
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

    const limits = problem.limits;
    main.append(
      h('p', {}, problem.description),
      h('dl', { class: 'facts' },
        h('dt', {}, 'Version'), h('dd', {}, problem.version),
        h('dt', {}, 'Digest'), h('dd', { class: 'mono' }, problem.digest),
        h('dt', {}, 'Source'), h('dd', {}, problem.source),
        h('dt', {}, 'Loaded'), h('dd', {}, when(problem.loaded_at)),
        h('dt', {}, 'Aliases'), h('dd', {}, problem.aliases.join(', ') || '—'),
        h('dt', {}, 'Time limit'), h('dd', {}, `${limits.default_time_limit_s} s by default, at most ${limits.max_time_limit_s} s`),
        h('dt', {}, 'Memory'), h('dd', {}, `${limits.memory_limit_mib} MiB`),
        h('dt', {}, 'Output'), h('dd', {}, `at most ${limits.max_output_bytes} bytes`)),
      h('h2', {}, 'Launch'), launchForm,
      h('h2', {}, 'Launch on a dataset'), uploadForm,
      h('details', {}, h('summary', {}, 'Input schema'), h('pre', { class: 'json', tabindex: '0' }, JSON.stringify(problem.input_schema, null, 2))));
    check();
  }).catch((error) => main.append(h('p', { class: 'error' }, error.message)));
  return () => clearTimeout(checkDue);
}
