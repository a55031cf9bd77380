// The API as the console calls it. The token lives in this module's closure only: not in
// localStorage, sessionStorage or a cookie, so no other script and no other tab can read
// it, and closing or reloading the page signs out.

let token = null;
let username = '';
// The user's role (admin, member or viewer), as the login answered it.
let role = null;
// The project the console shows and launches in; null for the user's personal one.
let project = null;
// The user's projects (GET /projects): the personal one's id, and each one's role there.
let personalProject = null;
const projectRoles = new Map();
const signOutListeners = [];

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.detail || body?.title || `HTTP ${status}`);
    this.status = status;
    this.body = body ?? {};
  }
}

export function signedIn() {
  return token !== null;
}

export function currentUser() {
  return username;
}

export function currentRole() {
  return role;
}

export function isAdmin() {
  return role === 'admin';
}

export function currentProject() {
  return project;
}

// Keeps the user's projects as GET /projects lists them, for `mayChange`.
export function setProjects(listed) {
  projectRoles.clear();
  for (const entry of listed) {
    if (entry.personal) personalProject = entry.id;
    else projectRoles.set(entry.id, entry.role);
  }
}

// Whether the user may launch, cancel, finish and rerun in a project (the chosen one by
// default; a job's `project`): a viewer reads only, and so does a viewer of a project.
export function mayChange(projectId = project) {
  if (role === 'viewer') return false;
  if (projectId === null || projectId === undefined || projectId === personalProject) return true;
  return projectRoles.get(projectId) === 'member';
}

export function setProject(id) {
  project = id || null;
}

// `path` with the chosen project as its `project` parameter, if one is chosen.
export function inProject(path) {
  if (project === null) return path;
  return `${path}${path.includes('?') ? '&' : '?'}project=${encodeURIComponent(project)}`;
}

export function onSignOut(listener) {
  signOutListeners.push(listener);
}

export async function login(name, password) {
  const response = await fetch('/login', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: name, password }),
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new ApiError(response.status, body);
  token = body.access_token;
  username = name;
  role = body.role ?? null;
}

export function signOut() {
  if (token === null) return;
  token = null;
  username = '';
  role = null;
  project = null;
  personalProject = null;
  projectRoles.clear();
  signOutListeners.forEach((listener) => listener());
}

async function failure(response) {
  const body = await response.json().catch(() => ({}));
  if (response.status === 401) signOut();
  return new ApiError(response.status, body);
}

// Calls the API; answers the parsed JSON, or the response itself with `raw`.
export async function request(method, path, { json, body, headers = {}, signal, raw = false } = {}) {
  const init = { method, signal, headers: { ...headers, authorization: `Bearer ${token}` } };
  if (json !== undefined) {
    init.body = JSON.stringify(json);
    init.headers['content-type'] = 'application/json';
  } else if (body !== undefined) {
    init.body = body;
  }
  const response = await fetch(path, init);
  if (!response.ok) throw await failure(response);
  return raw ? response : response.json();
}

export const get = (path, options) => request('GET', path, options);

// Uploads a file as a dataset (to the chosen project), telling `progress(sent, total)` as it goes (fetch cannot
// report upload progress; XMLHttpRequest can).
export function upload(file, progress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', inProject(`/data_file?filename=${encodeURIComponent(file.name)}`));
    xhr.setRequestHeader('authorization', `Bearer ${token}`);
    xhr.setRequestHeader('content-type', file.type || 'application/octet-stream');
    xhr.responseType = 'json';
    xhr.upload.addEventListener('progress', (event) => progress(event.loaded, event.total));
    xhr.addEventListener('load', () => {
      if (xhr.status >= 200 && xhr.status < 300) resolve(xhr.response);
      else {
        if (xhr.status === 401) signOut();
        reject(new ApiError(xhr.status, xhr.response));
      }
    });
    xhr.addEventListener('error', () => reject(new ApiError(0, { detail: 'the upload failed: network error' })));
    xhr.send(file);
  });
}

// Follows a Server-Sent Events stream with the token (EventSource cannot send headers),
// reconnecting with Last-Event-ID after a drop. `onEvent(name, data)` returning false stops
// it; so does calling the function returned.
export function follow(path, onEvent) {
  const controller = new AbortController();
  let lastEventId = null;
  let stopped = false;
  const stop = () => {
    stopped = true;
    controller.abort();
  };
  (async () => {
    let delay = 500;
    while (!stopped && token !== null) {
      try {
        const headers = { authorization: `Bearer ${token}`, accept: 'text/event-stream' };
        if (lastEventId) headers['last-event-id'] = lastEventId;
        const response = await fetch(path, { headers, signal: controller.signal });
        if (!response.ok) {
          const error = await failure(response);
          if (error.status < 500) return;
        } else {
          delay = 500;
          const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
          let buffer = '';
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            buffer += value.replaceAll('\r\n', '\n');
            let end;
            while ((end = buffer.indexOf('\n\n')) >= 0) {
              const event = parseEvent(buffer.slice(0, end));
              buffer = buffer.slice(end + 2);
              if (event.id) lastEventId = event.id;
              // The server closes the stream (a restart, or room for others): the loop below
              // reconnects from the last event.
              if (event.data === undefined || event.event === 'reconnect') continue;
              if (onEvent(event.event ?? 'message', JSON.parse(event.data)) === false) {
                stop();
                return;
              }
            }
          }
        }
      } catch (error) {
        if (stopped) return;
      }
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 10000);
    }
  })();
  return stop;
}

function parseEvent(block) {
  const event = {};
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') event.data = event.data === undefined ? value : `${event.data}\n${value}`;
    else if (field === 'event' || field === 'id') event[field] = value;
  }
  return event;
}
