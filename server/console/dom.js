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

// Times in the browser's time zone, to the second, with the zone shown ("Nov 26, 2026,
// 13:40:37 GMT+9" in English).
const LOCAL_TIME = new Intl.DateTimeFormat(undefined, {
  year: 'numeric', month: 'short', day: 'numeric',
  hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23',
  timeZoneName: 'short',
});

// An RFC 3339 time of the API ("2026-11-25T20:17:56.123Z") as a <time> element in local
// time, its `datetime` and title the instant as sent; `missing` for null or "". The API's
// spec fields (`started_at`, `end_at`: "MM/DD/YYYY, HH:MM:SS" in UTC, no zone) are never
// read: a browser would take them for local time.
export function when(rfc3339, missing = '') {
  if (!rfc3339) return missing;
  const date = new Date(rfc3339);
  if (Number.isNaN(date.getTime())) return rfc3339;
  return h('time', { datetime: rfc3339, title: rfc3339 }, LOCAL_TIME.format(date));
}

// A datetime-local control's value ("2026-11-26T13:40", a wall-clock time in the browser's
// zone) as the instant it names, in RFC 3339 UTC; "" for "".
export function localToUtc(value) {
  if (!value) return '';
  const [date, time = '00:00'] = value.split('T');
  const [year, month, day] = date.split('-').map(Number);
  const [hour, minute, second = 0] = time.split(':').map(Number);
  const whole = Math.floor(second);
  return new Date(year, month - 1, day, hour, minute, whole, Math.round((second - whole) * 1000)).toISOString();
}

export function seconds(milliseconds) {
  if (milliseconds < 1000) return `${Math.round(milliseconds)} ms`;
  if (milliseconds < 600000) return `${(milliseconds / 1000).toFixed(milliseconds < 10000 ? 2 : 1)} s`;
  const minutes = Math.floor(milliseconds / 60000);
  return `${minutes} min ${Math.round((milliseconds - minutes * 60000) / 1000)} s`;
}

// A number as a person reads it: at most six significant digits ("1,343.94" for
// 1343.9411904925628), in the browser's language.
const READABLE_NUMBER = new Intl.NumberFormat(undefined, { maximumSignificantDigits: 6 });

export function readable(value) {
  if (typeof value !== 'number' || !Number.isFinite(value)) return String(value);
  return READABLE_NUMBER.format(value);
}

// `readable(value)` in a <data> element whose value and title are the number in full.
export function numberElement(value, props = {}) {
  if (typeof value !== 'number') return '–';
  return h('data', { ...props, value: String(value), title: String(value) }, readable(value));
}

// JSON as a person edits it: indented, with arrays of plain values (an edge, a matrix's
// row, a partition) on one line each.
export function prettyJson(value, indent = '') {
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    if (value.every((item) => item === null || typeof item !== 'object')) return `[${value.map((item) => JSON.stringify(item)).join(', ')}]`;
    const inner = `${indent}  `;
    return `[\n${value.map((item) => inner + prettyJson(item, inner)).join(',\n')}\n${indent}]`;
  }
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value);
    if (entries.length === 0) return '{}';
    const inner = `${indent}  `;
    return `{\n${entries.map(([key, item]) => `${inner}${JSON.stringify(key)}: ${prettyJson(item, inner)}`).join(',\n')}\n${indent}}`;
  }
  return JSON.stringify(value) ?? 'null';
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
