// Pictures of answers. Max-cut: the graph with its two sides in two colours and the cut
// edges marked, laid out by a force layout (with a grid for the repulsion, so 2,000 nodes
// and 20,000 edges stay interactive), or a summary table for larger graphs. QUBO: the
// sample as a strip of cells, with its energy.

import { redrawOnResize } from './chart.js';
import { h } from './dom.js';

// Graphs larger than this get the summary only.
const LAYOUT_MAX_NODES = 5000;
const LAYOUT_MAX_EDGES = 200000;
const ITERATIONS = 300;
// A graph with more edges is drawn without them until its layout settles.
const EDGES_WHILE_SETTLING = 5000;
const SIDE_COLORS = ['#1f6feb', '#d9480f'];
const CUT_COLOR = 'rgba(112, 72, 232, 0.55)';
const UNCUT_COLOR = 'rgba(120, 120, 120, 0.18)';

// The graph of a max-cut input: inline JSON (edges or adjacency matrix) or a G-set text file.
export function parseGraph(text, mediaType) {
  if (mediaType.startsWith('application/json') || text.trimStart().startsWith('{')) {
    const input = JSON.parse(text);
    const from = [];
    const to = [];
    const weight = [];
    if (Array.isArray(input.edges)) {
      for (const [i, j, w] of input.edges) {
        from.push(i);
        to.push(j);
        weight.push(w ?? 1);
      }
    } else if (Array.isArray(input.adj_matrix)) {
      input.adj_matrix.forEach((row, i) => row.forEach((w, j) => {
        if (j > i && w !== 0) {
          from.push(i);
          to.push(j);
          weight.push(w);
        }
      }));
    }
    return { n: input.num_nodes, from, to, weight };
  }
  const lines = text.split('\n').map((line) => line.trim()).filter((line) => line && !line.startsWith('#'));
  const [n] = lines[0].split(/\s+/).map(Number);
  const from = [];
  const to = [];
  const weight = [];
  for (const line of lines.slice(1)) {
    const [i, j, w] = line.split(/\s+/).map(Number);
    from.push(i - 1);
    to.push(j - 1);
    weight.push(w ?? 1);
  }
  return { n, from, to, weight };
}

function summary(graph, partition) {
  const counts = { sideA: 0, sideB: 0, withinA: 0, withinB: 0, cut: 0, cutWeight: 0 };
  partition.forEach((side) => { counts[side ? 'sideB' : 'sideA'] += 1; });
  graph.from.forEach((i, edge) => {
    const j = graph.to[edge];
    if (partition[i] !== partition[j]) {
      counts.cut += 1;
      counts.cutWeight += graph.weight[edge];
    } else counts[partition[i] ? 'withinB' : 'withinA'] += 1;
  });
  return counts;
}

export function maxCutPicture(graph, output) {
  const partition = output.partition;
  const counts = summary(graph, partition);
  const table = h('table', { class: 'summary' },
    h('caption', {}, 'The cut'),
    h('tbody', {},
      row('Nodes', `${graph.n}: ${counts.sideA} on side A, ${counts.sideB} on side B`),
      row('Edges', `${graph.from.length}: ${counts.cut} cut, ${counts.withinA} within A, ${counts.withinB} within B`),
      row('Cut value', `${output.cut_value}${output.optimal ? ' (proven optimal)' : ''}; the cut edges' weights add up to ${round(counts.cutWeight)}`)));
  if (graph.n > LAYOUT_MAX_NODES || graph.from.length > LAYOUT_MAX_EDGES) {
    return h('section', { class: 'picture', 'aria-label': 'Picture of the cut' }, table,
      h('p', {}, `The graph is too large to draw legibly (over ${LAYOUT_MAX_NODES} nodes or ${LAYOUT_MAX_EDGES} edges); the table says what the cut does.`));
  }
  const canvas = h('canvas', {
    class: 'graph',
    tabindex: '0',
    role: 'img',
    'aria-label': `Graph of ${graph.n} nodes: side A in blue, side B in orange, ${counts.cut} cut edges in purple. Arrow keys pan, plus and minus zoom, 0 resets.`,
  });
  const view = new GraphView(canvas, graph, partition);
  const toggle = (name, text) => h('label', {},
    h('input', { type: 'checkbox', checked: true, onchange: (event) => view.show(name, event.target.checked) }), ` ${text}`);
  const legend = h('p', { class: 'graph-legend' },
    h('span', { class: 'key side-a' }, 'side A'), ' ', h('span', { class: 'key side-b' }, 'side B'), ' ',
    h('span', { class: 'key cut' }, 'cut edge'), ' ',
    toggle('cut', 'cut edges'), ' ', toggle('uncut', 'other edges'));
  const section = h('section', { class: 'picture', 'aria-label': 'Picture of the cut' }, table, legend, canvas);
  requestAnimationFrame(() => view.start());
  section.stop = () => view.stop();
  return section;
}

