// tests/js/webview.mjs - the web view's interactive parts in Debian's
// Chromium, driven by Playwright (tests/integration/webview.sh seeds the
// jobs and runs this). A running job's page: its curves (loss with the
// validation loss, throughput smoothed over its raw values, learning
// rate, gradient norm, loss scale) with axis ticks, a log scale, values
// under the pointer, a zoom dragged across a chart (and undone) and the
// alert's marker; its checkpoints, its config,
// its log as text; then, with the page open, new steps and log lines
// reported (WV_MORE, a command) appear without a reload. Two runs of the
// tenant ticked on the jobs page and compared, overlaid.
//
// Each check prints "ok - DESC" or "not ok - DESC" with "#" lines after,
// as tests/integration/lib.sh does; the last line is "checks N", which
// the shell script compares with the number it counted.
//
// Environment: WV_URL, WV_TOKEN (a viewer's), WV_TENANT, WV_JOB, WV_JOB2,
// WV_NAME, WV_NAME2, WV_MORE, WV_SHOTS (a folder for screenshots),
// WV_CHROMIUM.
import { execSync } from 'node:child_process';
import { chromium } from 'playwright-core';

const env = name => {
  if (!process.env[name]) throw new Error(name + ' is not set');
  return process.env[name];
};
const URL = env('WV_URL'), TOKEN = env('WV_TOKEN'), TENANT = env('WV_TENANT');
const JOB = env('WV_JOB'), JOB2 = env('WV_JOB2'), NAME = env('WV_NAME'), NAME2 = env('WV_NAME2');
const SHOTS = env('WV_SHOTS');

