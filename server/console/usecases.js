// Use cases: each with its version, digest, source, load time and limits; its versions,
// with publishing, promoting (or rolling back) and retiring for an administrator; its launch:
// a form made from its input schema beside a JSON editor, each following the other, the
// options as fields, on an input or on one of the caller's data files, checked as it is
// typed (by the server, with the use case's own messages); an upload with a progress bar.
// Plugin reloads, publications and refused files appear as they happen.

import { get, inProject, isAdmin, mayChange, request, upload } from './api.js';
import { fill, h, notice, page, prettyJson, when } from './dom.js';
import { startExperimentWith } from './experiments.js';
import { schemaForm } from './schemaform.js';

// How often the page asks for plugin events.
const EVENTS_EVERY_MS = 2000;
// How many completed jobs are offered as a warm start, and data files to launch on.
const PICK_FROM = 50;

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
  let left = false;
  let stopLaunch = () => {};
  get(`/problem/${encodeURIComponent(name)}`).then((problem) => {
    if (left) return;
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
    const launching = mayChange();
    let launch = null;
    if (launching) {
      launch = launchSection(problem);
      stopLaunch = launch.stop;
    }
    main.append(...[
      h('p', {}, problem.description),
      facts,
      versionsSection(problem.name, versionsChanged, (serving) => launch?.versions(serving)),
      ...(launching ? [h('h2', {}, 'Launch'), launch.element, h('h2', {}, 'Upload a dataset'), uploadSection(problem, launch)]
        : [h('p', { class: 'hint' }, 'Launching needs a member of this project; you may read its jobs.')]),
      h('details', {}, h('summary', {}, 'Input schema'), h('pre', { class: 'json', tabindex: '0' }, JSON.stringify(problem.input_schema, null, 2)))]);
    launch?.start();
  }).catch((error) => main.append(h('p', { class: 'error' }, error.message)));
  return () => {
    left = true;
    stopLaunch();
  };
}

