#!/usr/bin/env node
// Headless-browser test of the reactor-devtools single-page app (VIEWER.md §8).
//
// Usage:
//   node tests/browser/spa.mjs --url http://127.0.0.1:<port>/ [--screenshot <png path>] [--scale]
//                              [--timeout <ms>]
//
// Drives Debian's chromium through playwright-core against a running viewer (whatever state
// directory it replays) and asserts:
//   - every node of GET /api/state is drawn (`[data-node]`), every edge too (`[data-edge]`);
//   - the status line, chain badge and readout match the snapshot;
//   - stepping (→ key and the ▶| button) changes node states, and the node classes at a frame equal
//     the states computed independently from the snapshot (untouched / latest status, `hit` on head);
//   - clicking a node opens the inspector; its Receipt tab shows the receipt of GET /api/receipt/<i>;
//     the Chain tab lists the node's frames; the World-model tab loads without an error;
//   - a timeline row click and `#frame=` jump; play advances;
//   - no console error, no page error, no failed request (HTTP ≥ 400 counts as failed, except a 404
//     from /api/node/, which means "no stored version" and is a legitimate answer).
// With --scale: the timeline is virtualized (few row elements for many frames) and jumps stay fast.
//
// Exit status: 0 when every assertion holds; 1 when any fails (each failure printed on stderr,
// prefixed `FAIL`) or the browser cannot be driven; 2 on a usage error.
//
// Environment: CHROMIUM_PATH (default /usr/bin/chromium). Loopback only; no network.

import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const USAGE = 'usage: node tests/browser/spa.mjs --url http://127.0.0.1:<port>/ [--screenshot <png>] [--scale] [--timeout <ms>]';

function parseArgs(argv) {
  const out = { url: null, screenshot: null, scale: false, timeout: 120000 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      if (i + 1 >= argv.length) usage(`missing value for ${a}`);
      return argv[++i];
    };
    if (a === '--url') out.url = val();
    else if (a === '--screenshot') out.screenshot = val();
    else if (a === '--scale') out.scale = true;
    else if (a === '--timeout') {
      out.timeout = Number(val());
      if (!Number.isFinite(out.timeout) || out.timeout <= 0) usage('--timeout must be a positive number of milliseconds');
    } else if (a === '-h' || a === '--help') {
      console.log(USAGE);
      process.exit(0);
    } else usage(`unknown argument ${a}`);
  }
  if (!out.url) usage('--url is required');
  try {
    const u = new URL(out.url);
    if (u.protocol !== 'http:') usage('--url must be an http:// URL');
  } catch {
    usage(`--url is not a URL: ${out.url}`);
  }
  return out;
}

function usage(msg) {
  console.error(`spa.mjs: ${msg}\n${USAGE}`);
  process.exit(2);
}

const opts = parseArgs(process.argv.slice(2));
const base = new URL(opts.url);
const failures = [];
let checks = 0;

function check(cond, what) {
  checks++;
  if (!cond) {
    failures.push(what);
    console.error(`FAIL ${what}`);
  }
  return !!cond;
}

function note(msg) {
  console.log(`spa.mjs: ${msg}`);
}

async function getJSON(path) {
  const r = await fetch(new URL(path, base), { headers: { accept: 'application/json' } });
  const text = await r.text();
  let body = null;
  try {
    body = JSON.parse(text);
  } catch {
    body = null;
  }
  return { status: r.status, body };
}

function shortName(id) {
  const i = id.indexOf('.');
  return i < 0 ? id : id.slice(i + 1);
}

function nameOf(snap, id) {
  const l = snap.labels && typeof snap.labels[id] === 'string' ? snap.labels[id] : '';
  return l || shortName(id);
}

/** Expected per-node state class at head `h`, computed from the snapshot alone (VIEWER.md §8.4). */
function expectedStates(snap, h) {
  const st = new Map();
  for (let i = 0; i <= h; i++) st.set(snap.frames[i].node, snap.frames[i].status);
  return st;
}

const watchdog = setTimeout(() => {
  console.error(`FAIL the run did not finish within ${opts.timeout} ms`);
  process.exit(1);
}, opts.timeout);

