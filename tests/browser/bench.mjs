#!/usr/bin/env node
// Browser benchmark of the reactor-devtools SPA at scale (issue 9 item 3). Prints timings and
// ratios against the goals; asserts nothing.
//
// Usage (from the repository root):
//   cargo build --release --bin reactor --example gen_ledger
//   node tests/browser/bench.mjs [--nodes 400,2000] [--receipts 100000] [--steps 40] [--jumps 20]
//                                [--play-ms 4000] [--dir target/spa-bench] [--bin target/release/reactor]
//                                [--gen target/release/examples/gen_ledger] [--frames lazy|full]
//
// For each node count it generates (once, cached under --dir) a synthetic state directory with
// `gen_ledger` (valid hash chains), starts `reactor devtools <dir> -p 0`, opens the page in
// headless chromium (1440 × 900) and measures:
//   - step: real → and ← key presses from the middle of the ledger; input → next paint (the Event
//     Timing API's duration of the keydown), and main-thread CPU time per step (from a trace: on a
//     shared machine wall time mostly measures the other processes);
//   - jump: real clicks at pseudo-random points of the slider (`#seek`), measured the same way;
//   - play 8×: frames advanced in --play-ms against the nominal 1000/75 per second, and the
//     longest gap between rendered frames meanwhile;
//   - lanes through boxes: drawn lanes that pass through a node box other than their own ends;
//   - pan and zoom: frame gaps during a real drag and ten wheel notches.
// Goals: ≤ 50 ms per step/jump at 400 nodes, ≤ 150 ms at 2,000; 8× playback keeps up (ratio ≈ 1).
// --frames forces the SPA's lazy frames (the default from 20,000 frames on) or the whole snapshot.
// The viewer embeds the assets at build time: rebuild the binary after changing assets/.

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { join, resolve } from 'node:path';
import { launch, countCrossingsInPage } from './common.mjs';

const USAGE = 'usage: node tests/browser/bench.mjs [--nodes 400,2000] [--receipts 100000] [--steps 40] [--jumps 20] [--play-ms 4000] [--dir <cache>] [--bin <reactor>] [--gen <gen_ledger>] [--frames lazy|full]';

function parseArgs(argv) {
  const out = { nodes: [400, 2000], receipts: 100000, steps: 40, jumps: 20, playMs: 4000, dir: 'target/spa-bench', bin: 'target/release/reactor', gen: 'target/release/examples/gen_ledger' };
  const int = (name, v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) usage(`${name} needs a non-negative integer`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      if (i + 1 >= argv.length) usage(`missing value for ${a}`);
      return argv[++i];
    };
    if (a === '--nodes') out.nodes = val().split(',').map((s) => int('--nodes', s));
    else if (a === '--receipts') out.receipts = int(a, val());
    else if (a === '--steps') out.steps = int(a, val());
    else if (a === '--jumps') out.jumps = int(a, val());
    else if (a === '--play-ms') out.playMs = int(a, val());
    else if (a === '--dir') out.dir = val();
    else if (a === '--bin') out.bin = val();
    else if (a === '--gen') out.gen = val();
    else if (a === '--frames') {
      out.frames = val();
      if (out.frames !== 'lazy' && out.frames !== 'full') usage('--frames must be lazy or full');
    }
    else if (a === '-h' || a === '--help') {
      console.log(USAGE);
      process.exit(0);
    } else usage(`unknown argument ${a}`);
  }
  return out;
}

function usage(msg) {
  console.error(`bench.mjs: ${msg}\n${USAGE}`);
  process.exit(2);
}

const opts = parseArgs(process.argv.slice(2));

function ensureLedger(nodes) {
  const dir = resolve(opts.dir, `n${nodes}-r${opts.receipts}`);
  if (existsSync(join(dir, 'receipts.json'))) return dir;
  if (!existsSync(opts.gen)) usage(`${opts.gen} is missing: run cargo build --release --example gen_ledger`);
  mkdirSync(opts.dir, { recursive: true });
  console.log(`generating ${dir} …`);
  const r = spawnSync(opts.gen, [dir, '--nodes', String(nodes), '--receipts', String(opts.receipts)], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`gen_ledger failed (${r.status})`);
  return dir;
}

