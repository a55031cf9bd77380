// Projects, for administrators: the list with each one's members and its own cap on pending
// jobs; make one, add or change or remove a member, set or lift the cap, delete an empty
// project (each asked first where it takes something away). Over /admin/projects.

import { ApiError, get, request } from './api.js';
import { adminNav } from './admin.js';
import { fill, h, notice, page, when } from './dom.js';

export function projectsPage() {
  const list = h('div', { class: 'projects' });
  const outcome = h('div', { id: 'projects-outcome', role: 'status' });
  let left = false;
  let usernames = [];

  const form = h('form', { class: 'new-project', onsubmit: async (event) => {
    event.preventDefault();
    const name = event.target.elements.name.value.trim();
    await change(() => request('POST', '/admin/projects', { json: { name } }), `Made project ${name}.`);
    event.target.reset();
  } },
  h('div', { class: 'field' }, h('label', { for: 'new-project-name' }, 'Name'),
    h('input', { id: 'new-project-name', name: 'name', required: true, maxlength: '100', autocomplete: 'off' })),
  h('button', { type: 'submit' }, 'Make project'));

  page('Projects', adminNav('projects'),
    h('section', { 'aria-labelledby': 'new-project-heading' }, h('h2', { id: 'new-project-heading' }, 'New project'), form, outcome),
    list);

  function projectSection(project) {
    const headingId = `project-${project.id}-heading`;
    const members = h('tbody', {}, project.members.length === 0
      ? h('tr', {}, h('td', { colspan: '3' }, 'No members yet.'))
      : project.members.map((member) => {
        const role = h('select', { 'aria-label': `Role of ${member.username} in ${project.name}`, onchange: () => change(
          () => request('PUT', memberPath(project, member.username), { json: { role: role.value } }), `${member.username} is a ${role.value} of ${project.name}.`) },
        ['member', 'viewer'].map((name) => h('option', { value: name, selected: name === member.role }, name)));
        return h('tr', { 'data-member': member.username },
          h('th', { scope: 'row' }, member.username),
          h('td', {}, role),
          h('td', {}, h('button', { type: 'button', class: 'danger', onclick: () => {
            if (!confirm(`Remove ${member.username} from ${project.name}? The jobs it launched there stay the project's.`)) return;
            change(() => request('DELETE', memberPath(project, member.username)), `Removed ${member.username} from ${project.name}.`);
          } }, `Remove ${member.username}`)));
      }));
    const inProject = new Set(project.members.map((member) => member.username));
    const candidates = usernames.filter((name) => !inProject.has(name));
    const addId = `add-member-${project.id}`;
    const addRoleId = `add-member-role-${project.id}`;
    const capId = `cap-${project.id}`;
    const add = h('form', { class: 'add-member', onsubmit: (event) => {
      event.preventDefault();
      const username = event.target.elements.username.value;
      const role = event.target.elements.role.value;
      change(() => request('PUT', memberPath(project, username), { json: { role } }), `${username} is a ${role} of ${project.name}.`);
    } },
    h('label', { for: addId }, 'User'),
    h('select', { id: addId, name: 'username', required: true }, candidates.map((name) => h('option', { value: name }, name))),
    h('label', { for: addRoleId }, 'Role'),
    h('select', { id: addRoleId, name: 'role' }, h('option', { value: 'member' }, 'member'), h('option', { value: 'viewer' }, 'viewer')),
    h('button', { type: 'submit', disabled: candidates.length === 0 }, 'Add member'));
    const cap = h('form', { class: 'project-cap', onsubmit: (event) => {
      event.preventDefault();
      const text = event.target.elements.cap.value.trim();
      const max = text === '' ? null : Number(text);
      change(() => request('PATCH', `/admin/projects/${encodeURIComponent(project.id)}`, { json: { max_pending_jobs: max } }),
        max === null ? `${project.name} has no cap of its own.` : `${project.name} holds at most ${max} pending jobs.`);
    } },
    h('label', { for: capId }, 'Pending jobs at most (empty: no cap of its own)'),
    h('input', { id: capId, name: 'cap', type: 'number', min: '0', step: '1', value: project.max_pending_jobs ?? '' }),
    h('button', { type: 'submit' }, 'Set cap'));
    return h('section', { class: 'project', 'data-project': project.name, 'aria-labelledby': headingId },
      h('h2', { id: headingId }, project.name),
      h('dl', { class: 'facts' },
        h('dt', {}, 'Id'), h('dd', { class: 'mono' }, project.id),
        h('dt', {}, 'Created'), h('dd', {}, when(project.created_at)),
        h('dt', {}, 'Cap on pending jobs'), h('dd', {}, project.max_pending_jobs ?? 'none of its own')),
      h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': `Members of ${project.name}` },
        h('table', { class: 'members' },
          h('thead', {}, h('tr', {}, ['User', 'Role', 'Actions'].map((name) => h('th', { scope: 'col' }, name)))),
          members)),
      add, cap,
      h('button', { type: 'button', class: 'danger', onclick: () => {
        if (!confirm(`Delete project ${project.name}? Only a project with no jobs, data files or experiments can go.`)) return;
        change(() => request('DELETE', `/admin/projects/${encodeURIComponent(project.id)}`), `Deleted ${project.name}.`);
      } }, `Delete ${project.name}`));
  }

  async function load() {
    try {
      const [projects, users] = await Promise.all([get('/admin/projects'), get('/admin/users')]);
      if (left) return;
      usernames = users.users.map((user) => user.username);
      fill(list, projects.projects.length === 0 ? h('p', {}, 'No projects yet.') : projects.projects.map(projectSection));
    } catch (error) {
      if (left) return;
      if (error instanceof ApiError && error.status === 403) {
        page('Projects', h('p', { class: 'error' }, 'Projects are for administrators: ', error.message));
        return;
      }
      notice(error.message, 'error');
    }
  }

  async function change(call, done) {
    try {
      await call();
      notice(done);
      fill(outcome);
    } catch (error) {
      const reasons = error instanceof ApiError ? (error.body.errors ?? []) : [];
      fill(outcome, h('p', { class: 'error' }, error.message),
        reasons.length ? h('ul', { class: 'error' }, reasons.map((reason) => h('li', {}, reason.message))) : null);
    }
    await load();
  }

  load();
  return () => {
    left = true;
  };
}

function memberPath(project, username) {
  return `/admin/projects/${encodeURIComponent(project.id)}/members/${encodeURIComponent(username)}`;
}
