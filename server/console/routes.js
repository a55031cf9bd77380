// The routing use case's picture (`x-caseload-view` kind `routes`): the routes on the plane,
// one colour each, the depot a black square, a route's load, distance and times on hover,
// zoom and pan as max-cut's graph has them; a timeline per vehicle (travel, waiting,
// service, each client's window) when the instance has times; and the routes as a table. An
// instance given by a matrix alone gets the timeline and the table.
//
// Large plans stay quick: each route is one path, drawn into an offscreen canvas once per
// view change, and hovering finds the nearest client in a grid of cells, not by a scan.

import { h } from './dom.js';

// Tables and timelines longer than this show their first rows.
const MAX_ROWS = 300;
const ROW_HEIGHT = 16;

// A colour per route: hues spread by the golden angle, so neighbouring routes differ.
function routeColor(index) {
  return `hsl(${(index * 137.508) % 360}, 70%, 42%)`;
}

function format(value) {
  if (typeof value !== 'number' || !Number.isFinite(value)) return '';
  return Number.isInteger(value) ? String(value) : String(Math.round(value * 100) / 100);
}

// The instance's places and times, keyed by client id (as the output names them).
function readInstance(instance) {
  const clients = new Map();
  for (const client of instance?.clients ?? []) clients.set(String(client.id), client);
  const depot = instance?.depot ?? {};
  const located = Number.isFinite(depot.x) && Number.isFinite(depot.y)
    && [...clients.values()].every((client) => Number.isFinite(client.x) && Number.isFinite(client.y));
  return { depot, clients, located };
}

export function routesPicture(instance, output, value) {
  const routes = Array.isArray(output?.routes) ? output.routes : null;
  if (!routes) return null;
  const { depot, clients, located } = readInstance(instance);
  const timed = routes.some((route) => Array.isArray(route.arrivals))
    && (Array.isArray(depot.time_window) || [...clients.values()].some((client) => Array.isArray(client.time_window)));
  const unserved = Array.isArray(output.unserved) ? output.unserved : [];
  const summary = h('table', { class: 'summary' },
    h('caption', {}, 'The plan'),
    h('tbody', {},
      row('Cost', `${format(value ?? output.cost)}${output.feasible === false ? ' (no plan serves every client)' : ''}`),
      row('Vehicles', `${routes.length} routes for ${clients.size || routes.reduce((sum, route) => sum + route.clients.length, 0)} clients`),
      output.distance !== undefined ? row('Distance', format(output.distance)) : null,
      unserved.length ? row('Unserved', unserved.map((entry) => `${entry.client} (${entry.violation ?? entry.message ?? ''})`).join(', ')) : null));
  const section = h('section', { class: 'picture', 'aria-label': 'Picture of the routes' }, summary);
  const stops = [];
  if (located) {
    const canvas = h('canvas', {
      class: 'routes-map', tabindex: '0', role: 'img',
      'aria-label': `Map of ${routes.length} routes from the depot (the black square). Hover a client for its route; arrow keys pan, plus and minus zoom, 0 resets.`,
    });
    const tip = h('p', { class: 'routes-tip', 'aria-live': 'polite' }, 'Hover a client for its route.');
    const map = new RouteMap(canvas, tip, depot, clients, routes);
    section.append(canvas, tip);
    requestAnimationFrame(() => map.start());
    stops.push(() => map.stop());
  }
  if (timed) {
    const timeline = timelinePicture(depot, clients, routes);
    section.append(timeline.element);
    stops.push(timeline.stop);
  }
  section.append(routesTable(routes));
  section.stop = () => stops.forEach((stop) => stop());
  return section;
}

function row(name, value) {
  return h('tr', {}, h('th', { scope: 'row' }, name), h('td', {}, value));
}

// A route's colour as a small square. Set through the style object: the console's policy
// allows no style attribute in markup.
function swatch(index) {
  const element = h('span', { class: 'route-swatch', 'aria-hidden': 'true' });
  element.style.backgroundColor = routeColor(index);
  return element;
}

function routesTable(routes) {
  const shown = routes.slice(0, MAX_ROWS);
  return h('div', {},
    h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'The routes as a table' },
      h('table', { class: 'view-table routes-table' },
        h('thead', {}, h('tr', {}, ...['Vehicle', 'Clients', 'Load', 'Distance', 'Duration', 'Leaves', 'Returns', 'Visits']
          .map((name) => h('th', { scope: 'col' }, name)))),
        h('tbody', {}, shown.map((route, index) => h('tr', { 'data-route': String(index) },
          h('th', { scope: 'row' }, swatch(index), ` ${route.vehicle ?? index}`),
          h('td', {}, String(route.clients.length)),
          h('td', {}, format(route.load)),
          h('td', {}, format(route.distance)),
          h('td', {}, format(route.duration)),
          h('td', {}, format(route.start)),
          h('td', {}, format(route.end)),
          h('td', { class: 'route-visits' }, route.clients.slice(0, 40).join(' → ') + (route.clients.length > 40 ? ' …' : ''))))))),
    routes.length > MAX_ROWS ? h('p', { class: 'hint' }, `The first ${MAX_ROWS} of ${routes.length} routes.`) : null);
}

