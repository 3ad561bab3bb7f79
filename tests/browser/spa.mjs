#!/usr/bin/env node
// Headless-browser test of the reactor-devtools single-page app (VIEWER.md §8 and issue 9).
//
// Usage:
//   node tests/browser/spa.mjs --url http://127.0.0.1:<port>/ [--screenshot <png path>] [--scale]
//                              [--large] [--small] [--light] [--timeout <ms>]
//
// Drives Debian's chromium through playwright-core against a running viewer (whatever state
// directory it replays) and asserts:
//   - every node of GET /api/state is drawn (`[data-node]`), every edge too (`[data-edge]`), and no
//     lane passes through a box other than its own ends;
//   - the status line (counts of 10 000 and more as k/M), chain badge and readout match the snapshot;
//     the page names its ledger (document title, top bar, the "synthetic sample" banner exactly when
//     GET /api/ledger says synthetic);
//   - the legend lists rendered, skipped, failed, entry, lit lane, self tick, recovery and phantom
//     ingress, and each swatch is drawn like the graph's elements in that state (computed styles);
//   - resting lanes have at least 3:1 contrast against the page;
//   - stepping (→ key and the ▶| button) changes node states, and the node classes at a frame equal
//     the states computed independently from the snapshot (untouched / latest status, `hit` on head);
//   - clicking a node opens the inspector over the sidebar without covering the node — also for a
//     node first panned to where the inspector opens; its Receipt tab shows GET /api/receipt/<i>,
//     the Chain tab the node's frames, the World-model tab files or "no stored version"; while it
//     shows the head frame, ← moves it along; the Receipt tab and the timeline row's tooltip show
//     the frame's cause as GET /api/frames gives it (why.mjs);
//   - `/` focuses the search box; typing a node's name and Enter centres that node at a readable
//     zoom, rings it and focuses it; Enter then opens its inspector;
//   - Tab reaches the graph's nodes in reading order (layer by layer), Enter opens the inspector;
//   - `f` shows the focused node's 1-hop neighbourhood (exactly the nodes the snapshot's lanes put
//     within one hop), `]` widens it to 2 hops, `f` again restores the whole graph;
//   - a timeline row click and `#frame=` jump; play advances;
//   - no console error, no page error, no failed request (HTTP ≥ 400 counts as failed, except a 404
//     from /api/node/, which means "no stored version" and is a legitimate answer).
// With --scale: the timeline is virtualized (few row elements for many frames) and jumps stay fast.
// With --large: the minimap appears (more than 50 nodes) and moves the view; at the fit zoom the
// overlay labels are at least 10 px and never overlap; zoom reaches nodes at 4× their size; zoomed
// in, names are drawn in the boxes and facet names on lanes.
// With --light: under `prefers-color-scheme: light` the page is light and resting lanes keep 3:1.
// With --small: at 760 × 900 the page does not scroll sideways, the sidebar sits under the graph,
// the legend opens from a button, and the inspector opens over the sidebar without covering the node.
// Screenshots: --screenshot <png>, plus <png>-light.png and <png>-small.png with those flags.
//
// Exit status: 0 when every assertion holds; 1 when any fails (each failure printed on stderr,
// prefixed `FAIL`) or the browser cannot be driven; 2 on a usage error.
//
// Environment: CHROMIUM_PATH (default /usr/bin/chromium). Loopback only; no network.

import { launch, countCrossingsInPage } from './common.mjs';
import { checkWhy } from './why.mjs';

const USAGE = 'usage: node tests/browser/spa.mjs --url http://127.0.0.1:<port>/ [--screenshot <png>] [--scale] [--large] [--small] [--light] [--timeout <ms>]';

