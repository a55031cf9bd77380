// An answer drawn as its use case's output schema says (`x-caseload-view`): the kind of
// picture and where its data is, each place a JSON pointer into the output or
// `{input: pointer}` into the job's input. No console code per use case: a plugin written
// with `caseload plugin new` declares its view and gets its picture.

import { h } from './dom.js';
import { maxCutPicture, parseGraph, quboPicture } from './picture.js';
import { routesPicture } from './routes.js';

const GROUP_COLORS = ['#1f6feb', '#d9480f', '#2f9e44', '#7048e8', '#e8590c', '#0c8599'];
// Tables longer than this show their first rows only.
const TABLE_MAX_ROWS = 500;

// Resolves a JSON pointer (RFC 6901) in a value; undefined where it leads nowhere.
export function at(value, pointer) {
  if (pointer === '') return value;
  let here = value;
  for (const raw of pointer.slice(1).split('/')) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (here === null || typeof here !== 'object') return undefined;
    here = Array.isArray(here) ? here[Number(key)] : here[key];
  }
  return here;
}

// The picture of `output` by `view`; `input()` answers the job's input as { text, mediaType }
// (read only if the view needs it). Null when the data is not where the view says.
export async function drawView(view, output, input) {
  let inputText = null;
  let inputType = '';
  const needsInput = Object.values(view).some((place) => typeof place === 'object' && place !== null);
  if (needsInput) ({ text: inputText, mediaType: inputType } = await input());
  let parsedInput;
  const place = (name) => {
    const where = view[name];
    if (where === undefined) return undefined;
    if (typeof where === 'string') return at(output, where);
    parsedInput ??= JSON.parse(inputText);
    return at(parsedInput, where.input);
  };
  switch (view.kind) {
    case 'graph-cut': {
      // The graph is the whole input, in either of max-cut's forms, or a part of it.
      const graph = view.graph.input === '' ? parseGraph(inputText, inputType) : parseGraph(JSON.stringify(place('graph')), 'application/json');
      const sides = place('sides');
      if (!Array.isArray(sides)) return null;
      return maxCutPicture(graph, { partition: sides, cut_value: place('value'), optimal: output.optimal });
    }
    case 'grid': {
      const values = place('values');
      if (!Array.isArray(values)) return null;
      return quboPicture({ sample: values, energy: place('value'), optimal: output.optimal, sense: output.sense, vartype: output.vartype ?? (values.includes(-1) ? 'SPIN' : 'BINARY') });
    }
    case 'bars': return bars(place('values'), place('labels'), place('groups'), place('value'));
    case 'table': return table(place('rows'), place('marked'), place('value'));
    case 'tour': return tour(place('points'), place('order'), place('routes'), place('value'));
    case 'routes': return routesPicture(place('instance'), output, place('value'));
    default: return null;
  }
}

function caption(text, value) {
  return h('p', { class: 'view-caption' }, value === undefined ? text : `${text}: ${value}`);
}

// A vector as bars, coloured by group where there are groups.
function bars(values, labels, groups, value) {
  if (!Array.isArray(values) || !values.every((item) => typeof item === 'number')) return null;
  const width = Math.max(320, Math.min(960, values.length * 24));
  const height = 180;
  const canvas = h('canvas', { class: 'view-bars', role: 'img', width: String(width), height: String(height),
    'aria-label': `${values.length} bars${Array.isArray(groups) ? `, coloured by group (${[...new Set(groups)].join(', ')})` : ''}` });
  const context = canvas.getContext('2d');
  const top = Math.max(0, ...values);
  const bottom = Math.min(0, ...values);
  const span = top - bottom || 1;
  const slot = width / values.length;
  const zero = 8 + (top / span) * (height - 24);
  values.forEach((item, index) => {
    context.fillStyle = GROUP_COLORS[(Array.isArray(groups) ? Number(groups[index]) || 0 : 0) % GROUP_COLORS.length];
    const y = 8 + ((top - Math.max(item, 0)) / span) * (height - 24);
    const barHeight = (Math.abs(item) / span) * (height - 24);
    context.fillRect(index * slot + slot * 0.15, item >= 0 ? y : zero, slot * 0.7, Math.max(barHeight, 1));
  });
  const rows = values.slice(0, TABLE_MAX_ROWS).map((item, index) => h('tr', {},
    h('th', { scope: 'row' }, Array.isArray(labels) ? String(labels[index]) : String(index)),
    h('td', {}, String(item)),
    Array.isArray(groups) ? h('td', {}, String(groups[index])) : null));
  return h('section', { class: 'picture', 'aria-label': 'Picture of the answer' },
    caption('Value', value), canvas,
    h('details', {}, h('summary', {}, 'The bars as a table'),
      h('table', { class: 'summary' }, h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Bar'), h('th', { scope: 'col' }, 'Value'),
        Array.isArray(groups) ? h('th', { scope: 'col' }, 'Group') : null)), h('tbody', {}, rows))));
}

