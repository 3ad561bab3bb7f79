// reactor-devtools — the SPA's frame store and frame causes (issue 9: paged frames, "why did this
// render"). Loaded before app.js, which is the only user; it exposes one global,
// `ReactorFrames`, with three pieces:
//
//   - `createIndex(edges)`: compact columns for every frame of a large ledger, filled from
//     GET /api/frames?form=index pages (or live frames), and `stub(i)`, a frame object built from
//     them. A stub has every member the graph, timeline, meter and captions read; members only a
//     whole frame knows (`contentHash`, `atomicVersion`, the names of moved facets, `why`) are
//     empty, and `movedFacets` is `['…']` when the frame moved something (`[]` otherwise), so
//     "moved nothing" stays exact.
//   - `createPages(pageSize, maxPages, fetchPage)`: whole frames (with `why`) by pages of
//     `pageSize`, at most `maxPages` kept (least recently used dropped), each page fetched once.
//   - `whyView(why, ctx)`: a frame's cause as DOM (text plus jump links), from the `why` member
//     of GET /api/frames (src/replay/why.rs documents its shape).
//
// No eval, no inline script, no network request of its own.
(function () {
  'use strict';

  const STATUS = ['rendered', 'skipped', 'failed'];
  const SOURCE = ['input', 'self', 'external'];
  const NONE = Object.freeze([]);
  const MOVED = Object.freeze(['…']);

  function edgeKey(e) {
    return e.producer + '→' + e.subscriber + '::' + e.facet;
  }

  /** A typed array with room for `n` elements (doubling), keeping the contents. */
  function room(arr, n) {
    if (arr.length >= n) return arr;
    let cap = Math.max(1024, arr.length * 2);
    while (cap < n) cap *= 2;
    const out = new arr.constructor(cap);
    out.set(arr);
    return out;
  }

  function codeOf(f) {
    const s = Math.max(0, STATUS.indexOf(f.status));
    const w = Math.max(0, SOURCE.indexOf(f.wakeSource));
    const c = Math.max(0, SOURCE.indexOf(f.cost && f.cost.surpriseCause));
    return s + 3 * w + 9 * c + (Array.isArray(f.movedFacets) && f.movedFacets.length ? 27 : 0);
  }

  function createIndex(edges) {
    const edgeAt = new Map();
    edges.forEach((e, k) => {
      const key = edgeKey(e);
      if (!edgeAt.has(key)) edgeAt.set(key, k);
    });
    const x = {
      n: 0,
      names: [],
      nameAt: new Map(),
      node: new Int32Array(0),
      code: new Uint8Array(0),
      fresh: new Float64Array(0),
      reused: new Float64Array(0),
      off: new Int32Array(1), // off[i]..off[i+1]: frame i's lit edges in `lit`
      lit: new Int32Array(0),
    };

    function nameIndex(id) {
      let k = x.nameAt.get(id);
      if (k === undefined) {
        k = x.names.length;
        x.names.push(id);
        x.nameAt.set(id, k);
      }
      return k;
    }

    function reserve(n, e) {
      x.node = room(x.node, n);
      x.code = room(x.code, n);
      x.fresh = room(x.fresh, n);
      x.reused = room(x.reused, n);
      x.off = room(x.off, n + 1);
      x.lit = room(x.lit, e);
    }

    return {
      get n() {
        return x.n;
      },
      /** Appends an index page (`from` must equal the count so far); → frames added. */
      appendPage(p) {
        const count = p && Array.isArray(p.node) ? p.node.length : 0;
        if (!count || p.from !== x.n) return 0;
        if (Array.isArray(p.nodes)) for (const id of p.nodes) nameIndex(String(id));
        let e = x.off[x.n];
        reserve(x.n + count, e + (Array.isArray(p.edges) ? p.edges.length : 0));
        let k = 0;
        for (let j = 0; j < count; j++) {
          const i = x.n + j;
          x.node[i] = p.node[j] | 0;
          x.code[i] = p.code[j] | 0;
          x.fresh[i] = +p.fresh[j] || 0;
          x.reused[i] = +p.reused[j] || 0;
          const lit = p.lit[j] | 0;
          for (let m = 0; m < lit; m++) x.lit[e++] = p.edges[k++] | 0;
          x.off[i + 1] = e;
        }
        x.n += count;
        return count;
      },
      /** Appends one whole frame (live follow). */
      appendFrame(f) {
        const i = x.n;
        const lit = Array.isArray(f.edgesToLight) ? f.edgesToLight : NONE;
        reserve(i + 1, x.off[i] + lit.length);
        x.node[i] = nameIndex(f.node);
        x.code[i] = codeOf(f);
        x.fresh[i] = +(f.cost && f.cost.fresh) || 0;
        x.reused[i] = +(f.cost && f.cost.reused) || 0;
        let e = x.off[i];
        for (const l of lit) {
          const k = edgeAt.get(edgeKey(l));
          if (k !== undefined) x.lit[e++] = k;
        }
        x.off[i + 1] = e;
        x.n = i + 1;
      },
      /** Frame `i` as the columns know it (see the file comment). */
      stub(i) {
        const c = x.code[i];
        const lit = [];
        const woken = [];
        for (let e = x.off[i]; e < x.off[i + 1]; e++) {
          const edge = edges[x.lit[e]];
          if (!edge) continue;
          lit.push(edge);
          if (!woken.includes(edge.subscriber)) woken.push(edge.subscriber);
        }
        return {
          index: i,
          node: x.names[x.node[i]],
          status: STATUS[c % 3],
          wakeSource: SOURCE[((c / 3) | 0) % 3],
          movedFacets: c >= 27 ? MOVED : NONE,
          edgesToLight: lit,
          wokenSubscribers: woken,
          cost: { fresh: x.fresh[i], reused: x.reused[i], surpriseCause: SOURCE[((c / 9) | 0) % 3] },
          contentHash: '',
          atomicVersion: '',
          stub: true,
        };
      },
    };
  }

  function createPages(pageSize, maxPages, fetchPage) {
    const pages = new Map(); // page number → frames (insertion order = recency)
    const pending = new Map();
    const loadedAt = new Map(); // page number → Date.now() when it arrived
    const listeners = [];
    let epoch = 0;

    function touch(p) {
      const v = pages.get(p);
      pages.delete(p);
      pages.set(p, v);
      return v;
    }

    function load(p) {
      if (pending.has(p)) return pending.get(p);
      const ep = epoch;
      const pr = Promise.resolve()
        .then(() => fetchPage(p * pageSize, pageSize))
        .then((frames) => {
          if (ep !== epoch) return null;
          pending.delete(p);
          loadedAt.set(p, Date.now());
          pages.set(p, Array.isArray(frames) ? frames : []);
          while (pages.size > maxPages) pages.delete(pages.keys().next().value);
          for (const fn of listeners) fn(p, pages.get(p));
          return pages.get(p);
        })
        .catch((err) => {
          if (ep === epoch) pending.delete(p);
          throw err;
        });
      pending.set(p, pr);
      return pr;
    }

    return {
      /** The whole frame `i` if its page is here, else null. */
      get(i) {
        const p = Math.floor(i / pageSize);
        const page = pages.get(p);
        const f = page ? page[i - p * pageSize] : undefined;
        return f && f.index === i ? f : null;
      },
      /** → Promise of the whole frame `i` (null past the end). */
      async ensure(i) {
        const hit = this.get(i);
        if (hit) {
          touch(Math.floor(i / pageSize));
          return hit;
        }
        const p = Math.floor(i / pageSize);
        if (pages.has(p)) pages.delete(p); // a short page from before the ledger grew
        await load(p);
        return this.get(i);
      },
      /**
       * Asks for the pages of frames lo..hi (inclusive) in the background. A page that came back
       * short (the ledger has grown since) is asked for again, at most once a second.
       */
      want(lo, hi) {
        const now = Date.now();
        for (let p = Math.floor(lo / pageSize); p <= Math.floor(hi / pageSize); p++) {
          if (pending.has(p)) continue;
          const page = pages.get(p);
          if (page) {
            const need = Math.min(hi, (p + 1) * pageSize - 1);
            const last = page.length ? page[page.length - 1].index : p * pageSize - 1;
            if (last >= need || now - (loadedAt.get(p) || 0) < 1000) continue;
            pages.delete(p);
          }
          load(p).catch(() => {});
        }
      },
      /** Calls fn(pageNumber, frames) for every page that arrives. */
      onLoad(fn) {
        listeners.push(fn);
      },
      clear() {
        epoch++;
        pages.clear();
        pending.clear();
        loadedAt.clear();
      },
    };
  }

  /**
   * A frame's cause as DOM: `ctx` = {name(id) → display name, link(text, frame) → Node,
   * token(s) → short text}. Unknown shapes render as "cause not recorded".
   */
  function whyView(w, ctx) {
    const box = document.createElement('span');
    box.className = 'why';
    const text = (t) => box.appendChild(document.createTextNode(t));
    const frame = (k) => {
      if (typeof k === 'number') {
        text(' (');
        box.appendChild(ctx.link('frame ' + k, k));
        text(')');
      }
    };
    if (!w || typeof w !== 'object' || !Array.isArray(w.causes)) {
      text(w === null ? 'skipped — the memo key did not move' : 'cause not recorded');
      return box;
    }
    const wake = typeof w.wake === 'string' ? w.wake : 'unreadable';
    const inputs = Array.isArray(w.inputs) ? w.inputs : [];
    w.causes.forEach((c, n) => {
      if (n) text('; ');
      if (c === 'first') text('first receipt of this node (' + wake + ' wake)');
      else if (c === 'contract') {
        const m = w.contract && typeof w.contract === 'object' ? w.contract : {};
        text('contract changed (' + ctx.token(m.from) + ' → ' + ctx.token(m.to) + ')');
      } else if (c === 'inputs') {
        text((inputs.length === 1 ? 'input' : 'inputs') + ' moved: ');
        inputs.slice(0, 6).forEach((m, k) => {
          if (k) text(', ');
          const what = typeof m.producer === 'string' ? ctx.name(m.producer) + ' ' + (m.facet || '') : 'slot ' + m.slot;
          const b = document.createElement('b');
          b.textContent = what.trim();
          box.appendChild(b);
          if (m.to === null) text(' (slot removed)');
          else if (m.from === null) text(' (new slot)');
          frame(m.frame);
        });
        if (inputs.length > 6) text(', ' + (inputs.length - 6) + ' more');
      } else if (c === 'retry') {
        text('memo key unchanged; retried after the failed');
        if (typeof w.prior === 'number') {
          text(' ');
          box.appendChild(ctx.link('frame ' + w.prior, w.prior));
        } else text(' receipt');
      } else if (c === 'wake') text('memo key unchanged; ' + wake + ' wake');
      else if (c === 'unknown') text('memo key unreadable');
      else text(String(c));
    });
    const unnamed = inputs.some((m) => typeof m.producer !== 'string') || w.causes.includes('unknown');
    const refs = Array.isArray(w.refs) ? w.refs.filter((k) => typeof k === 'number') : [];
    if (unnamed && refs.length) {
      text('; woken by ');
      refs.forEach((k, n) => {
        if (n) text(', ');
        box.appendChild(ctx.link('frame ' + k, k));
      });
    }
    return box;
  }

  window.ReactorFrames = { createIndex, createPages, whyView, edgeKey };
})();