function parseArgs(argv) {
  const out = { url: null, screenshot: null, scale: false, large: false, small: false, light: false, timeout: 180000 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      if (i + 1 >= argv.length) usage(`missing value for ${a}`);
      return argv[++i];
    };
    if (a === '--url') out.url = val();
    else if (a === '--screenshot') out.screenshot = val();
    else if (a === '--scale') out.scale = true;
    else if (a === '--large') out.large = true;
    else if (a === '--small') out.small = true;
    else if (a === '--light') out.light = true;
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

/** The issue's number format: 27180 → 27k, 1500 → 1.5k, 1234567 → 1.2M, 27000000 → 27M. */
function fmtK(n) {
  const a = Math.abs(n);
  const dec = (x, u) => x.toFixed(1).replace(/\.0$/, '') + u;
  if (a >= 999500) return Math.abs(n / 1e6) >= 9.95 ? Math.round(n / 1e6) + 'M' : dec(n / 1e6, 'M');
  if (a >= 10000) return Math.round(n / 1000) + 'k';
  if (a >= 1000) return dec(n / 1000, 'k');
  return String(n);
}

const fmtCount = (n) => (n >= 10000 ? fmtK(n) : String(n));

/** Expected per-node state class at head `h`, computed from the snapshot alone (VIEWER.md §8.4). */
function expectedStates(snap, h) {
  const st = new Map();
  for (let i = 0; i <= h; i++) st.set(snap.frames[i].node, snap.frames[i].status);
  return st;
}

/** The nodes within k lanes of `id` (lanes taken both ways), from the snapshot alone. */
function neighbourhood(snap, drawn, id, k) {
  const adj = new Map();
  const link = (a, b) => {
    if (!adj.has(a)) adj.set(a, new Set());
    if (!adj.has(b)) adj.set(b, new Set());
    adj.get(a).add(b);
    adj.get(b).add(a);
  };
  for (const e of snap.edges) link(e.producer, e.subscriber);
  // implied ingress lanes (VIEWER.md §8.2): a frame node `<x>::ingress` feeds a drawn `<x>`
  const named = new Set(snap.nodes.map((n) => n.id));
  for (const e of snap.edges) {
    named.add(e.producer);
    named.add(e.subscriber);
  }
  for (const f of snap.frames) {
    const m = /^(.*)::ingress$/.exec(f.node);
    if (m && !named.has(f.node) && drawn.has(m[1])) link(f.node, m[1]);
  }
  const set = new Set([id]);
  let ring = [id];
  for (let hop = 0; hop < k; hop++) {
    const next = [];
    for (const x of ring) for (const y of adj.get(x) || []) if (!set.has(y)) (set.add(y), next.push(y));
    ring = next;
  }
  return set;
}

function intersects(a, b) {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}

function inside(a, b, slack = 1) {
  return a.x >= b.x - slack && a.y >= b.y - slack && a.x + a.width <= b.x + b.width + slack && a.y + a.height <= b.y + b.height + slack;
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
  const ledger = await getJSON('/api/ledger');
  check(ledger.status === 200 && ledger.body && ledger.body.stateDir === snap.stateDir && ledger.body.synthetic === snap.synthetic, `GET /api/ledger names the snapshot's stateDir and synthetic flag (got ${ledger.status} ${JSON.stringify(ledger.body)})`);

  let browser;
  try {
    browser = await launch({ width: 1440, height: 900 });
  } catch (err) {
    check(false, err.message);
    return;
  }
  try {
    await run(browser.context, snap, F, ledger.body || {});
  } finally {
    await browser.close();
  }
}

async function run(context, snap, F, ledger) {
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
  await page.waitForFunction(() => !!window.__REACTOR_SNAPSHOT__ || /^error/.test(document.getElementById('status-text')?.textContent || ''), null, { timeout: 120000 });
  note(`loaded in ${Date.now() - t0} ms`);
  const frame = () => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r()))));
  const blur = () => page.evaluate(() => document.activeElement && document.activeElement.blur && document.activeElement.blur());
  const rect = (sel) => page.locator(sel).first().boundingBox();
  const nodeSel = (id) => `#graph [data-node="${cssString(id)}"]`;

  // ---- chrome: status, ledger name, banner ----
  const status = await page.textContent('#status-text');
  check(!/^error/.test(status), `status text is not an error (got "${status}")`);
  let expStatus = `${fmtCount(F)} receipts · ${fmtCount(snap.nodes.length)} nodes · ${fmtCount(snap.edges.length)} edges`;
  if (!snap.hasTopology) expStatus += ' · no saved topology (node-only fallback)';
  check(status === expStatus, `status text is "${expStatus}" (got "${status}")`);
  await page.waitForSelector('#ledger:not(.hidden)', { timeout: 10000 }).catch(() => {});
  const where = ledger.path || ledger.stateDir || '';
  const ledgerName = ledger.example || where.split('/').filter((x) => x && x !== '.').pop();
  check((await page.textContent('#ledger-name')) === ledgerName, `the top bar names the ledger "${ledgerName}" (got "${await page.textContent('#ledger-name')}")`);
  check((await page.title()) === `${ledgerName} — Reactor DevTools`, `the page title is "${ledgerName} — Reactor DevTools" (got "${await page.title()}")`);
  const banner = await page.evaluate(() => {
    const b = document.getElementById('banner');
    return { shown: !b.classList.contains('hidden') && b.getBoundingClientRect().height > 0, text: b.textContent };
  });
  if (snap.synthetic) check(banner.shown && banner.text.startsWith('synthetic sample') && banner.text.includes(ledgerName), `a synthetic ledger shows the "synthetic sample" banner naming ${ledgerName} (got ${JSON.stringify(banner)})`);
  else check(!banner.shown, 'a real ledger shows no synthetic banner');
  if (F >= 10000) check((await page.textContent('#timeline-title')) === `receipts · ${fmtK(F)}`, `the timeline title abbreviates ${F} as ${fmtK(F)}`);

  const pageSnap = await page.evaluate(() => {
    const s = window.__REACTOR_SNAPSHOT__;
    return s ? { frames: s.frames.length, nodes: s.nodes.map((n) => n.id) } : null;
  });
  check(pageSnap && pageSnap.frames === F, `window.__REACTOR_SNAPSHOT__ holds the ${F} frames of /api/state (got ${pageSnap && pageSnap.frames})`);

  // ---- every node and lane drawn; no lane through a box ----
  const drawnNow = () =>
    page.evaluate(() => ({
      nodes: Array.from(document.querySelectorAll('#graph [data-node]'), (g) => g.getAttribute('data-node')),
      edges: Array.from(document.querySelectorAll('#graph [data-edge]'), (g) => g.getAttribute('data-edge')),
    }));
  const drawn = await drawnNow();
  const drawnNodes = new Set(drawn.nodes);
  const allDrawn = new Set(drawn.nodes);
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
  const cross = await page.evaluate(countCrossingsInPage);
  check(cross.edges === drawn.edges.length && cross.crossing === 0, `no lane passes through a box (${cross.crossing} of ${cross.edges} do)`);

  const cv = snap.chainVerify;
  if (cv && typeof cv === 'object') {
    const badge = (await page.textContent('#chain-badge')).trim();
    check(badge === (cv.ok ? 'chain ✓ verified' : 'chain ✗ TAMPERED'), `chain badge reads per chainVerify.ok=${cv.ok} (got "${badge}")`);
  }

  // ---- resting lanes: ≥ 3:1 against the page ----
  const contrast = await page.evaluate(laneContrastInPage);
  check(contrast.n === 0 || contrast.min >= 3, `resting lanes have ≥ 3:1 contrast against the page (lowest ${contrast.min.toFixed(2)}:1 over ${contrast.n} lanes)`);

  const readout = () => page.textContent('#readout');
  const classesOf = () =>
    page.evaluate(() => {
      const o = {};
      for (const g of document.querySelectorAll('#graph [data-node]')) o[g.getAttribute('data-node')] = g.getAttribute('class') || '';
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
  const gotoFrame = async (p) => {
    await page.evaluate((x) => {
      location.hash = `frame=${x}`;
    }, p);
    await page.waitForFunction((x) => document.getElementById('readout').textContent.startsWith(x < 0 ? 'ready' : `frame ${x}/`), p, { timeout: 5000 }).catch(() => {});
  };

  check((await readout()) === `ready · frame —/${F}`, `readout at −1 is "ready · frame —/${F}" (got "${await readout()}")`);
  const initial = await verifyStates(-1, 'at load');

  // ---- the legend lists what the graph draws, drawn the same way ----
  const legendNames = await page.evaluate(() => Array.from(document.querySelectorAll('#legend .lg'), (e) => e.textContent.trim()));
  const LEGEND = ['rendered', 'skipped', 'failed', 'entry', 'lit lane', 'self tick', 'recovery', 'phantom ingress'];
  check(JSON.stringify(legendNames) === JSON.stringify(LEGEND), `the legend lists ${LEGEND.join(', ')} (got ${legendNames.join(', ')})`);
  if (F > 0) await checkLegend(page, snap, F, gotoFrame);

  if (F === 0) {
    note('skipped: stepping, inspector and timeline checks — the ledger has no receipt');
  } else {
    await gotoFrame(-1);
    // → key: frame 0
    await blur();
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
      await frame();
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
    await gotoFrame(mid);
    check((await readout()).startsWith(`frame ${mid}/`), `#frame=${mid} jumps there`);
    await verifyStates(mid, `after #frame=${mid}`);

    // Timeline row click
    const target = Math.min(F - 1, mid + 1);
    await frame();
    const row = page.locator(`#timeline [data-frame="${target}"]`);
    if (await row.count()) {
      await row.click();
      check((await readout()).startsWith(`frame ${target}/`), `clicking timeline row ${target} jumps there`);
    } else check(false, `timeline row ${target} is rendered near the head`);

    // Inspector: click the head frame's node; it opens over the sidebar and leaves the node visible.
    const head = target;
    const node = snap.frames[head].node;
    await page.locator(`${nodeSel(node)} .box`).click();
    await page.waitForFunction(() => !document.getElementById('inspector').classList.contains('closed'), null, { timeout: 5000 }).catch(() => {});
    check(!(await page.getAttribute('#inspector', 'class')).includes('closed'), `clicking node ${node} opens the inspector`);
    await checkPlacement(page, node, 'the head node');
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
    // Why did this render: the inspector and the timeline tooltip show the frame's cause.
    await checkWhy(page, getJSON, head, check);

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

    // The inspector covers the timeline; while it shows the head frame, ← moves it along.
    await page.click('.insp-tabs [data-tab="receipt"]');
    if (head > 0) {
      await page.keyboard.press('ArrowLeft');
      const sub2 = await page.textContent('#insp-sub');
      check(sub2.includes(`frame ${head - 1}`) && sub2.includes(snap.frames[head - 1].node), `with the inspector on the head frame, ← shows frame ${head - 1} (got "${sub2}")`);
      check((await readout()).startsWith(`frame ${head - 1}/`), `with the inspector open, ← steps to frame ${head - 1}`);
      await checkPlacement(page, snap.frames[head - 1].node, `frame ${head - 1}'s node`);
    }
    await page.keyboard.press('Escape');
    check((await page.getAttribute('#inspector', 'class')).includes('closed'), 'Escape closes the inspector');

    // A node panned to where the inspector opens is moved into view when it opens.
    await checkPannedUnderInspector(page, nodeSel);

    // Search: `/` focuses it; Enter centres, rings and focuses the node.
    const picked = await checkSearch(page, snap, nodeSel, frame, blur);

    // Neighbourhood of the found node: 1 hop, then 2, then the whole graph again.
    if (picked) await checkNeighbourhood(page, snap, picked, allDrawn, drawnNow);

    // Keyboard: Tab reaches the nodes in reading order; Enter opens the inspector.
    await checkKeyboard(page, blur);

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
      const took = Date.now() - t;
      check(took < 2500, `--scale: ${key} applies within 2.5 s (took ${took} ms)`);
    }
    const t = Date.now();
    await page.locator('#timeline').evaluate((el) => {
      el.scrollTop = el.scrollHeight / 2;
    });
    await frame();
    const visible = await page.locator('#timeline [data-frame]').count();
    check(visible > 0 && visible < 300 && Date.now() - t < 2500, `--scale: scrolling the timeline keeps it virtualized (${visible} rows)`);
  } else if (F >= 5000) note('hint: pass --scale to assert timeline virtualization for this large ledger');

  if (opts.large) await checkLarge(page, snap, frame);

  // A well-lit still for the screenshot: the first frame that lights ≥ 2 lanes, else the last.
  let pick = F - 1;
  for (let i = 0; i < Math.min(F, 5000); i++) {
    if (snap.frames[i].edgesToLight.length >= 2) {
      pick = i;
      break;
    }
  }
  if (opts.screenshot) {
    await page.keyboard.press('Escape'); // drops the search ring
    await page.keyboard.press('0');
    if (F > 0) await gotoFrame(pick);
    await page.waitForTimeout(700);
    await page.screenshot({ path: opts.screenshot });
    note(`screenshot written to ${opts.screenshot}`);
  }

  if (opts.light) {
    await page.emulateMedia({ colorScheme: 'light' });
    await page.waitForTimeout(300);
    const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    const lum = luminance(parseRgb(bg));
    check(lum > 0.7, `--light: the page is light under prefers-color-scheme: light (background ${bg}, luminance ${lum.toFixed(2)})`);
    const lc = await page.evaluate(laneContrastInPage);
    check(lc.n === 0 || lc.min >= 3, `--light: resting lanes have ≥ 3:1 contrast (lowest ${lc.min.toFixed(2)}:1 over ${lc.n} lanes)`);
    if (opts.screenshot) {
      const p = opts.screenshot.replace(/\.png$/, '') + '-light.png';
      await page.screenshot({ path: p });
      note(`screenshot written to ${p}`);
    }
    await page.emulateMedia({ colorScheme: 'dark' });
  }

  if (opts.small) await checkSmall(page, snap, F, pick, nodeSel, frame);

  await page.waitForTimeout(300);
  closing = true;
  check(consoleErrors.length === 0, `no console errors${consoleErrors.length ? `: ${consoleErrors.slice(0, 5).join(' | ')}` : ''}`);
  check(foreign.length === 0, `no request leaves the viewer's origin${foreign.length ? `: ${foreign.slice(0, 5).join(' | ')}` : ''}`);
  check(failedRequests.length === 0, `no failed requests${failedRequests.length ? `: ${failedRequests.slice(0, 5).join(' | ')}` : ''}`);
}

