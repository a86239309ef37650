/*
 * app.js - trainyard's web view: the jobs of a tenant with their state,
 * queue position, reason and estimated start; a job with its curves (loss
 * and validation loss, throughput, learning rate, gradient norm, loss
 * scale, MFU), alerts, goodput, checkpoints, config, events and log, kept
 * up to date while it runs; several jobs of a tenant overlaid; a tenant's
 * quota and usage. It only reads the API, as the signed-in user, with the
 * token held in this script's memory (never in storage, a cookie or the
 * address bar: a token given as "#token=..." for a scripted sign-in is
 * taken out of the address at once). Every piece of data goes into the
 * page as text, never as markup. Charts are plain SVG drawn here.
 */
'use strict';

let token = null;
const main = document.getElementById('main');
const signinForm = document.getElementById('signin').cloneNode(true);

/* Each shown page has a generation; its timers and streams stop when the page is left. */
let viewGen = 0;
let viewAbort = new AbortController();

/* How often a live page asks again, in ms ("#...&poll=MS" for a scripted sign-in). */
let pollMs = 5000;

/*
 * Chart settings, shared by every chart and kept across refreshes. zoom:
 * null, or the [first, last] steps every chart of the page shows (dragged
 * across a chart; a new page forgets it).
 */
const settings = { smooth: 0.6, log: { loss_scale: true }, zoom: null };
let zoomedPage = null;

const FINAL = ['succeeded', 'failed', 'cancelled'];
const COLORS = ['#1f5fbf', '#d2691e', '#2e8b57', '#9932cc', '#b22222', '#008b8b', '#8a6100',
                '#444444'];

/* ---- the API --------------------------------------------------------------- */

async function fail(r) {
  let code = 'http_' + r.status;
  try { code = (await r.json()).code || code; } catch (e) { /* not a problem body */ }
  const err = new Error(code);
  err.status = r.status;
  return err;
}

async function api(path, asText) {
  const r = await fetch(path, { headers: { Authorization: 'Bearer ' + token },
                                signal: viewAbort.signal });
  if (!r.ok) throw await fail(r);
  return asText ? r.text() : r.json();
}

/* Every page of a list route (its items). */
async function all(path) {
  let items = [], cursor = null;
  for (let i = 0; i < 50; i++) {
    const sep = path.includes('?') ? '&' : '?';
    const page = await api(cursor ? path + sep + 'cursor=' + encodeURIComponent(cursor) : path);
    items = items.concat(page.items || []);
    cursor = page.next_cursor;
    if (!cursor) break;
  }
  return items;
}

/*
 * A job's step lines after step `after`, every page of them, one a step: a
 * step that a later attempt ran again, resuming from a checkpoint, has a line
 * of each (the API gives them in the order they came), and the later one is
 * the run's.
 */
async function metricsAfter(id, after) {
  let steps = [];
  for (let i = 0; i < 100; i++) {
    const page = await api('/v1/jobs/' + id + '/metrics?after=' + after);
    if (!page.items.length) break;
    steps = steps.concat(page.items);
    after = page.items[page.items.length - 1].step;
  }
  return steps.filter((s, i) => i + 1 === steps.length || steps[i + 1].step !== s.step);
}

/* ---- building the page ------------------------------------------------------- */

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== null && v !== undefined && v !== false) e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids.flat()) {
    if (k === null || k === undefined) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}

function table(cols, rows, attrs) {
  return el('table', attrs || {},
    el('thead', {}, el('tr', {}, cols.map(c => el('th', {}, c)))),
    el('tbody', {}, rows.map(r => el('tr', {}, r.map(c => el('td', {}, c))))));
}

function show(...kids) {
  main.replaceChildren(...kids.flat());
}

function card(label, value, note) {
  return el('div', { class: 'card' }, label, el('div', { class: 'v' }, value),
            note ? el('div', { class: 'note' }, note) : null);
}

function stateCell(state) {
  return el('span', { class: 'state state-' + state }, state);
}

/* ---- numbers ------------------------------------------------------------------ */

function fmtSeconds(s) {
  if (s === null || s === undefined) return '–';
  if (s < 120) return s.toFixed(1) + ' s';
  if (s < 7200) return (s / 60).toFixed(1) + ' min';
  return (s / 3600).toFixed(2) + ' h';
}

/* Bytes in binary units: 1099511627776 is "1 TiB". */
function fmtBytes(n) {
  if (n === null || n === undefined) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];
  let i = 0;
  while (Math.abs(n) >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 ? String(n) : String(Number(n.toPrecision(3)))) + ' ' + units[i];
}

