// ---- the race card: POST /race, its live charts, its story and the
// timeline it opens on. The page's helpers ($, bringIntoView) and the
// races seen so far are here, first: the other scripts use them. ----
const $ = id => document.getElementById(id);
// bringIntoView brings a card that a press opened into view: smoothly, unless
// the reader asked their system for less motion.
const bringIntoView = el => el.scrollIntoView({block: 'start',
  behavior: matchMedia('(prefers-reduced-motion: reduce)').matches ? 'auto' : 'smooth'});
const races = [];   // finished: {lock, endpoint, verdict, rps, p99, bad, ok}
let live = [];      // this race's progress: {t, rps, p99}
let lastRace = null; // the last race that finished (the lock hint reads it)
let liveVerdict = ''; // the verdict of the race the live charts show, once it is in

// The timeline of a race (report's timeline.js, loaded before this):
// the one in the timeline card.
const tl = makeTimeline($('timelineCard'));
function showTimeline(t, title, verdict) {
  tl.show(t, title);
  tl.showEvidence(); // zoomed on what the verdict rests on
  // The canvas's text alternative: what the drawing counts.
  const cv = $('timelineCard').querySelector('canvas');
  cv.setAttribute('role', 'img');
  cv.setAttribute('aria-label', !t ? 'timeline: no race shown, 0 sections' :
    `timeline of ${title}${verdict ? ', ' + verdict : ''}: ${t.sections.length} critical sections on ${t.instances.length} instances, ` +
    `${t.overlaps} overlaps, ${t.refused} stale writes refused, ${(t.faults || []).length} faults; ` +
    `the buttons above step through the overlaps`);
}
showTimeline(null, '');
// announce says s to a screen reader once (the live region), as a race
// ends: its verdict and counts.
function announce(s) { $('announce').textContent = s; }

// ---- a race: POST /race, read its Server-Sent Events ----
// raceErr shows a failed race's reason as text, never as markup.
function raceErr(st, text) {
  const span = document.createElement('span');
  span.className = 'err'; span.textContent = text;
  st.replaceChildren(span);
}
// verdictClass is a verdict's badge class.
const verdictClass = v => v === 'SAFE' ? 'SAFE' : v === 'OVERSOLD' ? 'OVERSOLD' : v === 'LOST UPDATES' ? 'LOST' : 'OTHER';

// race runs one race (o: n, c, wait, scenario; ladder: a race of the
// ladder view, kept out of the comparison) and returns its result, or
// null when it failed or was refused (the status line says why).
async function race(lock, endpoint, o) {
  try {
    // predict, then run: a scenario's race asks the learner first
    if (o.scenario && typeof predictFirst === 'function') await predictFirst(lock, o.scenario, endpoint, o.ladder ? $('ladderCard') : $('raceCard'));
    return await raceOnce(lock, endpoint, o);
  } catch (e) { // the stream broke, say
    raceErr($('raceStatus'), `${lock}${o.scenario ? ' under ' + o.scenario : ''}: ${e}`);
    return null;
  }
}
// lookFor says where the verdict's evidence is drawn on the timeline (the
// timeline is zoomed there: showEvidence).
function lookFor(t, r) {
  if (!t) return '';
  const who = l => t.instances[l] || 'an instance';
  if (t.pairs.length) return `two holders wrote at once (${t.overlaps} overlap${t.overlaps === 1 ? '' : 's'}): the first is zoomed on the timeline, red bars over a pink band.`;
  if (t.stuck) return `the stuck lock: the dark red strip on ${who(t.stuck.lane)}'s lane, from its acquisition at ${tlMs(t.stuck.from_us)} ms to the end of the race (${tlTTL(t.stuck)}); each ✕ is a waiter that gave up.`;
  if (t.refused) return `the refused stale write (orange outline): ${t.refused} time${t.refused === 1 ? '' : 's'} a holder whose lease had lapsed tried to write, and the fence turned it away.`;
  const lapsed = t.lease_ms ? t.sections.filter(s => s[2] - s[1] > t.lease_ms * 1000).length : 0;
  const cut = t.interrupted ? `${t.interrupted} section${t.interrupted === 1 ? '' : 's'} cut by a crash (hatched, ✕ at the restart)` : '';
  // Sold beyond the stock with no overlap read back (a section whose
  // instance died under it leaves no answer to draw): the counters tell
  // the damage, and the crashes come second, never in its place.
  if (r.oversold > 0) return `no two sections read back overlapped: the counters tell the damage (${r.oversold} sold beyond the stock)` + (cut ? `; also ${cut}.` : '.');
  if (cut) return `${cut}: the next holder had to wait for the dead one's lock to lapse.`;
  if (tlFailed(r.verdict)) return `no two sections read back overlapped: the counters tell the damage.`;
  return lapsed ? `${lapsed} lease${lapsed === 1 ? '' : 's'} ran out while held (red under the bar), yet no two holders wrote at once.` : 'no two sections overlap: one holder at a time.';
}

