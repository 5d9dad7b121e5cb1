// ---- the timeline of a race: who held the lock, when (race.Timeline) ----
// One canvas, a lane per instance and a bar per critical section, drawn
// afresh on every change: no DOM node per section, so the thousands a
// race holds stay responsive. The wheel zooms about the pointer, a drag
// pans, a double click shows the whole race; the buttons jump to the
// overlaps, one after the other.
const TL_WROTE = 1, TL_REFUSED = 2, TL_OVERLAP = 4;   // a section's flags
const TL_LEFT = 64, TL_BAND = 22, TL_AXIS = 22, TL_TRACKS = 3;
// track[i] is section i's row within its lane: sections of one instance
// that overlap each other are stacked, up to TL_TRACKS rows.
const tl = {t: null, title: '', v0: 0, v1: 1, pair: -1, drag: null, track: [], tracks: 1, barH: 16};
const tlLaneH = () => 10 + tl.tracks * (tl.barH + 5) + 4;
const tlLaneY = l => TL_BAND + l * tlLaneH();
const tlBarY = i => tlLaneY(tl.t.sections[i][0]) + 10 + tl.track[i] * (tl.barH + 5);

// showTimeline draws t (a race's timeline; null: none) under title.
function showTimeline(t, title) {
  tl.t = t; tl.title = title || ''; tl.pair = -1;
  tlTracks();
  const n = t ? t.overlaps : 0;
  $('tlOverlaps').textContent = t ? `${n} overlap${n === 1 ? '' : 's'}` : '';
  $('tlOverlaps').className = 'tlcount ' + (n > 0 ? 'bad' : 'ok');
  $('tlFirst').disabled = $('tlNext').disabled = !(t && t.pairs.length);
  $('tlAll').disabled = !t;
  let about = '';
  if (t) {
    about = `${t.sections.length} critical sections` + (t.omitted ? ` (the latest; ${t.omitted} earlier left out)` : '') +
      (t.complete ? '' : ', at least: an instance forgot some (it crashed) or did not answer') +
      (t.refused ? `; ${t.refused} stale write${t.refused === 1 ? '' : 's'} refused by the fence` : '') +
      (t.lease_ms ? `; lease ${t.lease_ms} ms` : '; lease: the instances\' own') +
      (t.faults.length ? `; ${t.faults.length} fault${t.faults.length === 1 ? '' : 's'}` : '');
  }
  $('tlTitle').textContent = title ? title + ': ' : '';
  $('tlAbout').textContent = about;
  $('tlPair').textContent = '';
  tlWhole();
}

// tlTracks stacks each instance's sections that overlap one another.
function tlTracks() {
  const t = tl.t;
  tl.track = []; tl.tracks = 1;
  if (!t) return;
  const free = t.instances.map(() => new Array(TL_TRACKS).fill(-Infinity));   // per lane: each track's last release
  t.sections.forEach((s, i) => {
    const ends = free[s[0]];
    let k = ends.findIndex(e => e <= s[1]);
    if (k < 0) k = ends.indexOf(Math.min(...ends));
    ends[k] = Math.max(ends[k], s[2]);
    tl.track[i] = k;
    tl.tracks = Math.max(tl.tracks, k + 1);
  });
  tl.barH = tl.tracks === 1 ? 16 : 10;
}

// tlExtent is the race's span in microseconds.
function tlExtent() {
  const t = tl.t;
  let lo = 0, hi = Math.max(t.end_us, 1);
  for (const s of t.sections) { lo = Math.min(lo, s[1]); break; }
  for (const f of t.faults) lo = Math.min(lo, f.at_us);
  return [lo, hi];
}
function tlWhole() {
  if (tl.t) { const [lo, hi] = tlExtent(), pad = (hi - lo) * 0.01; tl.v0 = lo - pad; tl.v1 = hi + pad; }
  drawTimeline();
}

