// API keys: the caller's own keys (any user's page), made with scopes up to what its role
// allows, an optional expiry and an optional project; a new key's text is shown once, here,
// and never again; revoking asks first. Over /api_keys.

import { ApiError, currentRole, get, request } from './api.js';
import { fill, h, localToUtc, notice, page, when } from './dom.js';

// The scopes each role's keys may have, as the server allows them.
const SCOPES = {
  viewer: ['read'],
  member: ['read', 'launch'],
  admin: ['read', 'launch', 'publish', 'admin'],
};

export function keysPage() {
  const rows = h('tbody', {});
  const created = h('div', { id: 'new-key-outcome', role: 'status' });
  const projectSelect = h('select', { id: 'key-project', name: 'project' }, h('option', { value: '' }, 'None: the key acts as you'));
  const scopes = SCOPES[currentRole()] ?? SCOPES.viewer;
  let left = false;
  // Project ids to names, for the table.
  const projectNames = new Map();

  const form = h('form', { class: 'new-key', onsubmit: createKey },
    h('div', { class: 'field' }, h('label', { for: 'key-name' }, 'Name'),
      h('input', { id: 'key-name', name: 'name', required: true, maxlength: '100', autocomplete: 'off', placeholder: 'ci-nightly' })),
    h('fieldset', { class: 'scopes' }, h('legend', {}, 'Scopes'),
      scopes.map((scope) => h('label', { class: 'check' },
        h('input', { type: 'checkbox', name: 'scope', value: scope, checked: scope === 'read' }), ` ${scope}`))),
    h('div', { class: 'field' }, h('label', { for: 'key-expires' }, 'Expires (local time; empty: never)'),
      h('input', { id: 'key-expires', name: 'expires', type: 'datetime-local' })),
    h('div', { class: 'field' }, h('label', { for: 'key-project' }, 'Bound to a project'), projectSelect),
    h('button', { type: 'submit' }, 'Create key'));

  page('API keys',
    h('p', { class: 'hint' }, 'Keys let a script act as you: ', h('code', {}, 'Authorization: Bearer cl_…'), '. A key never does more than your role allows.'),
    h('section', { 'aria-labelledby': 'keys-heading' }, h('h2', { id: 'keys-heading' }, 'Your keys'),
      h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'API keys table' }, h('table', { class: 'keys' },
        h('thead', {}, h('tr', {}, ['Name', 'Key', 'Scopes', 'Project', 'Created', 'Expires', 'Last used', 'Actions'].map((name) => h('th', { scope: 'col' }, name)))),
        rows))),
    h('section', { 'aria-labelledby': 'new-key-heading' }, h('h2', { id: 'new-key-heading' }, 'New key'), form, created));

  async function loadProjects() {
    try {
      const listed = await get('/projects');
      for (const project of listed.projects) {
        projectNames.set(project.id, project.personal ? 'Personal' : project.name);
        if (!project.personal) projectSelect.append(h('option', { value: project.id }, `${project.name}${project.role === 'viewer' ? ' (viewer: read only)' : ''}`));
      }
    } catch (error) {
      if (!left) notice(error.message, 'error');
    }
  }

  async function load() {
    try {
      const listed = await get('/api_keys');
      if (left) return;
      fill(rows, listed.api_keys.length === 0
        ? h('tr', {}, h('td', { colspan: '8' }, 'No keys yet.'))
        : listed.api_keys.map((key) => h('tr', { 'data-key': key.id },
          h('th', { scope: 'row' }, key.name),
          h('td', { class: 'mono' }, `${key.prefix}_…`),
          h('td', {}, key.scopes.join(', ')),
          h('td', {}, key.project ? (projectNames.get(key.project) ?? key.project) : '—'),
          h('td', {}, when(key.created_at)),
          h('td', {}, when(key.expires_at, 'never')),
          h('td', {}, when(key.last_used_at, 'never')),
          h('td', {}, h('button', { type: 'button', class: 'danger', onclick: () => revoke(key) }, `Revoke ${key.name}`)))));
    } catch (error) {
      if (!left) notice(error.message, 'error');
    }
  }

  async function createKey(event) {
    event.preventDefault();
    const elements = event.target.elements;
    const chosen = [...event.target.querySelectorAll('input[name=scope]:checked')].map((box) => box.value);
    const body = { name: elements.name.value.trim(), scopes: chosen };
    if (elements.expires.value) body.expires_at = localToUtc(elements.expires.value);
    if (projectSelect.value) body.project = projectSelect.value;
    try {
      const made = await request('POST', '/api_keys', { json: body });
      if (left) return;
      const text = h('output', { id: 'new-key', class: 'mono secret' }, made.key);
      fill(created,
        h('p', {}, `Key ${made.name} is made. Its text is shown this once: keep it now.`),
        h('p', {}, text, ' ', h('button', { type: 'button', onclick: async () => {
          try {
            await navigator.clipboard.writeText(made.key);
            notice('Copied.');
          } catch {
            notice('The browser refused the clipboard: select the key and copy it.', 'error');
          }
        } }, 'Copy')));
      event.target.reset();
      event.target.querySelector('input[name=scope][value=read]').checked = true;
      await load();
    } catch (error) {
      const reasons = error instanceof ApiError ? (error.body.errors ?? []) : [];
      fill(created, h('p', { class: 'error' }, error.message),
        reasons.length ? h('ul', { class: 'error' }, reasons.map((reason) => h('li', {}, `${reason.pointer || '(the request)'}: ${reason.message}`))) : null);
    }
  }

  async function revoke(key) {
    if (!confirm(`Revoke ${key.name} (${key.prefix})? Scripts using it stop working at once.`)) return;
    try {
      await request('DELETE', `/api_keys/${encodeURIComponent(key.id)}`);
      notice(`Revoked ${key.name}.`);
    } catch (error) {
      notice(error.message, 'error');
    }
    await load();
  }

  loadProjects().then(load);
  return () => {
    left = true;
  };
}
