// ---- the scenarios and the ladder of flaws (GET /race: race.Plan) ----
// The scenario picker races a lock under one of the matrix's scenarios on
// this stack; the ladder view lays the ladder of flaws out as the
// matrix's grid (a row per rung, a column per scenario), empty until run:
// a cell races its pair, and once run opens its race's timeline; "run
// the ladder" races every pair this stack can show, one after the other,
// for at most three minutes.
const ladder = {plan: null, cells: {}, running: false};
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
    if (s) {
      const locks = Object.entries(s.expect).map(([l, v]) => `${l} ${v}`).join(', ');
      $('scenarioAbout').textContent = `${s.name}: ${s.about}. Stock ${s.stock}. The ladder says: ${locks}; any other lock is refused.`;
    } else {
      $('scenarioAbout').textContent = '';
    }
  });
  drawLadder();
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
    tr.append(Object.assign(document.createElement('td'), {textContent: (plan.flaws || {})[l] || '', className: 'flaw'}));
    for (const s of scenarios) {
      const td = tr.insertCell(), c = plan.ladder.find(x => x.lock === l && x.scenario === s);
      if (!c) continue;
      td.dataset.pair = s + ' ' + l;
      ladder.cells[td.dataset.pair] = {td, cell: c, entry: null};
      paintCell(td.dataset.pair);
      td.addEventListener('click', () => clickCell(td.dataset.pair));
    }
  }
}

// paintCell shows a pair: the ladder's verdict waiting to be run, why the
// stack cannot show it, or the verdict measured, marked against the
// ladder's.
function paintCell(pair) {
  const {td, cell, entry} = ladder.cells[pair];
  td.replaceChildren();
  td.className = 'lcell';
  if (entry) {
    const b = document.createElement('span');
    b.className = 'badge ' + verdictClass(entry.verdict);
    const ok = entry.verdict === cell.expected;
    b.textContent = entry.verdict + (ok ? ' ✓' : ' ✗');
    if (!ok) b.classList.add('unexpected');
    td.append(b);
    const n = entry.timeline ? entry.timeline.overlaps : 0, refused = entry.timeline ? entry.timeline.refused : 0;
    const note = n ? `${n} overlap${n === 1 ? '' : 's'}` : refused ? `${refused} refused` : '';
    if (note) td.append(Object.assign(document.createElement('small'), {textContent: note}));
    td.title = `${entry.title}: ${entry.verdict}` + (ok ? ', as the ladder says' : `, the ladder says ${cell.expected}`) + '. Click: its timeline';
    td.dataset.verdict = entry.verdict;
    td.classList.add('run');
  } else if (cell.skip) {
    td.textContent = '-';
    td.title = `not here: ${cell.skip}`;
    td.classList.add('skip');
  } else {
    td.replaceChildren(Object.assign(document.createElement('small'), {textContent: 'want'}), cell.expected);
    td.title = `${cell.lock} under ${cell.scenario}: the ladder says ${cell.expected}. Click to race it`;
    td.classList.add('todo');
  }
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
    showTimeline(c.entry.timeline, c.entry.title);
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
  const todo = ladder.plan.ladder.filter(c => !c.skip), started = Date.now(), st = $('ladderStatus');
  let done = 0, asExpected = 0;
  try {
    for (const c of todo) {
      const left = LADDER_BUDGET_MS - (Date.now() - started);
      if (left <= 0) {
        st.textContent = `stopped after ${done} of ${todo.length} pairs: the ladder's three minutes are spent`;
        break;
      }
      st.textContent = `pair ${done + 1} of ${todo.length}: ${c.lock} under ${c.scenario} (${Math.round((Date.now() - started) / 1000)} s in)`;
      const entry = await race(c.lock, 'sale', {scenario: c.scenario, ladder: true});
      done++;
      if (entry && entry.verdict === c.expected) asExpected++;
    }
    if (done === todo.length) {
      st.textContent = `${asExpected} of ${todo.length} pairs as the ladder expects; took ${Math.round((Date.now() - started) / 1000)} s` +
        (todo.length < ladder.plan.ladder.length ? `; ${ladder.plan.ladder.length - todo.length} not shown here (-: hover for why)` : '');
    }
  } finally {
    ladder.running = false;
    $('ladderBtn').disabled = $('raceBtn').disabled = false;
    document.body.dataset.ladder = done;
  }
}

$('ladderBtn').addEventListener('click', runLadder);
loadPlan();
