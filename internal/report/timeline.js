// ---- the timeline of a race: who held the lock, when (race.Timeline) ----
// One canvas, a lane per instance and a bar per critical section, drawn
// afresh on every change: no DOM node per section, so the thousands a
// race holds stay responsive. The wheel or a pinch zooms about the
// pointer, a drag pans, a double click shows the whole race; on the
// focused canvas + and - zoom, the arrows pan and 0 shows the whole race;
// the buttons jump to the overlaps, one after the other. The page draws one timeline, an HTML
// report one per race it shows: makeTimeline(root) is one of them. What
// a race names (instances, faults) is drawn, or set as text, never as
// markup.
const TL_WROTE = 1, TL_REFUSED = 2, TL_OVERLAP = 4, TL_CUT = 8;   // a section's flags (TL_CUT: its instance died in it)
const TL_LEFT = 64, TL_BAND = 22, TL_AXIS = 22, TL_TRACKS = 3;

// setup sizes a canvas to its box at the screen's resolution, clears it,
// and returns its context and size in CSS pixels.
function setup(cv) {
  const r = window.devicePixelRatio || 1, w = cv.clientWidth || cv.width, h = cv.clientHeight || cv.height;
  if (cv.width !== Math.round(w * r)) { cv.width = Math.round(w * r); cv.height = Math.round(h * r); }
  const g = cv.getContext('2d');
  g.setTransform(r, 0, 0, r, 0, 0);
  g.clearRect(0, 0, w, h);
  g.font = '12px system-ui, sans-serif';
  return {g, w, h};
}

function tlMs(us) { return (us / 1000).toFixed(Math.abs(us) < 10000 ? 2 : 1); }

// tlFailed says a verdict is a failure: the lock did not do its job.
const tlFailed = v => !!v && v !== 'SAFE' && v !== 'NOT RUN';

// tlTTL says what was left of a stuck lock's lease when the race ended.
function tlTTL(st) {
  if (!st.read) return 'TTL not read';
  if (!st.held) return 'gone by the end';
  return st.ttl_ms < 0 ? 'no TTL: held for good' : `TTL ${st.ttl_ms} ms left`;
}

// tlStopped says that a race stopped early, when, and why.
function tlStopped(st) {
  return `stopped early at ${tlMs(st.at_us)} ms, after ${st.sent} of the ${st.planned} requests planned` + (st.reason ? `: ${st.reason}` : '');
}

// tlFault names a fault shortly: "pause 800ms", "crash", "slow 600ms".
function tlFault(f) {
  if (f.hook) return f.about;
  const q = new URLSearchParams(f.about), kind = q.get('fault'), parts = [];
  if (kind) parts.push(kind + (q.get('pause') ? ' ' + q.get('pause') : ''));
  if (q.get('work')) parts.push('slow ' + q.get('work'));
  return parts.join(', ') || f.about;
}

// tlFit is text cut to at most w pixels wide, an ellipsis where cut.
function tlFit(g, text, w) {
  if (g.measureText(text).width <= w) return text;
  while (text && g.measureText(text + '…').width > w) text = text.slice(0, -1);
  return text + '…';
}