/** The inspector is open over the sidebar, and node `id`'s box is inside the graph, uncovered. */
async function checkPlacement(page, id, what) {
  // Measure once the inspector is open and its slide-in transition has run to its end (a fixed
  // pause raced the transition under load). Poll on a timer: the default requestAnimationFrame
  // polling waits on the very frames a loaded machine is slow to produce.
  const t0 = Date.now();
  const settled = await page
    .waitForFunction(() => {
      const el = document.getElementById('inspector');
      return !el.classList.contains('closed') && el.getAnimations().every((a) => a.playState === 'finished');
    }, null, { timeout: 10000, polling: 50 })
    .then(() => true, () => false);
  const r = await page.evaluate((nid) => {
    const box = (el) => {
      const b = el.getBoundingClientRect();
      return { x: b.x, y: b.y, width: b.width, height: b.height };
    };
    const g = Array.from(document.querySelectorAll('#graph [data-node]')).find((x) => x.getAttribute('data-node') === nid);
    const ins = document.getElementById('inspector');
    return {
      node: g ? box(g.querySelector('.box')) : null,
      ins: box(ins),
      side: box(document.getElementById('sidebar')),
      graph: box(document.getElementById('graph')),
      state: {
        class: ins.className,
        transform: getComputedStyle(ins).transform,
        animations: ins.getAnimations().map((a) => `${a.playState}@${a.currentTime}`),
        timeline: document.timeline.currentTime,
      },
    };
  }, id);
  const state = JSON.stringify({ settled, waitedMs: Date.now() - t0, ...r.state });
  if (!check(r.node, `${what} ${id} is drawn`)) return;
  check(inside(r.side, r.ins, 1), `the inspector opens over the sidebar for ${what} ${id} (inspector ${JSON.stringify(r.ins)}, sidebar ${JSON.stringify(r.side)}, ${state})`);
  check(!intersects(r.node, r.ins) && inside(r.node, r.graph, 1), `the inspector does not cover ${what} ${id} (node ${JSON.stringify(r.node)}, inspector ${JSON.stringify(r.ins)})`);
}

