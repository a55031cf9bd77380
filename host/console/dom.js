// Building the page from data. Text goes in as text nodes, never as HTML: job labels,
// outputs and log lines are other people's strings.

export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props ?? {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith('on')) element.addEventListener(name.slice(2), value);
    else if (name === 'class') element.className = value;
    else if (name === 'value' || name === 'checked') element[name] = value;
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
}

export function fill(element, ...children) {
  element.replaceChildren();
  append(element, children);
  return element;
}

// "2026-11-25T20:17:56.123Z" as local time, to the second; "" stays "".
export function when(timestamp) {
  if (!timestamp) return '';
  const date = new Date(timestamp);
  return Number.isNaN(date.getTime()) ? timestamp : date.toLocaleString();
}

export function seconds(milliseconds) {
  if (milliseconds < 1000) return `${milliseconds} ms`;
  return `${(milliseconds / 1000).toFixed(milliseconds < 10000 ? 2 : 1)} s`;
}

// A short, announced message at the bottom of the page.
export function notice(text, kind = 'info') {
  const box = document.getElementById('notices');
  const item = h('p', { class: `notice ${kind}` }, text);
  box.append(item);
  setTimeout(() => item.remove(), 8000);
}

// The page's heading takes the focus, so keyboard and screen-reader users start there.
export function page(title, ...children) {
  document.title = `${title} · caseload console`;
  const heading = h('h1', { tabindex: '-1' }, title);
  const main = fill(document.getElementById('main'), heading, ...children);
  heading.focus({ preventScroll: true });
  return main;
}

export function statusBadge(status) {
  return h('span', { class: `badge ${String(status).toLowerCase()}` }, status);
}
