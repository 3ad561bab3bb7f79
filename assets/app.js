// reactor-devtools — the replay viewer's single-page app (VIEWER.md §8, with issue 9's additions:
// fast stepping, navigation at scale, and what users noticed).
//
// Vanilla JavaScript and SVG, no build step, no external request, no eval, no inline script (the page
// runs under the CSP of VIEWER.md §6.7). Every datum comes from the snapshot of VIEWER.md §4, fetched
// from GET /api/state — or, in an exported page (§8.18), read from an inlined
// <script type="application/json" id="snapshot"> element. The inspector (§8.13) adds
// GET /api/receipt/<index> and GET /api/node/<id>?version=<v>; live follow (§8.15) adds /events; the
// ledger name comes from GET /api/ledger (project). All of these go through `DS`, and frames are read
// only through `frameAt(i)` / `S.F`. File contents and every other server-provided string are
// inserted as text, never as HTML.
//
// Paged frames (issue 9): a ledger of LAZY_MIN frames or more opens from GET /api/state?frames=none
// and the compact index of GET /api/frames?form=index (read in pages of INDEX_PAGE, the graph drawn
// after the first); `frameAt(i)` then answers a whole frame from the page cache (GET /api/frames,
// pages of PAGE around the head, the timeline rows and the inspector) or else a stub built from the
// index (frames.js). Each frame's cause (`why`) comes from the same pages: the inspector shows it,
// the timeline rows carry it as their tooltip.
//
// Rendering at scale: a head change touches only the nodes and lanes whose scrub state changed
// (the previous head's sets are diffed against the new ones); glows are drawn with halo rects and
// glow paths, never CSS filters; labels switch between in-box text and a screen-space overlay by
// zoom (level of detail); lanes are routed through the gaps between boxes.
(function () {
  'use strict';

  // ---------------------------------------------------------------------------------------------
  // Constants (VIEWER.md §8.2 geometry, §8.5 timings, §8.10 speeds)
  // ---------------------------------------------------------------------------------------------
  const SVGNS = 'http://www.w3.org/2000/svg';
  const NODE_W = 158;
  const NODE_H = 64;
  const COL_STEP = NODE_W + 40; // 198: node width + column gap
  const ROW_STEP = NODE_H + 44; // 108: node height + row gap
  const PAD_X = 40;
  const PAD_Y = 44;
  const ROW_H = 22; // timeline row height, px (virtualized list)
  const STEP_MS = 600;
  const SPEEDS = [0.5, 1, 2, 4, 8];
  const CAUSES = ['input', 'self', 'external'];
  const RECENT = 12; // cost-meter and sparkline window, frames
  const HEX_PREVIEW = 4096;
  const TEXT_CAP = 262144;
  // Level of detail, in screen pixels per SVG unit: below LOD_NEAR the in-box names (14.5–18 units)
  // would be under 8 px, so they are hidden and the overlay draws readable labels instead; below
  // LOD_KIND the 12-unit kind line is hidden.
  const LOD_NEAR = 0.55;
  const LOD_KIND = 0.8;
  const LANE_LABEL_MIN = 0.6; // facet names on lanes from this zoom on
  const MAX_SCALE = 4; // deepest zoom: nodes at 4× their natural size (and never less than 4× fit)
  const MIN_FIT = 0.2; // widest zoom, relative to fit
  const MINIMAP_MIN_NODES = 50;
  const NBHD_MAX_K = 6;
  const FULL_APPLY = 256; // a head move longer than this recomputes every node instead of diffing
  const LAZY_MIN = 20000; // ledgers with at least this many frames load them lazily (?frames=full|lazy)
  const INDEX_PAGE = 100000; // frames per GET /api/frames?form=index request
  const PAGE = 250; // whole frames per GET /api/frames request
  const MAX_PAGES = 64; // whole-frame pages kept
  const RF = window.ReactorFrames;

  // Theme colours for animations and the minimap, read from the CSS variables (light or dark).
  const COL = {};
  function readTheme() {
    const cs = getComputedStyle(document.documentElement);
    for (const k of ['page', 'panel', 'line', 'text', 'dim', 'gold', 'soft-gold', 'violet', 'red', 'grey', 'green', 'focus', 'node-stroke', 'floor-stroke', 'flash-text', 'self-tint', 'flare-fill', 'bead']) {
      COL[k] = cs.getPropertyValue('--' + k).trim();
    }
  }

  function hueOf(src) {
    return src === 'self' ? COL.violet : src === 'external' ? COL['soft-gold'] : COL.gold;
  }

  // ---------------------------------------------------------------------------------------------
  // Small helpers
  // ---------------------------------------------------------------------------------------------
  const $ = (id) => document.getElementById(id);

  function h(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function sv(tag, attrs) {
    const e = document.createElementNS(SVGNS, tag);
    if (attrs) for (const k of Object.keys(attrs)) e.setAttribute(k, String(attrs[k]));
    return e;
  }

  function clamp(v, lo, hi) {
    return v < lo ? lo : v > hi ? hi : v;
  }

  function cmpStr(a, b) {
    return a < b ? -1 : a > b ? 1 : 0; // UTF-16 code-unit order
  }

  function num(v) {
    return typeof v === 'number' && Number.isFinite(v) ? v : 0;
  }

  /**
   * Number format of §8.7 extended with millions: ≥ 10 000 → thousands + `k` (27180 → `27k`);
   * 1 000–9 999 → one decimal + `k`, a trailing `.0` dropped (1500 → `1.5k`); from 999 500 on →
   * millions + `M` (one decimal below 10 M: 1 234 567 → `1.2M`, 27 000 000 → `27M`); else plain.
   */
  function fmt(n) {
    n = num(n);
    const a = Math.abs(n);
    const dec = (x, unit) => {
      let t = x.toFixed(1);
      if (t.endsWith('.0')) t = t.slice(0, -2);
      return t + unit;
    };
    if (a >= 999500) return Math.abs(n / 1e6) >= 9.95 ? Math.round(n / 1e6) + 'M' : dec(n / 1e6, 'M');
    if (a >= 10000) return Math.round(n / 1000) + 'k';
    if (a >= 1000) return dec(n / 1000, 'k');
    return String(n);
  }

  /** A count: exact below 10 000, else as `fmt` (100000 → `100k`, 2500000 → `2.5M`). */
  function fmtCount(n) {
    return Math.abs(num(n)) >= 10000 ? fmt(n) : String(num(n));
  }

  /** Rounds a coordinate for path data (0.1 unit). */
  function r1(v) {
    return Math.round(v * 10) / 10;
  }

  function edgeKey(e) {
    return e.producer + '→' + e.subscriber + '::' + e.facet;
  }

  function facetClass(facet) {
    return facet === '@atomic' ? 'facet-atomic' : 'facet-' + String(facet).replace(/[^a-z0-9_-]/g, '_');
  }

  function shortName(id) {
    const i = id.indexOf('.');
    return i < 0 ? id : id.slice(i + 1);
  }

  function labelOf(id) {
    const labels = S.snap && S.snap.labels;
    const v = labels && Object.prototype.hasOwnProperty.call(labels, id) ? labels[id] : '';
    return typeof v === 'string' && v !== '' ? v : '';
  }

  /** Display name: the label when present and non-empty, else the short name (§5.1). */
  function nameOf(id) {
    return labelOf(id) || shortName(String(id));
  }

  function shortHash(hash) {
    const s = String(hash || '');
    const t = s.startsWith('sha256:') ? s.slice(7) : s;
    return t.slice(0, 10);
  }

  function parseJSON(text) {
    try {
      return JSON.parse(text);
    } catch (_) {
      return null;
    }
  }

  /** Largest element of the ascending list that is ≤ x, or −1. */
  function lastLE(list, x) {
    let lo = 0;
    let hi = list.length - 1;
    let ans = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (list[mid] <= x) {
        ans = list[mid];
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return ans;
  }

  function sortedInsert(arr, v) {
    let lo = 0;
    let hi = arr.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (arr[mid] <= v) lo = mid + 1;
      else hi = mid;
    }
    arr.splice(lo, 0, v);
  }

  /** Fills in missing members of a frame so that a sloppy server cannot crash the page. */
  function normFrame(f, i) {
    if (!f || typeof f !== 'object') f = {};
    if (typeof f.index !== 'number') f.index = i;
    if (typeof f.node !== 'string') f.node = String(f.node);
    if (!Array.isArray(f.movedFacets)) f.movedFacets = [];
    if (!Array.isArray(f.edgesToLight)) f.edgesToLight = [];
    if (!Array.isArray(f.wokenSubscribers)) f.wokenSubscribers = [];
    if (!f.cost || typeof f.cost !== 'object') f.cost = { fresh: 0, reused: 0, surpriseCause: f.wakeSource || 'input' };
    if (typeof f.contentHash !== 'string') f.contentHash = '';
    if (typeof f.atomicVersion !== 'string') f.atomicVersion = '';
    return f;
  }

  function isFrameLike(f) {
    return f && typeof f === 'object' && typeof f.index === 'number' && typeof f.node === 'string' && typeof f.status === 'string';
  }


  // ---------------------------------------------------------------------------------------------
  // Global state
  // ---------------------------------------------------------------------------------------------
  const S = {
    snap: null,
    F: 0,
    exported: false,
    head: -1,
    playing: false,
    playTimer: 0,
    playT0: 0, // performance.now() at which the current playback clock started
    playN: 0, // steps the playback clock has paid since playT0
    following: false,
    followTimer: 0,
    speed: 1,
    dragging: false,
    full: null, // layout of the whole graph (search index, neighbourhoods)
    adj: null, // undirected adjacency over lanes (neighbourhoods)
    layout: null, // layout currently drawn (the whole graph or a neighbourhood)
    nodeEls: new Map(), // id → {g, halo, box, name, x, y, base, cls, anims, st, floor, lit, hit}
    edgeEls: new Map(), // key → [{g, path, base, cls, glow}]
    lanes: [], // drawn lanes: {key, facet, implied, ax, ay, room} (label anchors)
    applied: null, // scrub state last applied: {head, headNode, litEdges, litNodes, wokeOnce}
    pre: null,
    invalid: new Set(),
    reduced: false,
    view: null,
    fit: null,
    svgs: [], // the graph's SVG layers, #graph-svg first (they share one viewBox)
    size: { w: 1, h: 1 }, // graph area, CSS px (kept by a ResizeObserver: no layout reads per step)
    scale: 1, // screen px per SVG unit of the current view
    lod: '',
    picked: null, // node found by search (ringed until another is picked)
    nbhd: null, // neighbourhood mode: {id, k, set}
    minimap: false,
    chromeQueued: false,
    capText: null,
    spikes: new Map(), // frame index → expiry (performance.now())
    es: null,
    liveSeen: false,
    livePill: null,
    refetching: false,
    pendingEvents: [],
    uiQueued: false,
    relayout: false,
    suppressClick: false,
    lazy: false, // frames come from the index and pages, not from the snapshot
    index: null, // ReactorFrames index (lazy mode)
    pages: null, // ReactorFrames page cache (whole frames with `why`; every mode)
    indexing: false,
    indexTotal: 0,
    indexError: '',
    pagesQueued: false,
  };

  /** Frame `i` of the ledger (0 ≤ i < S.F): the single read path for frames. */
  function frameAt(i) {
    if (!S.lazy) return S.snap.frames[i];
    return S.pages.get(i) || S.index.stub(i);
  }

  /** The cause of frame i: the `why` object, null (skipped), or undefined while not loaded. */
  function whyOf(i) {
    const f = S.exported ? S.snap.frames[i] : S.pages.get(i);
    return f && f.why !== undefined ? f.why : undefined;
  }

  /** Frame `f` as a whole frame with its `why` (fetched when `f` is a stub or lacks it). */
  async function fullFrame(f) {
    if (!f.stub && f.why !== undefined) return f;
    try {
      return (await S.pages.ensure(f.index)) || f;
    } catch (_) {
      return f;
    }
  }

  function whyCtx() {
    return { name: nameOf, link: jumpLink, token: shortToken };
  }

  /** A token for display: `sha256:` + 8 hex digits + `…`, other tokens up to 40 characters. */
  function shortToken(t) {
    const s = String(t === undefined || t === null ? '—' : t);
    if (/^sha256:[0-9a-f]{9,}$/.test(s)) return s.slice(0, 15) + '…';
    return s.length > 40 ? s.slice(0, 39) + '…' : s;
  }

  /** The cause as one line of text (timeline tooltips). */
  function whyText(w) {
    return RF.whyView(w, { name: nameOf, link: (t) => document.createTextNode(t), token: shortToken }).textContent;
  }

  // ---------------------------------------------------------------------------------------------
  // Data source: the server API, or the data inlined in an exported page (§8.18)
  // ---------------------------------------------------------------------------------------------
  const cache = { receipt: new Map(), node: new Map() };

  function inlineJSON(id) {
    const el = document.getElementById(id);
    if (!el || el.tagName !== 'SCRIPT') return undefined;
    return JSON.parse(el.textContent || 'null');
  }

  let rawReceipts;
  /** An exported page's receipts: `snapshot-receipts`, else the Run section's complete text. */
  function embeddedReceipts() {
    if (rawReceipts !== undefined) return rawReceipts;
    rawReceipts = inlineJSON('snapshot-receipts') || null;
    const pre = document.getElementById('raw-receipts');
    if (!rawReceipts && pre && pre.getAttribute('data-complete') === 'true') rawReceipts = parseJSON(pre.textContent || '');
    return rawReceipts;
  }

  const DS = {
    /** The snapshot without frames plus `frameCount` (GET /api/state?frames=none). */
    async head() {
      const r = await fetch('/api/state?frames=none', { cache: 'no-store' });
      if (!r.ok) throw Object.assign(new Error('state ' + r.status), { stateStatus: r.status });
      return r.json();
    },
    /**
     * GET /api/frames?from=&count=[&form=index] → the page object; in an exported page, the
     * embedded frames (which carry `why`) as `{frames}`.
     */
    async frames(from, count, form) {
      if (S.exported) return { from, frames: S.snap.frames.slice(from, from + count) };
      const r = await fetch('/api/frames?from=' + from + '&count=' + count + (form ? '&form=' + form : ''), { cache: 'no-store' });
      if (!r.ok) throw new Error('frames ' + r.status);
      return r.json();
    },
    async state() {
      const inl = inlineJSON('snapshot');
      if (inl !== undefined) {
        S.exported = true;
        return inl;
      }
      const r = await fetch('/api/state', { cache: 'no-store' });
      if (!r.ok) throw Object.assign(new Error('state ' + r.status), { stateStatus: r.status });
      return r.json();
    },
    /**
     * Which ledger the page shows → `{stateDir, path, example, synthetic}` (GET /api/ledger; an
     * exported page may inline it as `snapshot-ledger`). Falls back to the snapshot's own
     * `stateDir` and `synthetic` when the route is missing, so a failure here never blocks the page.
     */
    async ledger(snap) {
      const sd = typeof snap.stateDir === 'string' ? snap.stateDir : '';
      const base = { stateDir: sd, path: null, example: sd.startsWith('example:') ? sd.slice(8) : null, synthetic: snap.synthetic === true };
      let got = null;
      try {
        got = inlineJSON('snapshot-ledger');
        if (got === undefined && !S.exported) {
          const r = await fetch('/api/ledger', { cache: 'no-store' });
          got = r.ok ? await r.json() : null;
        }
      } catch (_) {
        got = null;
      }
      if (got && typeof got === 'object') {
        if (typeof got.stateDir === 'string') base.stateDir = got.stateDir;
        if (typeof got.path === 'string') base.path = got.path;
        if (typeof got.example === 'string') base.example = got.example;
        if (typeof got.synthetic === 'boolean') base.synthetic = got.synthetic;
      }
      return base;
    },
    /** → `{index, receipt, verify}` (VIEWER.md §6.5); throws Error with a readable message. */
    async receipt(i) {
      if (cache.receipt.has(i)) return cache.receipt.get(i);
      let data;
      if (S.exported) {
        const all = embeddedReceipts();
        if (!Array.isArray(all) || i >= all.length) throw new Error('the raw receipt is not embedded in this page');
        data = { index: i, receipt: all[i], verify: null };
      } else {
        const r = await fetch('/api/receipt/' + i, { cache: 'no-store' });
        const body = await r.json().catch(() => null);
        if (!r.ok) throw new Error((body && typeof body.error === 'string' ? body.error : 'receipt') + ' (' + r.status + ')');
        data = body;
      }
      cache.receipt.set(i, data);
      return data;
    },
    /** → `{status, body}`; body is a NodeWorldModelView (§4.2) on 200. */
    async node(id, version) {
      const key = id + '\u0000' + version;
      if (cache.node.has(key)) return cache.node.get(key);
      let out;
      if (S.exported) {
        const all = inlineJSON('snapshot-outputs');
        const byNode = all && typeof all === 'object' ? all[id] : null;
        const view = byNode && typeof byNode === 'object' ? byNode[version] : null;
        out = view ? { status: 200, body: view } : { status: 404, body: { error: 'not embedded' } };
      } else {
        const r = await fetch('/api/node/' + encodeURIComponent(id) + '?version=' + encodeURIComponent(version), { cache: 'no-store' });
        out = { status: r.status, body: await r.json().catch(() => null) };
      }
      cache.node.set(key, out);
      return out;
    },
  };

  // ---------------------------------------------------------------------------------------------
  // Per-frame precomputation, linear and extendable (§8.4 lit path, cold boot, §8.9 captions)
  // ---------------------------------------------------------------------------------------------
  function newPre(snap) {
    const subs = new Map(); // producer → Set(subscriber) over topology edges
    for (const e of snap.edges) {
      let set = subs.get(e.producer);
      if (!set) subs.set(e.producer, (set = new Set()));
      set.add(e.subscriber);
    }
    const beats = new Map();
    const b = snap.beats;
    if (b && Array.isArray(b.beats)) {
      for (const beat of b.beats) {
        if (beat && typeof beat.caption === 'string' && beat.caption !== '' && typeof beat.park === 'number' && !beats.has(beat.park)) {
          beats.set(beat.park, beat.caption);
        }
      }
    }
    const cause = {};
    for (const c of CAUSES) cause[c] = { n: [0], fresh: [0], reused: [0] };
    return {
      n: 0,
      subs,
      beats,
      nodeFrames: new Map(),
      prevSame: [],
      firstRendered: new Map(),
      byHash: new Map(),
      cumFresh: [0],
      cumReused: [0],
      cause,
      nzFresh: [],
      drainOf: [],
      drains: [],
      open: null,
      drain0: -1,
      firstEdge: null,
      caption: [],
      carry: null,
    };
  }

  function extendPre() {
    const pre = S.pre;
    const frames = S.snap.frames;
    const end = S.lazy ? S.index.n : frames.length;
    const nzNew = [];
    for (let i = pre.n; i < end; i++) {
      let f;
      if (S.lazy) f = S.index.stub(i);
      else {
        f = normFrame(frames[i], i);
        frames[i] = f;
      }
      let list = pre.nodeFrames.get(f.node);
      if (!list) pre.nodeFrames.set(f.node, (list = []));
      pre.prevSame.push(list.length ? list[list.length - 1] : -1);
      list.push(i);
      if (f.status === 'rendered' && !pre.firstRendered.has(f.node)) pre.firstRendered.set(f.node, i);
      if (f.contentHash && !pre.byHash.has(f.contentHash)) pre.byHash.set(f.contentHash, i);
      const fr = num(f.cost.fresh);
      const ru = num(f.cost.reused);
      pre.cumFresh.push(pre.cumFresh[i] + fr);
      pre.cumReused.push(pre.cumReused[i] + ru);
      for (const c of CAUSES) {
        const b = pre.cause[c];
        const hit = f.cost.surpriseCause === c;
        b.n.push(b.n[i] + (hit ? 1 : 0));
        b.fresh.push(b.fresh[i] + (hit ? fr : 0));
        b.reused.push(b.reused[i] + (hit ? ru : 0));
      }
      if (fr > 0) nzNew.push(fr);
      drainStep(pre, f, i);
      if (pre.firstEdge === null && f.edgesToLight.length) {
        pre.firstEdge = edgeKey(f.edgesToLight[0]);
        pre.drain0 = pre.drainOf[i];
      }
      const inCold = pre.drain0 >= 0 && (pre.drainOf[i] === pre.drain0 || (pre.open !== null && pre.open.d.id === pre.drain0));
      pre.caption.push(computeCaption(pre, f, i, inCold));
    }
    pre.n = end;
    // sorted non-zero fresh values (fresh-spike median, §8.5): one sort for a big batch, insertion for live frames
    if (nzNew.length > 64) pre.nzFresh = pre.nzFresh.concat(nzNew).sort((a, b) => a - b);
    else for (const v of nzNew) sortedInsert(pre.nzFresh, v);
  }

  // A drain opens on a rendered external frame (or frame 0 if rendered), extends over consecutive
  // rendered frames, tolerates skips of nodes already rendered in it, ends at anything else; trailing
  // skips are trimmed (they stay pending and are only assigned when a later render confirms them).
  function drainStep(pre, f, i) {
    pre.drainOf.push(-1);
    const rendered = f.status === 'rendered';
    if (rendered && (f.wakeSource === 'external' || i === 0)) {
      const d = { id: pre.drains.length, start: i, end: i, edges: [], nodes: [] };
      pre.drains.push(d);
      pre.open = { d, pending: [], rendered: new Set(), edgeSeen: new Set(), nodeSeen: new Set() };
      addToDrain(pre, f, i);
      return;
    }
    const o = pre.open;
    if (!o) return;
    if (rendered) {
      for (const j of o.pending) pre.drainOf[j] = o.d.id;
      o.pending = [];
      addToDrain(pre, f, i);
    } else if (f.status === 'skipped' && o.rendered.has(f.node)) {
      o.pending.push(i);
    } else {
      pre.open = null;
    }
  }

  function addToDrain(pre, f, i) {
    const o = pre.open;
    const d = o.d;
    pre.drainOf[i] = d.id;
    d.end = i;
    o.rendered.add(f.node);
    if (!o.nodeSeen.has(f.node)) {
      o.nodeSeen.add(f.node);
      d.nodes.push([f.node, i]);
    }
    for (const e of f.edgesToLight) {
      const k = edgeKey(e);
      if (!o.edgeSeen.has(k)) {
        o.edgeSeen.add(k);
        d.edges.push([k, i]);
      }
      if (!o.nodeSeen.has(e.subscriber)) {
        o.nodeSeen.add(e.subscriber);
        d.nodes.push([e.subscriber, i]);
      }
    }
  }

  /** Last frame index of the cold-boot span, or −1 (§8.4). */
  function coldEnd() {
    const pre = S.pre;
    return pre.drain0 >= 0 ? pre.drains[pre.drain0].end : -1;
  }

  // Computed captions with carry rules (§8.9); evaluated in frame order so that carries are exact.
  function computeCaption(pre, f, i, inCold) {
    const name = nameOf(f.node);
    const fresh = num(f.cost.fresh);
    if (f.status === 'failed') {
      pre.carry = null;
      return name + ' failed · nothing downstream moved';
    }
    if (fresh >= 5000) {
      pre.carry = null;
      return name + ' finally wakes · ' + fmt(fresh) + ' fresh';
    }
    if (f.wakeSource === 'self') {
      pre.carry = null;
      return 'self-tick · no edges lit · ~0 cost';
    }
    if (inCold) return '';
    const carry = pre.carry && i <= pre.carry.until ? pre.carry : null;
    if (f.status === 'rendered') {
      const woke = f.wokenSubscribers.length;
      const subs = pre.subs.get(f.node);
      const total = subs ? subs.size : 0;
      const dark = total - woke;
      if (total >= 3 && woke >= 1 && dark >= 2 && woke <= total / 2) {
        const only = woke === 1 ? nameOf(f.wokenSubscribers[0]) : woke + ' lanes';
        const text = dark + (dark === 1 ? ' sibling' : ' siblings') + ' stayed dark · only ' + only + ' lit';
        if (!carry || (carry.kind === 'selective' && dark >= carry.dark)) {
          pre.carry = { kind: 'selective', text, dark, until: i + 6 };
          return text;
        }
        return carry.text;
      }
      if (woke >= 2) {
        const text = woke + ' producers moved · woken exactly once';
        pre.carry = { kind: 'diamond', text, dark: 0, until: i + 4 };
        return text;
      }
    }
    return carry ? carry.text : '';
  }


  // ---------------------------------------------------------------------------------------------
  // Layered DAG layout (§8.2), optionally restricted to a node subset (neighbourhood mode)
  // ---------------------------------------------------------------------------------------------
  function computeLayout(snap, subset) {
    const inSet = (id) => !subset || subset.has(id);
    const info = new Map(); // id → {id, kind: topo|phantom|ingress|offtopo, entry}
    const order = [];
    const add = (id, kind) => {
      if (info.has(id)) return false;
      info.set(id, { id, kind, entry: false });
      order.push(id);
      return true;
    };
    const entries = new Set(Array.isArray(snap.entryPoints) ? snap.entryPoints : []);
    for (const n of snap.nodes) {
      if (inSet(n.id) && add(n.id, 'topo')) info.get(n.id).entry = !!n.isEntryPoint || entries.has(n.id);
    }
    const edges = subset ? snap.edges.filter((e) => subset.has(e.producer) && subset.has(e.subscriber)) : snap.edges;
    for (const e of edges) {
      add(e.producer, 'phantom');
      add(e.subscriber, 'phantom');
    }
    const implied = [];
    const seen = new Set();
    for (const f of snap.frames) {
      const id = f.node;
      if (seen.has(id)) continue;
      seen.add(id);
      if (info.has(id) || !inSet(id)) continue;
      const m = /^(.*)::ingress$/.exec(id);
      if (m && info.has(m[1])) {
        add(id, 'ingress');
        implied.push({ producer: id, subscriber: m[1], facet: '@atomic' });
      } else add(id, 'offtopo');
    }
    const producers = new Map();
    for (const id of order) producers.set(id, []);
    for (const e of edges) producers.get(e.subscriber).push(e.producer);
    for (const e of implied) producers.get(e.subscriber).push(e.producer);

    const layer = new Map();
    const visiting = new Set();
    const depth = (id) => {
      if (layer.has(id)) return layer.get(id);
      if (visiting.has(id)) return 0; // cycle guard
      visiting.add(id);
      let l = 0;
      const ps = producers.get(id) || [];
      if (ps.length) {
        let mx = 0;
        for (const p of ps) mx = Math.max(mx, depth(p));
        l = 1 + mx;
      }
      visiting.delete(id);
      layer.set(id, l);
      return l;
    };
    for (const id of order) depth(id);

    let L = 0;
    for (const id of order) L = Math.max(L, layer.get(id) + 1);
    const cols = [];
    for (let l = 0; l < L; l++) cols.push([]);
    for (const id of order) cols[layer.get(id)].push(id);
    const rowOf = new Map();
    cols.forEach((col, l) => {
      if (l === 0) col.sort(cmpStr);
      else {
        const bary = new Map();
        for (const id of col) {
          let sum = 0;
          let cnt = 0;
          for (const p of producers.get(id)) {
            if (rowOf.has(p)) {
              sum += rowOf.get(p);
              cnt++;
            }
          }
          bary.set(id, cnt ? sum / cnt : Infinity);
        }
        col.sort((a, b) => {
          const ba = bary.get(a);
          const bb = bary.get(b);
          if (ba < bb) return -1;
          if (ba > bb) return 1;
          return cmpStr(a, b); // equal barycenters (or both unplaced) → id ascending
        });
      }
      col.forEach((id, r) => rowOf.set(id, r));
    });
    const H = (k) => (k > 0 ? k * ROW_STEP - 44 : 0);
    let tallest = 0;
    for (const col of cols) tallest = Math.max(tallest, H(col.length));
    const pos = new Map();
    const colTop = [];
    const colBot = [];
    cols.forEach((col, l) => {
      const colH = H(col.length);
      const top = PAD_Y + (tallest - colH) / 2;
      colTop.push(top);
      colBot.push(top + colH);
      col.forEach((id, r) => {
        pos.set(id, { x: PAD_X + l * COL_STEP, y: top + r * ROW_STEP });
      });
    });
    const width = Math.max(600, 80 + (Math.max(L, 1) - 1) * COL_STEP + NODE_W);
    const height = Math.max(320, 88 + tallest);
    return { info, order, pos, layer, rowOf, cols, colTop, colBot, edges, implied, width, height };
  }

  // ---------------------------------------------------------------------------------------------
  // Lane routing (issue 9): lanes never pass through a box.
  //
  // Boxes of one layer share a column [x, x + 158]; between columns lies a 40-unit gap with no box.
  // A lane from layer a to layer b > a + 1 crosses each intermediate column horizontally — inside
  // the 44-unit gap between two rows nearest to the straight line (lanes sharing a gap are spread
  // across it), or at the straight line itself where that passes above or below the column — and
  // changes height only inside the inter-column gaps, with horizontal-tangent Béziers (which stay
  // between their end x). Ports: one out-port per (producer, facet) on the right side, one in-port
  // per lane on the left side, ordered to limit crossings. A lane to the same or an earlier layer
  // (a cycle) runs down a gap, along a channel below every column, and up the gap before its
  // subscriber. Each lane also gets a label anchor (for its facet name) and the room there.
  // ---------------------------------------------------------------------------------------------
  function routeLanes(L, list) {
    const colX = (l) => PAD_X + l * COL_STEP;
    const midY = (id) => L.pos.get(id).y + NODE_H / 2;
    const gaps = new Map();
    const routes = [];
    let backs = 0;
    for (const it of list) {
      const e = it.e;
      if (!L.pos.has(e.producer) || !L.pos.has(e.subscriber)) continue;
      const lp = L.layer.get(e.producer);
      const ls = L.layer.get(e.subscriber);
      const r = { it, mids: [], back: ls <= lp, backIdx: 0, y1: midY(e.producer), y2: midY(e.subscriber), py1: 0, py2: 0 };
      if (r.back) r.backIdx = backs++;
      else {
        for (let k = lp + 1; k < ls; k++) {
          const t = r.y1 + ((r.y2 - r.y1) * (k - lp)) / (ls - lp);
          const top = L.colTop[k];
          const bot = L.colBot[k];
          if (!L.cols[k].length || t < top - 16 || t > bot + 16) {
            r.mids.push({ k, y: t, t });
            continue;
          }
          const gi = clamp(Math.round((t - (top - 22)) / ROW_STEP), 0, L.cols[k].length);
          const m = { k, y: top - 22 + gi * ROW_STEP, t };
          r.mids.push(m);
          const gk = k + ':' + gi;
          let g = gaps.get(gk);
          if (!g) gaps.set(gk, (g = []));
          g.push(m);
        }
      }
      routes.push(r);
    }
    for (const ms of gaps.values()) {
      if (ms.length < 2) continue;
      ms.sort((p, q) => p.t - q.t);
      const step = Math.min(5, 30 / (ms.length - 1));
      ms.forEach((m, i) => (m.y += (i - (ms.length - 1) / 2) * step));
    }
    const portY = (y0, i, n) => {
      if (n <= 1) return y0 + NODE_H / 2;
      const spread = Math.min(36, 8 * (n - 1));
      return y0 + NODE_H / 2 - spread / 2 + (spread * i) / (n - 1);
    };
    const outs = new Map(); // producer → Map(facet → {sum, n, routes})
    for (const r of routes) {
      const e = r.it.e;
      let byFacet = outs.get(e.producer);
      if (!byFacet) outs.set(e.producer, (byFacet = new Map()));
      let g = byFacet.get(e.facet);
      if (!g) byFacet.set(e.facet, (g = { sum: 0, n: 0, routes: [] }));
      g.sum += r.back ? Infinity : r.mids.length ? r.mids[0].y : r.y2;
      g.n++;
      g.routes.push(r);
    }
    for (const [p, byFacet] of outs) {
      const groups = Array.from(byFacet.entries());
      groups.sort((a, b) => a[1].sum / a[1].n - b[1].sum / b[1].n || cmpStr(a[0], b[0]));
      const y0 = L.pos.get(p).y;
      groups.forEach(([, g], i) => {
        for (const r of g.routes) r.py1 = portY(y0, i, groups.length);
      });
    }
    const ins = new Map();
    for (const r of routes) {
      const s = r.it.e.subscriber;
      let rs = ins.get(s);
      if (!rs) ins.set(s, (rs = []));
      rs.push(r);
    }
    const approach = (r) => (r.back ? Infinity : r.mids.length ? r.mids[r.mids.length - 1].y : r.py1);
    for (const [s, rs] of ins) {
      rs.sort((a, b) => approach(a) - approach(b));
      const y0 = L.pos.get(s).y;
      rs.forEach((r, i) => (r.py2 = portY(y0, i, rs.length)));
    }
    const curve = (xa, ya, xb, yb) => {
      const dx = xb - xa;
      const hl = Math.min(dx, Math.max(40, dx / 2));
      return ' C' + r1(xa + hl) + ',' + r1(ya) + ' ' + r1(xb - hl) + ',' + r1(yb) + ' ' + r1(xb) + ',' + r1(yb);
    };
    const out = new Map();
    const channel = L.height - 24;
    for (const r of routes) {
      const e = r.it.e;
      const xs = L.pos.get(e.producer).x + NODE_W;
      const xe = L.pos.get(e.subscriber).x;
      const ys = r.py1;
      const ye = r.py2;
      let d;
      let anchor;
      if (r.back) {
        const yc = channel - (r.backIdx % 6) * 4;
        d = roundedPath([[xs, ys], [xs + 20, ys], [xs + 20, yc], [xe - 20, yc], [xe - 20, ye], [xe, ye]]);
        anchor = { ax: (xs + xe) / 2, ay: yc, room: Math.max(40, Math.abs(xs - xe) - 40) };
      } else {
        d = 'M' + r1(xs) + ',' + r1(ys);
        let x = xs;
        let y = ys;
        for (const m of r.mids) {
          const cx = colX(m.k);
          d += curve(x, y, cx, m.y) + ' L' + r1(cx + NODE_W) + ',' + r1(m.y);
          x = cx + NODE_W;
          y = m.y;
        }
        d += curve(x, y, xe, ye);
        if (r.mids.length) {
          const m = r.mids[(r.mids.length - 1) >> 1];
          anchor = { ax: colX(m.k) + NODE_W / 2, ay: m.y, room: NODE_W };
        } else anchor = { ax: (xs + xe) / 2, ay: (ys + ye) / 2, room: xe - xs };
      }
      out.set(r.it, Object.assign({ d, ye }, anchor));
    }
    return out;
  }

  /** Path data of a polyline with rounded corners (radius 8, less on short legs). */
  function roundedPath(pts) {
    let d = 'M' + r1(pts[0][0]) + ',' + r1(pts[0][1]);
    for (let i = 1; i < pts.length - 1; i++) {
      const [x0, y0] = pts[i - 1];
      const [x1, y1] = pts[i];
      const [x2, y2] = pts[i + 1];
      const l1 = Math.hypot(x1 - x0, y1 - y0);
      const l2 = Math.hypot(x2 - x1, y2 - y1);
      const rr = Math.min(8, l1 / 2, l2 / 2);
      if (rr < 0.5) {
        d += ' L' + r1(x1) + ',' + r1(y1);
        continue;
      }
      const ax = x1 + ((x0 - x1) * rr) / l1;
      const ay = y1 + ((y0 - y1) * rr) / l1;
      const bx = x1 + ((x2 - x1) * rr) / l2;
      const by = y1 + ((y2 - y1) * rr) / l2;
      d += ' L' + r1(ax) + ',' + r1(ay) + ' Q' + r1(x1) + ',' + r1(y1) + ' ' + r1(bx) + ',' + r1(by);
    }
    const last = pts[pts.length - 1];
    return d + ' L' + r1(last[0]) + ',' + r1(last[1]);
  }

  // ---------------------------------------------------------------------------------------------
  // Graph rendering
  // ---------------------------------------------------------------------------------------------

  function fitText(t, text, size) {
    const est = Array.from(text).length * size * 0.58;
    if (est > 130) {
      t.setAttribute('textLength', '130');
      t.setAttribute('lengthAdjust', 'spacingAndGlyphs');
    }
  }

  /** (Re)computes the whole-graph layout and the lane adjacency (search, neighbourhoods). */
  function layoutAll() {
    const snap = S.snap;
    S.full = computeLayout(snap, null);
    const adj = new Map();
    const link = (a, b) => {
      if (!adj.has(a)) adj.set(a, new Set());
      if (!adj.has(b)) adj.set(b, new Set());
      adj.get(a).add(b);
      adj.get(b).add(a);
    };
    for (const e of S.full.edges) link(e.producer, e.subscriber);
    for (const e of S.full.implied) link(e.producer, e.subscriber);
    S.adj = adj;
    if (S.nbhd) S.nbhd.set = neighbourhood(S.nbhd.id, S.nbhd.k);
  }

  function renderGraph() {
    const L = (S.layout = S.nbhd ? computeLayout(S.snap, S.nbhd.set) : S.full);
    const bgSvg = $('graph-svg');
    for (const old of S.svgs.slice(1)) old.remove();
    bgSvg.textContent = '';
    bgSvg.appendChild(sv('rect', { class: 'bg', x: -100000, y: -100000, width: 200000, height: 200000, fill: 'transparent' }));
    S.svgs = [bgSvg];
    S.nodeEls = new Map();
    S.edgeEls = new Map();
    S.lanes = [];
    S.applied = null;
    // Chunks of consecutive layers, each its own <svg> (at most 24 of each kind): a chunk whose
    // content did not change is not repainted.
    const per = Math.max(1, Math.ceil(L.cols.length / 24));
    const chunkSvgs = (cls) => {
      const out = [];
      for (let c = 0; c * per < Math.max(1, L.cols.length); c++) {
        const el = sv('svg', { class: cls, preserveAspectRatio: 'xMidYMid meet', 'aria-hidden': cls === 'lanes' ? 'true' : 'false' });
        const g = sv('g', { class: cls === 'lanes' ? 'edges' : 'nodes' });
        el.appendChild(g);
        out.push({ el, g, arrows: '', used: false });
      }
      return out;
    };
    const laneChunks = chunkSvgs('lanes');
    const nodeChunks = chunkSvgs('nodes');

    const list = [];
    for (const e of L.edges) list.push({ e, implied: false });
    for (const e of L.implied) list.push({ e, implied: true });
    const routes = routeLanes(L, list);
    // Arrowheads (8 × 8, pointing right at each lane's end): one path per chunk for all of them —
    // per-lane markers would each be a separately transformed paint chunk.
    for (const it of list) {
      const r = routes.get(it);
      if (!r) continue;
      const e = it.e;
      const key = edgeKey(e);
      const atomic = e.facet === '@atomic';
      const base = 'edge ' + facetClass(e.facet) + (atomic ? ' atomic' : ' named') + (it.implied ? ' implied' : '');
      const g = sv('g', { class: base });
      g.setAttribute(it.implied ? 'data-implied-edge' : 'data-edge', key);
      const title = sv('title');
      title.textContent = e.producer + ' → ' + e.subscriber + ' · ' + e.facet + (it.implied ? ' (implied ingress)' : '');
      g.appendChild(title);
      const path = sv('path', { class: 'lane', d: r.d });
      const end = L.pos.get(e.subscriber);
      const chunk = laneChunks[Math.floor(L.layer.get(e.producer) / per)];
      chunk.arrows += 'M' + end.x + ',' + r1(r.ye) + ' l-8,-4 v8 z';
      chunk.used = true;
      g.appendChild(path);
      chunk.g.appendChild(g);
      S.lanes.push({ key, facet: e.facet, implied: it.implied, ax: r.ax, ay: r.ay, room: r.room });
      if (!it.implied) {
        let els = S.edgeEls.get(key);
        if (!els) S.edgeEls.set(key, (els = []));
        els.push({ g, path, base, cls: base, glow: null });
      }
    }

    for (const c of laneChunks) {
      if (!c.used) continue;
      c.g.appendChild(sv('path', { class: 'arrows', d: c.arrows }));
      $('lanes-layer').appendChild(c.el);
      S.svgs.push(c.el);
    }

    // Nodes in reading order (layer by layer, top to bottom) so that Tab walks the graph. Shapes use
    // absolute coordinates (no per-node transform: each would be a paint chunk of its own).
    const ordered = L.order.slice().sort((a, b) => L.layer.get(a) - L.layer.get(b) || L.rowOf.get(a) - L.rowOf.get(b));
    for (const id of ordered) {
      const p = L.pos.get(id);
      const inf = L.info.get(id);
      const label = labelOf(id);
      let base = 'node';
      if (inf.entry) base += ' entry';
      if (inf.kind === 'phantom' || inf.kind === 'ingress') base += ' phantom';
      if (inf.kind === 'offtopo') base += ' offtopo';
      if (label) base += ' labelled';
      const note = inf.kind === 'offtopo' ? ' (off-topology)' : inf.kind === 'topo' ? '' : ' (producer only)';
      const g = sv('g', { class: base + ' state-untouched', 'data-node': id, tabindex: 0, role: 'button' });
      g.setAttribute('aria-label', (label ? label + ' — ' + id : id) + note + (inf.entry ? ' · entry point' : ''));
      const title = sv('title');
      title.textContent = id + note;
      g.appendChild(title);
      const halo = sv('rect', { class: 'halo', x: p.x - 3, y: p.y - 3, width: NODE_W + 6, height: NODE_H + 6, rx: 12 });
      const ring = sv('rect', { class: 'ring', x: p.x - 7, y: p.y - 7, width: NODE_W + 14, height: NODE_H + 14, rx: 13 });
      const box = sv('rect', { class: 'box', x: p.x, y: p.y, width: NODE_W, height: NODE_H, rx: 8 });
      g.appendChild(halo);
      g.appendChild(ring);
      g.appendChild(box);
      let nameEl;
      if (label) {
        nameEl = sv('text', { class: 'name', x: p.x + NODE_W / 2, y: p.y + NODE_H / 2 + 5, 'text-anchor': 'middle' });
        nameEl.textContent = label;
        fitText(nameEl, label, 14.5);
      } else {
        const dot = id.indexOf('.');
        const short = shortName(id);
        if (dot > 0) {
          const kind = sv('text', { class: 'kind', x: p.x + 15, y: p.y + 21 });
          kind.textContent = id.slice(0, dot);
          fitText(kind, id.slice(0, dot), 12);
          g.appendChild(kind);
        }
        nameEl = sv('text', { class: 'name', x: p.x + 15, y: p.y + (dot > 0 ? 46 : 39) });
        nameEl.textContent = short;
        fitText(nameEl, short, 18);
      }
      g.appendChild(nameEl);
      const chunk = nodeChunks[Math.floor(L.layer.get(id) / per)];
      chunk.g.appendChild(g);
      chunk.used = true;
      S.nodeEls.set(id, { g, halo, box, name: nameEl, x: p.x, y: p.y, base, cls: '', anims: [], st: 'untouched', floor: false, lit: false, hit: false });
    }
    for (const c of nodeChunks) {
      if (!c.used) continue;
      $('nodes-layer').appendChild(c.el);
      S.svgs.push(c.el);
    }
    S.fit = { x: 0, y: 0, w: L.width, h: L.height };
    S.minimap = S.nodeEls.size > MINIMAP_MIN_NODES;
    $('minimap').classList.toggle('hidden', !S.minimap);
    setView(Object.assign({}, S.fit));
  }

  // ---------------------------------------------------------------------------------------------
  // View: viewBox ↔ screen mapping, level of detail, revealing and centring nodes
  // ---------------------------------------------------------------------------------------------
  /** The mapping of the current viewBox onto the graph area (xMidYMid meet): screen = o + s × user. */
  function viewMap() {
    return viewMapOf(S.view);
  }

  function viewMapOf(v) {
    const w = S.size.w;
    const hh = S.size.h;
    const s = Math.min(w / v.w, hh / v.h);
    return { s, ox: (w - v.w * s) / 2 - v.x * s, oy: (hh - v.h * s) / 2 - v.y * s, w, h: hh };
  }

  function measure() {
    const g = $('graph');
    S.size = { w: Math.max(1, g.clientWidth), h: Math.max(1, g.clientHeight) };
  }

  // During a drag or a wheel gesture the graph (with its effects canvas and labels) is only moved
  // by a CSS transform on #graph-view — composited, no layout, no repaint — and the viewBox is set
  // once the gesture pauses (160 ms) or ends. Re-laying out thousands of shapes on every wheel tick
  // would make zooming a large graph stutter.
  const GV = { preview: null, timer: 0 };

  /** The view being shown: the gesture's target while one is in progress. */
  function shownView() {
    return GV.preview || S.view;
  }

  function previewView(v) {
    GV.preview = v;
    const c = viewMapOf(S.view);
    const t = viewMapOf(v);
    const k = t.s / c.s;
    $('graph-view').style.transform = 'translate(' + (t.ox - k * c.ox) + 'px,' + (t.oy - k * c.oy) + 'px) scale(' + k + ')';
    clearTimeout(GV.timer);
    GV.timer = setTimeout(commitView, 160);
    scheduleChrome(); // the minimap follows at once
  }

  function commitView() {
    clearTimeout(GV.timer);
    if (GV.preview) setView(GV.preview);
  }

  function setView(v) {
    if (GV.preview) {
      GV.preview = null;
      clearTimeout(GV.timer);
      $('graph-view').style.transform = '';
    }
    S.view = v;
    const vb = v.x + ' ' + v.y + ' ' + v.w + ' ' + v.h;
    for (const el of S.svgs) el.setAttribute('viewBox', vb);
    updateLod();
    scheduleChrome();
  }

  function updateLod() {
    if (!S.view) return;
    const s = viewMap().s;
    S.scale = s;
    const lod = s < LOD_NEAR ? 'lod-far' : s < LOD_KIND ? 'lod-mid' : 'lod-near';
    if (lod === S.lod) return;
    const stack = $('graph-layers');
    if (S.lod) stack.classList.remove(S.lod);
    stack.classList.add(lod);
    S.lod = lod;
  }

  function fitView() {
    if (S.fit) setView(Object.assign({}, S.fit));
  }

  /** Zoom limits relative to fit: 0.2× … max(4×, nodes at 4× their size). */
  function zoomRange() {
    const fitS = Math.min(S.size.w / S.fit.w, S.size.h / S.fit.h);
    return [MIN_FIT, Math.max(4, MAX_SCALE / fitS)];
  }

  /** Zooms by `factor` about user point (px, py); `gesture` previews instead of committing. */
  function zoomAt(px, py, factor, gesture) {
    const v = shownView();
    const k0 = S.fit.w / v.w;
    const [lo, hi] = zoomRange();
    const k = clamp(k0 * factor, lo, hi);
    const r = k0 / k;
    const nv = { x: px - (px - v.x) * r, y: py - (py - v.y) * r, w: v.w * r, h: v.h * r };
    if (gesture) previewView(nv);
    else setView(nv);
  }

  /** Centres the view on user point (x, y), keeping the zoom unless `minScale` asks for more. */
  function centreAt(x, y, minScale) {
    const m = viewMap();
    const s = minScale && m.s < minScale ? Math.min(minScale, MAX_SCALE) : m.s;
    const w = S.size.w / s;
    const hh = S.size.h / s;
    setView({ x: x - w / 2, y: y - hh / 2, w, h: hh });
  }

  function centreOn(id, minScale) {
    const ne = S.nodeEls.get(id);
    if (ne && S.view) centreAt(ne.x + NODE_W / 2, ne.y + NODE_H / 2, minScale);
  }

  /** The part of the graph area not covered by the inspector, in graph-area px. */
  function visibleRegion() {
    const r = { x0: 0, y0: 0, x1: S.size.w, y1: S.size.h };
    if (INS.open) {
      const ins = $('inspector');
      const g = $('graph');
      const left = ins.offsetLeft - g.offsetLeft;
      const top = ins.offsetTop - g.offsetTop;
      if (left > 0 && left < r.x1) r.x1 = left; // a side panel (wide windows)
      else if (top > 0 && top < r.y1) r.y1 = top; // a bottom sheet (narrow windows)
    }
    return r;
  }

  /** Pans (never zooms) so that node `id` lies inside the visible region with a margin. */
  function revealNode(id) {
    const ne = S.nodeEls.get(id);
    if (!ne || !S.view) return;
    const m = viewMap();
    const R = visibleRegion();
    const margin = 20;
    const shift = (a0, a1, r0, r1) => {
      if (a1 - a0 > r1 - r0 - 2 * margin) return (r0 + r1) / 2 - (a0 + a1) / 2;
      if (a0 < r0 + margin) return r0 + margin - a0;
      if (a1 > r1 - margin) return r1 - margin - a1;
      return 0;
    };
    const dx = shift(m.ox + (ne.x - 8) * m.s, m.ox + (ne.x + NODE_W + 8) * m.s, R.x0, R.x1);
    const dy = shift(m.oy + (ne.y - 8) * m.s, m.oy + (ne.y + NODE_H + 8) * m.s, R.y0, R.y1);
    if (dx || dy) setView({ x: S.view.x - dx / m.s, y: S.view.y - dy / m.s, w: S.view.w, h: S.view.h });
  }

  // ---------------------------------------------------------------------------------------------
  // Screen-space labels (level of detail) and the minimap, redrawn once per animation frame
  // ---------------------------------------------------------------------------------------------
  function scheduleChrome() {
    if (S.chromeQueued) return;
    S.chromeQueued = true;
    requestAnimationFrame(() => {
      S.chromeQueued = false;
      tlApplyScroll();
      drawOverlay();
      drawMinimap();
    });
  }

  const OV = { pool: [], used: 0 };

  /** An occupancy grid of 8-px cells over the graph area (greedy label placement). */
  function occupancy(w, hh) {
    const C = 8;
    const cols = Math.ceil(w / C) + 1;
    const rows = Math.ceil(hh / C) + 1;
    const cells = new Uint8Array(cols * rows);
    const span = (x, y, bw, bh, fn) => {
      const c0 = Math.max(0, Math.floor(x / C));
      const c1 = Math.min(cols - 1, Math.floor((x + bw) / C));
      const q0 = Math.max(0, Math.floor(y / C));
      const q1 = Math.min(rows - 1, Math.floor((y + bh) / C));
      for (let q = q0; q <= q1; q++) for (let c = c0; c <= c1; c++) if (fn(q * cols + c)) return true;
      return false;
    };
    return {
      free: (x, y, bw, bh) => !span(x, y, bw, bh, (i) => cells[i] === 1),
      mark: (x, y, bw, bh) => span(x, y, bw, bh, (i) => ((cells[i] = 1), false)),
    };
  }

  function clip(text, max) {
    const a = Array.from(text);
    return a.length > max ? a.slice(0, max - 1).join('') + '…' : text;
  }

  /** Node ids in label priority: picked, head, neighbourhood centre, inspected, lit, entries, rest. */
  function labelOrder() {
    const out = [];
    const seen = new Set();
    const push = (id) => {
      if (id && !seen.has(id) && S.nodeEls.has(id)) {
        seen.add(id);
        out.push(id);
      }
    };
    push(S.picked);
    const a = S.applied;
    push(a && a.headNode);
    if (S.nbhd) push(S.nbhd.id);
    if (INS.open) push(INS.node);
    if (a) {
      for (const id of a.wokeOnce) push(id);
      for (const id of a.litNodes) push(id);
    }
    for (const [id, ne] of S.nodeEls) if (ne.base.includes(' entry')) push(id);
    for (const id of S.nodeEls.keys()) push(id);
    return out;
  }

  function drawOverlay() {
    if (!S.view || !S.layout) return;
    const m = viewMap();
    const grid = occupancy(m.w, m.h);
    let n = 0;
    // Places a label centred on the first free spot among `spots` ([cx, cy] pairs).
    const put = (text, cls, spots, charW, bh) => {
      const bw = Array.from(text).length * charW + 10;
      let x = 0;
      let y = 0;
      let ok = false;
      for (const [cx, cy] of spots) {
        x = Math.round(cx - bw / 2);
        y = Math.round(cy - bh / 2);
        if (x < 2 || y < 2 || x + bw > m.w - 2 || y + bh > m.h - 2) continue;
        if (grid.free(x, y, bw, bh)) {
          ok = true;
          break;
        }
      }
      if (!ok) return;
      grid.mark(x - 6, y - 3, bw + 12, bh + 6);
      let el = OV.pool[n];
      if (!el) {
        el = h('div', 'olabel');
        $('labels').appendChild(el);
        OV.pool.push(el);
      }
      n++;
      if (el.textContent !== text) el.textContent = text;
      if (el.className !== cls) el.className = cls;
      el.style.transform = 'translate(' + x + 'px,' + y + 'px)';
      if (el.style.display) el.style.display = '';
    };
    const inView = (x, y) => x > -40 && y > -20 && x < m.w + 40 && y < m.h + 20;
    if (S.scale < LOD_NEAR) {
      // Far: in-box names are hidden; label the most relevant nodes at a readable size, no overlaps.
      const headNode = S.applied ? S.applied.headNode : null;
      for (const id of labelOrder()) {
        if (n >= 120) break;
        const ne = S.nodeEls.get(id);
        const cx = m.ox + (ne.x + NODE_W / 2) * m.s;
        const cy = m.oy + (ne.y + NODE_H / 2) * m.s;
        if (!inView(cx, cy)) continue;
        let cls = 'olabel st-' + ne.st;
        if (id === headNode) cls += ' head';
        if (id === S.picked) cls += ' picked';
        const dy = (NODE_H / 2) * m.s + 9;
        put(clip(nameOf(id), 28), cls, [[cx, cy], [cx, cy - dy], [cx, cy + dy]], 6.6, 16);
      }
    } else if (S.scale >= LANE_LABEL_MIN) {
      // Near: names are in the boxes; put facet names on lanes where they fit between the boxes.
      for (const ne of S.nodeEls.values()) {
        const x = m.ox + ne.x * m.s;
        const y = m.oy + ne.y * m.s;
        if (x < m.w && y < m.h && x + NODE_W * m.s > 0 && y + NODE_H * m.s > 0) grid.mark(x - 4, y - 4, NODE_W * m.s + 8, NODE_H * m.s + 8);
      }
      const lit = S.applied ? S.applied.litEdges : new Set();
      const lanes = S.lanes.filter((ln) => !ln.implied && ln.facet !== '@atomic');
      lanes.sort((a, b) => (lit.has(b.key) ? 1 : 0) - (lit.has(a.key) ? 1 : 0));
      for (const ln of lanes) {
        if (n >= 200) break;
        const cx = m.ox + ln.ax * m.s;
        const cy = m.oy + ln.ay * m.s;
        if (!inView(cx, cy) || Array.from(ln.facet).length * 6 + 10 > ln.room * m.s) continue; // must fit its run
        put(ln.facet, 'olabel lane' + (lit.has(ln.key) ? ' lit' : ''), [[cx, cy]], 6, 14);
      }
    }
    for (let i = n; i < OV.used; i++) OV.pool[i].style.display = 'none';
    OV.used = n;
  }

  const MM = { k: 1, dpr: 1 };

  function drawMinimap() {
    if (!S.minimap || !S.layout || !S.view) return;
    const c = $('minimap');
    const L = S.layout;
    const k = Math.min(180 / L.width, 130 / L.height);
    const W = Math.max(48, Math.round(L.width * k));
    const H = Math.max(36, Math.round(L.height * k));
    const dpr = window.devicePixelRatio || 1;
    if (c.width !== Math.round(W * dpr) || c.height !== Math.round(H * dpr)) {
      c.width = Math.round(W * dpr);
      c.height = Math.round(H * dpr);
      c.style.width = W + 'px';
      c.style.height = H + 'px';
    }
    MM.k = k;
    const ctx = c.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    const buckets = { idle: [], skipped: [], rendered: [], lit: [], failed: [], head: [] };
    for (const ne of S.nodeEls.values()) {
      const b = ne.hit ? 'head' : ne.st === 'failed' ? 'failed' : ne.lit ? 'lit' : ne.floor ? 'rendered' : ne.st === 'skipped' ? 'skipped' : 'idle';
      buckets[b].push(ne);
    }
    const colour = { idle: COL['node-stroke'], skipped: COL.grey, rendered: COL['floor-stroke'], lit: COL['soft-gold'], failed: COL.red, head: COL.gold };
    const bw = Math.max(1.5, NODE_W * k);
    const bh = Math.max(1.5, NODE_H * k);
    for (const b of Object.keys(buckets)) {
      ctx.fillStyle = colour[b];
      ctx.globalAlpha = b === 'idle' ? 0.55 : 1;
      const grow = b === 'head' ? 2 : 0;
      for (const ne of buckets[b]) ctx.fillRect(ne.x * k - grow, ne.y * k - grow, bw + 2 * grow, bh + 2 * grow);
    }
    ctx.globalAlpha = 1;
    const m = viewMapOf(shownView());
    const vx = -m.ox / m.s;
    const vy = -m.oy / m.s;
    ctx.strokeStyle = COL.focus;
    ctx.lineWidth = 1.5;
    ctx.strokeRect(vx * k, vy * k, (m.w / m.s) * k, (m.h / m.s) * k);
  }

  function wireMinimap() {
    const c = $('minimap');
    let down = false;
    const go = (e) => {
      const r = c.getBoundingClientRect();
      centreAt((e.clientX - r.left) / MM.k, (e.clientY - r.top) / MM.k);
    };
    c.addEventListener('pointerdown', (e) => {
      if (e.button !== 0) return;
      down = true;
      try {
        c.setPointerCapture(e.pointerId);
      } catch (_) {
        /* pointer already gone */
      }
      go(e);
    });
    c.addEventListener('pointermove', (e) => {
      if (down) go(e);
    });
    const up = () => (down = false);
    c.addEventListener('pointerup', up);
    c.addEventListener('pointercancel', up);
  }

  // ---------------------------------------------------------------------------------------------
  // Scrub state (§8.4) — idempotent, reapplied on every head change; only what changed is touched
  // ---------------------------------------------------------------------------------------------
  /** Lit lanes and nodes at head `hd` (the drain's lists are in frame order: stop at the head). */
  function litAt(hd) {
    const pre = S.pre;
    const litEdges = new Set();
    const litNodes = new Set();
    const d = hd >= 0 ? pre.drainOf[hd] : -1;
    if (d >= 0) {
      const dr = pre.drains[d];
      for (const [k, at] of dr.edges) {
        if (at > hd) break;
        litEdges.add(k);
      }
      for (const [n, at] of dr.nodes) {
        if (at > hd) break;
        litNodes.add(n);
      }
    }
    return { d, litEdges, litNodes };
  }

  function applyNode(id, ne, c) {
    const pre = S.pre;
    const list = pre.nodeFrames.get(id);
    const j = list ? lastLE(list, c.hd) : -1;
    let st = 'untouched';
    let floor = false;
    if (j >= 0) {
      st = frameAt(j).status;
      const fr = pre.firstRendered.get(id);
      floor = fr !== undefined && fr <= c.hd;
    }
    let cls = ne.base + ' state-' + st;
    if (floor) cls += ' floor';
    const lit = c.litNodes.has(id);
    if (lit) cls += ' lit';
    const hit = !!c.f && c.f.node === id;
    if (hit) cls += ' hit' + headClass(c.f, c.hd);
    if (c.wokeOnce.has(id)) cls += ' woke-once';
    if (S.picked === id) cls += ' picked';
    ne.st = st;
    ne.floor = floor;
    ne.lit = lit;
    ne.hit = hit;
    if (cls !== ne.cls) {
      ne.g.setAttribute('class', cls);
      ne.cls = cls;
    }
  }

  function setEdgeLit(el, on) {
    const cls = on ? el.base + ' lit' : el.base;
    if (cls === el.cls) return;
    el.g.setAttribute('class', cls);
    el.cls = cls;
    if (on) {
      if (!el.glow) el.glow = sv('path', { class: 'glow', d: el.path.getAttribute('d') });
      el.g.insertBefore(el.glow, el.path);
    } else if (el.glow) el.glow.remove();
  }

  /** Re-applies the scrub state of a few nodes (after `picked` changed). */
  function refreshNodes(ids) {
    const a = S.applied;
    if (!a) return;
    const c = { hd: a.head, f: a.head >= 0 ? frameAt(a.head) : null, litNodes: a.litNodes, wokeOnce: a.wokeOnce };
    for (const id of ids) {
      const ne = id ? S.nodeEls.get(id) : null;
      if (ne) applyNode(id, ne, c);
    }
  }

  function applyHead() {
    const hd = S.head;
    const f = hd >= 0 ? frameAt(hd) : null;
    const { d, litEdges, litNodes } = litAt(hd);
    const wokeOnce = new Set();
    if (f && f.status === 'rendered' && f.wokenSubscribers.length >= 2) for (const s of f.wokenSubscribers) wokeOnce.add(s);
    const c = { hd, f, litNodes, wokeOnce };
    const prev = S.applied;
    if (!prev || Math.abs(hd - prev.head) > FULL_APPLY) {
      for (const [id, ne] of S.nodeEls) applyNode(id, ne, c);
      for (const [key, els] of S.edgeEls) {
        const on = litEdges.has(key);
        for (const el of els) setEdgeLit(el, on);
      }
    } else {
      // Nodes whose class can differ between the two heads: those named by the frames in between,
      // both heads' nodes, and the nodes entering or leaving the woke-once and lit sets.
      const cand = new Set();
      const lo = Math.min(prev.head, hd);
      const hi = Math.max(prev.head, hd);
      for (let i = Math.max(0, lo + 1); i <= hi; i++) cand.add(frameAt(i).node);
      if (prev.headNode !== null) cand.add(prev.headNode);
      if (f) cand.add(f.node);
      for (const x of prev.wokeOnce) cand.add(x);
      for (const x of wokeOnce) cand.add(x);
      for (const x of prev.litNodes) if (!litNodes.has(x)) cand.add(x);
      for (const x of litNodes) if (!prev.litNodes.has(x)) cand.add(x);
      for (const id of cand) {
        const ne = S.nodeEls.get(id);
        if (ne) applyNode(id, ne, c);
      }
      for (const k of prev.litEdges) if (!litEdges.has(k)) for (const el of S.edgeEls.get(k) || []) setEdgeLit(el, false);
      for (const k of litEdges) if (!prev.litEdges.has(k)) for (const el of S.edgeEls.get(k) || []) setEdgeLit(el, true);
    }
    S.applied = { head: hd, headNode: f ? f.node : null, litEdges, litNodes, wokeOnce };

    const focus = !!f && d >= 0 && litEdges.size >= 2 && hd > coldEnd() && num(f.cost.fresh) < 5000;
    const rc = $('receipts');
    if (rc.classList.contains('focus') !== focus) rc.classList.toggle('focus', focus);

    if (f && f.stub) S.pages.want(hd, hd);
    const seek = $('seek');
    if (String(hd) !== seek.value) seek.value = String(hd);
    renderReadout();
    renderMeter();
    renderSpark();
    renderCaption();
    tlEnsureVisible(hd);
    tlRender();
    scheduleChrome();
  }

  function headClass(f, i) {
    const self = f.wakeSource === 'self';
    if (f.status === 'rendered') {
      const prev = S.pre.prevSame[i];
      if (prev >= 0 && frameAt(prev).status === 'failed') return ' hit-recovered';
      if (self || f.movedFacets.length === 0) return ' hit-self';
      return ' hit-gold';
    }
    if (f.status === 'skipped' && self) return ' hit-self';
    return '';
  }

  function renderReadout() {
    const hd = S.head;
    const F = S.F;
    let t;
    if (hd < 0) t = 'ready · frame —/' + F;
    else {
      const f = frameAt(hd);
      const moved = f.movedFacets.length ? f.movedFacets.join(', ') : '—';
      t = 'frame ' + hd + '/' + (F - 1) + ' · ' + nameOf(f.node) + ' · ' + f.status + ' · ' + f.cost.surpriseCause + ' · moved [' + moved + ']';
    }
    const el = $('readout');
    if (el.textContent !== t) el.textContent = t;
  }

  // ---------------------------------------------------------------------------------------------
  // Cost meter (§8.7) and sparkline (§8.8)
  // ---------------------------------------------------------------------------------------------
  function renderMeter() {
    const pre = S.pre;
    const hd = S.head;
    let wf = 0;
    let wr = 0;
    if (hd >= 0) {
      const lo = Math.max(0, hd - (RECENT - 1));
      wf = pre.cumFresh[hd + 1] - pre.cumFresh[lo];
      wr = pre.cumReused[hd + 1] - pre.cumReused[lo];
    }
    const big = $('meter-fresh');
    big.textContent = fmt(wf);
    big.classList.toggle('quiet', wf < 600);
    const tot = wf + wr;
    const fp = tot > 0 ? (wf / tot) * 100 : 0;
    $('bar-fresh').style.width = fp.toFixed(2) + '%';
    $('bar-reused').style.width = (100 - fp).toFixed(2) + '%';
    $('row-fresh').textContent = fmt(wf);
    $('row-reused').textContent = fmt(wr);

    const causes = $('meter-causes');
    causes.textContent = '';
    for (const c of ['external', 'input', 'self']) {
      const b = pre.cause[c];
      const n = b.n[hd + 1];
      if (!(n >= 1)) continue;
      const row = h('div', 'crow cause-' + c);
      row.appendChild(h('i'));
      row.appendChild(h('span', 'n', c));
      row.appendChild(h('span', 'f', fmt(b.fresh[hd + 1]) + ' fresh'));
      row.appendChild(h('span', 'r', fmt(b.reused[hd + 1]) + ' reused'));
      causes.appendChild(row);
    }
    const total = (S.snap.costRollup && S.snap.costRollup.total) || {};
    const gf = num(total.fresh);
    const gr = num(total.reused);
    const p = gf + gr > 0 ? Math.round((gr / (gf + gr)) * 100) : 0;
    $('footer-total').textContent = 'replay total · ' + fmt(pre.cumFresh[hd + 1]) + ' fresh · ' + p + '% reused';
    $('footer-grand').textContent = fmt(gf) + ' / ' + fmt(gr);
  }

  function renderSpark() {
    const svg = $('sparkline');
    svg.textContent = '';
    const F = S.F;
    const hd = S.head;
    const n = Math.min(RECENT, F);
    const baseY = 63;
    const span = 58;
    const peakEl = $('spark-peak');
    if (n === 0) {
      svg.appendChild(sv('line', { class: 'baseline', x1: 0, y1: baseY + 0.5, x2: 280, y2: baseY + 0.5 }));
      svg.appendChild(sv('line', { class: 'playhead dim', x1: 279, y1: 0, x2: 279, y2: 64 }));
      peakEl.textContent = 'flat · 0 fresh';
      return;
    }
    let start = Math.max(0, hd - (RECENT - 1));
    if (start + n > F) start = F - n;
    let mx = 1800;
    for (let k = 0; k < n; k++) {
      const c = frameAt(start + k).cost;
      mx = Math.max(mx, num(c.fresh), num(c.reused));
    }
    const slot = 280 / n;
    const bw = slot * 0.62;
    const fw = slot * 0.42;
    const now = performance.now();
    const pts = [];
    let peak = 0;
    for (let k = 0; k < n; k++) {
      const i = start + k;
      const f = frameAt(i);
      const fr = num(f.cost.fresh);
      const ru = num(f.cost.reused);
      const after = i > hd ? ' after' : '';
      const cx = k * slot + slot / 2;
      const rh = (ru / mx) * span;
      if (rh > 0) svg.appendChild(sv('rect', { class: 'reused' + after, x: cx - bw / 2, y: baseY - rh, width: bw, height: rh, 'data-i': i }));
      const fh = (fr / mx) * span;
      let cls = 'fresh fresh-' + f.cost.surpriseCause + after;
      if (fr >= 0.6 * mx && fr >= 2700) cls += ' glow';
      const sp = S.spikes.get(i);
      if (sp && sp > now) cls += ' spike';
      svg.appendChild(sv('rect', { class: cls, x: cx - fw / 2, y: baseY - fh, width: fw, height: Math.max(fh, 0), 'data-i': i }));
      pts.push(cx.toFixed(2) + ',' + (baseY - fh).toFixed(2));
      if (i <= hd) peak = Math.max(peak, fr);
    }
    svg.appendChild(sv('polyline', { class: 'tops', points: pts.join(' ') }));
    svg.appendChild(sv('line', { class: 'baseline', x1: 0, y1: baseY + 0.5, x2: 280, y2: baseY + 0.5 }));
    if (hd >= 0) {
      const x = (hd - start) * slot + slot / 2;
      svg.appendChild(sv('line', { class: 'playhead', x1: x, y1: 0, x2: x, y2: 64 }));
    } else svg.appendChild(sv('line', { class: 'playhead dim', x1: 279, y1: 0, x2: 279, y2: 64 }));
    peakEl.textContent = peak > 0 ? 'window peak ' + fmt(peak) : 'flat · 0 fresh';
  }

  // ---------------------------------------------------------------------------------------------
  // Hero caption (§8.9)
  // ---------------------------------------------------------------------------------------------
  function renderCaption() {
    const hd = S.head;
    let text = '';
    if (hd >= 0) {
      const beat = S.pre.beats.get(hd);
      text = beat !== undefined ? beat : S.pre.caption[hd] || '';
    }
    if (text === S.capText) return;
    S.capText = text;
    const el = $('caption');
    el.classList.remove('show');
    if (text) {
      el.textContent = text;
      // restart the fade/slide-in transition on the next frame (no forced layout mid-update)
      requestAnimationFrame(() => {
        if (S.capText === text) el.classList.add('show');
      });
    }
  }


  // ---------------------------------------------------------------------------------------------
  // Timeline (§8.6) — virtualized: only visible rows exist in the DOM. Its height and scroll offset
  // are cached (resize and scroll events) so a head change never forces a layout.
  // ---------------------------------------------------------------------------------------------
  const TL = { pool: [], queued: false, vh: 0, top: 0, pending: null, selfScroll: null };

  function tlSetup() {
    $('timeline-spacer').style.height = S.F * ROW_H + 'px';
    const t = $('timeline-title');
    t.textContent = 'receipts · ' + fmtCount(S.F);
    t.title = S.F + ' receipts';
  }

  function tlMeasure() {
    const tl = $('timeline');
    TL.vh = tl.clientHeight;
    TL.top = tl.scrollTop;
  }

  /** Scrolls row i into view (`nearest`). The rows are drawn for the new offset at once; the
   * element's scrollTop is set in the next animation frame (setting it here would force a layout in
   * the middle of a step). */
  function tlEnsureVisible(i) {
    if (i < 0 || TL.vh <= 0) return;
    const top = i * ROW_H;
    let st = TL.top;
    if (top < st) st = top;
    else if (top + ROW_H > st + TL.vh) st = top + ROW_H - TL.vh;
    if (st !== TL.top) {
      TL.top = st;
      TL.pending = st;
      scheduleChrome();
    }
  }

  function tlApplyScroll() {
    if (TL.pending === null) return;
    TL.selfScroll = TL.pending;
    $('timeline').scrollTop = TL.pending;
    TL.pending = null;
  }

  function tlOnScroll() {
    if (TL.selfScroll !== null) {
      TL.selfScroll = null; // our own scroll: TL.top is already right
      return;
    }
    tlQueue();
  }

  function tlMakeRow() {
    const row = h('div', 'trow');
    row.appendChild(h('span', 'ix'));
    row.appendChild(h('span', 'bad'));
    row.appendChild(h('i', 'dot'));
    row.appendChild(h('span', 'nm'));
    row.appendChild(h('span', 'tag'));
    $('timeline-spacer').appendChild(row);
    row._i = -1;
    return row;
  }

  function tlRender() {
    const F = S.F;
    const hd = S.head;
    let wlo = Infinity;
    let whi = -1;
    const vh = TL.vh || 400;
    const first = Math.max(0, Math.floor(TL.top / ROW_H) - 6);
    const last = Math.min(F - 1, Math.ceil((TL.top + vh) / ROW_H) + 6);
    const need = Math.max(0, last - first + 1);
    while (TL.pool.length < need) TL.pool.push(tlMakeRow());
    for (let k = 0; k < TL.pool.length; k++) {
      const row = TL.pool[k];
      if (k >= need) {
        if (row.style.display !== 'none') row.style.display = 'none';
        row._i = -1;
        continue;
      }
      const i = first + k;
      const f = frameAt(i);
      if (row.style.display) row.style.display = '';
      const cls = 'trow st-' + f.status + (i === hd ? ' current' : i > hd ? ' after' : '');
      if (row.className !== cls) row.className = cls;
      if (row._i === i) continue;
      row._i = i;
      row.style.top = i * ROW_H + 'px';
      row.setAttribute('data-frame', String(i));
      const c = row.children;
      c[0].textContent = String(i);
      c[1].textContent = S.invalid.has(i) ? '✗' : '';
      const nm = nameOf(f.node);
      if (c[3].textContent !== nm) c[3].textContent = nm;
      // Tooltip: the node id and the frame's cause, once its page is here.
      const w = whyOf(i);
      if (w === undefined && !S.exported) {
        wlo = Math.min(wlo, i);
        whi = Math.max(whi, i);
      }
      const tip = f.node + (w === undefined ? '' : '\n' + (w === null ? 'skipped — memo key unchanged' : 'why: ' + whyText(w)));
      if (row.title !== tip) row.title = c[3].title = tip;
      const cause = String(f.cost.surpriseCause);
      c[4].textContent = cause.toUpperCase();
      c[4].className = 'tag tag-' + cause;
    }
    if (whi >= 0) S.pages.want(wlo, whi);
  }

  /** Whole-frame pages arrived: redraw what showed stubs or lacked causes. */
  function onPages(p, frames) {
    for (const f of frames) if (f && f.contentHash && !S.pre.byHash.has(f.contentHash)) S.pre.byHash.set(f.contentHash, f.index);
    // Only the timeline rows of the arrived page are rewritten.
    for (const row of TL.pool) if (row._i >= p * PAGE && row._i < (p + 1) * PAGE) row._i = -1;
    if (S.pagesQueued) return;
    S.pagesQueued = true;
    requestAnimationFrame(() => {
      S.pagesQueued = false;
      if (!S.snap) return;
      renderReadout();
      tlRender();
      if (INS.open && INS.chainDraw) INS.chainDraw();
    });
  }

  /** Rows must be rewritten (new frames, a new chain verdict). */
  function tlInvalidate() {
    for (const row of TL.pool) row._i = -1;
  }

  function tlQueue() {
    if (TL.queued) return;
    TL.queued = true;
    requestAnimationFrame(() => {
      TL.queued = false;
      tlMeasure();
      tlRender();
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Transient animations (§8.5) — forward step or play tick only.
  //
  // Everything that moves or changes size (halo blooms, stroke flares, rings, lane flashes, the dash
  // and the bead) is drawn on a canvas over the graph, in the graph's coordinates; the SVG itself
  // only gets paint-only animations (colours, fills, opacity), so an animation frame never lays out
  // the graph.
  // ---------------------------------------------------------------------------------------------
  const FX = { list: [], loop: 0, dpr: 1 };

  function pulseMs() {
    if (S.reduced) return 1;
    let d = Math.max(180, Math.round(700 / Math.sqrt(S.speed)));
    if (S.playing || S.following) d = Math.min(d, Math.round((600 / S.speed) * 1.6));
    return d;
  }

  function track(ne, anim) {
    ne.anims.push(anim);
    anim.onfinish = () => {
      const k = ne.anims.indexOf(anim);
      if (k >= 0) ne.anims.splice(k, 1);
    };
    return anim;
  }

  function animateFrame(f) {
    const d = pulseMs();
    const ne = S.nodeEls.get(f.node);
    const self = f.wakeSource === 'self';
    let lanes = true;
    if (ne) {
      for (const a of ne.anims.splice(0)) a.cancel();
      FX.list = FX.list.filter((x) => x.ne !== ne);
      if (f.status === 'rendered') {
        if (f.movedFacets.length && !self) flash(ne, f.wakeSource, d);
        else {
          selfPulse(ne, d);
          lanes = false;
        }
      } else if (f.status === 'skipped') {
        if (self) selfPulse(ne, d);
        else ripple(ne, d);
      } else flare(ne, d);
    }
    if (lanes) {
      for (const e of f.edgesToLight) laneFx(e, d);
      f.wokenSubscribers.forEach((sub, k) => ringFx(sub, 60 + Math.min(k, 6) * 18, d));
    }
    // sparkline bar spike highlight, 650 ms
    S.spikes.set(f.index, performance.now() + 650);
    renderSpark();
    setTimeout(() => {
      S.spikes.delete(f.index);
      renderSpark();
    }, 660);
    // fresh spike: pulse the whole meter
    const fr = num(f.cost.fresh);
    const nz = S.pre.nzFresh;
    const median = nz.length ? nz[Math.floor(nz.length / 2)] : 0;
    if (f.status === 'rendered' && fr >= Math.max(4 * median, 2000)) meterPulse();
  }

  /** Queues a canvas effect: `draw(ctx, t)` with t in 0…1, after `delay` ms, for `d` ms. */
  function fx(ne, d, delay, draw) {
    if (S.reduced) return;
    FX.list.push({ ne, t0: performance.now() + (delay || 0), d: Math.max(1, d), draw });
    if (!FX.loop) FX.loop = requestAnimationFrame(fxFrame);
  }

  function easeOut(t) {
    return 1 - (1 - t) * (1 - t);
  }

  function roundRect(ctx, x, y, w, hh, r) {
    ctx.beginPath();
    ctx.moveTo(x + r, y);
    ctx.arcTo(x + w, y, x + w, y + hh, r);
    ctx.arcTo(x + w, y + hh, x, y + hh, r);
    ctx.arcTo(x, y + hh, x, y, r);
    ctx.arcTo(x, y, x + w, y, r);
    ctx.closePath();
  }

  /** A node outline (inset `pad` around the box, corner radius r) scaled by k about the box centre. */
  function outline(ctx, ne, pad, r, k, colour, alpha, width, dash) {
    const cx = ne.x + NODE_W / 2;
    const cy = ne.y + NODE_H / 2;
    const w = (NODE_W + 2 * pad) * k;
    const hh = (NODE_H + 2 * pad) * k;
    ctx.globalAlpha = clamp(alpha, 0, 1);
    ctx.strokeStyle = colour;
    ctx.lineWidth = width;
    ctx.setLineDash(dash || []);
    roundRect(ctx, cx - w / 2, cy - hh / 2, w, hh, r * k);
    ctx.stroke();
  }

  function fxFrame(now) {
    FX.loop = 0;
    const c = $('fx');
    const dpr = window.devicePixelRatio || 1;
    const W = Math.round(S.size.w * dpr);
    const H = Math.round(S.size.h * dpr);
    if (c.width !== W || c.height !== H) {
      c.width = W;
      c.height = H;
    }
    const ctx = c.getContext('2d');
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, W, H);
    if (!FX.list.length || !S.view) return;
    const m = viewMap();
    ctx.setTransform(dpr * m.s, 0, 0, dpr * m.s, dpr * m.ox, dpr * m.oy);
    const keep = [];
    for (const e of FX.list) {
      const t = (now - e.t0) / e.d;
      if (t >= 1) continue;
      keep.push(e);
      if (t < 0) continue;
      ctx.save();
      e.draw(ctx, t);
      ctx.restore();
    }
    FX.list = keep;
    if (keep.length) FX.loop = requestAnimationFrame(fxFrame);
  }

  function halo(ne, colour, d, a0, k1, w0, w1) {
    fx(ne, d, 0, (ctx, t) => {
      const e = easeOut(t);
      outline(ctx, ne, 3, 12, 1 + (k1 - 1) * e, colour, a0 * (1 - e), w0 + (w1 - w0) * e);
    });
  }

  function flash(ne, src, d) {
    const hue = hueOf(src);
    halo(ne, hue, d, 0.95, 1.14, 7, 3);
    fx(ne, Math.round(d * 1.4), 0, (ctx, t) => outline(ctx, ne, 0, 8, 1, hue, 1 - easeOut(t), 4));
    track(ne, ne.box.animate([{ offset: 0, stroke: hue }], { duration: Math.round(d * 1.4), easing: 'ease-out' }));
    track(ne, ne.name.animate([{ offset: 0, fill: COL['flash-text'], fillOpacity: 1 }], { duration: d, easing: 'ease-out' }));
  }

  function selfPulse(ne, d) {
    halo(ne, COL.violet, d, 0.85, 1.1, 4, 3);
    track(ne, ne.box.animate([{ offset: 0, fill: COL['self-tint'], stroke: COL.violet }], { duration: Math.round(d * 1.3), easing: 'ease-out' }));
  }

  function ripple(ne, d) {
    fx(ne, d, 0, (ctx, t) => {
      const e = easeOut(t);
      outline(ctx, ne, 3, 12, 0.99 + 0.06 * e, COL.grey, 0.18 * (1 - e), 3);
    });
  }

  function flare(ne, d) {
    halo(ne, COL.red, d, 0.95, 1.16, 9, 3);
    fx(ne, Math.round(d * 1.5), 0, (ctx, t) => outline(ctx, ne, 0, 8, 1, COL.red, 1 - easeOut(t), 4.5));
    track(ne, ne.box.animate([{ offset: 0, stroke: COL.red, fill: COL['flare-fill'] }], { duration: Math.round(d * 1.5), easing: 'ease-out' }));
  }

  /** A lane's path as a polyline with cumulative lengths (for the bead), parsed once per lane. */
  function lanePoly(el) {
    if (el.poly) return el.poly;
    const pts = [];
    let x = 0;
    let y = 0;
    const d = el.path.getAttribute('d') || '';
    for (const [, cmd, args] of d.matchAll(/([MLCQ])([^MLCQ]*)/g)) {
      const n = (args.match(/-?\d+(?:\.\d+)?(?:e-?\d+)?/g) || []).map(Number);
      if (cmd === 'M' || cmd === 'L') {
        x = n[0];
        y = n[1];
        pts.push([x, y]);
      } else if (cmd === 'C' || cmd === 'Q') {
        const cubic = cmd === 'C';
        for (let i = 1; i <= 16; i++) {
          const t = i / 16;
          const u = 1 - t;
          let px;
          let py;
          if (cubic) {
            px = u * u * u * x + 3 * u * u * t * n[0] + 3 * u * t * t * n[2] + t * t * t * n[4];
            py = u * u * u * y + 3 * u * u * t * n[1] + 3 * u * t * t * n[3] + t * t * t * n[5];
          } else {
            px = u * u * x + 2 * u * t * n[0] + t * t * n[2];
            py = u * u * y + 2 * u * t * n[1] + t * t * n[3];
          }
          pts.push([px, py]);
        }
        x = cubic ? n[4] : n[2];
        y = cubic ? n[5] : n[3];
      }
    }
    const cum = [0];
    for (let i = 1; i < pts.length; i++) cum.push(cum[i - 1] + Math.hypot(pts[i][0] - pts[i - 1][0], pts[i][1] - pts[i - 1][1]));
    el.poly = { pts, cum, len: cum[cum.length - 1] || 0, p2d: typeof Path2D === 'function' ? new Path2D(d) : null };
    return el.poly;
  }

  function pointAt(poly, s) {
    const { pts, cum } = poly;
    let lo = 0;
    let hi = cum.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cum[mid] < s) lo = mid + 1;
      else hi = mid;
    }
    if (lo === 0) return pts[0];
    const seg = cum[lo] - cum[lo - 1] || 1;
    const k = (s - cum[lo - 1]) / seg;
    return [pts[lo - 1][0] + (pts[lo][0] - pts[lo - 1][0]) * k, pts[lo - 1][1] + (pts[lo][1] - pts[lo - 1][1]) * k];
  }

  function laneFx(e, d) {
    const list = S.edgeEls.get(edgeKey(e));
    if (!list) return;
    const poly = lanePoly(list[0]);
    if (!poly.p2d || !(poly.len > 0)) return;
    const colour = e.facet === '@atomic' ? COL.gold : COL['soft-gold'];
    fx(null, d, 0, (ctx, t) => {
      const k = easeOut(t);
      ctx.globalAlpha = 1 - 0.45 * k;
      ctx.strokeStyle = colour;
      ctx.lineWidth = 2.6 - 1.4 * k;
      ctx.stroke(poly.p2d);
      // the dash chasing along the lane
      ctx.globalAlpha = 1;
      ctx.strokeStyle = COL.bead;
      ctx.lineWidth = 2;
      ctx.lineCap = 'round';
      ctx.setLineDash([14, poly.len + 14]);
      ctx.lineDashOffset = 14 - (poly.len + 14) * t;
      ctx.stroke(poly.p2d);
      // the bead, fading in and out over the first and last 10 %
      const [bx, by] = pointAt(poly, t * poly.len);
      ctx.setLineDash([]);
      ctx.globalAlpha = t < 0.1 ? t / 0.1 : t > 0.9 ? (1 - t) / 0.1 : 1;
      ctx.fillStyle = COL.gold;
      ctx.globalAlpha *= 0.3;
      ctx.beginPath();
      ctx.arc(bx, by, 6, 0, Math.PI * 2);
      ctx.fill();
      ctx.globalAlpha /= 0.3;
      ctx.fillStyle = COL.bead;
      ctx.beginPath();
      ctx.arc(bx, by, 3.2, 0, Math.PI * 2);
      ctx.fill();
    });
  }

  function ringFx(id, delay, d) {
    const ne = S.nodeEls.get(id);
    if (!ne) return;
    fx(ne, Math.max(d, 260), delay, (ctx, t) => {
      const k = 1.22 - 0.25 * easeOut(t);
      const a = t < 0.3 ? (0.95 * t) / 0.3 : (0.95 * (1 - t)) / 0.7;
      outline(ctx, ne, 6, 13, k, COL.gold, a, 2);
    });
  }

  let meterTimer = 0;
  function meterPulse() {
    const m = $('meter');
    m.classList.add('spiking');
    clearTimeout(meterTimer);
    const dur = S.reduced ? 1 : 1100;
    meterTimer = setTimeout(() => m.classList.remove('spiking'), dur);
    if (!S.reduced) $('meter-fresh').animate([{ transform: 'scale(1)' }, { transform: 'scale(1.16)' }, { transform: 'scale(1)' }], { duration: dur, easing: 'ease-in-out' });
  }

  function cancelAllFx() {
    for (const ne of S.nodeEls.values()) if (ne.anims.length) for (const a of ne.anims.splice(0)) a.cancel();
    if (FX.list.length) {
      FX.list = [];
      if (!FX.loop) FX.loop = requestAnimationFrame(fxFrame); // one last frame clears the canvas
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Transport (§8.10), keyboard (§8.11)
  // ---------------------------------------------------------------------------------------------
  function updatePlayBtn() {
    const b = $('btn-play');
    b.textContent = S.playing ? '❚❚' : '▶';
    b.setAttribute('aria-pressed', S.playing ? 'true' : 'false');
  }

  function stopFollow() {
    S.following = false;
    clearTimeout(S.followTimer);
  }

  function pause() {
    if (S.playing) {
      S.playing = false;
      clearTimeout(S.playTimer);
      updatePlayBtn();
    }
    stopFollow();
  }

  function play() {
    if (S.F === 0) return;
    stopFollow();
    if (S.head >= S.F - 1) jump(-1);
    S.playing = true;
    updatePlayBtn();
    restartPlayClock();
  }

  function togglePlay() {
    if (S.playing) pause();
    else play();
  }

  // Playback runs on a clock: step n is due at playT0 + n × (600 ms / speed), whatever the
  // previous step cost, so the pace holds at 8×. A tick that finds itself more than one interval
  // late folds the owed frames into one step (only the last is animated), at most 4 at a time.
  function restartPlayClock() {
    S.playT0 = performance.now();
    S.playN = 0;
    schedulePlay();
  }

  function schedulePlay() {
    clearTimeout(S.playTimer);
    const iv = STEP_MS / S.speed;
    S.playTimer = setTimeout(playTick, Math.max(0, S.playT0 + (S.playN + 1) * iv - performance.now()));
  }

  function playTick() {
    if (!S.playing) return;
    const iv = STEP_MS / S.speed;
    const owed = Math.floor((performance.now() - S.playT0) / iv) - S.playN;
    const n = clamp(owed, 1, 4);
    S.playN += n;
    if (owed > 4) S.playT0 = performance.now() - S.playN * iv; // far behind: drop the debt, keep the pace
    if (S.head < S.F - 1) {
      const skip = Math.min(n - 1, S.F - 2 - S.head);
      if (skip > 0) S.head += skip;
      stepForward();
    }
    if (S.head >= S.F - 1) pause();
    else schedulePlay();
  }

  function stepForward() {
    if (S.head >= S.F - 1) return;
    const was = S.head;
    S.head++;
    applyHead();
    animateFrame(frameAt(S.head));
    inspectorFollows(was);
  }

  function stepBack() {
    if (S.head <= -1) return;
    const was = S.head;
    S.head--;
    cancelAllFx();
    applyHead();
    inspectorFollows(was);
  }

  function jump(i) {
    const n = clamp(Math.trunc(num(i)), -1, S.F - 1);
    const was = S.head;
    if (n !== S.head) cancelAllFx();
    S.head = n;
    applyHead();
    inspectorFollows(was);
  }

  /**
   * The inspector covers the timeline (it slides over the sidebar), so while it shows the head frame
   * it follows manual moves of the head (←/→, Home/End, the slider) — not playback or live follow.
   */
  function inspectorFollows(was) {
    if (!INS.open || S.playing || S.following || S.head === was || S.head < 0 || INS.frame !== was) return;
    openInspector(frameAt(S.head).node, S.head);
  }

  function setSpeed(x) {
    S.speed = x;
    if (S.playing) restartPlayClock();
    if (S.following) scheduleFollow();
  }

  function zoomBy(factor) {
    if (!S.view) return;
    zoomAt(S.view.x + S.view.w / 2, S.view.y + S.view.h / 2, factor);
  }

  /** The node a keyboard command means: the focused node, the found one, the inspected one, the head's. */
  function targetNode() {
    const a = document.activeElement;
    const g = a && a.closest ? a.closest('[data-node]') : null;
    if (g) return g.getAttribute('data-node');
    if (S.picked) return S.picked;
    if (INS.open && INS.node) return INS.node;
    return S.head >= 0 ? frameAt(S.head).node : null;
  }

  function onKey(e) {
    const t = document.activeElement;
    if (t && (t.tagName === 'SELECT' || t.tagName === 'INPUT' || t.tagName === 'TEXTAREA')) return;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    let handled = true;
    switch (e.key) {
      case ' ':
      case 'Spacebar':
        togglePlay();
        break;
      case 'ArrowRight':
        pause();
        stepForward();
        break;
      case 'ArrowLeft':
        pause();
        stepBack();
        break;
      case 'Home':
        pause();
        jump(-1);
        break;
      case 'End':
        pause();
        jump(S.F - 1);
        break;
      case '+':
      case '=':
        zoomBy(1.25);
        break;
      case '-':
      case '_':
        zoomBy(1 / 1.25);
        break;
      case '0':
        fitView();
        break;
      case '/':
        $('search').focus();
        $('search').select();
        break;
      case 'Enter': {
        const g = t && t.closest ? t.closest('[data-node]') : null;
        if (g) openInspectorForNode(g.getAttribute('data-node'));
        else handled = false; // buttons and links keep their own Enter
        break;
      }
      case 'f':
      case 'F': {
        if (S.nbhd) exitNeighbourhood();
        else {
          const id = targetNode();
          if (id) enterNeighbourhood(id, 1);
        }
        break;
      }
      case '[':
        if (S.nbhd) enterNeighbourhood(S.nbhd.id, S.nbhd.k - 1);
        break;
      case ']':
        if (S.nbhd) enterNeighbourhood(S.nbhd.id, S.nbhd.k + 1);
        break;
      case 'i':
      case 'I':
        if (INS.open) closeInspector();
        else if (S.head >= 0) openInspector(frameAt(S.head).node, S.head);
        break;
      case 'Escape':
        if (!$('chain-popover').classList.contains('hidden')) $('chain-popover').classList.add('hidden');
        else if ($('legend').classList.contains('open')) toggleLegend(false);
        else if (INS.open) closeInspector();
        else if (S.nbhd) exitNeighbourhood();
        else if (S.picked) setPicked(null);
        break;
      default:
        handled = false;
    }
    if (handled) e.preventDefault();
  }

  // ---------------------------------------------------------------------------------------------
  // URL parameters (§8.12)
  // ---------------------------------------------------------------------------------------------
  function hashParams() {
    const out = new Map();
    const raw = location.hash.replace(/^#/, '');
    for (const part of raw.split(/[&;]/)) {
      if (!part) continue;
      const eq = part.indexOf('=');
      let k = eq < 0 ? part : part.slice(0, eq);
      let v = eq < 0 ? null : part.slice(eq + 1);
      try {
        k = decodeURIComponent(k);
        v = v === null ? null : decodeURIComponent(v.replace(/\+/g, ' '));
      } catch (_) {
        continue;
      }
      if (!out.has(k)) out.set(k, v);
    }
    return out;
  }

  function hashFrame() {
    const v = hashParams().get('frame');
    if (typeof v !== 'string' || !/^\s*-?\d+\s*$/.test(v)) return null;
    return clamp(parseInt(v, 10), -1, S.F - 1);
  }

  function truthy(v) {
    return v !== '0' && v !== 'false';
  }

  function applyUrlParams() {
    const q = new URLSearchParams(location.search);
    const hp = hashParams();
    const sp = hp.has('speed') ? hp.get('speed') : q.get('speed');
    if (sp !== null && sp !== undefined) {
      const x = Number(sp);
      if (Number.isFinite(x) && x > 0) {
        S.speed = x;
        const sel = $('speed');
        if (SPEEDS.includes(x)) sel.value = String(x);
        else sel.selectedIndex = -1;
      }
    }
    const fr = hashFrame();
    if (fr !== null) {
      jump(fr);
      return;
    }
    let auto = false;
    if (q.has('autoplay')) auto = truthy(q.get('autoplay'));
    if (hp.has('autoplay')) auto = hp.get('autoplay') === null ? true : truthy(hp.get('autoplay'));
    if (auto) setTimeout(() => { if (!S.playing) play(); }, 60);
  }

  // ---------------------------------------------------------------------------------------------
  // Pan and zoom (§8.16): only the SVG viewBox changes. The zoom reaches nodes at 4× their size
  // however large the graph (issue 9 lifted the 4×-of-fit cap).
  // ---------------------------------------------------------------------------------------------
  /** Client (page) coordinates → user units of the view being shown. */
  function clientToSvg(cx, cy) {
    const r = $('graph').getBoundingClientRect();
    const m = viewMapOf(shownView());
    return { x: (cx - r.left - m.ox) / m.s, y: (cy - r.top - m.oy) / m.s };
  }

  function wirePanZoom() {
    const svg = $('graph-layers'); // events from every layer bubble here
    svg.addEventListener(
      'wheel',
      (e) => {
        if (!S.view) return;
        e.preventDefault();
        const p = clientToSvg(e.clientX, e.clientY);
        const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? 400 : 1;
        const factor = Math.exp(-e.deltaY * unit * (e.ctrlKey ? 0.01 : 0.0015));
        zoomAt(p.x, p.y, factor, true);
      },
      { passive: false },
    );
    let drag = null;
    svg.addEventListener('pointerdown', (e) => {
      // A new press is never the click that ends an earlier pan: clear its suppression here, not
      // only on a timer (input can overtake a 0 ms timer, and a quick click was then lost).
      S.suppressClick = false;
      if (e.button !== 0 || !S.view) return;
      const m = viewMapOf(shownView());
      drag = { id: e.pointerId, sx: e.clientX, sy: e.clientY, v: Object.assign({}, shownView()), scale: m.s, panning: false };
    });
    svg.addEventListener('pointermove', (e) => {
      if (!drag || e.pointerId !== drag.id) return;
      const dx = e.clientX - drag.sx;
      const dy = e.clientY - drag.sy;
      if (!drag.panning) {
        if (Math.hypot(dx, dy) < 4) return;
        drag.panning = true;
        svg.classList.add('panning');
        try {
          svg.setPointerCapture(e.pointerId);
        } catch (_) {
          /* pointer already gone */
        }
      }
      const sc = drag.scale || 1;
      previewView({ x: drag.v.x - dx / sc, y: drag.v.y - dy / sc, w: drag.v.w, h: drag.v.h });
    });
    const end = (e) => {
      if (!drag || e.pointerId !== drag.id) return;
      if (drag.panning) {
        S.suppressClick = true;
        setTimeout(() => (S.suppressClick = false), 0);
        commitView();
      }
      svg.classList.remove('panning');
      drag = null;
    };
    svg.addEventListener('pointerup', end);
    svg.addEventListener('pointercancel', end);
    svg.addEventListener('dblclick', (e) => {
      if (e.target instanceof Element && e.target.closest('[data-node]')) return;
      fitView();
    });
    svg.addEventListener('click', (e) => {
      if (S.suppressClick) return;
      const g = e.target instanceof Element ? e.target.closest('[data-node]') : null;
      if (g) openInspectorForNode(g.getAttribute('data-node'));
    });
    // Keyboard focus on a node brings it into view (Tab walks the graph in reading order).
    svg.addEventListener('focusin', (e) => {
      const g = e.target instanceof Element ? e.target.closest('[data-node]') : null;
      if (g && g.matches(':focus-visible')) revealNode(g.getAttribute('data-node'));
    });
    $('fit-btn').addEventListener('click', fitView);
  }

  // ---------------------------------------------------------------------------------------------
  // Search (`/`): find a node by label or id, centre it at a readable zoom and ring it
  // ---------------------------------------------------------------------------------------------
  const SR = { items: [], active: 0 };

  function setPicked(id) {
    const old = S.picked;
    S.picked = id;
    refreshNodes([old, id]);
    scheduleChrome();
  }

  function searchMatches(q) {
    q = q.trim().toLowerCase();
    if (!q || !S.full) return [];
    const scored = [];
    for (const id of S.full.order) {
      const lab = nameOf(id).toLowerCase();
      const low = id.toLowerCase();
      let sc = -1;
      if (lab === q || low === q) sc = 0;
      else if (lab.startsWith(q) || shortName(low).startsWith(q)) sc = 1;
      else if (low.startsWith(q)) sc = 2;
      else if (lab.includes(q)) sc = 3;
      else if (low.includes(q)) sc = 4;
      if (sc >= 0) scored.push([sc, id]);
    }
    scored.sort((a, b) => a[0] - b[0] || cmpStr(nameOf(a[1]), nameOf(b[1])) || cmpStr(a[1], b[1]));
    return scored.slice(0, 12).map((x) => x[1]);
  }

  function renderResults() {
    const ul = $('search-results');
    ul.textContent = '';
    const q = $('search').value.trim();
    if (!q) {
      ul.classList.add('hidden');
      return;
    }
    if (!SR.items.length) {
      ul.appendChild(h('li', 'none', 'no node matches'));
    }
    SR.items.forEach((id, i) => {
      const li = h('li', i === SR.active ? 'active' : '');
      li.setAttribute('role', 'option');
      li.setAttribute('data-id', id);
      li.setAttribute('aria-selected', i === SR.active ? 'true' : 'false');
      li.appendChild(h('span', 'sname', nameOf(id)));
      if (nameOf(id) !== id) li.appendChild(h('span', 'sid', id));
      ul.appendChild(li);
    });
    ul.classList.remove('hidden');
  }

  function closeSearch(clear) {
    $('search-results').classList.add('hidden');
    if (clear) $('search').value = '';
    SR.items = [];
  }

  /** Shows node `id`: leaves a neighbourhood that lacks it, rings it, centres it readably, focuses it. */
  function pickNode(id) {
    if (S.nbhd && !S.nbhd.set.has(id)) exitNeighbourhood();
    closeSearch(true);
    setPicked(id);
    centreOn(id, 1);
    const ne = S.nodeEls.get(id);
    if (ne) ne.g.focus({ preventScroll: true });
  }

  function wireSearch() {
    const input = $('search');
    input.addEventListener('input', () => {
      SR.items = searchMatches(input.value);
      SR.active = 0;
      renderResults();
    });
    input.addEventListener('keydown', (e) => {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        if (SR.items.length) SR.active = (SR.active + (e.key === 'ArrowDown' ? 1 : SR.items.length - 1)) % SR.items.length;
        renderResults();
      } else if (e.key === 'Enter') {
        if (!SR.items.length) SR.items = searchMatches(input.value);
        if (SR.items.length) pickNode(SR.items[Math.min(SR.active, SR.items.length - 1)]);
      } else if (e.key === 'Escape') {
        if (input.value) closeSearch(true);
        else input.blur();
      } else return;
      e.preventDefault();
      e.stopPropagation();
    });
    input.addEventListener('blur', () => setTimeout(() => $('search-results').classList.add('hidden'), 120));
    input.addEventListener('focus', () => {
      if (input.value.trim()) renderResults();
    });
    // mousedown (not click): pick before the input's blur hides the list
    $('search-results').addEventListener('mousedown', (e) => {
      const li = e.target instanceof Element ? e.target.closest('[data-id]') : null;
      e.preventDefault();
      if (li) pickNode(li.getAttribute('data-id'));
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Neighbourhood mode (`f`): one node and everything within k lanes of it, laid out on its own
  // ---------------------------------------------------------------------------------------------
  function neighbourhood(id, k) {
    const set = new Set([id]);
    let ring = [id];
    for (let hop = 0; hop < k && ring.length; hop++) {
      const next = [];
      for (const x of ring) {
        for (const y of S.adj.get(x) || []) {
          if (!set.has(y)) {
            set.add(y);
            next.push(y);
          }
        }
      }
      ring = next;
    }
    return set;
  }

  function enterNeighbourhood(id, k) {
    if (!S.full || !S.full.info.has(id)) return;
    k = clamp(k, 1, NBHD_MAX_K);
    cancelAllFx();
    S.nbhd = { id, k, set: neighbourhood(id, k) };
    renderGraph();
    applyHead();
    renderNbhdPill();
    if (INS.open) revealNode(INS.node);
  }

  function exitNeighbourhood() {
    if (!S.nbhd) return;
    const id = S.nbhd.id;
    cancelAllFx();
    S.nbhd = null;
    renderGraph();
    applyHead();
    renderNbhdPill();
    centreOn(id, 1);
    if (INS.open) revealNode(INS.node);
  }

  function renderNbhdPill() {
    const pill = $('nbhd-pill');
    if (!S.nbhd) {
      pill.classList.add('hidden');
      return;
    }
    const n = S.nbhd;
    $('nbhd-text').textContent = 'neighbourhood of ' + nameOf(n.id) + ' · ' + n.k + (n.k === 1 ? ' hop' : ' hops') + ' · ' + n.set.size + ' nodes';
    $('nbhd-less').disabled = n.k <= 1;
    $('nbhd-more').disabled = n.k >= NBHD_MAX_K;
    pill.classList.remove('hidden');
  }

  function toggleLegend(open) {
    const lg = $('legend');
    lg.classList.toggle('open', open);
    $('legend-btn').setAttribute('aria-expanded', open ? 'true' : 'false');
  }

  // ---------------------------------------------------------------------------------------------
  // Inspector (§8.13)
  // ---------------------------------------------------------------------------------------------
  const INS = { open: false, node: null, frame: -1, tab: 'receipt', diff: false, token: 0, chainDraw: null };

  function openInspectorForNode(id) {
    const list = S.pre.nodeFrames.get(id);
    openInspector(id, list ? lastLE(list, S.head) : -1);
  }

  function openInspector(node, frame) {
    INS.open = true;
    INS.node = node;
    INS.frame = frame;
    const el = $('inspector');
    el.classList.remove('closed');
    el.setAttribute('aria-hidden', 'false');
    renderInspector();
    // The inspector slides over the sidebar and part of the graph: keep the node it shows in view.
    revealNode(node);
    scheduleChrome();
  }

  function closeInspector() {
    if (!INS.open) return;
    INS.open = false;
    INS.token++;
    const el = $('inspector');
    el.classList.add('closed');
    el.setAttribute('aria-hidden', 'true');
  }

  function setTab(tab) {
    INS.tab = tab;
    for (const b of document.querySelectorAll('.insp-tabs button')) b.classList.toggle('active', b.getAttribute('data-tab') === tab);
    renderInspector();
  }

  function inspectorJump(i) {
    pause();
    jump(i);
    openInspector(frameAt(i).node, i);
  }

  function jumpLink(text, idx) {
    const a = h('a', 'jump', text);
    a.href = '#frame=' + idx;
    a.title = 'jump to frame ' + idx;
    a.addEventListener('click', (e) => {
      e.preventDefault();
      inspectorJump(idx);
    });
    return a;
  }

  function kv(box, k, v) {
    box.appendChild(h('div', 'k', k));
    const cell = h('div', 'v');
    if (v instanceof Node) cell.appendChild(v);
    else cell.textContent = v === undefined ? '—' : String(v);
    box.appendChild(cell);
    return cell;
  }

  /** A content hash, linked to its frame when known (`hint`: a frame the server matched to it). */
  function hashOrLink(hash, hint) {
    if (typeof hash !== 'string') return h('span', null, JSON.stringify(hash));
    let idx = S.pre.byHash.get(hash);
    if (idx === undefined && typeof hint === 'number') idx = hint;
    return idx !== undefined ? jumpLink(hash, idx) : h('span', null, hash);
  }

  function renderInspector() {
    if (!INS.open) return;
    const tok = ++INS.token;
    INS.chainDraw = null;
    const body = $('insp-body');
    body.textContent = '';
    body.classList.remove('chain-mode');
    for (const b of document.querySelectorAll('.insp-tabs button')) b.classList.toggle('active', b.getAttribute('data-tab') === INS.tab);
    $('insp-title').textContent = nameOf(INS.node);
    $('insp-title').title = INS.node;
    const f = INS.frame >= 0 ? frameAt(INS.frame) : null;
    $('insp-sub').textContent = INS.node + ' · ' + (f ? 'frame ' + INS.frame + ' · ' + f.status : 'no receipt yet');
    if (INS.tab === 'chain') {
      renderChainTab(body);
      return;
    }
    if (!f) {
      body.appendChild(h('div', 'muted', 'no receipt yet'));
      return;
    }
    if (INS.tab === 'world') renderWorldTab(body, f, tok);
    else renderReceiptTab(body, f, tok);
  }

  async function renderReceiptTab(body, f, tok) {
    const loading = h('div', 'muted', 'loading receipt ' + f.index + '…');
    body.appendChild(loading);
    let data;
    try {
      f = await fullFrame(f);
      data = await DS.receipt(f.index);
    } catch (err) {
      if (tok !== INS.token) return;
      loading.remove();
      body.appendChild(h('div', 'err', 'error: ' + (err && err.message ? err.message : String(err))));
      return;
    }
    if (tok !== INS.token) return;
    loading.remove();
    const r = data && typeof data.receipt === 'object' && data.receipt !== null ? data.receipt : {};
    const verify = data && data.verify && typeof data.verify === 'object' ? data.verify : null;
    const chainBad = S.invalid.has(f.index);
    if (verify) {
      const ok = verify.ok === true && !chainBad;
      body.appendChild(h('div', 'verdict ' + (ok ? 'ok' : 'bad'), ok ? '✓ verified' : '✗ ' + (verify.ok === true ? 'breaks its node chain' : 'fails verification')));
      if (Array.isArray(verify.errors) && verify.errors.length) {
        const ul = h('ul', 'err');
        for (const e of verify.errors) ul.appendChild(h('li', null, String(e)));
        body.appendChild(ul);
      }
    } else body.appendChild(h('div', 'muted', 'verdict not available here' + (chainBad ? ' · ✗ flagged by chain verification' : '')));
    // Why did this render (issue 9): the frame's cause, with links to the receipts it names.
    const why = h('div', 'why-line');
    why.appendChild(h('span', 'why-k', 'why '));
    why.appendChild(f.why === undefined ? h('span', 'muted', 'cause not available') : RF.whyView(f.why, whyCtx()));
    body.appendChild(why);

    const sd = r.semantic_diff;
    if (sd && typeof sd === 'object' && typeof sd.failure_reason === 'string') {
      body.appendChild(h('div', 'failure', 'failure_reason: ' + sd.failure_reason));
    }
    const box = h('div', 'kv');
    kv(box, 'status', r.status !== undefined ? r.status : f.status);
    const wake = r.wake && typeof r.wake === 'object' ? r.wake : {};
    kv(box, 'wake source', wake.source !== undefined ? wake.source : f.wakeSource);
    const refs = h('div');
    if (Array.isArray(wake.refs) && wake.refs.length) {
      const known = f.why && Array.isArray(f.why.refs) ? f.why.refs : [];
      wake.refs.forEach((ref, k) => {
        const line = h('div');
        line.appendChild(hashOrLink(ref, known[k]));
        refs.appendChild(line);
      });
    } else refs.textContent = '—';
    kv(box, 'wake refs', refs);
    kv(box, 'contract', r.contract_fingerprint !== undefined ? String(r.contract_fingerprint) : '—');
    const inputs = h('div');
    if (Array.isArray(r.input_fingerprints) && r.input_fingerprints.length) {
      for (const x of r.input_fingerprints) inputs.appendChild(h('div', null, String(x)));
    } else inputs.textContent = Array.isArray(r.input_fingerprints) ? '[]' : '—';
    kv(box, 'input fingerprints', inputs);
    const c = r.cost && typeof r.cost === 'object' ? r.cost : {};
    const tk = c.tokens && typeof c.tokens === 'object' ? c.tokens : {};
    kv(box, 'cost', String(c.provider) + ' / ' + String(c.model) + ' · ' + fmtTok(tk.fresh) + ' fresh · ' + fmtTok(tk.reused) + ' reused · ' + String(c.surprise_cause));
    let prevHint;
    const pi = S.pre.prevSame[f.index];
    if (typeof r.prev === 'string' && pi >= 0) {
      const pf = S.lazy ? await fullFrame(frameAt(pi)) : frameAt(pi);
      if (tok !== INS.token) return;
      if (pf.contentHash === r.prev) prevHint = pi;
    }
    kv(box, 'prev', r.prev === null ? 'null (first receipt of the node)' : hashOrLink(r.prev, prevHint));
    kv(box, 'content hash', typeof r.content_hash === 'string' ? r.content_hash : JSON.stringify(r.content_hash));
    const recomputed = verify && typeof verify.expectedContentHash === 'string' ? verify.expectedContentHash : f.contentHash;
    const rc = kv(box, 'recomputed', recomputed || '—');
    if (recomputed && recomputed !== r.content_hash) rc.classList.add('err');
    body.appendChild(box);

    body.appendChild(h('div', 'section-h', 'fingerprints'));
    const fpBox = h('div', 'fp');
    const moved = new Set(f.movedFacets);
    const fps = r.fingerprints && typeof r.fingerprints === 'object' ? r.fingerprints : {};
    for (const k of Object.keys(fps)) {
      fpBox.appendChild(h('div', moved.has(k) ? 'moved' : '', (moved.has(k) ? '● ' : '  ') + k));
      fpBox.appendChild(h('div', 'hash', typeof fps[k] === 'string' ? fps[k] : JSON.stringify(fps[k])));
    }
    body.appendChild(fpBox);
    body.appendChild(h('div', 'section-h', 'semantic_diff'));
    body.appendChild(h('pre', 'code', JSON.stringify(sd === undefined ? null : sd, null, 2)));
  }

  /** A token count as stored, abbreviated first when large: `27k (27180)`. */
  function fmtTok(v) {
    if (typeof v !== 'number') return JSON.stringify(v);
    return Math.abs(v) >= 10000 ? fmt(v) + ' (' + v + ')' : String(v);
  }

  function b64bytes(b64) {
    try {
      const bin = atob(String(b64 || ''));
      const out = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
      return out;
    } catch (_) {
      return new Uint8Array(0);
    }
  }

  function hexPreview(b64) {
    const bytes = b64bytes(b64);
    const n = Math.min(bytes.length, HEX_PREVIEW);
    const lines = [];
    for (let off = 0; off < n; off += 16) {
      let hex = '';
      let asc = '';
      for (let k = 0; k < 16; k++) {
        if (off + k < n) {
          const b = bytes[off + k];
          hex += (b < 16 ? '0' : '') + b.toString(16) + ' ';
          asc += b >= 32 && b < 127 ? String.fromCharCode(b) : '.';
        } else hex += '   ';
        if (k === 7) hex += ' ';
      }
      lines.push(off.toString(16).padStart(8, '0') + '  ' + hex + ' |' + asc + '|');
    }
    if (bytes.length > n) lines.push('… ' + (bytes.length - n) + ' more bytes');
    return lines.join('\n');
  }

  function fileText(file) {
    if (typeof file.text !== 'string') return null;
    if (/\.json$/i.test(String(file.path))) {
      const v = parseJSON(file.text);
      if (v !== null || file.text.trim() === 'null') return JSON.stringify(v, null, 2);
    }
    return file.text;
  }

  function capText(t) {
    return t.length > TEXT_CAP ? t.slice(0, TEXT_CAP) + '\n… (' + (t.length - TEXT_CAP) + ' more characters)' : t;
  }

  function fileHead(file, badge) {
    const d = h('div', 'filehead');
    const left = h('span', null, String(file.path));
    if (badge) left.appendChild(h('span', 'badge-file ' + badge, badge));
    d.appendChild(left);
    d.appendChild(h('span', 'sz', num(file.bytes) + ' B' + (file.text === null ? ' · binary' : '')));
    return d;
  }

  function viewFiles(view) {
    return view && Array.isArray(view.files) ? view.files.filter((x) => x && typeof x === 'object') : [];
  }

  async function renderWorldTab(body, f, tok) {
    if (f.stub) {
      f = await fullFrame(f);
      if (tok !== INS.token) return;
    }
    const toggle = h('label', 'toggle');
    const cb = h('input');
    cb.type = 'checkbox';
    cb.checked = INS.diff;
    cb.addEventListener('change', () => {
      INS.diff = cb.checked;
      cb.blur();
      renderInspector();
    });
    toggle.appendChild(cb);
    toggle.appendChild(document.createTextNode('diff against the previous version'));
    body.appendChild(toggle);
    const v = f.atomicVersion;
    if (!v) {
      body.appendChild(h('div', 'muted', 'no stored version for this frame'));
      return;
    }
    body.appendChild(h('div', 'muted', 'version ' + v));
    const loading = h('div', 'muted', 'loading world model…');
    body.appendChild(loading);
    let cur;
    try {
      cur = await DS.node(f.node, v);
    } catch (err) {
      if (tok !== INS.token) return;
      loading.remove();
      body.appendChild(h('div', 'err', 'error: ' + (err && err.message ? err.message : String(err))));
      return;
    }
    if (tok !== INS.token) return;
    loading.remove();
    if (cur.status === 404) {
      body.appendChild(h('div', 'muted', 'no stored version for this frame'));
      return;
    }
    if (cur.status !== 200 || !cur.body) {
      body.appendChild(h('div', 'err', 'error: ' + (cur.body && cur.body.error ? cur.body.error : 'node ' + cur.status)));
      return;
    }
    const view = cur.body;
    if (INS.diff) {
      const list = S.pre.nodeFrames.get(f.node) || [];
      let prevIdx = -1;
      // In lazy mode each earlier frame may need its page: look back at most 200 frames.
      for (let k = lowerBound(list, f.index) - 1, budget = 200; k >= 0 && budget > 0; k--, budget--) {
        const pf = S.lazy ? await fullFrame(frameAt(list[k])) : frameAt(list[k]);
        if (tok !== INS.token) return;
        if (pf.atomicVersion && pf.atomicVersion !== v) {
          prevIdx = list[k];
          break;
        }
      }
      if (prevIdx < 0) {
        body.appendChild(h('div', 'muted', 'no earlier frame of this node has a different version — nothing to diff'));
        renderFiles(body, view);
      } else {
        const pv = frameAt(prevIdx).atomicVersion;
        const note = h('div', 'muted');
        note.appendChild(document.createTextNode('against frame '));
        note.appendChild(jumpLink(String(prevIdx), prevIdx));
        note.appendChild(document.createTextNode(' · ' + pv));
        body.appendChild(note);
        let prev;
        try {
          prev = await DS.node(f.node, pv);
        } catch (err) {
          prev = { status: 0, body: null };
        }
        if (tok !== INS.token) return;
        if (prev.status !== 200 || !prev.body) body.appendChild(h('div', 'muted', 'the previous version is not stored — showing the files'));
        if (prev.status !== 200 || !prev.body) renderFiles(body, view);
        else renderDiff(body, viewFiles(prev.body), viewFiles(view));
      }
    } else renderFiles(body, view);
    body.appendChild(h('div', 'section-h', 'published fingerprints (current)'));
    const fpBox = h('div', 'fp');
    const pf = view.publishedFingerprints && typeof view.publishedFingerprints === 'object' ? view.publishedFingerprints : {};
    const keys = Object.keys(pf);
    if (!keys.length) fpBox.appendChild(h('div', 'muted', '—'));
    for (const k of keys) {
      fpBox.appendChild(h('div', null, k));
      fpBox.appendChild(h('div', 'hash', String(pf[k])));
    }
    body.appendChild(fpBox);
  }

  function renderFiles(body, view) {
    const files = viewFiles(view);
    body.appendChild(h('div', 'section-h', 'files · ' + files.length));
    if (!files.length) body.appendChild(h('div', 'muted', 'no files'));
    for (const file of files) {
      body.appendChild(fileHead(file));
      const t = fileText(file);
      body.appendChild(h('pre', t !== null ? 'code' : 'code hex', t !== null ? capText(t) : hexPreview(file.base64)));
    }
  }

  function renderDiff(body, oldFiles, newFiles) {
    const oldBy = new Map(oldFiles.map((x) => [String(x.path), x]));
    const newBy = new Map(newFiles.map((x) => [String(x.path), x]));
    const paths = [];
    for (const x of newFiles) paths.push(String(x.path));
    for (const x of oldFiles) if (!newBy.has(String(x.path))) paths.push(String(x.path));
    body.appendChild(h('div', 'section-h', 'files · diff'));
    for (const p of paths) {
      const a = oldBy.get(p);
      const b = newBy.get(p);
      if (!a) {
        body.appendChild(fileHead(b, 'added'));
        const t = fileText(b);
        body.appendChild(diffBlock(t !== null ? lineDiff([], capText(t).split('\n')) : null, 'binary file added'));
      } else if (!b) {
        body.appendChild(fileHead(a, 'removed'));
        const t = fileText(a);
        body.appendChild(diffBlock(t !== null ? lineDiff(capText(t).split('\n'), []) : null, 'binary file removed'));
      } else if (a.base64 === b.base64 && a.text === b.text) {
        body.appendChild(fileHead(b, 'same'));
      } else {
        body.appendChild(fileHead(b, 'changed'));
        const ta = fileText(a);
        const tb = fileText(b);
        body.appendChild(diffBlock(ta !== null && tb !== null ? lineDiff(capText(ta).split('\n'), capText(tb).split('\n')) : null, 'binary content changed'));
      }
    }
  }

  function diffBlock(ops, binaryNote) {
    const pre = h('pre', 'code');
    if (!ops) {
      pre.textContent = binaryNote;
      return pre;
    }
    let k = 0;
    while (k < ops.length) {
      if (ops[k][0] === ' ') {
        let e = k;
        while (e < ops.length && ops[e][0] === ' ') e++;
        const run = e - k;
        const lead = k === 0 ? 0 : 2;
        const tail = e === ops.length ? 0 : 2;
        if (run > lead + tail + 2) {
          for (let j = k; j < k + lead; j++) pre.appendChild(h('span', 'diffline ctx', '  ' + ops[j][1]));
          pre.appendChild(h('span', 'diffline ctx', '  … ' + (run - lead - tail) + ' unchanged lines'));
          for (let j = e - tail; j < e; j++) pre.appendChild(h('span', 'diffline ctx', '  ' + ops[j][1]));
        } else for (let j = k; j < e; j++) pre.appendChild(h('span', 'diffline ctx', '  ' + ops[j][1]));
        k = e;
      } else {
        const op = ops[k];
        pre.appendChild(h('span', 'diffline ' + (op[0] === '+' ? 'add' : 'del'), op[0] + ' ' + op[1]));
        k++;
      }
    }
    return pre;
  }

  /** Line diff (LCS over the middle after trimming common prefix and suffix). → [[' '|'+'|'-', line]] */
  function lineDiff(a, b) {
    let p = 0;
    while (p < a.length && p < b.length && a[p] === b[p]) p++;
    let ea = a.length;
    let eb = b.length;
    while (ea > p && eb > p && a[ea - 1] === b[eb - 1]) {
      ea--;
      eb--;
    }
    const out = [];
    for (let i = 0; i < p; i++) out.push([' ', a[i]]);
    const A = a.slice(p, ea);
    const B = b.slice(p, eb);
    const n = A.length;
    const m = B.length;
    if (n * m <= 4000000) {
      const W = m + 1;
      const T = new Uint32Array((n + 1) * W);
      for (let i = n - 1; i >= 0; i--) {
        for (let j = m - 1; j >= 0; j--) {
          T[i * W + j] = A[i] === B[j] ? T[(i + 1) * W + j + 1] + 1 : Math.max(T[(i + 1) * W + j], T[i * W + j + 1]);
        }
      }
      let i = 0;
      let j = 0;
      while (i < n && j < m) {
        if (A[i] === B[j]) {
          out.push([' ', A[i]]);
          i++;
          j++;
        } else if (T[(i + 1) * W + j] >= T[i * W + j + 1]) out.push(['-', A[i++]]);
        else out.push(['+', B[j++]]);
      }
      while (i < n) out.push(['-', A[i++]]);
      while (j < m) out.push(['+', B[j++]]);
    } else {
      for (const l of A) out.push(['-', l]);
      for (const l of B) out.push(['+', l]);
    }
    for (let i = ea; i < a.length; i++) out.push([' ', a[i]]);
    return out;
  }

  const CHAIN_ROW_H = 20;

  function renderChainTab(body) {
    const list = S.pre.nodeFrames.get(INS.node) || [];
    if (!list.length) {
      body.appendChild(h('div', 'muted', 'no receipts for this node'));
      return;
    }
    let bad = 0;
    for (const i of list) if (S.invalid.has(i)) bad++;
    body.appendChild(h('div', 'verdict ' + (bad ? 'bad' : 'ok'), list.length + ' receipt' + (list.length === 1 ? '' : 's') + ' · ' + (bad ? '✗ ' + bad + ' invalid' : '✓ chain verified')));
    // Virtualized like the timeline: a node may own tens of thousands of frames.
    const wrap = h('div', 'chain-list');
    const spacer = h('div', 'chain-spacer');
    spacer.style.height = list.length * CHAIN_ROW_H + 'px';
    wrap.appendChild(spacer);
    body.appendChild(wrap);
    body.classList.add('chain-mode');
    const pool = [];
    const draw = () => {
      const vh = wrap.clientHeight || 400;
      const first = Math.max(0, Math.floor(wrap.scrollTop / CHAIN_ROW_H) - 6);
      const last = Math.min(list.length - 1, Math.ceil((wrap.scrollTop + vh) / CHAIN_ROW_H) + 6);
      const need = Math.max(0, last - first + 1);
      while (pool.length < need) {
        const row = h('div', 'chain-row');
        row.appendChild(h('span', 'ix'));
        row.appendChild(h('i', 'dot'));
        row.appendChild(h('span', 'mv'));
        row.appendChild(h('span', 'fr'));
        row.appendChild(h('span', 'hs'));
        row.appendChild(h('span', 'ck'));
        spacer.appendChild(row);
        pool.push(row);
      }
      for (let k = 0; k < pool.length; k++) {
        const row = pool[k];
        if (k >= need) {
          row.style.display = 'none';
          continue;
        }
        const pos = first + k;
        const i = list[pos];
        const f = frameAt(i);
        if (f.stub) S.pages.want(i, i);
        row.style.display = '';
        row.style.top = pos * CHAIN_ROW_H + 'px';
        row.className = 'chain-row st-' + f.status + (i === INS.frame ? ' current' : '');
        row.setAttribute('data-frame', String(i));
        row.title = f.status + ' · ' + f.wakeSource + ' · ' + f.contentHash;
        const c = row.children;
        c[0].textContent = String(i);
        c[2].textContent = f.movedFacets.length ? f.movedFacets.join(', ') : '—';
        c[3].textContent = fmt(f.cost.fresh);
        c[4].textContent = shortHash(f.contentHash);
        const ok = !S.invalid.has(i);
        c[5].textContent = ok ? '✓' : '✗';
        c[5].className = 'ck ' + (ok ? 'ok' : 'bad');
      }
    };
    let queued = false;
    wrap.addEventListener(
      'scroll',
      () => {
        if (queued) return;
        queued = true;
        requestAnimationFrame(() => {
          queued = false;
          draw();
        });
      },
      { passive: true },
    );
    wrap.addEventListener('click', (e) => {
      const row = e.target instanceof Element ? e.target.closest('[data-frame]') : null;
      if (!row) return;
      const i = parseInt(row.getAttribute('data-frame'), 10);
      pause();
      jump(i);
      INS.frame = i;
      renderInspector();
    });
    INS.chainDraw = draw;
    const at = INS.frame >= 0 ? lowerBound(list, INS.frame) : 0;
    const vh = wrap.clientHeight || 400;
    const top = at * CHAIN_ROW_H;
    if (top + CHAIN_ROW_H > vh) wrap.scrollTop = top - vh / 2;
    draw();
  }

  function lowerBound(list, x) {
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (list[mid] < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  // ---------------------------------------------------------------------------------------------
  // Chain badge (§8.14) and chrome (§8.1): status, the ledger's name, the synthetic-sample banner
  // ---------------------------------------------------------------------------------------------
  function renderBadge() {
    const cv = S.snap.chainVerify;
    const b = $('chain-badge');
    if (!cv || typeof cv !== 'object') {
      b.classList.add('hidden');
      return;
    }
    b.classList.remove('hidden');
    const ok = cv.ok === true;
    b.textContent = ok ? 'chain ✓ verified' : 'chain ✗ TAMPERED';
    b.className = 'pill ' + (ok ? 'ok' : 'bad');
    const pop = $('chain-popover');
    pop.textContent = '';
    pop.appendChild(h('h4', null, ok ? 'chain verification' : 'chain verification failed'));
    const errs = Array.isArray(cv.errors) ? cv.errors : [];
    if (!errs.length) pop.appendChild(h('div', 'okline', 'every node chain verifies'));
    else {
      const ul = h('ul');
      for (const e of errs) ul.appendChild(h('li', null, String(e)));
      pop.appendChild(ul);
    }
  }

  function renderStatus() {
    const snap = S.snap;
    let t = fmtCount(S.F) + ' receipts · ' + fmtCount(snap.nodes.length) + ' nodes · ' + fmtCount(snap.edges.length) + ' edges';
    if (S.indexing) t = 'loading ' + fmtCount(S.F) + ' / ' + fmtCount(S.indexTotal) + ' receipts… · ' + fmtCount(snap.nodes.length) + ' nodes';
    if (!snap.hasTopology) t += ' · no saved topology (node-only fallback)';
    const el = $('status-text');
    el.textContent = S.indexError || t;
    el.title = S.F + ' receipts · ' + snap.nodes.length + ' nodes · ' + snap.edges.length + ' edges';
    el.classList.toggle('error', !!S.indexError);
  }

  /** Last path segment ("." and trailing slashes ignored). */
  function baseName(p) {
    const parts = String(p).split(/[\\/]+/).filter((x) => x && x !== '.');
    return parts.length ? parts[parts.length - 1] : String(p);
  }

  /** Names the ledger in the top bar and the document title; a banner marks a synthetic sample. */
  function renderLedger(info) {
    const where = info.path || info.stateDir;
    const name = info.example || baseName(where) || 'ledger';
    $('ledger-name').textContent = name;
    const dir = info.example ? 'bundled example' : where.length > 44 ? '…' + where.slice(-43) : where;
    $('ledger-dir').textContent = dir;
    const title = S.snap && S.snap.beats && typeof S.snap.beats.title === 'string' ? S.snap.beats.title : '';
    $('ledger').title = (info.example ? 'example:' + info.example : where) + (title ? ' — ' + title : '');
    $('ledger').classList.remove('hidden');
    if (!S.exported) document.title = name + ' — Reactor DevTools';
    const banner = $('banner');
    if (info.synthetic) {
      banner.textContent = '';
      banner.appendChild(h('b', null, 'synthetic sample'));
      banner.appendChild(document.createTextNode(' · the bundled example “' + name + '”, written by a fixture script — not a recorded run' + (title ? ' · ' + title : '')));
      banner.classList.remove('hidden');
    } else banner.classList.add('hidden');
    requestAnimationFrame(onResize); // the banner changes the stage's height
  }

  function setLivePill(state) {
    S.livePill = state;
    const p = $('live-pill');
    if (!state) {
      p.classList.add('hidden');
      return;
    }
    p.className = 'pill ' + state;
    p.textContent = state === 'live' ? '● live' : state === 'reconnecting' ? 'reconnecting…' : 'viewer stopped';
  }

  function setInvalid() {
    const cv = S.snap.chainVerify;
    S.invalid = new Set(cv && Array.isArray(cv.invalidFrames) ? cv.invalidFrames : []);
    tlInvalidate();
  }

  function checkSnapshot(snap) {
    if (!snap || typeof snap !== 'object') throw new Error('snapshot is not an object');
    for (const k of ['nodes', 'edges', 'frames']) if (!Array.isArray(snap[k])) throw new Error('snapshot.' + k + ' is not an array');
    snap.nodes = snap.nodes.filter((n) => n && typeof n.id === 'string');
    snap.edges = snap.edges.filter((e) => e && typeof e.producer === 'string' && typeof e.subscriber === 'string' && typeof e.facet === 'string');
    if (!snap.labels || typeof snap.labels !== 'object') snap.labels = {};
    return snap;
  }

  /** (Re)builds everything from S.snap, keeping the head index (clamped). */
  function renderAll() {
    const snap = S.snap;
    window.__REACTOR_SNAPSHOT__ = snap;
    S.F = S.lazy ? S.index.n : snap.frames.length;
    S.pre = newPre(snap);
    extendPre();
    setInvalid();
    cancelAllFx();
    if (S.picked && !snap.nodes.some((n) => n.id === S.picked)) S.picked = null;
    layoutAll();
    if (S.nbhd && !S.full.info.has(S.nbhd.id)) S.nbhd = null;
    renderGraph();
    renderNbhdPill();
    S.capText = null;
    $('legend').classList.remove('hidden');
    renderStatus();
    renderBadge();
    tlSetup();
    tlInvalidate();
    const seek = $('seek');
    seek.min = '-1';
    seek.max = String(S.F - 1);
    S.head = clamp(S.head, -1, S.F - 1);
    applyHead();
    if (INS.open) {
      if (INS.frame >= S.F) INS.frame = -1;
      renderInspector();
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Live follow (§8.15)
  // ---------------------------------------------------------------------------------------------
  function startLive() {
    if (S.exported || typeof EventSource === 'undefined') return;
    const es = new EventSource('/events?after=' + (S.F - 1));
    S.es = es;
    const on = (name, fn) =>
      es.addEventListener(name, (ev) => {
        if (S.es !== es) return;
        const data = parseJSON(ev.data);
        if (S.refetching) S.pendingEvents.push([name, data]);
        else fn(data);
      });
    on('hello', onHello);
    on('frame', onLiveFrame);
    on('summary', onSummary);
    on('reset', () => refetch());
    es.addEventListener('shutdown', () => {
      es.close();
      S.es = null;
      setLivePill('stopped');
    });
    es.onopen = () => {
      if (S.livePill === 'reconnecting') setLivePill(S.liveSeen ? 'live' : null);
    };
    es.onerror = () => {
      if (S.es !== es) return;
      if (es.readyState === EventSource.CLOSED) setLivePill('stopped');
      else setLivePill('reconnecting');
    };
  }

  function onHello(d) {
    if (!d || typeof d !== 'object') return;
    S.liveSeen = d.live === true;
    setLivePill(S.liveSeen ? 'live' : null);
    if (typeof d.frames === 'number' && d.frames < S.F) refetch();
  }

  function onLiveFrame(fr) {
    if (!isFrameLike(fr)) return;
    if (fr.index < S.F) return; // already known (catch-up overlap)
    if (fr.index > S.F) {
      refetch(); // a gap: resynchronise from the snapshot
      return;
    }
    const wasAtEnd = S.head === S.F - 1 && !S.dragging;
    if (S.lazy) S.index.appendFrame(normFrame(fr, fr.index));
    else S.snap.frames.push(fr);
    S.F++;
    if (S.full && !S.full.info.has(fr.node)) S.relayout = true;
    extendPre();
    queueLiveUI();
    if ((wasAtEnd || S.following) && !S.playing && !S.dragging) startFollow();
  }

  function onSummary(d) {
    if (!d || typeof d !== 'object') return;
    if (d.costRollup && typeof d.costRollup === 'object') S.snap.costRollup = d.costRollup;
    if (d.chainVerify && typeof d.chainVerify === 'object') {
      S.snap.chainVerify = d.chainVerify;
      setInvalid();
      renderBadge();
    }
    queueLiveUI();
  }

  function queueLiveUI() {
    if (S.uiQueued) return;
    S.uiQueued = true;
    requestAnimationFrame(() => {
      S.uiQueued = false;
      if (S.relayout) {
        S.relayout = false;
        const view = S.view;
        layoutAll();
        renderGraph();
        renderNbhdPill();
        if (view) setView(view);
      }
      renderStatus();
      tlSetup();
      $('seek').max = String(S.F - 1);
      applyHead();
      if (INS.open && INS.tab === 'chain') renderInspector();
    });
  }

  function startFollow() {
    if (S.following) return;
    S.following = true;
    followTick();
  }

  function scheduleFollow() {
    clearTimeout(S.followTimer);
    S.followTimer = setTimeout(followTick, STEP_MS / S.speed);
  }

  function followTick() {
    if (!S.following) return;
    if (S.head >= S.F - 1 || S.dragging) {
      stopFollow();
      return;
    }
    stepForward();
    if (S.head >= S.F - 1) {
      // stay armed for one more interval so that a frame arriving meanwhile is queued, not jumped
      clearTimeout(S.followTimer);
      S.followTimer = setTimeout(() => {
        if (S.head >= S.F - 1) stopFollow();
        else followTick();
      }, STEP_MS / S.speed);
    } else scheduleFollow();
  }

  async function refetch() {
    if (S.refetching) return;
    S.refetching = true;
    try {
      const snap = checkSnapshot(await loadSnapshot());
      cache.receipt.clear();
      cache.node.clear();
      S.pages.clear();
      stopFollow();
      S.snap = snap;
      renderAll();
      if (S.lazy) await loadIndexRest();
    } catch (err) {
      // keep the last good view; the next reset or reconnect retries
    } finally {
      S.refetching = false;
      const evs = S.pendingEvents.splice(0);
      for (const [name, data] of evs) {
        if (name === 'frame') onLiveFrame(data);
        else if (name === 'summary') onSummary(data);
        else if (name === 'hello') onHello(data);
        else if (name === 'reset') refetch();
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Boot (§8.1)
  // ---------------------------------------------------------------------------------------------
  function onResize() {
    measure();
    tlMeasure();
    if (S.view) updateLod();
    scheduleChrome();
    if (S.snap) tlRender();
  }

  function wireUI() {
    const mq = window.matchMedia ? window.matchMedia('(prefers-reduced-motion: reduce)') : null;
    S.reduced = !!(mq && mq.matches);
    if (mq && mq.addEventListener) mq.addEventListener('change', () => (S.reduced = mq.matches));
    readTheme();
    const scheme = window.matchMedia ? window.matchMedia('(prefers-color-scheme: light)') : null;
    if (scheme && scheme.addEventListener) {
      scheme.addEventListener('change', () => {
        readTheme();
        scheduleChrome();
      });
    }

    const btn = (id, fn) =>
      $(id).addEventListener('click', (e) => {
        fn();
        if (e.detail > 0) e.currentTarget.blur(); // mouse click: keep keyboard shortcuts working
      });
    btn('btn-start', () => {
      pause();
      jump(-1);
    });
    btn('btn-back', () => {
      pause();
      stepBack();
    });
    btn('btn-play', togglePlay);
    btn('btn-step', () => {
      pause();
      stepForward();
    });
    btn('btn-end', () => {
      pause();
      jump(S.F - 1);
    });
    $('speed').addEventListener('change', (e) => {
      const x = Number(e.target.value);
      if (Number.isFinite(x) && x > 0) setSpeed(x);
    });
    const seek = $('seek');
    seek.addEventListener('input', () => {
      if (!S.snap) return;
      pause();
      S.dragging = true;
      jump(parseInt(seek.value, 10));
    });
    const endDrag = () => (S.dragging = false);
    seek.addEventListener('change', endDrag);
    seek.addEventListener('pointerup', endDrag);
    seek.addEventListener('blur', endDrag);

    $('timeline').addEventListener('scroll', tlOnScroll, { passive: true });
    $('timeline').addEventListener('click', (e) => {
      const row = e.target instanceof Element ? e.target.closest('[data-frame]') : null;
      if (!row || !S.snap) return;
      const i = parseInt(row.getAttribute('data-frame'), 10);
      if (!(i >= 0 && i < S.F)) return;
      pause();
      jump(i);
      if (INS.open) openInspector(frameAt(i).node, i);
    });
    if (typeof ResizeObserver !== 'undefined') {
      // The observer reports sizes; reading them from the elements instead would force layouts.
      const ro = new ResizeObserver((entries) => {
        for (const en of entries) {
          const r = en.contentRect;
          if (en.target.id === 'graph') S.size = { w: Math.max(1, r.width), h: Math.max(1, r.height) };
          else TL.vh = r.height;
        }
        if (S.view) updateLod();
        scheduleChrome();
        if (S.snap) tlRender();
      });
      ro.observe($('graph'));
      ro.observe($('timeline'));
    } else window.addEventListener('resize', onResize);

    document.addEventListener('keydown', onKey);
    window.addEventListener('hashchange', () => {
      if (!S.snap) return;
      const fr = hashFrame();
      if (fr === null) return;
      pause();
      jump(fr);
    });

    $('insp-close').addEventListener('click', closeInspector);
    $('insp-focus').addEventListener('click', () => {
      if (INS.node) enterNeighbourhood(INS.node, S.nbhd ? S.nbhd.k : 1);
    });
    for (const b of document.querySelectorAll('.insp-tabs button')) b.addEventListener('click', () => setTab(b.getAttribute('data-tab')));
    $('nbhd-less').addEventListener('click', () => S.nbhd && enterNeighbourhood(S.nbhd.id, S.nbhd.k - 1));
    $('nbhd-more').addEventListener('click', () => S.nbhd && enterNeighbourhood(S.nbhd.id, S.nbhd.k + 1));
    $('nbhd-exit').addEventListener('click', exitNeighbourhood);

    $('chain-badge').addEventListener('click', (e) => {
      e.stopPropagation();
      $('chain-popover').classList.toggle('hidden');
    });
    $('legend-btn').addEventListener('click', (e) => {
      e.stopPropagation();
      toggleLegend(!$('legend').classList.contains('open'));
    });
    document.addEventListener('click', (e) => {
      const pop = $('chain-popover');
      if (!pop.classList.contains('hidden') && e.target instanceof Node && !pop.contains(e.target)) pop.classList.add('hidden');
      if ($('legend').classList.contains('open') && e.target instanceof Node && !$('legend').contains(e.target)) toggleLegend(false);
    });
    wirePanZoom();
    wireMinimap();
    wireSearch();
  }

  async function boot() {
    wireUI();
    measure();
    tlMeasure();
    let snap;
    S.pages = RF.createPages(PAGE, MAX_PAGES, (from, count) => DS.frames(from, count).then((p) => (p && Array.isArray(p.frames) ? p.frames.map((f, k) => normFrame(f, from + k)) : [])));
    S.pages.onLoad(onPages);
    try {
      snap = checkSnapshot(await loadSnapshot());
    } catch (err) {
      const el = $('status-text');
      el.classList.add('error');
      el.textContent = err && err.stateStatus ? 'error: state ' + err.stateStatus : 'error: ' + (err && err.message ? err.message : String(err));
      return;
    }
    S.snap = snap;
    S.head = -1;
    renderAll();
    window.__REACTOR_VIEW__ = {
      get frames() {
        return S.F;
      },
      get lazy() {
        return S.lazy;
      },
      get indexing() {
        return S.indexing;
      },
    };
    const ledger = DS.ledger(snap);
    if (S.lazy) await loadIndexRest();
    applyUrlParams();
    startLive();
    renderLedger(await ledger);
  }

  /**
   * The snapshot to start from: the inlined one (exported page), the whole GET /api/state for a
   * ledger under LAZY_MIN frames, else the frames-less snapshot plus the first index page (lazy).
   * `?frames=full` or `?frames=lazy` overrides the choice.
   */
  async function loadSnapshot() {
    const pref = new URLSearchParams(location.search).get('frames');
    const whole = async () => {
      const snap = await DS.state();
      S.lazy = false;
      return snap;
    };
    if (inlineJSON('snapshot') !== undefined || pref === 'full') return whole();
    const head = await DS.head();
    const F = head && typeof head.frameCount === 'number' ? head.frameCount : -1;
    if (F < 0 || (F < LAZY_MIN && pref !== 'lazy')) return whole();
    checkSnapshot(head);
    const index = RF.createIndex(head.edges);
    const p = await DS.frames(0, INDEX_PAGE, 'index');
    index.appendPage(p);
    // Switch only now: until the caller renders, the view keeps reading the frames it had.
    S.lazy = true;
    S.index = index;
    S.indexTotal = p && typeof p.total === 'number' ? p.total : F;
    return head;
  }

  /** Reads the rest of the index page by page, extending the view as each arrives. */
  async function loadIndexRest() {
    S.indexing = S.index.n < S.indexTotal;
    renderStatus();
    try {
      while (S.index.n < S.indexTotal) {
        const p = await DS.frames(S.index.n, INDEX_PAGE, 'index');
        if (p && typeof p.total === 'number') S.indexTotal = p.total;
        if (!S.index.appendPage(p)) break;
        S.F = S.index.n;
        extendPre();
        queueLiveUI();
      }
    } catch (err) {
      S.indexError = 'error: ' + (err && err.message ? err.message : String(err));
    } finally {
      S.indexing = false;
      queueLiveUI();
    }
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', boot);
  else boot();
})();
