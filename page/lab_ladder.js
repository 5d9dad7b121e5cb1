// ---- the scenarios and the ladder of flaws (GET /race: race.Plan) ----
// The scenario picker races a lock under one of the matrix's scenarios on
// this stack; the ladder view lays the ladder of flaws out as the
// matrix's grid (a row per rung, a column per scenario), empty until run:
// a cell races its pair, and once run opens its race's timeline; "run
// the ladder" races every pair this stack can show, one after the other,
// for at most three minutes.
const ladder = {plan: null, cells: {}, flaws: {}, running: false};
const LADDER_BUDGET_MS = 3 * 60 * 1000;

async function loadPlan() {
  let plan;
  try {
    const r = await fetch('/race');
    if (!r.ok) throw new Error(r.status);
    plan = await r.json();
  } catch (e) {
    $('ladderStatus').textContent = 'this stack serves no races (GET /race): the ladder needs make demo or stack run';
    $('ladderBtn').disabled = true;
    return;
  }
  ladder.plan = plan;
  // the picker
  const sel = $('scenario');
  for (const s of plan.scenarios) {
    const o = document.createElement('option');
    o.value = s.name; o.textContent = s.name; o.title = s.about;
    sel.append(o);
  }
  $('scenarioPick').hidden = false;
  sel.addEventListener('change', () => {
    const s = plan.scenarios.find(x => x.name === sel.value);
    $('wait').disabled = !!s;
    $('n').value = s ? s.requests : 2000;
    $('c').value = s ? s.concurrency : 100;
    sayScenario();
    pickable(s);
    showPlan();
  });
  for (const id of ['n', 'c', 'endpoint']) $(id).addEventListener('input', showPlan);
  $('lockPicks').addEventListener('change', showPlan);
  $('endpoint').addEventListener('change', showPlan);
  showPlan();
  drawLadder();
}

// sayScenario says what the scenario picked does and what the ladder
// says of its locks: "?" for a pair whose verdict the learner is to
// predict first (page_predict.js).
function sayScenario() {
  const s = ladder.plan && ladder.plan.scenarios.find(x => x.name === $('scenario').value);
  if (!s) { $('scenarioAbout').textContent = ''; return; }
  const hide = l => typeof hiddenVerdict === 'function' && hiddenVerdict(s.name + ' ' + l);
  const locks = Object.entries(s.expect).map(([l, v]) => `${l} ${hide(l) ? '?' : v}`).join(', ');
  $('scenarioAbout').textContent = `${s.name}: ${plainWords(s.about)}. The ladder says: ${locks}.` +
    (Object.keys(s.expect).some(hide) ? ' (?: predict it first, when you race it)' : '');
}

// repaintLadder paints every cell and the scenario's line again (a
// prediction made or forgotten shows or hides the ladder's verdicts).
function repaintLadder() {
  if (!ladder.plan) return;
  for (const pair of Object.keys(ladder.cells)) paintCell(pair);
  paintFlaws();
  sayScenario();
}

// pickable disables the locks scenario s cannot run, each saying why
// beside its name (the plan's reason: not in the matrix, or this stack
// cannot stage it), and gives the others back; s null: plain load, every
// lock the instances offer.
function pickable(s) {
  for (const box of document.querySelectorAll('input[name=lock]')) {
    const label = box.closest('label'), own = label.dataset.unavailable;
    let why = own ? 'unavailable here' : '';
    if (s && !why) {
      const c = ladder.plan.ladder.find(x => x.scenario === s.name && x.lock === box.value);
      if (c && c.skip) why = `not here under ${s.name}: ${c.skip}`;
      else if (!(box.value in s.expect)) why = `${s.name} does not run it`;
    }
    box.disabled = !!why;
    if (why) box.checked = false;
    label.classList.toggle('na', !!why);
    label.title = own || why;
    let note = label.querySelector('small');
    if (!why) { if (note) note.remove(); continue; }
    if (!note) { note = document.createElement('small'); label.append(' ', note); }
    note.textContent = `(${why})`;
  }
}

// showPlan says, before a race starts, what it will run: its requests,
// concurrency, stock and lease, true of each lock picked (a lock with
// no lease of its own, setnx's or a database's, is said to have none).
function showPlan() {
  const s = ladder.plan && ladder.plan.scenarios.find(x => x.name === $('scenario').value);
  const sale = $('endpoint').value === 'sale';
  const stock = s ? s.stock : 1000;
  const picked = [...document.querySelectorAll('input[name=lock]:checked')];
  const leased = picked.filter(x => 'lease' in x.dataset).map(x => x.value), bare = picked.filter(x => !('lease' in x.dataset)).map(x => x.value);
  const length = s && s.lease_ms ? `${s.lease_ms} ms` : 'the instances\' own (-lock-ttl)';
  const lease = [leased.length ? `a lease of ${length} for ${leased.join(', ')}` : '',
    bare.length ? `no lease set by the race for ${bare.join(', ')} (no lease of their own, or a session's)` : ''].filter(Boolean).join('; ');
  $('runPlan').textContent = `This run: ${$('n').value} requests, ${$('c').value} at a time, ` +
    (sale ? `stock reset to ${stock}` : 'num reset to 0') + (lease ? `, ${lease}` : '') + (s ? `, under ${s.name}` : '') + '.';
}

