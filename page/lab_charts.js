// ---- the lab's charts: this race's, live, and every race's (charts.js
// draws them) ----
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
    // the verdict beside the lock: on a phone both show before the table scrolls
    cell(r.verdict + (r.expected ? (r.verdict === r.expected ? ' ✓' : ' ✗') : ''), 'span', 'badge ' + cls);
    cell(r.endpoint); cell(r.wait || 'its own'); cell(r.scenario || '-');
    for (const v of [r.ok, r.oversold, r.lost, Math.round(r.rps), r.p99.toFixed(1)]) cell(v, null, 'num');
    const why = tr.insertCell();
    if (typeof whyButton === 'function') whyButton(why, r.lock, r, i + 1);
  });
}