/** Pans the rightmost node to where the inspector will open, clicks it, and checks it stays visible. */
async function checkPannedUnderInspector(page, nodeSel) {
  const info = await page.evaluate(() => {
    let best = null;
    for (const g of document.querySelectorAll('#graph [data-node]')) {
      const b = g.querySelector('.box').getBoundingClientRect();
      if (!best || b.right > best.right) best = { id: g.getAttribute('data-node'), right: b.right, left: b.left, cy: b.top + b.height / 2 };
    }
    const gr = document.getElementById('graph').getBoundingClientRect();
    // a background point (no node, no control) to start a pan from
    let bg = null;
    for (let y = gr.top + 60; y < gr.bottom - 40 && !bg; y += 23) {
      for (let x = gr.left + 30; x < gr.right - 30; x += 31) {
        const el = document.elementFromPoint(x, y);
        if (el && el.classList && el.classList.contains('bg')) {
          bg = { x, y };
          break;
        }
      }
    }
    return { best, bg, graphRight: gr.right, inspW: 420, vw: window.innerWidth };
  });
  if (!check(info.best && info.bg, 'found a node and a background point to pan from')) return;
  const zoneLeft = info.vw - info.inspW;
  const dx = info.graphRight - 12 - info.best.right; // right edge just inside the graph area
  await page.mouse.move(info.bg.x, info.bg.y);
  await page.mouse.down();
  await page.mouse.move(info.bg.x + dx / 2, info.bg.y, { steps: 4 });
  await page.mouse.move(info.bg.x + dx, info.bg.y, { steps: 4 });
  await page.mouse.up();
  const now = await page.locator(`${nodeSel(info.best.id)} .box`).boundingBox();
  check(now && now.x + now.width > zoneLeft + 10, `the rightmost node ${info.best.id} was panned under the inspector's place (box ${JSON.stringify(now)}, inspector from x=${zoneLeft})`);
  // click the part of the box left of the sidebar
  const clickX = Math.min(now.x + now.width / 2, info.graphRight - 20);
  await page.mouse.click(clickX, now.y + now.height / 2);
  await page.waitForFunction(() => !document.getElementById('inspector').classList.contains('closed'), null, { timeout: 5000, polling: 50 }).catch(() => {});
  // A click right after a pan opens the inspector (a 0 ms timer alone re-enabled clicks after a
  // pan, and input can overtake it: such clicks were lost under load).
  check(!(await page.getAttribute('#inspector', 'class')).includes('closed'), `clicking ${info.best.id} right after a pan opens the inspector`);
  await checkPlacement(page, info.best.id, 'the clicked node');
  await page.keyboard.press('Escape');
  await page.keyboard.press('0');
}

