#!/usr/bin/env node
// Headless-browser test of a `reactor-devtools --export` report opened from file:// (VIEWER.md
// §2.9, §8.18; issue 9 item 7).
//
// Usage:
//   node tests/browser/export.mjs --file <report.html> --verdict verified|tampered
//                                 [--screenshot <png>] [--timeout <ms>]
//
// Asserts:
//   - the page makes no request besides its own file (no http, no other file, no data fetch) and
//     logs no console or page error — the report is self-contained under its own CSP;
//   - the header shows the chain verdict (`chain ✓ verified` / `chain ✗ TAMPERED`, with the
//     failing chains listed when tampered), and the SPA's chain badge agrees;
//   - the SPA replays the embedded snapshot: status line, every node drawn, → steps, a tampered
//     frame carries ✗ in the timeline;
//   - clicking the head node opens the inspector, whose Receipt tab shows the embedded receipt
//     and the frame's cause ("why …"), and a timeline row's tooltip carries the cause;
//   - the Run, Outputs and Contract sections are present.
// Exit status: 0 when every assertion holds, 1 otherwise, 2 on a usage error.
//
// Environment: CHROMIUM_PATH (default /usr/bin/chromium). No network.

import { pathToFileURL } from 'node:url';
import { existsSync } from 'node:fs';
import { launch } from './common.mjs';

const USAGE = 'usage: node tests/browser/export.mjs --file <report.html> --verdict verified|tampered [--screenshot <png>] [--timeout <ms>]';

function parseArgs(argv) {
  const out = { file: null, verdict: null, screenshot: null, timeout: 120000 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      if (i + 1 >= argv.length) usage(`missing value for ${a}`);
      return argv[++i];
    };
    if (a === '--file') out.file = val();
    else if (a === '--verdict') out.verdict = val();
    else if (a === '--screenshot') out.screenshot = val();
    else if (a === '--timeout') out.timeout = Number(val());
    else usage(`unknown argument ${a}`);
  }
  if (!out.file || !existsSync(out.file)) usage('--file must name an existing report');
  if (out.verdict !== 'verified' && out.verdict !== 'tampered') usage('--verdict must be verified or tampered');
  if (!Number.isFinite(out.timeout) || out.timeout <= 0) usage('--timeout must be a positive number');
  return out;
}

function usage(msg) {
  console.error(`export.mjs: ${msg}\n${USAGE}`);
  process.exit(2);
}

const opts = parseArgs(process.argv.slice(2));
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
const note = (m) => console.log(`export.mjs: ${m}`);

const watchdog = setTimeout(() => {
  console.error(`FAIL the run did not finish within ${opts.timeout} ms`);
  process.exit(1);
}, opts.timeout);

async function main() {
  const url = pathToFileURL(opts.file).href;
  let browser;
  try {
    browser = await launch({ width: 1440, height: 900 });
  } catch (err) {
    check(false, err.message);
    return;
  }
  try {
    await run(browser.context, url);
  } finally {
    await browser.close();
  }
}