function row(name, value) {
  return h('tr', {}, h('th', { scope: 'row' }, name), h('td', {}, value));
}

function round(value) {
  return Math.round(value * 1e6) / 1e6;
}

class GraphView {
  constructor(canvas, graph, partition) {
    this.canvas = canvas;
    this.graph = graph;
    this.partition = partition;
    this.visible = { cut: true, uncut: true };
    this.zoom = 1;
    this.pan = [0, 0];
    this.iteration = 0;
    this.stopped = false;
    const n = graph.n;
    this.x = new Float32Array(n);
    this.y = new Float32Array(n);
    this.k = Math.sqrt(1 / Math.max(1, n));
    let seed = 12345;
    const random = () => {
      seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff;
      return seed / 0x7fffffff;
    };
    for (let i = 0; i < n; i += 1) {
      this.x[i] = (partition[i] ? 0.25 : -0.25) + (random() - 0.5) * 0.5;
      this.y[i] = random() - 0.5;
    }
    this.temperature = 0.1;
    this.listen();
  }

  show(which, visible) {
    this.visible[which] = visible;
    this.draw();
  }

  start() {
    const frame = () => {
      if (this.stopped || !this.canvas.isConnected) return;
      const until = performance.now() + 12;
      while (this.iteration < ITERATIONS && performance.now() < until) this.step();
      this.draw();
      if (this.iteration < ITERATIONS) requestAnimationFrame(frame);
      else this.canvas.dataset.settled = 'true';
    };
    requestAnimationFrame(frame);
  }

  stop() {
    this.stopped = true;
  }

  // One Fruchterman–Reingold step; repulsion only between nodes in neighbouring grid cells.
  step() {
    const { n, from, to } = this.graph;
    const { x, y, k } = this;
    const dx = new Float32Array(n);
    const dy = new Float32Array(n);
    // Nodes sorted into a grid of cells 2k wide (counting sort into typed arrays); each
    // pair of nodes in the same or neighbouring cells repels once.
    let [minX, maxX, minY, maxY] = [Infinity, -Infinity, Infinity, -Infinity];
    for (let i = 0; i < n; i += 1) {
      minX = Math.min(minX, x[i]);
      maxX = Math.max(maxX, x[i]);
      minY = Math.min(minY, y[i]);
      maxY = Math.max(maxY, y[i]);
    }
    const cell = Math.max(2 * k, (maxX - minX) / 512, (maxY - minY) / 512);
    const columns = Math.floor((maxX - minX) / cell) + 1;
    const rows = Math.floor((maxY - minY) / cell) + 1;
    const cellOf = this.cellOf ?? (this.cellOf = new Int32Array(n));
    const start = new Int32Array(columns * rows + 1);
    for (let i = 0; i < n; i += 1) {
      cellOf[i] = Math.floor((y[i] - minY) / cell) * columns + Math.floor((x[i] - minX) / cell);
      start[cellOf[i] + 1] += 1;
    }
    for (let c = 0; c < columns * rows; c += 1) start[c + 1] += start[c];
    const order = this.order ?? (this.order = new Int32Array(n));
    const fillAt = start.slice(0, columns * rows);
    for (let i = 0; i < n; i += 1) order[fillAt[cellOf[i]]++] = i;
    const reach2 = cell * cell;
    const repel = (i, j) => {
      let ddx = x[i] - x[j];
      let ddy = y[i] - y[j];
      let distance2 = ddx * ddx + ddy * ddy;
      if (distance2 > reach2) return;
      if (distance2 < 1e-12) {
        ddx = 1e-4 * (((i * 7919 + j) % 7) - 3);
        ddy = 1e-4;
        distance2 = ddx * ddx + ddy * ddy;
      }
      const force = (k * k) / distance2;
      dx[i] += ddx * force;
      dy[i] += ddy * force;
      dx[j] -= ddx * force;
      dy[j] -= ddy * force;
    };
    for (let row = 0; row < rows; row += 1) {
      for (let column = 0; column < columns; column += 1) {
        const here = row * columns + column;
        for (let a = start[here]; a < start[here + 1]; a += 1) {
          const i = order[a];
          for (let b = a + 1; b < start[here + 1]; b += 1) repel(i, order[b]);
          // Half the neighbours (right, and the three below), so each pair comes once.
          for (const [dc, dr] of [[1, 0], [-1, 1], [0, 1], [1, 1]]) {
            const c = column + dc;
            const r = row + dr;
            if (c < 0 || c >= columns || r >= rows) continue;
            const there = r * columns + c;
            for (let b = start[there]; b < start[there + 1]; b += 1) repel(i, order[b]);
          }
        }
      }
    }
    for (let edge = 0; edge < from.length; edge += 1) {
      const i = from[edge];
      const j = to[edge];
      // A cut edge spans the gap by design; each side is laid out by its own edges.
      if (this.partition[i] !== this.partition[j]) continue;
      const ddx = x[i] - x[j];
      const ddy = y[i] - y[j];
      const distance = Math.sqrt(ddx * ddx + ddy * ddy) || 1e-6;
      const force = distance / k;
      dx[i] -= ddx * force;
      dy[i] -= ddy * force;
      dx[j] += ddx * force;
      dy[j] += ddy * force;
    }
    // Each side keeps to its half, with a gap between: the cut shows as the edges that
    // cross the gap, the other edges stay within a side.
    const gap = Math.max(4 * k, 0.1);
    const spread = 0.45 * Math.sqrt(n) * k;
    for (let i = 0; i < n; i += 1) {
      dx[i] -= (x[i] - (this.partition[i] ? spread : -spread)) * 0.08;
      dy[i] -= y[i] * 0.08;
      const length = Math.sqrt(dx[i] * dx[i] + dy[i] * dy[i]) || 1;
      const move = Math.min(length, this.temperature);
      x[i] += (dx[i] / length) * move;
      y[i] += (dy[i] / length) * move;
      if (this.partition[i]) x[i] = Math.max(x[i], gap / 2);
      else x[i] = Math.min(x[i], -gap / 2);
    }
    this.temperature = Math.max(0.002, this.temperature * 0.985);
    this.iteration += 1;
  }

