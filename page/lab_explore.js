// ---- why? the explorer's shortest counterexample (POST /explore) ----
// Beside each rung of the ladder view and each race's result that the
// explorer can run (GET /explore names them), a "why?" button asks the
// stack's explorer for the shortest schedule of commands that breaks the
// rung's own code, told in the race's language: its clients named as
// the instances (app1, app2...), on the race's lease. It is drawn as
// lanes (a column per client and one for Redis, an arrow per command and
// one per reply) that step forward and back, a sentence per step, the
// step that breaks the lock named in words and marked; the steps are
// also a table. Text goes in through textContent only.
const explorable = fetch('/explore')
  .then(r => r.ok ? r.json() : {locks: []})
  .then(j => j.locks || [])
  .catch(() => []);
let exploring = false;
const why = {rows: [], at: 0, brk: -1, names: [], svg: null};

// whyButton puts the button in el, once the explorer says it can run
// lock: the ladder's row header of lock, or the row of race n (entry,
// whose instances, lease and stock the answer is told in). Each button
// is named for its lock (and its race): a screen reader lists them
// apart.
function whyButton(el, lock, entry, n) {
  explorable.then(locks => {
    if (!locks.includes(lock)) return;
    const b = document.createElement('button');
    b.className = 'why';
    b.dataset.lock = lock;
    b.textContent = 'why?';
    b.setAttribute('aria-label', n ? `why? ${lock}, race ${n}: the schedule that breaks it` : `why? ${lock}: the schedule that breaks it`);
    b.title = `search ${lock}'s own code for the shortest interleaving of commands that breaks it (up to 20 s)`;
    b.disabled = exploring;
    b.addEventListener('click', () => explain(lock, entry));
    el.append(' ', b);
  });
}

// raceTerms is the language of the answer: the instances' names, the
// lease and the stock of entry (a race), or of the ladder's scenario for
// lock and the last race's instances when asked from the ladder.
function raceTerms(lock, entry) {
  const last = races.length ? races[races.length - 1] : null;
  const t = (entry && entry.timeline) || (last && last.timeline) || null;
  const names = t && t.instances && t.instances.length ? t.instances.slice() : ['app1', 'app2', 'app3'];
  let lease = entry && entry.timeline && entry.timeline.lease_ms ? Math.round(entry.timeline.lease_ms) : 0;
  let scenario = entry ? entry.scenario : '';
  if (!scenario && !entry && typeof ladder !== 'undefined' && ladder.plan) {
    const c = ladder.plan.ladder.find(x => x.lock === lock);
    if (c) scenario = c.scenario;
  }
  if (!lease && scenario && typeof ladder !== 'undefined' && ladder.plan) {
    const s = ladder.plan.scenarios.find(x => x.name === scenario);
    if (s && s.lease_ms) lease = s.lease_ms;
  }
  return {names, lease, stock: entry ? entry.stock : 0, scenario, race: entry ? entry.title : ''};
}

// explain asks for lock's shortest counterexample, told in entry's terms
// (a race's, or none); with token, the schedule of that replay token
// instead (one the explorer gave, or a failing lockcheck printed), no
// search.
async function explain(lock, entry, token) {
  if (exploring) return;
  exploring = true;
  const card = $('exploreCard'), st = $('exploreStatus');
  document.querySelectorAll('button.why').forEach(b => b.disabled = true);
  card.hidden = false;
  const terms = raceTerms(lock, entry);
  $('exploreTitle').textContent = `why ${lock}?` + (terms.race ? ` (${terms.race})` : '');
  for (const id of ['exploreDiagram', 'exploreVerdict', 'exploreLanes', 'exploreBreak', 'stepSay', 'exploreToken']) $(id).replaceChildren();
  $('exploreSteps').hidden = true;
  $('exploreToken').hidden = true;
  st.textContent = token ? `replaying the token's schedule on ${lock}'s code…` : `searching ${lock}'s code for the shortest order of events that breaks it (up to 20 s)…`;
  bringIntoView(card);
  try {
    const q = new URLSearchParams({lock});
    if (token) {
      q.set('token', token);
      terms.lease = 0;
      terms.token = true; // it names its own lease
    } else if (terms.lease) q.set('lease_ms', terms.lease);
    const r = await fetch('/explore?' + q, {method: 'POST'});
    const j = await r.json();
    if (!r.ok) {
      st.textContent = `${lock}: ${j.error || r.status}`;
      return;
    }
    drawExplained(j, terms);
  } catch (e) {
    st.textContent = `${lock}: the explorer did not answer (${e})`;
  } finally {
    exploring = false;
    document.querySelectorAll('button.why').forEach(b => b.disabled = false);
    document.body.dataset.explored = lock;
  }
}

