/*
 * app.js - trainyard's web view: the jobs of a tenant with their state,
 * queue position, reason and estimated start; a job with its loss and
 * throughput curves, goodput, events and log tail; a tenant's quota and
 * usage. It only reads the API, as the signed-in user, with the token held
 * in this script's memory (never in storage, a cookie or the address bar:
 * a token given as "#token=..." for a scripted sign-in is taken out of the
 * address at once). Every piece of data goes into the page as text, never
 * as markup. Charts are plain SVG drawn here.
 */
'use strict';

let token = null;
const main = document.getElementById('main');
const signinForm = document.getElementById('signin').cloneNode(true);

/* ---- the API --------------------------------------------------------------- */

async function api(path, asText) {
  const r = await fetch(path, { headers: { Authorization: 'Bearer ' + token } });
  if (!r.ok) {
    let code = 'http_' + r.status;
    try { code = (await r.json()).code || code; } catch (e) { /* not a problem body */ }
    const err = new Error(code);
    err.status = r.status;
    throw err;
  }
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

/* ---- building the page ------------------------------------------------------- */

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== null && v !== undefined) e.setAttribute(k, v);
  }
  for (const k of kids.flat()) {
    if (k === null || k === undefined) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}

function table(cols, rows) {
  return el('table', {},
    el('thead', {}, el('tr', {}, cols.map(c => el('th', {}, c)))),
    el('tbody', {}, rows.map(r => el('tr', {}, r.map(c => el('td', {}, c))))));
}

function show(...kids) {
  main.replaceChildren(...kids.flat());
}

function fmtSeconds(s) {
  if (s === null || s === undefined) return '–';
  if (s < 120) return s.toFixed(1) + ' s';
  if (s < 7200) return (s / 60).toFixed(1) + ' min';
  return (s / 3600).toFixed(2) + ' h';
}

function stateCell(state) {
  return el('span', { class: 'state state-' + state }, state);
}

const SVG = 'http://www.w3.org/2000/svg';
function svg(tag, attrs, ...kids) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}

