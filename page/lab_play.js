// ---- break it yourself: the learner plays the scheduler (POST /play) ----
// A level is a rung the explorer runs: its own code, two or three clients
// against a Redis that answers each command when the learner says. Each
// move is one request carrying every move so far; the server replays them
// and answers the state: nothing is kept per visitor, so the moves live in
// the address (#play=LOCK:MOVE,MOVE...) and a reload, a restarted stack or
// a link sent as homework gives the same game. Solved levels are kept in
// the browser. Text goes in through textContent only.
const play = {levels: [], lock: '', moves: [], state: null, busy: false, hinted: ''};
const PHASES = {obtain: 'taking the lock', section: 'selling, with the lock', release: 'giving the lock back', done: 'done'};
const SOLVED_KEY = 'lockladder.solved';

function solvedLevels() {
  try { return JSON.parse(localStorage.getItem(SOLVED_KEY) || '{}'); } catch { return {}; }
}

function markSolved(lock, n) {
  const s = solvedLevels();
  if (!s[lock] || n < s[lock]) s[lock] = n;
  try { localStorage.setItem(SOLVED_KEY, JSON.stringify(s)); } catch { /* private mode: not kept */ }
}

async function loadLevels() {
  try {
    const r = await fetch('/play');
    if (!r.ok) return;
    play.levels = (await r.json()).levels || [];
  } catch { return; }
  $('playCard').hidden = false;
  drawLevels();
  const m = location.hash.match(/^#play=([a-z0-9-]+):?(.*)$/);
  if (m && play.levels.some(l => l.lock === m[1])) {
    startLevel(m[1], m[2] ? decodeURIComponent(m[2]).split(',') : []);
  }
}

function drawLevels() {
  const list = $('playLevels'), solved = solvedLevels();
  list.replaceChildren();
  play.levels.forEach((l, i) => {
    const b = document.createElement('button');
    b.type = 'button';
    b.className = 'level' + (l.lock === play.lock ? ' current' : '');
    b.setAttribute('aria-pressed', String(l.lock === play.lock));
    const done = solved[l.lock] ? ` ✓ ${solved[l.lock]} moves` : '';
    // its name: the visible words first (label in name), then the rest
    b.append(`${i + 1}. ${l.lock}${l.safe ? ' (try to break this)' : ''}${done}`,
      Object.assign(document.createElement('span'), {className: 'sr', textContent: `: level ${i + 1}, break ${l.lock}${l.safe ? ', a lock that should hold' : ''}`}));
    b.dataset.lock = l.lock;
    b.addEventListener('click', () => startLevel(l.lock, [], true));
    list.append(b);
  });
}

function startLevel(lock, moves, pressed) {
  play.lock = lock;
  play.moves = moves;
  drawLevels();
  const l = play.levels.find(x => x.lock === lock);
  $('playBrief').textContent = l ? sourceNamed(l.brief) : '';
  $('playGoal').textContent = l ? 'Goal: ' + l.goal + '.' : '';
  $('playReplay').textContent = '';
  move(null, {focus: pressed ? 'first' : ''});
}

// move plays m (null: none, just show the game so far; 'undo'; 'hint').
// The focus stays in the game: on the hinted move, else the first move,
// else the button pressed (opts.keep), never the page's body.
async function move(m, opts = {}) {
  if (play.busy) return;
  if (opts.hint) $('playStatus').textContent = 'Looking for the shortest way from here: the first hint of a level may take a few seconds…';
  const moves = m === 'undo' ? play.moves.slice(0, -1) : m ? [...play.moves, m] : play.moves;
  play.busy = true;
  setPlayButtons(true);
  try {
    const r = await fetch('/play', {method: 'POST', headers: {'Content-Type': 'application/json'},
      body: JSON.stringify({lock: play.lock, moves, hint: !!opts.hint, replay: !!opts.replay})});
    const j = await r.json();
    if (!r.ok) {
      $('playStatus').textContent = j.error || `${r.status}`;
      return;
    }
    play.moves = moves;
    play.state = j;
    history.replaceState(null, '', `#play=${play.lock}:${encodeURIComponent(moves.join(','))}`);
    drawGame(j, opts);
  } catch (e) {
    $('playStatus').textContent = `the stack did not answer (${e})`;
  } finally {
    play.busy = false;
    setPlayButtons(false);
    const hinted = $('playMoves').querySelector('button.hinted'), first = hinted || $('playMoves').querySelector('button');
    if ((hinted || opts.focus) && first) first.focus();
    else if (opts.keep && !opts.keep.disabled) opts.keep.focus();
    else if (opts.focus || opts.keep) (first || $('playRestart')).focus();
  }
}

function setPlayButtons(disabled) {
  document.querySelectorAll('#playCard button').forEach(b => b.disabled = disabled);
  if (!disabled) {
    $('playUndo').disabled = play.moves.length === 0;
    $('playRestart').disabled = play.moves.length === 0;
    $('playReplayBtn').disabled = !(play.state && play.state.verdict);
    $('playHint').disabled = !!(play.state && play.state.verdict);
  }
}

function drawGame(j, opts) {
  play.hinted = '';
  const st = $('playStatus');
  const n = j.moves.length;
  if (j.verdict) {
    const shortest = j.shortest ? `; the shortest known is ${j.shortest}` : '';
    st.textContent = `Broken in ${n} moves${shortest}. ${j.explain}`;
    markSolved(j.lock, n);
    drawLevels();
  } else {
    // a hint names the move by its button's words, and lights the button
    const hint = opts.hint && j.hint ? j.next.find(o => o.move === j.hint) : null;
    play.hinted = hint ? hint.move : '';
    st.textContent = `${n} moves. ${sourceNamed(j.explain)}` + (opts.hint ? (hint ? ' ' + (j.hint_text || `Hint: press "${hint.label}".${j.hint_why ? ' ' + j.hint_why : ''}`) : ` ${j.hint_note || 'No hint from here: undo a move or two.'}`) : '');
  }
  if (opts.replay && j.replay) {
    $('playReplay').textContent = j.replay === 'reproduced'
      ? 'On a real redis-server, with the rung\'s real clients on real time: it happened there too.'
      : 'On a real redis-server it did not happen: the schedule depends on something the real server did differently.';
  }
  // what is true of the rung: a lease only where it has one; a key a dead
  // holder left in Redis is said, never "nobody holds the lock"
  const box = document.querySelector(`input[name=lock][value="${CSS.escape(j.lock)}"]`), leased = !box || 'lease' in box.dataset;
  const lockKey = (j.keys || []).find(k => /lock/i.test(k.key) && !/fence|queue|sold|stock/i.test(k.key));
  $('playClock').textContent = `time ${j.now_ms} ms · ` + (j.lease !== undefined ? j.lease : leased ? `lease ${j.lease_ms} ms` : 'no lease') + ` · stock ${j.stock}, sold ${j.sold} · ` +
    (j.lock_now ? j.lock_now : j.holders.length ? `holding the lock: ${j.holders.join(', ')}` : lockKey ? `no live client holds the lock, but Redis still has its key ${lockKey.key}` +
      (lockKey.ttl_ms ? ` for ${lockKey.ttl_ms} ms more` : ', with no time to live') : 'nobody holds the lock');
  const clients = $('playClients');
  clients.replaceChildren();
  for (const c of j.clients) {
    const d = document.createElement('div');
    d.className = 'pclient' + (c.holding ? ' holding' : '') + (c.crashed ? ' crashed' : '');
    const h = document.createElement('b');
    h.textContent = `${c.name}${c.holding ? ' · holds' : ''}${c.crashed ? ' · crashed' : ''}${c.skew_ms ? ` · clock +${c.skew_ms} ms` : ''}`;
    const p = document.createElement('div');
    p.className = 'muted';
    p.textContent = `${c.doing || PHASES[c.phase] || c.phase}; next: ${c.next}`;
    d.append(h, p);
    clients.append(d);
  }
  const keys = $('playKeys');
  keys.replaceChildren();
  const head = keys.createTHead().insertRow();
  for (const t of ['server', 'key', 'value', 'TTL']) head.append(Object.assign(document.createElement('th'), {textContent: t, scope: 'col'}));
  const kb = keys.createTBody();
  for (const k of j.keys) {
    const tr = kb.insertRow();
    tr.insertCell().textContent = k.server;
    tr.insertCell().textContent = k.key;
    tr.insertCell().textContent = k.value;
    tr.insertCell().textContent = k.ttl_ms ? `${k.ttl_ms} ms` : 'no TTL';
  }
  const next = $('playMoves');
  next.replaceChildren();
  for (const o of j.next) {
    const b = document.createElement('button');
    b.type = 'button';
    b.className = 'pmove' + (play.hinted === o.move ? ' hinted' : '');
    b.textContent = o.label;
    b.dataset.move = o.move;
    b.addEventListener('click', () => move(o.move, {focus: 'first'}));
    next.append(b);
  }
  if (!j.next.length && !j.verdict) next.append(Object.assign(document.createElement('p'), {className: 'muted', textContent: 'No move left: every client is done or dead.'}));
  drawPlayTrace(j);
  // For a test (and a curious reader): how far the game is, and the hint.
  document.body.dataset.played = `${j.lock}:${n}:${j.verdict || ''}:${opts.hint ? j.hint || '-' : ''}:${j.replay || ''}`;
}

function drawPlayTrace(j) {
  const table = $('playTrace');
  table.replaceChildren();
  if (!j.trace.length) return;
  const head = table.createTHead().insertRow();
  for (const h of ['#', 't (ms)', ...j.columns, 'lock after', 'stock/\u200bsold']) head.append(Object.assign(document.createElement('th'), {textContent: h, scope: 'col'}));
  const body = table.createTBody();
  const clients = j.columns.slice(0, -1);
  for (const row of j.trace) {
    const note = row.note || '';
    const tr = body.insertRow();
    tr.insertCell().textContent = String(row.n);
    tr.insertCell().textContent = String(row.t_ms);
    for (const c of clients) {
      const td = tr.insertCell();
      if (row.client !== c) continue;
      td.className = 'cmd';
      td.append(Object.assign(document.createElement('code'), {textContent: row.command}));
      if (note) td.append(' ', Object.assign(document.createElement('small'), {textContent: note}));
      if (row.command.startsWith('**')) td.classList.add('fault');
      if (note.includes('sold one')) td.classList.add('sold');
      if (note.includes("'s lock") || note.includes('holds it too')) td.classList.add('breaks');
    }
    const redis = tr.insertCell();
    redis.textContent = row.client ? (row.reply ? '→ ' + row.reply : '') : `— ${note} —`;
    tr.insertCell().textContent = row.lock;
    tr.insertCell().textContent = row.stock;
  }
}

$('playUndo').addEventListener('click', () => move('undo', {keep: $('playUndo')}));
$('playRestart').addEventListener('click', () => { play.moves = []; $('playReplay').textContent = ''; move(null, {focus: 'first'}); });
$('playHint').addEventListener('click', () => move(null, {hint: true, keep: $('playHint')}));
$('playReplayBtn').addEventListener('click', () => move(null, {replay: true, keep: $('playReplayBtn')}));
loadLevels();
