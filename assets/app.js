// reactor-devtools — the replay viewer's single-page app (VIEWER.md §8).
//
// Vanilla JavaScript and SVG, no build step, no external request, no eval, no inline script (the page
// runs under the CSP of VIEWER.md §6.7). Every datum comes from the snapshot of VIEWER.md §4, fetched
// from GET /api/state — or, in an exported page (§8.18), read from an inlined
// <script type="application/json" id="snapshot"> element. The inspector (§8.13) adds
// GET /api/receipt/<index> and GET /api/node/<id>?version=<v>; live follow (§8.15) adds /events.
// File contents and every other server-provided string are inserted as text, never as HTML.
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
  const HUE = { input: '#caa96b', external: '#d8be8c', self: '#b39ddb' };
  const RED = '#e0635a';
  const GREY = '#9aa1ac';
  const VIOLET = '#b39ddb';
  const HEX_PREVIEW = 4096;
  const TEXT_CAP = 262144;

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

  /** Number format of §8.7: ≥ 10 000 → `27k`; 1 000–9 999 → `1.5k` / `2k`; else plain. */
  function fmt(n) {
    n = num(n);
    const a = Math.abs(n);
    if (a >= 10000) return Math.round(n / 1000) + 'k';
    if (a >= 1000) {
      let t = (n / 1000).toFixed(1);
      if (t.endsWith('.0')) t = t.slice(0, -2);
      return t + 'k';
    }
    return String(n);
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
    following: false,
    followTimer: 0,
    speed: 1,
    dragging: false,
    layout: null,
    nodeEls: new Map(), // id → {g, halo, box, name, x, y, base, cls, anims}
    edgeEls: new Map(), // key → [{g, path, base, cls}]
    pre: null,
    invalid: new Set(),
    reduced: false,
    view: null,
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
  };

  // ---------------------------------------------------------------------------------------------
  // Data source: the server API, or the data inlined in an exported page (§8.18)
  // ---------------------------------------------------------------------------------------------
  const cache = { receipt: new Map(), node: new Map() };

  function inlineJSON(id) {
    const el = document.getElementById(id);
    if (!el || el.tagName !== 'SCRIPT') return undefined;
    return JSON.parse(el.textContent || 'null');
  }

  const DS = {
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
    /** → `{index, receipt, verify}` (VIEWER.md §6.5); throws Error with a readable message. */
    async receipt(i) {
      if (cache.receipt.has(i)) return cache.receipt.get(i);
      let data;
      if (S.exported) {
        const all = inlineJSON('snapshot-receipts');
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
    const nzNew = [];
    for (let i = pre.n; i < frames.length; i++) {
      const f = normFrame(frames[i], i);
      frames[i] = f;
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
    pre.n = frames.length;
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
  // Layered DAG layout (§8.2)
  // ---------------------------------------------------------------------------------------------
  function computeLayout(snap) {
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
      if (add(n.id, 'topo')) info.get(n.id).entry = !!n.isEntryPoint || entries.has(n.id);
    }
    for (const e of snap.edges) {
      add(e.producer, 'phantom');
      add(e.subscriber, 'phantom');
    }
    const implied = [];
    const seen = new Set();
    for (const f of snap.frames) {
      const id = f.node;
      if (seen.has(id)) continue;
      seen.add(id);
      if (info.has(id)) continue;
      const m = /^(.*)::ingress$/.exec(id);
      if (m && info.has(m[1])) {
        add(id, 'ingress');
        implied.push({ producer: id, subscriber: m[1], facet: '@atomic' });
      } else add(id, 'offtopo');
    }
    const producers = new Map();
    for (const id of order) producers.set(id, []);
    for (const e of snap.edges) producers.get(e.subscriber).push(e.producer);
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
    cols.forEach((col, l) => {
      const colH = H(col.length);
      col.forEach((id, r) => {
        pos.set(id, { x: PAD_X + l * COL_STEP, y: PAD_Y + (tallest - colH) / 2 + r * ROW_STEP });
      });
    });
    const width = Math.max(600, 80 + (Math.max(L, 1) - 1) * COL_STEP + NODE_W);
    const height = Math.max(320, 88 + tallest);
    return { info, order, pos, layer, implied, width, height };
  }

  function edgePathD(a, b) {
    const x1 = a.x + NODE_W;
    const y1 = a.y + NODE_H / 2;
    const x2 = b.x;
    const y2 = b.y + NODE_H / 2;
    const hl = Math.max(40, Math.abs(x2 - x1) / 2);
    return 'M' + x1 + ',' + y1 + ' C' + (x1 + hl) + ',' + y1 + ' ' + (x2 - hl) + ',' + y2 + ' ' + x2 + ',' + y2;
  }

  // ---------------------------------------------------------------------------------------------
  // Graph rendering
  // ---------------------------------------------------------------------------------------------
  let gEdges = null;
  let gNodes = null;
  let gFx = null;

  function fitText(t, text, size) {
    const est = Array.from(text).length * size * 0.58;
    if (est > 130) {
      t.setAttribute('textLength', '130');
      t.setAttribute('lengthAdjust', 'spacingAndGlyphs');
    }
  }

  function renderGraph() {
    const snap = S.snap;
    const L = (S.layout = computeLayout(snap));
    const svg = $('graph-svg');
    svg.textContent = '';
    S.nodeEls = new Map();
    S.edgeEls = new Map();
    const defs = sv('defs');
    const marker = sv('marker', { id: 'arrow', viewBox: '0 0 8 8', refX: 8, refY: 4, markerWidth: 8, markerHeight: 8, orient: 'auto', markerUnits: 'userSpaceOnUse' });
    marker.appendChild(sv('path', { d: 'M0,0 L8,4 L0,8 z', fill: '#3a465e' }));
    defs.appendChild(marker);
    svg.appendChild(defs);
    svg.appendChild(sv('rect', { class: 'bg', x: -100000, y: -100000, width: 200000, height: 200000, fill: 'transparent' }));
    gEdges = sv('g', { class: 'edges' });
    gNodes = sv('g', { class: 'nodes' });
    gFx = sv('g', { class: 'fx' });
    svg.appendChild(gEdges);
    svg.appendChild(gNodes);
    svg.appendChild(gFx);

    const addEdge = (e, implied) => {
      const a = L.pos.get(e.producer);
      const b = L.pos.get(e.subscriber);
      if (!a || !b) return;
      const key = edgeKey(e);
      const atomic = e.facet === '@atomic';
      const base = 'edge ' + facetClass(e.facet) + (atomic ? ' atomic' : ' named') + (implied ? ' implied' : '');
      const g = sv('g', { class: base });
      if (implied) g.setAttribute('data-implied-edge', key);
      else g.setAttribute('data-edge', key);
      const path = sv('path', { class: 'lane', d: edgePathD(a, b), 'marker-end': 'url(#arrow)' });
      g.appendChild(path);
      gEdges.appendChild(g);
      if (!implied) {
        let list = S.edgeEls.get(key);
        if (!list) S.edgeEls.set(key, (list = []));
        list.push({ g, path, base, cls: base });
      }
    };
    for (const e of snap.edges) addEdge(e, false);
    for (const e of L.implied) addEdge(e, true);

    for (const id of L.order) {
      const p = L.pos.get(id);
      const inf = L.info.get(id);
      const label = labelOf(id);
      let base = 'node';
      if (inf.entry) base += ' entry';
      if (inf.kind === 'phantom' || inf.kind === 'ingress') base += ' phantom';
      if (inf.kind === 'offtopo') base += ' offtopo';
      if (label) base += ' labelled';
      const g = sv('g', { class: base + ' state-untouched', 'data-node': id, transform: 'translate(' + p.x + ',' + p.y + ')' });
      const title = sv('title');
      title.textContent = id + (inf.kind === 'offtopo' ? ' (off-topology)' : inf.kind === 'topo' ? '' : ' (producer only)');
      g.appendChild(title);
      const halo = sv('rect', { class: 'halo', x: -3, y: -3, width: NODE_W + 6, height: NODE_H + 6, rx: 12 });
      const ring = sv('rect', { class: 'ring', x: -7, y: -7, width: NODE_W + 14, height: NODE_H + 14, rx: 13 });
      const box = sv('rect', { class: 'box', width: NODE_W, height: NODE_H, rx: 8 });
      g.appendChild(halo);
      g.appendChild(ring);
      g.appendChild(box);
      let nameEl;
      if (label) {
        nameEl = sv('text', { class: 'name', x: NODE_W / 2, y: NODE_H / 2 + 5, 'text-anchor': 'middle' });
        nameEl.textContent = label;
        fitText(nameEl, label, 14.5);
      } else {
        const dot = id.indexOf('.');
        const short = shortName(id);
        if (dot > 0) {
          const kind = sv('text', { class: 'kind', x: 15, y: 21 });
          kind.textContent = id.slice(0, dot);
          fitText(kind, id.slice(0, dot), 12);
          g.appendChild(kind);
        }
        nameEl = sv('text', { class: 'name', x: 15, y: dot > 0 ? 46 : 39 });
        nameEl.textContent = short;
        fitText(nameEl, short, 18);
      }
      g.appendChild(nameEl);
      gNodes.appendChild(g);
      S.nodeEls.set(id, { g, halo, box, name: nameEl, x: p.x, y: p.y, base, cls: '', anims: [] });
    }
    S.fit = { x: 0, y: 0, w: L.width, h: L.height };
    setView(Object.assign({}, S.fit));
  }

  // ---------------------------------------------------------------------------------------------
  // Scrub state (§8.4) — idempotent, reapplied on every head change
  // ---------------------------------------------------------------------------------------------
  function applyHead() {
    const snap = S.snap;
    const pre = S.pre;
    const frames = snap.frames;
    const hd = S.head;
    const f = hd >= 0 ? frames[hd] : null;

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
    const wokeOnce = new Set();
    if (f && f.status === 'rendered' && f.wokenSubscribers.length >= 2) for (const s of f.wokenSubscribers) wokeOnce.add(s);

    for (const [id, ne] of S.nodeEls) {
      const list = pre.nodeFrames.get(id);
      let cls = ne.base;
      const j = list ? lastLE(list, hd) : -1;
      if (j < 0) cls += ' state-untouched';
      else {
        cls += ' state-' + frames[j].status;
        const fr = pre.firstRendered.get(id);
        if (fr !== undefined && fr <= hd) cls += ' floor';
      }
      if (litNodes.has(id)) cls += ' lit';
      if (f && f.node === id) cls += ' hit' + headClass(f, hd);
      if (wokeOnce.has(id)) cls += ' woke-once';
      if (cls !== ne.cls) {
        ne.g.setAttribute('class', cls);
        ne.cls = cls;
      }
    }
    for (const [key, list] of S.edgeEls) {
      const on = litEdges.has(key);
      for (const el of list) {
        const cls = on ? el.base + ' lit' : el.base;
        if (cls !== el.cls) {
          el.g.setAttribute('class', cls);
          el.cls = cls;
        }
      }
    }
    const focus = !!f && d >= 0 && litEdges.size >= 2 && hd > coldEnd() && num(f.cost.fresh) < 5000;
    $('receipts').classList.toggle('focus', focus);

    const seek = $('seek');
    if (String(hd) !== seek.value) seek.value = String(hd);
    renderReadout();
    renderMeter();
    renderSpark();
    renderCaption();
    tlEnsureVisible(hd);
    tlRender();
  }

  function headClass(f, i) {
    const self = f.wakeSource === 'self';
    if (f.status === 'rendered') {
      const prev = S.pre.prevSame[i];
      if (prev >= 0 && S.snap.frames[prev].status === 'failed') return ' hit-recovered';
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
      const f = S.snap.frames[hd];
      const moved = f.movedFacets.length ? f.movedFacets.join(', ') : '—';
      t = 'frame ' + hd + '/' + (F - 1) + ' · ' + nameOf(f.node) + ' · ' + f.status + ' · ' + f.cost.surpriseCause + ' · moved [' + moved + ']';
    }
    $('readout').textContent = t;
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
    const frames = S.snap.frames;
    let mx = 1800;
    for (let k = 0; k < n; k++) {
      const c = frames[start + k].cost;
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
      const f = frames[i];
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
      void el.offsetWidth; // restart the fade/slide-in transition
      el.classList.add('show');
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Timeline (§8.6) — virtualized: only visible rows exist in the DOM
  // ---------------------------------------------------------------------------------------------
  const TL = { pool: [], queued: false };

  function tlSetup() {
    $('timeline-spacer').style.height = S.F * ROW_H + 'px';
    $('timeline-title').textContent = 'receipts · ' + S.F;
  }

  function tlEnsureVisible(i) {
    if (i < 0) return;
    const tl = $('timeline');
    const top = i * ROW_H;
    const vh = tl.clientHeight;
    if (vh <= 0) return;
    if (top < tl.scrollTop) tl.scrollTop = top;
    else if (top + ROW_H > tl.scrollTop + vh) tl.scrollTop = top + ROW_H - vh;
  }

  function tlMakeRow() {
    const row = h('div', 'trow');
    row.appendChild(h('span', 'ix'));
    row.appendChild(h('span', 'bad'));
    row.appendChild(h('i', 'dot'));
    row.appendChild(h('span', 'nm'));
    row.appendChild(h('span', 'tag'));
    $('timeline-spacer').appendChild(row);
    return row;
  }

  function tlRender() {
    const tl = $('timeline');
    const F = S.F;
    const hd = S.head;
    const vh = tl.clientHeight || 400;
    const first = Math.max(0, Math.floor(tl.scrollTop / ROW_H) - 6);
    const last = Math.min(F - 1, Math.ceil((tl.scrollTop + vh) / ROW_H) + 6);
    const need = Math.max(0, last - first + 1);
    while (TL.pool.length < need) TL.pool.push(tlMakeRow());
    const frames = S.snap.frames;
    for (let k = 0; k < TL.pool.length; k++) {
      const row = TL.pool[k];
      if (k >= need) {
        if (row.style.display !== 'none') row.style.display = 'none';
        continue;
      }
      const i = first + k;
      const f = frames[i];
      row.style.display = '';
      row.style.top = i * ROW_H + 'px';
      row.setAttribute('data-frame', String(i));
      row.className = 'trow st-' + f.status + (i === hd ? ' current' : i > hd ? ' after' : '');
      const c = row.children;
      c[0].textContent = String(i);
      c[1].textContent = S.invalid.has(i) ? '✗' : '';
      const nm = nameOf(f.node);
      if (c[3].textContent !== nm) {
        c[3].textContent = nm;
        c[3].title = f.node;
      }
      const cause = String(f.cost.surpriseCause);
      c[4].textContent = cause.toUpperCase();
      c[4].className = 'tag tag-' + cause;
    }
  }

  function tlQueue() {
    if (TL.queued) return;
    TL.queued = true;
    requestAnimationFrame(() => {
      TL.queued = false;
      tlRender();
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Transient animations (§8.5) — forward step or play tick only
  // ---------------------------------------------------------------------------------------------
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

  function flash(ne, src, d) {
    const hue = HUE[src] || HUE.input;
    track(ne, ne.halo.animate([{ opacity: 0.95, transform: 'scale(1)', stroke: hue }, { opacity: 0, transform: 'scale(1.14)', stroke: hue }], { duration: d, easing: 'ease-out' }));
    track(ne, ne.box.animate([{ offset: 0, stroke: hue, strokeWidth: '4px', filter: 'drop-shadow(0 0 8px ' + hue + ')' }], { duration: Math.round(d * 1.4), easing: 'ease-out' }));
    track(ne, ne.name.animate([{ offset: 0, fill: '#fffaf0', opacity: 1 }], { duration: d, easing: 'ease-out' }));
  }

  function selfPulse(ne, d) {
    track(ne, ne.halo.animate([{ opacity: 0.85, transform: 'scale(1)', stroke: VIOLET }, { opacity: 0, transform: 'scale(1.1)', stroke: VIOLET }], { duration: d, easing: 'ease-out' }));
    track(ne, ne.box.animate([{ offset: 0, fill: '#3b3450', stroke: VIOLET }], { duration: Math.round(d * 1.3), easing: 'ease-out' }));
  }

  function ripple(ne, d) {
    track(ne, ne.halo.animate([{ opacity: 0.18, transform: 'scale(0.99)', stroke: GREY }, { opacity: 0, transform: 'scale(1.05)', stroke: GREY }], { duration: d, easing: 'ease-out' }));
  }

  function flare(ne, d) {
    track(ne, ne.halo.animate([{ opacity: 0.95, transform: 'scale(1)', stroke: RED }, { opacity: 0, transform: 'scale(1.16)', stroke: RED }], { duration: d, easing: 'ease-out' }));
    track(ne, ne.box.animate([{ offset: 0, stroke: RED, strokeWidth: '4.5px', fill: '#6a2a24', filter: 'drop-shadow(0 0 12px ' + RED + ')' }], { duration: Math.round(d * 1.5), easing: 'ease-out' }));
  }

  const beads = [];
  let beadLoop = 0;

  function laneFx(e, d) {
    const list = S.edgeEls.get(edgeKey(e));
    if (!list) return;
    const path = list[0].path;
    const dAttr = path.getAttribute('d');
    const atomic = e.facet === '@atomic';
    const lane = sv('path', { class: 'fx-lane ' + (atomic ? 'atomic' : 'named'), d: dAttr });
    gFx.appendChild(lane);
    const a = lane.animate([{ strokeWidth: 2.6, opacity: 1 }, { strokeWidth: 1.2, opacity: 0.55 }], { duration: d, easing: 'ease-out', fill: 'forwards' });
    a.onfinish = () => lane.remove();
    a.oncancel = () => lane.remove();
    if (S.reduced) return;
    let len = 0;
    try {
      len = path.getTotalLength();
    } catch (_) {
      len = 0;
    }
    if (!(len > 0)) return;
    const dash = sv('path', { class: 'fx-dash', d: dAttr, 'stroke-dasharray': '14 ' + Math.ceil(len + 14) });
    gFx.appendChild(dash);
    const da = dash.animate([{ strokeDashoffset: 14 }, { strokeDashoffset: -len }], { duration: d, easing: 'linear', fill: 'forwards' });
    da.onfinish = () => dash.remove();
    da.oncancel = () => dash.remove();
    const bead = sv('circle', { class: 'fx-bead', r: 3.2, cx: -999, cy: -999, opacity: 0 });
    gFx.appendChild(bead);
    beads.push({ el: bead, path, len, t0: performance.now(), d });
    if (!beadLoop) beadLoop = requestAnimationFrame(stepBeads);
  }

  function stepBeads(now) {
    beadLoop = 0;
    for (let k = beads.length - 1; k >= 0; k--) {
      const b = beads[k];
      const t = (now - b.t0) / b.d;
      if (t >= 1 || !b.el.isConnected) {
        b.el.remove();
        beads.splice(k, 1);
        continue;
      }
      const tt = Math.max(0, t);
      const p = b.path.getPointAtLength(tt * b.len);
      b.el.setAttribute('cx', p.x.toFixed(2));
      b.el.setAttribute('cy', p.y.toFixed(2));
      const op = tt < 0.1 ? tt / 0.1 : tt > 0.9 ? (1 - tt) / 0.1 : 1;
      b.el.setAttribute('opacity', op.toFixed(3));
    }
    if (beads.length) beadLoop = requestAnimationFrame(stepBeads);
  }

  function ringFx(id, delay, d) {
    const ne = S.nodeEls.get(id);
    if (!ne) return;
    const r = sv('rect', { class: 'fx-ring', x: ne.x - 6, y: ne.y - 6, width: NODE_W + 12, height: NODE_H + 12, rx: 13, opacity: 0 });
    gFx.appendChild(r);
    const a = r.animate(
      [
        { transform: 'scale(1.22)', opacity: 0 },
        { opacity: 0.95, offset: 0.3 },
        { transform: 'scale(0.97)', opacity: 0 },
      ],
      { duration: S.reduced ? 1 : Math.max(d, 260), delay: S.reduced ? 0 : delay, easing: 'ease-out', fill: 'both' },
    );
    a.onfinish = () => r.remove();
    a.oncancel = () => r.remove();
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
    for (const ne of S.nodeEls.values()) for (const a of ne.anims.splice(0)) a.cancel();
    if (gFx) gFx.textContent = '';
    beads.length = 0;
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
    schedulePlay();
  }

  function togglePlay() {
    if (S.playing) pause();
    else play();
  }

  function schedulePlay() {
    clearTimeout(S.playTimer);
    S.playTimer = setTimeout(playTick, STEP_MS / S.speed);
  }

  function playTick() {
    if (!S.playing) return;
    if (S.head < S.F - 1) stepForward();
    if (S.head >= S.F - 1) pause();
    else schedulePlay();
  }

  function stepForward() {
    if (S.head >= S.F - 1) return;
    S.head++;
    applyHead();
    animateFrame(S.snap.frames[S.head]);
  }

  function stepBack() {
    if (S.head <= -1) return;
    S.head--;
    cancelAllFx();
    applyHead();
  }

  function jump(i) {
    const n = clamp(Math.trunc(num(i)), -1, S.F - 1);
    if (n !== S.head) cancelAllFx();
    S.head = n;
    applyHead();
  }

  function setSpeed(x) {
    S.speed = x;
    if (S.playing) schedulePlay();
    if (S.following) scheduleFollow();
  }

  function zoomBy(factor) {
    if (!S.view) return;
    zoomAt(S.view.x + S.view.w / 2, S.view.y + S.view.h / 2, factor);
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
      case 'i':
      case 'I':
        if (INS.open) closeInspector();
        else if (S.head >= 0) openInspector(S.snap.frames[S.head].node, S.head);
        break;
      case 'Escape':
        if (!$('chain-popover').classList.contains('hidden')) $('chain-popover').classList.add('hidden');
        else closeInspector();
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
  // Pan and zoom (§8.16): only the SVG viewBox changes
  // ---------------------------------------------------------------------------------------------
  function setView(v) {
    S.view = v;
    $('graph-svg').setAttribute('viewBox', v.x + ' ' + v.y + ' ' + v.w + ' ' + v.h);
  }

  function fitView() {
    if (S.fit) setView(Object.assign({}, S.fit));
  }

  function zoomAt(px, py, factor) {
    const v = S.view;
    const k0 = S.fit.w / v.w;
    const k = clamp(k0 * factor, 0.2, 4);
    const r = k0 / k;
    setView({ x: px - (px - v.x) * r, y: py - (py - v.y) * r, w: v.w * r, h: v.h * r });
  }

  function clientToSvg(cx, cy) {
    const svg = $('graph-svg');
    const m = svg.getScreenCTM();
    if (!m) return { x: S.view.x + S.view.w / 2, y: S.view.y + S.view.h / 2 };
    const p = new DOMPoint(cx, cy).matrixTransform(m.inverse());
    return { x: p.x, y: p.y };
  }

  function wirePanZoom() {
    const svg = $('graph-svg');
    svg.addEventListener(
      'wheel',
      (e) => {
        if (!S.view) return;
        e.preventDefault();
        const p = clientToSvg(e.clientX, e.clientY);
        const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? 400 : 1;
        const factor = Math.exp(-e.deltaY * unit * (e.ctrlKey ? 0.01 : 0.0015));
        zoomAt(p.x, p.y, factor);
      },
      { passive: false },
    );
    let drag = null;
    svg.addEventListener('pointerdown', (e) => {
      if (e.button !== 0 || !S.view) return;
      const m = svg.getScreenCTM();
      drag = { id: e.pointerId, sx: e.clientX, sy: e.clientY, v: Object.assign({}, S.view), scale: m ? m.a : 1, panning: false };
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
      setView({ x: drag.v.x - dx / sc, y: drag.v.y - dy / sc, w: drag.v.w, h: drag.v.h });
    });
    const end = (e) => {
      if (!drag || e.pointerId !== drag.id) return;
      if (drag.panning) {
        S.suppressClick = true;
        setTimeout(() => (S.suppressClick = false), 0);
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
    $('fit-btn').addEventListener('click', fitView);
  }

  // ---------------------------------------------------------------------------------------------
  // Inspector (§8.13)
  // ---------------------------------------------------------------------------------------------
  const INS = { open: false, node: null, frame: -1, tab: 'receipt', diff: false, token: 0 };

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
    openInspector(S.snap.frames[i].node, i);
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

  function hashOrLink(hash) {
    if (typeof hash !== 'string') return h('span', null, JSON.stringify(hash));
    const idx = S.pre.byHash.get(hash);
    return idx !== undefined ? jumpLink(hash, idx) : h('span', null, hash);
  }

  function renderInspector() {
    if (!INS.open) return;
    const tok = ++INS.token;
    const body = $('insp-body');
    body.textContent = '';
    body.classList.remove('chain-mode');
    for (const b of document.querySelectorAll('.insp-tabs button')) b.classList.toggle('active', b.getAttribute('data-tab') === INS.tab);
    $('insp-title').textContent = nameOf(INS.node);
    $('insp-title').title = INS.node;
    const f = INS.frame >= 0 ? S.snap.frames[INS.frame] : null;
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
      for (const ref of wake.refs) {
        const line = h('div');
        line.appendChild(hashOrLink(ref));
        refs.appendChild(line);
      }
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
    kv(box, 'prev', r.prev === null ? 'null (first receipt of the node)' : hashOrLink(r.prev));
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

  function fmtTok(v) {
    return typeof v === 'number' ? String(v) : JSON.stringify(v);
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
      for (let k = list.indexOf(f.index) - 1; k >= 0; k--) {
        const pf = S.snap.frames[list[k]];
        if (pf.atomicVersion && pf.atomicVersion !== v) {
          prevIdx = list[k];
          break;
        }
      }
      if (prevIdx < 0) {
        body.appendChild(h('div', 'muted', 'no earlier frame of this node has a different version — nothing to diff'));
        renderFiles(body, view);
      } else {
        const pv = S.snap.frames[prevIdx].atomicVersion;
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
    const frames = S.snap.frames;
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
        const f = frames[i];
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
  // Chain badge (§8.14) and chrome (§8.1)
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
    let t = S.F + ' receipts · ' + snap.nodes.length + ' nodes · ' + snap.edges.length + ' edges';
    if (!snap.hasTopology) t += ' · no saved topology (node-only fallback)';
    const el = $('status-text');
    el.textContent = t;
    el.classList.remove('error');
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
    S.F = snap.frames.length;
    S.pre = newPre(snap);
    extendPre();
    setInvalid();
    cancelAllFx();
    renderGraph();
    S.capText = null;
    $('legend').classList.remove('hidden');
    renderStatus();
    renderBadge();
    tlSetup();
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
    S.snap.frames.push(fr);
    S.F++;
    if (S.layout && !S.layout.info.has(fr.node)) S.relayout = true;
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
        renderGraph();
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
      const snap = checkSnapshot(await DS.state());
      cache.receipt.clear();
      cache.node.clear();
      stopFollow();
      S.snap = snap;
      renderAll();
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
  function wireUI() {
    const mq = window.matchMedia ? window.matchMedia('(prefers-reduced-motion: reduce)') : null;
    S.reduced = !!(mq && mq.matches);
    if (mq && mq.addEventListener) mq.addEventListener('change', () => (S.reduced = mq.matches));

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

    $('timeline').addEventListener('scroll', tlQueue, { passive: true });
    $('timeline').addEventListener('click', (e) => {
      const row = e.target instanceof Element ? e.target.closest('[data-frame]') : null;
      if (!row || !S.snap) return;
      const i = parseInt(row.getAttribute('data-frame'), 10);
      if (!(i >= 0 && i < S.F)) return;
      pause();
      jump(i);
      if (INS.open) openInspector(S.snap.frames[i].node, i);
    });
    window.addEventListener('resize', tlQueue);

    document.addEventListener('keydown', onKey);
    window.addEventListener('hashchange', () => {
      if (!S.snap) return;
      const fr = hashFrame();
      if (fr === null) return;
      pause();
      jump(fr);
    });

    $('insp-close').addEventListener('click', closeInspector);
    for (const b of document.querySelectorAll('.insp-tabs button')) b.addEventListener('click', () => setTab(b.getAttribute('data-tab')));

    $('chain-badge').addEventListener('click', (e) => {
      e.stopPropagation();
      $('chain-popover').classList.toggle('hidden');
    });
    document.addEventListener('click', (e) => {
      const pop = $('chain-popover');
      if (!pop.classList.contains('hidden') && e.target instanceof Node && !pop.contains(e.target)) pop.classList.add('hidden');
    });
    wirePanZoom();
  }

  async function boot() {
    wireUI();
    let snap;
    try {
      snap = checkSnapshot(await DS.state());
    } catch (err) {
      const el = $('status-text');
      el.classList.add('error');
      el.textContent = err && err.stateStatus ? 'error: state ' + err.stateStatus : 'error: ' + (err && err.message ? err.message : String(err));
      return;
    }
    S.snap = snap;
    S.head = -1;
    renderAll();
    applyUrlParams();
    startLive();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', boot);
  else boot();
})();