/* Thousands grouped with commas, whatever the browser's locale. */
function grouped(n) {
  const s = String(Math.round(Math.abs(n)));
  return (n < 0 ? '-' : '') + s.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/* A value short enough for an axis or a tooltip. */
function fmtNum(v) {
  if (v === null || v === undefined || !Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a >= 10000) return grouped(v);
  if (a !== 0 && a < 0.001) return v.toExponential(2);
  return String(Number(v.toPrecision(4)));
}

/* ---- series --------------------------------------------------------------------- */

/* [step, value] of one field of the step lines, finite numbers only. */
function field(steps, name) {
  return steps.filter(s => typeof s.data[name] === 'number' && Number.isFinite(s.data[name]))
              .map(s => [s.step, s.data[name]]);
}

/*
 * An exponential moving average, debiased like TensorBoard's: the first
 * points are not pulled towards zero. w = 0 leaves the series as it is.
 */
function smooth(points, w) {
  if (!w) return points;
  let last = 0, n = 0;
  return points.map(([x, y]) => {
    last = last * w + (1 - w) * y;
    n++;
    return [x, last / (1 - Math.pow(w, n))];
  });
}

/* About `count` round ticks between lo and hi. */
function linearTicks(lo, hi, count) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count, mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map(m => m * mag).find(s => s >= raw);
  const ticks = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) {
    ticks.push(Number(t.toPrecision(12)));
  }
  return ticks;
}

/* Powers of ten between lo and hi (lo > 0), or 1-2-5 steps when they are too few. */
function logTicks(lo, hi) {
  const powers = [], all = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
    for (const m of [1, 2, 5]) {
      const t = Number((m * Math.pow(10, e)).toPrecision(12));
      if (t < lo || t > hi) continue;
      all.push(t);
      if (m === 1) powers.push(t);
    }
  }
  return powers.length >= 3 ? powers : all.length >= 2 ? all : [lo, hi];
}

/* [min, max] of many numbers (Math.min(...v) overflows the stack on long runs). */
function extent(v) {
  let lo = Infinity, hi = -Infinity;
  for (const x of v) { if (x < lo) lo = x; if (x > hi) hi = x; }
  return [lo, hi];
}

/* At most n points of a long series, every k-th one, so drawing stays quick. */
function thin(points, n) {
  if (points.length <= n) return points;
  const k = Math.ceil(points.length / n);
  return points.filter((p, i) => i % k === 0 || i === points.length - 1);
}

/* ---- charts ---------------------------------------------------------------------- */

const SVG = 'http://www.w3.org/2000/svg';
function svg(tag, attrs, ...kids) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}

/*
 * A line chart. series: [{name, color, points: [[step, value]...], rough,
 * dashed}]. A rough series (loss, throughput) is drawn smoothed
 * (settings.smooth) over its raw values in a lighter line; the y axis fits
 * the smoothed lines, so a noisy series stays readable, and the raw line
 * is clipped to the plot. A schedule (learning rate, loss scale) is drawn
 * as it is: smoothing would only blur its steps.
 * markers: [{step, label}] drawn as dashed lines (the job's alerts).
 * Moving the pointer over the chart shows each series' value at that step;
 * dragging across it zooms every chart to those steps (settings.zoom, then
 * `redraw`), a double click shows them whole again. Smoothing runs over the
 * whole series, so zooming in does not change a smoothed value.
 */
function chart(id, title, series, markers, redraw) {
  const W = 560, H = 230, L = 58, R = 14, T = 24, B = 30;
  const logScale = !!settings.log[id];
  const zoom = settings.zoom;
  const keep = p => Number.isFinite(p[1]) && (!logScale || p[1] > 0);
  const shown = p => !zoom || (p[0] >= zoom[0] && p[0] <= zoom[1]);
  const drawn = series.map(s => {
    const raw = s.points.filter(keep);
    const smoothed = !!s.rough && settings.smooth > 0;
    const line = smoothed ? smooth(raw, settings.smooth) : raw;
    return { name: s.name, color: s.color, dashed: s.dashed, raw: raw.filter(shown), smoothed,
             line: line.filter(shown) };
  });
  const total = drawn.reduce((n, s) => n + s.raw.length, 0);
  const box = svg('svg', { class: 'chart', id, viewBox: `0 0 ${W} ${H}`, role: 'img',
                           'aria-label': title, 'data-points': total,
                           'data-series': drawn.filter(s => s.raw.length).length });
  if (zoom) box.setAttribute('data-zoom', zoom.join('-'));
  box.append(svg('text', { x: L, y: 15, class: 'title' }, title + (logScale ? ' (log)' : '')));
  if (total === 0) {
    box.append(svg('text', { x: W / 2 - 40, y: H / 2, class: 'empty' },
                   zoom && series.some(s => s.points.length) ? 'no steps in the zoomed range'
                                                             : 'no data yet'));
    if (zoom) unzoomOnDoubleClick(box, redraw);
    return box;
  }
  const xs = zoom ? zoom : drawn.flatMap(s => s.raw.map(p => p[0]));
  const ys = drawn.flatMap(s => s.line.map(p => p[1]));
  let [x0, x1] = extent(xs), [y0, y1] = extent(ys);
  if (x1 === x0) { x0 -= 1; x1 += 1; }
  if (y1 === y0) {
    const d = Math.abs(y0) * 0.1 || 1;
    y0 = logScale ? y0 / 2 : y0 - d;
    y1 = logScale ? y1 * 2 : y1 + d;
  }
  const ty = logScale ? Math.log10 : (y => y);
  const [v0, v1] = [ty(y0), ty(y1)];
  const sx = x => L + (x - x0) / (x1 - x0) * (W - L - R);
  const sy = y => T + (1 - (ty(y) - v0) / (v1 - v0)) * (H - T - B);

  const clip = 'clip-' + id;
  box.append(svg('clipPath', { id: clip },
                 svg('rect', { x: L, y: T, width: W - L - R, height: H - T - B })));
  const axes = svg('g', { class: 'axes' });
  for (const t of logScale ? logTicks(y0, y1) : linearTicks(y0, y1, 5)) {
    axes.append(svg('line', { x1: L, x2: W - R, y1: sy(t), y2: sy(t), class: 'grid' }),
                svg('text', { x: L - 5, y: sy(t) + 4, 'text-anchor': 'end', class: 'y' }, fmtNum(t)));
  }
  for (const t of linearTicks(x0, x1, 6).filter(Number.isInteger)) {
    axes.append(svg('line', { x1: sx(t), x2: sx(t), y1: H - B, y2: H - B + 4, class: 'tick' }),
                svg('text', { x: sx(t), y: H - B + 16, 'text-anchor': 'middle', class: 'x' },
                    fmtNum(t)));
  }
  axes.append(svg('text', { x: L - 5, y: H - B + 16, 'text-anchor': 'end' }, 'step'),
              svg('rect', { x: L, y: T, width: W - L - R, height: H - T - B, class: 'frame' }));
  box.append(axes);

  for (const m of markers || []) {
    if (m.step < x0 || m.step > x1) continue;
    const line = svg('line', { x1: sx(m.step), x2: sx(m.step), y1: T, y2: H - B,
                               class: 'marker', 'data-step': m.step });
    line.append(svg('title', {}, m.label));
    box.append(line);
  }
  const pts = p => thin(p, 2000).map(q => sx(q[0]).toFixed(1) + ',' + sy(q[1]).toFixed(1))
                                .join(' ');
  const plot = svg('g', { 'clip-path': `url(#${clip})` });
  for (const s of drawn) {
    if (!s.raw.length) continue;
    if (s.smoothed) {
      plot.append(svg('polyline', { class: 'raw', stroke: s.color, points: pts(s.raw) }));
    }
    plot.append(svg('polyline', { class: s.dashed ? 'line dashed' : 'line', stroke: s.color,
                                  points: pts(s.line), 'data-name': s.name }));
  }
  box.append(plot);
  hover(box, drawn, { sx, sy, x0, x1, L, R, T, B, W, H }, redraw);
  return box;
}

