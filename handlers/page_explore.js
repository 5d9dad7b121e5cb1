// ---- why? the explorer's shortest counterexample (POST /explore) ----
// Beside each rung of the ladder view that the explorer can run (GET
// /explore names them), a "why?" button asks the stack's explorer for
// the shortest schedule of commands that breaks the rung's own code, and
// draws it as a numbered sequence diagram: a column per client and one
// for Redis, each step with its virtual time, and the lock and the
// stock after it. Text goes in through textContent only.
const explorable = fetch('/explore')
  .then(r => r.ok ? r.json() : {locks: []})
  .then(j => j.locks || [])
  .catch(() => []);
let exploring = false;

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

async function explain(lock, entry) {
  if (exploring) return;
  exploring = true;
  const card = $('exploreCard'), st = $('exploreStatus');
  document.querySelectorAll('button.why').forEach(b => b.disabled = true);
  card.hidden = false;
  $('exploreTitle').textContent = `why ${lock}?`;
  $('exploreDiagram').replaceChildren();
  $('exploreVerdict').replaceChildren();
  st.textContent = `searching ${lock}'s schedules for the shortest that breaks it (up to 20 s)…`;
  bringIntoView(card);
  try {
    const r = await fetch('/explore?lock=' + encodeURIComponent(lock), {method: 'POST'});
    const j = await r.json();
    if (!r.ok) {
      st.textContent = `${lock}: ${j.error || r.status}`;
      return;
    }
    drawExplained(j);
  } catch (e) {
    st.textContent = `${lock}: the explorer did not answer (${e})`;
  } finally {
    exploring = false;
    document.querySelectorAll('button.why').forEach(b => b.disabled = false);
    document.body.dataset.explored = lock;
  }
}

// drawExplained draws one answer of POST /explore.
function drawExplained(j) {
  const st = $('exploreStatus'), v = $('exploreVerdict'), table = $('exploreDiagram');
  const badge = document.createElement('span');
  badge.className = 'badge ' + verdictClass(j.verdict === 'none' ? 'SAFE' : j.verdict);
  badge.textContent = j.verdict;
  v.append(badge, ' ', j.explain || '');
  if (j.verdict === 'none') {
    st.textContent = `${j.lock}: no violation found. Covered: ${j.covered}`;
    return;
  }
  const on = j.masters ? ` on ${j.masters} masters (quorum ${Math.floor(j.masters / 2) + 1}; mN: master N)` : '';
  st.textContent = `${j.lock}: ${j.verdict} in ${j.steps} steps, ${j.clients} clients${on}; faults ${j.faults}; ` +
    `${j.schedules} schedules, ${j.states} states searched in ${(j.elapsed_ms / 1000).toFixed(1)} s. ` +
    `t is virtual milliseconds; @N, an expiry at virtual millisecond N; A1, A's first token.`;
  const head = table.createTHead().insertRow();
  for (const h of ['#', 't (ms)', ...j.columns, 'lock after', 'stock/sold']) {
    head.append(Object.assign(document.createElement('th'), {textContent: h}));
  }
  const body = table.createTBody();
  const clients = j.columns.slice(0, -1);
  for (const row of j.rows) {
    const tr = body.insertRow();
    tr.dataset.n = row.n;
    if (row.n === 0) tr.className = 'probe';
    tr.insertCell().textContent = row.n === 0 ? '*' : String(row.n);
    tr.insertCell().textContent = String(row.t_ms);
    for (const c of clients) {
      const td = tr.insertCell();
      if (row.client !== c) continue;
      td.className = 'cmd';
      td.append(Object.assign(document.createElement('code'), {textContent: row.command}));
      if (row.note) td.append(' ', Object.assign(document.createElement('small'), {textContent: row.note}));
      if (row.command.startsWith('**')) td.classList.add('fault');
      if (row.note === 'sold one') td.classList.add('sold');
    }
    const redis = tr.insertCell();
    redis.textContent = row.client ? (row.reply ? '→ ' + row.reply : '') : `— ${row.note} —`;
    if (!row.client) redis.className = 'tick';
    tr.insertCell().textContent = row.lock;
    tr.insertCell().textContent = row.stock;
  }
}
