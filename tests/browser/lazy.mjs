#!/usr/bin/env node
// Headless-browser test of lazy frames (issue 9 item 2): a large ledger opens from
// GET /api/state?frames=none and the compact index of GET /api/frames?form=index, and whole frames
// come by pages around the head.
//
// Usage:
//   node tests/browser/lazy.mjs --url http://127.0.0.1:<port>/ [--screenshot <png>] [--timeout <ms>]
//
// Asserts, against a running viewer of a ledger of at least 20 000 frames (the SPA's lazy
// threshold):
//   - the page never asks for the whole snapshot (GET /api/state without ?frames=none) and never
//     for more than 200 000 index frames or 5 000 whole frames at once; it is in lazy mode, its
//     snapshot holds no frame, and it ends with every frame indexed (status line as in spa.mjs);
//   - End, Home and #frame= jumps land on the right frame: the readout names the frame's node and
//     status, and once the head's page is here its moved facets, exactly as GET /api/frames says;
//     the node classes at the head equal the states computed from the index alone;
//   - the timeline is virtualized, and its rows near the head carry their causes as tooltips;
//   - clicking the head node opens the inspector: its Receipt tab shows the frame's cause
//     (why.mjs), its Chain tab counts the node's frames;
//   - no console error, no failed request.
// Prints the time to the first drawn graph and to the complete index.
//
// Exit status: 0 when every assertion holds, 1 otherwise, 2 on a usage error.
// Environment: CHROMIUM_PATH (default /usr/bin/chromium). Loopback only.

import { launch } from './common.mjs';
import { checkWhy } from './why.mjs';

const USAGE = 'usage: node tests/browser/lazy.mjs --url http://127.0.0.1:<port>/ [--screenshot <png>] [--timeout <ms>]';
const STATUS = ['rendered', 'skipped', 'failed'];

function parseArgs(argv) {
  const out = { url: null, screenshot: null, timeout: 300000 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      if (i + 1 >= argv.length) usage(`missing value for ${a}`);
      return argv[++i];
    };
    if (a === '--url') out.url = val();
    else if (a === '--screenshot') out.screenshot = val();
    else if (a === '--timeout') out.timeout = Number(val());
    else usage(`unknown argument ${a}`);
  }
  if (!out.url) usage('--url is required');
  if (!Number.isFinite(out.timeout) || out.timeout <= 0) usage('--timeout must be a positive number');
  return out;
}

function usage(msg) {
  console.error(`lazy.mjs: ${msg}\n${USAGE}`);
  process.exit(2);
}

const opts = parseArgs(process.argv.slice(2));
const base = new URL(opts.url);
const failures = [];
let checks = 0;
const check = (cond, what) => {
  checks++;
  if (!cond) {
    failures.push(what);
    console.error(`FAIL ${what}`);
  }
  return !!cond;
};
const note = (m) => console.log(`lazy.mjs: ${m}`);
const watchdog = setTimeout(() => {
  console.error(`FAIL the run did not finish within ${opts.timeout} ms`);
  process.exit(1);
}, opts.timeout);

async function api(path) {
  const r = await fetch(new URL(path, base));
  const text = await r.text();
  let body = null;
  try {
    body = JSON.parse(text);
  } catch {
    body = null;
  }
  return { status: r.status, body };
}

const fmtK = (n) => {
  const dec = (x, u) => x.toFixed(1).replace(/\.0$/, '') + u;
  if (n >= 999500) return n / 1e6 >= 9.95 ? Math.round(n / 1e6) + 'M' : dec(n / 1e6, 'M');
  if (n >= 10000) return Math.round(n / 1000) + 'k';
  if (n >= 1000) return dec(n / 1000, 'k');
  return String(n);
};
const fmtCount = (n) => (n >= 10000 ? fmtK(n) : String(n));

/** The whole index, read independently of the page: per frame its node id and status. */
async function readIndex(total) {
  const node = [];
  const status = [];
  for (let from = 0; from < total; from += 200000) {
    const p = (await api(`/api/frames?form=index&from=${from}&count=200000`)).body;
    for (let k = 0; k < p.count; k++) {
      node.push(p.nodes[p.node[k]]);
      status.push(STATUS[p.code[k] % 3]);
    }
  }
  return { node, status };
}