// The plane: routes as paths from the depot and back.
class RouteMap {
  constructor(canvas, tip, depot, clients, routes) {
    this.canvas = canvas;
    this.tip = tip;
    this.depot = depot;
    this.routes = routes;
    this.zoom = 1;
    this.pan = [0, 0];
    this.stopped = false;
    // Every drawn client: its place, its route and its place on it; each route's run of
    // points.
    this.points = [];
    this.spans = routes.map((route, routeIndex) => {
      const first = this.points.length;
      route.clients.forEach((id, visit) => {
        const client = clients.get(String(id));
        if (client) this.points.push({ id, x: client.x, y: client.y, route: routeIndex, visit, client });
      });
      return [first, this.points.length];
    });
    const xs = this.points.map((point) => point.x).concat(depot.x);
    const ys = this.points.map((point) => point.y).concat(depot.y);
    this.bounds = {
      x0: Math.min(...xs), x1: Math.max(...xs), y0: Math.min(...ys), y1: Math.max(...ys),
    };
    this.grid = new PointGrid(this.points, this.bounds);
    this.listen();
  }

  start() {
    this.draw();
    this.canvas.dataset.settled = 'true';
    // Redrawn at the canvas's new size, on a phone turned or a window resized.
    this.resizing = new ResizeObserver(() => {
      if (!this.stopped) this.draw();
    });
    this.resizing.observe(this.canvas);
  }

  stop() {
    this.stopped = true;
    this.resizing?.disconnect();
  }

  // The plane to the canvas: the instance fit in the canvas, then zoomed and panned.
  transform(width, height) {
    const { x0, x1, y0, y1 } = this.bounds;
    const margin = 12;
    const scale = Math.min((width - 2 * margin) / Math.max(x1 - x0, 1e-9), (height - 2 * margin) / Math.max(y1 - y0, 1e-9)) * this.zoom;
    const cx = (x0 + x1) / 2;
    const cy = (y0 + y1) / 2;
    return {
      x: (x) => width / 2 + (x - cx) * scale + this.pan[0],
      y: (y) => height / 2 - (y - cy) * scale + this.pan[1],
      scale,
      // Back from the canvas to the plane, for hovering.
      inverse: (px, py) => [cx + (px - width / 2 - this.pan[0]) / scale, cy - (py - height / 2 - this.pan[1]) / scale],
    };
  }

  draw() {
    const canvas = this.canvas;
    const ratio = window.devicePixelRatio || 1;
    const width = canvas.clientWidth || 600;
    const height = canvas.clientHeight || 480;
    if (canvas.width !== Math.round(width * ratio) || canvas.height !== Math.round(height * ratio)) {
      canvas.width = Math.round(width * ratio);
      canvas.height = Math.round(height * ratio);
    }
    const context = canvas.getContext('2d');
    context.setTransform(ratio, 0, 0, ratio, 0, 0);
    context.clearRect(0, 0, width, height);
    const at = this.transform(width, height);
    const depot = [at.x(this.depot.x), at.y(this.depot.y)];
    const many = this.points.length > 2000;
    context.lineWidth = many ? 0.8 : 1.5;
    this.routes.forEach((route, index) => {
      const path = new Path2D();
      path.moveTo(depot[0], depot[1]);
      const [first, last] = this.spans[index];
      for (let place = first; place < last; place += 1) {
        const point = this.points[place];
        path.lineTo(at.x(point.x), at.y(point.y));
      }
      path.lineTo(depot[0], depot[1]);
      context.strokeStyle = routeColor(index);
      context.globalAlpha = this.highlight === undefined || this.highlight === index ? 1 : 0.25;
      context.stroke(path);
    });
    context.globalAlpha = 1;
    const dot = many ? 1.5 : 3;
    context.fillStyle = '#24292f';
    for (const point of this.points) context.fillRect(at.x(point.x) - dot / 2, at.y(point.y) - dot / 2, dot, dot);
    context.fillStyle = '#000';
    context.fillRect(depot[0] - 5, depot[1] - 5, 10, 10);
  }

