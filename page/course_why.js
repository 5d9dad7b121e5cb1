// ---- why?: the explorer's shortest schedule that breaks the step's lock
// (POST /explore), stepped, each step lighting the line of the code that
// sent its command, for each client where it is. ----
const why = {rows: [], at: 0, brk: -1, says: '', view: null, clients: [], steps: 0};
const asIs = s => String(s || ''); // the clients keep their letters: A, B, C

// whyOffered shows the section when the explorer can run the step's lock.
function whyOffered() {
  fetch('/explore').then(r => r.ok ? r.json() : {locks: []}).catch(() => ({locks: []})).then(j => {
    if ((j.locks || []).includes(step.lock)) $('whySec').hidden = false;
  });
}

async function explainStep() {
  $('whyBtn').disabled = true;
  $('why').hidden = false;
  const st = $('whyStatus');
  st.textContent = `Searching ${step.lock}'s code for the shortest way it breaks: up to 20 s…`;
  const q = new URLSearchParams({lock: step.lock});
  if (stepLease()) q.set('lease_ms', stepLease());
  let j;
  try {
    const r = await fetch('/explore?' + q, {method: 'POST'});
    j = await r.json();
    if (!r.ok) throw new Error(j.error || r.status);
  } catch (e) {
    st.textContent = `The explorer did not answer: ${e.message || e}.`;
    $('whyBtn').disabled = false;
    return;
  }
  drawWhy(j);
  document.body.dataset.explored = step.lock;
}

function drawWhy(j) {
  const st = $('whyStatus');
  if (j.verdict === 'none') {
    st.textContent = `The explorer found no order of events that breaks ${step.lock}: ${j.covered || ''}.`;
    $('whyBtn').hidden = true;
    return;
  }
  why.rows = j.rows;
  why.steps = j.steps || j.rows.filter(r => r.n).length;
  why.clients = j.columns.slice(0, -1);
  const letters = why.clients.join(', ').replace(/, ([^,]*)$/, ' and $1');
  st.textContent = `${j.verdict} in ${j.steps} steps: clients ${letters}, one request each` +
    (j.masters ? `, on ${j.masters} Redis masters (m1 to m${j.masters})` : '') +
    (step.lease ? `, a lease of ${j.lease_ms} ms` : '') + `, a stock of ${j.rows.length ? j.rows[0].stock.split('/')[0] : '?'}. ` +
    `The times are the explorer's own clock, in ms` + (j.rows.some(r => /\bA1\b/.test(r.command + r.lock)) ? '; A1 is A\'s first token.' : '.');
  const brk = breakStep(j.rows, j.verdict, asIs);
  why.brk = brk.i; why.says = brk.says;
  if (brk.i >= 0) {
    $('whyBreak').replaceChildren(el('b', {textContent: `What breaks it, step ${j.rows[brk.i].n || '*'}: `}), brk.says + '.');
    $('whyBreak').hidden = false;
  }
  // the table: every step
  const table = $('whyTable'), head = table.createTHead().insertRow();
  for (const h of ['#', 't (ms)', ...j.columns, 'lock after', 'stock/sold']) head.append(el('th', {scope: 'col', textContent: h}));
  const body = table.createTBody();
  j.rows.forEach((row, i) => {
    const tr = body.insertRow();
    if (i === brk.i) tr.className = 'break';
    tr.insertCell().textContent = row.n === 0 ? '*' : String(row.n);
    tr.insertCell().textContent = String(row.t_ms);
    for (const c of why.clients) {
      const td = tr.insertCell();
      if (row.client === c) td.append(el('code', {textContent: row.command}), row.note ? ' ' + row.note : '');
    }
    tr.insertCell().textContent = row.client ? (row.reply ? '→ ' + row.reply : '') : `(${row.note})`;
    tr.insertCell().textContent = row.lock;
    tr.insertCell().textContent = row.stock;
  });
  why.view = codeView($('whyCode'), 'why?');
  $('whyBtn').hidden = true;
  $('whySteps').hidden = false;
  showWhy(0);
  $('whyNext').focus();
}

// showWhy moves to step i: its sentence, and each client's line: the one
// that sent this step's command lit, the others where they last were.
function showWhy(i) {
  const n = why.rows.length;
  why.at = Math.max(0, Math.min(n - 1, i));
  const row = why.rows[why.at];
  const marks = [];
  for (const c of why.clients) {
    for (let k = why.at; k >= 0; k--) {
      const r = why.rows[k];
      if (r.client === c && r.site) { marks.push({file: r.site.file, line: r.site.line, client: c, now: k === why.at}); break; }
    }
  }
  const lit = why.view.mark(marks);
  const from = row.site ? ` (${siteSay(row.site)})` : '';
  // The explorer numbers the steps that break the lock (j.steps); the
  // rows after them, unnumbered, show that it stays broken.
  const which = row.n ? `Step ${row.n} of ${why.steps}` : `After step ${why.steps}, to show it stays so`;
  $('whySay').textContent = `${which}: ${sentence(row, asIs)}${from}` +
    (why.at === why.brk ? ` This is the step that breaks it: ${why.says}.` : '');
  document.querySelectorAll('#whyTable tbody tr').forEach((tr, k) => tr.classList.toggle('now', k === why.at));
  $('whyPrev').disabled = why.at === 0;
  $('whyNext').disabled = why.at === n - 1;
  $('whyBrk').disabled = why.brk < 0;
  document.body.dataset.whyAt = `${why.at}:${lit ? 'lit' : '-'}`;
}
// a button a step disables hands the focus on, never to the page's body
function stepWhy(i, from) {
  showWhy(i);
  if (from.disabled) (from === $('whyPrev') ? $('whyNext') : $('whyPrev')).focus();
}
$('whyBtn').addEventListener('click', explainStep);
$('whyPrev').addEventListener('click', () => stepWhy(why.at - 1, $('whyPrev')));
$('whyNext').addEventListener('click', () => stepWhy(why.at + 1, $('whyNext')));
$('whyBrk').addEventListener('click', () => showWhy(why.brk));