// drawExplained draws one answer of POST /explore in the race's terms.
function drawExplained(j, terms) {
  const st = $('exploreStatus'), v = $('exploreVerdict'), table = $('exploreDiagram');
  const name = renamer(j.columns, terms.names);
  const badge = document.createElement('span');
  badge.className = 'badge ' + verdictClass(j.verdict === 'none' ? 'SAFE' : j.verdict);
  badge.textContent = j.verdict;
  v.append(badge, ' ', j.explain || '');
  if (j.verdict === 'none') {
    st.textContent = `${j.lock}: no violation found. Covered: ${name(j.covered)}`;
    return;
  }
  const columns = j.columns.map((c, i) => i < j.columns.length - 1 ? name(c) : c);
  const stock0 = j.rows.length ? j.rows[0].stock.split('/')[0] : '?';
  const on = j.masters ? ` on ${j.masters} masters (quorum ${Math.floor(j.masters / 2) + 1}; mN: master N)` : '';
  st.textContent = `${j.lock}: ${j.verdict} in ${j.steps} steps, ${j.clients} clients named as the ${terms.race ? 'race' : 'stack'}'s instances (${columns.slice(0, -1).join(', ')})${on}, ` +
    `each one request, on a lease of ${j.lease_ms} ms` + (terms.token ? ' (the token\'s)' : !terms.lease ? ' (the explorer\'s own)' : terms.race ? ' (the race\'s)' : ` (the lease of ${terms.scenario}, as in the ladder)`) +
    `, from a stock of ${stock0}` + (terms.stock ? ` (the race's was ${terms.stock}: any stock above the clients' sales breaks the same way)` : '') +
    `; faults it could use: ${j.faults}; it tried ${j.schedules} orders of events (${j.states} distinct moments) in ${(j.elapsed_ms / 1000).toFixed(1)} s. ` +
    `t is virtual milliseconds; @N, an expiry at virtual millisecond N; app1#1, app1's first token.`;

  if (j.token) {
    // The schedule as a replay token: the same steps in a test
    // (lockcheck.Replay) or here again, from this page's address.
    const t = $('exploreToken'), link = `${location.pathname}#why=${encodeURIComponent(j.lock)}:${encodeURIComponent(j.token)}`;
    t.append('Replay token: ', Object.assign(document.createElement('code'), {textContent: j.token}),
      '. The same schedule again: ', Object.assign(document.createElement('a'), {href: link, textContent: 'this page at it'}),
      ', or in a Go test on this code, lockcheck.Replay(t, lock, token).');
    t.hidden = false;
  }

  const brk = breakStep(j.rows, j.verdict, name);
  why.rows = j.rows; why.steps = j.steps || j.rows.filter(r => r.n).length; why.brk = brk.i; why.says = brk.says; why.name = name; why.columns = columns;
  if (brk.i >= 0) {
    const b = $('exploreBreak');
    b.append(Object.assign(document.createElement('b'), {textContent: `What breaks it, step ${j.rows[brk.i].n || '*'}: `}), brk.says + '.');
    b.hidden = false;
  }

  // The table: every step, the text alternative of the lanes.
  const head = table.createTHead().insertRow();
  for (const h of ['#', 't (ms)', ...columns, 'lock after', 'stock/sold']) {
    head.append(Object.assign(document.createElement('th'), {textContent: h}));
  }
  const body = table.createTBody();
  const clients = j.columns.slice(0, -1);
  j.rows.forEach((row, i) => {
    const tr = body.insertRow();
    tr.dataset.n = row.n;
    if (row.n === 0) tr.className = 'probe';
    if (i === brk.i) tr.classList.add('break');
    tr.insertCell().textContent = row.n === 0 ? '*' : String(row.n);
    tr.insertCell().textContent = String(row.t_ms);
    for (const c of clients) {
      const td = tr.insertCell();
      if (row.client !== c) continue;
      td.className = 'cmd';
      td.append(Object.assign(document.createElement('code'), {textContent: name(row.command)}));
      if (row.note) td.append(' ', Object.assign(document.createElement('small'), {textContent: name(row.note)}));
      if (row.command.startsWith('**')) td.classList.add('fault');
      if (row.note === 'sold one') td.classList.add('sold');
    }
    const redis = tr.insertCell();
    redis.textContent = row.client ? (row.reply ? '→ ' + name(row.reply) : '') : `— ${name(row.note)} —`;
    if (!row.client) redis.className = 'tick';
    tr.insertCell().textContent = name(row.lock);
    tr.insertCell().textContent = row.stock;
  });
  $('exploreSteps').hidden = false;
  drawLanes(j, brk);
  showStep(0);
}