// Rows (objects or arrays) as a table, the marked ones highlighted.
function table(rows, marked, value) {
  if (!Array.isArray(rows)) return null;
  const chosen = new Set(Array.isArray(marked) ? marked : []);
  const objects = rows.every((row) => row !== null && typeof row === 'object' && !Array.isArray(row));
  const columns = objects ? [...new Set(rows.flatMap((row) => Object.keys(row)))] : [];
  const width = objects ? columns.length : Math.max(0, ...rows.map((row) => (Array.isArray(row) ? row.length : 1)));
  const cells = (row) => (objects ? columns.map((column) => row[column]) : Array.isArray(row) ? row : [row]);
  return h('section', { class: 'picture', 'aria-label': 'Picture of the answer' },
    caption(chosen.size ? `${chosen.size} of ${rows.length} rows marked; value` : 'Value', value),
    h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'The answer as a table' },
      h('table', { class: 'view-table' },
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, '#'),
          (objects ? columns : Array.from({ length: width }, (_, index) => String(index))).map((name) => h('th', { scope: 'col' }, name)),
          chosen.size ? h('th', { scope: 'col' }, 'Marked') : null)),
        h('tbody', {}, rows.slice(0, TABLE_MAX_ROWS).map((row, index) => h('tr', { class: chosen.has(index) ? 'marked' : null },
          h('th', { scope: 'row' }, String(index)),
          cells(row).map((cell) => h('td', {}, cell === undefined ? '' : typeof cell === 'object' ? JSON.stringify(cell) : String(cell))),
          chosen.size ? h('td', {}, chosen.has(index) ? 'yes' : '') : null))))),
    rows.length > TABLE_MAX_ROWS ? h('p', { class: 'hint' }, `The first ${TABLE_MAX_ROWS} of ${rows.length} rows.`) : null);
}

// Points joined by a closed tour or along routes.
function tour(points, order, routes, value) {
  if (!Array.isArray(points) || !points.every((point) => Array.isArray(point) && point.length >= 2)) return null;
  const paths = Array.isArray(routes) ? routes : Array.isArray(order) ? [[...order, order[0]]] : [];
  const size = 480;
  const xs = points.map((point) => point[0]);
  const ys = points.map((point) => point[1]);
  const [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  const scale = (size - 24) / Math.max(x1 - x0, y1 - y0, 1e-9);
  const x = (point) => 12 + (point[0] - x0) * scale;
  const y = (point) => size - 12 - (point[1] - y0) * scale;
  const canvas = h('canvas', { class: 'view-tour', role: 'img', width: String(size), height: String(size),
    'aria-label': `${points.length} points joined by ${paths.length === 1 ? 'one path' : `${paths.length} routes`}` });
  const context = canvas.getContext('2d');
  context.lineWidth = 1.5;
  paths.forEach((path, index) => {
    context.strokeStyle = GROUP_COLORS[index % GROUP_COLORS.length];
    context.beginPath();
    path.filter((stop) => points[stop]).forEach((stop, at) => {
      if (at === 0) context.moveTo(x(points[stop]), y(points[stop]));
      else context.lineTo(x(points[stop]), y(points[stop]));
    });
    context.stroke();
  });
  context.fillStyle = '#24292f';
  points.forEach((point) => context.fillRect(x(point) - 2, y(point) - 2, 4, 4));
  return h('section', { class: 'picture', 'aria-label': 'Picture of the answer' }, caption('Value', value), canvas);
}