async function main() {
  const head = await api('/api/state?frames=none');
  if (!check(head.status === 200 && head.body && typeof head.body.frameCount === 'number', `GET /api/state?frames=none answers with frameCount (got ${head.status})`)) return;
  const snap = head.body;
  const F = snap.frameCount;
  check(F >= 20000, `the ledger is large enough for lazy frames (${F} frames)`);
  const index = await readIndex(F);
  check(index.node.length === F, `the index covers every frame (${index.node.length} of ${F})`);
  note(`ledger: ${F} frames · ${snap.nodes.length} nodes · ${snap.edges.length} edges`);
  let browser;
  try {
    browser = await launch({ width: 1440, height: 900 });
  } catch (err) {
    check(false, err.message);
    return;
  }
  try {
    await run(browser.context, snap, F, index);
  } finally {
    await browser.close();
  }
}

async function run(context, snap, F, index) {
  const page = context.pages()[0] || (await context.newPage());
  const errors = [];
  const failed = [];
  const asked = [];
  let closing = false;
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(`page error: ${e && e.message ? e.message : e}`));
  page.on('request', (r) => asked.push(new URL(r.url())));
  page.on('requestfailed', (r) => {
    if (closing || (new URL(r.url()).pathname === '/events' && /ERR_ABORTED/.test(r.failure()?.errorText || ''))) return;
    failed.push(r.url());
  });
  page.on('response', (r) => r.status() >= 400 && failed.push(`${r.url()}: HTTP ${r.status()}`));

  const t0 = Date.now();
  await page.goto(new URL('/', base).href, { waitUntil: 'load' });
  await page.waitForFunction(() => document.querySelectorAll('#graph [data-node]').length > 0 || /^error/.test(document.getElementById('status-text')?.textContent || ''), null, { timeout: 120000 });
  const tDraw = Date.now() - t0;
  await page.waitForFunction(() => window.__REACTOR_VIEW__ && !window.__REACTOR_VIEW__.indexing, null, { timeout: 180000, polling: 100 });
  const tAll = Date.now() - t0;
  note(`graph drawn after ${tDraw} ms; every frame indexed after ${tAll} ms`);
  const view = await page.evaluate(() => ({ lazy: window.__REACTOR_VIEW__.lazy, frames: window.__REACTOR_VIEW__.frames, snapFrames: window.__REACTOR_SNAPSHOT__.frames.length }));
  check(view.lazy && view.frames === F && view.snapFrames === 0, `the page is in lazy mode with ${F} frames indexed and a snapshot without frames (got ${JSON.stringify(view)})`);
  const status = await page.textContent('#status-text');
  const expStatus = `${fmtCount(F)} receipts · ${fmtCount(snap.nodes.length)} nodes · ${fmtCount(snap.edges.length)} edges`;
  check(status === expStatus, `status text is "${expStatus}" (got "${status}")`);

  const readout = () => page.textContent('#readout');
  const jumpTo = async (x) => {
    await page.evaluate((h) => (location.hash = `frame=${h}`), x);
    await page.waitForFunction((h) => document.getElementById('readout').textContent.startsWith(`frame ${h}/`), x, { timeout: 10000 }).catch(() => {});
  };
  const nameOf = (id) => {
    const l = snap.labels && typeof snap.labels[id] === 'string' ? snap.labels[id] : '';
    if (l) return l;
    const i = id.indexOf('.');
    return i < 0 ? id : id.slice(i + 1);
  };
  const verifyAt = async (h, label) => {
    const r = await readout();
    check(r.startsWith(`frame ${h}/${F - 1} · ${nameOf(index.node[h])} · ${index.status[h]}`), `${label}: the readout names frame ${h} (got "${r}")`);
    const page1 = (await api(`/api/frames?from=${h}&count=1`)).body.frames[0];
    const moved = page1.movedFacets.length ? page1.movedFacets.join(', ') : '—';
    await page.waitForFunction((m) => document.getElementById('readout').textContent.endsWith(`moved [${m}]`), moved, { timeout: 10000 }).catch(() => {});
    check((await readout()).endsWith(`moved [${moved}]`), `${label}: once its page is here the readout lists frame ${h}'s moved facets [${moved}] (got "${await readout()}")`);
    const want = new Map();
    for (let i = 0; i <= h; i++) want.set(index.node[i], index.status[i]);
    const cls = await page.evaluate(() => {
      const o = {};
      for (const g of document.querySelectorAll('#graph [data-node]')) o[g.getAttribute('data-node')] = g.getAttribute('class') || '';
      return o;
    });
    const bad = [];
    for (const [id, c] of Object.entries(cls)) {
      const w = want.has(id) ? `state-${want.get(id)}` : 'state-untouched';
      if (!c.split(/\s+/).includes(w)) bad.push(`${id}: want ${w}`);
    }
    check(bad.length === 0, `${label}: node classes at frame ${h} match the index (${bad.slice(0, 3).join('; ') || 'all match'})`);
  };

  await page.keyboard.press('End');
  await verifyAt(F - 1, 'End');
  await page.keyboard.press('Home');
  check((await readout()) === `ready · frame —/${F}`, 'Home returns to the start');
  const mid = Math.floor(F * 0.61);
  await jumpTo(mid);
  await verifyAt(mid, `#frame=${mid}`);
  const t = Date.now();
  await page.keyboard.press('ArrowRight');
  await verifyAt(mid + 1, '→');
  note(`a step in the middle of the ledger, page included: ${Date.now() - t} ms`);
  const rows = await page.locator('#timeline [data-frame]').count();
  check(rows > 0 && rows < 300, `the timeline is virtualized (${rows} row elements)`);

  // Inspector on a rendered frame near the middle: the cause, and the node's chain.
  let pick = mid + 1;
  while (pick < F - 1 && index.status[pick] !== 'rendered') pick++;
  await jumpTo(pick);
  const node = index.node[pick];
  await page.locator(`#graph [data-node="${node.replace(/"/g, '\\"')}"] .box`).click();
  await page.waitForFunction(() => !document.getElementById('inspector').classList.contains('closed'), null, { timeout: 5000 }).catch(() => {});
  await checkWhy(page, api, pick, check, 'lazy: ');
  await page.click('.insp-tabs [data-tab="chain"]');
  const count = index.node.filter((n) => n === node).length;
  const chainHead = (await page.textContent('#insp-body .verdict')) || '';
  check(chainHead.startsWith(`${count} receipt`), `the Chain tab counts ${node}'s ${count} frames (got "${chainHead}")`);
  await page.click('.insp-tabs [data-tab="receipt"]');
  if (opts.screenshot) {
    await page.waitForTimeout(500);
    await page.screenshot({ path: opts.screenshot });
    note(`screenshot written to ${opts.screenshot}`);
  }
  await page.keyboard.press('Escape');

  // What the page asked for.
  const stateFull = asked.filter((u) => u.pathname === '/api/state' && u.searchParams.get('frames') !== 'none');
  check(stateFull.length === 0, `the page never asks for the whole snapshot (${stateFull.length} requests)`);
  const frames = asked.filter((u) => u.pathname === '/api/frames');
  const big = frames.filter((u) => Number(u.searchParams.get('count')) > (u.searchParams.get('form') === 'index' ? 200000 : 5000));
  check(frames.length > 0 && big.length === 0, `frames come by bounded pages (${frames.length} requests, ${big.length} too large)`);
  note(`requests: ${frames.filter((u) => u.searchParams.get('form') === 'index').length} index pages, ${frames.filter((u) => u.searchParams.get('form') !== 'index').length} whole-frame pages`);
  await page.waitForTimeout(200);
  closing = true;
  check(errors.length === 0, `no console errors${errors.length ? `: ${errors.slice(0, 5).join(' | ')}` : ''}`);
  check(failed.length === 0, `no failed requests${failed.length ? `: ${failed.slice(0, 5).join(' | ')}` : ''}`);
}

main()
  .catch((err) => check(false, `unexpected error: ${err && err.stack ? err.stack : err}`))
  .finally(() => {
    clearTimeout(watchdog);
    if (failures.length) {
      console.error(`lazy.mjs: ${failures.length} of ${checks} checks failed`);
      process.exit(1);
    }
    console.log(`lazy.mjs: all ${checks} checks passed`);
    process.exit(0);
  });
