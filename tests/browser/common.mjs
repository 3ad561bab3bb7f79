// Shared pieces of the headless-browser scripts (spa.mjs, bench.mjs): launching Debian's chromium
// through playwright-core, and the geometry probe that counts lanes drawn through node boxes.
//
// Environment: CHROMIUM_PATH (default /usr/bin/chromium). Loopback only; no network.

import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/**
 * Launches chromium with a throw-away profile, in the dark colour scheme (playwright's default
 * would be light). → `{context, close}`; throws with a one-line message when chromium cannot be
 * started.
 */
export async function launch(viewport = { width: 1440, height: 900 }, colorScheme = 'dark') {
  const executablePath = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
  const userDataDir = mkdtempSync(join(tmpdir(), 'reactor-spa-'));
  let context;
  try {
    context = await chromium.launchPersistentContext(userDataDir, { executablePath, headless: true, args: CHROMIUM_ARGS, viewport, colorScheme });
  } catch (err) {
    rmSync(userDataDir, { recursive: true, force: true });
    throw new Error(`launch chromium at ${executablePath}: ${err && err.message ? err.message.split('\n')[0] : err}`);
  }
  return {
    context,
    async close() {
      await context.close().catch(() => {});
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Runs in the page: counts the drawn lanes (`[data-edge] path.lane`) that pass through the box of a
 * node other than their own producer and subscriber. Lanes are sampled every 3 user units and
 * boxes shrunk by 1 unit, so touching a border does not count. → `{edges, crossing, samples}`.
 */
export function countCrossingsInPage() {
  // The graph may be one <svg> or a stack of them sharing one viewBox: map each element through
  // its own root into user units.
  const root = document.getElementById('graph');
  const toUser = (el) => el.ownerSVGElement.getScreenCTM().inverse().multiply(el.getScreenCTM());
  const boxes = [];
  for (const g of root.querySelectorAll('[data-node]')) {
    const box = g.querySelector('.box');
    if (!box) continue;
    const m = toUser(box);
    const b = box.getBBox();
    const p1 = new DOMPoint(b.x, b.y).matrixTransform(m);
    const p2 = new DOMPoint(b.x + b.width, b.y + b.height).matrixTransform(m);
    boxes.push({ id: g.getAttribute('data-node'), x1: Math.min(p1.x, p2.x) + 1, y1: Math.min(p1.y, p2.y) + 1, x2: Math.max(p1.x, p2.x) - 1, y2: Math.max(p1.y, p2.y) - 1 });
  }
  const CELL = 200;
  const grid = new Map();
  for (const b of boxes) {
    for (let cx = Math.floor(b.x1 / CELL); cx <= Math.floor(b.x2 / CELL); cx++) {
      for (let cy = Math.floor(b.y1 / CELL); cy <= Math.floor(b.y2 / CELL); cy++) {
        const k = cx + ',' + cy;
        if (!grid.has(k)) grid.set(k, []);
        grid.get(k).push(b);
      }
    }
  }
  let edges = 0;
  let crossing = 0;
  let samples = 0;
  for (const g of root.querySelectorAll('[data-edge]')) {
    const path = g.querySelector('path.lane');
    if (!path) continue;
    edges++;
    const key = g.getAttribute('data-edge');
    const arrow = key.indexOf('→');
    const producer = key.slice(0, arrow);
    const subscriber = key.slice(arrow + 1, key.lastIndexOf('::'));
    const m = toUser(path);
    const len = path.getTotalLength();
    let hit = false;
    for (let s = 0; s <= len && !hit; s += 3) {
      samples++;
      const p = path.getPointAtLength(s).matrixTransform(m);
      const cell = grid.get(Math.floor(p.x / CELL) + ',' + Math.floor(p.y / CELL));
      if (!cell) continue;
      for (const b of cell) {
        if (b.id === producer || b.id === subscriber) continue;
        if (p.x > b.x1 && p.x < b.x2 && p.y > b.y1 && p.y < b.y2) {
          hit = true;
          break;
        }
      }
    }
    if (hit) crossing++;
  }
  return { edges, crossing, samples };
}
