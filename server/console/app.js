// The console's entry: sign-in, then one page per route of the location's hash
// (#/jobs, #/job/<id>, #/usecases, #/usecase/<name>, #/experiments, #/experiment/<id>,
// #/service, #/keys, #/admin, #/admin/projects). The sections an administrator alone may
// use are shown to administrators alone.

import { adminPage } from './admin.js';
import { ApiError, currentProject, currentUser, get, isAdmin, login, onSignOut, setProject, setProjects, signOut, signedIn } from './api.js';
import { fill, h, page } from './dom.js';
import { experimentPage, experimentsPage } from './experiments.js';
import { jobPage } from './job.js';
import { jobsPage } from './jobs.js';
import { keysPage } from './keys.js';
import { projectsPage } from './projects.js';
import { servicePage } from './service.js';
import { useCasePage, useCasesPage } from './usecases.js';

let leave = null;

// The projects the user is in, for the header's switcher (read again on every page, so a
// project made meanwhile shows up): shown once there is more than the personal one.
// Choosing one shows its jobs and launches in it.
async function listProjects() {
  try {
    const listed = await get('/projects');
    setProjects(listed.projects);
    const select = document.getElementById('project');
    fill(select, listed.projects.map((project) =>
      h('option', { value: project.personal ? '' : project.id, selected: (currentProject() ?? '') === (project.personal ? '' : project.id) },
        project.personal ? 'Personal' : `${project.name}${project.role === 'viewer' ? ' (viewer)' : ''}`)));
    document.getElementById('project-label').hidden = listed.projects.length < 2;
  } catch {
    // The switcher stays as it was; the page itself says what is wrong.
  }
}

document.getElementById('project').addEventListener('change', (event) => {
  setProject(event.target.value);
  route();
});

function route() {
  leave?.();
  leave = null;
  const signed = signedIn();
  document.getElementById('nav').hidden = !signed;
  document.querySelector('#nav a[href="#/admin"]').hidden = !isAdmin();
  document.getElementById('sign-out').hidden = !signed;
  document.getElementById('who').textContent = signed ? currentUser() : '';
  if (!signed) {
    document.getElementById('project-label').hidden = true;
    signInPage();
    return;
  }
  listProjects();
  const [, section = 'jobs', ...rest] = location.hash.replace(/^#/, '').split('/');
  const argument = decoded(rest.join('/'));
  for (const link of document.querySelectorAll('#nav a')) {
    const current = link.getAttribute('href') === `#/${section.replace(/^(job|usecase|experiment)$/, '$1s')}`;
    if (current) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  if (section === 'job' && argument) leave = jobPage(argument);
  else if (section === 'usecases') leave = useCasesPage();
  else if (section === 'usecase' && argument) leave = useCasePage(argument);
  else if (section === 'experiments') leave = experimentsPage();
  else if (section === 'experiment' && argument) leave = experimentPage(argument);
  else if (section === 'service') leave = servicePage();
  else if (section === 'keys') leave = keysPage();
  else if (section === 'admin' && argument === 'projects') leave = projectsPage();
  else if (section === 'admin') leave = adminPage();
  else leave = jobsPage();
}

// A route's argument as it was encoded; one typed or pasted with a stray '%' ("#/job/50%")
// is taken as it stands rather than failing the route.
function decoded(text) {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function signInPage() {
  const message = h('p', { id: 'sign-in-error', class: 'error', role: 'alert' });
  const form = h('form', { class: 'sign-in', onsubmit: async (event) => {
    event.preventDefault();
    const { username, password } = event.target.elements;
    message.textContent = '';
    try {
      await login(username.value, password.value);
      // The pages show what the user may do in each project: known before the first one.
      await listProjects();
      route();
    } catch (error) {
      message.textContent = error instanceof ApiError ? error.message : `Cannot reach the server: ${error.message}`;
      password.select();
    }
  } },
  h('label', { for: 'username' }, 'User name'),
  h('input', { id: 'username', name: 'username', autocomplete: 'username', required: true }),
  h('label', { for: 'password' }, 'Password'),
  h('input', { id: 'password', name: 'password', type: 'password', autocomplete: 'current-password', required: true }),
  h('button', { type: 'submit' }, 'Sign in'),
  message);
  page('Sign in', form,
    h('p', { class: 'hint' }, 'Users are made with ', h('code', {}, 'caseload user add NAME'), '. The console keeps your token in this page only: reloading it signs you out.'));
  document.getElementById('username').focus();
}

document.getElementById('sign-out').addEventListener('click', () => signOut());
onSignOut(() => route());
window.addEventListener('hashchange', route);
fill(document.getElementById('main'));
route();