// drawLadder builds the grid: a row per lock in ladder order, a column
// per scenario of the ladder, each cell a pair (or empty).
function drawLadder() {
  const plan = ladder.plan, table = $('ladderGrid');
  const scenarios = [], locks = [];
  for (const c of plan.ladder) {
    if (!scenarios.includes(c.scenario)) scenarios.push(c.scenario);
    if (!locks.includes(c.lock)) locks.push(c.lock);
  }
  const head = table.createTHead().insertRow();
  head.append(Object.assign(document.createElement('th'), {textContent: 'lock'}));
  head.append(Object.assign(document.createElement('th'), {textContent: 'its flaw', className: 'flaw'}));
  for (const s of scenarios) {
    const about = (plan.scenarios.find(x => x.name === s) || {}).about || '';
    // a break allowed after each hyphen: crash-before-expire fits a column
    head.append(Object.assign(document.createElement('th'), {textContent: s.replaceAll('-', '-\u200b'), title: about}));
  }
  const body = table.createTBody();
  for (const l of locks) {
    const tr = body.insertRow();
    const th = document.createElement('th');
    th.append(Object.assign(document.createElement('code'), {textContent: l}));
    if (typeof whyButton === 'function') whyButton(th, l);
    tr.append(th);
    const flaw = Object.assign(document.createElement('td'), {className: 'flaw'});
    ladder.flaws[l] = flaw;
    tr.append(flaw);
    for (const s of scenarios) {
      const td = tr.insertCell(), c = plan.ladder.find(x => x.lock === l && x.scenario === s);
      if (!c) continue;
      td.dataset.pair = s + ' ' + l;
      ladder.cells[td.dataset.pair] = {td, cell: c, entry: null};
      paintCell(td.dataset.pair);
    }
  }
  paintFlaws();
}

// paintFlaws writes each rung's flaw, except where a verdict of the rung
// is still to be predicted: the flaw would give it away.
function paintFlaws() {
  for (const [l, td] of Object.entries(ladder.flaws)) {
    const hide = typeof hiddenVerdict === 'function' && Object.keys(ladder.cells).some(p => ladder.cells[p].cell.lock === l && hiddenVerdict(p));
    td.textContent = hide ? 'predict first' : (ladder.plan.flaws || {})[l] || '';
    td.classList.toggle('hidden-flaw', hide);
  }
}

// paintCell shows a pair: the ladder's verdict waiting to be run, why the
// stack cannot show it, or the verdict measured, marked against the
// ladder's.
// A cell that can be raced, or was, is a button (Tab reaches it, Enter
// and Space press it); on a phone, where the grid is a card per rung,
// its scenario's name is drawn in it.
function paintCell(pair) {
  const {td, cell, entry} = ladder.cells[pair];
  const focused = td.contains(document.activeElement); // keep it on the new button
  td.replaceChildren();
  td.className = 'lcell';
  const scen = Object.assign(document.createElement('span'), {className: 'scen', textContent: cell.scenario});
  if (cell.skip && !entry) {
    td.append(scen, Object.assign(document.createElement('span'), {textContent: '-', title: `not here: ${cell.skip}`}),
      Object.assign(document.createElement('small'), {className: 'why', textContent: ` not here: ${cell.skip}`}));
    td.title = `not here: ${cell.skip}`;
    td.classList.add('skip');
    return;
  }
  const btn = document.createElement('button');
  let say = '';
  btn.addEventListener('click', () => clickCell(pair));
  btn.append(scen);
  if (entry) {
    const b = document.createElement('span');
    b.className = 'badge ' + verdictClass(entry.verdict);
    const ok = entry.verdict === cell.expected;
    b.textContent = entry.verdict + (ok ? ' ✓' : ' ✗');
    if (!ok) b.classList.add('unexpected');
    btn.append(b);
    const n = entry.timeline ? entry.timeline.overlaps : 0, refused = entry.timeline ? entry.timeline.refused : 0;
    const note = n ? `${n} overlap${n === 1 ? '' : 's'}` : refused ? `${refused} refused` : '';
    if (note) btn.append(Object.assign(document.createElement('small'), {textContent: note}));
    btn.title = `${entry.title}: ${entry.verdict}` + (ok ? ', as the ladder says' : `, the ladder says ${cell.expected}`) + '. Press: its timeline';
    say = `${cell.lock} under ${cell.scenario}: ${entry.verdict}` + (ok ? ', as the ladder says' : `, the ladder says ${cell.expected}`) +
      (note ? `, ${note}` : '') + '; show its timeline';
    td.dataset.verdict = entry.verdict;
    td.classList.add('run');
  } else if (typeof hiddenVerdict === 'function' && hiddenVerdict(pair)) {
    // the ladder's verdict hidden until the learner predicts or skips
    btn.append(Object.assign(document.createElement('small'), {textContent: 'predict'}), ' ?');
    btn.title = `${cell.lock} under ${cell.scenario}: press to predict its verdict, then race it`;
    say = `race ${cell.lock} under ${cell.scenario}: predict its verdict first`;
    td.classList.add('todo');
  } else {
    btn.append(Object.assign(document.createElement('small'), {textContent: 'want'}), ' ' + cell.expected);
    btn.title = `${cell.lock} under ${cell.scenario}: the ladder says ${cell.expected}. Press to race it`;
    say = `race ${cell.lock} under ${cell.scenario}: the ladder says ${cell.expected}`;
    td.classList.add('todo');
  }
  const p = typeof predict === 'object' && predict.pairs[pair];
  if (entry && p && p.guess && p.verdict) {
    // the learner's prediction, marked against what the race read back
    const right = p.guess === p.verdict;
    btn.append(Object.assign(document.createElement('small'), {className: 'you', textContent: `you ${right ? '✓' : '✗'}`}));
    btn.title += ` (you predicted ${p.guess})`;
    say = say.replace('; show its timeline', `; you predicted ${p.guess}, ${right ? 'right' : 'wrong'}; show its timeline`);
  }
  // The button's name is its visible text, then what it does, read out
  // after it (label in name: a name that starts elsewhere than the
  // visible words fails WCAG 2.5.3)
  btn.append(Object.assign(document.createElement('span'), {className: 'sr', textContent: ' ' + say}));
  td.append(btn);
  if (focused) btn.focus({preventScroll: true});
}