/* A double click on the chart box shows every step again. */
function unzoomOnDoubleClick(box, redraw) {
  box.addEventListener('dblclick', () => {
    if (!settings.zoom) return;
    settings.zoom = null;
    redraw();
  });
}

/* The point of a series nearest to step x (points are in step order). */
function nearest(points, x) {
  let lo = 0, hi = points.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (points[mid][0] < x) lo = mid + 1; else hi = mid;
  }
  if (lo > 0 && x - points[lo - 1][0] < points[lo][0] - x) lo--;
  return points[lo];
}

/*
 * The pointer's step and each series' value there, in a box beside it; a
 * drag across the plot zooms to the steps it covers (at least two), a double
 * click undoes the zoom.
 */
function hover(box, drawn, g, redraw) {
  const layer = svg('g', { class: 'hover' });
  box.append(layer);
  // the pointer's x in the chart's units; stepAt keeps it within the plot
  const plotX = ev => {
    const r = box.getBoundingClientRect();
    return (ev.clientX - r.left) * g.W / r.width;
  };
  const stepAt = x => g.x0 + (Math.min(Math.max(x, g.L), g.W - g.R) - g.L) /
                      (g.W - g.L - g.R) * (g.x1 - g.x0);
  let dragFrom = null;
  box.addEventListener('mousedown', ev => {
    const x = plotX(ev);
    if (ev.button !== 0 || x < g.L || x > g.W - g.R) return;
    dragFrom = x;
    ev.preventDefault();
  });
  box.addEventListener('mouseup', ev => {
    if (dragFrom === null) return;
    const a = Math.round(stepAt(dragFrom)), b = Math.round(stepAt(plotX(ev)));
    dragFrom = null;
    if (Math.abs(a - b) < 1 || !redraw) { layer.replaceChildren(); return; }
    settings.zoom = [Math.min(a, b), Math.max(a, b)];
    redraw();
  });
  unzoomOnDoubleClick(box, redraw);
  box.addEventListener('mouseleave', () => { dragFrom = null; layer.replaceChildren(); });
  box.addEventListener('mousemove', ev => {
    const x = plotX(ev);
    if (dragFrom !== null) {
      const lo = Math.max(Math.min(dragFrom, x), g.L), hi = Math.min(Math.max(dragFrom, x), g.W - g.R);
      layer.replaceChildren(svg('rect', { x: lo, y: g.T, width: hi - lo, height: g.H - g.T - g.B,
                                          class: 'selection' }));
      return;
    }
    if (x < g.L || x > g.W - g.R) { layer.replaceChildren(); return; }
    const step = stepAt(x);
    // the reported step nearest the pointer, and the series that have it
    const shown = drawn.filter(s => s.raw.length);
    const at = shown.map(s => nearest(s.raw, step)[0])
                    .reduce((a, b) => Math.abs(b - step) < Math.abs(a - step) ? b : a);
    const rows = [];
    for (const s of shown) {
      const raw = nearest(s.raw, at), p = nearest(s.line, at);
      if (raw[0] !== at) continue;
      const text = (drawn.length > 1 ? s.name + ': ' : '') + fmtNum(raw[1]) +
                   (s.smoothed ? ' (smoothed ' + fmtNum(p[1]) + ')' : '');
      rows.push({ color: s.color, text, y: g.sy(p[1]), x: g.sx(p[0]) });
    }
    const lines = ['step ' + at].concat(rows.map(q => q.text));
    const bw = 12 + 6.2 * Math.max(...lines.map(t => t.length)), bh = 8 + 15 * lines.length;
    const bx = g.sx(at) + 10 + bw > g.W ? g.sx(at) - 10 - bw : g.sx(at) + 10;
    layer.replaceChildren(
      svg('line', { x1: g.sx(at), x2: g.sx(at), y1: g.T, y2: g.H - g.B, class: 'cursor' }),
      ...rows.map(q => svg('circle', { cx: q.x, cy: q.y, r: 3.5, fill: q.color })),
      svg('rect', { x: bx, y: g.T + 4, width: bw, height: bh, class: 'tip' }),
      ...lines.map((t, i) => svg('text', { x: bx + 6, y: g.T + 19 + 15 * i,
                                           fill: i ? rows[i - 1].color : '#1d2330' }, t)));
  });
}