  hover(px, py) {
    const width = this.canvas.clientWidth || 600;
    const height = this.canvas.clientHeight || 480;
    const at = this.transform(width, height);
    const [x, y] = at.inverse(px, py);
    const point = this.grid.nearest(x, y, 12 / at.scale);
    if (!point) {
      if (this.highlight !== undefined) {
        this.highlight = undefined;
        this.draw();
      }
      this.tip.textContent = 'Hover a client for its route.';
      return;
    }
    const route = this.routes[point.route];
    const arrival = Array.isArray(route.arrivals) ? route.arrivals[point.visit] : undefined;
    const window = point.client.time_window;
    this.tip.textContent = [
      `Client ${point.id}: stop ${point.visit + 1} of ${route.clients.length} on vehicle ${route.vehicle ?? point.route}`,
      arrival !== undefined ? `arrives ${format(arrival)}${window ? ` (window ${format(window[0])}–${format(window[1])})` : ''}` : null,
      `route load ${format(route.load)}, distance ${format(route.distance)}, duration ${format(route.duration)}`,
      route.start !== undefined ? `leaves ${format(route.start)}, returns ${format(route.end)}` : null,
    ].filter(Boolean).join('; ');
    if (this.highlight !== point.route) {
      this.highlight = point.route;
      this.draw();
    }
  }

  listen() {
    const canvas = this.canvas;
    const zoomBy = (factor) => {
      this.zoom = Math.min(64, Math.max(0.25, this.zoom * factor));
      this.draw();
    };
    canvas.addEventListener('wheel', (event) => {
      event.preventDefault();
      zoomBy(event.deltaY < 0 ? 1.2 : 1 / 1.2);
    }, { passive: false });
    let dragging = null;
    canvas.addEventListener('pointerdown', (event) => {
      dragging = [event.clientX, event.clientY];
      canvas.setPointerCapture(event.pointerId);
    });
    canvas.addEventListener('pointermove', (event) => {
      if (dragging) {
        this.pan[0] += event.clientX - dragging[0];
        this.pan[1] += event.clientY - dragging[1];
        dragging = [event.clientX, event.clientY];
        this.draw();
        return;
      }
      const box = canvas.getBoundingClientRect();
      this.hover(event.clientX - box.left, event.clientY - box.top);
    });
    canvas.addEventListener('pointerup', () => { dragging = null; });
    canvas.addEventListener('keydown', (event) => {
      const step = 40;
      const moves = { ArrowLeft: [step, 0], ArrowRight: [-step, 0], ArrowUp: [0, step], ArrowDown: [0, -step] };
      if (moves[event.key]) {
        this.pan[0] += moves[event.key][0];
        this.pan[1] += moves[event.key][1];
        this.draw();
      } else if (event.key === '+' || event.key === '=') zoomBy(1.2);
      else if (event.key === '-') zoomBy(1 / 1.2);
      else if (event.key === '0') {
        this.zoom = 1;
        this.pan = [0, 0];
        this.draw();
      } else return;
      event.preventDefault();
    });
  }
}

// Points sorted into square cells, for the nearest one to a place in a few cells' time.
class PointGrid {
  constructor(points, bounds) {
    this.points = points;
    this.bounds = bounds;
    const side = Math.max(1, Math.ceil(Math.sqrt(points.length / 4)));
    this.columns = side;
    this.rows = side;
    this.width = Math.max(bounds.x1 - bounds.x0, 1e-9) / side;
    this.height = Math.max(bounds.y1 - bounds.y0, 1e-9) / side;
    this.cells = Array.from({ length: side * side }, () => []);
    points.forEach((point, index) => this.cells[this.cellOf(point.x, point.y)].push(index));
  }

  cellOf(x, y) {
    const column = Math.min(this.columns - 1, Math.max(0, Math.floor((x - this.bounds.x0) / this.width)));
    const row = Math.min(this.rows - 1, Math.max(0, Math.floor((y - this.bounds.y0) / this.height)));
    return row * this.columns + column;
  }

  // The nearest point within `reach` of (x, y), if any.
  nearest(x, y, reach) {
    const reachColumns = Math.ceil(reach / this.width);
    const reachRows = Math.ceil(reach / this.height);
    const here = this.cellOf(x, y);
    const column = here % this.columns;
    const row = Math.floor(here / this.columns);
    let best = null;
    let bestDistance = reach * reach;
    for (let r = Math.max(0, row - reachRows); r <= Math.min(this.rows - 1, row + reachRows); r += 1) {
      for (let c = Math.max(0, column - reachColumns); c <= Math.min(this.columns - 1, column + reachColumns); c += 1) {
        for (const index of this.cells[r * this.columns + c]) {
          const point = this.points[index];
          const distance = (point.x - x) ** 2 + (point.y - y) ** 2;
          if (distance <= bestDistance) {
            best = point;
            bestDistance = distance;
          }
        }
      }
    }
    return best;
  }
}