// tlPair zooms on the k-th overlap (wrapping round) and says what it was.
function tlPair(k) {
  const t = tl.t;
  if (!t || !t.pairs.length) return;
  tl.pair = ((k % t.pairs.length) + t.pairs.length) % t.pairs.length;
  const [i, j] = t.pairs[tl.pair], a = t.sections[i], b = t.sections[j];
  const from = Math.min(a[1], b[1]), to = Math.max(a[2], b[2]), pad = (to - from) * 0.6 + 300;
  tl.v0 = from - pad; tl.v1 = to + pad;
  const tok = s => s[3] ? ` (token ${s[3]})` : '';
  $('tlPair').textContent = `overlap ${tl.pair + 1} of ${t.pairs.length}` +
    (t.pairs.length < t.overlaps ? ` shown (${t.overlaps} in all)` : '') + `: ${t.instances[a[0]]}${tok(a)} took the lock at ` +
    `${tlMs(a[1])} ms while ${t.instances[b[0]]}${tok(b)} held it (${tlMs(b[1])} to ${tlMs(b[2])} ms); both wrote.`;
  drawTimeline();
}

function tlMs(us) { return (us / 1000).toFixed(Math.abs(us) < 10000 ? 2 : 1); }

// tlFault names a fault shortly: "pause 800ms", "crash", "slow 600ms".
function tlFault(f) {
  if (f.hook) return f.about;
  const q = new URLSearchParams(f.about), kind = q.get('fault'), parts = [];
  if (kind) parts.push(kind + (q.get('pause') ? ' ' + q.get('pause') : ''));
  if (q.get('work')) parts.push('slow ' + q.get('work'));
  return parts.join(', ') || f.about;
}