/* The smoothing slider; `redraw` draws the charts again with the new settings. */
function chartControls(redraw) {
  const slider = el('input', { type: 'range', min: 0, max: 0.99, step: 0.01,
                               value: settings.smooth, id: 'smoothing',
                               'aria-label': 'smoothing' });
  const shown = el('span', {}, settings.smooth.toFixed(2));
  slider.addEventListener('input', () => {
    settings.smooth = Number(slider.value);
    shown.textContent = settings.smooth.toFixed(2);
    redraw();
  });
  const unzoom = el('button', { type: 'button', id: 'unzoom', hidden: !settings.zoom },
                    settings.zoom ? 'all steps (zoomed to ' + settings.zoom.join('-') + ')' : '');
  unzoom.addEventListener('click', () => { settings.zoom = null; redraw(); });
  return el('div', { class: 'controls' }, el('label', {}, 'smoothing ', slider, ' ', shown),
            unzoom,
            el('span', { class: 'note' },
               'point at a chart for its values; drag across it to zoom, double-click for all'));
}

/* A chart in its frame, with its own log-scale switch. */
function chartPanel(id, title, series, markers, redraw) {
  const box = el('input', { type: 'checkbox', checked: !!settings.log[id],
                            'aria-label': 'log scale of ' + title });
  box.addEventListener('change', () => { settings.log[id] = box.checked; redraw(); });
  const legend = series.length > 1 || series.some(s => s.name !== title)
    ? el('div', { class: 'legend' }, series.filter(s => s.points.length).map(s =>
        el('span', {}, el('i', { class: 'swatch', 'data-color': s.color }), s.name)))
    : null;
  const panel = el('figure', { class: 'panel' }, chart(id, title, series, markers, redraw),
                   el('figcaption', {}, legend, el('label', {}, box, ' log scale')));
  paintSwatches(panel);
  return panel;
}

/* A swatch's colour, set from script: the page's policy allows no inline style. */
function paintSwatches(root) {
  for (const s of root.querySelectorAll('i.swatch')) s.style.background = s.dataset.color;
}

/* Goodput and badput as one stacked bar. */
function goodputBar(g) {
  const W = 600, H = 28, total = g.wall_seconds || 1;
  const parts = [['goodput', g.goodput_seconds]].concat(Object.entries(g.badput_seconds));
  const colors = ['#2e8b57', '#c9a227', '#7b68ee', '#d2691e', '#4682b4', '#b22222', '#8b4513',
                  '#9932cc', '#999999'];
  const bar = svg('svg', { class: 'bar', viewBox: `0 0 ${W} ${H}`, width: '100%' });
  let x = 0;
  parts.forEach(([name, secs], i) => {
    const w = W * secs / total;
    if (w > 0) {
      const r = svg('rect', { x, y: 0, width: w, height: H, fill: colors[i % colors.length],
                              class: name });
      r.append(svg('title', {}, name + ': ' + fmtSeconds(secs)));
      bar.append(r);
    }
    x += w;
  });
  return [bar, table(['where the time went', 'time', 'share'],
    parts.map(([name, secs]) => [name, fmtSeconds(secs),
                                 (100 * secs / total).toFixed(1) + ' %']))];
}

/* ---- the log -------------------------------------------------------------------------- */

/*
 * One log record as a line of text. The trainer's step and event lines
 * are JSON: a step becomes "step 12  loss 3.21  lr 0.0003 ...", an event
 * "event checkpoint  step 40 ...". Other lines (the runtime's, the
 * trainer's errors) are shown as they are.
 */
function logLine(text) {
  if (!text.startsWith('{')) return text;
  let r;
  try { r = JSON.parse(text); } catch (e) { return text; }
  if (r === null || typeof r !== 'object' || Array.isArray(r)) return text;
  const first = ['step', 'loss', 'val_loss', 'lr', 'grad_norm', 'tokens_per_s', 'mfu',
                 'loss_scale', 'step_s'];
  const keys = first.filter(k => k in r)
    .concat(Object.keys(r).filter(k => !first.includes(k) && k !== 'type' && k !== 'event'));
  const shown = v => typeof v === 'number' ? fmtNum(v)
                   : typeof v === 'string' ? v : JSON.stringify(v);
  const body = keys.map(k => k + ' ' + shown(r[k])).join('  ');
  return r.type === 'event' ? 'event ' + shown(r.event) + '  ' + body : body;
}