// drawLanes draws the steps as lanes in an SVG: a column per client and
// one for Redis, a row per step: the command an arrow to Redis, its
// reply an arrow back; a fault a mark on its client's lane; time passing
// a band across. The step that breaks the lock is drawn red.
function drawLanes(j, brk) {
  const NS = 'http://www.w3.org/2000/svg', svg = $('exploreLanes'), name = why.name;
  // The lanes fit the card where they can (a phone's narrower), and
  // scroll inside it where they cannot.
  const box = svg.closest('.scroll'), fit = box ? box.clientWidth : 700;
  const cols = why.columns, narrow = fit < 500, left = narrow ? 64 : 84, rowH = 46, top = 34;
  const right = Math.max(30, Math.ceil(cols[cols.length - 1].length * 4.5));
  const lane = Math.max(narrow ? 84 : 110, Math.min(170, Math.floor((fit - left - right) / (cols.length - 1))));
  const W = left + lane * (cols.length - 1) + right, H = top + rowH * j.rows.length + 12;
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  svg.setAttribute('width', W); svg.setAttribute('height', H);
  const el = (tag, attrs, text) => {
    const e = document.createElementNS(NS, tag);
    for (const [k, val] of Object.entries(attrs)) e.setAttribute(k, val);
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const defs = el('defs', {});
  for (const [id, color] of [['arr', '#1d2430'], ['arrBad', '#c4320a']]) {
    const m = el('marker', {id, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse'});
    m.append(el('path', {d: 'M0,0 L10,5 L0,10 z', fill: color}));
    defs.append(m);
  }
  svg.append(defs);
  const x = i => left + lane * i;
  cols.forEach((c, i) => {
    svg.append(el('text', {x: x(i), y: 16, 'text-anchor': 'middle', 'font-weight': 700, 'font-size': 13}, c));
    svg.append(el('line', {x1: x(i), y1: 22, x2: x(i), y2: H - 4, stroke: '#c9ced6', 'stroke-width': 2}));
  });
  const redisX = x(cols.length - 1), clients = j.columns.slice(0, -1);
  j.rows.forEach((row, i) => {
    const g = el('g', {class: 'lstep' + (i === brk.i ? ' lbreak' : ''), 'data-i': i});
    const y = top + rowH * i, bad = i === brk.i, color = bad ? '#c4320a' : '#1d2430';
    g.append(el('text', {x: 2, y: y + 18, 'font-size': 10, fill: '#5f6b7a'}, `${row.n || '*'} · ${row.t_ms}ms`));
    if (bad) g.append(el('rect', {x: left - 14, y: y - 2, width: W - left + 10, height: rowH - 4, fill: '#fde8e0', rx: 6}));
    const ci = clients.indexOf(row.client);
    if (ci < 0) {
      g.append(el('rect', {x: left - 10, y: y + 6, width: W - left, height: 22, fill: bad ? '#f8c9b8' : '#eef0f3', rx: 4}));
      g.append(el('text', {x: (left + redisX) / 2, y: y + 21, 'text-anchor': 'middle', 'font-size': 12, 'font-style': 'italic'}, name(row.note)));
    } else if (row.command.startsWith('**')) {
      g.append(el('path', {d: `M${x(ci) - 8},${y + 8} L${x(ci) + 8},${y + 8} L${x(ci)},${y + 22} z`, fill: '#b54708'}));
      g.append(el('text', {x: x(ci) + 12, y: y + 20, 'font-size': 12, fill: '#b54708', 'font-weight': 700}, name(row.command).replace(/\*\*/g, '').trim()));
    } else {
      const x1 = x(ci) + 4, x2 = redisX - 4;
      g.append(el('line', {x1, y1: y + 16, x2, y2: y + 16, stroke: color, 'stroke-width': bad ? 2.5 : 1.5, 'marker-end': `url(#${bad ? 'arrBad' : 'arr'})`}));
      // a command too long for the lanes to its right is pulled left
      const cmd = name(row.command), cw = cmd.length * 7.3;
      g.append(el('text', {x: Math.max(2, Math.min(x1 + 4, W - 2 - cw)), y: y + 12, 'font-size': 12, 'font-family': 'monospace', fill: color}, cmd));
      if (row.reply) {
        g.append(el('line', {x1: x2, y1: y + 30, x2: x1, y2: y + 30, stroke: '#667085', 'stroke-dasharray': '4 3', 'marker-end': 'url(#arr)'}));
        g.append(el('text', {x: x2 - 4, y: y + 27, 'text-anchor': 'end', 'font-size': 11, fill: '#5f6b7a'}, '→ ' + name(row.reply)));
      }
      if (row.note) g.append(el('text', {x: x1 + 4, y: y + 41, 'font-size': 11, fill: row.note === 'sold one' ? '#c4320a' : '#12805c', 'font-weight': 600}, name(row.note)));
    }
    svg.append(g);
  });
  svg.setAttribute('aria-label', `${j.lock}: ${j.verdict} in ${j.steps} steps as lanes, ${cols.join(', ')}` +
    (brk.i >= 0 ? `; step ${j.rows[brk.i].n || '*'} breaks it: ${brk.says}` : '') + '; the table below has every step');
}

// showStep moves the lanes to step i: the steps before it drawn, i
// marked, the ones after faded; its sentence said.
function showStep(i) {
  const n = why.rows.length;
  if (!n) return;
  why.at = Math.max(0, Math.min(n - 1, i));
  document.querySelectorAll('#exploreLanes .lstep').forEach(g => {
    const k = +g.dataset.i;
    g.setAttribute('opacity', k <= why.at ? '1' : '0.18');
    g.classList.toggle('now', k === why.at);
  });
  document.querySelectorAll('#exploreDiagram tbody tr').forEach((tr, k) => tr.classList.toggle('now', k === why.at));
  const row = why.rows[why.at];
  $('stepSay').textContent = (row.n ? `Step ${row.n} of ${why.steps}: ` : `After step ${why.steps}, to show it stays so: `) + sentence(row, why.name) +
    (why.at === why.brk ? ` This is the step that breaks it: ${why.says}.` : '');
  $('stepPrev').disabled = why.at === 0;
  $('stepNext').disabled = why.at === n - 1;
  $('stepBreak').disabled = why.brk < 0;
  const g = document.querySelector(`#exploreLanes .lstep[data-i="${why.at}"]`), box = g && g.closest('.scroll');
  if (g && box) {
    const r = g.getBBox();
    if (r.y < box.scrollTop || r.y + r.height > box.scrollTop + box.clientHeight) box.scrollTop = Math.max(0, r.y - 40);
  }
}
$('stepPrev').addEventListener('click', () => showStep(why.at - 1));
$('stepNext').addEventListener('click', () => showStep(why.at + 1));
$('stepBreak').addEventListener('click', () => showStep(why.brk));

// #why=LOCK:TOKEN in the address replays that token's schedule on LOCK's
// code (the link under a counterexample, or one made by hand from a
// token a failing lockcheck printed).
function whyFromAddress() {
  const m = location.hash.match(/^#why=([a-z0-9-]+):(.+)$/);
  if (m) explorable.then(locks => { if (locks.includes(m[1])) explain(m[1], null, decodeURIComponent(m[2])); });
}
window.addEventListener('hashchange', whyFromAddress);
whyFromAddress();
