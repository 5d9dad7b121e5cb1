// ---- the race card: POST /race, its live charts, its story and the
// timeline it opens on. The races seen so far are here, first: the
// other scripts of the lab use them (common.js has the helpers). ----
const races = [];   // finished: {lock, endpoint, verdict, rps, p99, bad, ok}
let live = [];      // this race's progress: {t, rps, p99}
let lastRace = null; // the last race that finished (the lock hint reads it)
let liveVerdict = ''; // the verdict of the race the live charts show, once it is in

// The timeline of a race (report's timeline.js, loaded before this):
// the one in the timeline card.
const tl = makeTimeline($('timelineCard'), {brief: true});
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
// ---- a race: POST /race, read its Server-Sent Events ----
// raceErr shows a failed race's reason as text, never as markup.
function raceErr(st, text) {
  const span = document.createElement('span');
  span.className = 'err'; span.textContent = text;
  st.replaceChildren(span);
}
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
// tellStory says, in el, what the lock does, its flaw, what the scenario
// did and where to look (result.story: the texts of /strategies and
// docs/ladder.md). Text, never markup.
function tellStory(el, result, t) {
  const st = result.story;
  result = result.raw || result; // a race's entry keeps its result
  if (!st) { el.hidden = true; return; }
  const line = (label, text) => {
    const p = document.createElement('p'), b = document.createElement('b');
    b.textContent = label + ' ';
    p.append(b, text);
    return p;
  };
  const lines = [line(st.lock + ':', st.does + '.'), line('Its flaw:', st.flaw + '.')];
  if (st.did) lines.push(line(`Under ${st.scenario}:`, plainWords(st.did) + '.'));
  if (result.endpoint === 'sale' && result.initial !== undefined) lines.push(line('The counts:', countsSay(result)));
  const stop = stopSay(result, result.planned);
  if (stop) lines.push(line('Stopped:', stop));
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
  const q = {lock, endpoint};
  for (const k of ['n', 'c', 'wait', 'scenario']) if (o[k]) q[k] = o[k];
  let result, total;
  try {
    ({result, total} = await readRace(q, data => {
      live.push({t: data.elapsed_s, rps: data.rps, p99: data.p99_ms});
      st.textContent = `${lock} ${endpoint}${sc}: ${data.done}/${data.total} answered, ${data.ok} ok, ${Math.round(data.rps)} req/s, p99 ${data.p99_ms.toFixed(1)} ms`;
      redrawLive();
    }));
  } catch (e) {
    raceErr(st, `${lock}${sc}: ${e.message}`);
    return null;
  }
  result.planned = total;
  live.push({t: result.duration_ms / 1000, rps: result.rps, p99: result.p99_ms}); redrawLive();
  const bad = endpoint === 'sale' ? result.oversold : result.lost_updates;
  const title = `${lock} on /${endpoint}` + (o.wait ? ` (wait=${o.wait})` : '') + sc;
  showTimeline(result.timeline || null, title, result.verdict);
  tellStory($('raceStory'), result, result.timeline || null);
  liveVerdict = `${lock}: ${result.verdict}`; redrawLive();
  const entry = {raw: result, story: result.story, lock, endpoint, wait: o.wait, scenario: o.scenario, expected: result.expected, title, timeline: result.timeline || null,
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
    `, ${Math.round(result.rps)} req/s, p99 ${result.p99_ms.toFixed(1)} ms` + (stopSay(result, total) ? '. ' + stopSay(result, total) : ''));
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