/*
 * The log panel: lines as text, the newest at the bottom, kept scrolled to
 * the end while "follow" is ticked (untick it to read back in peace).
 */
function logPanel() {
  const pre = el('pre', { class: 'log', id: 'log', tabindex: 0 });
  const follow = el('input', { type: 'checkbox', checked: true, id: 'log-follow' });
  const raw = el('input', { type: 'checkbox', id: 'log-raw' });
  const status = el('span', { class: 'note', id: 'log-status' });
  const lines = [];
  const MAX = 5000;
  const render = () => {
    pre.replaceChildren(lines.map(t => raw.checked ? t : logLine(t)).join('\n'));
    if (follow.checked) pre.scrollTop = pre.scrollHeight;
  };
  raw.addEventListener('change', render);
  follow.addEventListener('change', render);
  const panel = el('div', {},
                   el('div', { class: 'controls' }, el('label', {}, follow, ' follow'),
                      el('label', {}, raw, ' raw records'), status), pre);
  return {
    panel,
    set(text) { lines.length = 0; this.add(text); },
    add(text) {
      for (const t of text.split('\n')) if (t !== '') lines.push(t);
      lines.splice(0, Math.max(0, lines.length - MAX));
      pre.setAttribute('data-lines', lines.length);
      render();
    },
    status(text) { status.textContent = text; }
  };
}

/*
 * Follow the job's log: the answer stays open and brings the lines
 * appended later. It ends when the job ends (or the server's limits end
 * it); then the whole log is read once more.
 */
async function followLog(id, log, gen) {
  try {
    const r = await fetch('/v1/jobs/' + id + '/logs?follow=1',
                          { headers: { Authorization: 'Bearer ' + token },
                            signal: viewAbort.signal });
    if (!r.ok) throw await fail(r);
    log.set('');
    log.status('following');
    const reader = r.body.getReader(), dec = new TextDecoder();
    let rest = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done || gen !== viewGen) break;
      rest += dec.decode(value, { stream: true });
      const cut = rest.lastIndexOf('\n');
      if (cut >= 0) { log.add(rest.slice(0, cut)); rest = rest.slice(cut + 1); }
    }
    if (gen === viewGen) log.status('the log ended');
  } catch (err) {
    if (gen !== viewGen) return;
    log.status('not followed (' + err.message + '): read again with the page');
    return false;
  }
  return true;
}

/* ---- the views ------------------------------------------------------------------ */

async function viewTenants() {
  const t = await api('/v1/tenants');
  show(el('h1', {}, 'Tenants'),
       table(['tenant', '', '', ''], (t.items || []).map(x => [
         x.name,
         el('a', { href: '#/jobs/' + encodeURIComponent(x.name) }, 'jobs'),
         el('a', { href: '#/compare/' + encodeURIComponent(x.name) }, 'compare runs'),
         el('a', { href: '#/tenant/' + encodeURIComponent(x.name) }, 'quota and usage')])));
}

async function viewJobs(tenant) {
  const jobs = await all('/v1/tenants/' + encodeURIComponent(tenant) + '/jobs?limit=100');
  const rows = [];
  for (const j of jobs) {
    let position = '–', eta = '–';
    if (j.state === 'queued') {
      try {
        const e = await api('/v1/jobs/' + j.id + '/eta');
        position = e.queued_ahead + 1;
        eta = e.eta ? e.eta + ' (in ' + fmtSeconds(e.eta_seconds) + ')' : e.reason;
      } catch (err) { eta = err.message; }
    }
    rows.push([el('input', { type: 'checkbox', class: 'pick', value: j.id,
                             'aria-label': 'compare ' + j.name }),
               el('a', { href: '#/job/' + j.id, class: 'job' }, j.name), stateCell(j.state),
               position, j.state_reason || '', eta, j.created_at]);
  }
  const compare = el('button', { id: 'compare' }, 'Compare the ticked runs');
  compare.addEventListener('click', () => {
    const ids = [...main.querySelectorAll('input.pick:checked')].map(b => b.value);
    location.hash = '#/compare/' + encodeURIComponent(tenant) + '/' + ids.join(',');
  });
  show(el('h1', {}, 'Jobs of ' + tenant),
       el('p', {}, el('a', { href: '#/tenant/' + encodeURIComponent(tenant) }, 'quota and usage')),
       table(['', 'job', 'state', 'queue position', 'reason', 'estimated start', 'submitted'],
             rows),
       el('p', {}, compare));
}

/* The charts of one job's step lines (the compare page overlays several jobs'). */
const CHARTS = [
  ['loss', 'loss', ['loss', 'val_loss']],
  ['throughput', 'tokens/s', ['tokens_per_s']],
  ['lr', 'learning rate', ['lr']],
  ['grad_norm', 'gradient norm', ['grad_norm']],
  ['loss_scale', 'loss scale', ['loss_scale']],
  ['mfu', 'MFU', ['mfu']]
];

