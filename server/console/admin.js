// Administration: the users (make one, change its role, disable or enable it, delete it) and
// the audit log, newest first, paged. Over /admin/users and /admin/audit; a user who is not
// an administrator is told so. Projects have a page of their own (projects.js).

import { ApiError, get, request } from './api.js';
import { fill, h, notice, page, when } from './dom.js';

const ROLES = ['admin', 'member', 'viewer'];

// The administration's pages, `current` marked.
export function adminNav(current) {
  const link = (name, href, text) => h('a', { href, 'aria-current': name === current ? 'page' : null }, text);
  return h('nav', { class: 'subnav', 'aria-label': 'Administration' },
    link('users', '#/admin', 'Users and audit log'), link('projects', '#/admin/projects', 'Projects'));
}

export function adminPage() {
  const users = h('tbody', {});
  const events = h('tbody', {});
  const older = h('button', { type: 'button', hidden: true, onclick: () => loadAudit(true) }, 'Older entries');
  const form = h('form', { class: 'new-user', onsubmit: createUser },
    h('label', { for: 'new-username' }, 'User name'),
    h('input', { id: 'new-username', name: 'username', autocomplete: 'off', required: true, maxlength: '64' }),
    h('label', { for: 'new-password' }, 'Password'),
    h('input', { id: 'new-password', name: 'password', type: 'password', autocomplete: 'new-password', required: true }),
    h('label', { for: 'new-role' }, 'Role'),
    h('select', { id: 'new-role', name: 'role' }, ROLES.map((role) => h('option', { value: role, selected: role === 'member' }, role))),
    h('button', { type: 'submit' }, 'Add user'));
  let left = false;
  let before = null;

  page('Administration', adminNav('users'),
    h('section', { 'aria-labelledby': 'users-heading' }, h('h2', { id: 'users-heading' }, 'Users'),
      h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'Users table' }, h('table', { class: 'users' },
        h('thead', {}, h('tr', {}, ['User', 'Role', 'State', 'Created', 'Actions'].map((name) => h('th', { scope: 'col' }, name)))),
        users)),
      form),
    h('section', { 'aria-labelledby': 'audit-heading' }, h('h2', { id: 'audit-heading' }, 'Audit log'),
      h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'Audit log table' }, h('table', { class: 'audit' },
        h('thead', {}, h('tr', {}, ['When', 'Who', 'What', 'To', 'Detail'].map((name) => h('th', { scope: 'col' }, name)))),
        events)),
      older));

  function userRow(user) {
    const role = h('select', { 'aria-label': `Role of ${user.username}`, onchange: () => change(user.username, { role: role.value }) },
      ROLES.map((name) => h('option', { value: name, selected: name === user.role }, name)));
    return h('tr', { 'data-user': user.username },
      h('th', { scope: 'row' }, user.username),
      h('td', {}, role),
      h('td', {}, user.disabled ? 'disabled' : 'active'),
      h('td', {}, when(user.created_at)),
      h('td', { class: 'actions' },
        h('button', { type: 'button', onclick: () => change(user.username, { disabled: !user.disabled }) }, user.disabled ? 'Enable' : 'Disable'),
        ' ',
        h('button', { type: 'button', class: 'danger', onclick: () => remove(user.username) }, 'Delete')));
  }

  async function loadUsers() {
    try {
      const listed = await get('/admin/users');
      if (!left) fill(users, listed.users.map(userRow));
      return true;
    } catch (error) {
      if (left) return false;
      if (error instanceof ApiError && error.status === 403) {
        page('Administration', h('p', { class: 'error' }, 'Administration is for administrators: ', error.message));
        return false;
      }
      notice(error.message, 'error');
      return true;
    }
  }

  async function loadAudit(more = false) {
    try {
      const query = more && before !== null ? `?before=${before}` : '';
      const listed = await get(`/admin/audit${query}`);
      if (left) return;
      const rows = listed.events.map((event) => h('tr', {},
        h('td', {}, when(event.at)),
        h('td', {}, event.actor),
        h('td', { class: 'mono' }, event.action),
        h('td', {}, event.target),
        h('td', { class: 'mono' }, JSON.stringify(event.detail))));
      if (more) events.append(...rows);
      else fill(events, rows.length ? rows : h('tr', {}, h('td', { colspan: '5' }, 'Nothing yet.')));
      before = listed.next_before;
      older.hidden = before === null;
    } catch (error) {
      if (!left) notice(error.message, 'error');
    }
  }

  async function change(username, body) {
    try {
      await request('PATCH', `/admin/users/${encodeURIComponent(username)}`, { json: body });
      notice(`Changed ${username}.`);
    } catch (error) {
      notice(error.message, 'error');
    }
    await loadUsers();
    await loadAudit();
  }

  async function remove(username) {
    if (!confirm(`Delete ${username} with its jobs, data files and keys?`)) return;
    try {
      await request('DELETE', `/admin/users/${encodeURIComponent(username)}`);
      notice(`Deleted ${username}.`);
    } catch (error) {
      notice(error.message, 'error');
    }
    await loadUsers();
    await loadAudit();
  }

  async function createUser(event) {
    event.preventDefault();
    const { username, password, role } = event.target.elements;
    try {
      await request('POST', '/admin/users', { json: { username: username.value, password: password.value, role: role.value } });
      notice(`Added ${username.value}.`);
      event.target.reset();
    } catch (error) {
      notice(error.message, 'error');
    }
    await loadUsers();
    await loadAudit();
  }

  loadUsers().then((allowed) => {
    if (allowed) loadAudit();
  });
  return () => {
    left = true;
  };
}