// tlStep is a round step of about span/n microseconds.
function tlStep(span, n) {
  const raw = span / n, p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

function drawTimeline() {
  const cv = $('timeline'), t = tl.t;
  const lanes = t ? Math.max(t.instances.length, 1) : 1, H = TL_BAND + lanes * tlLaneH() + TL_AXIS, r = window.devicePixelRatio || 1;
  cv.style.height = H + 'px';
  if (cv.height !== Math.round(H * r)) cv.height = Math.round(H * r);   // setup resizes on a new width only
  const {g, w, h} = setup(cv);
  const W = w - TL_LEFT - 8, span = tl.v1 - tl.v0;
  const X = us => TL_LEFT + (us - tl.v0) / span * W;
  const laneY = tlLaneY, LANE = tlLaneH();
  g.fillStyle = '#667085';
  if (!t) { g.fillText('race a lock: its critical sections appear here, a lane per instance', TL_LEFT, TL_BAND + 20); cv.dataset.drawn = 0; return; }

  // lanes and the time axis
  for (let l = 0; l < lanes; l++) {
    g.fillStyle = l % 2 ? '#fafbfc' : '#f3f4f7'; g.fillRect(TL_LEFT, laneY(l), W, LANE);
    g.fillStyle = '#1d2430'; g.fillText(t.instances[l] || '', 4, laneY(l) + LANE / 2 + 4);
  }
  g.fillStyle = '#667085'; g.fillText('faults', 4, 15);
  const step = tlStep(span, Math.max(2, Math.floor(W / 110)));
  g.strokeStyle = '#e4e7ec'; g.lineWidth = 1;
  for (let v = Math.ceil(tl.v0 / step) * step; v <= tl.v1; v += step) {
    const x = X(v);
    g.beginPath(); g.moveTo(x, TL_BAND); g.lineTo(x, h - TL_AXIS); g.stroke();
    g.fillStyle = '#667085';
    const label = (v / 1000).toFixed(Math.max(0, -Math.floor(Math.log10(step / 1000) + 1e-9))) + ' ms';
    g.fillText(label, x - g.measureText(label).width / 2, h - 6);
  }

  g.save();
  g.beginPath(); g.rect(TL_LEFT, 0, W, h); g.clip();
  // the overlaps first, as bands behind both holders' bars
  g.fillStyle = 'rgba(196, 50, 10, 0.16)';
  for (const [i, j] of t.pairs) {
    const a = t.sections[i], b = t.sections[j], to = Math.min(a[2], b[2]);
    if (to < tl.v0 || a[1] > tl.v1) continue;
    const top = laneY(Math.min(a[0], b[0])), bottom = laneY(Math.max(a[0], b[0])) + LANE;
    g.fillRect(X(a[1]), top, Math.max(X(to) - X(a[1]), 1), bottom - top);
  }
  // the sections: blue wrote, grey did not, red overlapped, orange refused
  let drawn = 0;
  const labels = [];
  t.sections.forEach((s, i) => {
    if (s[2] < tl.v0 || s[1] > tl.v1) return;
    drawn++;
    const x0 = X(s[1]), x1 = Math.max(X(s[2]), x0 + 1), y = tlBarY(i), bh = tl.barH;
    const f = s[4];
    if (f & TL_REFUSED) {
      g.fillStyle = '#fff3e8'; g.fillRect(x0, y, x1 - x0, bh);
      g.strokeStyle = '#b54708'; g.lineWidth = 2; g.strokeRect(x0 + 1, y + 1, Math.max(x1 - x0 - 2, 1), bh - 2);
    } else {
      g.fillStyle = f & TL_OVERLAP ? '#c4320a' : f & TL_WROTE ? '#3056d3' : '#98a2b3';
      g.fillRect(x0, y, x1 - x0, bh);
    }
    if (t.lease_ms) {
      // the lease granted: a thin line under the bar, ticked where it ran out inside the section
      const xl = X(s[1] + t.lease_ms * 1000);
      g.fillStyle = '#475467'; g.fillRect(x0, y + bh + 2, Math.max(Math.min(xl, X(tl.v1)) - x0, 1), 2);
      if (s[1] + t.lease_ms * 1000 < s[2]) { g.fillStyle = '#c4320a'; g.fillRect(xl - 1, y - 3, 2, bh + 8); }
    }
    const text = f & TL_REFUSED ? `token ${s[3]}: write refused (stale)` : s[3] ? String(s[3]) : '';
    if (text) labels.push([text, x0, x1, y, f]);
  });
  // the pair in focus, outlined
  if (tl.pair >= 0 && tl.pair < t.pairs.length) {
    g.strokeStyle = '#1d2430'; g.lineWidth = 2;
    for (const i of t.pairs[tl.pair]) {
      const s = t.sections[i], x0 = X(s[1]);
      g.strokeRect(x0 - 2, tlBarY(i) - 2, Math.max(X(s[2]) - x0, 1) + 4, tl.barH + 4);
    }
  }
  // tokens (and refusals) where the bar has room for them
  for (const [text, x0, x1, y, f] of labels) {
    const tw = g.measureText(text).width;
    if (x1 - x0 < tw + 6) continue;
    g.fillStyle = f & TL_REFUSED ? '#b54708' : '#fff';
    g.fillText(text, Math.max(x0, TL_LEFT) + 3, y + tl.barH - 3);
  }
  // the faults: a marker where each struck, on its instance's lane, or in
  // the band above when no instance answered (it crashed); a line under
  // the lane for as long as its request ran, ticked where it answered
  const lastLabel = {};   // by row: where the last label ended
  for (const f of t.faults) {
    if (f.until_us < tl.v0 || f.at_us > tl.v1) continue;
    const x = X(f.at_us), xe = X(f.until_us), y = f.lane >= 0 ? laneY(f.lane) + 1 : 3, ys = f.lane >= 0 ? laneY(f.lane) + LANE - 4 : 17;
    g.fillStyle = 'rgba(181, 71, 8, 0.55)';
    g.fillRect(x, ys, Math.max(xe - x, 1), 3);
    g.fillRect(xe - 1, ys - 5, 2, 8);
    g.fillStyle = '#b54708';
    if (f.at_us >= tl.v0) { g.beginPath(); g.moveTo(x - 6, y); g.lineTo(x + 6, y); g.lineTo(x, y + 9); g.closePath(); g.fill(); }
    // its label where it struck, or at the left edge while it still runs
    const label = f.at_us >= tl.v0 ? tlFault(f) : '◂ ' + tlFault(f) + ', until ' + tlMs(f.until_us) + ' ms';
    const lx = Math.max(x + 8, TL_LEFT + 2), ly = f.lane >= 0 ? y + 9 : 14;
    if (lx > (lastLabel[ly] ?? -1e9)) {
      g.fillText(label, lx, ly);
      lastLabel[ly] = lx + g.measureText(label).width + 6;
    }
  }
  g.restore();
  cv.dataset.drawn = drawn;
}

// tlAt finds what is under the pointer: a section or a fault.
function tlAt(px, py) {
  const t = tl.t;
  if (!t) return '';
  const cv = $('timeline'), W = cv.clientWidth - TL_LEFT - 8, span = tl.v1 - tl.v0;
  const us = tl.v0 + (px - TL_LEFT) / W * span, tol = 3 / W * span;
  for (const f of t.faults) {
    const y = f.lane >= 0 ? tlLaneY(f.lane) + 1 : 3;
    if (Math.abs(us - f.at_us) <= 2 * tol && py >= y - 2 && py <= y + 14)
      return `${tlFault(f)}: ${f.hook ? 'on the stack' : 'an armed request'}, ${tlMs(f.at_us)} to ${tlMs(f.until_us)} ms` +
        (f.hook ? '' : f.code ? `, answered ${f.code}` + (f.lane >= 0 ? ' by ' + t.instances[f.lane] : '') : ', no answer: its instance died');
  }
  const lane = Math.floor((py - TL_BAND) / tlLaneH());
  if (lane < 0 || lane >= t.instances.length) return '';
  let best = null;
  t.sections.forEach((s, i) => {
    const y = tlBarY(i);
    if (s[0] === lane && py >= y - 2 && py <= y + tl.barH + 4 && s[1] - tol <= us && s[2] + tol >= us && (!best || s[2] - s[1] > best[2] - best[1])) best = s;
  });
  if (!best) return '';
  const f = best[4];
  return `${t.instances[lane]}: held ${tlMs(best[1])} to ${tlMs(best[2])} ms (${tlMs(best[2] - best[1])} ms)` +
    (best[3] ? `, token ${best[3]}` : '') +
    (f & TL_REFUSED ? ', its write refused: a newer token had written' : f & TL_WROTE ? ', wrote' : ', wrote nothing (sold out, or failed)') +
    (f & TL_OVERLAP ? '; overlapped another holder that wrote' : '') +
    (t.lease_ms && best[2] - best[1] > t.lease_ms * 1000 ? `; held past its ${t.lease_ms} ms lease` : '');
}

(function () {
  const cv = $('timeline'), tip = $('tlTip');
  const local = e => { const r = cv.getBoundingClientRect(); return [e.clientX - r.left, e.clientY - r.top]; };
  cv.addEventListener('wheel', e => {
    if (!tl.t) return;
    e.preventDefault();
    const [px] = local(e), W = cv.clientWidth - TL_LEFT - 8, span = tl.v1 - tl.v0;
    const at = tl.v0 + Math.min(Math.max(px - TL_LEFT, 0), W) / W * span;
    const k = e.deltaY > 0 ? 1.25 : 0.8, next = Math.max(span * k, 20);
    tl.v0 = at - (at - tl.v0) * next / span; tl.v1 = tl.v0 + next;
    drawTimeline();
  }, {passive: false});
  cv.addEventListener('mousedown', e => { tl.drag = {x: local(e)[0], v0: tl.v0, v1: tl.v1}; });
  window.addEventListener('mouseup', () => { tl.drag = null; });
  cv.addEventListener('mousemove', e => {
    const [px, py] = local(e);
    if (tl.drag && tl.t) {
      const W = cv.clientWidth - TL_LEFT - 8, d = (px - tl.drag.x) / W * (tl.drag.v1 - tl.drag.v0);
      tl.v0 = tl.drag.v0 - d; tl.v1 = tl.drag.v1 - d;
      drawTimeline();
      return;
    }
    const text = tlAt(px, py);
    tip.textContent = text;
    tip.style.display = text ? 'block' : 'none';
    tip.style.left = Math.min(px + 12, cv.clientWidth - 320) + 'px';
    tip.style.top = (py + 14) + 'px';
  });
  cv.addEventListener('mouseleave', () => { tip.style.display = 'none'; });
  cv.addEventListener('dblclick', tlWhole);
  $('tlFirst').addEventListener('click', () => tlPair(0));
  $('tlNext').addEventListener('click', () => tlPair(tl.pair + 1));
  $('tlAll').addEventListener('click', () => { tl.pair = -1; $('tlPair').textContent = ''; tlWhole(); });
  window.addEventListener('resize', drawTimeline);
  showTimeline(null, '');
})();