async function checkSearch(page, snap, nodeSel, frame, blur) {
  // a node with a name no other node shares, far from the graph's middle
  const counts = new Map();
  const ids = await page.evaluate(() => Array.from(document.querySelectorAll('#graph [data-node]'), (g) => g.getAttribute('data-node')));
  for (const id of ids) counts.set(nameOf(snap, id), (counts.get(nameOf(snap, id)) || 0) + 1);
  const target = ids
    .slice()
    .reverse()
    .find((id) => counts.get(nameOf(snap, id)) === 1 && snap.nodes.some((n) => n.id === id));
  if (!check(target, 'a node with a unique name to search for')) return null;
  await blur();
  await page.keyboard.press('/');
  check(await page.evaluate(() => document.activeElement && document.activeElement.id === 'search'), '`/` focuses the search box');
  await page.keyboard.type(nameOf(snap, target));
  await page.waitForSelector('#search-results:not(.hidden) li[data-id]', { timeout: 5000 }).catch(() => {});
  const first = await page.getAttribute('#search-results li[data-id]', 'data-id').catch(() => null);
  check(first === target, `searching "${nameOf(snap, target)}" lists ${target} first (got ${first})`);
  await page.keyboard.press('Enter');
  await frame();
  const r = await page.evaluate((id) => {
    const g = Array.from(document.querySelectorAll('#graph [data-node]')).find((x) => x.getAttribute('data-node') === id);
    const b = g.querySelector('.box').getBoundingClientRect();
    const gr = document.getElementById('graph').getBoundingClientRect();
    const name = g.querySelector('.name');
    const nb = name.getBoundingClientRect();
    return {
      focused: document.activeElement === g,
      picked: g.classList.contains('picked'),
      dx: b.left + b.width / 2 - (gr.left + gr.width / 2),
      dy: b.top + b.height / 2 - (gr.top + gr.height / 2),
      nameShown: getComputedStyle(name).display !== 'none' && nb.height > 0,
      nameHeight: nb.height,
      results: !document.getElementById('search-results').classList.contains('hidden'),
    };
  }, target);
  check(Math.abs(r.dx) <= 6 && Math.abs(r.dy) <= 6, `Enter centres ${target} (off by ${r.dx.toFixed(1)}, ${r.dy.toFixed(1)} px)`);
  check(r.picked && r.focused, `Enter rings ${target} and gives it keyboard focus (picked ${r.picked}, focused ${r.focused})`);
  check(r.nameShown && r.nameHeight >= 9, `the found node's name is drawn readably (${r.nameHeight.toFixed(1)} px tall)`);
  check(!r.results, 'the result list closes');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => !document.getElementById('inspector').classList.contains('closed'), null, { timeout: 5000 }).catch(() => {});
  const sub = await page.textContent('#insp-sub');
  check(sub.startsWith(target + ' ·'), `Enter on the focused node opens its inspector (got "${sub}")`);
  await checkPlacement(page, target, 'the found node');
  return target;
}

async function checkNeighbourhood(page, snap, id, allDrawn, drawnNow) {
  // `f` acts on the focused, found or inspected node: here the found one (the inspector shows it).
  await page.keyboard.press('f');
  await page.waitForSelector('#nbhd-pill:not(.hidden)', { timeout: 5000 }).catch(() => {});
  for (const k of [1, 2]) {
    if (k === 2) {
      await page.keyboard.press(']');
      await page.waitForFunction(() => / 2 hops /.test(document.getElementById('nbhd-text').textContent), null, { timeout: 5000 }).catch(() => {});
    }
    const want = neighbourhood(snap, allDrawn, id, k);
    const got = new Set((await drawnNow()).nodes);
    const extra = [...got].filter((x) => !want.has(x));
    const lack = [...want].filter((x) => !got.has(x));
    check(extra.length === 0 && lack.length === 0, `neighbourhood mode draws exactly the ${want.size} nodes within ${k} hop(s) of ${id} (extra: ${extra.slice(0, 4).join(', ') || 'none'}; missing: ${lack.slice(0, 4).join(', ') || 'none'})`);
    const pill = await page.textContent('#nbhd-text');
    check(pill.includes(`${k} hop`) && pill.includes(`${want.size} nodes`), `the neighbourhood pill reads ${k} hop(s) and ${want.size} nodes (got "${pill}")`);
  }
  await page.keyboard.press('Escape'); // closes the inspector first
  await page.keyboard.press('f');
  await page.waitForSelector('#nbhd-pill.hidden', { state: 'attached', timeout: 5000 }).catch(() => {});
  const back = (await drawnNow()).nodes.length;
  check(back === allDrawn.size, `f again shows the whole graph (${back} of ${allDrawn.size} nodes drawn)`);
}