// ladderResult takes every race's result: one of a ladder pair (on
// /sale, under its scenario, at any size) fills its cell.
function ladderResult(entry) {
  if (!entry.scenario || entry.endpoint !== 'sale') return;
  const c = ladder.cells[entry.scenario + ' ' + entry.lock];
  if (!c) return;
  c.entry = entry;
  paintCell(entry.scenario + ' ' + entry.lock);
  tellStory($('ladderStory'), entry, entry.timeline);
  $('timelineCard').dataset.pair = entry.scenario + ' ' + entry.lock;
}

async function clickCell(pair) {
  const c = ladder.cells[pair];
  if (c.entry) {
    showTimeline(c.entry.timeline, c.entry.title, c.entry.verdict);
    tellStory($('ladderStory'), c.entry, c.entry.timeline);
    bringIntoView($('timelineCard'));
    return;
  }
  if (c.cell.skip || ladder.running || $('raceBtn').disabled) return;
  ladder.running = true;
  $('ladderBtn').disabled = $('raceBtn').disabled = true;
  try {
    await race(c.cell.lock, 'sale', {scenario: c.cell.scenario, ladder: true});
  } finally {
    ladder.running = false;
    $('ladderBtn').disabled = $('raceBtn').disabled = false;
  }
}

// runLadder races every pair the stack can show, in ladder order, until
// all have run or the budget is spent.
async function runLadder() {
  if (ladder.running) return;
  ladder.running = true;
  $('ladderBtn').disabled = $('raceBtn').disabled = true;
  const todo = ladder.plan.ladder.filter(c => !c.skip), st = $('ladderStatus');
  // the time spent racing: the learner's predictions (page_predict.js) not counted
  const waited = () => typeof predict === 'object' ? predict.waitedMs : 0, t0 = Date.now(), w0 = waited();
  const spent = () => Date.now() - t0 - (waited() - w0);
  let done = 0, asExpected = 0;
  try {
    for (const c of todo) {
      const left = LADDER_BUDGET_MS - spent();
      if (left <= 0) {
        st.textContent = `stopped after ${done} of ${todo.length} pairs: the ladder's three minutes are spent`;
        break;
      }
      st.textContent = `pair ${done + 1} of ${todo.length}: ${c.lock} under ${c.scenario} (${Math.round(spent() / 1000)} s in)`;
      const entry = await race(c.lock, 'sale', {scenario: c.scenario, ladder: true});
      done++;
      if (entry && entry.verdict === c.expected) asExpected++;
    }
    if (done === todo.length) {
      st.textContent = `${asExpected} of ${todo.length} pairs as the ladder expects; took ${Math.round(spent() / 1000)} s` +
        (todo.length < ladder.plan.ladder.length ? `; ${ladder.plan.ladder.length - todo.length} not shown here (-: hover for why)` : '');
    }
    announce('the ladder: ' + st.textContent);
  } finally {
    ladder.running = false;
    $('ladderBtn').disabled = $('raceBtn').disabled = false;
    document.body.dataset.ladder = done;
  }
}

$('ladderBtn').addEventListener('click', runLadder);
loadPlan();
