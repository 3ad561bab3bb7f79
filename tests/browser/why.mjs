// "Why did this render" in the SPA (issue 9 item 6), shared by spa.mjs and lazy.mjs: the
// inspector's Receipt tab and the timeline tooltip of a frame show the cause that
// GET /api/frames gives for it.

/** The words the page must show for each cause of a `why` object (src/replay/why.rs). */
export function causeWords(why) {
  if (why === null) return ['skipped'];
  const words = [];
  for (const c of why.causes) {
    if (c === 'first') words.push('first receipt of this node');
    else if (c === 'contract') words.push('contract changed');
    else if (c === 'inputs') words.push(why.inputs.length === 1 ? 'input moved' : 'inputs moved');
    else if (c === 'retry') words.push('retried after the failed');
    else if (c === 'wake') words.push(`memo key unchanged; ${why.wake} wake`);
    else if (c === 'unknown') words.push('memo key unreadable');
  }
  for (const m of (why.inputs || []).slice(0, 6)) if (typeof m.frame === 'number') words.push(`(frame ${m.frame})`);
  return words;
}

/**
 * With the inspector open on frame `i` (Receipt tab), checks its "why" line and row i's tooltip
 * against GET /api/frames. `api(path)` → {status, body}; `check(cond, text)` records a result.
 * → the why object (or null) the server gave.
 */
export async function checkWhy(page, api, i, check, label = '') {
  const got = await api(`/api/frames?from=${i}&count=1`);
  if (!check(got.status === 200 && got.body && Array.isArray(got.body.frames) && got.body.frames.length === 1, `${label}GET /api/frames?from=${i}&count=1 answers one frame (got ${got.status})`)) return undefined;
  const why = got.body.frames[0].why;
  await page.waitForFunction(() => {
    const el = document.querySelector('#insp-body .why-line');
    return el && !/cause not available/.test(el.textContent);
  }, null, { timeout: 10000 }).catch(() => {});
  const line = await page.evaluate(() => document.querySelector('#insp-body .why-line')?.textContent || '');
  const words = causeWords(why);
  const miss = words.filter((w) => !line.includes(w));
  check(line.startsWith('why ') && miss.length === 0, `${label}the inspector shows frame ${i}'s cause ${JSON.stringify(why && why.causes)} (missing ${JSON.stringify(miss)} in "${line}")`);
  // The tooltip arrives with the row's page.
  await page.waitForFunction((x) => {
    const row = document.querySelector(`#timeline [data-frame="${x}"]`);
    return row && /\n(why: |skipped)/.test(row.title);
  }, i, { timeout: 10000 }).catch(() => {});
  const tip = await page.getAttribute(`#timeline [data-frame="${i}"]`, 'title').catch(() => null);
  const tipMiss = words.filter((w) => !(tip || '').includes(w));
  check(tip && tipMiss.length === 0, `${label}timeline row ${i}'s tooltip carries the cause (got ${JSON.stringify(tip)})`);
  return why;
}
