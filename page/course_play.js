// ---- break it yourself: the learner is the scheduler (POST /play). The
// server replays every move so far and answers the state: the moves live
// in the address (#play=MOVE,MOVE...), so a reload keeps the game. The
// code beside the moves marks each client's next line, as The Deadlock
// Empire marks each thread's. ----
const game = {level: null, moves: [], state: null, busy: false, view: null};
const PHASES = {obtain: 'taking the lock', section: 'selling, with the lock', release: 'giving the lock back', done: 'done'};

// playOffered shows the section when the game has a level for the lock.
function playOffered() {
  fetch('/play').then(r => r.ok ? r.json() : {levels: []}).catch(() => ({levels: []})).then(j => {
    game.level = (j.levels || []).find(l => l.lock === step.lock) || null;
    if (!game.level) return;
    $('playSec').hidden = false;
    const m = location.hash.match(/^#play=(.*)$/);
    if (m && !game.view) openGame(m[1] ? decodeURIComponent(m[1]).split(',') : [], false);
  });
}

function openGame(moves, focus) {
  $('play').hidden = false;
  $('playBtn').hidden = true;
  $('playGoal').textContent = 'Goal: ' + game.level.goal + '.';
  game.view = codeView($('playCode'), 'the game');
  game.moves = moves;
  move(null, {focus: focus ? 'first' : ''});
}

// move plays m (null: none, just show the game; 'undo'), and keeps the
// focus in the game: on the hinted move, else the first move, else restart.
async function move(m, opts = {}) {
  if (game.busy) return;
  const moves = m === 'undo' ? game.moves.slice(0, -1) : m ? [...game.moves, m] : game.moves;
  game.busy = true;
  setPlayButtons(true);
  if (opts.hint) $('playStatus').textContent = 'Looking for the shortest way from here (the first hint of a level may take a few seconds)…';
  let j;
  try {
    const r = await fetch('/play', {method: 'POST', headers: {'Content-Type': 'application/json'},
      body: JSON.stringify({lock: step.lock, moves, hint: !!opts.hint, lease_ms: stepLease()})});
    j = await r.json();
    if (!r.ok) throw new Error(j.error || r.status);
  } catch (e) {
    $('playStatus').textContent = `The game did not answer: ${e.message || e}.`;
    game.busy = false;
    setPlayButtons(false);
    return;
  }
  game.moves = moves;
  game.state = j;
  history.replaceState(null, '', '#play=' + encodeURIComponent(moves.join(',')));
  game.busy = false;
  drawGame(j, opts);
  setPlayButtons(false);
  const hinted = $('playMoves').querySelector('button.hinted');
  const target = hinted || (opts.focus === 'same' && $('playMoves').querySelector('button')) || (opts.focus && $('playMoves').querySelector('button')) ||
    (opts.focus && !$('playRestart').disabled && $('playRestart'));
  if (target) target.focus();
  else if (opts.keep && !opts.keep.disabled) opts.keep.focus();
  else if (opts.keep) $('playMoves').querySelector('button') ? $('playMoves').querySelector('button').focus() : $('playRestart').focus();
}

function setPlayButtons(disabled) {
  for (const b of document.querySelectorAll('#play button')) b.disabled = disabled;
  if (!disabled) {
    $('playUndo').disabled = game.moves.length === 0;
    $('playRestart').disabled = game.moves.length === 0;
    $('playHint').disabled = !!(game.state && game.state.verdict);
  }
}

function drawGame(j, opts) {
  const n = j.moves.length;
  let say = j.verdict ? `Broken in ${plural(n, 'move')}${j.shortest ? `; the shortest known takes ${j.shortest}` : ''}. ${sourceNamed(j.explain)}` :
    `${plural(n, 'move')} so far: ${sourceNamed(j.explain).replace(/\.$/, '')}.`;
  // the hint names the move by its button's own words
  const hint = opts.hint && j.hint ? j.next.find(o => o.move === j.hint) : null;
  if (opts.hint) say += hint ? ' ' + (j.hint_text || `Hint: press "${hint.label}".${j.hint_why ? ' ' + j.hint_why : ''}`) : ` ${j.hint_note || 'No hint from here: undo a move or two.'}`;
  $('playStatus').textContent = say;
  // what is true of this rung: a lease only where it has one; a key left
  // in Redis by a dead holder is said, not "nobody holds the lock"
  const lockKey = (j.keys || []).find(k => /lock/i.test(k.key) && !/fence|queue|sold|stock/i.test(k.key));
  const who = j.holders.length ? `holding the lock: ${j.holders.join(', ')}` :
    lockKey ? `no live client holds the lock, but Redis still has its key ${lockKey.key}` + (lockKey.ttl_ms ? ` for ${lockKey.ttl_ms} ms more` : ', with no time to live') :
    'nobody holds the lock';
  // (the server says both where it can: its lease, and who holds the lock)
  const lease = j.lease !== undefined ? j.lease : step.lease ? `lease ${j.lease_ms} ms` : '';
  $('playClock').textContent = `time ${j.now_ms} ms` + (lease ? ` · ${lease}` : '') + ` · stock ${j.stock}, sold ${j.sold} · ${j.lock_now || who}`;
  const marks = [];
  $('playClients').replaceChildren(...j.clients.map(c => {
    // where the client is: the line of its pending command, else, when
    // that line is not shown here (the sale's own code), the line that
    // sent its last command
    const last = [...j.trace].reverse().find(r => r.client === c.name && r.site);
    const at = c.site && !c.crashed && game.view.has(c.site.file, c.site.line) ? c.site : last && last.site;
    if (at) marks.push({file: at.file, line: at.line, client: c.name, now: at === c.site});
    const head = el('b', {}, el('span', {className: 'cl ' + c.name, textContent: c.name}),
      ` ${c.doing || (PHASES[c.phase] || c.phase) + (c.holding ? ', holds the lock' : '')}${c.crashed ? ', crashed' : ''}${c.skew_ms ? `, clock ${c.skew_ms} ms ahead` : ''}`);
    return el('div', {className: 'pclient' + (c.holding ? ' holding' : '') + (c.crashed ? ' crashed' : '')}, head,
      el('div', {className: 'muted', textContent: `next: ${c.next}` + (at && at === c.site ? `, from ${siteSay(c.site)}` : '')}));
  }));
  const lit = game.view.mark(marks);
  const moves = $('playMoves');
  moves.replaceChildren(...j.next.map(o => {
    const b = el('button', {type: 'button', className: 'pmove' + (hint && hint.move === o.move ? ' hinted' : ''), textContent: o.label});
    b.dataset.move = o.move;
    b.addEventListener('click', () => move(o.move, {focus: 'same'}));
    return b;
  }));
  if (!j.next.length && !j.verdict) moves.append(el('p', {className: 'muted', textContent: 'No move left: every client is done or dead.'}));
  const keys = $('playKeys');
  keys.replaceChildren();
  const kh = keys.createTHead().insertRow();
  for (const t of ['server', 'key', 'value', 'time to live']) kh.append(el('th', {scope: 'col', textContent: t}));
  const kb = keys.createTBody();
  for (const k of j.keys) {
    const tr = kb.insertRow();
    for (const v of [k.server, k.key, k.value, k.ttl_ms ? `${k.ttl_ms} ms` : 'none']) tr.insertCell().textContent = v;
  }
  const tr = $('playTrace');
  tr.replaceChildren();
  if (j.trace.length) {
    const h = tr.createTHead().insertRow(), heads = ['#', 't (ms)', ...j.columns, 'lock after', 'stock/sold'];
    for (const t of heads) h.append(el('th', {scope: 'col', textContent: t}));
    const body = tr.createTBody(), clients = j.columns.slice(0, -1);
    for (const row of j.trace) {
      const r = body.insertRow();
      // each cell carries its column's name: on a phone a move is a
      // line of labelled cells, not a row of a table wider than the screen
      const cell = (text) => { const c = r.insertCell(); c.textContent = text; c.dataset.label = heads[c.cellIndex]; };
      cell(String(row.n));
      cell(String(row.t_ms));
      for (const c of clients) cell(row.client === c ? row.command + (row.note ? ' ' + row.note : '') : '');
      cell(row.client ? (row.reply ? '→ ' + row.reply : '') : `(${row.note || ''})`);
      cell(row.lock);
      cell(row.stock);
    }
  }
  document.body.dataset.played = `${n}:${j.verdict || ''}:${lit ? 'lit' : '-'}`;
}

$('playBtn').addEventListener('click', () => openGame([], true));
$('playUndo').addEventListener('click', () => move('undo', {keep: $('playUndo')}));
$('playRestart').addEventListener('click', () => { game.moves = []; move(null, {focus: 'first'}); });
$('playHint').addEventListener('click', () => move(null, {hint: true, keep: $('playHint')}));