async function checkKeyboard(page, blur) {
  await blur();
  await page.focus('#chain-badge');
  const order = await page.evaluate(() =>
    Array.from(document.querySelectorAll('#graph [data-node]'), (g) => {
      const b = g.querySelector('.box');
      return { id: g.getAttribute('data-node'), x: Number(b.getAttribute('x')), y: Number(b.getAttribute('y')) };
    }).sort((a, b) => a.x - b.x || a.y - b.y),
  );
  const focused = () => page.evaluate(() => (document.activeElement && document.activeElement.getAttribute ? document.activeElement.getAttribute('data-node') : null));
  await page.keyboard.press('Tab');
  const f1 = await focused();
  check(f1 === order[0].id, `Tab from the top bar reaches the first node in reading order, ${order[0].id} (got ${f1})`);
  if (order.length > 1) {
    await page.keyboard.press('Tab');
    const f2 = await focused();
    check(f2 === order[1].id, `the next Tab reaches ${order[1].id} (got ${f2})`);
    const fv = await page.evaluate(() => document.activeElement.matches(':focus-visible'));
    check(fv, 'the keyboard-focused node shows a focus ring (:focus-visible)');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => !document.getElementById('inspector').classList.contains('closed'), null, { timeout: 5000 }).catch(() => {});
    const sub = await page.textContent('#insp-sub');
    check(sub.startsWith(order[1].id + ' ·'), `Enter on a keyboard-focused node opens its inspector (got "${sub}")`);
    await page.keyboard.press('Escape');
  }
}

/** Each legend swatch is styled like the graph's elements in its state, where the graph has one. */
async function checkLegend(page, snap, F, gotoFrame) {
  const heads = new Set([F - 1]);
  const firstLit = snap.frames.findIndex((f) => f.edgesToLight.length > 0);
  if (firstLit >= 0) heads.add(firstLit);
  const prevOf = new Map();
  const rendered = new Set();
  let bareSkip = false; // a node skipped before it ever rendered: drawn "skipped" without the warm floor
  for (const f of snap.frames) {
    const p = prevOf.get(f.node);
    if (f.status === 'skipped' && !rendered.has(f.node) && f.index + 1 < F && !bareSkip) {
      bareSkip = true;
      heads.add(f.index + 1);
    }
    if (f.status === 'rendered') rendered.add(f.node);
    if (f.status === 'rendered' && p && p.status === 'failed') heads.add(f.index);
    if (f.status === 'rendered' && (f.wakeSource === 'self' || f.movedFacets.length === 0) && !(p && p.status === 'failed')) heads.add(f.index);
    if (f.status === 'failed' && f.index + 1 < F) heads.add(f.index + 1);
    prevOf.set(f.node, f);
  }
  const verified = new Map();
  for (const h of [...heads].slice(0, 10)) {
    await gotoFrame(h);
    const res = await page.evaluate(legendMatchInPage);
    for (const [k, v] of Object.entries(res)) {
      if (v === 'absent') continue;
      if (v !== 'ok') check(false, `legend "${k}" is drawn like the graph at frame ${h}: ${v}`);
      verified.set(k, true);
    }
  }
  // Which states appear un-lit and off the head depends on the ledger; lanes light in any ledger
  // whose frames light some, and every ledger with receipts shows a few states plainly.
  if (snap.frames.some((f) => f.edgesToLight.length)) check(verified.has('lit lane'), 'legend "lit lane" was compared with a drawn lane');
  if (snap.nodes.length >= 3) check(verified.size >= 2, `at least two legend swatches were compared with drawn elements (${[...verified.keys()].join(', ') || 'none'})`);
  note(`legend swatches compared with the graph: ${[...verified.keys()].join(', ')}`);
  await gotoFrame(-1);
}

// ---- functions evaluated in the page ----