/* The fields that are noisy from step to step, drawn smoothed; the others are schedules. */
const ROUGH = ['loss', 'tokens_per_s', 'grad_norm', 'mfu'];

const FIELD_NAMES = { loss: 'loss', val_loss: 'validation loss', tokens_per_s: 'tokens/s',
                      lr: 'learning rate', grad_norm: 'gradient norm', loss_scale: 'loss scale',
                      mfu: 'MFU' };

/* A job's state as it changes: the pieces the page draws, asked for again while it runs. */
async function jobData(id, known) {
  const job = await api('/v1/jobs/' + id);
  // Only the new steps, unless a new attempt began: its steps replace those
  // from the checkpoint it resumed on.
  if (known && job.attempts !== known.job.attempts) known = null;
  const after = known && known.steps.length ? known.steps[known.steps.length - 1].step : 0;
  const steps = (known ? known.steps : []).concat(await metricsAfter(id, after));
  const [events, g, checkpoints, alerts] = await Promise.all([
    all('/v1/jobs/' + id + '/events'),
    api('/v1/jobs/' + id + '/goodput'),
    api('/v1/jobs/' + id + '/checkpoints').then(c => c.items),
    api('/v1/tenants/' + encodeURIComponent(job.tenant) + '/alerts?job=' + id)
      .then(a => a.items).catch(() => [])
  ]);
  return { job, steps, events, g, checkpoints, alerts };
}

function mfuCard(d) {
  const own = field(d.steps, 'mfu');
  if (d.g.mfu !== null) return card('MFU', (100 * d.g.mfu).toFixed(1) + ' %');
  if (own.length) return card('MFU', (100 * own[own.length - 1][1]).toFixed(1) + ' %');
  return card('MFU', '–', 'unknown: no MFU from the trainer, and no device peak ' +
              '(TRAINYARD_DEVICE_PEAK_GFLOPS) set');
}

function alertLabel(a) {
  const d = a.detail || {};
  return a.kind + (d.step !== undefined ? ' at step ' + d.step : '') +
         (typeof d.loss === 'number' ? ', loss ' + fmtNum(d.loss) : '') + ' (' + a.created_at + ')';
}

/* What raised an alert, as "name value" pairs. */
function alertDetail(detail) {
  return Object.entries(detail || {}).filter(([k]) => k !== 'step')
    .map(([k, v]) => k + ' ' + (typeof v === 'number' ? fmtNum(v) : String(v))).join(', ');
}

function jobSections(d, redraw) {
  const { job, steps, g } = d;
  const markers = d.alerts.filter(a => a.detail && Number.isInteger(a.detail.step))
                   .map(a => ({ step: a.detail.step, label: alertLabel(a) }));
  const panels = CHARTS.map(([id, title, fields]) => {
    const series = fields.map((f, i) => ({ name: FIELD_NAMES[f], color: COLORS[i],
                                           points: field(steps, f), rough: ROUGH.includes(f),
                                           dashed: f === 'val_loss' }))
                         .filter((s, i) => i === 0 || s.points.length);
    if (id === 'mfu' && !series[0].points.length) return null;
    return chartPanel(id, title, series, markers, redraw);
  });
  const live = !FINAL.includes(job.state);
  return {
    cards: el('div', { class: 'cards' },
            card('state', stateCell(job.state)), card('attempts', job.attempts),
            card('steps kept / lost', g.steps.kept + ' / ' + g.steps.lost),
            card('last step', steps.length ? steps[steps.length - 1].step : '–'),
            card('goodput', g.goodput_fraction === null ? '–'
                            : (100 * g.goodput_fraction).toFixed(1) + ' %'),
            card('tokens/s (median)', g.tokens_per_s === null ? '–' : grouped(g.tokens_per_s)),
            mfuCard(d)),
    live: live ? 'live: asked again every ' + pollMs / 1000 + ' s' : 'ended: ' + job.state,
    reason: job.state_reason || '',
    charts: [chartControls(redraw), el('div', { class: 'charts' }, panels)],
    alerts: d.alerts.length
      ? table(['raised', 'kind', 'step', 'detail'],
              d.alerts.map(a => [a.created_at, a.kind,
                                 a.detail && a.detail.step !== undefined ? a.detail.step : '–',
                                 alertDetail(a.detail)]), { id: 'alerts' })
      : el('p', { id: 'alerts' }, 'none'),
    goodput: goodputBar(g),
    attempts: table(['attempt', 'ended with', 'devices', 'started', 'ended', 'steps reported'],
      g.attempt_list.map(a => [a.number, el('span', { class: 'class' },
                                              a.failure_class || (a.ended_at ? 'ok' : 'running')),
                               a.devices, a.started_at || '–', a.ended_at || '–', a.steps])),
    checkpoints: d.checkpoints.length
      ? table(['step', 'size', 'shards', 'world', 'classification', 'registered'],
              d.checkpoints.map(c => [c.step, fmtBytes(c.bytes), c.shards.length, c.world,
                                      c.classification, c.created_at]), { id: 'checkpoints' })
      : el('p', { id: 'checkpoints' }, 'none yet'),
    events: table(['at', 'from', 'to', 'reason'],
                  d.events.map(e => [e.at, e.from_state || '', e.to_state, e.reason]))
  };
}

