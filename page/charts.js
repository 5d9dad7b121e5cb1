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
  g.strokeStyle = '#e4e7ec'; g.fillStyle = '#5f6b7a'; g.lineWidth = 1;
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
    g.save(); g.translate(x + bw / 2, h - 4); g.fillStyle = '#5f6b7a';
    if (!crowded) g.fillText(labelOf(r), -g.measureText(labelOf(r)).width / 2, 0);
    g.restore();
  });
}
const verdictColor = r => r.verdict === 'SAFE' ? '#12805c' : (r.verdict === 'OVERSOLD' || r.verdict === 'LOST UPDATES') ? '#c4320a' : '#b54708';