  // Draws the whole picture into an offscreen canvas (the edges cost most: tens of
  // thousands of strokes), then shows it. While the layout settles, a large graph is drawn
  // without its edges.
  draw() {
    const canvas = this.canvas;
    const ratio = window.devicePixelRatio || 1;
    const width = canvas.clientWidth || 600;
    const height = canvas.clientHeight || 400;
    const scene = this.scene ?? (this.scene = document.createElement('canvas'));
    if (scene.width !== Math.round(width * ratio) || scene.height !== Math.round(height * ratio)) {
      scene.width = Math.round(width * ratio);
      scene.height = Math.round(height * ratio);
    }
    const context = scene.getContext('2d');
    context.setTransform(ratio, 0, 0, ratio, 0, 0);
    context.clearRect(0, 0, width, height);
    const { x, y } = this;
    let [minX, maxX, minY, maxY] = [Infinity, -Infinity, Infinity, -Infinity];
    for (let i = 0; i < this.graph.n; i += 1) {
      minX = Math.min(minX, x[i]);
      maxX = Math.max(maxX, x[i]);
      minY = Math.min(minY, y[i]);
      maxY = Math.max(maxY, y[i]);
    }
    const scale = (Math.min(width / (maxX - minX || 1), height / (maxY - minY || 1)) * 0.9) * this.zoom;
    const centerX = (minX + maxX) / 2;
    const centerY = (minY + maxY) / 2;
    const [panX, panY] = this.pan;
    const px = (i) => width / 2 + (x[i] - centerX) * scale + panX;
    const py = (i) => height / 2 + (y[i] - centerY) * scale + panY;
    const { from, to } = this.graph;
    const settling = this.iteration < ITERATIONS && from.length > EDGES_WHILE_SETTLING;
    for (const [cut, color, shown] of [[false, UNCUT_COLOR, this.visible.uncut], [true, CUT_COLOR, this.visible.cut]]) {
      if (!shown || settling) continue;
      context.strokeStyle = color;
      context.lineWidth = 1;
      context.beginPath();
      for (let edge = 0; edge < from.length; edge += 1) {
        const i = from[edge];
        const j = to[edge];
        if ((this.partition[i] !== this.partition[j]) !== cut) continue;
        context.moveTo(px(i), py(i));
        context.lineTo(px(j), py(j));
      }
      context.stroke();
    }
    const radius = Math.max(1.5, Math.min(5, 200 / Math.sqrt(this.graph.n + 1))) * Math.sqrt(this.zoom);
    for (const side of [0, 1]) {
      context.fillStyle = SIDE_COLORS[side];
      context.beginPath();
      for (let i = 0; i < this.graph.n; i += 1) {
        if ((this.partition[i] ? 1 : 0) !== side) continue;
        context.moveTo(px(i) + radius, py(i));
        context.arc(px(i), py(i), radius, 0, 2 * Math.PI);
      }
      context.fill();
    }
    this.drawnPan = [panX, panY];
    this.present();
  }