async function viewJob(id) {
  const gen = viewGen;
  let d = await jobData(id);
  const part = name => el('div', { id: 'part-' + name });
  const parts = {};
  for (const name of ['cards', 'live', 'reason', 'charts', 'alerts', 'goodput', 'attempts',
                      'checkpoints', 'events']) parts[name] = part(name);
  const log = logPanel();
  const config = el('pre', { class: 'config', id: 'config' }, JSON.stringify(d.job.spec, null, 2));
  // The charts are drawn again only when their data changed: a redraw
  // would take away the values shown under the pointer.
  let drawnFor = null;
  const chartsOf = x => [x.steps.length, x.steps.length && x.steps[x.steps.length - 1].step,
                         x.alerts.length, x.job.attempts].join();
  const redraw = force => {
    const s = jobSections(d, () => redraw(true));
    for (const [name, node] of Object.entries(parts)) {
      if (name === 'charts' && force !== true && drawnFor === chartsOf(d)) continue;
      node.replaceChildren(...[s[name]].flat());
    }
    drawnFor = chartsOf(d);
    paintSwatches(main);
  };
  show(el('h1', {}, d.job.name),
       el('p', { class: 'sub' }, el('a', { href: '#/jobs/' + encodeURIComponent(d.job.tenant) },
                                     'jobs of ' + d.job.tenant), ' · ',
          el('a', { href: '#/compare/' + encodeURIComponent(d.job.tenant) + '/' + id },
             'compare with other runs'), ' · ', parts.live),
       parts.cards, parts.reason,
       el('h2', {}, 'Curves'), parts.charts,
       el('h2', {}, 'Alerts'), parts.alerts,
       el('h2', {}, 'Where the time went'), parts.goodput,
       el('h2', {}, 'Attempts'), parts.attempts,
       el('h2', {}, 'Checkpoints'), parts.checkpoints,
       el('h2', {}, 'Log'), log.panel,
       el('h2', {}, 'Config'), config,
       el('h2', {}, 'Events'), parts.events);
  redraw(true);

  // The log: followed while the job runs (again when the server ends a
  // long follow), else read once; read again with each refresh when
  // following is refused (the server's limits on followers).
  let followed = false;
  const readLog = async () => {
    try {
      log.set(await api('/v1/jobs/' + id + '/logs', true));
    } catch (err) { if (gen === viewGen) log.status('no log: ' + err.message); }
  };
  const follow = async () => {
    while (gen === viewGen && !FINAL.includes(d.job.state)) {
      followed = true;
      const ok = await followLog(id, log, gen);
      followed = false;
      if (!ok) return;
      await new Promise(res => setTimeout(res, pollMs));
    }
    if (gen === viewGen) await readLog();
  };
  if (FINAL.includes(d.job.state)) await readLog();
  else follow();
  document.body.setAttribute('data-ready', 'true');

  while (!FINAL.includes(d.job.state)) {
    await new Promise(res => setTimeout(res, pollMs));
    if (gen !== viewGen) return;
    try {
      d = await jobData(id, d);
    } catch (err) {
      if (gen !== viewGen) return;
      parts.live.textContent = 'not updated: ' + err.message;
      continue;
    }
    if (gen !== viewGen) return;
    redraw();
    if (!followed) await readLog();
    document.body.setAttribute('data-refreshed', String(Date.now()));
  }
}

/*
 * Several jobs of a tenant overlaid, one colour each: pick them with the
 * boxes; the choice is kept in the address (#/compare/TENANT/ID,ID).
 */
async function viewCompare(tenant, picked) {
  const jobs = await all('/v1/tenants/' + encodeURIComponent(tenant) + '/jobs?limit=100');
  const chosen = jobs.filter(j => picked.includes(j.id)).slice(0, COLORS.length);
  const runs = await Promise.all(chosen.map(async (j, i) => ({
    job: j, color: COLORS[i], steps: await metricsAfter(j.id, 0)
  })));
  const boxes = jobs.map(j => {
    const b = el('input', { type: 'checkbox', value: j.id, checked: picked.includes(j.id),
                            class: 'pick' });
    b.addEventListener('change', () => {
      const ids = [...main.querySelectorAll('input.pick:checked')].map(x => x.value);
      location.hash = '#/compare/' + encodeURIComponent(tenant) + '/' + ids.join(',');
    });
    return el('label', { class: 'pick' }, b, ' ', j.name, ' ', stateCell(j.state));
  });
  const charts = el('div', { id: 'part-charts' });
  const redraw = () => {
    const panels = CHARTS.map(([id, title, fields]) => {
      const series = [];
      for (const f of fields) {
        for (const r of runs) {
          const points = field(r.steps, f);
          if (f !== fields[0] && !points.length) continue;
          series.push({ name: r.job.name + (f === fields[0] ? '' : ' ' + FIELD_NAMES[f]),
                        color: r.color, points, rough: ROUGH.includes(f),
                        dashed: f === 'val_loss' });
        }
      }
      if (!series.some(s => s.points.length) && id !== 'loss') return null;
      return chartPanel(id, title, series, [], redraw);
    });
    charts.replaceChildren(chartControls(redraw), el('div', { class: 'charts' }, panels));
    paintSwatches(main);
  };
  const last = (steps, f) => { const p = field(steps, f); return p.length ? p[p.length - 1][1] : null; };
  show(el('h1', {}, 'Compare runs of ' + tenant),
       el('p', {}, el('a', { href: '#/jobs/' + encodeURIComponent(tenant) }, 'jobs')),
       el('div', { class: 'picks', id: 'picks' }, boxes),
       runs.length
         ? table(['run', 'state', 'last step', 'last loss', 'tokens/s (last)'],
                 runs.map(r => [el('span', {}, el('i', { class: 'swatch', 'data-color': r.color }),
                                   el('a', { href: '#/job/' + r.job.id }, r.job.name)),
                                stateCell(r.job.state),
                                r.steps.length ? r.steps[r.steps.length - 1].step : '–',
                                fmtNum(last(r.steps, 'loss')),
                                fmtNum(last(r.steps, 'tokens_per_s'))]), { id: 'runs' })
         : el('p', { id: 'runs' }, 'Tick the runs to overlay.'),
       charts);
  if (runs.length) redraw();
  paintSwatches(main);
}