async function main() {
  // The server's own view, fetched independently of the page.
  let state;
  try {
    state = await getJSON('/api/state');
  } catch (err) {
    const why = err && err.cause && err.cause.code ? err.cause.code : err && err.message ? err.message : String(err);
    check(false, `the viewer answers at ${new URL('/api/state', base).href} (${why})`);
    return;
  }
  if (!check(state.status === 200 && state.body && Array.isArray(state.body.frames), `GET /api/state answers 200 with a snapshot (got ${state.status})`)) return;
  const snap = state.body;
  const F = snap.frames.length;
  note(`snapshot: ${F} frames · ${snap.nodes.length} nodes · ${snap.edges.length} edges`);

  const executablePath = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
  const userDataDir = mkdtempSync(join(tmpdir(), 'reactor-spa-'));
  let context;
  try {
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      viewport: { width: 1440, height: 900 },
    });
  } catch (err) {
    rmSync(userDataDir, { recursive: true, force: true });
    check(false, `launch chromium at ${executablePath}: ${err && err.message ? err.message.split('\n')[0] : err}`);
    return;
  }
  try {
    await run(context, snap, F);
  } finally {
    await context.close().catch(() => {});
    rmSync(userDataDir, { recursive: true, force: true });
  }
}

async function run(context, snap, F) {
  const page = context.pages()[0] || (await context.newPage());
  const consoleErrors = [];
  const failedRequests = [];
  let closing = false;
  page.on('console', (msg) => {
    if (msg.type() !== 'error') return;
    const loc = msg.location() || {};
    const text = msg.text();
    // A 404 from the world-model route is a legitimate answer ("no stored version"); Chromium logs it.
    if (/Failed to load resource/.test(text) && /\/api\/node\//.test(loc.url || '')) return;
    consoleErrors.push(`${text}${loc.url ? ` (${loc.url})` : ''}`);
  });
  page.on('pageerror', (err) => consoleErrors.push(`page error: ${err && err.message ? err.message : err}`));
  page.on('requestfailed', (req) => {
    if (closing) return;
    const f = req.failure();
    const u = new URL(req.url());
    // The event stream is cut when the page goes away; that is not a failure of the page.
    if (u.pathname === '/events' && f && /ERR_ABORTED/.test(f.errorText)) return;
    failedRequests.push(`${req.method()} ${req.url()}: ${f ? f.errorText : 'failed'}`);
  });
  const foreign = [];
  page.on('request', (req) => {
    const u = req.url();
    if (u.startsWith('data:')) return;
    if (new URL(u).origin !== base.origin) foreign.push(u);
  });
  page.on('response', (res) => {
    const u = new URL(res.url());
    if (res.status() < 400) return;
    if (res.status() === 404 && u.pathname.startsWith('/api/node/')) return;
    failedRequests.push(`${res.request().method()} ${res.url()}: HTTP ${res.status()}`);
  });

  const t0 = Date.now();
  await page.goto(new URL('/', base).href, { waitUntil: 'load' });
  await page.waitForFunction(() => !!window.__REACTOR_SNAPSHOT__ || /^error/.test(document.getElementById('status-text')?.textContent || ''), null, { timeout: 60000 });
  note(`loaded in ${Date.now() - t0} ms`);

  const status = await page.textContent('#status-text');
  check(!/^error/.test(status), `status text is not an error (got "${status}")`);
  check((await page.title()) === 'Reactor DevTools', 'page title is "Reactor DevTools"');
  let expStatus = `${F} receipts · ${snap.nodes.length} nodes · ${snap.edges.length} edges`;
  if (!snap.hasTopology) expStatus += ' · no saved topology (node-only fallback)';
  check(status === expStatus, `status text is "${expStatus}" (got "${status}")`);

  const pageSnap = await page.evaluate(() => {
    const s = window.__REACTOR_SNAPSHOT__;
    return s ? { frames: s.frames.length, nodes: s.nodes.map((n) => n.id) } : null;
  });
  check(pageSnap && pageSnap.frames === F, `window.__REACTOR_SNAPSHOT__ holds the ${F} frames of /api/state (got ${pageSnap && pageSnap.frames})`);

  // Every topology node and edge drawn.
  const drawn = await page.evaluate(() => ({
    nodes: Array.from(document.querySelectorAll('#graph-svg [data-node]'), (g) => g.getAttribute('data-node')),
    edges: Array.from(document.querySelectorAll('#graph-svg [data-edge]'), (g) => g.getAttribute('data-edge')),
  }));
  const drawnNodes = new Set(drawn.nodes);
  const missing = snap.nodes.map((n) => n.id).filter((id) => !drawnNodes.has(id));
  check(missing.length === 0, `every snapshot node is drawn as [data-node] (missing: ${missing.join(', ') || 'none'})`);
  check(drawn.nodes.length === drawnNodes.size, 'no node is drawn twice');
  for (const f of snap.frames.slice(0, 2000)) {
    if (!drawnNodes.has(f.node)) {
      check(false, `frame ${f.index}'s node ${f.node} is drawn`);
      break;
    }
  }
  const drawnEdges = new Set(drawn.edges);
  const missingEdges = snap.edges.map((e) => `${e.producer}→${e.subscriber}::${e.facet}`).filter((k) => !drawnEdges.has(k));
  check(missingEdges.length === 0, `every snapshot edge is drawn as [data-edge] (missing: ${missingEdges.slice(0, 5).join(', ') || 'none'})`);

  const cv = snap.chainVerify;
  if (cv && typeof cv === 'object') {
    const badge = (await page.textContent('#chain-badge')).trim();
    check(badge === (cv.ok ? 'chain ✓ verified' : 'chain ✗ TAMPERED'), `chain badge reads per chainVerify.ok=${cv.ok} (got "${badge}")`);
  }

  const readout = () => page.textContent('#readout');
  const classesOf = () =>
    page.evaluate(() => {
      const o = {};
      for (const g of document.querySelectorAll('#graph-svg [data-node]')) o[g.getAttribute('data-node')] = g.getAttribute('class') || '';
      return o;
    });
  const verifyStates = async (h, label) => {
    const cls = await classesOf();
    const exp = expectedStates(snap, h);
    const bad = [];
    for (const [id, c] of Object.entries(cls)) {
      const want = exp.has(id) ? `state-${exp.get(id)}` : 'state-untouched';
      const words = c.split(/\s+/);
      if (!words.includes(want)) bad.push(`${id}: want ${want}, have "${c}"`);
      const isHead = h >= 0 && snap.frames[h].node === id;
      if (words.includes('hit') !== isHead) bad.push(`${id}: ${isHead ? 'missing' : 'unexpected'} hit`);
    }
    check(bad.length === 0, `${label}: node classes match the snapshot at frame ${h}${bad.length ? ` — ${bad.slice(0, 4).join('; ')}` : ''}`);
    return cls;
  };

  check((await readout()) === `ready · frame —/${F}`, `readout at −1 is "ready · frame —/${F}" (got "${await readout()}")`);
  const initial = await verifyStates(-1, 'at load');

  if (F === 0) {
    note('skipped: stepping, inspector and timeline checks — the ledger has no receipt');
  } else {
    // → key: frame 0
    await page.evaluate(() => document.activeElement && document.activeElement.blur && document.activeElement.blur());
    await page.keyboard.press('ArrowRight');
    const r0 = await readout();
    check(r0.startsWith(`frame 0/${F - 1} · ${nameOf(snap, snap.frames[0].node)} · ${snap.frames[0].status}`), `→ steps to frame 0 (readout "${r0}")`);
    const after0 = await verifyStates(0, 'after →');
    check(JSON.stringify(after0) !== JSON.stringify(initial), 'stepping to frame 0 changes node states');
    if (F > 1) {
      await page.click('#btn-step');
      const r1 = await readout();
      check(r1.startsWith(`frame 1/${F - 1}`), `▶| steps to frame 1 (readout "${r1}")`);
      await verifyStates(1, 'after ▶|');
      const cur = await page.getAttribute('#timeline [data-frame="1"]', 'class').catch(() => null);
      check(cur && /\bcurrent\b/.test(cur), `timeline row 1 is current (class "${cur}")`);
      await page.keyboard.press('ArrowLeft');
      check((await readout()).startsWith(`frame 0/${F - 1}`), '← steps back to frame 0');
    }

    // End, and a #frame= jump to the middle
    await page.keyboard.press('End');
    check((await readout()).startsWith(`frame ${F - 1}/${F - 1}`), `End jumps to frame ${F - 1}`);
    await verifyStates(F - 1, 'after End');
    const mid = Math.floor((F - 1) / 2);
    await page.evaluate((m) => {
      location.hash = `frame=${m}`;
    }, mid);
    await page.waitForFunction((m) => document.getElementById('readout').textContent.startsWith(`frame ${m}/`), mid, { timeout: 5000 }).catch(() => {});
    check((await readout()).startsWith(`frame ${mid}/`), `#frame=${mid} jumps there`);
    await verifyStates(mid, `after #frame=${mid}`);

    // Timeline row click
    const target = Math.min(F - 1, mid + 1);
    const row = page.locator(`#timeline [data-frame="${target}"]`);
    if (await row.count()) {
      await row.click();
      check((await readout()).startsWith(`frame ${target}/`), `clicking timeline row ${target} jumps there`);
    } else check(false, `timeline row ${target} is rendered near the head`);

    // Inspector: click the head frame's node.
    const head = target;
    const node = snap.frames[head].node;
    await page.locator(`#graph-svg [data-node="${cssString(node)}"] .box`).click();
    await page.waitForFunction(() => !document.getElementById('inspector').classList.contains('closed'), null, { timeout: 5000 }).catch(() => {});
    check(!(await page.getAttribute('#inspector', 'class')).includes('closed'), `clicking node ${node} opens the inspector`);
    const rec = await getJSON(`/api/receipt/${head}`);
    check(rec.status === 200 && rec.body && rec.body.receipt, `GET /api/receipt/${head} answers 200 (got ${rec.status})`);
    await page.waitForSelector('#insp-body .kv', { timeout: 10000 }).catch(() => {});
    const body = (await page.textContent('#insp-body')) || '';
    if (rec.body && rec.body.receipt) {
      const r = rec.body.receipt;
      check(body.includes(String(r.content_hash)), 'the Receipt tab shows the stored content_hash');
      check(body.includes(String(r.contract_fingerprint)), 'the Receipt tab shows the contract fingerprint');
      check(body.includes(`status${r.status}`) || body.includes(String(r.status)), 'the Receipt tab shows the status');
      check(/✓|✗/.test(body), 'the Receipt tab shows a ✓/✗ verdict');
    }
    const sub = await page.textContent('#insp-sub');
    check(sub.includes(`frame ${head}`), `the inspector names frame ${head} (got "${sub}")`);

    await page.click('.insp-tabs [data-tab="chain"]');
    const nodeFrames = snap.frames.filter((f) => f.node === node).length;
    const chainHead = (await page.textContent('#insp-body .verdict')) || '';
    check(chainHead.startsWith(`${nodeFrames} receipt`), `the Chain tab counts the node's ${nodeFrames} frames (got "${chainHead}")`);
    const chainRows = await page.locator('#insp-body .chain-row:visible').count();
    check(chainRows >= Math.min(nodeFrames, 5) && chainRows <= nodeFrames, `the Chain tab shows the node's frames (${chainRows} rows drawn of ${nodeFrames})`);
    const curRow = await page.locator(`#insp-body .chain-row.current[data-frame="${head}"]`).count();
    check(curRow === 1, `the Chain tab marks frame ${head} as current`);

    await page.click('.insp-tabs [data-tab="world"]');
    await page.waitForFunction(() => /files ·|no stored version for this frame|error:/.test(document.getElementById('insp-body').textContent), null, { timeout: 10000 }).catch(() => {});
    const wm = (await page.textContent('#insp-body')) || '';
    check(/files ·|no stored version for this frame/.test(wm) && !/error:/.test(wm), `the World-model tab shows files or "no stored version" (got "${wm.slice(0, 120)}")`);

    // A timeline row click while the inspector is open shows that frame in it.
    const other = head > 0 ? head - 1 : Math.min(F - 1, head + 1);
    await page.click('.insp-tabs [data-tab="receipt"]');
    const otherRow = page.locator(`#timeline [data-frame="${other}"]`);
    if (other !== head && (await otherRow.count())) {
      await otherRow.click();
      const sub2 = await page.textContent('#insp-sub');
      check(sub2.includes(`frame ${other}`) && sub2.includes(snap.frames[other].node), `with the inspector open, timeline row ${other} shows that frame (got "${sub2}")`);
      check((await readout()).startsWith(`frame ${other}/`), `with the inspector open, timeline row ${other} jumps there`);
    }

    await page.keyboard.press('Escape');
    check((await page.getAttribute('#inspector', 'class')).includes('closed'), 'Escape closes the inspector');

    // Play advances.
    if (F > 1) {
      await page.keyboard.press('Home');
      await page.click('#btn-play');
      await page.waitForFunction(() => /^frame \d+\//.test(document.getElementById('readout').textContent), null, { timeout: 5000 }).catch(() => {});
      check(/^frame \d+\//.test(await readout()), 'play advances from the start');
      check((await page.textContent('#btn-play')) === '❚❚' || (await readout()).startsWith(`frame ${F - 1}/`), 'the play button shows ❚❚ while playing');
      await page.click('#btn-play');
    }
  }

  if (opts.scale) {
    const rows = await page.locator('#timeline [data-frame]').count();
    check(rows > 0 && rows < 300, `--scale: the timeline is virtualized (${rows} row elements for ${F} frames)`);
    for (const key of ['End', 'Home', 'End']) {
      const t = Date.now();
      await page.keyboard.press(key);
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
      const ms = Date.now() - t;
      check(ms < 2500, `--scale: ${key} applies within 2.5 s (took ${ms} ms)`);
    }
    const t = Date.now();
    await page.locator('#timeline').evaluate((el) => {
      el.scrollTop = el.scrollHeight / 2;
    });
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r()))));
    const visible = await page.locator('#timeline [data-frame]').count();
    check(visible > 0 && visible < 300 && Date.now() - t < 2500, `--scale: scrolling the timeline keeps it virtualized (${visible} rows)`);
  } else if (F >= 5000) note('hint: pass --scale to assert timeline virtualization for this large ledger');

  // A well-lit still for the screenshot: the first frame that lights ≥ 2 lanes, else the last.
  if (opts.screenshot) {
    let pick = F - 1;
    for (let i = 0; i < Math.min(F, 5000); i++) if (snap.frames[i].edgesToLight.length >= 2) {
      pick = i;
      break;
    }
    if (F > 0) {
      await page.evaluate((p) => {
        location.hash = `frame=${p}`;
      }, pick);
      await page.waitForFunction((p) => document.getElementById('readout').textContent.startsWith(`frame ${p}/`), pick, { timeout: 5000 }).catch(() => {});
    }
    await page.waitForTimeout(600);
    await page.screenshot({ path: opts.screenshot });
    note(`screenshot written to ${opts.screenshot}`);
  }

  await page.waitForTimeout(300);
  closing = true;
  check(consoleErrors.length === 0, `no console errors${consoleErrors.length ? `: ${consoleErrors.slice(0, 5).join(' | ')}` : ''}`);
  check(foreign.length === 0, `no request leaves the viewer's origin${foreign.length ? `: ${foreign.slice(0, 5).join(' | ')}` : ''}`);
  check(failedRequests.length === 0, `no failed requests${failedRequests.length ? `: ${failedRequests.slice(0, 5).join(' | ')}` : ''}`);
}

/** Escapes a string for use inside a double-quoted CSS attribute selector. */
function cssString(s) {
  return s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\a ');
}

main()
  .catch((err) => {
    check(false, `unexpected error: ${err && err.stack ? err.stack : err}`);
  })
  .finally(() => {
    clearTimeout(watchdog);
    if (failures.length) {
      console.error(`spa.mjs: ${failures.length} of ${checks} checks failed`);
      process.exit(1);
    }
    console.log(`spa.mjs: all ${checks} checks passed`);
    process.exit(0);
  });