// A row per vehicle over time: travel (thin), waiting (hatched grey), service (solid), and
// each client's window as a bracket under its service.
function timelinePicture(depot, clients, routes) {
  const shown = routes.slice(0, MAX_ROWS);
  let t0 = Infinity;
  let t1 = -Infinity;
  for (const route of shown) {
    if (Number.isFinite(route.start)) t0 = Math.min(t0, route.start);
    if (Number.isFinite(route.end)) t1 = Math.max(t1, route.end);
  }
  if (Array.isArray(depot.time_window)) {
    t0 = Math.min(t0, depot.time_window[0]);
    t1 = Math.max(t1, depot.time_window[1]);
  }
  if (!Number.isFinite(t0) || !Number.isFinite(t1) || t1 <= t0) {
    t0 = 0;
    t1 = 1;
  }
  const canvas = h('canvas', {
    class: 'routes-timeline', role: 'img',
    'aria-label': `Timeline of ${shown.length} vehicles from ${format(t0)} to ${format(t1)}: travel as a thin line, waiting in grey, service as a bar, each client's window as a bracket below it.`,
  });
  const draw = () => {
    const ratio = window.devicePixelRatio || 1;
    const width = canvas.clientWidth || 600;
    const height = shown.length * ROW_HEIGHT + 24;
    canvas.style.height = `${height}px`;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    const context = canvas.getContext('2d');
    context.setTransform(ratio, 0, 0, ratio, 0, 0);
    context.clearRect(0, 0, width, height);
    const left = 56;
    const x = (time) => left + ((time - t0) / (t1 - t0)) * (width - left - 8);
    context.font = '11px system-ui, sans-serif';
    context.fillStyle = '#57606a';
    for (let tick = 0; tick <= 4; tick += 1) {
      const time = t0 + ((t1 - t0) * tick) / 4;
      context.fillText(format(time), Math.min(x(time), width - 40), height - 4);
    }
    shown.forEach((route, index) => {
      const y = index * ROW_HEIGHT + 8;
      const color = routeColor(index);
      context.fillStyle = '#24292f';
      context.fillText(String(route.vehicle ?? index), 4, y + 4);
      let departure = route.start ?? t0;
      route.clients.forEach((id, visit) => {
        const client = clients.get(String(id)) ?? {};
        const arrival = route.arrivals?.[visit] ?? departure;
        const wait = route.waits?.[visit] ?? 0;
        const service = client.service_time ?? 0;
        context.strokeStyle = color;
        context.lineWidth = 1;
        context.beginPath();
        context.moveTo(x(departure), y);
        context.lineTo(x(arrival), y);
        context.stroke();
        if (wait > 0) {
          context.fillStyle = 'rgba(120, 120, 120, 0.45)';
          context.fillRect(x(arrival), y - 3, Math.max(1, x(arrival + wait) - x(arrival)), 6);
        }
        context.fillStyle = color;
        context.fillRect(x(arrival + wait), y - 5, Math.max(1.5, x(arrival + wait + service) - x(arrival + wait)), 10);
        if (Array.isArray(client.time_window)) {
          context.strokeStyle = 'rgba(36, 41, 47, 0.5)';
          context.beginPath();
          context.moveTo(x(client.time_window[0]), y + 6);
          context.lineTo(x(client.time_window[1]), y + 6);
          context.stroke();
        }
        departure = arrival + wait + service;
      });
      if (Number.isFinite(route.end)) {
        context.strokeStyle = color;
        context.beginPath();
        context.moveTo(x(departure), y);
        context.lineTo(x(route.end), y);
        context.stroke();
      }
    });
  };
  requestAnimationFrame(draw);
  const resizing = new ResizeObserver(() => draw());
  resizing.observe(canvas);
  const element = h('div', {},
    h('h3', {}, 'Timeline'),
    h('p', { class: 'hint' }, 'Travel as a thin line, waiting in grey, service as a bar, each client\'s window as a bracket under it.'),
    h('div', { class: 'timeline-wrap', tabindex: '0', role: 'region', 'aria-label': 'The vehicles\' timeline' }, canvas),
    routes.length > MAX_ROWS ? h('p', { class: 'hint' }, `The first ${MAX_ROWS} of ${routes.length} vehicles.`) : null);
  return { element, stop: () => resizing.disconnect() };
}