/** Starts the viewer; → {url, child}. */
function startViewer(dir) {
  if (!existsSync(opts.bin)) usage(`${opts.bin} is missing: run cargo build --release --bin reactor`);
  const child = spawn(opts.bin, ['devtools', dir, '-p', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((res, rej) => {
    const rl = createInterface({ input: child.stdout });
    rl.on('line', (line) => {
      const m = /open (http:\/\/\S+)/.exec(line);
      if (m) res({ url: m[1], child });
    });
    child.on('exit', (code) => rej(new Error(`the viewer exited (${code}) before listening`)));
  });
}

const stats = (xs) => {
  const s = xs.slice().sort((a, b) => a - b);
  const q = (p) => (s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : NaN);
  return { n: s.length, median: q(0.5), p95: q(0.95), max: s.length ? s[s.length - 1] : NaN };
};
const ms = (x) => `${x.toFixed(1)} ms`;

/**
 * Main-thread CPU time per action (thread time of the renderer's main-thread tasks in a trace),
 * which a busy machine inflates far less than wall time. `act(k)` → {key} or {seek}.
 */
async function mainThreadMs(context, page, n, act) {
  const cdp = await context.newCDPSession(page);
  const events = [];
  cdp.on('Tracing.dataCollected', (d) => events.push(...d.value));
  const done = new Promise((r) => cdp.on('Tracing.tracingComplete', r));
  await cdp.send('Tracing.start', { traceConfig: { includedCategories: ['toplevel', 'devtools.timeline'] } });
  await page.evaluate(
    async ({ n, acts }) => {
      const frameDone = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
      const seek = document.getElementById('seek');
      for (let k = 0; k < n; k++) {
        const a = acts[k];
        if (a.key) document.dispatchEvent(new KeyboardEvent('keydown', { key: a.key, bubbles: true, cancelable: true }));
        else {
          seek.value = String(a.seek);
          seek.dispatchEvent(new Event('input', { bubbles: true }));
        }
        await frameDone();
      }
      seek.dispatchEvent(new Event('change', { bubbles: true }));
    },
    { n, acts: Array.from({ length: n }, (_, k) => act(k)) },
  );
  await cdp.send('Tracing.end');
  await done;
  await cdp.detach().catch(() => {});
  const main = events.find((e) => e.name === 'thread_name' && e.args && e.args.name === 'CrRendererMain');
  if (!main) return NaN;
  let total = 0;
  for (const e of events) {
    if (e.pid === main.pid && e.tid === main.tid && e.ph === 'X' && e.name === 'ThreadControllerImpl::RunTask' && typeof e.tdur === 'number') total += e.tdur / 1000;
  }
  return total / n;
}

async function benchOne(nodes) {
  const dir = ensureLedger(nodes);
  const bytes = statSync(join(dir, 'receipts.json')).size;
  const { url, child } = await startViewer(dir);
  const browser = await launch();
  try {
    const page = browser.context.pages()[0] || (await browser.context.newPage());
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e && e.message ? e.message : e)));
    const t0 = Date.now();
    await page.goto(opts.frames ? `${url}?frames=${opts.frames}` : url, { waitUntil: 'load' });
    // A large ledger opens lazily (issue 9 item 2): wait until every frame is indexed.
    await page.waitForFunction(() => !!window.__REACTOR_SNAPSHOT__ && !!window.__REACTOR_VIEW__ && !window.__REACTOR_VIEW__.indexing, null, { timeout: 600000, polling: 250 });
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0))));
    const load = Date.now() - t0;
    const shape = await page.evaluate(() => {
      const s = window.__REACTOR_SNAPSHOT__;
      return { F: window.__REACTOR_VIEW__.frames, N: s.nodes.length, E: s.edges.length, lazy: window.__REACTOR_VIEW__.lazy };
    });
    const goal = nodes <= 400 ? 50 : 150;
    console.log(`\n${shape.N} nodes · ${shape.E} edges · ${shape.F} receipts (${(bytes / 1048576).toFixed(1)} MiB) — page loaded in ${(load / 1000).toFixed(1)} s${shape.lazy ? ' (lazy frames)' : ''}`);

    const cross = await page.evaluate(countCrossingsInPage);
    console.log(`  lanes through boxes: ${cross.crossing} of ${cross.edges}`);

    // Input → next paint, from the Event Timing API (real key presses and real clicks on the
    // slider, so the events are trusted); entries under 16 ms are not reported and count as 16.
    await page.evaluate(() => {
      window.__benchEvents = [];
      new PerformanceObserver((l) => {
        for (const e of l.getEntries()) if (e.interactionId) window.__benchEvents.push({ id: e.interactionId, name: e.name, d: e.duration });
      }).observe({ type: 'event', durationThreshold: 16 });
      const seek = document.getElementById('seek');
      seek.value = String(Math.floor(Number(seek.max) / 2));
      seek.dispatchEvent(new Event('input', { bubbles: true }));
      seek.dispatchEvent(new Event('change', { bubbles: true }));
      document.activeElement && document.activeElement.blur && document.activeElement.blur();
    });
    await page.waitForTimeout(400);
    const settle = () => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r, 0)))));
    const collect = async (n, act) => {
      const out = [];
      for (let k = 0; k < n; k++) {
        const before = await page.evaluate(() => window.__benchEvents.length);
        await act(k);
        await settle();
        await page.waitForTimeout(30);
        const evs = await page.evaluate((b) => window.__benchEvents.slice(b), before);
        out.push(evs.length ? Math.max(...evs.map((e) => e.d)) : 16);
      }
      return out;
    };
    const stepT = (await collect(opts.steps, () => page.keyboard.press('ArrowRight'))).concat(await collect(opts.steps, () => page.keyboard.press('ArrowLeft')));
    const track = await page.locator('#seek').boundingBox();
    let x = 12345;
    const jumpT = await collect(opts.jumps, async () => {
      x = (x * 1103515245 + 12345) % 2147483648;
      await page.mouse.click(track.x + 8 + ((x % 1000) / 1000) * (track.width - 16), track.y + track.height / 2);
    });
    await page.evaluate(() => document.activeElement && document.activeElement.blur && document.activeElement.blur());
    const cpuStep = await mainThreadMs(browser.context, page, opts.steps, (k) => ({ key: k % 2 ? 'ArrowLeft' : 'ArrowRight' }));
    const cpuJump = await mainThreadMs(browser.context, page, opts.jumps, (k) => ({ seek: (k * 7919) % shape.F }));
    const st = stats(stepT);
    const jt = stats(jumpT);
    console.log(`  step (→ ×${opts.steps}, ← ×${opts.steps}), input → next paint: median ${ms(st.median)} · p95 ${ms(st.p95)} · max ${ms(st.max)}  RATIO p95/goal = ${(st.p95 / goal).toFixed(2)}x (goal ≤ ${goal} ms)`);
    console.log(`      main-thread CPU per step: ${ms(cpuStep)}  RATIO/goal = ${(cpuStep / goal).toFixed(2)}x`);
    console.log(`  jump (slider clicks ×${opts.jumps}), input → next paint: median ${ms(jt.median)} · p95 ${ms(jt.p95)} · max ${ms(jt.max)}  RATIO p95/goal = ${(jt.p95 / goal).toFixed(2)}x (goal ≤ ${goal} ms)`);
    console.log(`      main-thread CPU per jump: ${ms(cpuJump)}  RATIO/goal = ${(cpuJump / goal).toFixed(2)}x`);

    if (opts.playMs > 0) {
      const play = await page.evaluate(async (playMs) => {
        const frameDone = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
        const head = () => {
          const m = /^frame (\d+)\//.exec(document.getElementById('readout').textContent);
          return m ? Number(m[1]) : -1;
        };
        const sel = document.getElementById('speed');
        sel.value = '8';
        sel.dispatchEvent(new Event('change', { bubbles: true }));
        const seek = document.getElementById('seek');
        seek.value = String(Math.floor(Number(seek.max) / 3));
        seek.dispatchEvent(new Event('input', { bubbles: true }));
        seek.dispatchEvent(new Event('change', { bubbles: true }));
        await frameDone();
        await new Promise((r) => setTimeout(r, 300));
        const gaps = [];
        let last = 0;
        let running = true;
        const tick = (t) => {
          if (last) gaps.push(t - last);
          last = t;
          if (running) requestAnimationFrame(tick);
        };
        requestAnimationFrame(tick);
        const h0 = head();
        const t0 = performance.now();
        document.getElementById('btn-play').click();
        await new Promise((r) => setTimeout(r, playMs));
        const h1 = head();
        const elapsed = performance.now() - t0;
        document.getElementById('btn-play').click();
        running = false;
        return { advanced: h1 - h0, elapsed, gaps };
      }, opts.playMs);
      const expected = play.elapsed / 75;
      const gt = stats(play.gaps);
      console.log(`  play 8× (${(play.elapsed / 1000).toFixed(1)} s): ${play.advanced} steps of ${expected.toFixed(0)} nominal  RATIO = ${(play.advanced / expected).toFixed(2)}x (goal ≈ 1) · frame gap p95 ${ms(gt.p95)} · max ${ms(gt.max)}`);
    }
    // Pan and zoom: a real drag across the graph, then 10 wheel notches; frame gaps meanwhile.
    await page.keyboard.press('0');
    await page.waitForTimeout(300);
    const from = await page.evaluate(() => {
      const gr = document.getElementById('graph').getBoundingClientRect();
      for (let y = gr.top + 60; y < gr.bottom - 40; y += 17) {
        for (let x = gr.left + 30; x < gr.right - 30; x += 19) {
          const el = document.elementFromPoint(x, y);
          if (el && el.classList && el.classList.contains('bg')) return { x, y };
        }
      }
      return null;
    });
    if (from) {
      await page.evaluate(() => {
        window.__gaps = [];
        window.__run = true;
        let last = 0;
        const tick = (t) => {
          if (last) window.__gaps.push(t - last);
          last = t;
          if (window.__run) requestAnimationFrame(tick);
        };
        requestAnimationFrame(tick);
      });
      await page.mouse.move(from.x, from.y);
      await page.mouse.down();
      for (let i = 1; i <= 30; i++) await page.mouse.move(from.x + i * 8, from.y + i * 3);
      await page.mouse.up();
      for (let i = 0; i < 10; i++) await page.mouse.wheel(0, -120);
      await page.waitForTimeout(400);
      const gaps = await page.evaluate(() => {
        window.__run = false;
        return window.__gaps;
      });
      const g = stats(gaps);
      console.log(`  pan + wheel zoom: ${g.n} frames · frame gap median ${ms(g.median)} · p95 ${ms(g.p95)} · max ${ms(g.max)}`);
    }
    if (errors.length) console.log(`  page errors: ${errors.slice(0, 3).join(' | ')}`);
  } finally {
    await browser.close();
    child.kill('SIGTERM');
  }
}

for (const n of opts.nodes) await benchOne(n);