// The launch: the input as a form made from the schema and as JSON, each following the
// other; the options as fields; an input or a data file; checked as it is typed. Answers
// { element, start(), stop(), versions(serving), dataFileAdded(file) }.
function launchSection(problem) {
  const name = problem.name;
  const schema = problem.input_schema;
  const parameters = schema['x-caseload-dataset-parameters'] ?? [];
  const examples = problem.examples ?? [];
  // The launch body the editor shows; the last inline input, kept while a data file is chosen.
  let body = structuredClone(examples[0] ?? {});
  let inline = withoutLaunchFields(body);
  let checkDue = null;
  let checking = null;
  let stopped = false;

  const editor = h('textarea', { id: 'input-editor', class: 'editor', rows: '18', spellcheck: 'false', 'aria-describedby': 'input-verdict' });
  const verdict = h('div', { id: 'input-verdict', class: 'verdict', role: 'status' });
  // One form: the whole input, or beside a data file its parameters alone.
  const form = schemaForm(schema, { id: 'input', onChange: (input) => {
    if ('data_file_identifier' in body) {
      body = { data_file_identifier: body.data_file_identifier, ...input, ...launchFields(body) };
    } else {
      inline = input;
      body = { ...input, ...launchFields(body) };
    }
    writeEditor();
  } });
  const parametersHint = h('p', { class: 'hint', hidden: true }, parameters.length
    ? `Beside a data file, only its parameters may be set: ${parameters.join(', ')}.`
    : 'This use case takes nothing beside a data file.');

  const sourceInline = h('input', { type: 'radio', name: 'launch-source', id: 'launch-source-inline', value: 'inline', checked: true, onchange: () => chooseSource(false) });
  const sourceFile = h('input', { type: 'radio', name: 'launch-source', id: 'launch-source-data-file', value: 'data-file', onchange: () => chooseSource(true) });
  const dataFiles = h('select', { id: 'launch-data-file', onchange: () => {
    body = { ...body, data_file_identifier: dataFiles.value };
    writeEditor();
  } }, h('option', { value: '' }, '(choose a data file)'));
  const dataFileField = h('div', { class: 'field', hidden: true },
    h('label', { for: 'launch-data-file' }, 'Data file'), dataFiles);

  // The options' fields; the options they do not cover stay in the JSON as they are.
  const timeLimit = h('input', { id: 'option-time-limit', type: 'number', min: '0', step: 'any', inputmode: 'decimal',
    placeholder: `${problem.limits.default_time_limit_s} (at most ${problem.limits.max_time_limit_s})`, oninput: optionsChanged });
  const seed = h('input', { id: 'option-seed', type: 'number', min: '0', step: '1', placeholder: 'random', oninput: optionsChanged });
  const labels = h('input', { id: 'option-labels', autocomplete: 'off', spellcheck: 'false', placeholder: 'team:ops, sweep:a',
    'aria-describedby': 'option-labels-hint', oninput: optionsChanged });
  const raceSeeds = h('input', { id: 'option-race-seeds', type: 'number', min: '1', max: '16', step: '1', placeholder: 'no race',
    'aria-describedby': 'option-race-hint', oninput: optionsChanged });
  const raceVersions = h('div', { class: 'checks', id: 'option-race-versions' });
  const warmStart = h('select', { id: 'option-warm-start', onchange: optionsChanged }, h('option', { value: '' }, 'none'));
  const optionsBox = h('fieldset', { class: 'options' }, h('legend', {}, 'Options'),
    h('div', { class: 'field' }, h('label', { for: 'option-time-limit' }, 'Time limit (s)'), timeLimit),
    h('div', { class: 'field' }, h('label', { for: 'option-seed' }, 'Seed'), seed),
    h('div', { class: 'field' }, h('label', { for: 'option-labels' }, 'Labels'), labels,
      h('p', { class: 'hint', id: 'option-labels-hint' }, 'key:value, separated by commas.')),
    h('div', { class: 'field' }, h('label', { for: 'option-race-seeds' }, 'Race: seeds per version'), raceSeeds,
      h('p', { class: 'hint', id: 'option-race-hint' }, 'Runs 2 to 16 entrants at once and keeps the best.')),
    h('fieldset', { class: 'race-versions' }, h('legend', {}, 'Race: versions (none: the one launched)'), raceVersions),
    h('div', { class: 'field' }, h('label', { for: 'option-warm-start' }, 'Warm start from'), warmStart));

  const launchButton = h('button', { type: 'submit' }, 'Launch');
  const element = h('form', { class: 'launch', onsubmit: async (event) => {
    event.preventDefault();
    if (!(await check())) return;
    try {
      const accepted = await request('POST', inProject(`/problem/${encodeURIComponent(name)}`), { json: JSON.parse(editor.value) });
      location.hash = `#/job/${encodeURIComponent(accepted.job)}`;
    } catch (error) {
      notice(error.message, 'error');
    }
  } },
  h('fieldset', { class: 'source' }, h('legend', {}, 'Launch on'),
    h('label', { class: 'check' }, sourceInline, ' an input'),
    h('label', { class: 'check' }, sourceFile, ' one of your data files'),
    dataFileField),
  examples.length > 1 ? h('p', {}, 'Examples: ', examples.map((example, index) => h('button', { type: 'button', onclick: () => {
    body = { ...structuredClone(example), ...launchFields(body) };
    readBody();
  } }, `#${index + 1}`))) : null,
  h('div', { class: 'launch-panes' },
    h('div', { class: 'pane' }, h('h3', {}, 'Input'), parametersHint, form.element, optionsBox),
    h('div', { class: 'pane' },
      h('label', { for: 'input-editor' }, 'JSON: the input, with optional "options" and "labels"'),
      editor, verdict)),
  launchButton);

  editor.addEventListener('input', () => {
    if (readBody(false)) scheduleCheck();
    else {
      clearTimeout(checkDue);
      checkDue = setTimeout(check, 400);
    }
  });

  // An input, or a data file with the parameters the input had.
  function chooseSource(file) {
    if (file === 'data_file_identifier' in body) return;
    if (file) {
      const given = Object.fromEntries(Object.entries(inline).filter(([key]) => parameters.includes(key)));
      body = { data_file_identifier: dataFiles.value, ...given, ...launchFields(body) };
    } else {
      body = { ...inline, ...launchFields(body) };
    }
    readBody();
  }

  // The body shown in the editor (`fromBody`), or the editor's JSON read into the body; then
  // in the form and the fields. False while the editor holds no JSON object.
  function readBody(fromBody = true) {
    if (fromBody) editor.value = prettyJson(body);
    let parsed;
    try {
      parsed = JSON.parse(editor.value);
    } catch {
      return false;
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return false;
    body = parsed;
    const file = 'data_file_identifier' in body;
    sourceInline.checked = !file;
    sourceFile.checked = file;
    dataFileField.hidden = !file;
    parametersHint.hidden = !file;
    if (file) {
      const chosen = String(body.data_file_identifier ?? '');
      if (chosen && ![...dataFiles.options].some((option) => option.value === chosen)) {
        dataFiles.append(h('option', { value: chosen }, chosen));
      }
      dataFiles.value = chosen;
      form.set(withoutLaunchFields(body), parameters);
    } else {
      inline = withoutLaunchFields(body);
      form.set(inline);
    }
    showOptions();
    if (fromBody) scheduleCheck();
    return true;
  }

  function writeEditor() {
    editor.value = prettyJson(body);
    scheduleCheck();
  }

  function scheduleCheck() {
    clearTimeout(checkDue);
    checkDue = setTimeout(check, 400);
  }

  // The fields from the body's options and labels.
  function showOptions() {
    const options = body.options ?? {};
    timeLimit.value = typeof options.time_limit_s === 'number' ? String(options.time_limit_s) : '';
    seed.value = typeof options.seed === 'number' ? String(options.seed) : '';
    labels.value = body.labels && typeof body.labels === 'object' ? Object.entries(body.labels).map(([key, value]) => `${key}:${value}`).join(', ') : '';
    labels.removeAttribute('aria-invalid');
    const race = options.race ?? {};
    raceSeeds.value = typeof race.seeds === 'number' ? String(race.seeds) : '';
    for (const box of raceVersions.querySelectorAll('input')) box.checked = (race.versions ?? []).includes(box.value);
    const chosen = options.warm_start ?? '';
    if (chosen && ![...warmStart.options].some((option) => option.value === chosen)) warmStart.append(h('option', { value: chosen }, chosen));
    warmStart.value = chosen;
  }

  // The body's options and labels from the fields.
  function optionsChanged() {
    const options = { ...(body.options ?? {}) };
    const setNumber = (key, control, whole) => {
      const text = control.value.trim();
      const number = Number(text);
      if (text === '') delete options[key];
      else if (Number.isFinite(number) && (!whole || Number.isInteger(number))) options[key] = number;
    };
    setNumber('time_limit_s', timeLimit, false);
    setNumber('seed', seed, true);
    const race = {};
    const seeds = Number(raceSeeds.value);
    if (raceSeeds.value.trim() !== '' && Number.isInteger(seeds)) race.seeds = seeds;
    const versions = [...raceVersions.querySelectorAll('input:checked')].map((box) => box.value);
    if (versions.length) race.versions = versions;
    if (Object.keys(race).length) options.race = race;
    else delete options.race;
    if (warmStart.value) options.warm_start = warmStart.value;
    else delete options.warm_start;
    const next = { ...body };
    if (Object.keys(options).length) next.options = options;
    else delete next.options;
    const parsed = parseLabels(labels.value);
    labels.setAttribute('aria-invalid', parsed === null ? 'true' : 'false');
    if (parsed !== null) {
      if (Object.keys(parsed).length) next.labels = parsed;
      else delete next.labels;
    }
    body = next;
    writeEditor();
  }

  async function check() {
    let parsed;
    try {
      parsed = JSON.parse(editor.value);
    } catch (error) {
      fill(verdict, h('p', { class: 'error' }, `Not JSON: ${error.message}`));
      return false;
    }
    checking?.abort();
    checking = new AbortController();
    try {
      await request('POST', `/problem/${encodeURIComponent(name)}/check`, { json: parsed, signal: checking.signal });
      if (!stopped) fill(verdict, h('p', { class: 'ok' }, 'Valid input.'));
      return true;
    } catch (error) {
      if (error.name === 'AbortError' || stopped) return false;
      fill(verdict, h('p', { class: 'error' }, error.message),
        h('ul', {}, (error.body?.errors ?? []).map((violation) => h('li', {}, h('code', {}, violation.pointer || '/'), ` ${violation.message}`))));
      return false;
    }
  }

  // The completed jobs of this use case a launch may start from, and the data files.
  async function loadChoices() {
    try {
      const [jobs, files] = await Promise.all([
        get(inProject(`/jobs?problem=${encodeURIComponent(name)}&status=COMPLETED&limit=${PICK_FROM}`)),
        get(inProject(`/data_files?limit=${PICK_FROM}`)),
      ]);
      if (stopped) return;
      for (const job of jobs.jobs) {
        if ([...warmStart.options].some((option) => option.value === job.id)) continue;
        const tags = Object.entries(job.labels ?? {}).map(([key, value]) => `${key}:${value}`).join(' ');
        warmStart.append(h('option', { value: job.id }, `${job.id.slice(-12)}${tags ? ` ${tags}` : ''}${job.objective === null ? '' : ` (objective ${job.objective})`}`));
      }
      const accepted = new Set(['application/json', ...(problem.media_types ?? [])]);
      files.data_files.filter((file) => accepted.has(file.media_type)).forEach((file) => dataFileAdded(file, false));
      showOptions();
      if ('data_file_identifier' in body) dataFiles.value = body.data_file_identifier;
    } catch (error) {
      if (!stopped) notice(`Cannot list the jobs and data files to pick from: ${error.message}`, 'error');
    }
  }

  function dataFileAdded(file, choose = true) {
    let option = [...dataFiles.options].find((one) => one.value === file.data_file_identifier);
    if (!option) {
      option = h('option', { value: file.data_file_identifier },
        `${file.filename ?? file.data_file_identifier} (${file.size} bytes, ${file.media_type})`);
      dataFiles.append(option);
    } else {
      option.textContent = `${file.filename ?? file.data_file_identifier} (${file.size} bytes, ${file.media_type})`;
    }
    if (choose) {
      chooseSource(true);
      body = { ...body, data_file_identifier: file.data_file_identifier };
      readBody();
    }
  }

  return {
    element,
    start() {
      readBody();
      loadChoices();
    },
    stop() {
      stopped = true;
      clearTimeout(checkDue);
      checking?.abort();
    },
    // The versions a race may run, current first.
    versions(serving) {
      const chosen = new Set(body.options?.race?.versions ?? []);
      fill(raceVersions, serving.map((version) => h('label', { class: 'check' },
        h('input', { type: 'checkbox', name: 'option-race-version', value: version, checked: chosen.has(version), onchange: optionsChanged }),
        ` ${version}`)));
    },
    dataFileAdded,
  };
}

// The upload of a dataset, with a progress bar; the file uploaded is then chosen to launch on.
function uploadSection(problem, launch) {
  const progress = h('progress', { max: '1', value: '0', id: 'upload-progress', 'aria-label': 'Upload progress' });
  const uploaded = h('div', { role: 'status' });
  const fileInput = h('input', { type: 'file', id: 'dataset-file' });
  return h('form', { class: 'upload', onsubmit: async (event) => {
    event.preventDefault();
    const file = fileInput.files[0];
    if (!file) return notice('Choose a file first.', 'error');
    try {
      const dataFile = await upload(file, (sent, total) => { progress.value = total ? sent / total : 0; });
      progress.value = 1;
      launch.dataFileAdded(dataFile, false);
      fill(uploaded, h('p', {}, `Uploaded ${dataFile.filename ?? 'the file'} (${dataFile.size} bytes) as `, h('code', {}, dataFile.data_file_identifier), '. '),
        h('button', { type: 'button', id: 'launch-dataset', onclick: async () => {
          try {
            const accepted = await request('POST', inProject(`/problem/${encodeURIComponent(problem.name)}`), { json: { data_file_identifier: dataFile.data_file_identifier } });
            location.hash = `#/job/${encodeURIComponent(accepted.job)}`;
          } catch (error) {
            notice(error.message, 'error');
          }
        } }, 'Launch with this dataset'), ' ',
        h('button', { type: 'button', onclick: () => launch.dataFileAdded(dataFile, true) }, 'Set options first'));
    } catch (error) {
      notice(error.message, 'error');
    }
  } },
  h('label', { for: 'dataset-file' }, `Dataset file (${problem.media_types.join(', ')})`), fileInput,
  h('button', { type: 'submit' }, 'Upload'), progress, uploaded);
}

// A launch body's input alone, and its launch fields (options, labels) alone.
function withoutLaunchFields(body) {
  const input = { ...body };
  delete input.options;
  delete input.labels;
  delete input.data_file_identifier;
  return input;
}

function launchFields(body) {
  const fields = {};
  if (body.options !== undefined) fields.options = body.options;
  if (body.labels !== undefined) fields.labels = body.labels;
  return fields;
}

// "team:ops, sweep:a" as labels; null if a part has no key.
function parseLabels(text) {
  const labels = {};
  for (const part of text.split(',').map((item) => item.trim()).filter(Boolean)) {
    const colon = part.indexOf(':');
    if (colon <= 0) return null;
    labels[part.slice(0, colon).trim()] = part.slice(colon + 1).trim();
  }
  return labels;
}

// Where a use case's served version comes from, with the plugins directory's file name.
function sourceOf(entry) {
  return entry.file ? `${entry.source} (${entry.file})` : entry.source;
}

// A use case's versions (GET /problem/<name>/versions) as a table; for an administrator,
// the actions each allows: make current (a promotion, or a rollback), retire (a published
// version that is not current, asked first); and a form that publishes a component.
// `changed()` after each change; `listed(serving)` with the versions in service, current
// first, each time they are read.
function versionsSection(name, changed, listed) {
  const path = `/problem/${encodeURIComponent(name)}`;
  const admin = isAdmin();
  const rows = h('tbody', {});
  const outcome = h('div', { id: 'versions-outcome', role: 'status' });
  const note = h('p', { id: 'versions-note', class: 'note', hidden: true });
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
    listed(serving);
    // A plugins directory's file serves unpinned launches on this replica over the
    // registry's versions: said so, since promoting one changes nothing here meanwhile.
    const file = listing.versions.find((entry) => entry.source === 'directory' && entry.current);
    const shadowed = listing.versions.filter((entry) => entry.source !== 'directory' && !entry.retired);
    note.hidden = !file;
    if (file) {
      const inService = shadowed.map((entry) => entry.version).join(', ');
      note.textContent = `${file.file} (${file.version}) in this replica's plugins directory serves unpinned launches here, `
        + `over the registry's current version${inService ? ` (in service: ${inService})` : ''}. `
        + 'Making a version current changes what the other replicas serve; here it serves once the file is removed.';
    }
    fill(rows, listing.versions.map((entry) => {
      const label = entry.source === 'directory' ? `${entry.version} (${entry.file})` : entry.version;
      const actions = [];
      // A plugins directory's file serves its own replica only; it is published, not promoted.
      if (admin && !entry.current && !entry.retired && entry.source !== 'directory') {
        actions.push(h('button', { type: 'button', onclick: () => change('PUT', `${path}/current`, { json: { version: entry.digest } }, `${label} is current.`) },
          `Make ${label} current`));
      }
      if (admin && entry.source === 'store' && !entry.current && !entry.retired) {
        actions.push(h('button', { type: 'button', class: 'danger', onclick: () => {
          if (!confirm(`Retire ${name} ${label}? No new job will run it; the jobs bound to it still do.`)) return;
          change('DELETE', `${path}/versions/${encodeURIComponent(entry.digest)}`, {}, `${label} is retired.`);
        } }, `Retire ${label}`));
      }
      return h('tr', { 'data-version': entry.version, 'data-source': entry.source, class: entry.retired ? 'gone' : null },
        h('th', { scope: 'row' }, label),
        h('td', {}, entry.source),
        h('td', {}, entry.current ? h('span', { class: 'badge current' }, 'current') : entry.retired ? 'retired' : ''),
        h('td', {}, entry.jobs),
        h('td', {}, entry.published_by ? [entry.published_by, ' ', when(entry.published_at)] : '—'),
        h('td', { class: 'mono', title: entry.digest }, entry.digest.slice(0, 19)),
        admin ? h('td', {}, actions) : null);
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
  const headings = ['Version', 'Source', 'State', 'Jobs', 'Published', 'Digest', ...(admin ? ['Actions'] : [])];
  return h('section', { 'aria-labelledby': 'versions-heading' },
    h('h2', { id: 'versions-heading' }, 'Versions'),
    note,
    // On a narrow screen the table scrolls: its wrapper takes the focus, for the keyboard.
    h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'Versions table' }, h('table', { class: 'versions' },
      h('thead', {}, h('tr', {}, headings.map((heading) => h('th', { scope: 'col' }, heading)))),
      rows)),
    outcome,
    mayChange() ? h('button', { type: 'button', onclick: () => startExperimentWith({ problem: name, versions: serving }) }, 'Compare versions in an experiment') : null,
    admin ? [h('h3', {}, 'Publish a version'), publishForm] : null);
}