/* A line chart of [x, y] points, with its extremes written on the axes. */
function chart(id, title, points) {
  const W = 600, H = 200, P = 36;
  const box = svg('svg', { class: 'chart', id, viewBox: `0 0 ${W} ${H}`, role: 'img',
                           'aria-label': title, 'data-points': points.length });
  box.append(svg('text', { x: P, y: 14 }, title));
  if (points.length === 0) {
    box.append(svg('text', { x: W / 2 - 40, y: H / 2 }, 'no data yet'));
    return box;
  }
  const xs = points.map(p => p[0]), ys = points.map(p => p[1]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs), y0 = Math.min(...ys), y1 = Math.max(...ys);
  const sx = x => P + (x1 > x0 ? (x - x0) / (x1 - x0) : 0.5) * (W - 2 * P);
  const sy = y => H - P + (y1 > y0 ? -(y - y0) / (y1 - y0) : -0.5) * (H - 2 * P - 10);
  box.append(svg('polyline', { points: points.map(p => sx(p[0]) + ',' + sy(p[1])).join(' ') }));
  box.append(svg('text', { x: 2, y: sy(y1) + 4 }, y1.toPrecision(4)));
  box.append(svg('text', { x: 2, y: sy(y0) + 4 }, y0.toPrecision(4)));
  box.append(svg('text', { x: sx(x0), y: H - 8 }, 'step ' + x0));
  box.append(svg('text', { x: sx(x1) - 50, y: H - 8 }, 'step ' + x1));
  return box;
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

/* ---- the views ------------------------------------------------------------------ */

async function viewTenants() {
  const t = await api('/v1/tenants');
  show(el('h1', {}, 'Tenants'),
       table(['tenant', '', ''], (t.items || []).map(x => [
         x.name,
         el('a', { href: '#/jobs/' + encodeURIComponent(x.name) }, 'jobs'),
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
    rows.push([el('a', { href: '#/job/' + j.id, class: 'job' }, j.name), stateCell(j.state),
               position, j.state_reason || '', eta, j.created_at]);
  }
  show(el('h1', {}, 'Jobs of ' + tenant),
       el('p', {}, el('a', { href: '#/tenant/' + encodeURIComponent(tenant) }, 'quota and usage')),
       table(['job', 'state', 'queue position', 'reason', 'estimated start', 'submitted'], rows));
}

async function viewJob(id) {
  const job = await api('/v1/jobs/' + id);
  let steps = [], after = 0;
  for (let i = 0; i < 100; i++) {
    const page = await api('/v1/jobs/' + id + '/metrics?after=' + after);
    if (!page.items.length) break;
    steps = steps.concat(page.items);
    after = page.items[page.items.length - 1].step;
  }
  const events = await all('/v1/jobs/' + id + '/events');
  const g = await api('/v1/jobs/' + id + '/goodput');
  let log = '';
  try {
    const text = await api('/v1/jobs/' + id + '/logs', true);
    log = text.split('\n').slice(-40).join('\n');
  } catch (err) { log = '(no log: ' + err.message + ')'; }
  const loss = steps.filter(s => typeof s.data.loss === 'number').map(s => [s.step, s.data.loss]);
  const tps = steps.filter(s => typeof s.data.tokens_per_s === 'number')
                   .map(s => [s.step, s.data.tokens_per_s]);
  show(el('h1', {}, job.name),
       el('div', { class: 'cards' },
          el('div', { class: 'card' }, 'state', el('div', { class: 'v' }, stateCell(job.state))),
          el('div', { class: 'card' }, 'attempts', el('div', { class: 'v' }, job.attempts)),
          el('div', { class: 'card' }, 'steps kept / lost',
             el('div', { class: 'v' }, g.steps.kept + ' / ' + g.steps.lost)),
          el('div', { class: 'card' }, 'goodput',
             el('div', { class: 'v' }, g.goodput_fraction === null ? '–'
                                        : (100 * g.goodput_fraction).toFixed(1) + ' %')),
          el('div', { class: 'card' }, 'tokens/s',
             el('div', { class: 'v' }, g.tokens_per_s === null ? '–' : Math.round(g.tokens_per_s)))),
       el('p', {}, job.state_reason || ''),
       el('h2', {}, 'Loss'), chart('loss', 'loss by step', loss),
       el('h2', {}, 'Throughput'), chart('throughput', 'tokens/s by step', tps),
       el('h2', {}, 'Where the time went'), goodputBar(g),
       el('h2', {}, 'Attempts'),
       table(['attempt', 'ended with', 'devices', 'started', 'ended', 'steps reported'],
             g.attempt_list.map(a => [a.number,
                                      el('span', { class: 'class' },
                                         a.failure_class || (a.ended_at ? 'ok' : 'running')),
                                      a.devices, a.started_at || '–', a.ended_at || '–',
                                      a.steps])),
       el('h2', {}, 'Events'),
       table(['at', 'from', 'to', 'reason'],
             events.map(e => [e.at, e.from_state || '', e.to_state, e.reason])),
       el('h2', {}, 'Log (the last lines)'), el('pre', { class: 'log' }, log));
}

async function viewTenant(tenant) {
  const t = encodeURIComponent(tenant);
  const q = await api('/v1/tenants/' + t + '/quota');
  const u = await api('/v1/tenants/' + t + '/usage');
  show(el('h1', {}, 'Tenant ' + tenant),
       el('p', {}, el('a', { href: '#/jobs/' + t }, 'jobs')),
       el('h2', {}, 'Quota'),
       table(['', 'limit', 'in use'],
             [['devices (max_gpus)', q.max_gpus, u.quota ? u.quota.devices_in_use : '–'],
              ['running jobs', q.max_running_jobs, ''],
              ['device-hours a month', q.gpu_hours_per_month, ''],
              ['storage bytes', q.max_storage_bytes,
               u.quota ? u.quota.storage_bytes_used : '–']]),
       el('h2', {}, 'Usage, last ' + u.days + ' days'),
       el('p', {}, u.jobs + ' jobs, ' + fmtSeconds(u.device_seconds) + ' of device time'),
       goodputBar(u));
}

/* ---- routing and sign-in ------------------------------------------------------------ */

async function route() {
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
  try {
    const me = await api('/v1/whoami');
    who.textContent = me.user.name;
    if (parts[0] === 'jobs' && parts[1]) await viewJobs(parts[1]);
    else if (parts[0] === 'job' && parts[1]) await viewJob(parts[1]);
    else if (parts[0] === 'tenant' && parts[1]) await viewTenant(parts[1]);
    else await viewTenants();
  } catch (err) {
    if (err.status === 401) token = null;
    show(el('h1', {}, 'Not shown'),
         el('p', { class: 'error', id: 'error' },
            err.status === 404 ? 'No such thing, or none you may see (' + err.message + ').'
                               : 'The API answered ' + err.message + '.'));
  }
  document.body.setAttribute('data-ready', 'true');
}

document.getElementById('signout').addEventListener('click', () => {
  token = null;
  location.hash = '#/';
  route();
});
window.addEventListener('hashchange', route);

/* A scripted sign-in: "#token=...&view=/job/ID", taken out of the address at once. */
if (location.hash.startsWith('#token=')) {
  const params = new URLSearchParams(location.hash.slice(1));
  token = params.get('token');
  history.replaceState(null, '', location.pathname + '#' + (params.get('view') || '/'));
}
route();