  // Shows the drawn picture, shifted by the panning since it was drawn: a pan costs one
  // copy of the picture, and a full redraw follows once the panning pauses.
  present() {
    const canvas = this.canvas;
    const scene = this.scene;
    if (!scene) return;
    if (canvas.width !== scene.width || canvas.height !== scene.height) {
      canvas.width = scene.width;
      canvas.height = scene.height;
    }
    const ratio = window.devicePixelRatio || 1;
    const context = canvas.getContext('2d');
    context.setTransform(1, 0, 0, 1, 0, 0);
    context.clearRect(0, 0, canvas.width, canvas.height);
    context.drawImage(scene, (this.pan[0] - this.drawnPan[0]) * ratio, (this.pan[1] - this.drawnPan[1]) * ratio);
  }

  panBy(deltaX, deltaY) {
    this.pan[0] += deltaX;
    this.pan[1] += deltaY;
    this.present();
    clearTimeout(this.redrawDue);
    this.redrawDue = setTimeout(() => this.draw(), 150);
  }

  listen() {
    const canvas = this.canvas;
    // A new size (the window resized, a phone turned) is drawn anew, not stretched.
    redrawOnResize(canvas, () => this.draw());
    canvas.addEventListener('wheel', (event) => {
      event.preventDefault();
      this.zoomBy(event.deltaY < 0 ? 1.2 : 1 / 1.2);
    }, { passive: false });
    let dragging = null;
    canvas.addEventListener('pointerdown', (event) => {
      dragging = [event.clientX, event.clientY];
      canvas.setPointerCapture(event.pointerId);
    });
    canvas.addEventListener('pointermove', (event) => {
      if (!dragging) return;
      this.panBy(event.clientX - dragging[0], event.clientY - dragging[1]);
      dragging = [event.clientX, event.clientY];
    });
    canvas.addEventListener('pointerup', () => { dragging = null; });
    canvas.addEventListener('keydown', (event) => {
      const moves = { ArrowLeft: [40, 0], ArrowRight: [-40, 0], ArrowUp: [0, 40], ArrowDown: [0, -40] };
      if (moves[event.key]) this.panBy(...moves[event.key]); else if (event.key === '+' || event.key === '=') this.zoomBy(1.25);
      else if (event.key === '-') this.zoomBy(0.8);
      else if (event.key === '0') {
        this.zoom = 1;
        this.pan = [0, 0];
        this.draw();
      } else return;
      event.preventDefault();
    });
  }

  zoomBy(factor) {
    this.zoom = Math.min(50, Math.max(0.2, this.zoom * factor));
    this.draw();
  }
}

// A QUBO answer: its energy and its sample, one cell per variable.
export function quboPicture(output) {
  const sample = output.sample;
  const ones = sample.filter((value) => value === 1).length;
  const table = h('table', { class: 'summary' },
    h('caption', {}, 'The sample'),
    h('tbody', {},
      row('Energy', `${output.energy}${output.optimal ? ' (proven optimal)' : ''}, ${output.sense ?? 'minimized'}`),
      row('Variables', `${sample.length}: ${ones} set to 1, ${sample.length - ones} to ${output.vartype === 'SPIN' ? '-1' : '0'}`)));
  const columns = Math.ceil(Math.sqrt(sample.length));
  const cell = Math.max(3, Math.min(24, Math.floor(560 / Math.max(1, columns))));
  const canvas = h('canvas', {
    class: 'sample',
    role: 'img',
    'aria-label': `Sample of ${sample.length} variables as a grid, row by row: dark cells are 1.`,
  });
  canvas.width = columns * cell;
  canvas.height = Math.ceil(sample.length / columns) * cell;
  const context = canvas.getContext('2d');
  sample.forEach((value, index) => {
    context.fillStyle = value === 1 ? '#1f6feb' : '#e7ecf3';
    context.fillRect((index % columns) * cell, Math.floor(index / columns) * cell, cell - 1, cell - 1);
  });
  return h('section', { class: 'picture', 'aria-label': 'Picture of the sample' }, table, canvas);
}