async function viewTenant(tenant) {
  const t = encodeURIComponent(tenant);
  const q = await api('/v1/tenants/' + t + '/quota');
  const u = await api('/v1/tenants/' + t + '/usage');
  const use = u.quota || {};
  const shown = v => v === undefined || v === null ? '–' : v;
  const hours = v => v === undefined || v === null ? '–' : v.toFixed(1);
  const storage = use.storage
    ? Object.entries(use.storage).map(([k, v]) => k + ' ' + fmtBytes(v)).join(', ') : '';
  show(el('h1', {}, 'Tenant ' + tenant),
       el('p', {}, el('a', { href: '#/jobs/' + t }, 'jobs'), ' · ',
          el('a', { href: '#/compare/' + t }, 'compare runs')),
       el('h2', {}, 'Quota'),
       table(['', 'limit', 'in use'],
             [['devices (max_gpus)', q.max_gpus,
               shown(use.devices_in_use) + (use.devices_borrowed
                 ? ' (' + use.devices_borrowed + ' borrowed)' : '')],
              ['devices it may borrow', q.borrow_gpus, shown(use.devices_borrowed)],
              ['running jobs', q.max_running_jobs, shown(use.running_jobs)],
              ['device-hours this month', q.gpu_hours_per_month, hours(use.gpu_hours_this_month)],
              ['storage', fmtBytes(q.max_storage_bytes),
               el('span', { title: storage }, fmtBytes(use.storage_bytes_used),
                  storage ? el('div', { class: 'note' }, storage) : null)]], { id: 'quota' }),
       el('h2', {}, 'Usage, last ' + u.days + ' days'),
       el('p', {}, u.jobs + ' jobs, ' + fmtSeconds(u.device_seconds) + ' of device time'),
       goodputBar(u));
}

/* ---- routing and sign-in ------------------------------------------------------------ */

/* A scripted sign-in: "#token=...&view=/job/ID[&poll=MS]", taken out of the address at once. */
function scriptedSignIn() {
  if (!location.hash.startsWith('#token=')) return;
  const params = new URLSearchParams(location.hash.slice(1));
  token = params.get('token');
  if (Number(params.get('poll')) >= 500) pollMs = Number(params.get('poll'));
  history.replaceState(null, '', location.pathname + '#' + (params.get('view') || '/'));
}

async function route() {
  scriptedSignIn();
  viewGen++;
  viewAbort.abort();
  viewAbort = new AbortController();
  document.body.removeAttribute('data-ready');
  const who = document.getElementById('who');
  if (!token) {
    who.textContent = '';
    document.getElementById('signout').hidden = true;
    const form = signinForm.cloneNode(true);
    show(form);
    form.addEventListener('submit', ev => {
      ev.preventDefault();
      token = form.querySelector('#token').value.trim() || null;
      route();
    });
    return;
  }
  document.getElementById('signout').hidden = false;
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  // a zoom belongs to the page it was made on (comparing more runs keeps it)
  if (parts.slice(0, 2).join('/') !== zoomedPage) settings.zoom = null;
  zoomedPage = parts.slice(0, 2).join('/');
  const gen = viewGen;
  try {
    const me = await api('/v1/whoami');
    who.textContent = me.user.name;
    if (parts[0] === 'jobs' && parts[1]) await viewJobs(parts[1]);
    else if (parts[0] === 'job' && parts[1]) await viewJob(parts[1]);
    else if (parts[0] === 'compare' && parts[1]) {
      await viewCompare(parts[1], (parts[2] || '').split(',').filter(Boolean));
    } else if (parts[0] === 'tenant' && parts[1]) await viewTenant(parts[1]);
    else await viewTenants();
  } catch (err) {
    if (gen !== viewGen || err.name === 'AbortError') return;
    if (err.status === 401) token = null;
    show(el('h1', {}, 'Not shown'),
         el('p', { class: 'error', id: 'error' },
            err.status === 404 ? 'No such thing, or none you may see (' + err.message + ').'
                               : 'The API answered ' + err.message + '.'));
  }
  if (gen === viewGen) document.body.setAttribute('data-ready', 'true');
}

document.getElementById('signout').addEventListener('click', () => {
  token = null;
  location.hash = '#/';
  route();
});

window.addEventListener('hashchange', route);
route();
