// Small charts on a canvas: lines over time, or bars per minute. Each canvas carries a text
// summary (aria-label) of what it shows, and is drawn again when its size changes (a window
// resized, a phone turned), so that it is never a stretched bitmap.

const COLORS = ['#1f6feb', '#d9480f', '#2f9e44', '#7048e8'];

// What draws each canvas again; one observer for them all. A canvas taken out of the page
// is let go at its next change of size (to none).
const redraws = new WeakMap();
const resized = typeof ResizeObserver === 'function' ? new ResizeObserver((entries) => {
  for (const { target } of entries) {
    if (!target.isConnected) {
      resized.unobserve(target);
      redraws.delete(target);
    } else {
      redraws.get(target)?.();
    }
  }
}) : null;

// Draws `canvas` with `draw()` again whenever its size on the page changes.
export function redrawOnResize(canvas, draw) {
  if (!redraws.has(canvas)) resized?.observe(canvas);
  redraws.set(canvas, draw);
}

function sized(canvas) {
  const ratio = window.devicePixelRatio || 1;
  const width = canvas.clientWidth || 300;
  const height = canvas.clientHeight || 120;
  if (canvas.width !== Math.round(width * ratio)) canvas.width = Math.round(width * ratio);
  if (canvas.height !== Math.round(height * ratio)) canvas.height = Math.round(height * ratio);
  const context = canvas.getContext('2d');
  context.setTransform(ratio, 0, 0, ratio, 0, 0);
  context.clearRect(0, 0, width, height);
  return { context, width, height };
}

function label(value) {
  const magnitude = Math.abs(value);
  if (magnitude >= 1e6 || (magnitude > 0 && magnitude < 1e-3)) return value.toExponential(2);
  if (Number.isInteger(value)) return String(value);
  return value.toFixed(magnitude < 10 ? 3 : 1);
}

// series: [{ name, points: [[x, y], …] }]; x in milliseconds.
export function lineChart(canvas, series, { title = '' } = {}) {
  redrawOnResize(canvas, () => lineChart(canvas, series, { title }));
  const { context, width, height } = sized(canvas);
  const points = series.flatMap((one) => one.points);
  if (points.length === 0) {
    canvas.setAttribute('aria-label', `${title}: no data yet`);
    context.fillStyle = '#666';
    context.font = '12px system-ui, sans-serif';
    context.fillText('no data yet', 8, height / 2);
    return;
  }
  const xs = points.map((point) => point[0]);
  const ys = points.map((point) => point[1]);
  let [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  if (x1 === x0) x1 = x0 + 1;
  if (y1 === y0) [y0, y1] = [y0 - 1, y1 + 1];
  const left = 56;
  const bottom = height - 16;
  const x = (value) => left + ((value - x0) / (x1 - x0)) * (width - left - 8);
  const y = (value) => 8 + (1 - (value - y0) / (y1 - y0)) * (bottom - 8);
  axes(context, left, bottom, width, [label(y1), label(y0)]);
  series.forEach((one, index) => {
    context.strokeStyle = COLORS[index % COLORS.length];
    context.lineWidth = 1.5;
    context.beginPath();
    one.points.forEach(([px, py], at) => {
      if (at === 0) context.moveTo(x(px), y(py));
      else context.lineTo(x(px), y(py));
    });
    context.stroke();
  });
  const last = series.map((one) => `${one.name} ${one.points.length ? label(one.points.at(-1)[1]) : 'none'}`);
  canvas.setAttribute('aria-label', `${title}: latest ${last.join(', ')}`);
}

// bars: [{ label, values: [a, b] }] drawn as grouped bars, one colour per value.
export function barChart(canvas, bars, names, { title = '' } = {}) {
  redrawOnResize(canvas, () => barChart(canvas, bars, names, { title }));
  const { context, width, height } = sized(canvas);
  const top = Math.max(1, ...bars.flatMap((bar) => bar.values));
  const left = 40;
  const bottom = height - 16;
  axes(context, left, bottom, width, [label(top), '0']);
  const slot = (width - left - 8) / Math.max(1, bars.length);
  bars.forEach((bar, index) => {
    bar.values.forEach((value, which) => {
      const barWidth = Math.max(1, slot / bar.values.length - 1);
      const barHeight = (value / top) * (bottom - 8);
      context.fillStyle = COLORS[which % COLORS.length];
      context.fillRect(left + index * slot + which * barWidth, bottom - barHeight, barWidth, barHeight);
    });
  });
  const totals = names.map((name, which) => `${name} ${bars.reduce((sum, bar) => sum + bar.values[which], 0)}`);
  canvas.setAttribute('aria-label', `${title}: ${totals.join(', ')} over ${bars.length} minutes`);
}

function axes(context, left, bottom, width, [topLabel, bottomLabel]) {
  context.strokeStyle = '#999';
  context.lineWidth = 1;
  context.beginPath();
  context.moveTo(left, 4);
  context.lineTo(left, bottom);
  context.lineTo(width - 4, bottom);
  context.stroke();
  context.fillStyle = '#444';
  context.font = '11px system-ui, sans-serif';
  context.textAlign = 'right';
  context.fillText(topLabel, left - 4, 14);
  context.fillText(bottomLabel, left - 4, bottom);
  context.textAlign = 'left';
}

export function legend(names) {
  const list = document.createElement('ul');
  list.className = 'legend';
  names.forEach((name, index) => {
    const item = document.createElement('li');
    const swatch = document.createElement('span');
    swatch.className = 'swatch';
    swatch.dataset.color = String(index % COLORS.length);
    item.append(swatch, name);
    list.append(item);
  });
  return list;
}