let count = 0;
function report(desc, pass, ...detail) {
  count++;
  console.log((pass ? 'ok - ' : 'not ok - ') + desc);
  if (!pass) {
    // Playwright's messages carry terminal colours
    for (const d of detail) console.log(String(d).replace(/\x1b\[[0-9;]*m/g, '').replace(/^/gm, '#   '));
  }
}
const eq = (desc, want, got) => report(desc, want === got, 'expected: ' + want, 'got:      ' + got);
const match = (desc, re, got) => report(desc, re.test(got), 'expected to match: ' + re,
                                        'got: ' + got);

/* Wait until fn() in the page is true; false after `ms`. */
async function until(page, fn, arg, ms) {
  try {
    await page.waitForFunction(fn, arg, { timeout: ms, polling: 200 });
    return true;
  } catch (e) {
    return false;
  }
}

/* The y coordinates' spread of a polyline's points. */
function spread(points) {
  const ys = points.trim().split(/\s+/).map(p => Number(p.split(',')[1]));
  return Math.max(...ys) - Math.min(...ys);
}

const browser = await chromium.launch({
  executablePath: process.env.WV_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic']
});
try {
  const context = await browser.newContext({ ignoreHTTPSErrors: true,
                                             viewport: { width: 1200, height: 900 } });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', e => errors.push(e.message));
  // failed answers, but for the icon browsers ask for by themselves
  page.on('response', r => {
    if (r.status() >= 400 && !r.url().endsWith('/favicon.ico')) {
      errors.push(r.status() + ' ' + r.url().replace(/token=[^&]*/, 'token=...'));
    }
  });
  // a new address within the page is no new page: its ready mark is taken off first
  const open = async view => {
    await page.evaluate(() => document.body.removeAttribute('data-ready')).catch(() => null);
    await page.goto(URL + '/ui#token=' + TOKEN + '&poll=1000&view=' + view);
  };
  const ready = () => until(page, () => document.body.dataset.ready === 'true', null, 20000);
  const attr = (sel, name) => page.$eval(sel, (e, n) => e.getAttribute(n), name)
                                  .catch(e => 'missing: ' + sel);
  const smoothing = v => page.$eval('#smoothing', (e, x) => {
    e.value = x;
    e.dispatchEvent(new Event('input'));
  }, v);
  const text = sel => page.$eval(sel, e => e.textContent).catch(e => 'missing: ' + sel);

  // ---- a running job's page --------------------------------------------------------
  await open('/job/' + JOB);
  report('the job page is drawn', await ready());
  eq('the loss curve: 31 steps and 3 validation losses', '34 2',
     (await attr('#loss', 'data-points')) + ' ' + (await attr('#loss', 'data-series')));
  for (const id of ['throughput', 'lr', 'grad_norm', 'loss_scale']) {
    eq('the ' + id + ' curve, one point a step', '31', await attr('#' + id, 'data-points'));
  }
  const ticks = await page.$$eval('#loss g.axes text', ts => ts.map(t => t.textContent));
  report('with ticks on both axes', ticks.length >= 6 && ticks.includes('step'), ticks.join(' | '));
  const tps = await page.$$eval('#throughput polyline', ps => ps.map(p => ({
    cls: p.getAttribute('class'), points: p.getAttribute('points') })));
  const raw = tps.find(p => p.cls === 'raw'), line = tps.find(p => p.cls === 'line');
  report('throughput drawn smoothed over its raw values', raw && line &&
         spread(line.points) < spread(raw.points) / 2, JSON.stringify(tps).slice(0, 400));
  const yTicks = () => page.$$eval('#throughput text.y', ts => ts.map(t => t.textContent));
  const linTicks = await yTicks();
  await page.click('figure:has(#throughput) input[type=checkbox]');
  const logTicks = await yTicks();
  match('a log scale on demand', /\(log\)/, await text('#throughput text.title'));
  report('with 1, 2 or 5 times powers of ten on its axis', logTicks.length >= 2 &&
         logTicks.every(t => /^[125]0*$/.test(t.replace(/,/g, ''))) &&
         logTicks.join() !== linTicks.join(), logTicks.join(' | '), 'linear: ' + linTicks.join(' | '));
  await smoothing(0);
  eq('no smoothing: one line a series, no raw line under it', 0,
     (await page.$$('#throughput polyline.raw')).length);
  const box = await page.$eval('#loss', e => { const r = e.getBoundingClientRect();
                                              return { x: r.x, y: r.y, w: r.width, h: r.height }; });
  await page.mouse.move(box.x + box.w * 0.6, box.y + box.h / 2);
  match('the pointer over a chart shows the step and value', /^step \d+ \| loss: [0-9.]+/,
        (await page.$$eval('#loss g.hover text', ts => ts.map(t => t.textContent))).join(' | '));
  eq('the loss spike alert is marked on the curve at step 31', 1,
     (await page.$$('#loss line.marker[data-step="31"]')).length);
  match('and listed', /loss_spike/, await text('#alerts'));
  match('the MFU says why it is unknown', /unknown.*TRAINYARD_DEVICE_PEAK_GFLOPS/,
        await text('#part-cards'));
  match('the checkpoints: step 30, 4 KiB', /30\s*4 KiB\s*1\s*1/,
        await page.$$eval('#checkpoints tbody tr', rs => rs.map(r => [...r.cells]
          .map(c => c.textContent).join(' ')).join('\n')).catch(e => 'missing'));
  let spec = null;
  try { spec = JSON.parse(await text('#config')); } catch (e) { spec = null; }
  eq('the config: the job\'s spec, as JSON', NAME + ' 30',
     spec ? spec.name + ' ' + spec.training.steps : 'not JSON: ' + (await text('#config')));
  match('pretty-printed', /\n {2}"name"/, await text('#config'));
  report('the log is followed', await until(page, () => /^step 31 {2}/m.test(
    document.getElementById('log').textContent), null, 10000), await text('#log'));
  const log = await text('#log');
  match('as text: a step record becomes a line of names and values',
        /^step 1 {2}loss 5 {2}lr 1\.00e-4 {2}grad_norm 1\.1 {2}tokens_per_s 10,000 {2}loss_scale 65,536/m,
        log);
  match('an event record too', /^event checkpoint {2}step 30/m, log);
  match('the runtime\'s own lines as they are', /^trainyard-worker: started/m, log);
  eq('no raw JSON records', null, log.match(/^\{/m));
  await page.check('#log-raw');
  match('the raw records on demand', /^\{"type":"step","step":1,/m, await text('#log'));
  await page.uncheck('#log-raw');
  await smoothing(0.6);

  // zoom: a drag across the loss chart (steps 1-31) from step 10 to step 20
  // (the chart scrolled into view: the mouse acts where the page shows)
  const at = async (id, step) => {
    const r = await page.$eval('#' + id, e => { e.scrollIntoView({ block: 'center' });
                                                const b = e.getBoundingClientRect();
                                                return { x: b.x, y: b.y, w: b.width, h: b.height }; });
    return { x: r.x + (58 + (step - 1) / 30 * (560 - 58 - 14)) * r.w / 560, y: r.y + r.h / 2 };
  };
  const from = await at('loss', 10), to = await at('loss', 20);
  await page.mouse.move(from.x, from.y);
  await page.mouse.down();
  await page.mouse.move(to.x, to.y, { steps: 5 });
  eq('dragging across a chart marks the steps it covers', 1,
     (await page.$$('#loss g.hover rect.selection')).length);
  await page.mouse.up();
  eq('and zooms every chart to them', '10-20 10-20 10-20',
     [await attr('#loss', 'data-zoom'), await attr('#throughput', 'data-zoom'),
      await attr('#lr', 'data-zoom')].join(' '));
  eq('each showing those steps alone', '11 11', (await attr('#throughput', 'data-points')) + ' ' +
     (await attr('#grad_norm', 'data-points')));
  const xTicks = await page.$$eval('#throughput text.x', ts => ts.map(t => Number(t.textContent)));
  report('its step axis spans them', xTicks.length >= 2 && Math.min(...xTicks) >= 10 &&
         Math.max(...xTicks) <= 20, xTicks.join(' | '));
  match('a button shows all steps again', /zoomed to 10-20/, await text('#unzoom'));
  await page.dblclick('#throughput');
  eq('a double click does', '31 missing', (await attr('#throughput', 'data-points')) + ' ' +
     ((await attr('#loss', 'data-zoom')) === null ? 'missing' : 'still zoomed'));
  await page.mouse.move(from.x, from.y);
  await page.mouse.down();
  await page.mouse.move(to.x, to.y, { steps: 5 });
  await page.mouse.up();
  await page.click('#unzoom');
  eq('and so does the button', '31 true', (await attr('#lr', 'data-points')) + ' ' +
     await page.$eval('#unzoom', e => e.hidden));
  await page.mouse.move(0, 0);

  // ---- new steps and lines while the page is open ------------------------------------
  await page.evaluate(() => { window.notReloaded = true; });
  execSync(env('WV_MORE'), { stdio: ['ignore', 'ignore', 'inherit'] });
  report('new steps appear without a reload', await until(page,
    () => document.getElementById('loss').getAttribute('data-points') === '44', null, 20000),
    'loss points: ' + await attr('#loss', 'data-points'));
  match('the last step card follows', /last step\s*40/, await text('#part-cards'));
  report('new log lines too', await until(page, () => /^step 40 {2}loss/m.test(
    document.getElementById('log').textContent), null, 20000), await text('#log'));
  eq('the page was never reloaded', true, await page.evaluate(() => window.notReloaded === true));
  await page.mouse.move(0, 0);
  await page.screenshot({ path: SHOTS + '/webview-job.png', fullPage: true });

  // ---- two runs compared -------------------------------------------------------------
  await open('/jobs/' + TENANT);
  report('the jobs page is drawn', await ready());
  await page.check(`input.pick[value="${JOB}"]`);
  await page.check(`input.pick[value="${JOB2}"]`);
  await page.click('#compare');
  report('the compare page is drawn', await until(page,
    () => location.hash.startsWith('#/compare/') && document.body.dataset.ready === 'true' &&
          document.getElementById('loss'), null, 20000));
  match('both runs are in the address', new RegExp(JOB + ',' + JOB2 + '|' + JOB2 + ',' + JOB),
        await page.evaluate(() => location.hash));
  const names = await page.$$eval('#loss polyline.line', ps => ps.map(p => p.dataset.name));
  report('their loss curves overlaid', names.includes(NAME) && names.includes(NAME2),
         names.join(', '));
  const colors = await page.$$eval('#loss polyline.line', ps => ps.map(p =>
    p.getAttribute('stroke')));
  report('in colours of their own', new Set(colors.slice(0, 2)).size === 2, colors.join(' '));
  eq('each with its points', '40 30', await page.$$eval('#throughput polyline.line',
    (ps, n) => [n[0], n[1]].map(name => {
      const p = ps.find(q => q.dataset.name === name);
      return p ? p.getAttribute('points').trim().split(/\s+/).length : 0;
    }).join(' '), [NAME, NAME2]));
  match('and a table of the runs', new RegExp(NAME + '[\\s\\S]*' + NAME2 + '|' + NAME2 +
        '[\\s\\S]*' + NAME), await text('#runs'));
  await page.screenshot({ path: SHOTS + '/webview-compare.png', fullPage: true });
  await page.uncheck(`input.pick[value="${JOB2}"]`);
  report('unticking a run takes it off the charts', await until(page, n => {
    const ls = [...document.querySelectorAll('#loss polyline.line')];
    return ls.length > 0 && !ls.some(p => p.dataset.name === n);
  }, NAME2, 20000));
  eq('no script errors, no failed requests', '', errors.join('\n'));
} catch (e) {
  report('the browser session', false, e.stack || e);
} finally {
  await browser.close();
}
console.log('checks ' + count);
