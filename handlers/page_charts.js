// ---- charts: plain canvas, no library (the lab runs offline); setup is
// the timeline's ----
// nice is the top of an axis of four round steps above max.
function nice(max) {
  if (!(max > 0)) return 4;
  const step = max / 4, p = Math.pow(10, Math.floor(Math.log10(step))), m = step / p;
  return 4 * (m <= 1 ? 1 : m <= 2 ? 2 : m <= 2.5 ? 2.5 : m <= 5 ? 5 : 10) * p;
}
function axes(g, w, h, top, left, xLabel) {
  const L = 48, B = 24, T = 8;
  g.strokeStyle = '#e4e7ec'; g.fillStyle = '#667085'; g.lineWidth = 1;
  for (let i = 0; i <= 4; i++) {
    const y = T + (h - T - B) * i / 4;
    g.beginPath(); g.moveTo(L, y); g.lineTo(w - 8, y); g.stroke();
    const v = top * (1 - i / 4);
    g.fillText(v >= 1000 ? (v / 1000).toFixed(v % 1000 ? 1 : 0) + 'k' : +v.toFixed(1), 4, y + 4);
  }
  if (xLabel) g.fillText(xLabel, w - 8 - g.measureText(xLabel).width, h - 6);
  return {L, B, T, W: w - 8 - L, H: h - T - B};
}
function drawLine(cv, pts, color) {
  const {g, w, h} = setup(cv);
  const xMax = Math.max(1, ...pts.map(p => p[0])), top = nice(Math.max(...pts.map(p => p[1]), 0) * 1.1);
  const a = axes(g, w, h, top, 0, 'seconds: ' + xMax.toFixed(1));
  if (!pts.length) return;
  g.strokeStyle = color; g.lineWidth = 2; g.beginPath();
  pts.forEach(([x, y], i) => {
    const px = a.L + a.W * x / xMax, py = a.T + a.H * (1 - y / top);
    i ? g.lineTo(px, py) : g.moveTo(px, py);
  });
  g.stroke();
}
function drawBars(cv, items, key, colorOf) {
  const {g, w, h} = setup(cv);
  const top = nice(Math.max(...items.map(r => r[key]), 0) * 1.1);
  const a = axes(g, w, h, top);
  const bw = Math.min(48, a.W / Math.max(items.length, 1) * 0.7);
  // Crowded (the ladder's races, a phone): where a label or a value does
  // not fit its bar's slot, none is drawn; the table beside and the
  // chart's text alternative carry them.
  const slot = a.W / Math.max(items.length, 1) - 2;
  const labelOf = r => r.lock + (r.wait ? ' ' + r.wait : '') + (r.endpoint === 'testLock' ? '*' : '');
  const crowded = items.some(r => g.measureText(labelOf(r)).width > slot || g.measureText(String(Math.round(r[key]))).width > slot);
  items.forEach((r, i) => {
    const x = a.L + a.W * (i + 0.5) / items.length - bw / 2, bh = a.H * r[key] / top;
    g.fillStyle = colorOf(r); g.fillRect(x, a.T + a.H - bh, bw, bh);
    g.fillStyle = '#1d2430';
    const v = String(Math.round(r[key]));
    if (!crowded) g.fillText(v, x + bw / 2 - g.measureText(v).width / 2, a.T + a.H - bh - 3);
    g.save(); g.translate(x + bw / 2, h - 4); g.fillStyle = '#667085';
    if (!crowded) g.fillText(labelOf(r), -g.measureText(labelOf(r)).width / 2, 0);
    g.restore();
  });
}
const verdictColor = r => r.verdict === 'SAFE' ? '#12805c' : (r.verdict === 'OVERSOLD' || r.verdict === 'LOST UPDATES') ? '#c4320a' : '#b54708';

function redrawLive() {
  drawLine($('liveRps'), live.map(p => [p.t, p.rps]), '#3056d3');
  drawLine($('liveP99'), live.map(p => [p.t, p.p99]), '#b54708');
  const last = live[live.length - 1];
  const of = liveVerdict ? ` (${liveVerdict})` : '';
  $('liveRps').setAttribute('aria-label', last ? `throughput of this race${of}: ${Math.round(last.rps)} req/s at ${last.t.toFixed(1)} s, ${live.length} points` : 'throughput of this race: no race run yet, 0 points');
  $('liveP99').setAttribute('aria-label', last ? `latency p99 of this race${of}: ${last.p99.toFixed(1)} ms at ${last.t.toFixed(1)} s, ${live.length} points` : 'latency p99 of this race: no race run yet, 0 points');
}
function redrawCompare() {
  drawBars($('cmpRps'), races, 'rps', () => '#3056d3');
  drawBars($('cmpP99'), races, 'p99', () => '#b54708');
  drawBars($('cmpBad'), races, 'bad', verdictColor);
  // Each chart's text alternative: a race each, its figure (and verdict).
  const each = (f) => races.length ? races.map((r, i) => `${i + 1} ${r.lock}${r.scenario ? ' under ' + r.scenario : ''} ${f(r)}`).join('; ') : '0 races yet';
  $('cmpRps').setAttribute('aria-label', 'throughput of each race: ' + each(r => Math.round(r.rps) + ' req/s'));
  $('cmpP99').setAttribute('aria-label', 'latency p99 of each race: ' + each(r => r.p99.toFixed(1) + ' ms'));
  $('cmpBad').setAttribute('aria-label', 'oversold or lost updates of each race: ' + each(r => `${r.verdict}, ${r.bad} ${r.endpoint === 'testLock' ? 'lost' : 'oversold'}`));
  // The cells are text, never markup: what a server answered stays text.
  const tb = $('results').tBodies[0];
  tb.replaceChildren();
  races.forEach((r, i) => {
    const tr = tb.insertRow();
    tr.title = 'show this race\'s timeline';
    if (r.timeline === tl.t) { tr.className = 'shown'; tr.setAttribute('aria-current', 'true'); }
    const show = () => { showTimeline(r.timeline, r.title, r.verdict); redrawCompare(); };
    tr.addEventListener('click', e => { if (!e.target.closest('button')) show(); });
    const cls = r.verdict === 'SAFE' ? 'SAFE' : r.verdict === 'OVERSOLD' ? 'OVERSOLD' : r.verdict === 'LOST UPDATES' ? 'LOST' : 'OTHER';
    const cell = (text, tag, cls) => {
      const td = tr.insertCell(), el = tag ? document.createElement(tag) : td;
      if (tag) td.append(el);
      if (cls) el.className = cls;
      el.textContent = text;
      return el;
    };
    // The lock is the row's button: Tab reaches it, Enter or Space shows
    // the race's timeline.
    const b = cell(r.lock, 'button', 'link');
    b.setAttribute('aria-label', `${r.lock}: show race ${i + 1}'s timeline`);
    b.addEventListener('click', () => { show(); bringIntoView($('timelineCard')); });
    cell(r.endpoint); cell(r.wait || 'its own'); cell(r.scenario || '-');
    cell(r.verdict + (r.expected ? (r.verdict === r.expected ? ' ✓' : ' ✗') : ''), 'span', 'badge ' + cls);
    for (const v of [r.ok, r.oversold, r.lost, Math.round(r.rps), r.p99.toFixed(1)]) cell(v, null, 'num');
    const why = tr.insertCell();
    if (typeof whyButton === 'function') whyButton(why, r.lock, r, i + 1);
  });
}