/** → {n, min}: contrast of resting lanes (stroke × stroke-opacity over the page colour). */
function laneContrastInPage() {
  const rgb = (s) => (s.match(/[\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = (c) => ((c /= 255) <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const bg = rgb(getComputedStyle(document.getElementById('graph')).backgroundColor);
  let min = Infinity;
  let n = 0;
  const lanes = Array.from(document.querySelectorAll('#graph [data-edge]:not(.lit) path.lane, #graph [data-implied-edge] path.lane')).slice(0, 60);
  for (const p of lanes) {
    const cs = getComputedStyle(p);
    let a = Number(cs.strokeOpacity) * Number(cs.opacity);
    for (let el = p.parentElement; el && el.id !== 'graph'; el = el.parentElement) a *= Number(getComputedStyle(el).opacity);
    const c = rgb(cs.stroke).slice(0, 3).map((v, i) => v * a + bg[i] * (1 - a));
    const l1 = lum(c);
    const l2 = lum(bg);
    min = Math.min(min, (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05));
    n++;
  }
  return { n, min: n ? min : 0 };
}

/** → {legend entry: 'ok' | 'absent' | mismatch text} at the current head. */
function legendMatchInPage() {
  const SPEC = {
    rendered: { sel: '.node.state-rendered.floor:not(.lit):not(.hit):not(.entry):not(.phantom):not(.offtopo):not(.picked)', part: '.box', props: ['stroke', 'fill', 'stroke-opacity', 'fill-opacity'] },
    skipped: { sel: '.node.state-skipped:not(.floor):not(.lit):not(.hit):not(.entry):not(.phantom):not(.offtopo):not(.picked)', part: '.box', props: ['stroke', 'fill', 'stroke-opacity', 'fill-opacity'] },
    failed: { sel: '.node.state-failed:not(.lit):not(.hit):not(.entry):not(.phantom):not(.offtopo):not(.picked)', part: '.box', props: ['stroke', 'fill'] },
    entry: { sel: '.node.entry.floor:not(.lit):not(.hit):not(.state-failed):not(.picked)', part: '.box', props: ['stroke'] },
    'lit lane': { sel: '.edge.lit', part: 'path.lane', props: ['stroke', 'stroke-dasharray'] },
    'self tick': { sel: '.node.hit.hit-self.state-rendered', part: '.box', props: ['stroke'], part2: '.halo', props2: ['stroke', 'stroke-opacity'] },
    recovery: { sel: '.node.hit.hit-recovered', part: '.box', props: ['stroke'], part2: '.halo', props2: ['stroke', 'stroke-opacity'] },
    'phantom ingress': { sel: '.node.phantom', part: '.box', props: ['stroke-dasharray'] },
  };
  const out = {};
  for (const [name, spec] of Object.entries(SPEC)) {
    const sw = document.querySelector(`#legend .lg[data-legend="${name}"] svg`);
    const graphEl = document.querySelector('#graph ' + spec.sel);
    if (!sw) {
      out[name] = 'no swatch';
      continue;
    }
    if (!graphEl) {
      out[name] = 'absent';
      continue;
    }
    const swEl = sw.querySelector(spec.sel.replace(/:not\([^)]*\)/g, ''));
    if (!swEl) {
      out[name] = `the swatch is not drawn with ${spec.sel}`;
      continue;
    }
    const bad = [];
    const cmp = (part, props) => {
      const a = getComputedStyle(swEl.querySelector(part) || swEl);
      const b = getComputedStyle(graphEl.querySelector(part) || graphEl);
      for (const p of props) if (a.getPropertyValue(p) !== b.getPropertyValue(p)) bad.push(`${part} ${p}: swatch ${a.getPropertyValue(p)} vs graph ${b.getPropertyValue(p)}`);
    };
    cmp(spec.part, spec.props);
    if (spec.part2) cmp(spec.part2, spec.props2);
    out[name] = bad.length ? bad.join('; ') : 'ok';
  }
  return out;
}

async function checkLarge(page, snap, frame) {
  const n = snap.nodes.length;
  await page.keyboard.press('0');
  await frame();
  const mm = await page.evaluate(() => !document.getElementById('minimap').classList.contains('hidden'));
  check(mm === n > 50, `--large: the minimap is shown exactly above 50 nodes (${n} nodes, shown ${mm})`);
  if (mm) {
    const before = await page.getAttribute('#graph-svg', 'viewBox');
    const box = await page.locator('#minimap').boundingBox();
    await page.mouse.click(box.x + box.width * 0.8, box.y + box.height * 0.8);
    await frame();
    const after = await page.getAttribute('#graph-svg', 'viewBox');
    check(before !== after, `--large: a click on the minimap moves the view (${before} → ${after})`);
    await page.keyboard.press('0');
    await frame();
  }
  // Far: overlay labels, readable and apart.
  const far = await page.evaluate(() => {
    const layers = document.getElementById('graph-layers');
    const labels = Array.from(document.querySelectorAll('#labels .olabel')).filter((l) => l.style.display !== 'none');
    const rects = labels.map((l) => l.getBoundingClientRect());
    let overlaps = 0;
    for (let i = 0; i < rects.length; i++) for (let j = i + 1; j < rects.length; j++) if (rects[i].left < rects[j].right && rects[j].left < rects[i].right && rects[i].top < rects[j].bottom && rects[j].top < rects[i].bottom) overlaps++;
    return { far: layers.classList.contains('lod-far'), count: labels.length, minFont: Math.min(...labels.map((l) => parseFloat(getComputedStyle(l).fontSize))), overlaps, texts: labels.map((l) => l.textContent) };
  });
  check(far.far, '--large: at the fit zoom the graph is drawn at the far level of detail');
  check(far.count >= 5 && far.minFont >= 10 && far.overlaps === 0, `--large: at the fit zoom ${far.count} labels are drawn at ≥ 10 px without overlaps (smallest ${far.minFont} px, ${far.overlaps} overlaps)`);
  const names = new Set(snap.nodes.map((x) => nameOf(snap, x.id)));
  const unknown = far.texts.filter((t) => !names.has(t) && !(t.endsWith('…') && [...names].some((nm) => nm.startsWith(t.slice(0, -1)))));
  check(unknown.length === 0, `--large: every overlay label is a node's name (unknown: ${unknown.slice(0, 3).join(', ') || 'none'})`);
  // Deepest zoom: nodes at 4× their size, however small the fit is.
  for (let i = 0; i < 40; i++) await page.keyboard.press('+');
  await frame();
  const deep = await page.evaluate(() => {
    const b = document.querySelector('#graph [data-node] .box');
    const s = document.getElementById('graph-svg').getScreenCTM().a;
    return { scale: s, w: Number(b.getAttribute('width')) * s };
  });
  check(deep.scale >= 3.9, `--large: zooming in reaches nodes at 4× their size (scale ${deep.scale.toFixed(2)}, box ${deep.w.toFixed(0)} px wide)`);
  // Near: names in the boxes, facet names on lanes.
  await page.keyboard.press('0');
  for (let i = 0; i < 8; i++) await page.keyboard.press('+');
  await frame();
  await frame();
  const near = await page.evaluate(() => {
    const layers = document.getElementById('graph-layers');
    const s = document.getElementById('graph-svg').getScreenCTM().a;
    const gr = document.getElementById('graph').getBoundingClientRect();
    let shown = 0;
    let minPx = Infinity;
    for (const t of document.querySelectorAll('#graph [data-node] .name')) {
      const r = t.getBoundingClientRect();
      if (r.right < gr.left || r.left > gr.right || r.bottom < gr.top || r.top > gr.bottom) continue;
      if (getComputedStyle(t).display === 'none') continue;
      shown++;
      minPx = Math.min(minPx, parseFloat(getComputedStyle(t).fontSize) * s);
    }
    const lanes = Array.from(document.querySelectorAll('#labels .olabel.lane')).filter((l) => l.style.display !== 'none');
    const facets = new Set(Array.from(document.querySelectorAll('#graph [data-edge]'), (g) => g.getAttribute('data-edge').split('::').pop()));
    return { lod: layers.className, scale: s, shown, minPx, laneLabels: lanes.length, bad: lanes.map((l) => l.textContent).filter((t) => !facets.has(t)) };
  });
  check(!/lod-far/.test(near.lod) && near.shown > 0 && near.minPx >= 8, `--large: zoomed in (scale ${near.scale.toFixed(2)}), ${near.shown} names are drawn in their boxes at ≥ 8 px (smallest ${near.minPx.toFixed(1)} px)`);
  check(near.laneLabels > 0 && near.bad.length === 0, `--large: zoomed in, facet names label the lanes (${near.laneLabels} labels; not a facet: ${near.bad.slice(0, 3).join(', ') || 'none'})`);
  await page.keyboard.press('0');
}

async function checkSmall(page, snap, F, pick, nodeSel, frame) {
  await page.setViewportSize({ width: 760, height: 900 });
  await page.waitForTimeout(400);
  const lay = await page.evaluate(() => {
    const r = (id) => {
      const b = document.getElementById(id).getBoundingClientRect();
      return { x: b.x, y: b.y, width: b.width, height: b.height, bottom: b.bottom, right: b.right };
    };
    return { sw: document.documentElement.scrollWidth, vw: window.innerWidth, graph: r('graph'), side: r('sidebar'), seek: r('seek'), play: r('btn-play'), legendShown: getComputedStyle(document.getElementById('legend')).display !== 'none', legendBtn: getComputedStyle(document.getElementById('legend-btn')).display !== 'none' };
  });
  check(lay.sw <= lay.vw, `--small: no sideways scrolling at 760 px (scrollWidth ${lay.sw})`);
  check(lay.graph.width >= 740 && lay.side.y >= lay.graph.bottom - 1 && lay.side.height >= 100, `--small: the graph spans the width and the sidebar sits under it (graph ${JSON.stringify(lay.graph)}, sidebar ${JSON.stringify(lay.side)})`);
  check(lay.seek.right <= 760 && lay.seek.bottom <= 900 && lay.seek.width >= 200 && lay.play.right <= 760 && lay.play.bottom <= 900, `--small: the transport and slider stay on screen (slider ${JSON.stringify(lay.seek)})`);
  check(!lay.legendShown && lay.legendBtn, '--small: the legend folds behind a "legend" button');
  await page.click('#legend-btn');
  const lg = await page.evaluate(() => Array.from(document.querySelectorAll('#legend .lg')).filter((e) => e.getBoundingClientRect().width > 0 && e.getBoundingClientRect().right <= window.innerWidth).length);
  check(lg === 8, `--small: the legend button shows all 8 entries on screen (got ${lg})`);
  await page.keyboard.press('Escape');
  // The inspector as a bottom sheet over the sidebar, not over the clicked node.
  if (F > 0) {
    await page.evaluate((p) => {
      location.hash = `frame=${p}`;
    }, pick);
    await frame();
    // the head's node, or else the first node whose box centre is not under a control
    const hit = await page.evaluate((first) => {
      const gs = Array.from(document.querySelectorAll('#graph [data-node]'));
      gs.sort((a, b) => (b.getAttribute('data-node') === first) - (a.getAttribute('data-node') === first));
      for (const g of gs) {
        const b = g.querySelector('.box').getBoundingClientRect();
        const x = b.left + b.width / 2;
        const y = b.top + b.height / 2;
        const el = document.elementFromPoint(x, y);
        if (el && g.contains(el)) return { id: g.getAttribute('data-node'), x, y };
      }
      return null;
    }, snap.frames[pick].node);
    const id = hit && hit.id;
    if (check(hit, '--small: a node can be clicked')) {
      await page.mouse.click(hit.x, hit.y);
      await page.waitForFunction(() => !document.getElementById('inspector').classList.contains('closed'), null, { timeout: 5000 }).catch(() => {});
      await checkPlacement(page, id, '--small: the clicked node');
    }
  }
  if (opts.screenshot) {
    const p = opts.screenshot.replace(/\.png$/, '') + '-small.png';
    await page.screenshot({ path: p });
    note(`screenshot written to ${p}`);
  }
  await page.keyboard.press('Escape');
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.waitForTimeout(200);
}

function parseRgb(s) {
  return (s.match(/[\d.]+/g) || []).map(Number).slice(0, 3);
}

function luminance([r, g, b]) {
  const f = (c) => ((c /= 255) <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
  return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
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