async function run(context, url) {
  const page = context.pages()[0] || (await context.newPage());
  const errors = [];
  const requests = [];
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(`page error: ${e && e.message ? e.message : e}`));
  page.on('request', (r) => {
    if (r.url() !== url && !r.url().startsWith('data:')) requests.push(r.url());
  });
  page.on('requestfailed', (r) => r.url() !== url && requests.push(`failed: ${r.url()}`));
  await page.goto(url, { waitUntil: 'load' });
  await page.waitForFunction(() => !!window.__REACTOR_SNAPSHOT__ || /^error/.test(document.getElementById('status-text')?.textContent || ''), null, { timeout: 60000 });
  const snap = await page.evaluate(() => {
    const s = window.__REACTOR_SNAPSHOT__;
    return { F: s.frames.length, nodes: s.nodes.map((n) => n.id), edges: s.edges.length, ok: s.chainVerify.ok, invalid: s.chainVerify.invalidFrames, why: s.frames.map((f) => f.why), hasTopology: s.hasTopology };
  });
  note(`embedded snapshot: ${snap.F} frames · ${snap.nodes.length} nodes · chain ok ${snap.ok}`);
  const tampered = opts.verdict === 'tampered';
  const want = tampered ? 'chain ✗ TAMPERED' : 'chain ✓ verified';

  // ---- the header's verdict, visible without scrolling ----
  const head = await page.evaluate(() => {
    const v = document.getElementById('report-verdict');
    const r = v.getBoundingClientRect();
    return { text: v.textContent.trim(), visible: r.width > 0 && r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight, errors: Array.from(document.querySelectorAll('#report-chain-errors li'), (li) => li.textContent), title: document.title, h1: document.getElementById('report-title').textContent };
  });
  check(head.text === want && head.visible, `the report header shows "${want}" on the first screen (got "${head.text}", visible ${head.visible})`);
  check(snap.ok === !tampered, `the embedded chain verdict is ${!tampered} (got ${snap.ok})`);
  if (tampered) check(head.errors.length >= 1 && head.errors.every((e) => e.includes(': ')), `a tampered report lists the failing chains (${head.errors.length}: ${head.errors[0] || ''})`);
  else check(head.errors.length === 0, 'a verified report lists no chain error');
  check(head.title === head.h1 && head.title.length > 0, `the document title is the report title (${head.title})`);
  const badge = (await page.textContent('#chain-badge')).trim();
  check(badge === want, `the replay's chain badge reads "${want}" (got "${badge}")`);

  // ---- the replay runs from the embedded snapshot ----
  const status = await page.textContent('#status-text');
  let expStatus = `${snap.F} receipts · ${snap.nodes.length} nodes · ${snap.edges} edges`;
  if (!snap.hasTopology) expStatus += ' · no saved topology (node-only fallback)';
  check(status === expStatus, `the replay's status is "${expStatus}" (got "${status}")`);
  const drawn = await page.evaluate(() => Array.from(document.querySelectorAll('#graph [data-node]'), (g) => g.getAttribute('data-node')));
  const missing = snap.nodes.filter((id) => !drawn.includes(id));
  check(missing.length === 0, `every node is drawn (missing ${missing.join(', ') || 'none'})`);
  check(snap.why.length === snap.F && snap.why.some((w) => w && Array.isArray(w.causes)), 'every embedded frame carries its cause (`why`)');
  await page.locator('#graph').click({ position: { x: 5, y: 5 } }).catch(() => {});
  await page.keyboard.press('ArrowRight');
  check((await page.textContent('#readout')).startsWith(`frame 0/${snap.F - 1}`), '→ steps to frame 0');
  if (tampered && snap.invalid.length) {
    const bad = snap.invalid[0];
    await page.evaluate((x) => (location.hash = `frame=${x}`), bad);
    await page.waitForFunction((x) => document.getElementById('readout').textContent.startsWith(`frame ${x}/`), bad, { timeout: 5000 }).catch(() => {});
    const mark = await page.textContent(`#timeline [data-frame="${bad}"] .bad`).catch(() => '');
    check(mark === '✗', `the tampered frame ${bad} carries ✗ in the timeline (got "${mark}")`);
  }

  // ---- the inspector: embedded receipt and the cause ----
  const target = snap.why.findIndex((w) => w && Array.isArray(w.causes) && w.causes.includes('inputs'));
  const at = target >= 0 ? target : Math.max(0, snap.F - 1);
  await page.evaluate((x) => (location.hash = `frame=${x}`), at);
  await page.waitForFunction((x) => document.getElementById('readout').textContent.startsWith(`frame ${x}/`), at, { timeout: 5000 }).catch(() => {});
  const node = await page.evaluate((x) => window.__REACTOR_SNAPSHOT__.frames[x].node, at);
  await page.locator(`#graph [data-node="${node.replace(/"/g, '\\"')}"] .box`).click();
  await page.waitForSelector('#insp-body .why-line', { timeout: 10000 }).catch(() => {});
  const insp = await page.evaluate(() => ({ why: document.querySelector('#insp-body .why-line')?.textContent || '', body: document.getElementById('insp-body').textContent }));
  const w = snap.why[at];
  check(insp.why.startsWith('why ') && !/cause not available/.test(insp.why), `the inspector shows frame ${at}'s cause (got "${insp.why}")`);
  if (w && w.causes.includes('inputs')) {
    const producers = w.inputs.filter((m) => typeof m.producer === 'string').length;
    check(/moved: /.test(insp.why) && (producers === 0 || /\(frame \d+\)/.test(insp.why)), `the cause names the moved inputs and their frames (got "${insp.why}")`);
  }
  check(/content hash/.test(insp.body) && !/not embedded/.test(insp.body), 'the Receipt tab shows the embedded receipt');
  const tip = await page.getAttribute(`#timeline [data-frame="${at}"]`, 'title').catch(() => null);
  check(tip && /\nwhy: /.test(tip), `timeline row ${at}'s tooltip carries the cause (got ${JSON.stringify(tip)})`);
  await page.keyboard.press('Escape');

  // ---- the static sections ----
  const sections = await page.evaluate(() => ({
    run: !!document.querySelector('#run table.frames tbody tr'),
    raw: (document.getElementById('raw-receipts')?.textContent || '').trim().startsWith('['),
    outputs: !!document.getElementById('outputs'),
    contract: document.getElementById('contract')?.textContent || '',
  }));
  check(sections.run && sections.raw, 'the Run section holds the frames table and the raw receipts.json');
  check(sections.outputs, 'the Outputs section is present');
  check(/Contract/.test(sections.contract), 'the Contract section is present');

  if (opts.screenshot) {
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.waitForTimeout(400);
    await page.screenshot({ path: opts.screenshot });
    note(`screenshot written to ${opts.screenshot}`);
  }
  await page.waitForTimeout(200);
  check(errors.length === 0, `no console errors${errors.length ? `: ${errors.slice(0, 5).join(' | ')}` : ''}`);
  check(requests.length === 0, `no request leaves the file${requests.length ? `: ${requests.slice(0, 5).join(' | ')}` : ''}`);
}

main()
  .catch((err) => check(false, `unexpected error: ${err && err.stack ? err.stack : err}`))
  .finally(() => {
    clearTimeout(watchdog);
    if (failures.length) {
      console.error(`export.mjs: ${failures.length} of ${checks} checks failed`);
      process.exit(1);
    }
    console.log(`export.mjs: all ${checks} checks passed`);
    process.exit(0);
  });