// tellStory says, in el, what the lock does, its flaw, what the scenario
// did and where to look (result.story: the texts of /strategies and
// docs/ladder.md). Text, never markup.
function tellStory(el, result, t) {
  const st = result.story;
  if (!st) { el.hidden = true; return; }
  const line = (label, text) => {
    const p = document.createElement('p'), b = document.createElement('b');
    b.textContent = label + ' ';
    p.append(b, text);
    return p;
  };
  const lines = [line(st.lock + ':', st.does + '.'), line('Its flaw:', st.flaw + '.')];
  if (st.did) lines.push(line(`Under ${st.scenario}:`, st.did + '.'));
  const look = lookFor(t, result);
  if (look) lines.push(line('Look for', look));
  el.replaceChildren(...lines);
  el.classList.toggle('bad', tlFailed(result.verdict));
  el.hidden = false;
}

async function raceOnce(lock, endpoint, o) {
  live = []; liveVerdict = ''; redrawLive();
  const st = $('raceStatus'), sc = o.scenario ? ` under ${o.scenario}` : '';
  st.textContent = `${lock} ${endpoint}${sc}: starting...`;
  const q = new URLSearchParams({lock, endpoint});
  for (const k of ['n', 'c', 'wait', 'scenario']) if (o[k]) q.set(k, o[k]);
  const r = await fetch('/race?' + q, {method: 'POST'});
  if (!r.ok) {
    let msg = r.status + '';
    try { msg += ': ' + (await r.json()).error; } catch (e) {}
    raceErr(st, `${lock}${sc}: ${msg}`);
    return null;
  }
  const rd = r.body.getReader(), dec = new TextDecoder();
  let buf = '', result = null;
  for (;;) {
    const {value, done} = await rd.read();
    if (done) break;
    buf += dec.decode(value, {stream: true});
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i); buf = buf.slice(i + 2);
      const ev = (block.match(/^event: (.*)$/m) || [])[1], data = JSON.parse((block.match(/^data: (.*)$/m) || [])[1] || '{}');
      if (ev === 'progress') {
        live.push({t: data.elapsed_s, rps: data.rps, p99: data.p99_ms});
        st.textContent = `${lock} ${endpoint}${sc}: ${data.done}/${data.total} answered, ${data.ok} ok, ${Math.round(data.rps)} req/s, p99 ${data.p99_ms.toFixed(1)} ms`;
        redrawLive();
      } else if (ev === 'result') {
        result = data;
      } else if (ev === 'failed') {
        raceErr(st, `${lock}${sc}: ${data.error}`);
        return null;
      }
    }
  }
  if (!result) { raceErr(st, `${lock}${sc}: the race ended without a result`); return null; }
  live.push({t: result.duration_ms / 1000, rps: result.rps, p99: result.p99_ms}); redrawLive();
  const bad = endpoint === 'sale' ? result.oversold : result.lost_updates;
  const title = `${lock} on /${endpoint}` + (o.wait ? ` (wait=${o.wait})` : '') + sc;
  showTimeline(result.timeline || null, title, result.verdict);
  tellStory($('raceStory'), result, result.timeline || null);
  liveVerdict = `${lock}: ${result.verdict}`; redrawLive();
  const entry = {story: result.story, lock, endpoint, wait: o.wait, scenario: o.scenario, expected: result.expected, title, timeline: result.timeline || null,
                 verdict: result.verdict, rps: result.rps, stock: result.initial, p99: result.p99_ms, ok: result.ok,
                 oversold: endpoint === 'sale' ? result.oversold : '-', lost: endpoint === 'testLock' ? result.lost_updates : '-', bad: Math.max(bad, 0)};
  // The status line is text, never markup: the lock and the verdict too.
  const code = document.createElement('code'), badge = document.createElement('span');
  code.textContent = lock;
  badge.className = 'badge ' + verdictClass(result.verdict);
  badge.dataset.lock = lock;
  badge.textContent = result.verdict;
  const mark = !result.expected ? '' : result.verdict === result.expected ? ' ✓ as the ladder says' : ` ✗ the ladder says ${result.expected}`;
  st.replaceChildren(code, ` ${endpoint}${sc}: `, badge, `${mark} ${result.ok} ok of ${result.requests}, ` +
    (endpoint === 'sale' ? `oversold ${result.oversold}` : `lost updates ${result.lost_updates}`) +
    `, ${Math.round(result.rps)} req/s, p99 ${result.p99_ms.toFixed(1)} ms`);
  announce(`${lock} on /${endpoint}${sc}: ${result.verdict}${mark}; ${result.ok} ok of ${result.requests} requests, ` +
    (endpoint === 'sale' ? `oversold ${Math.max(result.oversold, 0)}` : `lost updates ${Math.max(result.lost_updates, 0)}`));
  lastRace = entry;
  if (typeof predictResult === 'function') predictResult(entry);
  if (typeof ladderResult === 'function') ladderResult(entry);
  races.push(entry); redrawCompare();
  return entry;
}
async function raceSelected() {
  const locks = [...document.querySelectorAll('input[name=lock]:checked')].map(x => x.value);
  const endpoint = $('endpoint').value, n = $('n').value, c = $('c').value, wait = $('wait').value, scenario = $('scenario').value;
  if (!locks.length) { $('raceStatus').textContent = 'pick a lock first'; return; }
  $('raceBtn').disabled = true;
  try {
    for (const l of locks) await race(l, endpoint, {n, c, wait: scenario ? '' : wait, scenario});
  } finally {
    $('raceBtn').disabled = false;
    document.body.dataset.races = races.length;
    refresh();
  }
}