// tlStep is a round step of about span/n microseconds.
function tlStep(span, n) {
  const raw = span / n, p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

// makeTimeline draws timelines in root's elements (report's
// timeline.html, "tlview"): the canvas (.tl-canvas), the tip under the
// pointer (.tl-tip), the lines around it (.tl-title, .tl-about,
// .tl-overlaps, .tl-pair) and the buttons (.tl-first, .tl-next,
// .tl-all). It returns the view: v.show(t, title) draws t (a
// race.Timeline; null: none), v.showPair(k) zooms on the k-th overlap,
// v.t is the timeline shown. The canvas's data-drawn counts the sections
// in view.
// opts.brief: a story beside the timeline says why a race stopped and
// where its stuck lock is (the page's "Look for"): the line above the
// canvas leaves them out, so that the canvas stays in view on a phone.
function makeTimeline(root, opts = {}) {
  const el = name => root.querySelector('.tl-' + name);
  const cv = el('canvas'), tip = el('tip');
  // track[i] is section i's row within its lane: sections of one instance
  // that overlap each other are stacked, up to TL_TRACKS rows.
  const v = {t: null, title: '', v0: 0, v1: 1, pair: -1, drag: null, track: [], tracks: 1, barH: 16};
  // a lane: room above its bars for a fault's marker and label, then
  // its tracks of bars, each with its lease's line under it
  const laneH = () => 14 + v.tracks * (v.barH + 5) + 4 + (v.t && v.t.stuck && v.t.stuck.lane >= 0 ? 16 : 0);
  const laneY = l => TL_BAND + l * laneH();
  // a stuck lock whose holder no lane shows (it crashed before its
  // section began, unanswered) gets a row of its own under the lanes
  const lockRow = () => v.t && v.t.stuck && v.t.stuck.lane < 0 ? 22 : 0;
  const barY = i => laneY(v.t.sections[i][0]) + 14 + v.track[i] * (v.barH + 5);
  const viewW = () => cv.clientWidth - TL_LEFT - 8;

  v.show = (t, title) => {
    v.t = t; v.title = title || ''; v.pair = -1;
    tracks();
    const n = t ? t.overlaps : 0, failed = !!t && (n > 0 || tlFailed(t.verdict));
    // The badge's colour follows the verdict: a failing one is never green.
    el('overlaps').textContent = !t ? '' : t.stuck ? 'stuck lock' : t.verdict === 'DEADLOCK' ? 'deadlock' : `${n} overlap${n === 1 ? '' : 's'}`;
    el('overlaps').classList.toggle('bad', failed);
    el('overlaps').classList.toggle('ok', !!t && !failed && (t.verdict === 'SAFE' || !t.verdict));
    el('overlaps').classList.toggle('warn', !!t && !failed && !!t.verdict && t.verdict !== 'SAFE');
    el('first').disabled = el('next').disabled = !(t && t.pairs.length);
    el('all').disabled = !t;
    let about = '';
    if (t) {
      about = `${t.sections.length} critical sections` + (t.omitted ? ` (the latest; ${t.omitted} earlier left out)` : '') +
        (t.complete ? '' : ', at least: an instance forgot some or did not answer') +
        (t.interrupted ? `; ${t.interrupted} cut short by a crash (drawn to the restart)` : '') +
        (t.stuck && !opts.brief ? `; the lock ${t.stuck.key || ''} stuck from ${tlMs(t.stuck.from_us)} ms, ${tlTTL(t.stuck)}` : '') +
        ((t.gave_up || []).length ? `; ${t.gave_up.length} waiter${t.gave_up.length === 1 ? '' : 's'} gave up (503, ✕)` : '') +
        (t.refused ? `; ${t.refused} stale write${t.refused === 1 ? '' : 's'} refused by the fence` : '') +
        '; ' + (t.lease || (t.lease_ms ? `lease ${t.lease_ms} ms` : 'lease: the instances\' own')) +
        (t.faults.length ? `; ${t.faults.length} fault${t.faults.length === 1 ? '' : 's'}` : '') +
        (t.stopped ? `; ${opts.brief ? tlStopped({...t.stopped, reason: ''}) : tlStopped(t.stopped)}` : '');
    }
    el('title').textContent = title ? title + ': ' : '';
    el('about').textContent = about;
    el('pair').textContent = '';
    v.whole();
  };

  // tracks stacks each instance's sections that overlap one another.
  function tracks() {
    const t = v.t;
    v.track = []; v.tracks = 1;
    if (!t) return;
    const free = t.instances.map(() => new Array(TL_TRACKS).fill(-Infinity));   // per lane: each track's last release
    t.sections.forEach((s, i) => {
      const ends = free[s[0]];
      let k = ends.findIndex(e => e <= s[1]);
      if (k < 0) k = ends.indexOf(Math.min(...ends));
      ends[k] = Math.max(ends[k], s[2]);
      v.track[i] = k;
      v.tracks = Math.max(v.tracks, k + 1);
    });
    v.barH = v.tracks === 1 ? 16 : 10;
  }

  // extent is the race's span in microseconds.
  function extent() {
    const t = v.t;
    let lo = 0, hi = Math.max(t.end_us, 1);
    for (const s of t.sections) { lo = Math.min(lo, s[1]); break; }
    for (const f of t.faults) lo = Math.min(lo, f.at_us);
    if (t.stopped) hi = Math.max(hi, t.stopped.at_us);
    return [lo, hi];
  }
  v.whole = () => {
    if (v.t) { const [lo, hi] = extent(), pad = (hi - lo) * 0.01; v.v0 = lo - pad; v.v1 = hi + pad; }
    draw();
  };

  // showPair zooms on the k-th overlap (wrapping round) and says what it was.
  v.showPair = k => {
    const t = v.t;
    if (!t || !t.pairs.length) return;
    v.pair = ((k % t.pairs.length) + t.pairs.length) % t.pairs.length;
    const [i, j] = t.pairs[v.pair], a = t.sections[i], b = t.sections[j];
    const from = Math.min(a[1], b[1]), to = Math.max(a[2], b[2]), pad = (to - from) * 0.6 + 300;
    v.v0 = from - pad; v.v1 = to + pad;
    // The two requests are named by the order they took the lock in (the
    // sections' numbers): two of one instance would read "app2 took the
    // lock while app2 held it" by instance alone.
    const tok = s => s[3] ? ` (token ${s[3]})` : '', req = k => `request ${(t.omitted || 0) + k + 1}`;
    const same = a[0] === b[0], on = s => `on ${t.instances[s[0]]}`;
    el('pair').textContent = `overlap ${v.pair + 1} of ${t.pairs.length}` +
      (t.pairs.length < t.overlaps ? ` shown (${t.overlaps} in all)` : '') + `: ${req(i)} ${on(a)}${tok(a)} took the lock at ` +
      `${tlMs(a[1])} ms while ${req(j)}, ${same ? 'also ' : ''}${on(b)}${tok(b)}, held it (${tlMs(b[1])} to ${tlMs(b[2])} ms); ` +
      `both wrote (requests numbered in the order they took the lock).`;
    draw();
  };

  // showEvidence zooms on what the verdict rests on and says it: the first
  // overlap, the stuck lock, the first stale write refused, the first
  // section a crash cut; false when there is none.
  v.showEvidence = () => {
    const t = v.t;
    if (!t) return false;
    if (t.pairs.length) { v.showPair(0); return true; }
    const zoom = (from, to) => { const pad = (to - from) * 0.4 + 300; v.v0 = from - pad; v.v1 = to + pad; v.pair = -1; draw(); };
    if (t.stuck) {
      const st = t.stuck, end = Math.max(t.end_us, st.from_us + 1), pad = (end - st.from_us) * 0.04;
      v.v0 = st.from_us - pad; v.v1 = end + pad; v.pair = -1; draw();
      el('pair').textContent = (st.section < 0
        ? `the stuck lock: ${t.instances[st.lane] || 'an instance'} took ${st.key || 'the lock'} and crashed at ${tlMs(st.from_us)} ms, before its section began (its request got no answer); `
        : `the stuck lock: ${t.instances[st.lane] || 'an instance'} took ${st.key} at ${tlMs(st.from_us)} ms and died holding it; `) +
        `nobody could take it to the end of the race (${tlTTL(st)})` + ((t.gave_up || []).length ? `, and ${t.gave_up.length} waiters gave up (✕).` : '.');
      return true;
    }
    const i = t.sections.findIndex(s => s[4] & TL_REFUSED);
    if (i >= 0) {
      const s = t.sections[i];
      zoom(s[1], s[2]);
      el('pair').textContent = `the fence at work: ${t.instances[s[0]]} held the lock with token ${s[3]} from ${tlMs(s[1])} ms, but a newer token had written: its write was refused.`;
      return true;
    }
    const c = t.sections.findIndex(s => s[4] & TL_CUT);
    if (c >= 0) {
      const s = t.sections[c];
      zoom(s[1], s[2]);
      el('pair').textContent = `${t.instances[s[0]]} died inside this section (from ${tlMs(s[1])} ms); it is drawn to the instance's restart.`;
      return true;
    }
    return false;
  };

  // put writes text at x, y (its baseline) and keeps its box in v.texts
  // (what a test checks for overlaps), of kind ('fault': a fault's
  // label): the part inside the plot, when
  // W (the plot's width) says it is drawn there, clipped.
  function put(g, text, x, y, W, kind) {
    if (!text) return;
    const m = g.measureText(text);
    let x0 = x - m.actualBoundingBoxLeft, x1 = x + m.actualBoundingBoxRight;
    if (W) { x0 = Math.max(x0, TL_LEFT); x1 = Math.min(x1, TL_LEFT + W); }
    g.fillText(text, x, y);
    if (x1 > x0) v.texts.push({text, kind: kind || '', x0, x1, y0: y - m.actualBoundingBoxAscent, y1: y + m.actualBoundingBoxDescent});
  }

  // faultLabels names the faults drawn (shown: {f, n, x, y} in time
  // order), each beside its marker, where it overlaps no other label nor
  // marker of its row, nor a box of keep: to the marker's right, else its left; where its
  // name does not fit, its number (#3) and the line under the canvas
  // names it; where not even that fits, the line counts it. On a phone
  // a crash scenario's faults come a few pixels apart: without this their
  // names were drawn over one another.
  function faultLabels(g, shown, W, keep) {
    const rows = {}, note = [];
    let unnamed = 0;
    const box = (text, x, y) => { const w = g.measureText(text).width; return {x0: x, x1: x + w, y0: y - 10, y1: y + 3}; };
    const clash = (a, b) => a.x0 < b.x1 + 2 && b.x0 < a.x1 + 2 && a.y0 < b.y1 && b.y0 < a.y1;
    // every marker first, and the boxes to keep clear (keep: the
    // "stopped" label): a label goes over none
    for (const s of shown) {
      const row = rows[s.y] || (rows[s.y] = [...keep]);
      if (s.f.at_us >= v.v0) row.push({x0: s.x - 6, x1: s.x + 6, y0: s.y, y1: s.y + 9});
    }
    for (const s of shown) {
      const row = rows[s.y], ly = s.y + (s.lane >= 0 ? 9 : 11), before = s.f.at_us < v.v0;
      const name = before ? '◂ ' + tlFault(s.f) + ', until ' + tlMs(s.f.until_us) + ' ms' : tlFault(s.f), num = '#' + (s.n + 1);
      const at = text => before ? [TL_LEFT + 2] : [s.x + 8, s.x - 8 - g.measureText(text).width];
      let placed = null;
      for (const text of [name, num]) {
        for (const x of at(text)) {
          const b = box(text, x, ly);
          if (b.x0 < TL_LEFT + 1 || b.x1 > TL_LEFT + W - 1 || row.some(o => clash(o, b))) continue;
          placed = {text, x, b};
          break;
        }
        if (placed) break;
      }
      if (!placed) { unnamed++; continue; }
      row.push(placed.b);
      // on the lane's colour, so that a waiter's ✕ under it does not cross it
      g.fillStyle = s.lane < 0 ? '#ffffff' : s.lane % 2 ? '#fafbfc' : '#f3f4f7';
      g.fillRect(placed.b.x0 - 1, placed.b.y0, placed.b.x1 - placed.b.x0 + 2, placed.b.y1 - placed.b.y0);
      g.fillStyle = '#b54708';
      put(g, placed.text, placed.x, ly, W, 'fault');
      if (placed.text === num) note.push(`${num} ${tlFault(s.f)}${s.lane >= 0 ? ' on ' + v.t.instances[s.lane] : ', no answer'} at ${tlMs(s.f.at_us)} ms`);
    }
    const line = el('faults');
    if (line) line.textContent = note.concat(unnamed ? [`${unnamed} more fault${unnamed === 1 ? '' : 's'} too close to name here: zoom in, or point at a marker`] : []).join('; ');
  }

  function draw() {
    const t = v.t;
    const lanes = t ? Math.max(t.instances.length, 1) : 1, H = TL_BAND + lanes * laneH() + lockRow() + TL_AXIS, r = window.devicePixelRatio || 1;
    cv.style.height = H + 'px';
    if (cv.height !== Math.round(H * r)) cv.height = Math.round(H * r);   // setup resizes on a new width only
    const {g, w, h} = setup(cv);
    const W = w - TL_LEFT - 8, span = v.v1 - v.v0;
    const X = us => TL_LEFT + (us - v.v0) / span * W;
    const LANE = laneH();
    g.fillStyle = '#667085';
    v.texts = [];
    if (!t && el('faults')) el('faults').textContent = '';
    if (!t) { g.fillText('race a lock: its critical sections appear here, a lane per instance', TL_LEFT, TL_BAND + 20); cv.dataset.drawn = 0; return; }

    // lanes and the time axis
    for (let l = 0; l < lanes; l++) {
      g.fillStyle = l % 2 ? '#fafbfc' : '#f3f4f7'; g.fillRect(TL_LEFT, laneY(l), W, LANE);
      g.fillStyle = '#1d2430'; put(g, tlFit(g, t.instances[l] || '', TL_LEFT - 8), 4, laneY(l) + LANE / 2 + 4);
    }
    g.fillStyle = '#667085'; put(g, 'faults', 4, 15);
    if (lockRow()) { g.fillStyle = '#1d2430'; put(g, 'the lock', 4, laneY(lanes) + 15); }
    const step = tlStep(span, Math.max(2, Math.floor(W / 110)));
    g.strokeStyle = '#e4e7ec'; g.lineWidth = 1;
    let axisEnd = -Infinity;
    for (let x0 = Math.ceil(v.v0 / step) * step; x0 <= v.v1; x0 += step) {
      const x = X(x0);
      g.beginPath(); g.moveTo(x, TL_BAND); g.lineTo(x, h - TL_AXIS); g.stroke();
      g.fillStyle = '#667085';
      const label = (x0 / 1000).toFixed(Math.max(0, -Math.floor(Math.log10(step / 1000) + 1e-9))) + ' ms';
      // within the canvas, and clear of the label before it
      const lw = g.measureText(label).width, lx = Math.min(Math.max(x - lw / 2, 2), w - lw - 2);
      if (lx > axisEnd) { put(g, label, lx, h - 6); axisEnd = lx + lw + 6; }
    }

    g.save();
    g.beginPath(); g.rect(TL_LEFT, 0, W, h); g.clip();
    // the overlaps first, as bands behind both holders' bars
    g.fillStyle = 'rgba(196, 50, 10, 0.16)';
    for (const [i, j] of t.pairs) {
      const a = t.sections[i], b = t.sections[j], to = Math.min(a[2], b[2]);
      if (to < v.v0 || a[1] > v.v1) continue;
      const top = laneY(Math.min(a[0], b[0])), bottom = laneY(Math.max(a[0], b[0])) + LANE;
      g.fillRect(X(a[1]), top, Math.max(X(to) - X(a[1]), 3), bottom - top);
    }
    // the sections: blue wrote, grey did not, red overlapped, orange
    // refused; the overlapped and the refused last, at least 3 pixels
    // wide, so that thousands of others drawn at a pixel each hide none
    let drawn = 0;
    const labels = [], marked = [];
    const bar = (s, i) => {
      const f = s[4], wide = f & (TL_OVERLAP | TL_REFUSED | TL_CUT) ? 3 : 1;
      const x0 = X(s[1]), x1 = Math.max(X(s[2]), x0 + wide), y = barY(i), bh = v.barH;
      if (f & TL_REFUSED) {
        g.fillStyle = '#fff3e8'; g.fillRect(x0, y, x1 - x0, bh);
        g.strokeStyle = '#b54708'; g.lineWidth = 2; g.strokeRect(x0 + 1, y + 1, Math.max(x1 - x0 - 2, 1), bh - 2);
      } else if (f & TL_CUT) {
        // cut by a crash: hatched, a ✕ where its instance came back
        g.fillStyle = '#e4e7ec'; g.fillRect(x0, y, x1 - x0, bh);
        g.strokeStyle = '#475467'; g.lineWidth = 1;
        g.save(); g.beginPath(); g.rect(x0, y, x1 - x0, bh); g.clip();
        for (let hx = x0 - bh; hx < x1; hx += 6) { g.beginPath(); g.moveTo(hx, y + bh); g.lineTo(hx + bh, y); g.stroke(); }
        g.restore();
        g.strokeRect(x0 + .5, y + .5, Math.max(x1 - x0 - 1, 1), bh - 1);
        // (once where sections cut by one crash all end at its restart)
        const kx = x1 - 4, ky = y + bh - 3;
        if (!v.texts.some(o => o.text === '✕' && Math.abs(o.x0 - kx) < 8 && o.y1 > ky - bh && o.y0 < ky + 2)) { g.fillStyle = '#1d2430'; put(g, '✕', kx, ky, W); }
      } else {
        g.fillStyle = f & TL_OVERLAP ? '#c4320a' : f & TL_WROTE ? '#3056d3' : '#98a2b3';
        g.fillRect(x0, y, x1 - x0, bh);
      }
      if (t.lease_ms) {
        // the lease granted: a thin line under the bar, ticked where it ran out inside the section
        const xl = X(s[1] + t.lease_ms * 1000);
        g.fillStyle = '#475467'; g.fillRect(x0, y + bh + 2, Math.max(Math.min(xl, x1, X(v.v1)) - x0, 1), 2);
        if (s[1] + t.lease_ms * 1000 < s[2]) {
          // the lease ran out while held: red from then to the release
          g.fillStyle = '#f04438'; g.fillRect(xl, y + bh + 1, Math.max(x1 - xl, 1), 4);
          g.fillRect(xl - 1, y - 3, 2, bh + 8);
        }
      }
      const text = f & TL_REFUSED ? `token ${s[3]}: write refused (stale)` : s[3] ? String(s[3]) : '';
      if (text) labels.push([text, x0, x1, y, f]);
    };
    t.sections.forEach((s, i) => {
      if (s[2] < v.v0 || s[1] > v.v1) return;
      drawn++;
      if (s[4] & (TL_OVERLAP | TL_REFUSED | TL_CUT)) marked.push(i); else bar(s, i);
    });
    for (const i of marked) bar(t.sections[i], i);
    // the pair in focus, outlined
    if (v.pair >= 0 && v.pair < t.pairs.length) {
      g.strokeStyle = '#1d2430'; g.lineWidth = 2;
      for (const i of t.pairs[v.pair]) {
        const s = t.sections[i], x0 = X(s[1]);
        g.strokeRect(x0 - 2, barY(i) - 2, Math.max(X(s[2]) - x0, 1) + 4, v.barH + 4);
      }
    }
    // tokens (and refusals) where the bar has room for them
    for (const [text, x0, x1, y, f] of labels) {
      const tw = g.measureText(text).width;
      if (x1 - Math.max(x0, TL_LEFT) < tw + 6 + (f & TL_CUT ? 12 : 0)) continue;   // beside a cut bar's ✕
      g.fillStyle = f & TL_REFUSED ? '#b54708' : '#fff';
      put(g, text, Math.max(x0, TL_LEFT) + 3, y + v.barH - 3, W);
    }
    // the stuck lock: a dark red strip at the bottom of its holder's lane,
    // from the dead holder's acquisition to the end of the race
    if (t.stuck) {
      const st = t.stuck, y = st.lane >= 0 ? laneY(st.lane) + LANE - 18 : laneY(lanes) + 5, x0 = X(st.from_us), x1 = X(Math.max(t.end_us, st.from_us));
      g.fillStyle = '#7a271a'; g.fillRect(x0, y, Math.max(x1 - x0, 3), 12);
      g.fillStyle = '#fff';
      const label = `stuck: ${st.key || 'the lock'}, ${tlTTL(st)}`, lx = Math.max(x0, TL_LEFT) + 4;
      put(g, tlFit(g, label, Math.max(Math.min(x1, TL_LEFT + W) - lx - 4, 0)), lx, y + 10, W);
    }
    // the waiters that gave up: a ✕ where each was answered 503
    g.strokeStyle = '#b54708'; g.lineWidth = 1.5;
    for (const [l, , ret] of (t.gave_up || [])) {
      if (ret < v.v0 || ret > v.v1) continue;
      const x = X(ret), y = l >= 0 ? laneY(l) + 8 : 8;
      g.beginPath(); g.moveTo(x - 3, y - 3); g.lineTo(x + 3, y + 3); g.moveTo(x + 3, y - 3); g.lineTo(x - 3, y + 3); g.stroke();
    }
    // the faults: a marker where each struck, on its instance's lane, or in
    // the band above when no instance answered (it crashed); a line under
    // the lane for as long as its request ran, ticked where it answered
    const shown = [];
    t.faults.forEach((f, n) => {
      if (f.until_us < v.v0 || f.at_us > v.v1) return;
      // (in the band, under the labels' row: its tick no taller than the line)
      const x = X(f.at_us), xe = X(f.until_us), y = f.lane >= 0 ? laneY(f.lane) + 1 : 3, ys = f.lane >= 0 ? laneY(f.lane) + LANE - 4 : 18;
      g.fillStyle = 'rgba(181, 71, 8, 0.55)';
      g.fillRect(x, ys, Math.max(xe - x, 1), 3);
      if (f.lane >= 0) g.fillRect(xe - 1, ys - 5, 2, 8); else g.fillRect(xe - 1, ys, 2, 4);
      g.fillStyle = '#b54708';
      if (f.at_us >= v.v0) { g.beginPath(); g.moveTo(x - 6, y); g.lineTo(x + 6, y); g.lineTo(x, y + 9); g.closePath(); g.fill(); }
      shown.push({f, n, x, y, lane: f.lane});
    });
    // where the race stopped early: a dashed line across the lanes, its
    // label kept clear of the faults' labels (placed around it)
    let stop = null;
    if (t.stopped && t.stopped.at_us >= v.v0 && t.stopped.at_us <= v.v1) {
      const x = X(t.stopped.at_us), label = 'stopped', lw = g.measureText(label).width;
      const lx = x - lw - 4 > TL_LEFT ? x - lw - 4 : x + 4;
      stop = {x, label, lx, box: {x0: lx, x1: lx + lw, y0: 5, y1: 18}};
    }
    faultLabels(g, shown, W, stop ? [stop.box] : []);
    if (stop) {
      g.strokeStyle = '#1d2430'; g.lineWidth = 1.5; g.setLineDash([4, 3]);
      g.beginPath(); g.moveTo(stop.x, 4); g.lineTo(stop.x, h - TL_AXIS); g.stroke(); g.setLineDash([]);
      g.fillStyle = '#1d2430';
      put(g, stop.label, stop.lx, 15, W);
    }
    g.restore();
    g.restore();
    cv.dataset.drawn = drawn;
  }
  v.draw = draw;

  // at finds what is under the pointer: a section or a fault.
  function at(px, py) {
    const t = v.t;
    if (!t) return '';
    const W = viewW(), span = v.v1 - v.v0;
    const us = v.v0 + (px - TL_LEFT) / W * span, tol = 3 / W * span;
    for (const f of t.faults) {
      const y = f.lane >= 0 ? laneY(f.lane) + 1 : 3;
      if (Math.abs(us - f.at_us) <= 2 * tol && py >= y - 2 && py <= y + 14)
        return `${tlFault(f)}: ${f.hook ? 'on the stack' : 'an armed request'}, ${tlMs(f.at_us)} to ${tlMs(f.until_us)} ms` +
          (f.hook ? '' : f.code ? `, answered ${f.code}` + (f.lane >= 0 ? ' by ' + t.instances[f.lane] : '') : ', no answer: its instance died');
    }
    if (t.stopped && Math.abs(us - t.stopped.at_us) <= 2 * tol) return tlStopped(t.stopped);
    const lane = Math.floor((py - TL_BAND) / laneH());
    if (t.stuck && t.stuck.lane < 0 && lane >= t.instances.length && us >= t.stuck.from_us)
      return `the stuck lock ${t.stuck.key || ''}: taken by a request whose instance crashed at ${tlMs(t.stuck.from_us)} ms, before its section began; ${tlTTL(t.stuck)} when the race ended`;
    if (lane < 0 || lane >= t.instances.length) return '';
    if (t.stuck && t.stuck.lane === lane && us >= t.stuck.from_us && py >= laneY(lane) + laneH() - 20)
      return `the stuck lock ${t.stuck.key}: taken at ${tlMs(t.stuck.from_us)} ms by ${t.instances[lane]}, which died holding it; ${tlTTL(t.stuck)} when the race ended`;
    let best = null;
    t.sections.forEach((s, i) => {
      const y = barY(i);
      if (s[0] === lane && py >= y - 2 && py <= y + v.barH + 4 && s[1] - tol <= us && s[2] + tol >= us && (!best || s[2] - s[1] > best[2] - best[1])) best = s;
    });
    if (!best) return '';
    const f = best[4];
    return `${t.instances[lane]}: held ${tlMs(best[1])} to ${tlMs(best[2])} ms (${tlMs(best[2] - best[1])} ms)` +
      (best[3] ? `, token ${best[3]}` : '') +
      (f & TL_CUT ? ', then its instance died inside it (drawn to its restart)' : f & TL_REFUSED ? ', its write refused: a newer token had written' : f & TL_WROTE ? ', wrote' : ', wrote nothing (sold out, or failed)') +
      (f & TL_OVERLAP ? '; overlapped another holder that wrote' : '') +
      (t.lease_ms && best[2] - best[1] > t.lease_ms * 1000 ? `; held past its ${t.lease_ms} ms lease` : '');
  }

  const local = e => { const r = cv.getBoundingClientRect(); return [e.clientX - r.left, e.clientY - r.top]; };
  // zoom scales the view by k about the time under x (pixels; null: the middle)
  const zoom = (k, px) => {
    if (!v.t) return;
    const W = viewW(), span = v.v1 - v.v0;
    const x = v.v0 + (px == null ? W / 2 : Math.min(Math.max(px - TL_LEFT, 0), W)) / W * span;
    const next = Math.max(span * k, 20);
    v.v0 = x - (x - v.v0) * next / span; v.v1 = v.v0 + next;
    draw();
  };
  const pan = frac => { if (!v.t) return; const d = (v.v1 - v.v0) * frac; v.v0 += d; v.v1 += d; draw(); };
  cv.addEventListener('wheel', e => {
    if (!v.t) return;
    e.preventDefault();
    zoom(e.deltaY > 0 ? 1.25 : 0.8, local(e)[0]);
  }, {passive: false});
  // the keyboard, on the focused canvas: + and - zoom, the arrows pan,
  // 0 (or Home) shows the whole race
  cv.addEventListener('keydown', e => {
    if (!v.t || e.altKey || e.ctrlKey || e.metaKey) return;
    const act = {'+': () => zoom(0.8), '=': () => zoom(0.8), '-': () => zoom(1.25), '_': () => zoom(1.25),
      ArrowLeft: () => pan(-0.2), ArrowRight: () => pan(0.2), '0': v.whole, Home: v.whole}[e.key];
    if (!act) return;
    e.preventDefault();
    act();
  });
  // a drag pans, with a mouse, a pen or a finger; two fingers pinch to zoom
  const pointers = new Map();
  cv.addEventListener('pointerdown', e => {
    pointers.set(e.pointerId, local(e));
    if (cv.setPointerCapture) try { cv.setPointerCapture(e.pointerId); } catch { /* already gone */ }
    v.drag = pointers.size === 1 ? {x: local(e)[0], v0: v.v0, v1: v.v1} : null;
    v.pinch = pointers.size === 2 ? {d: spread(), v0: v.v0, v1: v.v1} : null;
  });
  const spread = () => { const [a, b] = [...pointers.values()]; return Math.max(Math.abs(a[0] - b[0]), 10); };
  const lift = e => { pointers.delete(e.pointerId); v.drag = null; v.pinch = null; };
  cv.addEventListener('pointerup', lift);
  cv.addEventListener('pointercancel', lift);
  cv.addEventListener('pointermove', e => {
    const [px, py] = local(e);
    if (pointers.has(e.pointerId)) pointers.set(e.pointerId, [px, py]);
    if (v.pinch && v.t && pointers.size === 2) {
      const span = (v.pinch.v1 - v.pinch.v0) * v.pinch.d / spread(), mid = (v.pinch.v0 + v.pinch.v1) / 2;
      v.v0 = mid - Math.max(span, 20) / 2; v.v1 = mid + Math.max(span, 20) / 2;
      draw();
      return;
    }
    if (v.drag && v.t) {
      const d = (px - v.drag.x) / viewW() * (v.drag.v1 - v.drag.v0);
      v.v0 = v.drag.v0 - d; v.v1 = v.drag.v1 - d;
      draw();
      return;
    }
    const text = at(px, py);
    tip.textContent = text;
    tip.style.display = text ? 'block' : 'none';
    tip.style.left = Math.min(px + 12, cv.clientWidth - 320) + 'px';
    tip.style.top = (py + 14) + 'px';
  });
  cv.addEventListener('pointerleave', () => { tip.style.display = 'none'; });
  cv.addEventListener('dblclick', v.whole);
  el('first').addEventListener('click', () => v.showPair(0));
  el('next').addEventListener('click', () => v.showPair(v.pair + 1));
  el('all').addEventListener('click', () => { v.pair = -1; el('pair').textContent = ''; v.whole(); });
  window.addEventListener('resize', draw);
  v.show(null, '');
  return v;
}
